// Which configuration file a command reads, and reading it: the one rule
// that `peregrine mount`, `peregrine config check` and `mount.peregrine`
// share.
//
// A file named on the command line (--config FILE, config=FILE, the FILE of
// config check) wins; else the environment variable PEREGRINE_CONFIG names
// it; else /etc/peregrine/peregrine.conf is read when it exists. A file
// named on the command line or by the variable must exist: a typo must not
// quietly mean the built-in defaults. PEREGRINE_CONFIG=/dev/null reads an
// empty file, so nothing but the built-in defaults and -o: the test suite
// runs its mounts that way, so that the settings of the machine it runs on
// cannot change them. An empty PEREGRINE_CONFIG counts as unset.
//
// Thread rules: main thread, at start-up (choose_config reads the
// environment).
#pragma once

#include <string>
#include <string_view>

#include "peregrine/config/config.h"
#include "peregrine/util/result.h"

namespace peregrine::config {

inline constexpr std::string_view kConfigEnv = "PEREGRINE_CONFIG";

struct ConfigChoice {
  enum class From { kCommandLine, kEnvironment, kDefault };
  std::string path;
  From from = From::kDefault;

  // Named by the user (command line or environment): it must exist.
  bool required() const { return from != From::kDefault; }
};

// `named` is the file the command line gives ("" when none); `env` the
// value of PEREGRINE_CONFIG (nullptr when unset). The second form reads
// the variable itself.
ConfigChoice choose_config(std::string_view named, const char* env);
ConfigChoice choose_config(std::string_view named);

// Reads and validates the chosen file (load_file). A default file that does
// not exist gives the built-in defaults: a Config whose source is "". When
// the variable named a file that cannot be read, the message says so.
Expected<Config> load_chosen(const ConfigChoice& choice);

}  // namespace peregrine::config
