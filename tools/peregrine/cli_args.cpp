#include "cli_args.h"

#include <filesystem>

namespace po = boost::program_options;

namespace peregrine::cli {

bool parse_command_line(int argc, char** argv, const po::options_description& visible, po::variables_map* vm,
                        std::vector<std::string>* positional, std::string* error) {
  po::options_description hidden;
  hidden.add_options()("positional-args", po::value(positional)->composing());
  po::options_description all;
  all.add(visible).add(hidden);
  po::positional_options_description pos;
  pos.add("positional-args", -1);
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), *vm);
    po::notify(*vm);
  } catch (const std::exception& e) {
    *error = e.what();
    return false;
  }
  return true;
}

std::string absolute_path(const std::string& p) {
  std::error_code ec;
  std::filesystem::path a = std::filesystem::absolute(p, ec);
  return ec ? p : a.lexically_normal().string();
}

}  // namespace peregrine::cli
