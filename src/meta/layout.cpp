// Metadata area split: journal ring + two checkpoint slots.
#include "peregrine/meta/layout.h"

#include <algorithm>
#include <cerrno>
#include <string>

namespace peregrine::meta {

Expected<MetaLayout> MetaLayout::compute(const Geometry& g, uint64_t journal_size) {
  constexpr uint64_t kMiB = 1 << 20;
  if (g.meta_offset % kBlockSize || g.meta_size % kBlockSize || g.data_offset % kBlockSize)
    return Status::error(EINVAL, "metadata area: offsets and size must be multiples of 4096");
  if (g.meta_size < 2 * kMiB)
    return Status::error(
        EINVAL, "metadata area of " + std::to_string(g.meta_size) + " bytes is too small (need at least 2 MiB)");
  if (g.data_offset < g.meta_offset + g.meta_size && g.data_offset + g.data_size > g.meta_offset)
    return Status::error(EINVAL, "metadata area overlaps the data area");
  MetaLayout l;
  uint64_t j = journal_size ? journal_size : std::clamp<uint64_t>(g.meta_size / 4, kMiB, 256 * kMiB);
  j = j / kBlockSize * kBlockSize;
  if (j < 64 * 1024 || j + 2 * 64 * 1024 > g.meta_size)
    return Status::error(EINVAL, "journal size " + std::to_string(j) + " does not fit the metadata area");
  l.journal_off = g.meta_offset;
  l.journal_size = j;
  l.slot_size = (g.meta_size - j) / 2 / kBlockSize * kBlockSize;
  l.slot_off[0] = g.meta_offset + j;
  l.slot_off[1] = g.meta_offset + j + l.slot_size;
  return l;
}

}  // namespace peregrine::meta
