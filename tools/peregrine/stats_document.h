// The statistics document a peregrine daemon serves as the extended
// attribute user.peregrine.stats of its mount root (src/fs/stats_json.cpp):
// read once, for the helpers that need a fact of the running daemon (its
// pid, whether it writes).
// Thread rules: any thread.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace peregrine::cli {

// The document of the mount at `dir`, or nullopt when nothing answers (not a
// peregrine mount, a dead daemon) or the answer is not a JSON object.
std::optional<nlohmann::json> read_stats_document(const std::string& dir);

}  // namespace peregrine::cli
