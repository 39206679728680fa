// FsContext: what every FUSE operation needs — the metadata layer, the
// engine (through a SubmitterPool), the per-inode IO gates and the
// settings — plus the small helpers the operation files share. Internal to
// src/fs.
//
// Thread rules: FUSE worker threads call the operations concurrently; data
// IO completions run on drive threads. FsContext itself is immutable after
// start; its members are thread-safe.
#pragma once

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <sys/stat.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "peregrine/config/settings.h"
#include "peregrine/engine/engine.h"
#include "peregrine/fs/engine_volume_io.h"
#include "peregrine/fs/io_gates.h"
#include "peregrine/fs/lone_caller.h"
#include "peregrine/fs/read_spin.h"
#include "peregrine/fs/read_turn.h"
#include "peregrine/fs/open_files_xattr.h"
#include "peregrine/fs/stats_xattr.h"
#include "peregrine/fs/submitter_pool.h"
#include "peregrine/meta/metadata.h"
#include "peregrine/util/clock.h"
#include "peregrine/util/log_line.h"
#include "peregrine/util/mutex.h"
#include "transport/data_calls.h"
#include "data_ops.h"
#include "page_cache_stores.h"
#include "read_blocks.h"
#include "refused_writebacks.h"
#include "tail_blocks.h"
#include "write_behind.h"
#include "write_open_files.h"
#include "transport/fuse_wire.h"
#include "transport/transport.h"

namespace peregrine::fs {

class OnlineGrow;
class OnlineReplace;
class OnlineRestripe;

// A ring thread's part of the host (transport/data_calls.h): its
// Submitter, made the thread's own as the thread starts. The same
// Submitter is the thread's for SubmitterPool::for_this_thread() too, so
// that a blocking helper it calls (EngineVolumeIo) hands its batch on.
// Kept by FsContext until it goes.
class HostThread {
 public:
  Submitter* submitter = nullptr;
};

// The transport's host: the session's userdata is the TransportHost base.
struct FsContext final : TransportHost {
  FsContext(meta::Metadata& m, SubmitterPool& p, EngineVolumeIo& io, const config::Settings& s,
            std::vector<std::string> names)
      : meta(m),
        pool(p),
        sync_io(io),
        gates([&p] {
          p.unplug_this_thread();
          p.engine().dispatch_held();
          ReadTurn::leave_held_turn();
        }),
        settings(s),
        tails(s.fuse.cache == config::CacheMode::kDirect ? s.fuse.tail_blocks : 0),
        read_blocks(s.fuse.cache == config::CacheMode::kDirect ? s.fuse.read_blocks : 0),
        write_behind(
            s.fuse.cache == config::CacheMode::kWriteback ? uint64_t{s.fuse.write_behind_mib} << 20 : 0,
            [&p] {
              p.unplug_this_thread();
              p.engine().dispatch_held();
              ReadTurn::leave_held_turn();
            },
            [&p] { p.engine().reap_here(); }, uint64_t{s.engine.inline_poll_us} * 1000),
        member_names(std::move(names)) {
    if (tails.enabled()) meta.set_before_persist([this] { return write_back_tails(); });
  }

