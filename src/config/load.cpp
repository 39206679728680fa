// Config file -> Config: toml++ parses, this file walks the tree and
// refuses anything it does not know, with file:line in every message.
#include "peregrine/config/load.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "peregrine/config/mount_flags.h"
#include "peregrine/config/overrides.h"
#include "value_check.h"

namespace peregrine::config {

namespace {

using detail::node_text;
using detail::refusal;

Status refuse(std::string message) { return Status::error(EINVAL, std::move(message)); }

uint32_t line_of(const toml::node& node) { return static_cast<uint32_t>(node.source().begin.line); }

// systemd instance names and shell words: keep volume names simple.
bool valid_volume_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')) return false;
  return true;
}

std::string did_you_mean(const std::string& suggestion) {
  return suggestion.empty() ? "" : "; did you mean " + suggestion + "?";
}

class Loader {
 public:
  Loader(Config& config, std::string file) : config_(config), file_(std::move(file)) {}

  Status load(const toml::table& root) {
    for (auto&& [key, node] : root) {
      std::string_view name = key.str();
      Status s;
      if (name == "volume") {
        s = load_volumes(node);
      } else if (is_table_name(name)) {
        s = load_table(name, node);
      } else {
        std::string suggestion = node.is_table() ? suggest_among(name, tables()) : suggest_key(name);
        if (node.is_table())
          s = refuse(where(node).to_string() + ": unknown table [" + std::string(name) + "]" +
                     did_you_mean(suggestion.empty() ? "" : "[" + suggestion + "]") +
                     "; known tables: " + table_list());
        else
          s = refuse(where(node).to_string() + ": unknown key " + std::string(name) + " = " + node_text(node) +
                     did_you_mean(suggestion.empty()
                                      ? ""
                                      : suggestion + " (in [" + suggestion.substr(0, suggestion.find('.')) + "])"));
      }
      if (!s) return s;
    }
    // toml++ tables iterate in key order; keep volumes in file order.
    std::stable_sort(config_.volumes.begin(), config_.volumes.end(),
                     [](const VolumeSpec& a, const VolumeSpec& b) { return a.origin.line < b.origin.line; });
    // Volume options are checked against the final tables, as mount sees them.
    for (const VolumeSpec& v : config_.volumes) {
      if (v.options.empty()) continue;
      Config scratch = config_;
      const std::string origin = v.options_origin.to_string() + " (volume." + v.name + ".options)";
      auto request = parse_mount_options(v.options, origin);
      if (!request) return request.status();
      if (Status s = check_mount_request(*request); !s) return Status::error(EINVAL, origin + ": " + s.message());
      Status s = apply_overrides(scratch, request->settings, origin);
      if (!s) return s;
    }
    return detail::check_order(config_);
  }

 private:
  Origin where(const toml::node& node) const { return Origin{file_, line_of(node)}; }

  static bool is_table_name(std::string_view name) {
    for (std::string_view t : tables())
      if (t == name) return true;
    return false;
  }

  static std::string table_list() {
    std::string out;
    for (std::string_view t : tables()) out += (out.empty() ? "" : ", ") + std::string(t);
    return out + ", volume.NAME";
  }

  Status load_table(std::string_view table, const toml::node& node) {
    const toml::table* tbl = node.as_table();
    if (!tbl)
      return refuse(refusal(where(node), table, node_text(node), "wrong type; expected a table", nullptr,
                            "[" + std::string(table) + "]"));
    for (auto&& [key, value] : *tbl) {
      std::string dotted = std::string(table) + "." + std::string(key.str());
      const Option* option = find_option(dotted);
      if (!option)
        return refuse(where(value).to_string() + ": unknown key " + dotted + " = " + node_text(value) +
                      did_you_mean(suggest_key(dotted)));
      auto parsed = detail::value_from_node(*option, value, file_);
      if (!parsed) return parsed.status();
      option->store(config_.settings, *parsed);
      config_.origins[dotted] = where(value);
    }
    return Status::ok();
  }

