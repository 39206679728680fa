// peregrine config: validate a config file and print the effective
// configuration, or print the defaults (the generator of conf/peregrine.conf
// and of the option reference in docs/configuration.md).
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "commands.h"
#include "peregrine/config/config_path.h"
#include "peregrine/config/mount_flags.h"
#include "peregrine/config/overrides.h"
#include "peregrine/config/render.h"

namespace peregrine::cli {

namespace {

namespace cfg = peregrine::config;

void usage(FILE* out) {
  std::fprintf(out,
               "usage: peregrine config check [FILE] [-o KEY=VALUE[,KEY=VALUE...]]... [--volume NAME]\n"
               "       peregrine config defaults [--format=toml|markdown|man]\n"
               "\n"
               "check     Validate FILE (default $PEREGRINE_CONFIG, else\n"
               "          %s) and print the effective\n"
               "          configuration as TOML, each value annotated with where it was set.\n"
               "          Without FILE or PEREGRINE_CONFIG, a missing default file means\n"
               "          the built-in defaults. FILE - reads standard input.\n"
               "          -o applies overrides as 'peregrine mount -o' does; --volume NAME\n"
               "          applies that [volume.NAME] section's options first.\n"
               "          Exit status: 0 valid, 1 refused (the message names file, line,\n"
               "          key, value and what is allowed), 2 usage error.\n"
               "defaults  Print every option at its built-in default: as the commented\n"
               "          conf file (toml, the default), or as the option reference of\n"
               "          docs/configuration.md (markdown) or of peregrine.conf(5) (man).\n",
               std::string(cfg::kDefaultConfigPath).c_str());
}

int usage_error(const std::string& message) {
  std::fprintf(stderr, "peregrine config: %s\n\n", message.c_str());
  usage(stderr);
  return 2;
}

int check(int argc, char** argv) {
  std::string file;
  std::string volume;
  std::vector<std::string> assignments;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      usage(stdout);
      return 0;
    }
    if (arg == "-o" || arg == "--volume") {
      if (i + 1 >= argc) return usage_error(std::string(arg) + " needs a value");
      std::string value = argv[++i];
      if (arg == "--volume") {
        volume = value;
        continue;
      }
      // The parser mount uses: mount flags (ro, noexec...) pass, unknown ones are refused.
      auto parsed = cfg::parse_mount_options(value);
      if (!parsed) {
        std::fprintf(stderr, "peregrine config: %s\n", parsed.status().message().c_str());
        return 1;
      }
      assignments.insert(assignments.end(), parsed->settings.begin(), parsed->settings.end());
    } else if (arg.starts_with("-o")) {
      auto parsed = cfg::parse_mount_options(arg.substr(2));
      if (!parsed) {
        std::fprintf(stderr, "peregrine config: %s\n", parsed.status().message().c_str());
        return 1;
      }
      assignments.insert(assignments.end(), parsed->settings.begin(), parsed->settings.end());
    } else if (arg.starts_with("--volume=")) {
      volume = std::string(arg.substr(9));
    } else if (arg.starts_with("-") && arg != "-") {
      return usage_error("unknown option '" + std::string(arg) + "'");
    } else if (file.empty()) {
      file = std::string(arg);
    } else {
      return usage_error("only one FILE may be checked");
    }
  }

  cfg::ConfigChoice choice = cfg::choose_config(file == "-" ? "/dev/stdin" : file);
  auto loaded = cfg::load_chosen(choice);
  if (!loaded) {
    std::fprintf(stderr, "peregrine config: %s\n", loaded.status().message().c_str());
    return 1;
  }
  cfg::Config config = std::move(*loaded);
  if (config.source.empty())
    std::fprintf(stderr, "peregrine config: %s does not exist; using the built-in defaults\n", choice.path.c_str());

  if (!volume.empty()) {
    auto selected = cfg::for_volume(config, volume, assignments);
    if (!selected) {
      std::fprintf(stderr, "peregrine config: %s\n", selected.status().message().c_str());
      return 1;
    }
    config = std::move(*selected);
  } else if (Status s = cfg::apply_overrides(config, assignments); !s) {
    std::fprintf(stderr, "peregrine config: %s\n", s.message().c_str());
    return 1;
  }
  std::fputs(cfg::render_effective(config).c_str(), stdout);
  return 0;
}

int defaults(int argc, char** argv) {
  std::string format = "toml";
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      usage(stdout);
      return 0;
    }
    if (arg.starts_with("--format=")) {
      format = std::string(arg.substr(9));
    } else if (arg == "--format" && i + 1 < argc) {
      format = argv[++i];
    } else {
      return usage_error("unknown argument '" + std::string(arg) + "'");
    }
  }
  if (format == "toml") {
    std::fputs(cfg::render_default_conf().c_str(), stdout);
  } else if (format == "markdown") {
    std::fputs(cfg::render_markdown_reference().c_str(), stdout);
  } else if (format == "man") {
    std::fputs(cfg::render_man_reference().c_str(), stdout);
  } else {
    return usage_error("--format must be toml, markdown or man, not '" + format + "'");
  }
  return 0;
}

}  // namespace

int cmd_config(int argc, char** argv) {
  if (argc < 2) return usage_error("missing subcommand");
  std::string_view sub = argv[1];
  if (sub == "--help" || sub == "-h" || sub == "help") {
    usage(stdout);
    return 0;
  }
  if (sub == "check") return check(argc - 1, argv + 1);
  if (sub == "defaults") return defaults(argc - 1, argv + 1);
  return usage_error("unknown subcommand '" + std::string(sub) + "'");
}

}  // namespace peregrine::cli
