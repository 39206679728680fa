// Asks libblkid whether a member already holds a filesystem, a RAID or LVM
// signature, or a partition table, so mkfs never destroys one by accident.
// Internal to peregrine_volume.
// Thread rules: any thread; each call opens its own probe.
#pragma once

#include <optional>
#include <string>

#include "peregrine/util/result.h"

namespace peregrine {

// Returns a description such as "an ext4 filesystem" or "a dos partition
// table" when libblkid recognises something on `path`, nullopt when it finds
// nothing. Fails (naming the member) when the probe cannot run at all.
Expected<std::optional<std::string>> probe_foreign_signature(const std::string& path);

}  // namespace peregrine