  meta::Metadata& meta;
  SubmitterPool& pool;
  EngineVolumeIo& sync_io;  // blocking IO for the rare synchronous paths
  // A worker hands on its staged IO, and its turn to read requests, before
  // it waits at a gate.
  IoGates gates;
  ReadTurn read_turn;  // which classic worker reads /dev/fuse (batching reader)
  // How long a classic worker looks for the next request before it sleeps
  // (batching reader); its limit is set before the session starts.
  ReadSpin read_spin;  // classic workers'
  LoneCaller lone_caller;  // classic workers' (fuse.one_reader); enabled before the session starts
  ReadSpin ring_spin;  // io-uring rings' (fuse_ring.cpp); both use fuse.read_spin_us
  const config::Settings settings;
  // Partial last blocks of files written a little at a time (tail_blocks.h).
  TailBlocks tails;
  // Blocks that reads smaller than a block came from (read_blocks.h).
  ReadBlocks read_blocks;
  // Metadata's before-persist hook: every dirty tail written back.
  int write_back_tails();
  // Page-cache writebacks answered before their member IO completed.
  WriteBehind write_behind;
  // The free lists of the read and write paths' operations.
  DataOpPools op_pools;
  // Writebacks refused for want of space, told at the writer's next write.
  RefusedWritebacks refused_writebacks;
  // Files with a handle open for writing, for `peregrine sync`.
  WriteOpenFiles write_open_files;
  const std::vector<std::string> member_names;
  // st_blksize of every file: see preferred_io_size(). Of the volume as it
  // is striped now: an online restripe onto more members widens it.
  uint32_t preferred_io_bytes() const;
  // How long the kernel keeps names, attributes and absent names (the
  // fuse.*_timeout_s options): the daemon is the volume's only writer and
  // every change passes through the kernel, so they can be long.
  const double entry_timeout = settings.fuse.entry_timeout_s;
  const double attr_timeout = settings.fuse.attr_timeout_s;
  const double negative_timeout = settings.fuse.negative_timeout_s;
  const uint64_t mount_time_ns = monotonic_ns();
  // The session's own /dev/fuse descriptor, set before the workers start.
  // Workers read cloned descriptors; one reading this one means cloning
  // failed and every worker shares it (and its blocking mode).
  int session_fd = -1;
  fuse_session* session = nullptr;  // set before the session serves
  // Which volume this is, for the statistics document (monitoring labels
  // its series with it): the superblock's label ("" when it has none) and
  // UUID. Set before the session serves.
  std::string volume_label;
  std::string volume_uuid;
  // Buffered reads of files up to this size go through the members' page
  // cache (fs_read.cpp; 0: none). Set before the session serves.
  uint64_t member_cache_file_bytes = 0;
  // A read-only mount: serve_write() answers EROFS (read_only_ops.cpp
  // refuses the other changing operations). Set before the session serves.
  bool read_only = false;
  // Serves `peregrine grow MOUNTPOINT` (fs_grow.cpp); null: not offered.
  // Set before the session serves.
  OnlineGrow* online_grow = nullptr;
  // Serves `peregrine replace ... MOUNTPOINT` (fs_replace.cpp); null: not
  // offered. Set before the session serves.
  OnlineReplace* online_replace = nullptr;
  // Serves `peregrine grow --add NEW... MOUNTPOINT` (fs_restripe.cpp); null:
  // not offered. Set before the session serves.
  OnlineRestripe* online_restripe = nullptr;
  // The daemon's log (daemon_log.h), for what an operation has to say
  // there. Set before the session serves.
  LogLine log = [](int, const std::string&) {};

  // TransportHost: the batching request reader for libfuse's workers, and
  // staging on the io-uring transport's ring threads.
  Limits transport_limits() const override {
    return Limits{settings.fuse.workers,
                  settings.fuse.ring_depth,
                  settings.fuse.max_request_bytes,
                  settings.fuse.pin_rings,
                  uint64_t{settings.fuse.ring_memory_mib} << 20,
                  settings.fuse.ring_yield_ns};
  }
  ReadSpin* request_spin() override { return &ring_spin; }
  // The filesystem, not the kernel, removes suid/sgid on write, truncate,
  // O_TRUNC and chown: the kernel does not for direct writes, and only the
  // filesystem knows the file's mode at the moment it changes
  // (suidgid_to_drop).
  uint64_t wanted_init_flags() const override { return wire::kHandleKillprivV2; }
  // The file's IO gate orders the direct writes that must not overlap
  // (partial blocks take it exclusively).
  bool parallel_direct_writes() const override { return true; }
  void session_mounted(int fd) override { session_fd = fd; }
  ssize_t read_request(int fd, void* buf, size_t len, bool* may_stay_staged) override;
  // A thread that never staged anything (no Submitter yet) is not given
  // one here.
  void hand_on_staged(HostThread* thread) override {
    if (thread == nullptr) {
      pool.unplug_this_thread();
    } else if (thread->submitter != nullptr) {
      thread->submitter->unplug();
    }
  }
  void unplug_between_requests(HostThread* thread) override {
    if (thread == nullptr) {
      pool.unplug_this_thread(Submitter::Completions::here);
    } else if (thread->submitter != nullptr) {
      thread->submitter->unplug(Submitter::Completions::here);
    }
  }
  bool background_idle() const override { return pool.engine().outstanding() == 0; }
  HostThread* ring_thread_started(bool (*more_work)(const void*), const void* ring) override;
  // The staging queue (Falcon's per-thread one) of a request's thread: a
  // ring thread's own (its HostThread), or, for a request through libfuse
  // (null), the calling thread's (SubmitterPool::for_this_thread). Null
  // when every submitter slot is taken.
  Submitter* submitter_of(HostThread* thread) {
    return thread != nullptr ? thread->submitter : pool.for_this_thread();
  }
  bool runs_data_calls() const override { return true; }
  // The file's answered writes in flight at most a database's last frames
  // (not a copy's gigabyte), no tail block for the commit to write back,
  // and the commit one small batch with no checkpoint due.
  bool fsync_is_short(uint64_t ino) const override {
    return write_behind.pending_bytes(ino) <= kShortFsyncPendingBytes && tails.empty() &&
           meta.fsync_commit_is_short();
  }
  static constexpr uint64_t kShortFsyncPendingBytes = 1 << 20;
  void run_read(const ReadCall& call) override;
  void run_write(const WriteCall& call) override;
  bool try_run_write_without_waiting(const WriteCall& call) override;
  bool try_run_page_cache_write(const WriteCall& call) override;
  bool try_run_aligned_write(const WriteCall& call) override;
  // try_serve_write_without_waiting's: how many more partial writes go to
  // a thread that may wait before a ring thread tries one again.
  std::atomic<uint32_t> partial_writes_to_hand_on{0};

