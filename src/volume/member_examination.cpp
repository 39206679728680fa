#include "peregrine/volume/member_examination.h"

#include "signature_probe.h"

namespace peregrine {

Expected<MemberExamination> examine_member(const std::string& path, bool probe_foreign) {
  auto file = MemberFile::open(path, MemberFile::Mode::inspect);
  if (!file) return file.status();
  MemberExamination e;
  e.path = path;
  e.is_block_device = file->info().is_block_device;
  e.size_bytes = file->info().size_bytes;
  auto copies = read_member_superblocks(*file);
  if (!copies) return copies.status();
  e.copies = std::move(*copies);
  if (e.copies.primary.superblock) {
    e.superblock = e.copies.primary.superblock;
  } else if (e.copies.backup.superblock) {
    e.superblock = e.copies.backup.superblock;
    e.from_backup = true;
  }
  if (e.superblock) {
    auto record = read_mount_record(*file);
    if (!record) {
      e.mount_record_problem = record.status().message();
    } else if (*record && (*record)->volume_uuid != e.superblock->volume_uuid) {
      e.mount_record_problem =
          "member " + path + ": mount record of another volume (" + (*record)->volume_uuid.to_string() + ") ignored";
    } else if (*record && (*record)->member_uuid != e.superblock->member_uuid) {
      e.mount_record_problem =
          "member " + path + ": mount record of another member (" + (*record)->member_uuid.to_string() + ") ignored";
    } else {
      e.mount_record = std::move(*record);
    }
  }
  if (!e.copies.any_magic() && probe_foreign) {
    auto foreign = probe_foreign_signature(path);
    if (foreign) e.foreign_signature = std::move(*foreign);
  }
  return e;
}

}  // namespace peregrine
