// Extent map editing: split at range edges, edit whole extents, re-merge.
#include "peregrine/meta/extent_map.h"

#include <algorithm>
#include <iterator>

namespace peregrine::meta {

void ExtentMap::lookup(uint64_t off, uint64_t len, std::vector<MapPiece>* out) const {
  for_each_piece(off, len, [out](const MapPiece& p) { out->push_back(p); });
}

void ExtentMap::split_at(uint64_t off) {
  auto it = map_.upper_bound(off);
  if (it == map_.begin()) return;
  --it;
  const uint64_t s = it->first;
  Extent& e = it->second;
  if (s == off || s + e.len <= off) return;
  const uint64_t head = off - s;
  Extent tail{e.vol_off + head, e.len - head, e.written};
  e.len = head;
  map_.emplace_hint(std::next(it), off, tail);
}

void ExtentMap::merge_around(Map::iterator it) {
  if (it == map_.end()) return;
  // Merge with the next extent.
  auto next = std::next(it);
  if (next != map_.end() && it->first + it->second.len == next->first &&
      it->second.vol_off + it->second.len == next->second.vol_off && it->second.written == next->second.written) {
    it->second.len += next->second.len;
    map_.erase(next);
  }
  // Merge into the previous extent.
  if (it != map_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second.len == it->first && prev->second.vol_off + prev->second.len == it->second.vol_off &&
        prev->second.written == it->second.written) {
      prev->second.len += it->second.len;
      map_.erase(it);
    }
  }
}

void ExtentMap::remove(uint64_t off, uint64_t len, std::vector<VolRange>* freed) {
  if (len == 0) return;
  const uint64_t end = off + len;
  split_at(off);
  split_at(end);
  auto it = map_.lower_bound(off);
  while (it != map_.end() && it->first < end) {
    if (freed) freed->push_back({it->second.vol_off, it->second.len});
    allocated_ -= it->second.len;
    it = map_.erase(it);
  }
}

void ExtentMap::insert(uint64_t file_off, uint64_t vol_off, uint64_t len, bool written,
                       std::vector<VolRange>* replaced) {
  if (len == 0) return;
  remove(file_off, len, replaced);
  auto it = map_.emplace(file_off, Extent{vol_off, len, written}).first;
  allocated_ += len;
  merge_around(it);
}

uint64_t ExtentMap::mark_written(uint64_t file_off, uint64_t vol_off, uint64_t len) {
  if (len == 0) return 0;
  const uint64_t end = file_off + len;
  uint64_t changed = 0;
  split_at(file_off);
  split_at(end);
  std::vector<uint64_t> touched;
  for (auto it = map_.lower_bound(file_off); it != map_.end() && it->first < end; ++it) {
    // Same linear mapping as the caller's write, i.e. not remapped since.
    if (it->second.vol_off - it->first != vol_off - file_off) continue;
    if (!it->second.written) {
      it->second.written = true;
      changed += it->second.len;
    }
    touched.push_back(it->first);
  }
  for (uint64_t k : touched) {
    auto it = map_.find(k);
    if (it != map_.end()) merge_around(it);
  }
  // Edges that were split but not touched can re-merge too.
  for (uint64_t k : {file_off, end}) {
    auto it = map_.upper_bound(k);
    if (it != map_.begin()) merge_around(std::prev(it));
  }
  return changed;
}

uint64_t ExtentMap::goal_for(uint64_t off) const {
  auto it = map_.upper_bound(off);
  if (it == map_.begin()) return 0;
  --it;
  return it->second.vol_off + it->second.len;
}

}  // namespace peregrine::meta
