// Free-space allocator over the volume's data area.
//
// Free space is a map by offset (merging neighbours) plus a set by size
// (best fit). Sequential writers get large contiguous, stripe-aligned
// allocations: the first allocation of a file carves a window (a multiple
// of stripe_unit x member_count, at least Options::alloc_window) starting on
// a stripe-unit boundary, hands out what was asked, and keeps the rest as
// the file's in-memory reservation, from which the file's next allocations
// continue contiguously. Successive windows start on successive members
// (window k on member k mod member_count): a file smaller than a stripe
// unit lives on the member its window starts on, and if every window
// started on member 0, a tree of small files would put all its data there. Reservations are never persisted (a crash
// simply forgets them) and are given back at close, at delete, or when the volume would otherwise be full.
//
// Small files are packed instead: an allocation of at most kSmallFileBytes
// (and a stripe unit) with no goal and no reservation to continue (a file's
// first, or a small fallocate or hole before its first extent) goes to the
// next member in turn, right after the previous small file there. Each
// member has one packing stream, a reservation of one stripe unit owned by
// no file (stream_owner()), refilled with the best-fitting free unit of that
// member (freed space first; on a volume being filled, the next stripe
// row's). Files unpacked one after another then lie side by side on each
// drive, and the drive merges their writes into one IO instead of one per
// file. A packed file that grows continues in a window of its own. ext4
// decides the same way (its locality-group preallocation for requests up to
// 64 KiB, mballoc's stream_req). After an online restripe (restripe()) the
// turns go over the new member count.
//
// Space freed by an operation is "deferred" until the journal record that
// freed it is durable: reusing it earlier could let a crash revive the old
// owner pointing at another file's new bytes.
//
// The free map is never persisted: mount rebuilds it from the extent maps.
//
// Discard (TRIM): space on its way to the device's discard is out of the
// free map until the discard is done, so that no allocation can write into
// a range while it is being discarded; it counts as free for statfs. Two
// ways in: with discard_on_free (-o discard), space whose freeing became
// durable (release_durable) is queued for the discard worker instead of
// going back at once; take_free_for_trim (FITRIM) takes free extents out.
// Only space in the free map or made free by a durable record is ever
// handed out for discard: a crash can never bring back an owner of it.
// An allocation that finds too little space takes queued ranges back
// undiscarded and waits for discards in flight.
//
// Thread rules: every method takes the allocator's own mutex, so it may be
// called from the namespace (under Metadata's lock) and from the journal
// commit path (release_durable) at once. Lock order: namespace -> allocator.
// Two calls wait: wait_for_discards (the discard worker, holding nothing
// else) and, when space is short, allocate for discards in flight; those
// are done by the worker and FITRIM, which take no lock but this one, so
// allocate may wait under the namespace lock. The annotations
// (util/thread_annotations.h) state the lock rules for the compiler.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

#include "peregrine/meta/extent_map.h"
#include "peregrine/meta/types.h"
#include "peregrine/util/mutex.h"
#include "peregrine/util/thread_annotations.h"

namespace peregrine::meta {

class Allocator {
 public:
  // The largest first allocation that is packed (see above).
  static constexpr uint64_t kSmallFileBytes = 64 << 10;
  // The reservation owner of member m's packing stream: not a file's inode
  // number (those count up from 1).
  static constexpr Ino stream_owner(uint64_t member) { return ~Ino{0} - member; }

  // stripe_unit: the member step of window starts (0: every window starts on
  // a full-stripe boundary, member 0).
  Allocator(uint64_t data_offset, uint64_t data_size, uint64_t stripe_width, uint64_t window, uint64_t stripe_unit = 0);

  // Rebuild: marks [off, off + len) in use. false when part of it is not
  // free (two extents overlap, or outside the data area).
  bool mark_used(uint64_t off, uint64_t len);
  // Allocates `len` bytes (multiple of 4096) for `owner`, continuing at
  // `goal` (volume offset, 0 = none) when possible. Appends the ranges in
  // order to *out (never merged into what it held before). 0, or -ENOSPC
  // with nothing allocated and *out as it was.
  int allocate(Ino owner, uint64_t goal, uint64_t len, std::vector<VolRange>* out);
  // Gives space back now (allocation undone before anything referenced it).
  void free_now(VolRange r);
  // Gives space back once journal sequence `lsn` is durable.
  void free_deferred(uint64_t lsn, VolRange r);
  void release_durable(uint64_t durable_lsn);
  void drop_reservation(Ino owner);
  void drop_all_reservations();