  Status load_volumes(const toml::node& node) {
    const toml::table* tbl = node.as_table();
    if (!tbl)
      return refuse(
          refusal(where(node), "volume", node_text(node), "wrong type; expected tables", nullptr, "[volume.NAME]"));
    for (auto&& [key, value] : *tbl) {
      std::string name(key.str());
      std::string dotted = "volume." + name;
      if (!valid_volume_name(name))
        return refuse(refusal(where(value), dotted, "[" + dotted + "]", "bad volume name", nullptr,
                              "names of 1..64 letters, digits, '-' and '_'"));
      const toml::table* vol = value.as_table();
      if (!vol)
        return refuse(refusal(where(value), dotted, node_text(value), "wrong type; expected a table", nullptr,
                              "[" + dotted + "]"));
      Status s = load_volume(name, *vol);
      if (!s) return s;
    }
    return Status::ok();
  }

  Status load_volume(const std::string& name, const toml::table& vol) {
    VolumeSpec spec;
    spec.name = name;
    spec.origin = where(vol);
    std::string prefix = "volume." + name + ".";
    std::vector<std::string_view> known;
    for (const VolumeKey& k : volume_keys()) known.push_back(k.name);
    for (auto&& [key, value] : vol) {
      std::string_view k = key.str();
      std::string dotted = prefix + std::string(k);
      if (k == "members") {
        const toml::array* arr = value.as_array();
        if (!arr || arr->empty())
          return refuse(refusal(where(value), dotted, node_text(value), arr ? "no members" : "wrong type", nullptr,
                                "a non-empty array of device or file paths"));
        for (const toml::node& m : *arr) {
          auto path = m.value<std::string>();
          if (!path || path->empty())
            return refuse(refusal(where(m), dotted, node_text(m), "not a path", nullptr,
                                  "a non-empty array of device or file paths"));
          for (const std::string& seen : spec.members)
            if (seen == *path)
              return refuse(
                  refusal(where(m), dotted, node_text(m), "member listed twice", nullptr, "each member once"));
          spec.members.push_back(*path);
        }
      } else if (k == "mountpoint") {
        auto path = value.value<std::string>();
        if (!value.is_string() || !path || path->empty() || path->front() != '/')
          return refuse(refusal(where(value), dotted, node_text(value),
                                value.is_string() ? "not an absolute path" : "wrong type", nullptr,
                                "an absolute path"));
        spec.mountpoint = *path;
      } else if (k == "options") {
        if (!value.is_string())
          return refuse(refusal(where(value), dotted, node_text(value), "wrong type", nullptr,
                                "a string of comma-separated key=value settings"));
        spec.options = *value.value<std::string>();
        spec.options_origin = where(value);
      } else {
        std::string suggestion = suggest_among(k, known);
        return refuse(where(value).to_string() + ": unknown key " + dotted + " = " + node_text(value) +
                      did_you_mean(suggestion.empty() ? "" : prefix + suggestion) +
                      "; a volume has members, mountpoint, options");
      }
    }
    if (spec.members.empty())
      return refuse(refusal(spec.origin, "volume." + name + ".members", "(missing)", "required key missing", nullptr,
                            "a non-empty array of device or file paths"));
    config_.volumes.push_back(std::move(spec));
    return Status::ok();
  }

  Config& config_;
  std::string file_;
};

}  // namespace

Expected<Config> parse_text(std::string_view text, std::string_view source_name) {
  Config config;
  config.source = std::string(source_name);
  toml::table root;
  try {
    root = toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    const auto& begin = e.source().begin;
    return Status::error(EINVAL, std::string(source_name) + ":" + std::to_string(begin.line) + ":" +
                                     std::to_string(begin.column) +
                                     ": TOML syntax error: " + std::string(e.description()));
  }
  Status s = Loader(config, std::string(source_name)).load(root);
  if (!s) return s;
  return config;
}

Expected<Config> load_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int err = errno ? errno : ENOENT;
    return Status::error(err, path + ": " + std::strerror(err));
  }
  // A directory opens, and reads as nothing: it would pass for an empty file.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return Status::error(EISDIR, path + ": " + std::strerror(EISDIR));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::error(EIO, path + ": read error");
  return parse_text(text.str(), path);
}

}  // namespace peregrine::config
