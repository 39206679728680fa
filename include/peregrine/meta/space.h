// How full the metadata area is, and the rules that decide what still fits
// in it. The limit is the checkpoint slot: every inode, entry, xattr and
// extent must fit one checkpoint body (docs/metadata-format.md, section 1),
// and the Model knows that body's exact size at all times.
//
// Three kinds of change, three thresholds (so that a full area stops new
// files first, then new space for existing files, and never the rest):
//   - new metadata (create, mkdir, symlink, link, setxattr, a rename to a
//     longer name): refused with ENOSPC unless it leaves new_reserve() free;
//   - allocation for existing files (a write into a hole, fallocate):
//     refused unless it leaves hard_reserve() free;
//   - everything else (overwrites, their deferred timestamps, chmod,
//     truncate, unlink, marking completed writes written): only refused if
//     the body would pass the slot itself, which the reserves make rare.
// statfs and `peregrine info` report with the same rules.
//
// Thread rules: none; pure values, owned by whoever holds them.
#pragma once

#include <algorithm>
#include <cstdint>

namespace peregrine::meta {

struct MetaSpace {
  uint64_t capacity = 0;  // largest checkpoint body: a slot less its header block
  uint64_t used = 0;      // current checkpoint body size, exact
  uint64_t inodes = 0;    // inodes in use (the root included)

  // Left for changes that are never refused for space (growth of a few
  // extents when writes complete or holes are punched).
  uint64_t hard_reserve() const { return capacity / 64; }
  // Kept free by new files so that existing files can still get space.
  uint64_t new_reserve() const { return hard_reserve() + capacity / 32; }
  bool fits_new(uint64_t growth) const { return used + growth + new_reserve() <= capacity; }
  bool fits_allocation(uint64_t growth) const { return used + growth + hard_reserve() <= capacity; }
  bool fits_at_all(uint64_t growth) const { return used + growth <= capacity; }

  // What one more file is assumed to cost: the average of the inodes there
  // (so names like the existing ones), at least kMinFileBytes.
  static constexpr uint64_t kMinFileBytes = 128;  // a file with a 29-byte name
  uint64_t bytes_per_file() const { return std::max<uint64_t>(kMinFileBytes, inodes == 0 ? 0 : used / inodes); }
  // Files that can still be created (statfs f_ffree).
  uint64_t files_free() const {
    const uint64_t limit = capacity > new_reserve() ? capacity - new_reserve() : 0;
    return used < limit ? (limit - used) / bytes_per_file() : 0;
  }
  // Percent of the capacity in use, rounded down.
  uint64_t percent_used() const { return capacity == 0 ? 100 : std::min<uint64_t>(100, used * 100 / capacity); }
};

// Upper bound of what one extent delta can add to the checkpoint body:
// mapping or marking a range inside an extent splits it in three.
inline constexpr uint64_t kExtentDeltaGrowth = 2 * 25;

}  // namespace peregrine::meta
