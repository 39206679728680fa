#include "peregrine/engine/stripe_map.h"

#include <bit>

namespace peregrine {

StripeMap::StripeMap(uint32_t members, uint32_t stripe_unit, uint64_t data_start, uint64_t member_data_size)
    : members_(members),
      unit_(stripe_unit),
      shift_(static_cast<uint32_t>(std::countr_zero(stripe_unit))),
      data_start_(data_start),
      member_data_size_(member_data_size) {}

}  // namespace peregrine
