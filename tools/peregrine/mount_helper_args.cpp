#include "mount_helper_args.h"

namespace peregrine::cli {

int helper_error(const HelperSyntax& syntax, int code, const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", syntax.name, message.c_str());
  return code;
}

std::optional<int> parse_helper_args(const HelperSyntax& syntax, int argc, char** argv, HelperArgs* out) {
  auto usage_error = [&](const std::string& message) { return helper_error(syntax, kHelperUsageError, message); };
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "-h" || a == "--help") {
      syntax.usage(stdout);
      return 0;
    }
    if (a == "-N" && !syntax.namespace_has_value) return usage_error("-N (mount namespaces) is not supported");
    if (a == "-t" || a == "-N" || (a == "-o" && syntax.takes_options)) {
      if (i + 1 >= argc) return usage_error(std::string(a) + " needs a value");
      std::string value = argv[++i];
      if (a == "-o") out->options += (out->options.empty() ? "" : ",") + value;
      if (a == "-t" && value != "peregrine" && value != "fuse.peregrine")
        return usage_error("-t " + value + ": " + syntax.wrong_type);
      if (a == "-N") return usage_error("-N (mount namespaces) is not supported");
      continue;
    }
    if (syntax.takes_options && a.starts_with("-o") && a.size() > 2) {
      out->options += (out->options.empty() ? "" : ",") + std::string(a.substr(2));
      continue;
    }
    if (a.size() > 1 && a[0] == '-') {
      for (char c : a.substr(1)) {
        if (syntax.flags.find(c) == std::string_view::npos) {
          syntax.usage(stderr);
          return usage_error(std::string("unknown flag -") + c);
        }
        if (!out->has(c)) out->flags += c;
      }
      continue;
    }
    out->positional.emplace_back(a);
  }
  if (out->positional.size() != syntax.positional) {
    syntax.usage(stderr);
    return usage_error(syntax.positional_hint);
  }
  return std::nullopt;
}

}  // namespace peregrine::cli
