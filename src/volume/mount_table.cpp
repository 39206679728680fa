#include "peregrine/volume/mount_table.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace peregrine {
namespace {

std::string unescape_mountinfo(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '7') {
      out += static_cast<char>(std::strtol(s.substr(i + 1, 3).c_str(), nullptr, 8));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

std::vector<MountTableEntry> read_mount_table() {
  std::ifstream in("/proc/self/mountinfo");
  std::vector<MountTableEntry> table;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::vector<std::string> f;
    std::string w;
    while (fields >> w) f.push_back(w);
    auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 5 || dash == f.end() || dash + 1 == f.end()) continue;
    const bool has_source = dash + 2 < f.end();
    const bool has_super_options = dash + 3 < f.end();
    table.push_back(MountTableEntry{unescape_mountinfo(f[4]), *(dash + 1),
                                    has_source ? unescape_mountinfo(*(dash + 2)) : "",
                                    f[5] + "," + (has_super_options ? *(dash + 3) : "")});
  }
  return table;
}

std::string resolve_parent(const std::string& path) {
  std::filesystem::path p = std::filesystem::path(path).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();
  char* dir = ::realpath(p.parent_path().c_str(), nullptr);
  if (dir == nullptr) return p.string();
  std::filesystem::path out = std::filesystem::path(dir) / p.filename();
  std::free(dir);
  return out.string();
}

}  // namespace peregrine
