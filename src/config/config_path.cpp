// Choosing the config file: command line, then PEREGRINE_CONFIG, then the
// system file (config_path.h).
#include "peregrine/config/config_path.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "peregrine/config/load.h"

namespace peregrine::config {

ConfigChoice choose_config(std::string_view named, const char* env) {
  if (!named.empty()) return {std::string(named), ConfigChoice::From::kCommandLine};
  if (env != nullptr && *env != '\0') return {std::string(env), ConfigChoice::From::kEnvironment};
  return {std::string(kDefaultConfigPath), ConfigChoice::From::kDefault};
}

ConfigChoice choose_config(std::string_view named) {
  return choose_config(named, std::getenv(std::string(kConfigEnv).c_str()));
}

Expected<Config> load_chosen(const ConfigChoice& choice) {
  auto loaded = load_file(choice.path);
  if (loaded) return loaded;
  const Status& s = loaded.status();
  if (!choice.required() && s.errnum() == ENOENT) return Config{};
  // A file that could not be opened or read (not a refusal of its content,
  // which names the file and line): say who named it.
  if (choice.from == ConfigChoice::From::kEnvironment && s.errnum() != EINVAL)
    return Status::error(s.errnum(), std::string(kConfigEnv) + "=" + choice.path + ": " + std::strerror(s.errnum()));
  return loaded;
}

}  // namespace peregrine::config
