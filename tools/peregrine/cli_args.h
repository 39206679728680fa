// Command-line parsing shared by the subcommands that take options plus a
// list of positional arguments (members, a mountpoint), and what they do to
// a path argument before it goes further.
// Thread rules: main thread only.
#pragma once

#include <boost/program_options.hpp>
#include <string>
#include <vector>

namespace peregrine::cli {

// Parses `visible` options and collects every positional argument into
// *positional. On a command-line error returns false and sets *error to
// the parser's message; the caller prints it with its own name and usage.
bool parse_command_line(int argc, char** argv, const boost::program_options::options_description& visible,
                        boost::program_options::variables_map* vm, std::vector<std::string>* positional,
                        std::string* error);

// `p` made absolute against the working directory, without "." and ".."
// (symbolic links are left as they are); `p` itself when that fails.
std::string absolute_path(const std::string& p);

}  // namespace peregrine::cli
