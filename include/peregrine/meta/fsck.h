// fsck logic for the metadata area: checks checkpoints and the journal,
// directory tree reachability, link counts, extents (inside the data area,
// no overlaps), free-space accounting, symlink sizes, the orphan list; with
// repair, fixes what is safely repairable and writes a new checkpoint.
//
// Repairs: orphan-list inodes and unreachable inodes with no links are
// freed (their space returns); unreachable inodes that still have links are
// moved to /lost+found as "#<ino>"; entries naming missing inodes and extra
// links to directories are removed; link counts, symlink sizes and the
// inode counter are corrected; the overlapping part of an extent that
// overlaps an earlier one (by inode number) is unmapped, as are extents
// outside the data area (those file ranges then read as zeros).
//
// Must run on an unmounted volume.
// The lead wires `peregrine fsck` / fsck.peregrine to run_fsck().
//
// Thread rules: single-threaded; blocking VolumeIo.
#pragma once

#include <string>
#include <vector>

#include "peregrine/meta/checkpoint.h"
#include "peregrine/meta/journal.h"
#include "peregrine/meta/model.h"
#include "peregrine/meta/types.h"
#include "peregrine/util/result.h"
#include "peregrine/volume/volume_io.h"

namespace peregrine::meta {

// A member that ends early: every stripe unit of its from `first_lost_row`
// on (row = stripe div member_count) is gone or cut.
struct LostMember {
  uint32_t index = 0;
  uint64_t first_lost_row = 0;
  std::string name;  // for messages
};

struct FsckOptions {
  bool repair = false;                // false = fsck -n: report only, write nothing
  uint64_t journal_size = 0;          // as Options::journal_size at mount (0 = default)
  std::vector<LostMember> lost = {};  // fsck lists the files with data there
};

struct FsckReport {
  std::vector<std::string> messages;  // one line each, for people
  int problems = 0;                   // damage found
  int fixed = 0;                      // of which repaired
  // fsck(8) exit code: 0 clean, 1 errors corrected, 4 errors left
  // uncorrected, 8 operational error.
  int exit_code = 0;
};

// The metadata state as mount would see it: newest valid checkpoint + the
// journal replayed on top. Used by fsck and by tests that plant damage.
struct LoadedMetadata {
  MetaLayout layout;
  bool fresh = false;       // never written: nothing to check
  CheckpointHeader header;  // of the checkpoint loaded
  Model model;
  ReplayResult replay;
  std::vector<std::string> notes;  // what was found on the way
};
Expected<LoadedMetadata> load_metadata(VolumeIo& io, const Geometry& g, uint64_t journal_size = 0);
// Writes `m.model` as the next checkpoint (seq + 1, other slot), with the
// journal starting after everything replayed.
Status store_metadata(VolumeIo& io, const Geometry& g, LoadedMetadata& m);

// Checks (and with repair, fixes) a model in memory. Appends to *report.
void check_model(Model& m, const Geometry& g, bool repair, FsckReport* report);

// The files (by path; unreachable ones as "#ino") that have data on the
// lost part of a member, each with the bytes of its data there.
std::vector<std::pair<std::string, uint64_t>> files_with_lost_data(const Model& m, const Geometry& g,
                                                                   const LostMember& lost);

// Everything: load, check, repair, store.
FsckReport run_fsck(VolumeIo& io, const Geometry& g, const FsckOptions& opt);

}  // namespace peregrine::meta
