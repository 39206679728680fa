#include "report.h"

#include <cmath>
#include <cstdio>
#include <iomanip>

namespace peregrine::graph::cli {
namespace {

std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else {
      o += c;
    }
  }
  return o + "\"";
}

std::string number(double d) {
  if (!std::isfinite(d)) return "null";
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", d);
  return b;
}

}  // namespace

void Report::print_text(std::ostream& out) const {
  size_t width = 0;
  for (const auto& [name, _] : fields_) width = std::max(width, name.size());
  for (const auto& [name, value] : fields_) {
    out << std::left << std::setw(static_cast<int>(width) + 2) << name;
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, bool>)
            out << (v ? "yes" : "no");
          else if constexpr (std::is_same_v<T, double>)
            out << number(v);
          else
            out << v;
        },
        value);
    out << "\n";
  }
}

void Report::print_json(std::ostream& out) const {
  out << "{";
  bool first = true;
  for (const auto& [name, value] : fields_) {
    out << (first ? "" : ", ") << json_string(name) << ": ";
    first = false;
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, bool>)
            out << (v ? "true" : "false");
          else if constexpr (std::is_same_v<T, double>)
            out << number(v);
          else if constexpr (std::is_same_v<T, std::string>)
            out << json_string(v);
          else
            out << v;
        },
        value);
  }
  out << "}\n";
}

}  // namespace peregrine::graph::cli
