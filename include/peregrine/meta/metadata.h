// The metadata layer's operations API, called by the FUSE daemon.
//
// Metadata owns the in-memory Model (inodes, directories, extent maps,
// xattrs, orphans), the Allocator over the data area, and the Journal. Every
// changing operation applies a transaction (records.h) to the Model and
// appends it to the journal before returning; it becomes durable at the
// next group commit (background, every Options::commit_interval_ms), or
// when fsync()/sync() is called, or at unmount. See docs/metadata-format.md
// for the durability contract.
//
// Errors: every int-returning call returns 0 or -errno. Common ones:
// ENOENT (no such inode or entry), ENOTDIR, EISDIR, EEXIST, ENOTEMPTY,
// ENAMETOOLONG (name > 255 bytes), EINVAL (bad argument), ENOSPC, EROFS (a
// journal or checkpoint write failed earlier: the volume is read-only until
// it is remounted; fsync and sync fail with EIO then).
//
// Not done here (the caller's job): permission checks (the kernel's
// default_permissions, which also checks POSIX ACLs), deciding which suid/sgid
// bits a write/truncate/chown removes (pass them as SetAttrIn::clear_mode), "." and ".." in readdir
// (cookies 1 and 2 are free for them), sub-block IO (read-modify-write of
// partial 4 KiB blocks, see prepare_write), zeroing the tail of a partial
// last block before a file is extended past it, and zeroing partial blocks
// at the edges of punch_hole / zero-range.
//
// Special files: FIFOs, sockets, character and block devices are supported
// by mknod (an inode with rdev; no data).
//
// Thread rules: any number of threads may call any method at once.
// - ns_mu_ (a SharedMutex) guards the Model: lookups, getattr, readdir,
//   readlink, getxattr/listxattr, map_read, seek, statfs and paths_of take
//   it shared; everything that changes state (including open/release and
//   complete_write from IO completion threads) takes it exclusively. It is
//   never held while waiting for IO.
// - The Journal has its own mutex/condvars; fsync/sync wait there, without
//   ns_mu_. The Allocator has its own mutex.
// - Lock order: ns_mu_ -> journal -> allocator. releases_mu_ (the coming
//   releases, ComingRelease) comes last: nothing is locked while it is
//   held, and an allocation waits on it without ns_mu_.
// - GUARDED_BY / REQUIRES state these rules for the compiler
//   (util/thread_annotations.h); the clang build checks them.
#pragma once

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "peregrine/meta/allocator.h"
#include "peregrine/meta/discarder.h"
#include "peregrine/meta/journal.h"
#include "peregrine/meta/layout.h"
#include "peregrine/meta/model.h"
#include "peregrine/meta/space.h"
#include "peregrine/meta/types.h"
#include "peregrine/util/mutex.h"
#include "peregrine/util/result.h"
#include "peregrine/util/thread_annotations.h"
#include "peregrine/volume/volume_io.h"

