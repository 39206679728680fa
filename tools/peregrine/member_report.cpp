#include "member_report.h"

#include <sys/stat.h>

#include <cerrno>

#include "mount_table.h"

namespace peregrine::cli {

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
  const bool this_volume = m && (m->source == mount_source_of(*e.superblock) || !m->source.starts_with("peregrine:"));
  if (m && m->fstype == "fuse.peregrine" && this_volume) {
    struct stat st {};
    if (::stat(r.mountpoint.c_str(), &st) != 0 && dead_mount_errno(errno))
      return {"dirty", "its daemon died while mounted " + utc_time(r.mount_time) + ": " +
                           dead_mount_advice(r.mountpoint) + " (the next mount replays the journal)"};
    return {"mounted", "mounted at " + r.mountpoint + " since " + utc_time(r.mount_time) + " (in use now)"};
  }
  return {"dirty", "mounted " + utc_time(r.mount_time) + (r.hostname.empty() ? "" : " on host " + r.hostname) +
                       " and not unmounted cleanly (the next mount replays the journal)"};
}

std::optional<std::string> last_known_path(const MountRecord* r, uint32_t index) {
  if (r == nullptr || index >= r->member_paths.size()) return std::nullopt;
  return r->member_paths[index];
}

nlohmann::json member_json(const Superblock& sb, const MountRecord* r, uint32_t index) {
  std::optional<std::string> last = last_known_path(r, index);
  return {{"index", index},
          {"uuid", sb.member_uuids[index].to_string()},
          {"last_path", last ? nlohmann::json(*last) : nlohmann::json(nullptr)}};
}

}  // namespace peregrine::cli
