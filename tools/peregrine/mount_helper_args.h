// The command line mount(8) and umount(8) give their helpers
// (mount.peregrine, umount.fuse.peregrine), read the same way for both:
// -h/--help, -t TYPE (this helper's types only), -N refused (no mount
// namespaces), single-letter flags that may be grouped (-fv), -o OPTIONS
// where the helper takes options, and the positional arguments.
// Thread rules: main thread only.
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace peregrine::cli {

constexpr int kHelperUsageError = 1;  // mount(8), umount(8): incorrect invocation

struct HelperSyntax {
  const char* name;             // "mount.peregrine": the prefix of its messages
  std::string_view flags;       // the single-letter flags it takes, e.g. "sfnv"
  bool takes_options;           // -o OPTIONS and -oOPTIONS
  bool namespace_has_value;     // -N is refused after its value is read (mount(8) passes one)
  const char* wrong_type;       // after "-t TYPE: ", e.g. "this helper mounts type peregrine only"
  size_t positional;            // how many positional arguments it needs ...
  const char* positional_hint;  // ... and what it says otherwise ("give exactly SPEC and DIR")
  void (*usage)(FILE* out);
};

struct HelperArgs {
  std::vector<std::string> positional;
  std::string options;  // -o values, joined by commas
  std::string flags;    // the flags given, each once

  bool has(char flag) const { return flags.find(flag) != std::string::npos; }
};

// Prints "NAME: MESSAGE" on stderr and returns `code`.
int helper_error(const HelperSyntax& syntax, int code, const std::string& message);

// The helper's arguments; an exit code when there is nothing more to do
// (help printed, or a usage error said).
std::optional<int> parse_helper_args(const HelperSyntax& syntax, int argc, char** argv, HelperArgs* out);

}  // namespace peregrine::cli
