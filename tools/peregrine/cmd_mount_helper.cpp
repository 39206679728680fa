// `mount.peregrine`: the helper mount(8) runs for `mount -t peregrine` and
// for /etc/fstab lines of type peregrine:
//
//   mount.peregrine SPEC DIR [-sfnv] [-o OPTIONS] [-t peregrine]
//
// SPEC is a comma-separated member list ("/dev/a,/dev/b", files work too)
// or the NAME of a [volume.NAME] section of the config file. OPTIONS with a
// dotted name are peregrine settings; the generic mount options fstab lines
// carry are accepted (see kIgnored and kNotApplied). The mount itself is
// `peregrine mount` (cmd_mount), called in this process with a built argv.
//
// Exit codes follow mount(8): 0 mounted, 1 bad invocation, 32 mount failed.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "commands.h"
#include "peregrine/config/load.h"
#include "peregrine/config/overrides.h"

namespace peregrine::cli {
namespace {

namespace cfg = peregrine::config;

constexpr int kUsageError = 1;   // mount(8): incorrect invocation
constexpr int kMountFailed = 32;  // mount(8): mount failure

// Generic options with nothing to do for peregrine: fstab bookkeeping read
// by mount(8)/systemd themselves, and atime/async choices the daemon makes.
constexpr std::string_view kIgnored[] = {
    "defaults", "rw",       "auto",     "noauto",    "nofail",     "_netdev",    "user",    "nouser",
    "users",    "owner",    "group",    "async",     "atime",      "noatime",    "relatime", "norelatime",
    "strictatime", "nostrictatime", "diratime", "nodiratime", "lazytime", "nolazytime", "loud", "silent",
    "suid",     "dev",      "exec",     "nosymfollow"};
// Accepted but not applied by this version: said once on stderr, so an fstab
// line written for another filesystem still mounts.
constexpr std::string_view kNotApplied[] = {"nosuid", "nodev", "noexec", "sync", "dirsync", "mand", "nomand"};

void usage(FILE* out) {
  std::fprintf(out,
               "usage: mount.peregrine SPEC DIR [-sfnv] [-o OPTIONS]\n"
               "       mount -t peregrine SPEC DIR [-o OPTIONS]\n\n"
               "Mounts a peregrine volume at DIR; called by mount(8) for filesystems of\n"
               "type peregrine (command line and /etc/fstab).\n\n"
               "SPEC   MEMBER,MEMBER,... (block devices or files, any order), or the NAME\n"
               "       of a [volume.NAME] section of the config file (its members, and its\n"
               "       options before the command line's)\n"
               "-o     comma-separated options: dotted peregrine settings such as\n"
               "       fuse.cache=writeback or fuse.allow_other (see peregrine.conf(5));\n"
               "       config=FILE reads FILE instead of %s;\n"
               "       generic mount options (defaults, rw, noauto, nofail, _netdev, user,\n"
               "       noatime, x-systemd.*, comment=...) are accepted; nosuid, nodev,\n"
               "       noexec, sync and dirsync are accepted but not applied (a warning\n"
               "       says so); ro is refused (peregrine mounts read-write only)\n"
               "-s     sloppy: ignore unknown options instead of failing\n"
               "-f     fake: check everything, then do not mount\n"
               "-n     accepted (no mtab is written anyway)\n"
               "-v     say what is run\n\n"
               "Exit status: 0 mounted, 1 bad invocation, 32 mount failed.\n",
               std::string(cfg::kDefaultConfigPath).c_str());
}

bool listed(std::string_view opt, const auto& list) {
  for (std::string_view o : list)
    if (o == opt) return true;
  return false;
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t comma = s.find(',', start);
    out.push_back(s.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

int error(int code, const std::string& message) {
  std::fprintf(stderr, "mount.peregrine: %s\n", message.c_str());
  return code;
}

}  // namespace

int cmd_mount_helper(int argc, char** argv) {
  std::vector<std::string> positional;
  std::string options;
  bool sloppy = false, fake = false, verbose = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    }
    if (a == "-o" || a == "-t" || a == "-N") {
      if (i + 1 >= argc) return error(kUsageError, std::string(a) + " needs a value");
      std::string value = argv[++i];
      if (a == "-o") options += (options.empty() ? "" : ",") + value;
      if (a == "-t" && value != "peregrine" && value != "fuse.peregrine")
        return error(kUsageError, "-t " + value + ": this helper mounts type peregrine only");
      if (a == "-N") return error(kUsageError, "-N (mount namespaces) is not supported");
      continue;
    }
    if (a.starts_with("-o") && a.size() > 2) {
      options += (options.empty() ? "" : ",") + std::string(a.substr(2));
      continue;
    }
    if (a.size() > 1 && a[0] == '-') {
      for (char c : a.substr(1)) {
        switch (c) {
          case 's': sloppy = true; break;
          case 'f': fake = true; break;
          case 'v': verbose = true; break;
          case 'n': break;
          default:
            usage(stderr);
            return error(kUsageError, std::string("unknown flag -") + c);
        }
      }
      continue;
    }
    positional.emplace_back(a);
  }
  if (positional.size() != 2) {
    usage(stderr);
    return error(kUsageError, "give exactly SPEC and DIR");
  }
  const std::string spec = positional[0];
  const std::string dir = positional[1];

