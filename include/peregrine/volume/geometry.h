// The striping geometry of an assembled volume: which member holds which
// byte of the volume's logical space.
//
// RAID-0 (layout version 1): logical stripe s (of `stripe_unit` bytes) lives
// on member s mod N at member offset data_start + (s div N) * stripe_unit.
// The engine keeps its own, faster map; this struct carries the values from
// the superblock to it, and locate() is the reference definition the tests
// and tools use.
//
// Thread rules: plain value type, any thread.
#pragma once

#include <cstdint>

namespace peregrine {

struct StripeLocation {
  uint32_t member = 0;  // member index
  uint64_t offset = 0;  // byte offset on that member
};

struct VolumeGeometry {
  uint32_t member_count = 0;
  uint32_t stripe_unit = 0;       // bytes, power of two, 4 KiB .. 1 MiB
  uint64_t data_start = 0;        // member offset of the first striped byte
  uint64_t member_data_size = 0;  // striped bytes per member, a multiple of stripe_unit

  uint64_t volume_size() const { return member_data_size * member_count; }

  // REQUIRES: logical < volume_size().
  StripeLocation locate(uint64_t logical) const {
    uint64_t stripe = logical / stripe_unit;
    uint64_t within = logical % stripe_unit;
    return {static_cast<uint32_t>(stripe % member_count), data_start + (stripe / member_count) * stripe_unit + within};
  }

  bool operator==(const VolumeGeometry&) const = default;
};

}  // namespace peregrine
