// Internal: turning a TOML node or a command-line word into a checked Value,
// and wording refusals. Shared by load.cpp and overrides.cpp so the file and
// -o get exactly the same validation.
// Thread rules: pure functions; any thread.
#pragma once

#include <string>
#include <string_view>

#include <toml++/toml.h>

#include "peregrine/config/config.h"
#include "peregrine/config/options.h"
#include "peregrine/util/result.h"

namespace peregrine::config::detail {

// "WHERE: KEY = VALUE: PROBLEM; allowed: ALLOWED (UNIT)". `option` may be
// nullptr (volume keys), then `allowed` is used as given.
std::string refusal(const Origin& where, std::string_view key, std::string_view value, std::string_view problem,
                    const Option* option, std::string_view allowed = "");

// The problem with `value` for `option`, or "" when it is acceptable.
std::string check_value(const Option& option, const Value& value);

// A TOML node as a Value of the option's type; the error message is the
// complete refusal (location from the node).
Expected<Value> value_from_node(const Option& option, const toml::node& node, const std::string& file);

// A command-line word as a Value of the option's type (refusal at `where`).
Expected<Value> value_from_text(const Option& option, std::string_view text, const Origin& where);

// How a node reads in a message: its TOML text (strings quoted).
std::string node_text(const toml::node& node);

// Checks the ordered pairs of order_rules() on the current settings.
Status check_order(const Config& config);

}  // namespace peregrine::config::detail