namespace peregrine::meta {

struct DirEntry {
  std::string name;
  Ino ino = 0;
  uint32_t type = 0;    // S_IF* bits of the child
  uint64_t cookie = 0;  // pass back to readdir to continue after this entry
};

struct StatFs {
  uint64_t block_size = kBlockSize;
  uint64_t total_blocks = 0;
  uint64_t free_blocks = 0;
  // Blocks that can still be written to: free_blocks, or 0 once the
  // metadata area has no room left to map them (MetaSpace).
  uint64_t avail_blocks = 0;
  uint64_t files = 0;
  uint64_t files_free = 0;  // MetaSpace::files_free()
  uint32_t name_max = kNameMax;
};

// One piece of a read: `len` bytes of the file at file_off either come from
// the volume at vol_off (kData) or are zeros (kZero: hole or unwritten).
struct Segment {
  enum Kind : uint8_t { kData, kZero };
  uint64_t file_off = 0;
  uint64_t vol_off = 0;
  uint64_t len = 0;
  Kind kind = kZero;
  bool operator==(const Segment&) const = default;
};

// A block-aligned piece of a write: write file bytes [file_off, +len) to the
// volume at vol_off. `written` false = the blocks are freshly allocated or
// unwritten: a partial-block write must fill the rest of the block with
// zeros, not with what the volume holds there.
struct WriteRange {
  uint64_t file_off = 0;
  uint64_t vol_off = 0;
  uint64_t len = 0;
  bool written = false;
  bool operator==(const WriteRange&) const = default;
};

struct SetAttrIn {
  enum : uint32_t {
    kMode = 1,
    kUid = 2,
    kGid = 4,
    kSize = 8,
    kAtime = 16,
    kMtime = 32,
    kAtimeNow = 64,
    kMtimeNow = 128,
    kCtime = 256,
  };
  uint32_t valid = 0;
  uint32_t mode = 0;  // permission bits (07777); the type is kept
  // S_ISUID / S_ISGID to remove from the mode as it is when the change is
  // applied (after kMode): a write's or chown's loss of privileges, journaled
  // like a chmod. Other bits are ignored.
  uint32_t clear_mode = 0;
  uint32_t uid = 0, gid = 0;
  uint64_t size = 0;
  int64_t atime_ns = 0, mtime_ns = 0, ctime_ns = 0;
  // The kernel's flush of the times it stamped on cached writes (FUSE
  // sends it before an fsync and at writeback, with the writer's handle):
  // with kMtime and kCtime alone it is the rewrite times' record in
  // another form, deferred as they are (Metadata::setattr). A user's
  // utimensat never carries a handle, and is journaled.
  bool stamped_write_times = false;
};

struct MountReport {
  bool fresh = false;           // empty filesystem created
  uint64_t checkpoint_seq = 0;  // checkpoint loaded
  uint64_t replayed_batches = 0;
  uint64_t replayed_records = 0;
  uint64_t orphans_freed = 0;
  // The data area (bytes) the checkpoint was written for when the volume
  // has since grown (peregrine grow), else 0.
  uint64_t grown_from = 0;
  bool read_only = false;        // replayed in memory only; nothing written
  uint64_t skipped_batches = 0;  // journal batches not applied (skip_replay)
  std::string journal_stop;      // why replay stopped
  // Wall time of each mount phase, milliseconds.
  double read_ms = 0, decode_ms = 0, replay_ms = 0, rebuild_ms = 0, checkpoint_ms = 0;
};

class Metadata {
 public:
  // Loads the newest valid checkpoint, replays the journal, rebuilds the
  // allocator, frees orphans, and checkpoints if anything was replayed.
  // With Options::read_only it replays into memory only and writes nothing,
  // ever: changing calls fail with EROFS, fsync/sync succeed at once.
  // An all-zero metadata area becomes a fresh filesystem (root = ino 1,
  // 0755 root:root). Fails with a message when no checkpoint is valid in a
  // used area, when the journal is inconsistent, or when extents overlap
  // (run fsck).
  static Expected<std::unique_ptr<Metadata>> mount(VolumeIo& io, const Geometry& g, Options opt = {});
  // Stops the background committer. Does NOT checkpoint: call unmount().
  ~Metadata();
  Metadata(const Metadata&) = delete;
  Metadata& operator=(const Metadata&) = delete;

  // Commit everything, write a checkpoint, flush. After it returns ok the
  // whole state is durable and the next mount replays nothing.
  Status unmount();
  const MountReport& mount_report() const { return report_; }

