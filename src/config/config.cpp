// Config bookkeeping: origins and volume lookup.
#include "peregrine/config/config.h"

namespace peregrine::config {

std::string Origin::to_string() const {
  if (source.empty()) return "built-in default";
  if (line == 0) return source;
  return source + ":" + std::to_string(line);
}

Origin Config::origin_of(std::string_view key) const {
  auto it = origins.find(key);
  return it == origins.end() ? Origin{} : it->second;
}

const VolumeSpec* Config::find_volume(std::string_view name) const {
  for (const VolumeSpec& v : volumes)
    if (v.name == name) return &v;
  return nullptr;
}

}  // namespace peregrine::config
