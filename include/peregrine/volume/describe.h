// A volume's geometry as text for people: what mkfs prints after creating a
// volume and what `peregrine info` prints after assembling one. Pure
// function, any thread.
#pragma once

#include <string>
#include <vector>

#include "peregrine/volume/superblock.h"

namespace peregrine {

// REQUIRES: member_paths.size() == sb.member_count(), in index order.
std::string describe_volume(const Superblock& sb, const std::vector<std::string>& member_paths);

}  // namespace peregrine
