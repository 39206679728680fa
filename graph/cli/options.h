// Command-line helpers shared by the subcommands: parsing with
// Boost.ProgramOptions into a variables_map (usage errors become exit 2),
// and byte sizes with binary suffixes ("64K", "1G").
// Thread rules: single-threaded.
#pragma once

#include <boost/program_options.hpp>
#include <cstdint>
#include <optional>
#include <string>

namespace peregrine::graph::cli {

namespace po = boost::program_options;

// Parses argv into vm and handles --help. Returns an exit code to return
// with (help printed, or usage error), or nullopt to go on.
std::optional<int> parse_command(int argc, char** argv, const std::string& synopsis,
                                 const po::options_description& opts, po::variables_map& vm);

// Prints "peregrine-graph COMMAND: MESSAGE" on stderr and returns the usage
// exit code (2): for option values out of range.
int usage_error(const std::string& command, const std::string& message);

// "4096", "64K", "16M", "1G" (powers of 1024); nullopt if malformed.
std::optional<uint64_t> parse_size(const std::string& text);

// --threads N: 0 (one per core) to 256, digits only. Taken as a string, not
// an unsigned option: Boost would wrap "-1" to 4294967295. Returns the
// usage exit code (message printed) for anything else.
inline constexpr unsigned kMaxThreads = 256;
std::optional<int> parse_threads(const std::string& command, const std::string& text, unsigned* threads);

// MemAvailable of /proc/meminfo in bytes: what the kernel says could be
// given to a new program without swapping; 0 if it cannot be read.
uint64_t available_memory();

}  // namespace peregrine::graph::cli
