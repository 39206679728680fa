// `peregrine grow`: extends a volume's data area over members that became
// larger (a bigger LUN, a longer file): an unmounted one given its members
// (volume/grow.h), a mounted one given its mount point (the daemon does it:
// fs/grow_ioctl.h). With --add, restripes the volume onto more members:
// unmounted (grow_add.h) or, given the mount point, mounted (the daemon
// does it: fs/restripe_ioctl.h; this follows the move). Exit codes: 0
// grown, 1 refused or failed (nothing to grow, a damaged volume, ...), 2
// bad command line.
//
// Test hook: PEREGRINE_TEST_GROW_STOP_AFTER=K makes the command (or, in its
// environment, the daemon for an online grow) _exit(9) right after the
// K-th superblock copy is written and synced (member 0's primary is 1, its
// backup 2, member 1's primary 3, ...): the crash tests use it to stop a
// grow at every step. PEREGRINE_TEST_RESTRIPE_STOP_AFTER=K does the same
// in the daemon for an online --add (online_restripe.h). Never set them
// otherwise.
#include <boost/program_options.hpp>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli_args.h"
#include "commands.h"
#include "copy_progress.h"
#include "grow_add.h"
#include "mount_table.h"
#include "peregrine/fs/grow_ioctl.h"
#include "peregrine/fs/restripe_ioctl.h"
#include "peregrine/util/test_hooks.h"
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
    "       peregrine grow [--force] --add NEW [--add NEW]... MEMBER...\n"
    "       peregrine grow [--force] [--rate-limit RATE] --add NEW [--add NEW]... MOUNTPOINT\n\n"
    "Extends the volume whose MEMBERs (all of them, in any order) became larger\n"
    "-- a larger device, a longer file -- over their new space. Existing data\n"
    "stays where it is; the new space is added at the end of the volume. The\n"
    "smallest member decides, as in mkfs. An unmounted volume is given by its\n"
    "members; a mounted one by its mount point (the daemon grows it, and df\n"
    "shows the new size at once).\n\n"
    "With --add, the volume gets the NEW members (block devices or regular\n"
    "files at least as large as a member's part of the volume; a missing file\n"
    "is created as large as the largest member): its data is restriped over all\n"
    "of them, so that each file is striped over every member, and the volume\n"
    "grows by the NEW members' share. An unmounted volume is given by its\n"
    "MEMBERs; a mounted one by its mount point, and stays in use meanwhile (IO\n"
    "to the few MiB being moved at a time waits for them). Progress and the\n"
    "time left go to stderr.\n\n"
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

std::string absolute_path(const std::string& p) {
  std::error_code ec;
  auto abs = std::filesystem::weakly_canonical(std::filesystem::absolute(p, ec), ec);
  return ec ? std::filesystem::absolute(p).lexically_normal().string() : abs.string();
}

