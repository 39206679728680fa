// The option table: the single source of truth for every runtime tunable.
//
// Each Option names one key of the config file ("engine.high_watermark_per_drive"),
// its type, built-in default, unit, allowed range and doc text, and how to
// store it into / read it from Settings. The parser, the -o overrides, the
// effective-config printer, the shipped conf/peregrine.conf and the option
// list of docs/configuration.md are all driven by this table (the last two
// are generated from it and a unit test keeps the committed copies equal).
//
// Thread rules: the table is built on first use (a function-local static)
// and is immutable afterwards; any thread may read it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "peregrine/config/settings.h"

namespace peregrine::config {

// A setting's value as the config file spells it: TOML boolean, integer or
// string ("auto", "writeback", "0,2-3", ...).
using Value = std::variant<bool, int64_t, std::string>;

enum class Kind {
  kBool,
  kInteger,  // min..max; optionally a power of two; optionally the string "auto"
  kChoice,   // one of `choices`
  kCpuList,  // "auto", "none" or a CPU list
};

struct Option {
  std::string_view key;  // dotted: "<table>.<name>"
  Kind kind;
  Value default_value;
  std::string_view unit = {};  // "" when the value has none
  int64_t min = 0;
  int64_t max = 0;
  bool power_of_two = false;
  bool allows_auto = false;
  std::string_view auto_means = {};  // what "auto" resolves to, for kInteger with allows_auto
  std::vector<std::string_view> choices = {};
  std::string_view doc;  // what it does and when to change it
  void (*store)(Settings&, const Value&);
  Value (*load)(const Settings&);

  std::string_view table() const { return key.substr(0, key.find('.')); }
  std::string_view name() const { return key.substr(key.find('.') + 1); }
  // The allowed values for people: "1..4096", "\"auto\" or 1..4096",
  // "a power of two, 4096..8388608", "direct or writeback", "true or false".
  std::string allowed() const;
};

// Two options that must stay ordered: low <= high (or low < high when strict).
// Checked after the file and the overrides are applied; "auto" skips it.
struct OrderRule {
  std::string_view low;
  std::string_view high;
  bool strict;
  std::string_view why;
};

// A key of a [volume.NAME] section.
struct VolumeKey {
  std::string_view name;
  std::string_view type;  // for the docs: "array of strings", "string"
  bool required;
  std::string_view doc;
};

const std::vector<Option>& options();           // in file order
const std::vector<std::string_view>& tables();  // "engine", "drive", ... in file order
std::string_view table_doc(std::string_view table);
const std::vector<OrderRule>& order_rules();
const std::vector<VolumeKey>& volume_keys();

// nullptr when no option has this dotted key.
const Option* find_option(std::string_view key);

// The known key closest to `key` by edit distance (also matching on the part
// after the dot, so "high_watermark" finds "engine.high_watermark_per_drive"),
// or "" when nothing is close enough to be a plausible typo.
std::string suggest_key(std::string_view key);
std::string suggest_among(std::string_view word, const std::vector<std::string_view>& candidates);

// TOML spelling of a value: 32, true, "auto".
std::string format_value(const Value& v);

}  // namespace peregrine::config
