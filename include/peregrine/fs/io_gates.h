// IoGates: per-inode admission for data IO. Reads and block-aligned writes
// enter shared (many at once, on one file too); truncate, hole punching and
// sub-block read-modify-write enter exclusive, after every shared holder
// has finished. This keeps a block from being freed and reused while IO to
// it is in flight, and keeps two partial writes to one block from losing
// each other's bytes.
//
// Inodes hash onto a fixed set of stripes; inodes that share a stripe share
// a gate, which only costs some waiting. Writers waiting for exclusive entry
// hold off new shared entries, so truncate cannot starve.
//
// The gates also keep the kernel's page cache from holding bytes older
// than a write the daemon answered. In fuse.cache=direct a shared mapping
// still caches pages: the kernel writes dirty ones back before a write(2)
// and drops them after, but a page filled by a read (1) newer than the
// write that overtook it in the daemon (two workers or rings raced), or
// (2) just before the write and dirtied by the mapping while the write is
// in flight, is written back over the write's bytes (xfstests
// generic/346). So: a read waits for every older overlapping write that
// entered before it (IoSpan: the FUSE unique numbers requests in the order
// the kernel sent them), and a write of bytes that a page-cache fill read
// recently is told so, and stores its bytes into the page cache itself
// before it answers (fs_write.cpp). Fills are remembered per stripe in a
// small ring; a write older than a fill the ring forgot is told too: that
// costs a store, never a lost write. read(2) in direct mode fills no page
// and is not remembered.
//
// Each gate counts its writers' entries (write_generation): a read that
// entered with no writer inside, and finds the count unchanged once it has
// its bytes, read what the file holds now, and a copy of them stays good
// for as long as the count does (read_blocks.h).
//
// A thread that must wait first runs the before_wait hook, without any gate
// held: a FUSE worker may still hold staged IO of its own that holds a gate
// shared (fuse.batch_requests), and must hand it on or wait on itself.
//
// Thread rules: thread-safe. unlock_shared() may run on another thread than
// lock_shared() (a drive thread finishing the IO). before_wait runs on the
// thread that is about to wait. A gate is a lock chosen by inode number at
// run time, which the thread-safety analysis cannot name: "REQUIRES:
// exclusive gate" elsewhere stays a comment; each gate's own mutex is
// annotated.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <vector>

#include "peregrine/util/mutex.h"
#include "peregrine/util/thread_annotations.h"

namespace peregrine::fs {

// A data request as the kernel sent it: its FUSE unique (0 when unknown:
// such a request takes no part in ordering) and the file bytes it covers.
struct IoSpan {
  uint64_t unique = 0;
  uint64_t start = 0;
  uint64_t end = 0;  // exclusive
};

class IoGates {
 public:
  explicit IoGates(std::function<void()> before_wait = {}) : before_wait_(std::move(before_wait)) {}

  // For readers only: a writer must enter with lock_shared_write or
  // exclusively, which makes the write generation new.
  void lock_shared(uint64_t ino);
  void unlock_shared(uint64_t ino);
  void lock_exclusive(uint64_t ino);
  // Enters exclusive and returns true only if that needs no waiting (no
  // holder, no other writer waiting for exclusive entry); else false.
  bool try_lock_exclusive(uint64_t ino);
  void unlock_exclusive(uint64_t ino);

