// `peregrine grow`: extends an unmounted volume's data area over members
// that became larger (a bigger LUN, a longer file). Exit codes: 0 grown,
// 1 refused or failed (nothing to grow, a damaged or mounted volume, ...),
// 2 bad command line.
//
// Test hook: PEREGRINE_TEST_GROW_STOP_AFTER=K makes the command _exit(9)
// right after the K-th superblock copy is written and synced (member 0's
// primary is 1, its backup 2, member 1's primary 3, ...): the crash tests
// use it to stop a grow at every step. Never set it otherwise.
#include <boost/program_options.hpp>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "cli_args.h"
#include "commands.h"
#include "mount_table.h"
#include "peregrine/volume/grow.h"
#include "peregrine/volume/mount_table.h"
#include "peregrine/volume/size_text.h"

namespace peregrine::cli {
namespace {

namespace po = boost::program_options;

constexpr const char* kStopAfterEnv = "PEREGRINE_TEST_GROW_STOP_AFTER";

constexpr const char* kUsage =
    "usage: peregrine grow [--size SIZE] MEMBER...\n\n"
    "Extends the volume whose MEMBERs (all of them, in any order) became larger\n"
    "-- a larger device, a longer file -- over their new space. Existing data\n"
    "stays where it is; the new space is added at the end of the volume. The\n"
    "volume must not be mounted. The smallest member decides, as in mkfs.\n\n"
    "options";

// A mount point given instead of members: growing a mounted volume is not
// supported, so say what to do. Looks in the mount table only: touching
// the mount point would ask its daemon.
Status refuse_mount_point(const std::string& arg) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(arg, ec).lexically_normal();
  if (ec) return Status::ok();
  std::string path = abs.string();
  if (path.size() > 1 && path.back() == '/') path.pop_back();
  auto m = mount_at(resolve_parent(path));
  if (!m || m->fstype != "fuse.peregrine") return Status::ok();
  return Status::error(EBUSY, arg + ": a peregrine volume (" + m->source + ") is mounted at " + m->mountpoint +
                                  "; grow works on an unmounted volume: unmount it first, then run "
                                  "'peregrine grow' over its members");
}

std::string sizes_line(uint64_t before, uint64_t after) {
  return format_size(before) + " -> " + format_size(after);
}

}  // namespace

int cmd_grow(int argc, char** argv) {
  po::options_description opts(kUsage);
  opts.add_options()("help,h", "print this help")(
      "size", po::value<std::string>()->value_name("SIZE"),
      "first extend regular-file members smaller than SIZE to SIZE (K, M, G, T suffixes)");
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
                 "mounts at its old size (with a warning) until grow is run again.\n";
    return 0;
  }
  if (members.empty()) {
    std::fprintf(stderr, "peregrine grow: no members given\n\n");
    std::cerr << opts << "\n";
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
  for (const std::string& m : members) {
    if (Status s = refuse_mount_point(m); !s) {
      std::fprintf(stderr, "peregrine grow: %s\n", s.message().c_str());
      return 1;
    }
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
    return 1;
  }
  const Superblock& a = grown->before;
  const Superblock& b = grown->after;
  const VolumeGeometry ga = a.geometry(), gb = b.geometry();
  std::printf("grew peregrine volume %s%s\n", b.volume_uuid.to_string().c_str(),
              b.label.empty() ? "" : (" (" + b.label + ")").c_str());
  if (grown->finished_interrupted) std::printf("  (finished an interrupted grow)\n");
  std::printf("  %-18s%s\n", "member data size:", sizes_line(ga.member_data_size, gb.member_data_size).c_str());
  std::printf("  %-18s%s\n", "volume size:", sizes_line(ga.volume_size(), gb.volume_size()).c_str());
  std::printf("  %-18s%s\n", "data area:",
              sizes_line(ga.volume_size() - a.meta_size, gb.volume_size() - b.meta_size).c_str());
  return 0;
}

}  // namespace peregrine::cli
