#include "largest_entry.h"

namespace peregrine::graph::detail {

uint32_t largest_entry(std::span<const uint32_t> entries) {
  uint32_t largest = 0;
  for (uint32_t e : entries) largest = e > largest ? e : largest;
  return largest;
}

size_t first_not_below(std::span<const uint32_t> entries, uint64_t below) {
  if (largest_entry(entries) < below) return entries.size();
  size_t i = 0;
  while (entries[i] < below) ++i;
  return i;
}

}  // namespace peregrine::graph::detail
