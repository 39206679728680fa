// `peregrine replace [--force] MEMBER... --old OLD --new NEW`: replaces one
// member of an unmounted volume by another drive or file (the copy, the
// check and the crash-safe switch: peregrine/volume/replace.h). Exit codes:
// 0 replaced (or replaced before), 1 refused or failed, 2 bad command line.
//
// Test hook: PEREGRINE_TEST_REPLACE_STOP_AFTER=STEP makes the process
// _exit(9) right after STEP ("copy", "verify", "new-primary", "new-backup",
// "old-primary", "old-backup"), or, as "copy:PCT", once PCT percent of the
// copy is done, with IO still in flight: what a crash or kill -9 leaves.
// Never set it outside tests; the command says so on stderr when it is.
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/program_options.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "cli_args.h"
#include "commands.h"
#include "copy_progress.h"
#include "mount_table.h"
#include "peregrine/fs/power_cut_members.h"
#include "peregrine/fs/replace_ioctl.h"
#include "peregrine/util/test_hooks.h"
#include "peregrine/volume/mount_table.h"
#include "peregrine/volume/replace.h"
#include "peregrine/volume/size_text.h"

namespace peregrine::cli {
namespace {

namespace po = boost::program_options;

constexpr const char* kStopEnv = "PEREGRINE_TEST_REPLACE_STOP_AFTER";

constexpr const char* kUsage =
    "usage: peregrine replace [--force] MEMBER... --old OLD --new NEW\n"
    "       peregrine replace [--force] [--rate-limit RATE] --old OLD --new NEW MOUNTPOINT\n\n"
    "Replaces member OLD of a volume by NEW, a block device or regular file at\n"
    "least as large as OLD's part of the volume (a regular file that does not\n"
    "exist is created with OLD's size). NEW gets a copy of OLD's contents, then\n"
    "becomes the member: it takes OLD's member UUID and index, and OLD's\n"
    "superblocks are cleared. Refuses a NEW that holds a filesystem, partition\n"
    "table or peregrine volume unless --force.\n\n"
    "An unmounted volume is given by its MEMBERs (every member, OLD among them,\n"
    "in any order): the copy is read back and checked before the switch. If the\n"
    "command is interrupted, run it again: it copies again and finishes, or says\n"
    "that the replace is done.\n\n"
    "A mounted volume is given by its MOUNTPOINT: the daemon serving it copies\n"
    "OLD to NEW while the volume stays in use (every write reaches both from\n"
    "the start), then switches. Progress goes to stderr and to 'peregrine stats';\n"
    "interrupting this command does not stop the replace. A crash before the\n"
    "switch leaves OLD the member: mount as before and run the command again.\n\n"
    "options";

// A directory given where members are expected: most likely the mount point
// of the volume. Checked in the mount table before anything touches the
// path (the stat of a mount point whose daemon is stopped would hang).
Status refuse_mountpoint(const std::string& arg) {
  std::error_code ec;
  std::string abs = resolve_parent(std::filesystem::absolute(arg, ec).lexically_normal().string());
  if (abs.size() > 1 && abs.back() == '/') abs.pop_back();
  if (auto m = mount_at(abs); m && m->fstype == "fuse.peregrine")
    return Status::error(EBUSY, arg + ": a peregrine volume (" + m->source + ") is mounted at " + abs +
                                    ": give its mount point alone to replace a member online, or unmount it and "
                                    "give its members");
  struct stat st {};
  if (::stat(arg.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return Status::error(EINVAL, arg + ": a directory, not a member (give the members of the unmounted volume)");
  return Status::ok();
}

std::string absolute_path(const std::string& p) {
  std::error_code ec;
  auto abs = std::filesystem::weakly_canonical(std::filesystem::absolute(p, ec), ec);
  return ec ? std::filesystem::absolute(p).lexically_normal().string() : abs.string();
}

// Online: the daemon serving the mount copies and switches
// (replace_ioctl.h); this follows its progress until it is done.
int replace_mounted(const MountEntry& m, const std::string& old_member, const std::string& new_member, bool force,
                    const std::string& rate_text) {
  auto say = [&](const std::string& why) {
    std::fprintf(stderr, "peregrine replace: %s (%s): %s\n", m.mountpoint.c_str(), m.source.c_str(), why.c_str());
    return 1;
  };
  fs::ReplaceIoctl q{};
  q.op = fs::kReplaceStart;
  q.flags = force ? fs::kReplaceForce : 0;
  if (!rate_text.empty()) {
    auto rate = parse_size(rate_text);
    if (!rate || *rate == 0) {
      std::fprintf(stderr, "peregrine replace: --rate-limit %s: not a size per second such as 200M\n",
                   rate_text.c_str());
      return 2;
    }
    q.rate_limit_bytes = *rate;
  }
  const std::string old_abs = absolute_path(old_member), new_abs = absolute_path(new_member);
  if (old_abs.size() >= sizeof q.old_member || new_abs.size() >= sizeof q.new_member)
    return say("a member path is too long");
  std::snprintf(q.old_member, sizeof q.old_member, "%s", old_abs.c_str());
  std::snprintf(q.new_member, sizeof q.new_member, "%s", new_abs.c_str());
  // The mount point is opened for each call only, so that the volume can
  // be unmounted while this follows the copy (the unmount gives it up).
  auto call = [&](fs::ReplaceIoctl& r) -> bool {
    int fd = ::open(m.mountpoint.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      int e = errno;
      say(dead_mount_errno(e) ? dead_mount_advice(m.mountpoint) : std::strerror(e));
      return false;
    }
    int rc = ::ioctl(fd, fs::kReplaceIoctl, &r);
    int e = errno;
    ::close(fd);
    if (rc == 0) return true;
    std::string why = std::strerror(e);
    if (e == ENOTTY)
      why = "the daemon serving it cannot replace a member of a mounted volume (an older peregrine?); unmount it, "
            "then run 'peregrine replace' over its members";
    if (e == EPERM) why = "replacing a member needs root";
    if (e == EROFS) why = "mounted read-only";
    if (dead_mount_errno(e)) why = dead_mount_advice(m.mountpoint);
    say(why);
    return false;
  };
  fs::ReplaceIoctl r = q;
  if (!call(r)) return 1;
  if (r.error != 0) {
    r.message[sizeof r.message - 1] = '\0';
    return say(r.message);
  }
  std::fprintf(stderr, "peregrine replace: member %u of %s: %s -> %s, online (the volume stays in use)\n",
               r.member_index, m.mountpoint.c_str(), old_abs.c_str(), new_abs.c_str());
  cli::CopyProgress progress("replace");
  while (r.state == fs::kReplaceCopying || r.state == fs::kReplaceSwitching) {
    progress("copy", r.done_bytes, r.total_bytes);
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    if (!peregrine_mount_at(m.mountpoint))
      return say("unmounted while the copy ran: the replace gave up, and " + old_abs +
                 " is still the member (run the command again once it is mounted)");
    r = fs::ReplaceIoctl{};
    r.op = fs::kReplaceStatus;
    if (!call(r)) return 1;
  }
  r.message[sizeof r.message - 1] = '\0';
  if (r.state != fs::kReplaceDone) return say(r.message);
  progress("copy", r.total_bytes, r.total_bytes);
  const double seconds = static_cast<double>(r.elapsed_ms) / 1000;
  std::printf("replaced member index %u of %s (online): %s -> %s\n", r.member_index, m.source.c_str(),
              old_abs.c_str(), new_abs.c_str());
  std::printf("  copied %s in %.1f s (%.0f MiB/s) while the volume was in use\n",
              format_size(r.total_bytes).c_str(), seconds,
              seconds > 0 ? static_cast<double>(r.total_bytes) / seconds / (1 << 20) : 0.0);
  std::printf("  %s is no longer a member; name %s in its place where the volume's members are listed "
              "(/etc/fstab, mount units)\n",
              old_abs.c_str(), new_abs.c_str());
  return 0;
}

}  // namespace

int cmd_replace(int argc, char** argv) {
  po::options_description opts(kUsage);
  opts.add_options()("help,h", "print this help")("old", po::value<std::string>()->value_name("OLD"),
                                                  "the member to replace (one of the MEMBERs)")(
      "new", po::value<std::string>()->value_name("NEW"), "the drive or file that takes its place")(
      "force,f", "overwrite a filesystem, partition table or peregrine volume on NEW")(
      "rate-limit", po::value<std::string>()->value_name("RATE"),
      "mounted volume: copy at most RATE bytes per second (K, M, G suffixes; default: as fast as the "
      "members go)");
  po::variables_map vm;
  std::vector<std::string> members;
  std::string error;
  if (!parse_command_line(argc, argv, opts, &vm, &members, &error)) {
    std::fprintf(stderr, "peregrine replace: %s\n\n", error.c_str());
    std::cerr << opts << "\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << opts
              << "\nThe copy moves every byte of OLD's part of the volume (holes of a sparse\n"
                 "file member are skipped) at about the sequential speed of the slower of\n"
                 "OLD and NEW, then reads NEW back once. A crash leaves the volume usable\n"
                 "with OLD (or, in the last steps, with NEW): run the command again.\n";
    return 0;
  }
  if (members.size() == 1 && vm.count("old") && vm.count("new"))
    if (auto m = peregrine_mount_at(members.front()))
      return replace_mounted(*m, vm["old"].as<std::string>(), vm["new"].as<std::string>(), vm.count("force") > 0,
                             vm.count("rate-limit") ? vm["rate-limit"].as<std::string>() : std::string());
  if (vm.count("rate-limit")) {
    std::fprintf(stderr, "peregrine replace: --rate-limit is for a mounted volume (give its mount point)\n");
    return 2;
  }
  for (const std::string& m : members) {
    if (Status s = refuse_mountpoint(m); !s) {
      std::fprintf(stderr, "peregrine replace: %s\n", s.message().c_str());
      return 1;
    }
  }
  if (members.empty() || !vm.count("old") || !vm.count("new")) {
    std::fprintf(stderr, "peregrine replace: give the volume's members, --old and --new\n\n");
    std::cerr << opts << "\n";
    return 2;
  }

  ReplaceOptions o;
  o.members = members;
  o.old_member = vm["old"].as<std::string>();
  o.new_member = vm["new"].as<std::string>();
  o.force = vm.count("force") > 0;
  cli::CopyProgress progress("replace");
  std::string stop;
  if (const char* s = test_hook(kStopEnv); s != nullptr && *s != '\0') {
    stop = s;
    std::fprintf(stderr, "peregrine replace: test hook %s=%s is set: this run stops there\n", kStopEnv, s);
  }
  int stop_pct = -1;
  if (stop.starts_with("copy:")) stop_pct = std::atoi(stop.c_str() + 5);
  o.progress = [&](std::string_view phase, uint64_t done, uint64_t total) {
    progress(phase, done, total);
    if (stop_pct >= 0 && phase == "copy" && total > 0 && done * 100 >= total * static_cast<uint64_t>(stop_pct) &&
        done < total)
      ::_exit(9);
  };
  o.after_step = [&](std::string_view step) {
    if (step == stop) {
      std::fflush(stderr);
      ::_exit(9);
    }
  };
  o.note = [](const std::string& line) { std::fprintf(stderr, "peregrine replace: %s\n", line.c_str()); };
  auto power_cut = fs::power_cut_hook_from_env(o.note);
  if (!power_cut) {
    std::fprintf(stderr, "peregrine replace: %s\n", power_cut.status().message().c_str());
    return 1;
  }
  o.prepare_member = *power_cut;

  auto r = replace_member(o);
  if (!r) {
    std::fprintf(stderr, "peregrine replace: %s\n", r.status().message().c_str());
    if (r.status().errnum() == EBUSY)
      std::fprintf(stderr,
                   "peregrine replace: to replace a member of a mounted volume, give its mount point instead "
                   "of its members\n");
    return 1;
  }
  if (r->already_done) {
    std::printf("%s was already replaced by %s (member index %u of %u of volume %s): nothing to do\n",
                o.old_member.c_str(), o.new_member.c_str(), r->member_index, r->member_count,
                r->volume_uuid.to_string().c_str());
    return 0;
  }
  const double rate = r->copy_seconds > 0 ? static_cast<double>(r->data_bytes) / r->copy_seconds / (1 << 20) : 0;
  std::printf("replaced member index %u of %u of volume %s: %s -> %s\n", r->member_index, r->member_count,
              r->volume_uuid.to_string().c_str(), o.old_member.c_str(), o.new_member.c_str());
  if (r->finished_earlier_copy)
    std::printf("  the copy an interrupted run made matched %s (compared in %.1f s): switched over\n",
                o.old_member.c_str(), r->verify_seconds);
  else
    std::printf("  copied %s in %.1f s (%.0f MiB/s)%s, verified in %.1f s\n", format_size(r->data_bytes).c_str(),
                r->copy_seconds, rate,
                r->hole_bytes ? (", " + format_size(r->hole_bytes) + " of holes skipped").c_str() : "",
                r->verify_seconds);
  std::printf("  %s is no longer a member; mount the volume with %s in its place\n", o.old_member.c_str(),
              o.new_member.c_str());
  return 0;
}

}  // namespace peregrine::cli
