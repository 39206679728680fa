// What `peregrine examine` and `peregrine scan` both say about a member: its
// mount state (clean, mounted, dirty) read from the mount record and the
// mount table, and times as people read them. Main thread only (reads the
// mount table).
#pragma once

#include <cstdint>
#include <string>

#include "peregrine/volume/member_examination.h"

namespace peregrine::cli {

// "2026-11-23 12:00:00 UTC".
std::string utc_time(uint64_t seconds);

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

}  // namespace peregrine::cli
