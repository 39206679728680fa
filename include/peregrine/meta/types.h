// Plain value types shared by the metadata layer: the volume geometry the
// layer is given, tuning options, inode attributes, caller credentials, and
// the limits the layer enforces.
// Thread rules: none; these are values owned by whoever holds them.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>

namespace peregrine::meta {

using Ino = uint64_t;

// Mapping granularity: extents, holes and allocation are in whole 4 KiB
// blocks. Sub-block writes are the caller's read-modify-write.
inline constexpr uint64_t kBlockSize = 4096;
inline constexpr Ino kRootIno = 1;
inline constexpr size_t kNameMax = 255;          // NAME_MAX
inline constexpr size_t kSymlinkMax = 4095;      // PATH_MAX - 1
inline constexpr size_t kXattrNameMax = 255;     // XATTR_NAME_MAX
inline constexpr size_t kXattrValueMax = 65536;  // XATTR_SIZE_MAX
// readdir cookies 1 and 2 are left to the FUSE layer for "." and "..";
// real entries get cookies from 3 upwards, never reused within a directory.
inline constexpr uint64_t kFirstDirCookie = 3;

// Where the metadata lives and what the data area looks like, all in bytes
// of the volume's logical space (see VolumeIo). Given by the volume layer.
struct Geometry {
  uint64_t meta_offset = 0;
  uint64_t meta_size = 0;    // multiple of 4096, >= 16 MiB in production
  uint64_t data_offset = 0;  // first byte of the data area (4096-aligned)
  uint64_t data_size = 0;    // bytes of data area (rounded down to 4096)
  uint64_t stripe_unit = 0;  // bytes per member per stripe
  uint32_t member_count = 1;
  uint64_t stripe_width() const { return stripe_unit * member_count; }
};

// When a read or a directory listing updates the access time, as the
// mount options of the same names say (mount(8)).
enum class AtimeRule : uint8_t {
  kNoatime,   // never
  kRelatime,  // when atime is not newer than mtime or ctime, or is a day old
  kStrict,    // on every access
};

struct Options {
  // Nanoseconds since the epoch; tests install a deterministic clock.
  std::function<int64_t()> clock;
  // Background group commit: every interval the journal is committed if
  // anything is pending. 0 = only on fsync/sync/pressure (tests use this).
  uint32_t commit_interval_ms = 1000;
  // A checkpoint is written when the journal ring is this full (percent).
  uint32_t checkpoint_percent = 50;
  // In-memory records that force a background commit (bytes).
  uint64_t pending_commit_bytes = 4 << 20;
  // Allocation window for a file's sequential writes; rounded up to a
  // multiple of the stripe width so a file spreads over every member.
  uint64_t alloc_window = 8 << 20;
  // Journal ring size; 0 = default split (see layout.h).
  uint64_t journal_size = 0;
  // Read-only mount: the journal is replayed into memory only; nothing is
  // ever written (no orphan freeing, checkpoint or commit), and every
  // changing operation fails with EROFS.
  bool read_only = false;
  // With read_only: do not replay the journal at all (ext4's norecovery):
  // the view is the last checkpoint, possibly older than what was fsync'd.
  bool skip_replay = false;
  // POSIX ACLs as on ext4 (the kernel enforces them under FUSE_POSIX_ACL):
  // a new inode takes its parent's default ACL instead of the umask, chmod
  // rewrites the access ACL, and setting the access ACL sets the mode and
  // is not stored when the mode says it all (posix_acl.h).
  bool posix_acl = false;
  // Access times (accessed()); kNoatime leaves them to setattr alone.
  AtimeRule atime = AtimeRule::kNoatime;
  // The kernel keeps regular files' mtime and ctime across writes and
  // sends them with setattr (FUSE writeback cache): complete_write and
  // prepare_write leave them alone.
  bool kernel_stamps_writes = false;
  // Online discard (-o discard): space is discarded on the members once
  // the record that freed it is durable (discarder.h). Not in read_only.
  bool discard = false;
  // Tests of the power-cut harness only (PEREGRINE_TEST_PLANT): commits
  // (and the daemon's fsync before them) that write records marking data
  // written without flushing that data first, a bug put in on purpose for
  // the harness to catch.
  bool plant_journal_without_data_flush = false;
  // The same (PEREGRINE_TEST_PLANT): space a change frees is discarded on
  // the members at once, before the record that frees it is durable (the
  // allocator still keeps it from reuse until then).
  bool plant_discard_before_free_durable = false;
  // Called once, on the thread whose metadata write failed, when the
  // journal or a checkpoint could not be written: from then on the volume
  // is read-only (changes fail with EROFS, fsync and sync with EIO).
  // `what` names the write ("journal batch", "checkpoint"); err is -errno.
  std::function<void(int err, const char* what)> on_read_only;
};

// Attributes of one inode, as getattr reports them. mode holds the S_IF*
// type bits and the 07777 permission bits.
struct InodeAttr {
  Ino ino = 0;
  uint64_t generation = 0;
  uint32_t mode = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint32_t nlink = 0;
  uint64_t size = 0;
  uint64_t rdev = 0;
  int64_t atime_ns = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  uint64_t blocks = 0;  // 512-byte units of allocated extents (st_blocks)
  bool operator==(const InodeAttr&) const = default;
};

// The caller of an operation (from fuse_ctx). Permission checks are the
// kernel's (default_permissions); this is used for ownership only.
struct Cred {
  uint32_t uid = 0;
  uint32_t gid = 0;
  // Taken from a new inode's mode unless its parent has a default ACL
  // (Options::posix_acl): the kernel leaves that choice to the filesystem.
  uint32_t umask = 0;
};

}  // namespace peregrine::meta
