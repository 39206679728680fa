// A volume as text for people: its geometry, as mkfs prints it after
// creating a volume and `peregrine info` after assembling one, and its
// member table, which `peregrine examine` prints too.
// Thread rules: pure functions, any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "peregrine/volume/superblock.h"

namespace peregrine {

// "2026-11-23 12:00:00 UTC".
std::string utc_time(uint64_t seconds);

// The member table: a line "    INDEX  MEMBER-UUID  WHERE" per member, in
// index order, WHERE as `where(index)` says.
std::string describe_members(const Superblock& sb, const std::function<std::string(uint32_t)>& where);

// REQUIRES: member_paths.size() == sb.member_count(), in index order.
std::string describe_volume(const Superblock& sb, const std::vector<std::string>& member_paths);

}  // namespace peregrine
