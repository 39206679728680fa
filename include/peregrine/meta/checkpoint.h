// Checkpoints: a full serialisation of the Model written into one of two
// slots, alternately (slot = seq % 2), so the previous checkpoint stays
// valid while the next one is being written. A checkpoint records the
// journal position and sequence number from which replay continues.
//
// Write order: body blocks, flush, header block (one 4 KiB write, so it
// lands whole or not at all), flush. A slot whose header is all zeros has
// never been written; if both are, the area is fresh (mkfs zeroed it).
// Byte layout in docs/metadata-format.md.
//
// Thread rules: pure functions plus blocking VolumeIo calls; the caller
// serialises writers (Metadata writes checkpoints only from the journal
// commit leader).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "peregrine/meta/layout.h"
#include "peregrine/meta/model.h"
#include "peregrine/util/result.h"
#include "peregrine/volume/volume_io.h"

namespace peregrine::meta {

inline constexpr uint32_t kCheckpointMagic = 0x4B434750;  // "PGCK"
inline constexpr uint16_t kCheckpointVersion = 1;

struct CheckpointHeader {
  uint64_t seq = 0;           // 1, 2, 3, ... ; slot = seq % 2
  uint64_t next_lsn = 1;      // first journal sequence not covered
  uint64_t journal_tail = 0;  // logical journal position where replay starts
  uint64_t journal_size = 0;  // ring size it was written with
  uint64_t body_len = 0;
  uint32_t body_crc = 0;
  uint64_t next_ino = 0;
  uint64_t inode_count = 0;
  uint64_t data_offset = 0;
  uint64_t data_size = 0;
  uint32_t journal_salt = 0;  // seed of the batch checksums after it
  bool operator==(const CheckpointHeader&) const = default;
};

// Whether a checkpoint written for a data area of `recorded` bytes (at the
// same data offset) may be used on a volume whose data area is `current`
// bytes. Smaller is a grown volume (docs/format.md, section 6): the space
// past the old end is simply free. Larger is refused (EUCLEAN, both sizes
// named): extents past the end would be lost, so neither mount nor fsck
// may use it.
Status check_checkpoint_data_size(uint64_t recorded, uint64_t current);

// Header block <-> struct (block is 4096 bytes). decode false when the magic,
// version, or header checksum is wrong.
void encode_checkpoint_header(const CheckpointHeader& h, std::span<std::byte> block);
bool decode_checkpoint_header(std::span<const std::byte> block, CheckpointHeader* h);

std::string encode_checkpoint_body(const Model& m);
// Checked decode: refuses malformed bodies, duplicate inodes, entries that
// name missing inodes, overlapping extents within a file, directories with
// two parents. `next_ino` from the header is applied. strict=false (fsck)
// keeps cross-reference damage (dangling entries, second parents, inodes
// past next_ino) for check_model to report and repair.
Expected<Model> decode_checkpoint_body(std::span<const std::byte> body, uint64_t next_ino, bool strict = true);

// Writes body then header into slot h.seq % 2 (see write order above).
// ENOSPC with a message when the body does not fit the slot.
Status write_checkpoint(VolumeIo& io, const MetaLayout& l, CheckpointHeader h, const std::string& body);

// What a slot holds.
struct SlotState {
  bool empty = false;   // header block all zeros
  bool valid = false;   // header and body checksums good
  std::string problem;  // why not valid (for fsck / mount messages)
  CheckpointHeader header;
  std::string body;  // when valid
};
SlotState read_checkpoint_slot(VolumeIo& io, const MetaLayout& l, int slot);
// Just the header: `valid` then means "header good, body not checked yet".
SlotState read_checkpoint_header(VolumeIo& io, const MetaLayout& l, int slot);
// Reads and checks the body of a slot whose header read_checkpoint_header
// accepted; on a checksum mismatch valid becomes false with a problem.
void read_checkpoint_body(VolumeIo& io, const MetaLayout& l, int slot, SlotState* st);
// Mount's choice: the valid slot with the highest sequence, reading a body
// only when its header is the newest still in the running. -1 if none;
// states[] then say why.
int newest_valid_checkpoint(VolumeIo& io, const MetaLayout& l, SlotState states[2]);

}  // namespace peregrine::meta
