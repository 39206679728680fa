// peregrine fsck / fsck.peregrine: check a volume's metadata and, unless
// -n, repair what is safely repairable. Exit codes follow fsck(8): 0 clean,
// 1 errors corrected, 4 errors left uncorrected, 8 operational error,
// 16 usage error.
//
//   peregrine fsck [-n | -y | -a | -p] [-f] [-v] MEMBER...
//   fsck.peregrine ... m1,m2,m3     (fsck(8) passes an fstab spec as one word)
#include <boost/program_options.hpp>
#include <cerrno>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_args.h"
#include "commands.h"
#include "peregrine/fs/volume_runtime.h"
#include "peregrine/meta/fsck.h"
#include "peregrine/volume/copy_restore.h"
#include "peregrine/volume/member_superblocks.h"

namespace po = boost::program_options;

namespace peregrine::cli {
namespace {

constexpr int kUsageError = 16;
constexpr int kOperationalError = 8;

constexpr const char* kUsage =
    "usage: peregrine fsck [-n | -y | -a | -p] [-f] [-v] MEMBER...\n"
    "       fsck.peregrine [-n | -y | -a | -p] [-f] [-v] MEMBER...\n\n"
    "Checks the volume whose members are given (in any order; a comma-separated\n"
    "list counts as several): superblocks (assembly, and both copies on every\n"
    "member), checkpoints, the journal, the directory tree, link counts, extent\n"
    "overlaps and free space. Without -n it repairs what is safely repairable (a\n"
    "damaged superblock copy from the member's other copy, orphans, link counts,\n"
    "leaked space) and writes a new checkpoint. The volume must not be mounted.\n"
    "With -n a member that ends early (truncated, shrunk) is accepted, and the\n"
    "files with data past its end, which is lost, are listed.\n"
    "Exit: 0 clean, 1 errors corrected, 4 errors left, 8 operational error, 16 usage.\n\n";

}  // namespace

int cmd_fsck(int argc, char** argv) {
  bool no_change = false, yes = false, automatic = false, preen = false, force = false, verbose = false;
  std::vector<std::string> positional;
  po::options_description desc("options");
  desc.add_options()("help,h", "print this help")("no-change,n", po::bool_switch(&no_change),
                                                  "only report; open the members read-only")(
      "yes,y", po::bool_switch(&yes), "repair without asking (the default: fsck never asks)")(
      "auto,a", po::bool_switch(&automatic), "same as -y")("preen,p", po::bool_switch(&preen), "same as -y")(
      "force,f", po::bool_switch(&force), "check even if clean (always done)")("verbose,v", po::bool_switch(&verbose),
                                                                               "print the steps");
  po::variables_map vm;
  std::string error;
  if (!parse_command_line(argc, argv, desc, &vm, &positional, &error)) {
    std::fprintf(stderr, "peregrine fsck: %s\n\n%s", error.c_str(), kUsage);
    return kUsageError;
  }
  if (vm.count("help")) {
    std::cout << kUsage << desc << "\n";
    return 0;
  }
  if (no_change && (yes || automatic || preen)) {
    std::fprintf(stderr, "peregrine fsck: -n cannot be combined with -y, -a or -p\n");
    return kUsageError;
  }
  std::vector<std::string> members;
  for (const std::string& p : positional) {
    std::stringstream ss(p);
    std::string item;
    while (std::getline(ss, item, ',')) {
      if (!item.empty()) members.push_back(item);
    }
  }
  if (members.empty()) {
    std::fprintf(stderr, "peregrine fsck: no members given\n\n%s", kUsage);
    return kUsageError;
  }
  auto mode = no_change ? MemberFile::Mode::read_only : MemberFile::Mode::read_write;
  // fsck -n accepts a member that ends early (truncated, shrunk) to list
  // the files that lost data with it; repair refuses it.
  auto rt = fs::open_volume(members, mode, config::Settings::defaults(), {}, /*allow_short_members=*/no_change);
  if (!rt) {
    std::fprintf(stderr, "peregrine fsck: %s\n", rt.status().message().c_str());
    if (rt.status().message().find("smaller than its recorded size") != std::string::npos)
      std::fprintf(stderr, "peregrine fsck: run 'peregrine fsck -n' to list the files with data past its end\n");
    if (rt.status().errnum() == ENODEV)
      std::fprintf(stderr,
                   "peregrine fsck: the metadata area is striped over every member, so without the missing one(s) "
                   "no file can be listed; bring the member back (or restore it from a copy) and run fsck again\n");
    return kOperationalError;
  }
  const AssembledVolume& vol = (*rt)->volume;
  if (verbose) std::fprintf(stderr, "peregrine fsck: volume assembled from %zu members\n", members.size());
  // Superblocks: a copy assembly could not use (corrupt, or differing from
  // the copy it used) is a problem; repair restores it from the good copy.
  // The volume passed assembly, so the good copy is known to fit it.
  int problems = 0, fixed = 0;
  bool operational_error = false;
  for (const DamagedSuperblockCopy& d : vol.damaged_copies) {
    ++problems;
    std::printf("%s\n", d.problem.c_str());
    if (no_change) continue;
    const char* copy = d.offset == kPrimarySuperblockOffset ? "primary" : "backup";
    if (Status s = restore_superblock_copy(vol, d); !s) {
      std::printf("restoring the %s superblock failed: %s\n", copy, s.message().c_str());
      operational_error = true;
      continue;
    }
    ++fixed;
    std::printf("%s\n", describe_restored_copy(vol, d).c_str());
  }
  // Not a problem: the volume is consistent at the smaller size, and only
  // `peregrine grow` finishes it (fsck does not guess the member sizes).
  if (!vol.interrupted_grow.empty()) std::printf("note: %s\n", vol.interrupted_grow.c_str());
  meta::FsckOptions opt;
  opt.repair = !no_change;
  for (const ShortMember& sm : vol.short_members) {
    std::printf("member %s: %llu bytes, the volume needs %llu\n", vol.members[sm.member_index].info().path.c_str(),
                static_cast<unsigned long long>(sm.size_bytes),
                static_cast<unsigned long long>(vol.superblock.member_bytes_needed()));
    const VolumeGeometry& geo = vol.geometry;
    uint64_t have = sm.size_bytes > geo.data_start ? sm.size_bytes - geo.data_start : 0;
    opt.lost.push_back({sm.member_index, have / geo.stripe_unit, vol.members[sm.member_index].info().path});
  }
  meta::FsckReport report = meta::run_fsck(*(*rt)->io, (*rt)->meta_geometry, opt);
  for (const std::string& m : report.messages) std::printf("%s\n", m.c_str());
  problems += report.problems;
  fixed += report.fixed;
  std::printf("peregrine fsck: %d problem(s) found, %d repaired\n", problems, fixed);
  if (operational_error || report.exit_code == kOperationalError) return kOperationalError;
  if (problems == 0) return 0;
  return fixed == problems ? 1 : 4;
}

}  // namespace peregrine::cli