  // A read enters shared after every older write of its bytes that
  // entered with lock_shared_write has left; leave with unlock_shared.
  // *generation (if given): the gate's write generation, or 0 when a
  // writer is inside.
  void lock_shared_read(uint64_t ino, const IoSpan& read, bool fills_page_cache, uint64_t* generation = nullptr);
  // The gate's write generation now, or 0 when a writer is inside. Every
  // entry by a writer (lock_shared_write, lock_exclusive,
  // try_lock_exclusive) makes it new; it is never 0.
  uint64_t write_generation(uint64_t ino);
  // A block-aligned write enters shared and returns true, unless the page
  // cache may hold its bytes (page_cache_holds): then it enters nothing and
  // returns false, for the caller to take the exclusive path. Leave with
  // unlock_shared_write.
  bool lock_shared_write(uint64_t ino, const IoSpan& write);
  // lock_shared_write where that needs no waiting (no holder exclusive, no
  // writer waiting for exclusive entry); false, having entered nothing,
  // where it would wait or the page cache may hold the bytes. For a thread
  // that must not wait (a FUSE ring's).
  bool try_lock_shared_write(uint64_t ino, const IoSpan& write);
  void unlock_shared_write(uint64_t ino, const IoSpan& write);
  // A write inside (lock_shared_write) that was answered before its IO
  // completed (write_behind.h): every read of its bytes, whatever its age,
  // waits until it leaves. It then leaves with unlock_shared_write of
  // answered(write).
  void mark_answered(uint64_t ino, const IoSpan& write);
  static IoSpan answered(const IoSpan& write) { return IoSpan{kAnsweredUnique, write.start, write.end}; }
  // Whether a page-cache fill of bytes of `write` entered recently (or may
  // have, newer than the write: the ring forgot it). For a writer that
  // holds the gate exclusively, when every such fill has answered.
  bool page_cache_holds(uint64_t ino, const IoSpan& write);

 private:
  // Older than every request the kernel numbers (its uniques are larger).
  static constexpr uint64_t kAnsweredUnique = 1;
  static constexpr int kStripes = 256;
  static constexpr int kRecentReads = 64;
  struct Seen {
    uint64_t ino = 0;
    IoSpan span;
  };
  struct Gate {
    Mutex mu;
    std::condition_variable cv;
    uint32_t shared GUARDED_BY(mu) = 0;
    bool exclusive GUARDED_BY(mu) = false;
    uint32_t exclusive_waiting GUARDED_BY(mu) = 0;
    uint32_t order_waiting GUARDED_BY(mu) = 0;  // reads waiting for older writes
    std::vector<Seen> writes GUARDED_BY(mu);    // aligned writes inside
    Seen reads[kRecentReads] GUARDED_BY(mu);    // the newest page-cache fills that entered
    uint32_t next_read GUARDED_BY(mu) = 0;
    uint32_t reads_kept GUARDED_BY(mu) = 0;        // filled slots of reads: none unless something mapped
    uint64_t forgotten_unique GUARDED_BY(mu) = 0;  // newest unique the ring dropped
    uint64_t write_generation GUARDED_BY(mu) = 1;  // writers' entries + 1
    uint32_t shared_writers GUARDED_BY(mu) = 0;    // lock_shared_write holders
  };
  static uint64_t generation_of(const Gate& g) REQUIRES(g.mu) {
    return g.exclusive || g.shared_writers != 0 ? 0 : g.write_generation;
  }
  Gate& gate(uint64_t ino) { return gates_[ino % kStripes]; }
  // Returns once may_enter() (called with g.mu held) is true.
  template <typename MayEnter>
  void wait(Gate& g, MutexLock& lock, MayEnter may_enter) REQUIRES(g.mu);
  static bool filled_recently(const Gate& g, uint64_t ino, const IoSpan& write) REQUIRES(g.mu);
  // Enters shared as a writer unless filled_recently: both lock_shared_write's.
  static bool enter_shared_write(Gate& g, uint64_t ino, const IoSpan& write) REQUIRES(g.mu);

  const std::function<void()> before_wait_;
  Gate gates_[kStripes];
};

// Holds a gate exclusively for a scope.
class ExclusiveGate {
 public:
  ExclusiveGate(IoGates& g, uint64_t ino) : g_(g), ino_(ino) { g_.lock_exclusive(ino_); }
  ~ExclusiveGate() { g_.unlock_exclusive(ino_); }
  ExclusiveGate(const ExclusiveGate&) = delete;
  ExclusiveGate& operator=(const ExclusiveGate&) = delete;

 private:
  IoGates& g_;
  uint64_t ino_;
};

}  // namespace peregrine::fs
