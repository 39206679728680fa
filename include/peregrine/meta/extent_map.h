// Per-file extent map: file offset -> volume offset, length, and whether the
// data write of the extent has completed (written) or not (unwritten; reads
// as zeros). Everything is in whole 4 KiB blocks. Adjacent extents that are
// contiguous on the volume and in the same state are merged, so a file
// written sequentially into one allocation window is a single extent.
//
// Thread rules: none inside. An ExtentMap belongs to its Inode and is
// guarded by whatever guards the Model (Metadata's namespace lock).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <vector>

namespace peregrine::meta {

struct Extent {
  uint64_t vol_off = 0;
  uint64_t len = 0;
  bool written = false;
  bool operator==(const Extent&) const = default;
};

// A volume byte range (freed space, allocations).
struct VolRange {
  uint64_t off = 0;
  uint64_t len = 0;
  bool operator==(const VolRange&) const = default;
};

// One piece of a looked-up file range: either a hole or part of an extent.
struct MapPiece {
  uint64_t file_off = 0;
  uint64_t len = 0;
  bool mapped = false;   // false: hole
  uint64_t vol_off = 0;  // valid when mapped
  bool written = false;  // valid when mapped
  bool operator==(const MapPiece&) const = default;
};

class ExtentMap {
 public:
  using Map = std::map<uint64_t, Extent>;  // key: file offset

  // Pieces covering exactly [off, off + len), holes included, in order.
  void lookup(uint64_t off, uint64_t len, std::vector<MapPiece>* out) const;
  // The same pieces, handed to `visit` one by one: the read and write
  // paths look up every request, and a vector for its one piece was a
  // heap allocation per request. `visit` must not change this map.
  template <typename Visit>
  void for_each_piece(uint64_t off, uint64_t len, Visit&& visit) const;
  // Maps [file_off, file_off + len) to vol_off.., replacing any mapping
  // there (the replaced volume ranges are appended to *replaced if given).
  void insert(uint64_t file_off, uint64_t vol_off, uint64_t len, bool written,
              std::vector<VolRange>* replaced = nullptr);
  // Unmaps [off, off + len); appends the freed volume ranges to *freed.
  void remove(uint64_t off, uint64_t len, std::vector<VolRange>* freed);
  // Marks written the parts of [file_off, file_off + len) that are still
  // mapped to the same volume bytes (vol_off..). Other parts are left alone:
  // a range punched or remapped meanwhile must not become readable.
  // Returns the bytes that changed state.
  uint64_t mark_written(uint64_t file_off, uint64_t vol_off, uint64_t len);
  // Volume offset just past the mapping of the last extent at or before
  // file offset `off` (an allocation goal for sequential writes), 0 if none.
  uint64_t goal_for(uint64_t off) const;

  uint64_t allocated_bytes() const { return allocated_; }
  bool empty() const { return map_.empty(); }
  size_t count() const { return map_.size(); }
  const Map& extents() const { return map_; }
  bool operator==(const ExtentMap& o) const { return map_ == o.map_; }

 private:
  // Splits the extent containing `off` (if any) so that an extent starts
  // exactly at `off`.
  void split_at(uint64_t off);
  void merge_around(Map::iterator it);

  Map map_;
  uint64_t allocated_ = 0;
};

template <typename Visit>
void ExtentMap::for_each_piece(uint64_t off, uint64_t len, Visit&& visit) const {
  const uint64_t end = off + len;
  uint64_t pos = off;
  auto it = map_.upper_bound(off);
  if (it != map_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second.len > off) it = prev;
  }
  for (; it != map_.end() && it->first < end; ++it) {
    const uint64_t s = it->first;
    const uint64_t e = s + it->second.len;
    if (s > pos) {
      visit(MapPiece{pos, s - pos, false, 0, false});
      pos = s;
    }
    const uint64_t piece_end = std::min(e, end);
    visit(MapPiece{pos, piece_end - pos, true, it->second.vol_off + (pos - s), it->second.written});
    pos = piece_end;
  }
  if (pos < end) visit(MapPiece{pos, end - pos, false, 0, false});
}

}  // namespace peregrine::meta