  // ---- namespace ----
  // Attributes of the entry `name` in directory `parent`.
  int lookup(Ino parent, std::string_view name, InodeAttr* out);
  int getattr(Ino ino, InodeAttr* out);
  // What a file handle names, for NFS export and open_by_handle_at (the
  // kernel looks up "." and ".." of an inode it no longer caches): `ino`
  // itself while it has a name (ENOENT once it has none), and the directory
  // holding directory `ino` (the root's is the root; ENOTDIR for others).
  int lookup_self(Ino ino, InodeAttr* out);
  int lookup_parent(Ino dir, InodeAttr* out);
  // Regular file (S_IFREG or type 0), FIFO, socket, char/block device.
  // EINVAL for S_IFDIR/S_IFLNK. New inode owned by cred (group of a setgid
  // parent); parent mtime/ctime updated. Every create below takes
  // cred.umask from the mode, or with Options::posix_acl and a parent with
  // a default ACL, that ACL instead (the inode's access ACL, and for a
  // directory its default ACL too, in the same transaction).
  int mknod(Ino parent, std::string_view name, uint32_t mode, uint64_t rdev, const Cred& cred, InodeAttr* out);
  // mknod(S_IFREG) + open(): the returned inode is counted as open.
  int create(Ino parent, std::string_view name, uint32_t mode, const Cred& cred, InodeAttr* out);
  // O_TMPFILE: an open regular file with no name (nlink 0) in `parent`'s
  // filesystem, owned as create() would own it there. It is an orphan from
  // the start: freed at its last release() unless link() gave it a name,
  // and at the next mount after a crash. The parent does not change.
  int tmpfile(Ino parent, uint32_t mode, const Cred& cred, InodeAttr* out);
  // Child of a setgid directory inherits S_ISGID. EMLINK past 65000 subdirs.
  int mkdir(Ino parent, std::string_view name, uint32_t mode, const Cred& cred, InodeAttr* out);
  // ENOENT for an empty target, ENAMETOOLONG past 4095 bytes.
  int symlink(Ino parent, std::string_view name, std::string_view target, const Cred& cred, InodeAttr* out);
  int readlink(Ino ino, std::string* target);  // EINVAL: not a symlink
  // EPERM for directories, EMLINK past 65000 links, ENOENT for nlink 0 —
  // except for a tmpfile() inode that never had a name: it gets its first
  // and stops being an orphan (the kernel refuses O_TMPFILE|O_EXCL files).
  int link(Ino ino, Ino newparent, std::string_view newname, InodeAttr* out);
  // EISDIR for directories. An open file keeps existing (orphan) until its
  // last release(); a crash frees it at the next mount.
  int unlink(Ino parent, std::string_view name);
  // ENOTDIR, ENOTEMPTY, EBUSY for the root. An open directory (the fs
  // layer counts opendir as open()) keeps existing, empty and with no
  // links, until its last release(), as a file does after unlink; so does
  // a directory or file that a rename replaces.
  int rmdir(Ino parent, std::string_view name);
  // flags: 0, RENAME_NOREPLACE (EEXIST if the target exists) or
  // RENAME_EXCHANGE (ENOENT if it does not); both: EINVAL. POSIX rules:
  // a dir may replace only an empty dir (ENOTEMPTY / ENOTDIR), a non-dir
  // only a non-dir (EISDIR); moving a dir into its own subtree is EINVAL;
  // two links to the same inode: nothing happens, 0. RENAME_WHITEOUT
  // (with or without NOREPLACE) leaves a whiteout at the old name: a 0:0
  // character device, mode 0, owned by `cred` (the group of a setgid
  // parent), in the same transaction.
  int rename(Ino parent, std::string_view name, Ino newparent, std::string_view newname, uint32_t flags,
             const Cred& cred = Cred{});
  // chmod/chown/truncate/utimens. ctime becomes now (or in.ctime_ns with
  // kCtime). kSize on a directory: EISDIR; on other non-regular: EINVAL.
  // Truncating frees the blocks past the new size (whole blocks). A chmod
  // rewrites the access ACL, if there is one, to match.
  int setattr(Ino ino, const SetAttrIn& in, InodeAttr* out);
  // Entries with `cookie` < cookie < `end` (cookie 0 = from the start), at
  // most `max`, in stable order. An empty result means the end.
  int readdir(Ino dir, uint64_t cookie, size_t max, std::vector<DirEntry>* out, uint64_t end = kNoListingEnd);
  // readdir with each entry's attributes, taken under one shared lock
  // (for FUSE readdirplus).
  int readdir_plus(Ino dir, uint64_t cookie, size_t max, std::vector<std::pair<DirEntry, InodeAttr>>* out,
                   uint64_t end = kNoListingEnd);
  // Where one pass over `dir` that starts now ends: the cookie the next
  // entry added to it will get. Cookies only grow, and an entry added or
  // renamed into the directory (back) gets a new one, so a pass that stops
  // there (readdir's `end`) lists every entry present at its start and not
  // removed during it exactly once, none added later, and ends however
  // fast entries come and go. Without it, a pass that keeps meeting
  // entries renamed away and back need never end (generic/736).
  int listing_end(Ino dir, uint64_t* end);
  static constexpr uint64_t kNoListingEnd = UINT64_MAX;
  // A path relative to the root for each of `inos` that has a name
  // (model_paths.h): a walk over every directory when a file is asked for.
  std::map<Ino, std::string> paths_of(const std::set<Ino>& inos);

