#include "member_report.h"

#include <sys/stat.h>

#include <cerrno>
#include <ctime>

#include "mount_table.h"

namespace peregrine::cli {

std::string utc_time(uint64_t seconds) {
  std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  char buf[32];
  if (gmtime_r(&t, &tm) == nullptr || std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
    return std::to_string(seconds);
  return buf;
}

std::string mount_source_of(const Superblock& sb) {
  return "peregrine:" + (sb.label.empty() ? sb.volume_uuid.to_string() : sb.label);
}

MountState mount_state(const MemberExamination& e) {
  if (!e.mount_record) {
    std::string why = e.mount_record_problem.empty()
                          ? "no mount recorded (never mounted, or only by a peregrine that keeps no mount record)"
                          : e.mount_record_problem;
    return {"unknown", why};
  }
  const MountRecord& r = *e.mount_record;
  if (r.state == MountRecord::State::kUnmountedCleanly)
    return {"clean", "unmounted cleanly " + utc_time(r.unmount_time)};
  // The record says mounted: live if the mount table shows this volume at
  // that mount point (on this host), else its daemon died. A source other
  // than peregrine:NAME is what the user wrote (mount(8)'s SPEC, a volume
  // NAME): it cannot be told from this volume's, so the place decides.
  auto m = mount_at(r.mountpoint);
  const bool this_volume =
      m && (m->source == mount_source_of(*e.superblock) || !m->source.starts_with("peregrine:"));
  if (m && m->fstype == "fuse.peregrine" && this_volume) {
    struct stat st{};
    if (::stat(r.mountpoint.c_str(), &st) != 0 && errno == ENOTCONN)
      return {"dirty", "its daemon died while mounted " + utc_time(r.mount_time) + ": " +
                           dead_mount_advice(r.mountpoint) + " (the next mount replays the journal)"};
    return {"mounted", "mounted at " + r.mountpoint + " since " + utc_time(r.mount_time) + " (in use now)"};
  }
  return {"dirty", "mounted " + utc_time(r.mount_time) + (r.hostname.empty() ? "" : " on host " + r.hostname) +
                       " and not unmounted cleanly (the next mount replays the journal)"};
}

}  // namespace peregrine::cli
