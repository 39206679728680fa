// roff option reference for the peregrine.conf(5) manual page.
#include <sstream>

#include "peregrine/config/options.h"
#include "peregrine/config/render.h"

namespace peregrine::config {

namespace {

// Prose as roff text: backslashes escaped, no line starting with a control
// character.
std::string roff(std::string_view text, bool code = false) {
  std::string out;
  for (char c : text) {
    if (c == '\\')
      out += "\\e";
    else if (c == '-' && code)
      out += "\\-";  // a literal minus in keys and values
    else
      out += c;
  }
  if (!out.empty() && (out.front() == '.' || out.front() == '\'')) out.insert(0, "\\&");
  return out;
}

}  // namespace

std::string render_man_reference() {
  std::ostringstream out;
  out << kManBeginMarker << "\n";
  for (std::string_view table : tables()) {
    out << ".SS [" << table << "]\n" << roff(table_doc(table)) << "\n";
    for (const Option& o : options()) {
      if (o.table() != table) continue;
      out << ".TP\n\\fB" << roff(o.name(), true) << "\\fR = " << roff(format_value(o.default_value), true) << "\n";
      out << roff(o.doc) << "\n.br\nAllowed: " << roff(o.allowed()) << ".";
      if (!o.unit.empty()) out << " Unit: " << roff(o.unit) << ".";
      if (o.allows_auto) out << " \"auto\" means " << roff(o.auto_means) << ".";
      out << "\n";
    }
  }
  out << ".SS Ordered pairs\nChecked after the file, the volume's options and \\fB\\-o\\fR are applied "
         "(a value of \"auto\" is not checked):\n";
  for (const OrderRule& r : order_rules())
    out << ".IP \\(bu 2\n\\fB" << roff(r.low, true) << "\\fR " << (r.strict ? "<" : "<=") << " \\fB"
        << roff(r.high, true) << "\\fR: " << roff(r.why) << ".\n";
  out << ".SS [volume.NAME]\nNamed volumes for \\fBperegrine mount\\fR \\fINAME\\fR and "
         "\\fBperegrine@\\fR\\fINAME\\fR\\fB.service\\fR. "
         "NAME is 1..64 letters, digits, '\\-' and '_'.\n";
  for (const VolumeKey& k : volume_keys())
    out << ".TP\n\\fB" << roff(k.name, true) << "\\fR (" << k.type << (k.required ? ", required" : ", optional")
        << ")\n"
        << roff(k.doc) << "\n";
  out << kManEndMarker << "\n";
  return out.str();
}

}  // namespace peregrine::config