  // ---- xattrs ----  flags: XATTR_CREATE (EEXIST if present),
  // XATTR_REPLACE (ENODATA if absent). Name > 255: ERANGE; value > 64 KiB:
  // E2BIG. The caller handles the size-0 probe and ERANGE for short buffers.
  // With Options::posix_acl the ACL xattrs are kept as ext4 keeps them:
  // an access ACL sets the mode's permission bits and is stored only if it
  // says more than they can (EINVAL if malformed); `clear_mode` (S_ISGID,
  // when the caller is neither in the file's group nor holds CAP_FSETID)
  // is then taken from the mode, as the VFS does. Removing an ACL that is
  // not there succeeds.
  int getxattr(Ino ino, std::string_view name, std::string* value);  // ENODATA
  int setxattr(Ino ino, std::string_view name, std::string_view value, int flags, uint32_t clear_mode = 0);
  int listxattr(Ino ino, std::vector<std::string>* names);
  int removexattr(Ino ino, std::string_view name);  // ENODATA

  int statfs(StatFs* out);

  // ---- open files ----
  int open(Ino ino);     // counts an open handle (a file's or a directory's)
  // Last release of an unlinked inode frees it. *last (if given): no open
  // of the inode is left.
  int release(Ino ino, bool* last = nullptr);
  // A release that is coming, for as long as this lives: the fs layer
  // holds one while it serves a RELEASE request. An allocation that finds
  // no space waits (at most kReleaseWaitMs) for the coming releases, which
  // may free an unlinked file's blocks, and tries again, as ext4 retries
  // after a journal commit (ext4_should_retry_alloc): a program that
  // closes and unlinks a file and writes at once finds its space even when
  // the kernel's RELEASE, sent at the close, is served after the write.
  class ComingRelease {
   public:
    explicit ComingRelease(Metadata& md);
    ~ComingRelease();
    ComingRelease(const ComingRelease&) = delete;
    ComingRelease& operator=(const ComingRelease&) = delete;

   private:
    Metadata& md_;
  };
  static constexpr int kReleaseWaitMs = 1000;
  // Allocations that waited for coming releases (tests).
  uint64_t release_waits() const;

