// Moves one window of stripe units of a restripe (restripe_map.h) from
// their old places to their new ones: the sources are read into one of two
// buffers (one thread per old member, a vectored read per run of rows),
// then the targets are written (one thread per member), then every member
// is synced. The caller reads the next window into the other buffer while
// this one is written: its units are not yet moved, and a window only
// overwrites units already moved, so the two never touch the same bytes. A unit that is a hole on its sparse file
// member is not read; its target is zeroed in place (a punched hole, BLKZEROOUT). Units that stay where they are (row 0
// of the old members) are not touched. Internal to peregrine_volume.
// Thread rules: read() of one buffer may run on another thread than write()
// of the other; each blocks while its per-member threads run.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "peregrine/backend/member_file.h"
#include "peregrine/util/aligned_buffer.h"
#include "peregrine/util/result.h"
#include "peregrine/volume/member_copy.h"
#include "restripe_map.h"

namespace peregrine {

class RestripeMover {
 public:
  // `members`: all N + k, index order; they outlive the mover.
  // `max_units`: the units of data a window holds in memory (each of the
  // two buffers); holes take no buffer, so a window of a sparse member
  // reaches over up to kHoleReach times as many units.
  // `skip_holes` false: for a volume in use, whose holes plan() could not
  // see being filled: every unit is data unless find_window_holes() found
  // it a hole once its window was closed.
  RestripeMover(const RestripeMap& map, const std::vector<MemberFile>& members, uint64_t max_units,
                bool skip_holes = true);
  // Gentle: one member at a time and one stripe unit per transfer, so that
  // IO of a volume in use to the same drives never queues behind more than
  // one unit of the move's (measured: the application's p99 unchanged, at
  // about half the copy rate). Otherwise every member at once, in runs.
  void set_gentle(bool on) { gentle_ = on; }
  static constexpr uint64_t kHoleReach = 16;

  // Finds the holes of the old members' data areas (never changes for a
  // unit not yet moved) and the data bytes from `cursor` to the end.
  Status plan(uint64_t cursor);

  // Where the window starting at `cursor` ends: map.window_end() (it only
  // overwrites moved units), with at most max_units units of data.
  // REQUIRES: plan().
  uint64_t window_end(uint64_t cursor) const;
  // The furthest a window starting at `cursor` may reach, holes or not:
  // what a mover of a volume in use closes before find_window_holes(), to
  // then move up to window_end(cursor) of it.
  uint64_t reach_end(uint64_t cursor) const { return map_.window_end(cursor, max_units_ * kHoleReach); }

  // For a mover made with `skip_holes` false: finds which units of [begin,
  // end) are holes at their old places, which read() and write() of that
  // window then skip and zero, as plan() does for a whole volume at rest.
  // REQUIRES: nothing writes to those old places until the window's write()
  // returns (the window is closed and its writes in flight are done).
  // Only on filesystems whose SEEK_DATA is known to see writes just done
  // (ext4, XFS, btrfs, tmpfs); other members' units are all data.
  Status find_window_holes(uint64_t begin, uint64_t end);
  // Forgets the holes found: the window is open again, and may be written.
  void forget_window_holes() { holes_begin_ = holes_end_ = 0; }

  // Reads the sources of units [begin, end) into buffer `slot` (0 or 1).
  // REQUIRES: plan(), end <= window_end(begin).
  Status read(int slot, uint64_t begin, uint64_t end);
  // Writes them from buffer `slot` to their new places and syncs every
  // member; `written` runs after the writes, before the sync (tests stop
  // there). REQUIRES: read(slot, begin, end) succeeded, and every unit
  // below `begin` is moved and its cursor durable.
  Status write(int slot, uint64_t begin, uint64_t end, const std::function<void()>& written);

  uint64_t total_data_bytes() const { return total_; }
  uint64_t data_bytes() const { return data_; }
  uint64_t hole_bytes() const { return holes_; }

 private:
  bool in_place(uint64_t u) const { return u < map_.old_count; }
  bool is_hole(uint64_t u) const;

  RestripeMap map_;
  const std::vector<MemberFile>& members_;
  uint64_t max_units_;
  bool skip_holes_;
  // The units whose holes segments_ knows when !skip_holes_ (find_window_holes).
  uint64_t holes_begin_ = 0, holes_end_ = 0;
  std::vector<bool> holes_trusted_;  // per old member: its filesystem's SEEK_DATA sees fresh writes
  bool gentle_ = false;
  // fn(m) for each member m < n: on a thread each, or one after the other (gentle).
  Status for_members(uint32_t n, const std::function<Status(uint32_t)>& fn) const;
  AlignedBuffer buf_[2];
  std::vector<uint64_t> place_[2];  // [u - begin]: the unit's offset in buf_[slot] (data units)
  AlignedBuffer zeros_;
  std::vector<std::vector<CopyRange>> segments_;  // per old member: its data segments (or the window's)
  uint64_t total_ = 0, data_ = 0, holes_ = 0;
};

// Runs fn(i) for i in [0, n) on a thread each; the first error wins.
Status on_member_threads(uint32_t n, const std::function<Status(uint32_t)>& fn);

}  // namespace peregrine
