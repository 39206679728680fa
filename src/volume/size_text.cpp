#include "peregrine/volume/size_text.h"

#include <cerrno>
#include <charconv>

namespace peregrine {

Expected<uint64_t> parse_size(std::string_view text) {
  auto refuse = [&](const char* why) { return Status::error(EINVAL, "size '" + std::string(text) + "': " + why); };
  if (text.empty()) return refuse("empty");
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (end == text.data()) return refuse("expected a number, optionally followed by K, M, G or T");
  if (ec == std::errc::result_out_of_range) return refuse("too large");
  std::string_view suffix(end, static_cast<size_t>(text.data() + text.size() - end));
  int shift = 0;
  if (!suffix.empty()) {
    switch (suffix[0]) {
      case 'k':
      case 'K': shift = 10; break;
      case 'm':
      case 'M': shift = 20; break;
      case 'g':
      case 'G': shift = 30; break;
      case 't':
      case 'T': shift = 40; break;
      default: return refuse("unknown unit (use K, M, G or T)");
    }
    std::string_view rest = suffix.substr(1);
    if (!(rest.empty() || rest == "iB" || rest == "B" || rest == "ib" || rest == "b"))
      return refuse("unknown unit (use K, M, G or T)");
  }
  if (shift > 0 && value > (UINT64_MAX >> shift)) return refuse("too large");
  return value << shift;
}

std::string format_size(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"TiB", "GiB", "MiB", "KiB"};
  static constexpr int kShifts[] = {40, 30, 20, 10};
  if (bytes != 0) {
    for (int i = 0; i < 4; ++i) {
      uint64_t unit = uint64_t{1} << kShifts[i];
      if (bytes % unit == 0) return std::to_string(bytes / unit) + " " + kUnits[i];
    }
  }
  return std::to_string(bytes) + " bytes";
}

}  // namespace peregrine
