// Tells whether two member paths name the same file or device, before any
// of them is opened (a block device opened O_EXCL twice would only say
// "busy", hiding the real mistake). Internal to peregrine_volume.
// Thread rules: any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "peregrine/util/result.h"

namespace peregrine {

struct MemberIdentity {
  std::string path;
  bool exists = false;
  bool is_block_device = false;
  uint64_t size = 0;     // st_size of a regular file (devices: 0, ask MemberFile)
  uint64_t dev = 0;      // st_rdev of a device, st_dev of a file
  uint64_t ino = 0;      // st_ino of a file
  std::string absolute;  // normalised path, compares paths that do not exist yet
};

// stat()s every path. A missing path is refused unless `allow_missing`.
// Refuses anything that is neither a regular file nor a block device, and
// a path naming the same file or device as an earlier one ("member B: same
// file as member A").
Expected<std::vector<MemberIdentity>> identify_members(const std::vector<std::string>& paths, bool allow_missing);

}  // namespace peregrine