// Online: the daemon serving the mount restripes the volume it holds
// (restripe_ioctl.h); this follows the move until it is done. The mount
// point is opened for each call only, so that the volume can be unmounted
// meanwhile.
int restripe_mounted(const MountEntry& m, const std::vector<std::string>& added, bool force,
                     const std::string& rate_text) {
  auto say = [&](const std::string& why) {
    std::fprintf(stderr, "peregrine grow: %s (%s): %s\n", m.mountpoint.c_str(), m.source.c_str(), why.c_str());
    return 1;
  };
  auto q = std::make_unique<fs::RestripeIoctl>();
  q->op = fs::kRestripeStart;
  q->flags = force ? fs::kRestripeForce : 0;
  if (!rate_text.empty()) {
    auto rate = parse_size(rate_text);
    if (!rate || *rate == 0) {
      std::fprintf(stderr, "peregrine grow: --rate-limit %s: not a size per second such as 200M\n",
                   rate_text.c_str());
      return 2;
    }
    q->rate_limit_bytes = *rate;
  }
  size_t at = 0;
  for (const std::string& p : added) {
    const std::string abs = absolute_path(p);
    if (at + abs.size() + 2 > sizeof q->new_members) return say("the new members' paths are too long");
    std::memcpy(q->new_members + at, abs.c_str(), abs.size() + 1);
    at += abs.size() + 1;
  }
  auto call = [&](fs::RestripeIoctl& r) -> bool {
    int fd = ::open(m.mountpoint.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      int e = errno;
      say(dead_mount_errno(e) ? dead_mount_advice(m.mountpoint) : std::strerror(e));
      return false;
    }
    int rc = ::ioctl(fd, fs::kRestripeIoctl, &r);
    int e = errno;
    ::close(fd);
    if (rc == 0) return true;
    std::string why = std::strerror(e);
    if (e == ENOTTY)
      why = "the daemon serving it cannot add members to a mounted volume (an older peregrine?); unmount it, "
            "then run 'peregrine grow --add NEW... MEMBER...'";
    if (e == EPERM) why = "adding members needs root";
    if (e == EROFS) why = "mounted read-only";
    if (dead_mount_errno(e)) why = dead_mount_advice(m.mountpoint);
    say(why);
    return false;
  };
  auto r = std::make_unique<fs::RestripeIoctl>(*q);
  if (!call(*r)) return 1;
  r->message[sizeof r->message - 1] = '\0';
  if (r->error != 0) return say(r->message);
  std::fprintf(stderr, "peregrine grow: %s: restriping from %u onto %u members online (the volume stays in use)\n",
               m.mountpoint.c_str(), r->old_count, r->new_count);
  CopyProgress progress("grow --add");
  while (r->state == fs::kRestripeMoving) {
    progress("restripe", r->done_bytes, r->total_bytes);
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    if (!peregrine_mount_at(m.mountpoint))
      return say("unmounted while the restripe ran: it stopped at a window boundary; run 'peregrine grow --add' "
                 "over the members (all of them, the new ones too) to finish it before mounting again");
    *r = fs::RestripeIoctl{};
    r->op = fs::kRestripeStatus;
    if (!call(*r)) return 1;
  }
  r->message[sizeof r->message - 1] = '\0';
  if (r->state != fs::kRestripeDone) return say(r->message);
  progress("restripe", r->total_bytes, r->total_bytes);
  const double seconds = static_cast<double>(r->elapsed_ms) / 1000;
  std::printf("restriped %s mounted at %s (online): %u -> %u members\n", m.source.c_str(), m.mountpoint.c_str(),
              r->old_count, r->new_count);
  // Holes were found, not copied: the rate is of the data.
  const uint64_t data = r->total_bytes - std::min(r->hole_bytes, r->total_bytes);
  std::printf("  moved %s in %.1f s (%.0f MiB/s%s, %llu windows) while the volume was in use\n",
              format_size(data).c_str(), seconds, seconds > 0 ? static_cast<double>(data) / seconds / (1 << 20) : 0.0,
              r->hole_bytes ? (", " + format_size(r->hole_bytes) + " of holes skipped").c_str() : "",
              static_cast<unsigned long long>(r->windows));
  std::printf("  %-18s%s\n", "data area:", sizes_line(r->old_data_area, r->new_data_area).c_str());
  std::printf("  name the new members wherever the volume's members are listed (/etc/fstab, mount units, "
              "peregrine.conf)\n");
  return 0;
}

}  // namespace

int cmd_grow(int argc, char** argv) {
  po::options_description opts(kUsage);
  opts.add_options()("help,h", "print this help")(
      "size", po::value<std::string>()->value_name("SIZE"),
      "first extend regular-file members smaller than SIZE to SIZE (K, M, G, T suffixes)")(
      "add", po::value<std::vector<std::string>>()->composing()->value_name("NEW"),
      "add NEW to the volume and restripe onto it (repeat for more)")(
      "force,f", "with --add: overwrite a filesystem, partition table or peregrine volume on NEW")(
      "rate-limit", po::value<std::string>()->value_name("RATE"),
      "with --add on a mounted volume: move at most RATE bytes per second (K, M, G suffixes; default: as fast "
      "as the members go)");
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
    const std::string rate = vm.count("rate-limit") ? vm["rate-limit"].as<std::string>() : std::string();
    for (const std::string& arg : members) {
      auto m = peregrine_mount_at(arg);
      if (!m) continue;
      if (members.size() > 1) {
        std::fprintf(stderr,
                     "peregrine grow: %s is the mount point of %s: give it alone to add members to the mounted "
                     "volume\n",
                     arg.c_str(), m->source.c_str());
        return 2;
      }
      return restripe_mounted(*m, vm["add"].as<std::vector<std::string>>(), vm.count("force") > 0, rate);
    }
    if (!rate.empty()) {
      std::fprintf(stderr, "peregrine grow: --rate-limit is for a mounted volume (give its mount point)\n");
      return 2;
    }
    return grow_add(members, vm["add"].as<std::vector<std::string>>(), vm.count("force") > 0);
  }
  if (vm.count("force") || vm.count("rate-limit")) {
    std::fprintf(stderr, "peregrine grow: --%s goes with --add\n", vm.count("force") ? "force" : "rate-limit");
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
  if (const char* stop = test_hook(kStopAfterEnv)) {
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