  // ---- data mapping (block granularity, 4096) ----
  // Where to read file bytes [off, off + len), clipped to the file size.
  // With `atime_due`, also whether the read should update the access time
  // (Options::atime): then call accessed(), which is rare under relatime.
  // With `size`, also the file's size the segments were clipped to.
  int map_read(Ino ino, uint64_t off, uint64_t len, std::vector<Segment>* out, bool* atime_due = nullptr,
               uint64_t* size = nullptr);
  // A read of the file or a listing of the directory `ino`: sets its atime
  // to now if Options::atime asks for it; true if it changed. Under
  // relatime the change is journaled (at most once per modification or
  // day), unless the inode's attributes were journaled less than a commit
  // interval ago; then, and always under strictatime, it is kept in memory
  // and journaled with the inode's next change, fsync, sync or unmount, as
  // deferred rewrite times are.
  bool accessed(Ino ino);
  // Allocates (unwritten) whatever is unmapped in the blocks covering
  // [off, off + len) and returns the block-aligned ranges to write. Does not
  // change the size. Removes the file's security.capability xattr (a
  // written file loses its file capabilities). EFBIG past 2^60, ENOSPC when the volume is full.
  // With `rewrite_done`: a write that only rewrites written blocks inside
  // the file also gets its mtime/ctime here (as the kernel updates them
  // before a write's data) and *rewrite_done says so; it needs no
  // complete_write, provided the caller keeps the file's extents and size
  // from shrinking until its data is written (the fs layer's IO gate).
  // *size_before (if given): the file's size before this write.
  // `kernel_stamped`: the kernel set this write's times itself, so they are
  // left alone when Options::kernel_stamps_writes says the mount lets it
  // (page-cache writebacks); false for a direct write, whose times the
  // daemon sets (the kernel stamps nothing for FOPEN_DIRECT_IO writes).
  int prepare_write(Ino ino, uint64_t off, uint64_t len, std::vector<WriteRange>* out, bool* rewrite_done = nullptr,
                    uint64_t* size_before = nullptr, bool kernel_stamped = true);
  // After the data writes of `ranges` completed: marks them written (only
  // where the file still maps them to the same volume bytes), raises the
  // size to new_size if larger, updates mtime/ctime (kernel_stamped: as for
  // prepare_write). Called from IO completion threads.
  int complete_write(Ino ino, std::span<const WriteRange> ranges, uint64_t new_size, bool kernel_stamped = true);
  // mode: 0 or FALLOC_FL_KEEP_SIZE (allocate unwritten), FALLOC_FL_PUNCH_HOLE
  // | FALLOC_FL_KEEP_SIZE, FALLOC_FL_ZERO_RANGE [| KEEP_SIZE]. Others:
  // EOPNOTSUPP. Punch/zero act on whole blocks inside the range.
  int fallocate(Ino ino, int mode, uint64_t off, uint64_t len);
  // whence SEEK_DATA / SEEK_HOLE (unwritten extents count as holes). ENXIO
  // past EOF.
  int seek(Ino ino, uint64_t off, int whence, uint64_t* result);

  // ---- durability ----
  // Waits until the journal is durable up to this inode's last change (and
  // so every earlier change of any inode). Call after the file's data
  // writes completed (and their complete_write). `data_only` (fdatasync):
  // rewrite times still held in memory stay there, so an fdatasync after
  // an overwrite in place commits nothing when the file's size and extents
  // are durable already (as ext4's fdatasync skips a times-only change).
  int fsync(Ino ino, bool data_only = false);
  // Whether an fsync now would commit at most one small journal batch (no
  // other commit under way, no checkpoint due; Journal::commit_is_short).
  bool fsync_commit_is_short() const;
  // Options::plant_journal_without_data_flush (tests of the power-cut
  // harness only): the daemon's fsync leaves out its flush before the
  // commit too.
  bool planted_journal_without_data_flush() const { return opt_.plant_journal_without_data_flush; }
  int sync();        // everything so far
  int checkpoint();  // sync + write a checkpoint now
  // Sets (any time, any thread) what runs whenever metadata is about to
  // be persisted (a journal batch, a checkpoint), after the state it
  // persists was taken and before it is written, on the thread that
  // commits (the background committer, an fsync caller, unmount), with no
  // metadata lock held. It may take the namespace lock shared and do
  // member IO, never commit. Data the daemon keeps in memory (fs
  // TailBlocks) is written there, so that no durable size covers bytes
  // that are not durable. An error fails the commit as a write error does.
  void set_before_persist(std::function<int()> fn);

