// TOML output: the effective configuration and the shipped default conf.
#include <sstream>

#include "peregrine/config/options.h"
#include "peregrine/config/render.h"

namespace peregrine::config {

namespace {

// Wraps `text` into "# "-prefixed comment lines of at most `width` columns.
void comment(std::ostringstream& out, std::string_view text, size_t width = 78) {
  std::string line = "#";
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(' ', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view word = text.substr(pos, end - pos);
    if (line.size() > 1 && line.size() + 1 + word.size() > width) {
      out << line << '\n';
      line.resize(1);  // "#" again (assigning "#" raises GCC 12's false -Wrestrict at -O3)
    }
    line += ' ';
    line += word;
    pos = end + 1;
  }
  if (line.size() > 1) out << line << '\n';
}

std::string string_array(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + format_value(items[i]);
  return out + "]";
}

}  // namespace

std::string render_effective(const Config& config) {
  std::ostringstream out;
  out << "# Effective peregrine configuration: built-in defaults, then "
      << (config.source.empty() ? std::string("no config file") : config.source) << ", then -o.\n"
      << "# Each value is followed by where it was set.\n";
  for (std::string_view table : tables()) {
    out << "\n[" << table << "]\n";
    for (const Option& o : options()) {
      if (o.table() != table) continue;
      out << o.name() << " = " << format_value(o.load(config.settings)) << "  # " << config.origin_of(o.key).to_string()
          << '\n';
    }
  }
  for (const VolumeSpec& v : config.volumes) {
    out << "\n[volume." << v.name << "]  # " << v.origin.to_string() << '\n';
    out << "members = " << string_array(v.members) << '\n';
    if (!v.mountpoint.empty()) out << "mountpoint = " << format_value(v.mountpoint) << '\n';
    if (!v.options.empty()) out << "options = " << format_value(v.options) << '\n';
  }
  return out.str();
}

std::string render_default_conf() {
  std::ostringstream out;
  out << "# /etc/peregrine/peregrine.conf: configuration of the peregrine daemon (TOML).\n"
         "#\n";
  comment(out,
          "Every setting is listed below at its built-in default, commented out: remove the leading '#' "
          "of a setting to change it. Precedence, highest first: peregrine mount -o key=value, the "
          "volume's options, the tables of this file, the built-in defaults; the dotted names "
          "(engine.high_watermark_per_drive) are the same everywhere. Check an edit with "
          "'peregrine config check', which also prints the effective configuration. "
          "See peregrine.conf(5) and /usr/share/doc/peregrine/configuration.md; docs/NAME.md below "
          "is /usr/share/doc/peregrine/NAME.md.");
  out << "#\n";
  comment(out,
          "This file is generated from the option table in the source (src/config/options.cpp) by "
          "'peregrine config defaults --format=toml'.");
  for (std::string_view table : tables()) {
    out << "\n[" << table << "]\n";
    comment(out, table_doc(table));
    for (const Option& o : options()) {
      if (o.table() != table) continue;
      out << '\n';
      comment(out, o.doc);
      std::string facts = "Default: " + format_value(o.default_value) + ". Allowed: " + o.allowed() + ".";
      if (!o.unit.empty()) facts += " Unit: " + std::string(o.unit) + ".";
      if (o.allows_auto) facts += " \"auto\" means " + std::string(o.auto_means) + ".";
      comment(out, facts);
      out << '#' << o.name() << " = " << format_value(o.default_value) << '\n';
    }
  }
  out << "\n# Named volumes, for 'peregrine mount NAME' and 'systemctl start peregrine@NAME'.\n";
  out << "# NAME is 1..64 letters, digits, '-' and '_'. Keys:\n";
  for (const VolumeKey& k : volume_keys()) {
    std::ostringstream item;
    comment(item, std::string(k.name) + " (" + std::string(k.type) + (k.required ? ", required" : ", optional") +
                      "): " + std::string(k.doc));
    out << item.str();
  }
  out << "#\n"
         "#[volume.data]\n"
         "#members = [\"/dev/disk/by-id/nvme-EXAMPLE-1\", \"/dev/disk/by-id/nvme-EXAMPLE-2\"]\n"
         "#mountpoint = \"/srv/data\"\n"
         "#options = \"engine.high_watermark_per_drive=64,fuse.allow_other=true\"\n";
  return out.str();
}

}  // namespace peregrine::config
