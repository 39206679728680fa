// Journal records. Every metadata operation is expressed as a transaction:
// an ordered list of Deltas (state changes such as "put inode attributes",
// "add directory entry", "map extent"). The live operation applies the same
// Deltas to the Model that replay applies after a crash, so replay cannot
// disagree with what was running. One transaction = one journal record; a
// record is atomic because the journal checksums whole batches of records.
//
// Byte layout of a record (little-endian) is in docs/metadata-format.md.
// decode refuses any malformed or out-of-limit input and never reads out of
// bounds.
//
// Thread rules: encode/decode are pure functions; any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "peregrine/meta/types.h"

namespace peregrine::meta {

enum class DeltaType : uint8_t {
  kInodePut = 1,       // ino + attr (+ symlink target in `name`)
  kInodeDel = 2,       // ino: drop inode, its extents, xattrs, entries
  kDirentPut = 3,      // ino = parent, child, a = cookie, name
  kDirentDel = 4,      // ino = parent, name
  kXattrPut = 5,       // ino, name, value
  kXattrDel = 6,       // ino, name
  kExtentMap = 7,      // ino, a = file_off, b = vol_off, c = len, written
  kExtentUnmap = 8,    // ino, a = file_off, c = len
  kExtentWritten = 9,  // ino, a = file_off, b = vol_off, c = len
  kOrphanAdd = 10,     // ino
  kOrphanDel = 11,     // ino
};

struct Delta {
  DeltaType type = DeltaType::kInodePut;
  Ino ino = 0;
  InodeAttr attr;
  Ino child = 0;
  uint64_t a = 0, b = 0, c = 0;
  bool written = false;
  std::string name;
  std::string value;
  bool operator==(const Delta&) const = default;
};

using Txn = std::vector<Delta>;

// Appends the encoding of one record (u32 length prefix included).
void encode_txn(const Txn& txn, std::string* out);
// Decodes the record starting at bytes[*pos]; advances *pos. false on any
// malformed input (then *txn is unspecified).
bool decode_txn(std::span<const std::byte> bytes, size_t* pos, Txn* txn);

}  // namespace peregrine::meta
