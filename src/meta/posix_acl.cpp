#include "peregrine/meta/posix_acl.h"

#include <sys/stat.h>

#include <span>

#include "codec.h"

namespace peregrine::meta {
namespace {

constexpr uint32_t kVersion = 2;
constexpr size_t kAclHeaderBytes = 4;
constexpr size_t kEntryBytes = 8;
constexpr uint32_t kNoId = 0xffffffff;  // the id of entries that name no one

}  // namespace

std::optional<PosixAcl> PosixAcl::decode(std::string_view value) {
  if (value.size() < kAclHeaderBytes || (value.size() - kAclHeaderBytes) % kEntryBytes != 0) return std::nullopt;
  codec::Reader r(std::as_bytes(std::span(value.data(), value.size())));
  if (r.u32() != kVersion) return std::nullopt;
  PosixAcl acl;
  int user_obj = 0, group_obj = 0, other = 0, mask = 0, named = 0;
  uint16_t last_tag = 0;
  while (r.remaining() > 0) {
    Entry e;
    e.tag = r.u16();
    e.perm = r.u16();
    e.id = r.u32();
    if ((e.perm & ~07) != 0) return std::nullopt;
    if (e.tag < last_tag) return std::nullopt;  // the kernel's order of tags (it does not order ids)
    switch (e.tag) {
      case kUserObj: ++user_obj; break;
      case kGroupObj: ++group_obj; break;
      case kOther: ++other; break;
      case kMask: ++mask; break;
      case kUser:
      case kGroup: ++named; break;
      default: return std::nullopt;
    }
    if (e.tag != kUser && e.tag != kGroup) e.id = kNoId;
    last_tag = e.tag;
    acl.entries_.push_back(e);
  }
  if (user_obj != 1 || group_obj != 1 || other != 1 || mask > 1 || (named > 0 && mask == 0)) return std::nullopt;
  return acl;
}

std::string PosixAcl::encode() const {
  std::string out;
  codec::Writer w(&out);
  w.u32(kVersion);
  for (const Entry& e : entries_) {
    w.u16(e.tag);
    w.u16(e.perm);
    w.u32(e.id);
  }
  return out;
}

bool PosixAcl::extends_mode(uint32_t* mode) const {
  uint32_t bits = 0;
  bool extends = false;
  for (const Entry& e : entries_) {
    switch (e.tag) {
      case kUserObj: bits |= uint32_t{e.perm} << 6; break;
      case kGroupObj: bits |= uint32_t{e.perm} << 3; break;
      case kOther: bits |= e.perm; break;
      case kMask:  // sorted after the owning group: the mask is what the group bits show
        bits = (bits & ~S_IRWXG) | (uint32_t{e.perm} << 3);
        extends = true;
        break;
      default: extends = true; break;
    }
  }
  *mode = (*mode & ~0777u) | bits;
  return extends;
}

void PosixAcl::chmod(uint32_t mode) {
  Entry* group_obj = nullptr;
  Entry* mask = nullptr;
  for (Entry& e : entries_) {
    switch (e.tag) {
      case kUserObj: e.perm = static_cast<uint16_t>((mode >> 6) & 07); break;
      case kOther: e.perm = static_cast<uint16_t>(mode & 07); break;
      case kGroupObj: group_obj = &e; break;
      case kMask: mask = &e; break;
      default: break;
    }
  }
  Entry* group_bits = mask != nullptr ? mask : group_obj;
  if (group_bits != nullptr) group_bits->perm = static_cast<uint16_t>((mode >> 3) & 07);
}

bool PosixAcl::create_masq(uint32_t* mode) {
  uint32_t m = *mode & 0777;
  Entry* group_obj = nullptr;
  Entry* mask = nullptr;
  bool extends = false;
  for (Entry& e : entries_) {
    switch (e.tag) {
      case kUserObj:
        e.perm &= static_cast<uint16_t>(m >> 6);
        m = (m & ~S_IRWXU) | (m & (uint32_t{e.perm} << 6));
        break;
      case kOther:
        e.perm &= static_cast<uint16_t>(m & 07);
        m = (m & ~S_IRWXO) | (m & e.perm);
        break;
      case kGroupObj: group_obj = &e; break;
      case kMask:
        mask = &e;
        extends = true;
        break;
      default: extends = true; break;
    }
  }
  Entry* group_bits = mask != nullptr ? mask : group_obj;
  if (group_bits != nullptr) {
    group_bits->perm &= static_cast<uint16_t>((m >> 3) & 07);
    m = (m & ~S_IRWXG) | (m & (uint32_t{group_bits->perm} << 3));
  }
  *mode = (*mode & ~0777u) | m;
  return extends;
}

}  // namespace peregrine::meta
