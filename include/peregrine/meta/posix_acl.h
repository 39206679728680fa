// POSIX access control lists as the kernel hands them to a filesystem: the
// value of the system.posix_acl_access / system.posix_acl_default xattrs
// (a 4-byte version header, then 8-byte entries: tag, permissions, id,
// little-endian). Once the daemon negotiates FUSE_POSIX_ACL the kernel
// checks permissions against these ACLs itself, and leaves to the
// filesystem what ext4 does in its own code: keeping the mode and the
// access ACL in step both ways, and giving a new inode the ACLs its
// parent's default ACL says (docs/usage.md, "POSIX ACLs").
//
// The rules are the kernel's (fs/posix_acl.c: posix_acl_equiv_mode,
// posix_acl_chmod, posix_acl_create_masq); each method names its model.
//
// Thread rules: a plain value type; no shared state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace peregrine::meta {

inline constexpr std::string_view kAclAccessXattr = "system.posix_acl_access";
inline constexpr std::string_view kAclDefaultXattr = "system.posix_acl_default";

inline bool is_acl_xattr(std::string_view name) { return name == kAclAccessXattr || name == kAclDefaultXattr; }

class PosixAcl {
 public:
  enum Tag : uint16_t {
    kUserObj = 0x01,
    kUser = 0x02,
    kGroupObj = 0x04,
    kGroup = 0x08,
    kMask = 0x10,
    kOther = 0x20,
  };
  struct Entry {
    uint16_t tag = 0;
    uint16_t perm = 0;  // rwx in the low three bits
    uint32_t id = 0;    // uid or gid of kUser / kGroup entries
    bool operator==(const Entry&) const = default;
  };

  // The ACL in an xattr value, or nullopt if it is not a well-formed one
  // (version 2; exactly one owner, owning group and other entry; at most
  // one mask, which named entries need; entries in tag order; permissions
  // rwx only), as posix_acl_valid() has it.
  static std::optional<PosixAcl> decode(std::string_view value);
  std::string encode() const;

  // The permission bits (0777) the ACL grants, written into the low bits of
  // *mode; returns whether the ACL says more than those bits can (named
  // entries or a mask): posix_acl_equiv_mode().
  bool extends_mode(uint32_t* mode) const;
  // A chmod to `mode`: owner and other entries take its bits, and the mask
  // (the owning group entry if there is no mask) its group bits:
  // posix_acl_chmod().
  void chmod(uint32_t mode);
  // A new inode's access ACL from its parent's default ACL (this), and the
  // requested mode (umask not applied): each of owner, other and mask (or
  // owning group) keeps only the permissions both grant, and *mode is cut
  // down to match. Returns whether the result extends the mode (else it
  // need not be stored): posix_acl_create_masq().
  bool create_masq(uint32_t* mode);

  const std::vector<Entry>& entries() const { return entries_; }

 private:
  std::vector<Entry> entries_;
};

}  // namespace peregrine::meta
