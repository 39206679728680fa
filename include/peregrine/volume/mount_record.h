// The mount record: what a member remembers of its volume's last read-write
// mount — when, where, on which host, the path of every member then, and
// whether that mount ended cleanly. `peregrine examine` and `peregrine scan`
// read it; nothing else depends on it (assembly, fsck and the metadata
// layer ignore it). Byte layout: docs/format.md, "Mount record".
//
// It lives in the reserved, zeroed header region (member offset 4 KiB), not
// in the superblock, so that writing it changes no superblock and older
// versions, which never look there, still mount the volume. A member made by
// mkfs has none (the region reads as zeros).
//
// Thread rules: encode/decode are pure functions on plain values (any
// thread). The writers do synchronous IO on the members of an assembled
// volume; call them from the one thread that owns the volume while the
// engine only touches the data area.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "peregrine/backend/member_file.h"
#include "peregrine/util/result.h"
#include "peregrine/volume/assembly.h"
#include "peregrine/volume/uuid.h"

namespace peregrine {

inline constexpr uint64_t kMountRecordOffset = 4096;
// Room for a mount point and 64 member paths of PATH_MAX bytes each, still
// ending well before the backup superblock (512 KiB).
inline constexpr size_t kMountRecordMaxBytes = 320 * 1024;
inline constexpr size_t kMountRecordMaxPath = 4096;
inline constexpr size_t kMountRecordMaxHost = 63;

struct MountRecord {
  enum class State : uint32_t { kMounted = 1, kUnmountedCleanly = 2 };

  Uuid volume_uuid;
  Uuid member_uuid;
  State state = State::kMounted;
  uint64_t mount_time = 0;    // seconds since the Unix epoch, UTC
  uint64_t unmount_time = 0;  // 0 while mounted (or when it did not end cleanly)
  std::string hostname;       // at most kMountRecordMaxHost bytes
  std::string mountpoint;
  std::vector<std::string> member_paths;  // in member index order

  bool operator==(const MountRecord&) const = default;
};

// The encoded size (a multiple of 4096) of `r`. Paths longer than
// kMountRecordMaxPath are refused by encode.
size_t mount_record_size(const MountRecord& r);
// REQUIRES: out.size() == mount_record_size(r).
Status encode_mount_record(const MountRecord& r, std::span<std::byte> out);

// Refuses a block without the record's magic (nullopt: there is no record),
// of another size, with a bad checksum or an unknown version.
Expected<std::optional<MountRecord>> decode_mount_record(std::span<const std::byte> block);

// Reads the record of `member`: nullopt when there is none (all zeros, as
// mkfs leaves it); an error naming the member when it is damaged or
// unreadable.
Expected<std::optional<MountRecord>> read_mount_record(const MemberFile& member);

// The mount-time write of a read-write mount: on every member of `v`, a
// record saying it is mounted at `mountpoint` since `now`, with every
// member's path; synced. A read-only mount must not call this. Returns the
// record as written (member_uuid of member 0) for
// record_clean_unmount_on_members.
Expected<MountRecord> record_mount_on_members(const AssembledVolume& v, const std::string& mountpoint, uint64_t now);

// After a clean unmount (checkpoint written, members flushed): the same
// record, marked unmounted cleanly at `now`, on every member; synced.
Status record_clean_unmount_on_members(const AssembledVolume& v, MountRecord record, uint64_t now);

}  // namespace peregrine
