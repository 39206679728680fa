// A loaded configuration: the effective Settings, the named volumes, and
// where every value came from (for messages and for `peregrine config check`).
//
// Precedence, lowest first: built-in defaults (options.h) < config file
// tables < the chosen volume's `options` < command-line -o. The same dotted
// names ("engine.high_watermark_per_drive") are used at every level.
//
// Thread rules: loaded once on the main thread before anything is mounted,
// then read-only; hand the daemon a const reference or a copy.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "peregrine/config/settings.h"

namespace peregrine::config {

inline constexpr std::string_view kDefaultConfigPath = "/etc/peregrine/peregrine.conf";

// Where a value was set: a file and line, the command line, or nowhere (the
// built-in default).
struct Origin {
  std::string source;  // a file path, "command line -o", or "" for the built-in default
  uint32_t line = 0;   // 1-based line in `source`; 0 when it has no lines

  bool is_default() const { return source.empty(); }
  // "FILE:LINE", "command line -o" or "built-in default".
  std::string to_string() const;
};

// One [volume.NAME] section of the config file.
struct VolumeSpec {
  std::string name;
  std::vector<std::string> members;  // in volume order, at least one
  std::string mountpoint;            // absolute, or "" when not given
  std::string options;               // -o syntax; its settings were validated at load
  Origin origin;                     // the [volume.NAME] header
  Origin options_origin;             // the options key
};

struct Config {
  std::string source;  // the file read; "" when only defaults are in effect
  Settings settings = Settings::defaults();
  std::vector<VolumeSpec> volumes;  // in file order
  // Dotted key -> where its current value was set; absent = built-in default.
  std::map<std::string, Origin, std::less<>> origins;

  Origin origin_of(std::string_view key) const;
  const VolumeSpec* find_volume(std::string_view name) const;  // nullptr if none
};

}  // namespace peregrine::config
