#include "peregrine/volume/mount_record.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "peregrine/util/aligned_buffer.h"
#include "peregrine/util/crc32c.h"
#include "peregrine/util/little_endian.h"

namespace peregrine {
namespace {

// Byte offsets of docs/format.md, section "Mount record".
constexpr size_t kRecordOffMagic = 0;
constexpr size_t kOffVersion = 8;
constexpr size_t kOffRecordBytes = 12;
constexpr size_t kRecordOffVolumeUuid = 16;
constexpr size_t kRecordOffMemberUuid = 32;
constexpr size_t kOffState = 48;
constexpr size_t kOffPathCount = 52;
constexpr size_t kOffMountTime = 56;
constexpr size_t kOffUnmountTime = 64;
constexpr size_t kOffHostname = 72;  // NUL-padded, kMountRecordMaxHost + 1 bytes
constexpr size_t kOffPaths = 136;    // mount point, then the member paths: u16 length + bytes each
constexpr size_t kUnit = 4096;

constexpr char kRecordMagic[8] = {'P', 'R', 'G', 'M', 'O', 'U', 'N', 'T'};
constexpr uint32_t kVersion = 1;

static_assert(kOffHostname + kMountRecordMaxHost + 1 == kOffPaths);
static_assert(kMountRecordOffset + kMountRecordMaxBytes <= 512 * 1024);
static_assert(kOffPaths + (kMountRecordMaxPath + 2) * 65 + 4 <= kMountRecordMaxBytes);

void put(std::span<std::byte> b, size_t off, uint64_t v, int bytes) { put_le(b, off, v, bytes); }
uint64_t get(std::span<const std::byte> b, size_t off, int bytes) { return get_le(b, off, bytes); }
void put_record_uuid(std::span<std::byte> b, size_t off, const Uuid& u) {
  for (size_t i = 0; i < 16; ++i) b[off + i] = std::byte(u.bytes[i]);
}
Uuid get_record_uuid(std::span<const std::byte> b, size_t off) {
  Uuid u;
  for (size_t i = 0; i < 16; ++i) u.bytes[i] = static_cast<uint8_t>(b[off + i]);
  return u;
}

Status bad_record(std::string what) { return Status::error(EINVAL, "mount record: " + std::move(what)); }

std::vector<const std::string*> strings_of(const MountRecord& r) {
  std::vector<const std::string*> all = {&r.mountpoint};
  for (const std::string& p : r.member_paths) all.push_back(&p);
  return all;
}

}  // namespace

size_t mount_record_size(const MountRecord& r) {
  size_t bytes = kOffPaths + 4;  // + crc
  for (const std::string* s : strings_of(r)) bytes += 2 + s->size();
  return (bytes + kUnit - 1) / kUnit * kUnit;
}

Status encode_mount_record(const MountRecord& r, std::span<std::byte> out) {
  for (const std::string* s : strings_of(r))
    if (s->size() > kMountRecordMaxPath)
      return bad_record("path longer than " + std::to_string(kMountRecordMaxPath) + " bytes: " + *s);
  if (r.member_paths.size() > 64) return bad_record("more than 64 member paths");
  const size_t size = mount_record_size(r);
  if (out.size() != size)
    return bad_record("buffer of " + std::to_string(out.size()) + " bytes, not " + std::to_string(size));
  std::memset(out.data(), 0, size);
  std::memcpy(out.data() + kRecordOffMagic, kRecordMagic, sizeof kRecordMagic);
  put(out, kOffVersion, kVersion, 4);
  put(out, kOffRecordBytes, size, 4);
  put_record_uuid(out, kRecordOffVolumeUuid, r.volume_uuid);
  put_record_uuid(out, kRecordOffMemberUuid, r.member_uuid);
  put(out, kOffState, static_cast<uint32_t>(r.state), 4);
  put(out, kOffPathCount, r.member_paths.size(), 4);
  put(out, kOffMountTime, r.mount_time, 8);
  put(out, kOffUnmountTime, r.unmount_time, 8);
  std::string host = r.hostname.substr(0, kMountRecordMaxHost);
  std::memcpy(out.data() + kOffHostname, host.data(), host.size());
  size_t off = kOffPaths;
  for (const std::string* s : strings_of(r)) {
    put(out, off, s->size(), 2);
    std::memcpy(out.data() + off + 2, s->data(), s->size());
    off += 2 + s->size();
  }
  put(out, size - 4, crc32c(out.first(size - 4)), 4);
  return Status::ok();
}

Expected<std::optional<MountRecord>> decode_mount_record(std::span<const std::byte> b) {
  if (b.size() < kUnit) return bad_record("block of " + std::to_string(b.size()) + " bytes is too small");
  if (std::memcmp(b.data() + kRecordOffMagic, kRecordMagic, sizeof kRecordMagic) != 0) {
    for (std::byte x : b.first(kUnit))
      if (x != std::byte{0}) return bad_record("unrecognised bytes where the record belongs (magic missing)");
    return std::optional<MountRecord>();
  }
  uint32_t version = static_cast<uint32_t>(get(b, kOffVersion, 4));
  if (version != kVersion)
    return bad_record("unsupported version " + std::to_string(version) + " (this build reads " +
                      std::to_string(kVersion) + ")");
  size_t size = get(b, kOffRecordBytes, 4);
  if (size < kUnit || size > kMountRecordMaxBytes || size % kUnit != 0 || size > b.size())
    return bad_record("size " + std::to_string(size) + " out of range");
  uint32_t stored = static_cast<uint32_t>(get(b, size - 4, 4));
  if (stored != crc32c(b.first(size - 4))) return bad_record("checksum mismatch (damaged or torn write)");
  MountRecord r;
  r.volume_uuid = get_record_uuid(b, kRecordOffVolumeUuid);
  r.member_uuid = get_record_uuid(b, kRecordOffMemberUuid);
  uint32_t state = static_cast<uint32_t>(get(b, kOffState, 4));
  if (state != 1 && state != 2) return bad_record("unknown state " + std::to_string(state));
  r.state = static_cast<MountRecord::State>(state);
  uint32_t count = static_cast<uint32_t>(get(b, kOffPathCount, 4));
  if (count > 64) return bad_record("member path count " + std::to_string(count) + " above 64");
  r.mount_time = get(b, kOffMountTime, 8);
  r.unmount_time = get(b, kOffUnmountTime, 8);
  const char* host = reinterpret_cast<const char*>(b.data() + kOffHostname);
  r.hostname.assign(host, strnlen(host, kMountRecordMaxHost));
  size_t off = kOffPaths;
  for (uint32_t i = 0; i <= count; ++i) {
    if (off + 2 > size - 4) return bad_record("paths run past the record's end");
    size_t len = get(b, off, 2);
    if (off + 2 + len > size - 4) return bad_record("paths run past the record's end");
    std::string s(reinterpret_cast<const char*>(b.data() + off + 2), len);
    off += 2 + len;
    if (i == 0)
      r.mountpoint = std::move(s);
    else
      r.member_paths.push_back(std::move(s));
  }
  return std::optional<MountRecord>(std::move(r));
}

Expected<std::optional<MountRecord>> read_mount_record(const MemberFile& member) {
  const std::string& path = member.info().path;
  if (member.info().size_bytes < kMountRecordOffset + kUnit) return std::optional<MountRecord>();
  AlignedBuffer head(kUnit);
  if (int rc = member.pread_full(head.data(), kUnit, kMountRecordOffset); rc < 0)
    return Status::error(-rc, "member " + path + ": cannot read the mount record: " + std::strerror(-rc));
  size_t size =
      std::memcmp(head.data(), kRecordMagic, sizeof kRecordMagic) == 0 ? get(head.span(), kOffRecordBytes, 4) : kUnit;
  std::optional<AlignedBuffer> whole;
  std::span<const std::byte> block = head.span();
  if (size > kUnit && size <= kMountRecordMaxBytes && size % kUnit == 0 &&
      member.info().size_bytes >= kMountRecordOffset + size) {
    whole.emplace(size);
    if (int rc = member.pread_full(whole->data(), size, kMountRecordOffset); rc < 0)
      return Status::error(-rc, "member " + path + ": cannot read the mount record: " + std::strerror(-rc));
    block = whole->span();
  }
  auto r = decode_mount_record(block);
  if (!r) return Status::error(r.status().errnum(), "member " + path + ": " + r.status().message());
  return r;
}

namespace {

// Every member the superblock counts. A restripe the mount gave up keeps
// its added members open (v.members) over a superblock that does not count
// them yet: they carry the restripe's record, not this mount's.
Status write_on_every_member(const AssembledVolume& v, MountRecord r) {
  for (size_t i = 0; i < std::min(v.members.size(), v.superblock.member_uuids.size()); ++i) {
    const MemberFile& m = v.members[i];
    r.member_uuid = v.superblock.member_uuids[i];
    AlignedBuffer buf(mount_record_size(r));
    if (Status s = encode_mount_record(r, buf.span()); !s) return s;
    if (int rc = m.pwrite_full(buf.data(), buf.size(), kMountRecordOffset); rc < 0)
      return Status::error(-rc, "member " + m.info().path + ": cannot write the mount record: " + std::strerror(-rc));
    if (int rc = m.sync(); rc < 0)
      return Status::error(-rc, "member " + m.info().path + ": cannot sync the mount record: " + std::strerror(-rc));
  }
  return Status::ok();
}

}  // namespace

Expected<MountRecord> record_mount_on_members(const AssembledVolume& v, const std::string& mountpoint, uint64_t now) {
  MountRecord r;
  r.volume_uuid = v.superblock.volume_uuid;
  r.member_uuid = v.superblock.member_uuids.at(0);
  r.state = MountRecord::State::kMounted;
  r.mount_time = now;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) r.hostname = host;
  if (r.hostname.size() > kMountRecordMaxHost) r.hostname.resize(kMountRecordMaxHost);
  r.mountpoint = mountpoint.substr(0, kMountRecordMaxPath);
  for (const MemberFile& m : v.members) r.member_paths.push_back(m.info().path.substr(0, kMountRecordMaxPath));
  if (Status s = write_on_every_member(v, r); !s) return s;
  return r;
}

Status record_clean_unmount_on_members(const AssembledVolume& v, MountRecord record, uint64_t now) {
  record.state = MountRecord::State::kUnmountedCleanly;
  record.unmount_time = now;
  return write_on_every_member(v, std::move(record));
}

}  // namespace peregrine
