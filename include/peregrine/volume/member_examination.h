// What one device or file says about itself, read without claiming it:
// both superblock copies, the mount record, and (when it is no member)
// what else libblkid recognises there. The ground for `peregrine examine`
// and `peregrine scan`. Never writes, takes no member lock and opens block
// devices without O_EXCL, so a member in use (mounted) can be examined.
// Thread rules: any thread; each call opens its own descriptor.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "peregrine/util/result.h"
#include "peregrine/volume/member_superblocks.h"
#include "peregrine/volume/mount_record.h"
#include "peregrine/volume/superblock.h"

namespace peregrine {

struct MemberExamination {
  std::string path;
  bool is_block_device = false;
  uint64_t size_bytes = 0;
  MemberSuperblocks copies;
  std::optional<Superblock> superblock;  // the primary when it decodes, else the backup
  bool from_backup = false;              // superblock is the backup copy
  // The member's mount record when it has a valid one of this volume and
  // member; mount_record_problem says why one was set aside.
  std::optional<MountRecord> mount_record;
  std::string mount_record_problem;
  // When no superblock copy carries the peregrine magic and probing was
  // asked for: what libblkid recognises ("an ext4 filesystem"), if anything.
  std::optional<std::string> foreign_signature;

  bool is_member() const { return superblock.has_value(); }
};

// Fails (naming the path) only when the path cannot be opened or read; a
// file or device that is not a member is a successful examination without
// a superblock. `probe_foreign`: ask libblkid about a non-member.
Expected<MemberExamination> examine_member(const std::string& path, bool probe_foreign);

}  // namespace peregrine
