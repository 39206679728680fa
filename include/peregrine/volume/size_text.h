// Byte sizes as people type and read them: "64K", "1M", "2G", "512KiB",
// "4096". Suffixes are binary (K = 1024).
// Thread rules: pure functions, any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "peregrine/util/result.h"

namespace peregrine {

// Accepts a decimal integer with an optional suffix K, M, G, T (also k, KiB,
// KB: all mean 1024^n). Refuses empty text, signs, fractions, overflow.
Expected<uint64_t> parse_size(std::string_view text);

// "128 KiB", "2 GiB", or "12345 bytes" when no binary unit divides exactly.
std::string format_size(uint64_t bytes);

}  // namespace peregrine
