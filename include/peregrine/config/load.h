// Reading the config file (TOML, parsed by toml++).
//
// Everything wrong in a file is refused here, before anything is mounted:
// TOML syntax errors (FILE:LINE:COLUMN), unknown keys and tables (with the
// closest known key suggested), wrong types, out-of-range values, bad volume
// sections, and ordered pairs that are inverted (low watermark above high,
// low pressure point not below high). Every message names the file, the
// line, the key, the value and what is allowed, ready to print as is.
//
// Thread rules: call on the main thread; the result is then read-only.
#pragma once

#include <string>
#include <string_view>

#include "peregrine/config/config.h"
#include "peregrine/util/result.h"

namespace peregrine::config {

// Reads and validates `path`. A file that does not exist is an ENOENT error
// (callers that may fall back to defaults check errnum()).
Expected<Config> load_file(const std::string& path);

// The same for text already in memory; `source_name` stands for the file
// name in origins and messages.
Expected<Config> parse_text(std::string_view text, std::string_view source_name);

}  // namespace peregrine::config
