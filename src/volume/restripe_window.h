// Moves one window of stripe units of a restripe (restripe_map.h) from
// their old places to their new ones: the sources are read into one buffer
// (one thread per old member, a vectored read per run of rows), then the
// targets are written (one thread per member), then every member is
// synced. A unit that is a hole on its sparse file member is not read; its
// target is zeroed in place (a punched hole, BLKZEROOUT). Units that stay
// where they are (row 0 of the old members) are not touched.
// Internal to peregrine_volume; used by one thread, which it blocks while
// its per-member threads run.
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
  RestripeMover(const RestripeMap& map, const std::vector<MemberFile>& members, uint64_t max_units);

  // Finds the holes of the old members' data areas (never changes for a
  // unit not yet moved) and the data bytes from `cursor` to the end.
  Status plan(uint64_t cursor);

  // Moves units [begin, end); `written` runs after the writes were issued,
  // before the sync (tests stop there). REQUIRES: plan(), and end <=
  // map.window_end(begin, max_units).
  Status move(uint64_t begin, uint64_t end, const std::function<void()>& written);

  uint64_t total_data_bytes() const { return total_; }
  uint64_t data_bytes() const { return data_; }
  uint64_t hole_bytes() const { return holes_; }

 private:
  bool in_place(uint64_t u) const { return u < map_.old_count; }
  bool is_hole(uint64_t u) const;

  RestripeMap map_;
  const std::vector<MemberFile>& members_;
  uint64_t max_units_;
  AlignedBuffer buf_;
  AlignedBuffer zeros_;
  std::vector<std::vector<CopyRange>> segments_;  // per old member: its data segments
  uint64_t total_ = 0, data_ = 0, holes_ = 0;
};

}  // namespace peregrine
