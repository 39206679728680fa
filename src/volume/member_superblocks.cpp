#include "peregrine/volume/member_superblocks.h"

#include <cerrno>
#include <cstring>

#include "peregrine/util/aligned_buffer.h"

namespace peregrine {
namespace {

Expected<SuperblockCopy> read_copy(const MemberFile& member, uint64_t offset) {
  SuperblockCopy copy;
  if (member.info().size_bytes < offset + kSuperblockSize) {
    copy.problem = "member too small to hold it";
    return copy;
  }
  AlignedBuffer buf(kSuperblockSize);
  if (int rc = member.pread_full(buf.data(), kSuperblockSize, offset); rc < 0)
    return Status::error(-rc, "member " + member.info().path + ": cannot read superblock at offset " +
                                  std::to_string(offset) + ": " + std::strerror(-rc));
  copy.has_magic = has_superblock_magic(buf.span());
  auto sb = decode_superblock(buf.span());
  if (sb)
    copy.superblock = std::move(*sb);
  else
    copy.problem = sb.status().message();
  return copy;
}

}  // namespace

Expected<MemberSuperblocks> read_member_superblocks(const MemberFile& member) {
  auto primary = read_copy(member, kPrimarySuperblockOffset);
  if (!primary) return primary.status();
  auto backup = read_copy(member, kBackupSuperblockOffset);
  if (!backup) return backup.status();
  return MemberSuperblocks{std::move(*primary), std::move(*backup)};
}

Status write_superblock_copy(const MemberFile& member, const Superblock& sb, uint64_t offset) {
  AlignedBuffer buf(kSuperblockSize);
  encode_superblock(sb, buf.span());
  if (int rc = member.pwrite_full(buf.data(), kSuperblockSize, offset); rc < 0)
    return Status::error(-rc, "member " + member.info().path + ": cannot write superblock at offset " +
                                  std::to_string(offset) + ": " + std::strerror(-rc));
  return Status::ok();
}

Status sync_member(const MemberFile& member) {
  if (int rc = member.sync(); rc < 0)
    return Status::error(-rc, "member " + member.info().path + ": cannot sync: " + std::strerror(-rc));
  return Status::ok();
}

Status write_durable_superblock_copy(const MemberFile& member, const Superblock& good, uint64_t offset) {
  const std::string where = "member " + member.info().path + ": superblock copy at offset " + std::to_string(offset);
  if (Status s = write_superblock_copy(member, good, offset); !s) return s;
  if (Status s = sync_member(member); !s) return s;
  AlignedBuffer want(kSuperblockSize), got(kSuperblockSize);
  encode_superblock(good, want.span());
  if (int rc = member.pread_full(got.data(), kSuperblockSize, offset); rc < 0)
    return Status::error(-rc, where + ": cannot read it back: " + std::strerror(-rc));
  if (std::memcmp(want.data(), got.data(), kSuperblockSize) != 0 || !decode_superblock(got.span()))
    return Status::error(EIO, where + ": reads back different from what was written");
  return Status::ok();
}

}  // namespace peregrine
