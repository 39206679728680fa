// A 128-bit identifier for volumes and members (RFC 4122 version 4, random).
//
// Stored on disk as 16 raw bytes in the order to_string() prints them, so
// the bytes on disk and the text a person reads agree.
//
// Thread rules: plain value type, any thread; Uuid::random() reads the
// kernel's random source.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <string>

#include "peregrine/util/result.h"

namespace peregrine {

struct Uuid {
  std::array<uint8_t, 16> bytes{};

  // 16 bytes from getrandom(2) with the version/variant bits of a v4 UUID.
  static Expected<Uuid> random();

  bool is_nil() const;
  std::string to_string() const;  // "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", lowercase

  auto operator<=>(const Uuid&) const = default;
};

}  // namespace peregrine
