// Command-line overrides (-o key=value) and volume selection, with exactly
// the validation the config file gets.
//
// Thread rules: main thread only, before the Config is handed to the daemon.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "peregrine/config/config.h"
#include "peregrine/util/result.h"

namespace peregrine::config {

inline constexpr std::string_view kCommandLineSource = "command line -o";

// Applies "key=value" assignments in order (later wins), e.g.
// "engine.high_watermark_per_drive=512", "drive.cpus=0,2-3", "fuse.allow_other"
// (a boolean key alone means true). Values are spelled as on a command line:
// no TOML quoting needed. Refuses unknown keys (suggesting the closest),
// wrong types and out-of-range values, then re-checks the ordered pairs.
// On error `config` may be partly updated: discard it.
Status apply_overrides(Config& config, const std::vector<std::string>& assignments,
                       std::string_view source = kCommandLineSource);

// A mount -o string split in two: peregrine settings (dotted keys) and the
// other mount flags ("ro", "noatime", ...) that belong to mount itself.
// Commas inside double quotes, or CPU-list continuations such as the "2-3"
// of "drive.cpus=0,2-3", stay with their setting.
struct MountOptions {
  std::vector<std::string> settings;  // "key=value", quotes removed
  std::vector<std::string> other;
};
MountOptions split_mount_options(std::string_view options);
// The same split, items in their order, unsorted.
std::vector<std::string> split_option_items(std::string_view options);

// The configuration for `peregrine mount NAME`: `config` with the volume's
// options applied, then the command-line assignments. Unknown NAME is
// refused with the list of volumes the file defines.
Expected<Config> for_volume(const Config& config, std::string_view name,
                            const std::vector<std::string>& command_line = {});

}  // namespace peregrine::config
