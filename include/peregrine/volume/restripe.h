// Adding members to an unmounted volume (`peregrine grow --add`): the data
// area is restriped from N members onto N + k, so that afterwards every
// file is striped over all of them and the volume holds N + k times the
// member data size. Logical addresses do not change, only where each
// stripe unit sits; the metadata layer sees a larger data area, as after
// `peregrine grow`. Byte layout, the steps and the crash rules:
// docs/format.md, section 5b.
//
// restripe_volume() assembles the volume read-write (every member locked),
// checks the new members as mkfs checks a member, and writes nothing before
// every check passed. Then: the new members' header regions are cleared,
// every superblock copy gets the restripe record (new members first), the
// units move in windows (each window synced, then the cursor in every copy
// advanced), and every copy is rewritten for N + k members. Killed at any
// point, the volume refuses to mount (an incompat feature) until the same
// command runs again, which resumes from the cursor and finishes; until
// the first copy carries the record the old volume is unchanged.
//
// Thread rules: called from one thread; the callbacks run on it (the window
// IO uses one thread per member internally).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "peregrine/backend/member_file.h"
#include "peregrine/util/result.h"
#include "peregrine/volume/superblock.h"

namespace peregrine {

struct RestripeOptions {
  std::vector<std::string> members;      // the volume's members, any order
  std::vector<std::string> new_members;  // to add (a missing regular file is created)
  // Overwrite a new member holding a filesystem, partition table or
  // another peregrine volume.
  bool force = false;
  // Data moved per synced window; two buffers of this size are allocated
  // (the next window is read while one is written).
  uint64_t max_window_bytes = 128 << 20;
  // Bytes of data moved of the total (holes of sparse file members are
  // not read and do not count).
  std::function<void(uint64_t done, uint64_t total)> progress;
  // Tests only. after_step(K): superblock copy K of this run (prepare,
  // every window's cursor, commit) is written and synced.
  // after_window_written: a window's units are written, not yet synced
  // and the cursor not advanced.
  std::function<void(int step)> after_step;
  std::function<void()> after_window_written;
  // Tests only: called for every member (old and new, by its index in the
  // grown volume) before the run writes anything, e.g. to put the
  // power-cut layer over it (MemberFile::route_writes_through).
  std::function<Status(MemberFile& member, uint32_t index)> prepare_member;
  std::function<void(const std::string&)> note;  // lines for the user
};

struct RestripeResult {
  Uuid volume_uuid;
  uint32_t old_count = 0;
  uint32_t new_count = 0;
  uint64_t member_data_size = 0;
  uint64_t meta_size = 0;
  bool resumed = false;       // an interrupted restripe was finished
  bool already_done = false;  // the volume already has the added members: nothing written
  uint64_t data_bytes = 0;    // moved (read and written)
  uint64_t hole_bytes = 0;    // holes zeroed on the target, not read
  uint64_t windows = 0;
  double copy_seconds = 0;
  std::vector<std::string> members;  // paths, member index order (N + k)
};

Expected<RestripeResult> restripe_volume(const RestripeOptions& options);

}  // namespace peregrine