  // ---- discard ----
  // -o discard: durable frees are queued for discard (see above).
  void set_discard_on_free(bool on);
  // The discard worker: blocks until ranges are queued or stop_discards();
  // moves every queued range into *out (sorted by offset, neighbours
  // merged), now in flight. false once stopped (and *out empty).
  bool wait_for_discards(std::vector<VolRange>* out);
  // Wakes wait_for_discards for good; queued ranges go back undiscarded.
  void stop_discards();
  // FITRIM: gives the small-file streams' unused units back, then takes
  // free extents (clipped to [*cursor, end)) of at least
  // `minlen` bytes out of the free map, in offset order, in pieces of at
  // most `max_piece` and at most `max_bytes` in total; advances *cursor
  // past what it looked at. Empty *out: nothing more up to `end`.
  void take_free_for_trim(uint64_t* cursor, uint64_t end, uint64_t minlen, uint64_t max_piece, uint64_t max_bytes,
                          std::vector<VolRange>* out);
  // Gives back ranges from wait_for_discards or take_free_for_trim.
  void discard_done(const std::vector<VolRange>& ranges);
  // Blocks until no range is queued for discard or in flight (tests,
  // FITRIM after -o discard work).
  void wait_discards_idle();
  uint64_t discard_pending_bytes() const;  // queued + in flight

  uint64_t total_bytes() const { return data_size_.load(std::memory_order_acquire); }
  // The data area grew to `data_size` bytes (online grow; never smaller):
  // the space past the old end becomes free.
  void grow(uint64_t data_size) EXCLUDES(mu_);
  // The volume was restriped onto another member count with the same
  // stripe unit (online restripe): windows and streams take turns over the
  // new members from now on. The streams' unused units go back: they were
  // picked as one member's under the old layout.
  void restripe(uint64_t stripe_width) EXCLUDES(mu_);
  // Free for statfs: includes reservations and deferred frees.
  uint64_t free_bytes() const;
  uint64_t deferred_bytes() const;
  // Copy of the free map (offset -> length), reservations and deferred
  // frees counted as free. For fsck and tests.
  std::map<uint64_t, uint64_t> free_map() const;

 private:
  void insert_free(uint64_t off, uint64_t len) REQUIRES(mu_);  // merges neighbours
  void take(uint64_t off, uint64_t len) REQUIRES(mu_);         // must lie in one free extent
  // Finds a free region of at least `want` bytes starting `phase` bytes past
  // a full-stripe boundary if it can (*aligned says whether it did).
  bool find_region(uint64_t want, uint64_t phase, uint64_t* off, uint64_t* len, bool* aligned) REQUIRES(mu_);
  void drop_reservation_locked(Ino owner) REQUIRES(mu_);
  // Gives every member's packing stream back (its unused unit becomes free).
  void drop_streams_locked() REQUIRES(mu_);
  // Packs a small file's first `len` bytes into the stream of the member
  // whose turn it is; false (nothing taken) when no stream space is found.
  bool pack_small_file(uint64_t len, std::vector<VolRange>* out) REQUIRES(mu_);
  // Takes queued discards back, then waits for those in flight, until
  // `len` bytes (plus `own`) are free or nothing is left to wait for.
  void reclaim_discards_locked(MutexLock& lk, uint64_t len, uint64_t own) REQUIRES(mu_);

  const uint64_t data_offset_;
  std::atomic<uint64_t> data_size_;  // written under mu_ (grow), read anywhere
  mutable Mutex mu_;
  const uint64_t window_setting_;  // the window asked for; window_ rounds it to whole stripes
  const uint64_t unit_;            // divides stripe_width_
  uint64_t stripe_width_ GUARDED_BY(mu_);
  uint64_t window_ GUARDED_BY(mu_);
  uint64_t members() const REQUIRES(mu_) { return stripe_width_ / unit_; }  // the turns windows and streams take

  std::map<uint64_t, uint64_t> by_off_ GUARDED_BY(mu_);
  std::set<std::pair<uint64_t, uint64_t>> by_size_ GUARDED_BY(mu_);  // (len, off)
  uint64_t free_ GUARDED_BY(mu_) = 0;                                // bytes in by_off_
  std::unordered_map<Ino, VolRange> reserved_ GUARDED_BY(mu_);
  uint64_t reserved_bytes_ GUARDED_BY(mu_) = 0;
  std::deque<std::pair<uint64_t, VolRange>> deferred_ GUARDED_BY(mu_);
  uint64_t deferred_bytes_ GUARDED_BY(mu_) = 0;
  uint64_t windows_ GUARDED_BY(mu_) = 0;  // windows carved so far: the next starts on member windows_ mod N
  uint64_t small_files_ GUARDED_BY(mu_) = 0;  // files packed so far: the next goes to member small_files_ mod N
  bool discard_on_free_ GUARDED_BY(mu_) = false;
  bool discards_stopped_ GUARDED_BY(mu_) = false;
  std::vector<VolRange> discard_queue_ GUARDED_BY(mu_);  // durable frees waiting for the worker
  uint64_t discard_queued_bytes_ GUARDED_BY(mu_) = 0;
  std::map<uint64_t, uint64_t> discard_in_flight_ GUARDED_BY(mu_);  // offset -> length, taken by the worker or FITRIM
  uint64_t discard_in_flight_bytes_ GUARDED_BY(mu_) = 0;
  std::condition_variable discard_work_cv_;  // the worker: queue not empty, or stop
  std::condition_variable discard_back_cv_;  // allocators, idle waiters: discards given back
};

}  // namespace peregrine::meta
