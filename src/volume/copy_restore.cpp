#include "peregrine/volume/copy_restore.h"

#include "peregrine/volume/member_superblocks.h"

namespace peregrine {

Status restore_superblock_copy(const AssembledVolume& vol, const DamagedSuperblockCopy& d) {
  return write_durable_superblock_copy(vol.members[d.member_index], vol.member_superblocks[d.member_index], d.offset);
}

std::string describe_restored_copy(const AssembledVolume& vol, const DamagedSuperblockCopy& d) {
  const bool primary = d.offset == kPrimarySuperblockOffset;
  return "member " + vol.members[d.member_index].info().path + ": " + (primary ? "primary" : "backup") +
         " superblock restored from the " + (primary ? "backup" : "primary");
}

Status restore_damaged_copies(const std::vector<std::string>& paths,
                              const std::function<void(const std::string&)>& note) {
  auto vol = assemble(paths, MemberFile::Mode::read_write);
  if (!vol) return vol.status();
  for (const DamagedSuperblockCopy& d : vol->damaged_copies) {
    if (Status s = restore_superblock_copy(*vol, d); !s) return s;
    if (note) note(describe_restored_copy(*vol, d));
  }
  return Status::ok();
}

}  // namespace peregrine
