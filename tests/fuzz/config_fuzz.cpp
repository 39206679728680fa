// libFuzzer target for the config file (TOML through toml++, then the
// option table's checks) and the -o parser: no input may crash, abort or
// hang them, and every refusal must say where and why. A file that is
// accepted must survive the round trip `peregrine config check` promises:
// its effective configuration, printed as TOML, reads back to the same
// settings and volumes; and each of its volumes must select cleanly, since
// their options were checked at load.
//
// The input is the file's text; the same bytes are also tried as a mount -o
// string. Built only with -DPEREGRINE_FUZZ=ON and clang (tests/fuzz/config/).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "peregrine/config/load.h"
#include "peregrine/config/mount_flags.h"
#include "peregrine/config/options.h"
#include "peregrine/config/overrides.h"
#include "peregrine/config/render.h"

namespace cfg = peregrine::config;

namespace {

constexpr std::string_view kSource = "fuzz.conf";

std::vector<cfg::Value> values(const cfg::Settings& s) {
  std::vector<cfg::Value> out;
  for (const cfg::Option& o : cfg::options()) out.push_back(o.load(s));
  return out;
}

// A refusal with no text, or one that does not say where, is a finding too.
void expect_explained(const peregrine::Status& s, std::string_view where) {
  if (s.message().empty() || s.message().find(where) == std::string::npos) std::abort();
}

void check_file(std::string_view text) {
  auto config = cfg::parse_text(text, kSource);
  if (!config) {
    expect_explained(config.status(), kSource);
    return;
  }
  auto again = cfg::parse_text(cfg::render_effective(*config), kSource);
  if (!again) std::abort();  // the printed configuration must read back
  if (values(again->settings) != values(config->settings)) std::abort();
  if (again->volumes.size() != config->volumes.size()) std::abort();
  for (size_t i = 0; i < config->volumes.size(); ++i) {
    const cfg::VolumeSpec& a = config->volumes[i];
    const cfg::VolumeSpec& b = again->volumes[i];
    if (a.name != b.name || a.members != b.members || a.mountpoint != b.mountpoint || a.options != b.options)
      std::abort();
    if (!cfg::for_volume(*config, a.name)) std::abort();  // options were checked at load
  }
}

void check_mount_options(std::string_view text) {
  auto request = cfg::parse_mount_options(text);
  if (!request) {
    expect_explained(request.status(), "-o");
    return;
  }
  (void)cfg::check_mount_request(*request);
  (void)request->to_string();
  cfg::Config config;
  if (peregrine::Status s = cfg::apply_overrides(config, request->settings); !s) expect_explained(s, "command line -o");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  check_file(text);
  check_mount_options(text);
  return 0;
}
