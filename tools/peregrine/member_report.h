// What `peregrine examine` and `peregrine scan` both say about a member: its
// mount state (clean, mounted, dirty) read from the mount record and the
// mount table, and the members of its volume as their JSON lists them (the
// text table is describe_members, volume/describe.h, which `peregrine info`
// prints too).
// Thread rules: main thread only (reads the mount table).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "peregrine/volume/describe.h"
#include "peregrine/volume/member_examination.h"

namespace peregrine::cli {

struct MountState {
  // "clean": unmounted cleanly; "mounted": its mount is live now (the
  // mount table shows it); "dirty": mounted and never unmounted cleanly (a
  // crash, or a kill: the next mount replays the journal); "unknown": no
  // mount record (never mounted, or only by a version that keeps none).
  std::string name;
  std::string detail;  // one sentence for people
};

// REQUIRES: e.is_member().
MountState mount_state(const MemberExamination& e);

// The source a live mount of the volume shows in the mount table when it
// was given none ("peregrine:LABEL", or "peregrine:UUID" without a label;
// mount(8) and `peregrine mount NAME` show what the user wrote instead).
std::string mount_source_of(const Superblock& sb);

// Where member `index` was at the mount `r` records (null: none recorded).
std::optional<std::string> last_known_path(const MountRecord* r, uint32_t index);

// Member `index` of the volume as the JSON of examine and scan lists it:
// index, uuid and last_path (null when not recorded); each adds its own.
nlohmann::json member_json(const Superblock& sb, const MountRecord* r, uint32_t index);

}  // namespace peregrine::cli