  // Sort the options: peregrine settings, config=FILE, and generic flags.
  cfg::MountOptions split = cfg::split_mount_options(options);
  // x-systemd.requires=... and friends have dots too, but belong to systemd.
  std::erase_if(split.settings, [](const std::string& s) { return s.starts_with("x-"); });
  std::string config_file;
  for (const std::string& o : split.other) {
    if (o.empty() || listed(o, kIgnored) || o.starts_with("x-") || o.starts_with("comment=")) continue;
    if (o.starts_with("config=")) {
      config_file = o.substr(7);
      continue;
    }
    if (o == "ro")
      return error(kMountFailed, "-o ro: read-only mounts are not supported; peregrine mounts read-write");
    if (listed(o, kNotApplied)) {
      std::fprintf(stderr, "mount.peregrine: warning: -o %s is accepted but not applied by this version\n",
                   o.c_str());
      continue;
    }
    if (sloppy) {
      if (verbose) std::fprintf(stderr, "mount.peregrine: ignoring unknown option '%s' (-s)\n", o.c_str());
      continue;
    }
    return error(kUsageError, "-o " + o +
                                  ": unknown option (peregrine settings have dotted names such as "
                                  "fuse.cache=writeback; -s ignores unknown options)");
  }

  // SPEC: a member list, or a volume NAME of the config file.
  std::vector<std::string> members;
  std::vector<std::string> settings;
  if (spec.find(',') != std::string::npos || spec.find('/') != std::string::npos) {
    members = split_commas(spec);
    for (const std::string& m : members)
      if (m.empty()) return error(kUsageError, "'" + spec + "': empty member name in the member list");
  } else {
    std::string path = config_file.empty() ? std::string(cfg::kDefaultConfigPath) : config_file;
    auto config = cfg::load_file(path);
    if (!config) return error(kMountFailed, "'" + spec + "' is no member path, and " + config.status().message());
    const cfg::VolumeSpec* volume = config->find_volume(spec);
    if (volume == nullptr) {
      std::string names;
      for (const cfg::VolumeSpec& v : config->volumes) names += (names.empty() ? "" : ", ") + v.name;
      return error(kMountFailed, "'" + spec + "': " + path + " defines no volume of that name (it defines: " +
                                     (names.empty() ? "none" : names) + "); give MEMBER,MEMBER,... instead");
    }
    members = volume->members;
    if (!volume->options.empty()) settings = cfg::split_mount_options(volume->options).settings;
    config_file = path;  // the volume's file is the config of this mount
  }
  // The command line's settings come after the volume's: later wins.
  settings.insert(settings.end(), split.settings.begin(), split.settings.end());

  std::vector<std::string> args = {"mount"};
  if (!config_file.empty()) {
    args.push_back("--config");
    args.push_back(config_file);
  }
  if (!settings.empty()) {
    args.push_back("-o");
    args.push_back(join(settings));
  }
  args.insert(args.end(), members.begin(), members.end());
  args.push_back(dir);

  if (verbose || fake) {
    std::string line = "peregrine";
    for (const std::string& a : args) line += " " + a;
    std::fprintf(stderr, "mount.peregrine: %s%s\n", fake ? "would run: " : "", line.c_str());
  }
  if (fake) {
    if (::access(dir.c_str(), F_OK) != 0) return error(kMountFailed, dir + ": " + std::strerror(errno));
    return 0;
  }

  std::vector<char*> cargv;
  for (std::string& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  int rc = cmd_mount(static_cast<int>(args.size()), cargv.data());
  if (rc == 0) return 0;
  return rc == 2 ? kUsageError : kMountFailed;
}

}  // namespace peregrine::cli
