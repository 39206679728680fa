#include "grow_add.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "copy_progress.h"
#include "peregrine/fs/power_cut_members.h"
#include "peregrine/util/test_hooks.h"
#include "peregrine/volume/restripe.h"
#include "peregrine/volume/size_text.h"

namespace peregrine::cli {
namespace {

constexpr const char* kStopEnv = "PEREGRINE_TEST_RESTRIPE_STOP_AFTER";

[[noreturn]] void stop() {
  std::fflush(stderr);
  ::_exit(9);
}

}  // namespace

int grow_add(const std::vector<std::string>& members, const std::vector<std::string>& new_members, bool force) {
  RestripeOptions o;
  o.members = members;
  o.new_members = new_members;
  o.force = force;
  cli::CopyProgress progress("grow --add");
  std::string hook;
  if (const char* s = test_hook(kStopEnv); s != nullptr && *s != '\0') {
    hook = s;
    std::fprintf(stderr, "peregrine grow: test hook %s=%s is set: this run stops there\n", kStopEnv, s);
  }
  int stop_pct = -1, stop_step = -1, stop_window = -1, windows = 0;
  if (hook.starts_with("copy:"))
    stop_pct = std::atoi(hook.c_str() + 5);
  else if (hook.starts_with("written:"))
    stop_window = std::atoi(hook.c_str() + 8);
  else if (!hook.empty())
    stop_step = std::atoi(hook.c_str());
  o.progress = [&](uint64_t done, uint64_t total) {
    progress("restripe", done, total);
    if (stop_pct >= 0 && total > 0 && done * 100 >= total * static_cast<uint64_t>(stop_pct)) stop();
  };
  // Only with the hook: a step hook makes the cursor copies go one by one.
  if (stop_step >= 0)
    o.after_step = [&](int step) {
      if (step == stop_step) stop();
    };
  if (stop_window >= 0)
    o.after_window_written = [&] {
      if (++windows == stop_window) stop();
    };
  o.note = [](const std::string& line) { std::fprintf(stderr, "peregrine grow: %s\n", line.c_str()); };
  auto power_cut = fs::power_cut_hook_from_env(o.note);
  if (!power_cut) {
    std::fprintf(stderr, "peregrine grow: %s\n", power_cut.status().message().c_str());
    return 1;
  }
  o.prepare_member = *power_cut;

  auto r = restripe_volume(o);
  if (!r) {
    std::fprintf(stderr, "peregrine grow: %s\n", r.status().message().c_str());
    if (r.status().errnum() == EBUSY)
      std::fprintf(stderr,
                   "peregrine grow: a mounted volume gets members by its mount point, while it stays in use: "
                   "peregrine grow --add NEW... MOUNTPOINT\n");
    return 1;
  }
  if (r->already_done) {
    std::printf("peregrine volume %s already has these %u members (a restripe finished before): nothing to do\n",
                r->volume_uuid.to_string().c_str(), r->new_count);
    return 0;
  }
  const double rate = r->copy_seconds > 0 ? static_cast<double>(r->data_bytes) / r->copy_seconds / (1 << 20) : 0;
  std::printf("added %u member%s to peregrine volume %s%s\n", r->new_count - r->old_count,
              r->new_count - r->old_count == 1 ? "" : "s", r->volume_uuid.to_string().c_str(),
              r->resumed ? " (finished an interrupted restripe)" : "");
  std::printf("  %-18s%u -> %u\n", "members:", r->old_count, r->new_count);
  std::printf("  %-18s%s -> %s\n", "volume size:", format_size(r->member_data_size * r->old_count).c_str(),
              format_size(r->member_data_size * r->new_count).c_str());
  std::printf("  %-18s%s -> %s\n", "data area:", format_size(r->member_data_size * r->old_count - r->meta_size).c_str(),
              format_size(r->member_data_size * r->new_count - r->meta_size).c_str());
  std::printf("  %-18s%s in %.1f s (%.0f MiB/s)%s, %llu windows\n", "restriped:", format_size(r->data_bytes).c_str(),
              r->copy_seconds, rate,
              r->hole_bytes ? (", " + format_size(r->hole_bytes) + " of holes skipped").c_str() : "",
              static_cast<unsigned long long>(r->windows));
  std::printf("  members in index order:");
  for (const std::string& m : r->members) std::printf(" %s", m.c_str());
  std::printf("\n");
  return 0;
}

}  // namespace peregrine::cli
