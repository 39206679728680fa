// Markdown option reference for docs/configuration.md.
#include <sstream>

#include "peregrine/config/options.h"
#include "peregrine/config/render.h"

namespace peregrine::config {

std::string render_markdown_reference() {
  std::ostringstream out;
  out << kDocBeginMarker << "\n";
  for (std::string_view table : tables()) {
    out << "\n### `[" << table << "]`\n\n" << table_doc(table) << "\n";
    for (const Option& o : options()) {
      if (o.table() != table) continue;
      out << "\n#### `" << o.key << "`\n\n";
      out << "- default: `" << format_value(o.default_value) << "`\n";
      out << "- allowed: " << o.allowed() << "\n";
      if (!o.unit.empty()) out << "- unit: " << o.unit << "\n";
      if (o.allows_auto) out << "- `\"auto\"`: " << o.auto_means << "\n";
      out << "\n" << o.doc << "\n";
    }
  }
  out << "\n### Ordered pairs\n\nChecked after the file, the volume's options and `-o` are applied "
         "(a value of `\"auto\"` is not checked):\n\n";
  for (const OrderRule& r : order_rules())
    out << "- `" << r.low << "` " << (r.strict ? "<" : "<=") << " `" << r.high << "`: " << r.why << ".\n";
  out << "\n### `[volume.NAME]`\n\nNamed volumes for `peregrine mount NAME` and `peregrine@NAME.service`. "
         "NAME is 1..64 letters, digits, `-` and `_`.\n\n";
  for (const VolumeKey& k : volume_keys())
    out << "- `" << k.name << "` (" << k.type << (k.required ? ", required" : ", optional") << "): " << k.doc << "\n";
  out << "\n" << kDocEndMarker << "\n";
  return out.str();
}

}  // namespace peregrine::config
