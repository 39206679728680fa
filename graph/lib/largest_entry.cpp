#include "largest_entry.h"

namespace peregrine::graph::detail {

uint32_t largest_entry(std::span<const uint32_t> entries) {
  uint32_t largest = 0;
  for (uint32_t e : entries) largest = e > largest ? e : largest;
  return largest;
}

}  // namespace peregrine::graph::detail
