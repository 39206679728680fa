#include "stats_document.h"

#include <sys/xattr.h>

#include <cerrno>

#include "peregrine/fs/stats_xattr.h"

namespace peregrine::cli {

using fs::kStatsXattr;

std::optional<nlohmann::json> read_stats_document(const std::string& dir) {
  std::string value;
  for (int attempt = 0; attempt < 3; ++attempt) {
    ssize_t size = ::getxattr(dir.c_str(), kStatsXattr, nullptr, 0);
    if (size <= 0) return std::nullopt;
    value.resize(static_cast<size_t>(size) + 4096);  // the counters may grow between the calls
    ssize_t got = ::getxattr(dir.c_str(), kStatsXattr, value.data(), value.size());
    if (got >= 0) {
      value.resize(static_cast<size_t>(got));
      auto doc = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
      if (!doc.is_object()) return std::nullopt;
      return doc;
    }
    if (errno != ERANGE) return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace peregrine::cli