  // ---- discard ----
  // FITRIM: discards the free space within [start, start + len) of the data
  // area (offsets from its start, as statfs counts it; len clipped to its
  // end) in free extents of at least `minlen` bytes. *trimmed: bytes
  // discarded. EINVAL: start past the end, len or minlen beyond reason;
  // EROFS: read-only; EOPNOTSUPP: the members cannot discard. Waits for
  // member IO: call without any lock (never from a ring thread).
  int trim(uint64_t start, uint64_t len, uint64_t minlen, uint64_t* trimmed);
  DiscardStats discard_stats() const;
  // Online grow: the volume's superblocks (every copy, durably) and its
  // VolumeIo now give a data area of `data_size` bytes, larger than the one
  // mounted. The space past the old end becomes free (statfs shows it at
  // once) and the next checkpoint records the new size. EROFS on a
  // read-only mount or after a metadata write failed; EINVAL when smaller
  // than now or past the end of the VolumeIo. Any thread, no lock held.
  int grow_data_area(uint64_t data_size);
  // Online restripe: the volume now stripes rows of `stripe_width` bytes
  // (more members, the same stripe unit). New windows and small files take
  // turns over all its members from now on, as after a remount. Any
  // thread, no lock held.
  void follow_restripe(uint64_t stripe_width) { alloc_->restripe(stripe_width); }
  uint64_t data_size() const { return data_size_.load(std::memory_order_acquire); }
  // Blocks until nothing is queued for discard or being discarded (tests).
  void wait_discards_idle() { alloc_->wait_discards_idle(); }

  // True once a journal or checkpoint write failed: changes fail with
  // EROFS from then on, fsync and sync with EIO (see Options::on_read_only).
  bool write_failed() const { return journal_->error() != 0; }
  // Puts the volume in that state for a reason of a layer above (an online
  // restripe that can no longer vouch for writes from now on): as if a
  // journal write had failed now, without Options::on_read_only (the
  // caller says why). Any thread, no lock held.
  void stop_changes() { journal_->stop(-EIO); }

  // ---- for fsck, tools and tests ----
  std::string dump() const;  // Model::dump() under the shared lock
  std::map<uint64_t, uint64_t> free_map() const { return alloc_->free_map(); }
  uint64_t journal_batches() const { return journal_->batches_written(); }
  JournalPosition journal_position() const { return journal_->position(); }
  const MetaLayout& layout() const { return layout_; }
  // Use of the metadata area (what statfs reports from).
  MetaSpace space() const;
  // Last error message of a failed checkpoint (e.g. "does not fit").
  std::string last_error() const;

 private:
  struct TxnBuilder;
  Metadata(VolumeIo& io, const Geometry& g, Options opt, MetaLayout layout);

  // mount()'s phases, in order, each timed in report_. They run before any
  // other thread can reach this Metadata (no lock; the orphan pass takes
  // ns_mu_ as commit_txn needs).
  // The Model from the newest valid checkpoint (or a fresh one), then the
  // journal replayed over it (or only counted, norecovery): where the
  // journal continues.
  Expected<JournalPosition> load_model();
  // Every extent marked used in a new allocator: an overlap is corruption.
  Status rebuild_allocator();
  // The journal from `start`, with its hooks back into this Metadata.
  void open_journal(JournalPosition start);
  // Inodes unlinked while open when the volume last stopped: freed.
  void free_orphans();

