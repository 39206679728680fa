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
#include "peregrine/volume/assembly.h"
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

// Online restripe: the same steps for a volume a daemon serves mounted
// (peregrine grow --add MOUNTPOINT; src/fs/online_restripe.h). The daemon
// holds the members open and locked; these calls take them by reference,
// write exactly what restripe_volume() writes, in the same order, and
// leave it to the caller's hooks to keep the volume's IO off each window
// while it moves. A crash or kill -9 at any point leaves what an
// interrupted restripe_volume() leaves: the offline command resumes it.

// New members checked and prepared, nothing of the volume's written yet.
struct OnlineRestripeStart {
  Superblock sb;                    // the record (cursor 0) over N + k members
  uint64_t generation = 0;          // the highest any copy holds
  std::vector<MemberFile> added;    // index N.. order: open, locked, headers zeroed and synced
  std::vector<std::string> created; // regular files this call created (the caller removes them if it gives up)
};

// Checks `new_members` against the mounted volume as restripe_volume()
// does (the same refusals: not a member already, large enough, no
// filesystem or other volume on it unless `force`; a missing regular file
// is created), then zeroes each one's header region and last MiB.
Expected<OnlineRestripeStart> start_online_restripe(const AssembledVolume& vol,
                                                    const std::vector<std::string>& new_members, bool force);

// What keeps the volume's IO in order while the units move (stripe units).
struct OnlineRestripeHooks {
  // IO must not touch [begin, end) until open_window(); returns once none
  // that did before is in flight.
  std::function<void(uint64_t begin, uint64_t end)> close_window;
  // Units below `cursor` are in their new places, durably (a cursor equal
  // to the window's begin: it was given up, nothing moved).
  std::function<void(uint64_t cursor)> open_window;
  std::function<bool()> stop_requested;  // checked before each window
  // Checked before each window: true while the volume serves IO of its
  // own, which then moves gently (one member and one stripe unit at a
  // time, so the volume's IO never queues behind much of the move's);
  // false: every member at once, at the members' speed.
  std::function<bool()> volume_busy;
  std::function<void()> pace;            // after each window (a rate limit)
  std::function<void(uint64_t done, uint64_t total)> progress;
  // Tests only, as RestripeOptions::after_step: copy K of this run written;
  // `committing` runs right before the commit's first copy.
  std::function<void(int step)> after_step;
  std::function<void()> committing;
  // Tests only: runs once a window's cursor is in every copy; an error
  // from it is handled as one from writing the copies (a failing drive).
  std::function<Status()> cursor_written;
  // Tests only: sets a failed cursor back instead of writing the copies
  // (which keep saying the window moved); an error from it is handled as
  // one from writing them.
  std::function<Status()> set_cursor_back;
  // A failed cursor could not be set back either: some copies may say the
  // window moved while it is served from its old places again, and the
  // offline command, resuming from there, would not copy what is written
  // there from now on. Called with the error before the window opens: the
  // volume must stop taking changes.
  std::function<void(const Status&)> cursor_unsafe;
};

// The record, the windows and the commit over `members` (all N + k, in
// index order: the volume's then start.added). Returns the committed
// superblock (N + k members, no record; member 0's fields). `result`
// (optional) gets the counts. On an error, or a stop between windows, the
// copies keep the record at the last durable cursor, every window is open
// again, and the error says so; the offline command finishes it.
Expected<Superblock> run_online_restripe(std::vector<MemberFile>& members, OnlineRestripeStart& start,
                                         uint64_t max_window_bytes, const OnlineRestripeHooks& hooks,
                                         RestripeResult* result = nullptr);

}  // namespace peregrine
