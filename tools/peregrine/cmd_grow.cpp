// `peregrine grow`: extends a volume's data area over members that became
// larger (a bigger LUN, a longer file): an unmounted one given its members
// (volume/grow.h), a mounted one given its mount point (the daemon does it:
// fs/grow_ioctl.h). Exit codes: 0 grown, 1 refused or failed (nothing to
// grow, a damaged volume, ...), 2 bad command line.
//
// Test hook: PEREGRINE_TEST_GROW_STOP_AFTER=K makes the command (or, in its
// environment, the daemon for an online grow) _exit(9) right after the
// K-th superblock copy is written and synced (member 0's primary is 1, its
// backup 2, member 1's primary 3, ...): the crash tests use it to stop a
// grow at every step. Never set it otherwise.
#include <boost/program_options.hpp>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "cli_args.h"
#include "commands.h"
#include "grow_add.h"
#include "mount_table.h"
#include "peregrine/fs/grow_ioctl.h"
#include "peregrine/volume/grow.h"
#include "peregrine/volume/mount_table.h"
#include "peregrine/volume/size_text.h"

namespace peregrine::cli {
namespace {

namespace po = boost::program_options;

constexpr const char* kStopAfterEnv = "PEREGRINE_TEST_GROW_STOP_AFTER";

constexpr const char* kUsage =
    "usage: peregrine grow [--size SIZE] MEMBER...\n"
    "       peregrine grow MOUNTPOINT\n"
    "       peregrine grow [--force] --add NEW [--add NEW]... MEMBER...\n\n"
    "Extends the volume whose MEMBERs (all of them, in any order) became larger\n"
    "-- a larger device, a longer file -- over their new space. Existing data\n"
    "stays where it is; the new space is added at the end of the volume. The\n"
    "smallest member decides, as in mkfs. An unmounted volume is given by its\n"
    "members; a mounted one by its mount point (the daemon grows it, and df\n"
    "shows the new size at once).\n\n"
    "With --add, the unmounted volume of the MEMBERs gets the NEW members (block\n"
    "devices or regular files at least as large as a member's part of the\n"
    "volume; a missing file is created as large as the largest member): its\n"
    "data is restriped over all of them, so that each file is striped over\n"
    "every member, and the volume grows by the NEW members' share. Progress\n"
    "and the time left go to stderr.\n\n"
    "options";

std::string sizes_line(uint64_t before, uint64_t after);

void print_grown(const std::string& what, bool finished_interrupted, uint64_t member_before, uint64_t member_after,
                 uint32_t members, uint64_t data_before, uint64_t data_after) {
  std::printf("grew %s\n", what.c_str());
  if (finished_interrupted) std::printf("  (finished an interrupted grow)\n");
  std::printf("  %-18s%s\n", "member data size:", sizes_line(member_before, member_after).c_str());
  std::printf("  %-18s%s\n", "volume size:", sizes_line(member_before * members, member_after * members).c_str());
  std::printf("  %-18s%s\n", "data area:", sizes_line(data_before, data_after).c_str());
}

// Online: the daemon serving the mount grows the volume it holds
// (grow_ioctl.h).
int grow_mounted(const std::string& arg, const MountEntry& m) {
  int fd = ::open(m.mountpoint.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    if (dead_mount_errno(e))
      std::fprintf(stderr, "peregrine grow: %s\n", dead_mount_advice(m.mountpoint).c_str());
    else
      std::fprintf(stderr, "peregrine grow: %s: %s\n", arg.c_str(), std::strerror(e));
    return 1;
  }
  fs::GrowIoctl g{};
  int rc = ::ioctl(fd, fs::kGrowIoctl, &g);
  int e = errno;
  ::close(fd);
  if (rc != 0) {
    std::string why = std::strerror(e);
    if (e == ENOTTY)
      why =
          "the daemon serving it cannot grow a mounted volume (an older peregrine?); unmount it, "
          "then run 'peregrine grow' over its members";
    if (e == EPERM) why = "growing a volume needs root";
    if (e == EROFS) why = "mounted read-only";
    std::fprintf(stderr, "peregrine grow: %s (%s): %s\n", m.mountpoint.c_str(), m.source.c_str(), why.c_str());
    return 1;
  }
  if (g.error != 0) {
    g.message[sizeof g.message - 1] = '\0';
    std::fprintf(stderr, "peregrine grow: %s (%s): %s\n", m.mountpoint.c_str(), m.source.c_str(), g.message);
    return 1;
  }
  print_grown(m.source + " mounted at " + m.mountpoint + " (online)", (g.flags & fs::kGrowFinishedInterrupted) != 0,
              g.old_member_data_size, g.new_member_data_size, g.member_count, g.old_data_area, g.new_data_area);
  return 0;
}

std::string sizes_line(uint64_t before, uint64_t after) { return format_size(before) + " -> " + format_size(after); }

}  // namespace

int cmd_grow(int argc, char** argv) {
  po::options_description opts(kUsage);
  opts.add_options()("help,h", "print this help")(
      "size", po::value<std::string>()->value_name("SIZE"),
      "first extend regular-file members smaller than SIZE to SIZE (K, M, G, T suffixes)")(
      "add", po::value<std::vector<std::string>>()->composing()->value_name("NEW"),
      "add NEW to the volume and restripe onto it (repeat for more; unmounted volume only)")(
      "force,f", "with --add: overwrite a filesystem, partition table or peregrine volume on NEW");
  po::variables_map vm;
  std::vector<std::string> members;
  std::string error;
  if (!parse_command_line(argc, argv, opts, &vm, &members, &error)) {
    std::fprintf(stderr, "peregrine grow: %s\n\n", error.c_str());
    std::cerr << opts << "\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << opts
              << "\nA crash or power loss while grow runs loses nothing: the volume still\n"
                 "mounts at its old size (with a warning) until grow is run again.\n"
                 "A restripe (--add) that was interrupted leaves a volume that refuses to\n"
                 "mount until the same command is run again: it resumes where it stopped.\n";
    return 0;
  }
  if (members.empty()) {
    std::fprintf(stderr, "peregrine grow: no members given\n\n");
    std::cerr << opts << "\n";
    return 2;
  }
  if (vm.count("add")) {
    if (vm.count("size")) {
      std::fprintf(stderr, "peregrine grow: --size and --add do not go together: grow the members first, then add\n");
      return 2;
    }
    for (const std::string& arg : members) {
      if (auto m = peregrine_mount_at(arg)) {
        std::fprintf(stderr,
                     "peregrine grow: %s is the mount point of %s: unmount it first and give its members; adding "
                     "members (a restripe) works on an unmounted volume only\n",
                     arg.c_str(), m->source.c_str());
        return 1;
      }
    }
    return grow_add(members, vm["add"].as<std::vector<std::string>>(), vm.count("force") > 0);
  }
  if (vm.count("force")) {
    std::fprintf(stderr, "peregrine grow: --force goes with --add\n");
    return 2;
  }
  GrowOptions o;
  o.members = members;
  if (vm.count("size")) {
    auto v = parse_size(vm["size"].as<std::string>());
    if (!v) {
      std::fprintf(stderr, "peregrine grow: --size: %s\n", v.status().message().c_str());
      return 2;
    }
    o.size = *v;
  }
  for (const std::string& arg : members) {
    auto m = peregrine_mount_at(arg);
    if (!m) continue;
    if (members.size() > 1 || o.size) {
      std::fprintf(stderr,
                   "peregrine grow: %s is the mount point of %s: give it alone to grow the mounted volume (extend "
                   "file members with truncate first: --size needs the members, so an unmounted volume)\n",
                   arg.c_str(), m->source.c_str());
      return 2;
    }
    return grow_mounted(arg, *m);
  }
  if (const char* stop = std::getenv(kStopAfterEnv)) {
    const int k = std::atoi(stop);
    o.after_step = [k](int step) {
      if (step == k) ::_exit(9);
    };
  }

  auto grown = grow_volume(o);
  if (!grown) {
    std::fprintf(stderr, "peregrine grow: %s\n", grown.status().message().c_str());
    if (grown.status().errnum() == EBUSY && grown.status().message().find("mounted at") != std::string::npos)
      std::fprintf(stderr, "peregrine grow: a mounted volume grows by its mount point: peregrine grow MOUNTPOINT\n");
    return 1;
  }
  const Superblock& a = grown->before;
  const Superblock& b = grown->after;
  print_grown("peregrine volume " + b.volume_uuid.to_string() + (b.label.empty() ? "" : " (" + b.label + ")"),
              grown->finished_interrupted, a.member_data_size, b.member_data_size, b.member_count(),
              a.geometry().volume_size() - a.meta_size, b.geometry().volume_size() - b.meta_size);
  return 0;
}

}  // namespace peregrine::cli
