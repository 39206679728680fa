// Replacing one member of an unmounted volume by another drive or file
// (`peregrine replace`): NEW gets a verified copy of OLD's bytes and takes
// OLD's place and identity (same member UUID and index); OLD is then no
// member. Byte layout and the steps: docs/format.md, section 9.
//
// replace_member() assembles the volume read-write from the given members
// (OLD among them), so it holds every member's exclusive lock and refuses
// a volume in use or not assemblable. NEW is checked as mkfs checks a
// member and nothing is written to it before every check passed; nothing
// is written to OLD or the other members before NEW reads back as a
// faithful copy. The commit is ordered so that at every point the volume
// assembles with OLD or with NEW: NEW's primary superblock, sync, NEW's
// backup, sync, then OLD's primary is zeroed, sync, OLD's backup and mount
// record, sync.
//
// Thread rules: called from one thread; the callbacks run on it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "peregrine/util/result.h"
#include "peregrine/volume/member_copy.h"
#include "peregrine/volume/uuid.h"

namespace peregrine {

struct ReplaceOptions {
  std::vector<std::string> members;  // every member of the volume, OLD among them, any order
  std::string old_member;
  std::string new_member;
  // Overwrite a NEW that holds a filesystem, partition table or peregrine
  // superblock; also redo an interrupted replace after either copy was used.
  bool force = false;
  CopyTuning tuning;
  // Phases "copy" and "verify": bytes done of total.
  std::function<void(std::string_view phase, uint64_t done, uint64_t total)> progress;
  // Told after each step that is on disk: "copy" (synced), "verify",
  // "new-primary", "new-backup", "old-primary", "old-backup". Tests stop
  // the process there.
  std::function<void(std::string_view step)> after_step;
  // Tests only: called for OLD (with its index in the volume) and for NEW
  // (with the volume's member count as its index, so that the two differ)
  // before the run writes anything, e.g. to put the power-cut layer over
  // them (MemberFile::route_writes_through).
  std::function<Status(MemberFile& member, uint32_t index)> prepare_member;
  // Lines for the user: assembly warnings, what an earlier run left.
  std::function<void(const std::string&)> note;
};

struct ReplaceResult {
  bool already_done = false;  // OLD was replaced by NEW before: nothing written
  // NEW already held a copy that matched OLD (a replace interrupted in the
  // switch): compared, not copied again; verify_seconds is the comparison.
  bool finished_earlier_copy = false;
  uint32_t member_index = 0;
  uint32_t member_count = 0;
  Uuid volume_uuid;
  Uuid member_uuid;
  bool created = false;     // NEW was created as a regular file
  uint64_t data_bytes = 0;  // copied
  uint64_t hole_bytes = 0;  // zeroed, not copied (OLD's holes)
  double copy_seconds = 0;
  double verify_seconds = 0;
};

Expected<ReplaceResult> replace_member(const ReplaceOptions& options);

}  // namespace peregrine
