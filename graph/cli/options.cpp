#include "options.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <iostream>

#include "commands.h"

namespace peregrine::graph::cli {

namespace {

bool is_unsigned_option(const po::value_semantic* s) {
  return dynamic_cast<const po::typed_value<unsigned int>*>(s) != nullptr ||
         dynamic_cast<const po::typed_value<unsigned long>*>(s) != nullptr ||
         dynamic_cast<const po::typed_value<unsigned long long>*>(s) != nullptr;
}

bool all_digits(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::optional<int> parse_command(int argc, char** argv, const std::string& synopsis,
                                 const po::options_description& opts, po::variables_map& vm) {
  po::options_description all(opts);
  all.add_options()("help,h", "show this help");
  try {
    const po::parsed_options parsed = po::command_line_parser(argc, argv).options(all).run();
    po::store(parsed, vm);
    if (vm.count("help")) {
      std::cout << "usage: " << synopsis << "\n\n" << all << "\n";
      return kExitOk;
    }
    // Boost reads an unsigned option through lexical_cast, which wraps "-1"
    // to the type's largest value: only digits are a count or an id.
    for (const auto& o : parsed.options) {
      const po::option_description* d = all.find_nothrow(o.string_key, false);
      if (d == nullptr || o.value.size() != 1 || !is_unsigned_option(d->semantic().get())) continue;
      if (!all_digits(o.value[0]))
        return usage_error(argv[0], "--" + o.string_key + " must be a non-negative integer, not '" + o.value[0] + "'");
    }
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "peregrine-graph " << argv[0] << ": " << e.what() << "\nusage: " << synopsis << "\n"
              << "(--help for the options)\n";
    return kExitUsage;
  }
  return std::nullopt;
}

int usage_error(const std::string& command, const std::string& message) {
  std::cerr << "peregrine-graph " << command << ": " << message << "\n";
  return kExitUsage;
}

std::optional<uint64_t> parse_size(const std::string& text) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr == text.data()) return std::nullopt;
  uint64_t mult = 1;
  if (ptr != end) {
    std::string suffix(ptr, end);
    if (suffix == "K" || suffix == "k" || suffix == "KiB")
      mult = 1ULL << 10;
    else if (suffix == "M" || suffix == "m" || suffix == "MiB")
      mult = 1ULL << 20;
    else if (suffix == "G" || suffix == "g" || suffix == "GiB")
      mult = 1ULL << 30;
    else
      return std::nullopt;
  }
  if (value > UINT64_MAX / mult) return std::nullopt;
  return value * mult;
}

std::optional<int> parse_threads(const std::string& command, const std::string& text, unsigned* threads) {
  unsigned value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value > kMaxThreads)
    return usage_error(command, "--threads must be between 0 and " + std::to_string(kMaxThreads) + ", not '" + text +
                                    "' (0: one per core)");
  *threads = value;
  return std::nullopt;
}

uint64_t available_memory() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

}  // namespace peregrine::graph::cli