  int64_t now() const { return opt_.clock(); }
  // For decisions a few milliseconds cannot change (relatime's day): the
  // kernel's coarse clock when Options supplied no clock, else that clock
  // (a test's, or the daemon's coarse one with fuse.cache=writeback).
  int64_t coarse_now() const;
  // The metadata area's use, from the Model's exact checkpoint body size.
  // Operations check it (space.h) before they apply a change that grows the
  // body, so no checkpoint ever outgrows its slot.
  MetaSpace space_locked() const REQUIRES_SHARED(ns_mu_) {
    return MetaSpace{layout_.max_body(), model_.body_bytes, model_.inodes.size()};
  }
  // Applies and journals a transaction.
  // data_first: Journal::append's.
  int commit_txn(Txn&& txn, bool data_first = false) REQUIRES(ns_mu_);
  // Journals the deferred timestamps of `in` (or of every such inode).
  int log_deferred_times(Inode* in) REQUIRES(ns_mu_);
  // A rewrite of written blocks inside the file: sets mtime/ctime to `t`
  // in memory only, if the inode's times were journaled less than a commit
  // interval ago (false: the caller journals them).
  bool defer_rewrite_times(Inode* in, int64_t t) REQUIRES(ns_mu_);
  // Puts `in` on the list of inodes whose times wait to be journaled.
  void mark_times_unlogged(Inode* in) REQUIRES(ns_mu_);
  // Whether an access now updates in's atime (Options::atime).
  bool atime_due(const Inode& in) const REQUIRES_SHARED(ns_mu_);
  // Whether in's attributes were journaled less than a commit interval
  // before `t`: then a time-only change may wait in memory.
  bool logged_recently(const Inode& in, int64_t t) const REQUIRES_SHARED(ns_mu_);
  // Sets mtime/ctime to `t` for a rewrite, deferred or journaled.
  int touch_rewrite_times(Inode* in, int64_t t) REQUIRES(ns_mu_);
  int log_all_deferred_times() REQUIRES(ns_mu_);
  // The journal's checkpoint function: runs on the commit leader, which
  // holds no namespace lock (it takes ns_mu_ shared itself).
  int do_checkpoint() EXCLUDES(ns_mu_);
  int create_node(Ino parent, std::string_view name, uint32_t mode, uint64_t rdev, std::string_view target,
                  const Cred& cred, bool open_it, InodeAttr* out) EXCLUDES(ns_mu_);
  // The Inode* arguments below point into model_: their callers hold ns_mu_.
  void drop_link(TxnBuilder& b, Inode* in) REQUIRES(ns_mu_);
  bool is_ancestor(Ino maybe_ancestor, Ino ino) const REQUIRES_SHARED(ns_mu_);
  InodeAttr attr_of(const Inode& in) const;
  int allocate_holes(TxnBuilder& b, Inode* in, uint64_t bs, uint64_t be) REQUIRES(ns_mu_);
  // After an allocation found no space: whether space may still come (frees
  // not yet durable, or releases coming). If so, the caller drops ns_mu_
  // and calls await_space(), which waits for the coming releases, commits
  // the journal (a free is usable once durable) and returns 0 or -EIO.
  bool space_may_come() const EXCLUDES(releases_mu_);
  int await_space() EXCLUDES(ns_mu_, releases_mu_);

  VolumeIo& io_;
  const Geometry geo_;  // as mounted; data_size_ holds the data area's size since
  std::atomic<uint64_t> data_size_;
  Options opt_;
  const bool default_clock_;  // Options had no clock: opt_.clock is realtime_ns
  const MetaLayout layout_;

  mutable SharedMutex ns_mu_;
  Model model_ GUARDED_BY(ns_mu_);
  // Inodes with times_unlogged set (may repeat / be stale).
  std::vector<Ino> times_unlogged_ GUARDED_BY(ns_mu_);
  // The list length that triggers the next compaction.
  size_t times_unlogged_compact_at_ GUARDED_BY(ns_mu_) = 4096;
  std::unique_ptr<Allocator> alloc_;
  std::unique_ptr<Journal> journal_;
  std::unique_ptr<Discarder> discarder_;  // read-write mounts only
  uint64_t ckpt_seq_ = 0;                 // commit leader only
  MountReport report_;
  mutable Mutex err_mu_;
  std::string last_error_ GUARDED_BY(err_mu_);
  mutable Mutex releases_mu_;  // last in the lock order
  std::condition_variable releases_done_;
  uint32_t coming_releases_ GUARDED_BY(releases_mu_) = 0;
  uint64_t release_waits_ GUARDED_BY(releases_mu_) = 0;
};

}  // namespace peregrine::meta
