// -o key=value overrides, mount option splitting, and volume selection.
#include "peregrine/config/overrides.h"

#include <cerrno>

#include "peregrine/config/mount_flags.h"
#include "value_check.h"

namespace peregrine::config {

namespace {

bool is_cpu_list_piece(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(c >= '0' && c <= '9') && c != '-') return false;
  return true;
}

std::string unquote(std::string_view s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return std::string(s);
}

}  // namespace

Status apply_overrides(Config& config, const std::vector<std::string>& assignments, std::string_view source) {
  Origin where{std::string(source), 0};
  for (const std::string& a : assignments) {
    size_t eq = a.find('=');
    std::string key = a.substr(0, eq);
    const Option* option = find_option(key);
    std::string value_text = eq == std::string::npos ? "" : unquote(std::string_view(a).substr(eq + 1));
    if (!option) {
      std::string near = suggest_key(key);
      return Status::error(EINVAL, where.to_string() + ": unknown key " + key +
                                       (eq == std::string::npos ? "" : " = " + value_text) +
                                       (near.empty() ? "" : "; did you mean " + near + "?"));
    }
    if (eq == std::string::npos) {
      // A boolean named alone is switched on, like a mount flag.
      if (option->kind != Kind::kBool)
        return Status::error(
            EINVAL, detail::refusal(where, key, "(nothing)", "missing value; write " + key + "=VALUE", option));
      value_text = "true";
    }
    auto value = detail::value_from_text(*option, value_text, where);
    if (!value) return value.status();
    option->store(config.settings, *value);
    config.origins[key] = where;
  }
  return detail::check_order(config);
}

std::vector<std::string> split_option_items(std::string_view options) {
  // Split on commas outside double quotes.
  std::vector<std::string> items;
  std::string current;
  bool quoted = false;
  for (char c : options) {
    if (c == '"') quoted = !quoted;
    if (c == ',' && !quoted) {
      items.push_back(std::move(current));
      current.clear();
    } else {
      current += c;
    }
  }
  items.push_back(std::move(current));

  std::vector<std::string> out;
  bool last_was_cpu_list = false;
  for (std::string& item : items) {
    if (item.empty()) continue;
    if (last_was_cpu_list && is_cpu_list_piece(item)) {
      out.back() += "," + item;  // "drive.cpus=0,2-3" was split at its comma
      continue;
    }
    const Option* option = find_option(std::string_view(item).substr(0, item.find('=')));
    last_was_cpu_list = option && option->kind == Kind::kCpuList;
    out.push_back(std::move(item));
  }
  return out;
}

MountOptions split_mount_options(std::string_view options) {
  MountOptions out;
  for (std::string& item : split_option_items(options)) {
    std::string key = item.substr(0, item.find('='));
    if (key.find('.') != std::string::npos)
      out.settings.push_back(std::move(item));
    else
      out.other.push_back(std::move(item));
  }
  return out;
}

Expected<Config> for_volume(const Config& config, std::string_view name, const std::vector<std::string>& command_line) {
  const VolumeSpec* spec = config.find_volume(name);
  if (!spec) {
    std::string names;
    for (const VolumeSpec& v : config.volumes) names += (names.empty() ? "" : ", ") + v.name;
    if (config.source.empty())
      return Status::error(
          ENOENT, "unknown volume '" + std::string(name) + "': no config file was read, so no volumes are defined");
    return Status::error(ENOENT, "unknown volume '" + std::string(name) + "': " + config.source + " has no [volume." +
                                     std::string(name) + "] section; " +
                                     (names.empty() ? "it defines no volumes" : "volumes defined: " + names));
  }
  Config out = config;
  if (!spec->options.empty()) {
    const std::string origin = spec->options_origin.to_string() + " (volume." + spec->name + ".options)";
    auto request = parse_mount_options(spec->options, origin);
    if (!request) return request.status();
    Status s = apply_overrides(out, request->settings, origin);
    if (!s) return s;
  }
  Status s = apply_overrides(out, command_line);
  if (!s) return s;
  return out;
}

}  // namespace peregrine::config
