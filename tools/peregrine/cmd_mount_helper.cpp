// `mount.peregrine`: the helper mount(8) runs for `mount -t peregrine` and
// for /etc/fstab lines of type peregrine:
//
//   mount.peregrine SPEC DIR [-sfnv] [-o OPTIONS] [-t peregrine]
//
// SPEC is a comma-separated member list ("/dev/a,/dev/b", files work too)
// or the NAME of a [volume.NAME] section of the config file. OPTIONS go
// through the parser `peregrine mount -o` uses (mount_flags.h): dotted
// peregrine settings, and the generic options of mount(8) and fstab. The
// mount itself is `peregrine mount` (cmd_mount), called in this process
// with a built argv that keeps only what matters to it.
//
// Exit codes follow mount(8): 0 mounted, 1 bad invocation, 32 mount failed.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "commands.h"
#include "mount_helper_args.h"
#include "peregrine/config/config_path.h"
#include "peregrine/config/load.h"
#include "peregrine/config/mount_flags.h"
#include "peregrine/config/overrides.h"
#include "remount.h"

namespace peregrine::cli {
namespace {

namespace cfg = peregrine::config;

constexpr int kMountFailed = 32;  // mount(8): mount failure

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
               "       fuse.cache=writeback (see peregrine.conf(5)); config=FILE reads FILE\n"
               "       instead of $PEREGRINE_CONFIG or %s;\n"
               "       ro (read-only, nothing written), norecovery (with ro: do not apply\n"
               "       the journal), allow_other, the kernel's nosuid, nodev, noexec,\n"
               "       noatime, sync... and fstab's defaults, noauto, nofail, _netdev, user,\n"
               "       x-systemd.*, comment=... (mount.peregrine(8) says what each does);\n"
               "       remount changes ro/rw, nosuid, nodev, noexec, sync, dirsync only\n"
               "-s     sloppy: ignore unknown options instead of failing\n"
               "-f     fake: check everything, then do not mount\n"
               "-n     accepted (no mtab is written anyway)\n"
               "-v     say what is run\n\n"
               "Exit status: 0 mounted, 1 bad invocation, 32 mount failed.\n",
               std::string(cfg::kDefaultConfigPath).c_str());
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

const HelperSyntax kSyntax = {
    .name = "mount.peregrine",
    .flags = "sfnv",
    .takes_options = true,
    .namespace_has_value = true,
    .wrong_type = "this helper mounts type peregrine only",
    .positional = 2,
    .positional_hint = "give exactly SPEC and DIR",
    .usage = usage,
};

int error(int code, const std::string& message) { return helper_error(kSyntax, code, message); }

}  // namespace

int cmd_mount_helper(int argc, char** argv) {
  HelperArgs given;
  if (auto rc = parse_helper_args(kSyntax, argc, argv, &given)) return *rc;
  const std::string& options = given.options;
  const bool sloppy = given.has('s'), fake = given.has('f'), verbose = given.has('v');
  const std::string spec = given.positional[0];
  const std::string dir = given.positional[1];
  if (("," + options + ",").find(",remount,") != std::string::npos) return remount_volume(dir, options, verbose, fake);

  // The options, through the parser `peregrine mount` uses (mount_flags.h);
  // -s drops unknown ones instead of failing.
  auto parsed = cfg::parse_mount_options(options, "-o", sloppy);
  if (!parsed)
    return error(kHelperUsageError, parsed.status().message() + (sloppy ? "" : "; -s ignores unknown options"));
  for (const std::string& o : parsed->unknown)
    if (verbose) std::fprintf(stderr, "mount.peregrine: ignoring unknown option '%s' (-s)\n", o.c_str());
  cfg::MountRequest request = std::move(*parsed);
  std::string config_file = request.config_file;

  // SPEC: a member list, or a volume NAME of the config file.
  std::vector<std::string> members;
  if (spec.find(',') != std::string::npos || spec.find('/') != std::string::npos) {
    members = split_commas(spec);
    for (const std::string& m : members)
      if (m.empty()) return error(kHelperUsageError, "'" + spec + "': empty member name in the member list");
  } else {
    // A NAME needs a file: even the default one must exist here.
    std::string path = cfg::choose_config(config_file).path;
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
    // The volume's options come before the command line's: later wins.
    auto own = cfg::parse_mount_options(volume->options, path + " (volume." + spec + ".options)");
    if (!own) return error(kMountFailed, own.status().message());
    own->add(request);
    request = std::move(*own);
    config_file = path;  // the volume's file is the config of this mount
  }
  if (Status s = cfg::check_mount_request(request); !s) return error(kHelperUsageError, s.message());
  const std::string mount_options = request.to_string();

  // The mount table shows SPEC as mount(8) was given it, so that mount -a
  // finds the fstab line mounted and skips it, as for any filesystem.
  std::vector<std::string> args = {"mount", "--source", spec};
  if (!config_file.empty()) {
    args.push_back("--config");
    args.push_back(config_file);
  }
  if (!mount_options.empty()) {
    args.push_back("-o");
    args.push_back(mount_options);
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
  return rc == 2 ? kHelperUsageError : kMountFailed;
}

}  // namespace peregrine::cli