  // Reads and writes whose reply a drive thread still owes. The daemon
  // waits for none before it lets the session go, so no reply is sent on
  // a destroyed session.
  void data_op_started() { data_ops_.fetch_add(1); }
  void data_op_finished() {
    if (data_ops_.fetch_sub(1) == 1) data_ops_.notify_all();
  }
  void wait_for_data_ops() {
    pool.engine().dispatch_held();  // answered writes the drives hold are data ops
    for (uint64_t n = data_ops_.load(); n != 0; n = data_ops_.load()) data_ops_.wait(n);
  }

  // Stores a write's bytes into the kernel's page cache and then answers
  // it, on the store thread (page_cache_stores.h); a data op until then.
  void store_then_reply(const DataReply& reply, uint64_t ino, uint64_t off, const char* data, size_t size);

 private:
  std::atomic<uint64_t> data_ops_{0};
  Mutex ring_threads_mu_;
  std::vector<std::unique_ptr<HostThread>> ring_threads_ GUARDED_BY(ring_threads_mu_);
  // Last: its thread uses the members above until it is joined.
  PageCacheStores stores_{[this](PageCacheStores::Job& job) { run_store(job); }};
  void run_store(PageCacheStores::Job& job);
};

// The session's userdata is the FsContext's TransportHost base.
inline FsContext& context(fuse_req_t req) {
  return static_cast<FsContext&>(*static_cast<TransportHost*>(fuse_req_userdata(req)));
}

inline meta::Cred caller(fuse_req_t req) {
  const fuse_ctx* c = fuse_req_ctx(req);
  return meta::Cred{static_cast<uint32_t>(c->uid), static_cast<uint32_t>(c->gid), static_cast<uint32_t>(c->umask)};
}

// The st_blksize files report, which cp, dd-like tools and stdio take as
// the size of their reads and writes: a full stripe (`stripe_unit` on each
// of `members`), so that one write keeps every member busy, rounded down to
// a power of two (the kernel keeps only its log2) and kept within one FUSE
// request (`max_request_bytes`) and at least a page. With direct IO each
// application write is a synchronous round trip, so cp's 128 KiB default
// left the volume mostly idle.
uint32_t preferred_io_size(uint64_t stripe_unit, uint32_t members, uint32_t max_request_bytes);

void fill_stat(const meta::InodeAttr& a, uint32_t blksize, struct stat* st);
// The size a file will have once its answered writes land (write_behind.h).
void patch_size(const FsContext& fs, uint64_t ino, struct stat* st);

// Who sent `req`.
Caller caller_of(fuse_req_t req);
// The suid/sgid bits of a file with attributes `a` that a write, truncate,
// O_TRUNC open, chown or the kernel's file_remove_privs() by `caller`
// removes, as the Linux VFS does (setattr_should_drop_suidgid,
// chown_common): from any non-directory (only chown reaches FIFOs,
// devices and sockets); S_ISUID always; S_ISGID when
// group-execute is set (setgid then means "run as the group"), else (it
// means mandatory locking) only when the caller is not in the file's group
// and lacks CAP_FSETID. `lacks_fsetid`: the kernel said so (its kill marks);
// otherwise uid 0 counts as holding it.
uint32_t suidgid_to_drop(const Caller& caller, const meta::InodeAttr& a, bool lacks_fsetid);
// Whether `caller` may keep S_ISGID on a file of group `gid` when it
// changes the file's permissions: it is in that group, or holds
// CAP_FSETID (taken as uid 0).
bool caller_may_keep_sgid(const Caller& caller, uint32_t gid);
// Removes from `ino` what suidgid_to_drop() names, journaled like a chmod,
// for a write or O_TRUNC open the kernel marked (the caller lacks
// CAP_FSETID). 0 or -errno.
int drop_suidgid_for_write(const Caller& caller, FsContext& fs, uint64_t ino);
// The kernel's cached attributes of `ino` are stale: a reply that carries
// none (write, open) changed the mode, and after such requests the kernel
// refreshes only size and times, so stat(2) asking just for the mode would
// see the old one. Attributes only: never waits for the page cache.
void attributes_changed(FsContext& fs, uint64_t ino);
// The entry FUSE caches for an inode: attributes plus this mount's timeouts.
fuse_entry_param make_entry(const FsContext& fs, const meta::InodeAttr& a);
// Replies with an entry (lookup, mknod, mkdir, symlink, link) or the error.
void reply_entry_or_error(fuse_req_t req, int rc, const meta::InodeAttr& a);

// Zeroes bytes [from, to) of one block of the file (from / 4096 ==
// (to - 1) / 4096) if that block holds written data: used at the partial
// edges of a punched hole or zeroed range. zero_block_tail zeroes from
// `from` to the end of its block, after truncating down, so stale bytes
// never come back if the file grows again. REQUIRES: exclusive gate.
int zero_block_tail(FsContext& fs, uint64_t ino, uint64_t from);
int zero_block_range(FsContext& fs, uint64_t ino, uint64_t from, uint64_t to);

// READ and WRITE, whichever transport brought them (transport/data_calls.h). On the
// calling thread until the IO is staged; the reply comes from the thread
// that completes it.
void serve_read(FsContext& fs, const ReadCall& call);
void serve_write(FsContext& fs, const WriteCall& call);
// A write that is not whole blocks, on a thread that must not wait (a
// ring's): served and answered here, returning true, only if its file's
// gate is free, the page cache holds none of its bytes, and the members
// finish its read-modify-write inline; false, having done nothing, for a
// thread that may wait to serve it with serve_write. When the members made
// it wait after all, the next kPartialWritesHandedOnAfterWait return false
// at once.
bool try_serve_write_without_waiting(FsContext& fs, const WriteCall& call);
inline constexpr uint32_t kPartialWritesHandedOnAfterWait = 256;

// The per-operation groups, each filling its part of the ops table.
void add_attr_ops(fuse_lowlevel_ops& ops);
void add_namespace_ops(fuse_lowlevel_ops& ops);
void add_dir_ops(fuse_lowlevel_ops& ops);
void add_file_ops(fuse_lowlevel_ops& ops);
// READ and WRITE through libfuse (libfuse_data_ops.cpp): serve_read and
// serve_write for requests libfuse decoded.
void add_data_ops(fuse_lowlevel_ops& ops);
void add_xattr_ops(fuse_lowlevel_ops& ops);
void add_space_ops(fuse_lowlevel_ops& ops, config::CacheMode cache);
void add_trim_ops(fuse_lowlevel_ops& ops);  // FITRIM (fs_trim.cpp); needs FUSE_CAP_IOCTL_DIR
// The online grow ioctl (grow_ioctl.h), dispatched from the ioctl op.
void serve_grow_ioctl(fuse_req_t req, unsigned flags, size_t in_bufsz,
                      size_t out_bufsz);
// The checks of an ioctl that changes the volume's members (online grow,
// replace and restripe): root's (as resize2fs and xfs_growfs need
// CAP_SYS_ADMIN; FUSE tells the daemon only the caller's uid), a
// restricted ioctl of `size` bytes both ways, and a daemon that serves it
// (`served`). False once it replied with the error.
bool admit_member_ioctl(fuse_req_t req, unsigned flags, size_t in_bufsz, size_t out_bufsz, size_t size, bool served);
// The online replace ioctl (replace_ioctl.h), dispatched from the ioctl op.
void serve_replace_ioctl(fuse_req_t req, unsigned flags, const void* in_buf, size_t in_bufsz, size_t out_bufsz);
// The online restripe ioctl (restripe_ioctl.h), dispatched from the ioctl op.
void serve_restripe_ioctl(fuse_req_t req, unsigned flags, const void* in_buf, size_t in_bufsz, size_t out_bufsz);
// For a read-only mount, after the groups above: every changing operation
// is answered EROFS (read_only_ops.cpp). Main thread, before the session.
void make_read_only(fuse_lowlevel_ops& ops);

std::string stats_json(FsContext& fs);
// Whether `name` is the root's list of files open for writing, and which
// page of it (open_files_xattr.h): *after is the inode the page follows.
bool open_files_page_name(const char* name, uint64_t* after);
// That page, as `caller_uid` may see it (root: every file; others: theirs).
std::string open_files_page(FsContext& fs, uint32_t caller_uid, uint64_t after);

}  // namespace peregrine::fs
