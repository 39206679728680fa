// `peregrine info MEMBER...`: assembles the members read-only and prints
// the volume's geometry and how full its metadata area is (newest
// checkpoint plus the journal after it, read as fsck -n reads them), or the
// reason assembly refused them. Never writes.
// Exit codes: 0 assembled, 1 refused, 2 bad command line.
#include <boost/program_options.hpp>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "cli_args.h"
#include "commands.h"
#include "peregrine/fs/volume_runtime.h"
#include "peregrine/meta/fsck.h"
#include "peregrine/meta/space.h"
#include "peregrine/volume/describe.h"
#include "peregrine/volume/size_text.h"

namespace peregrine::cli {

namespace {

std::string percent(uint64_t part, uint64_t whole) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", whole == 0 ? 100.0 : 100.0 * static_cast<double>(part) / whole);
  return buf;
}

// The metadata area's use, as statfs reports it once mounted (space.h).
std::string describe_metadata_use(fs::VolumeRuntime& rt) {
  auto lm = meta::load_metadata(*rt.io, rt.meta_geometry);
  if (!lm) return "  metadata use:     unknown: " + lm.status().message() + " (run peregrine fsck -n)\n";
  meta::Model fresh;
  if (lm->fresh) fresh = meta::Model::make_fresh(0);
  const meta::Model& m = lm->fresh ? fresh : lm->model;
  const meta::MetaSpace sp{lm->layout.max_body(), m.body_bytes, m.inodes.size()};
  std::string out;
  out += "  metadata split:   journal " + format_size(lm->layout.journal_size) + ", two checkpoint slots of " +
         format_size(lm->layout.slot_size) + "\n";
  out += "  metadata use:     " + format_size(sp.used) + " of " + format_size(sp.capacity) + " (" +
         percent(sp.used, sp.capacity) + ") for " + std::to_string(sp.inodes) + " inodes" +
         (lm->fresh ? " (never mounted)" : "") + "\n";
  out += "  files free:       about " + std::to_string(sp.files_free()) + " more, at " +
         std::to_string(sp.bytes_per_file()) + " bytes each (what the files there take on average, at least " +
         std::to_string(meta::MetaSpace::kMinFileBytes) + ")\n";
  return out;
}

}  // namespace

int cmd_info(int argc, char** argv) {
  namespace po = boost::program_options;
  po::options_description opts(
      "usage: peregrine info MEMBER...\n\n"
      "Assembles the MEMBERs (in any order) read-only, checks that they form\n"
      "one complete volume and prints its geometry.\n\noptions");
  opts.add_options()("help,h", "print this help");
  po::variables_map vm;
  std::vector<std::string> members;
  std::string error;
  if (!parse_command_line(argc, argv, opts, &vm, &members, &error)) {
    std::fprintf(stderr, "peregrine info: %s\n\n", error.c_str());
    std::cerr << opts << "\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return 0;
  }
  if (members.empty()) {
    std::fprintf(stderr, "peregrine info: no members given\n\n");
    std::cerr << opts << "\n";
    return 2;
  }

  auto rt = fs::open_volume(members, MemberFile::Mode::read_only, config::Settings::defaults());
  if (!rt) {
    std::fprintf(stderr, "peregrine info: %s\n", rt.status().message().c_str());
    return 1;
  }
  const AssembledVolume& vol = (*rt)->volume;
  for (const std::string& w : vol.warnings) std::fprintf(stderr, "peregrine info: warning: %s\n", w.c_str());
  std::vector<std::string> paths;
  for (const MemberFile& m : vol.members) paths.push_back(m.info().path);
  std::printf("%s", describe_volume(vol.superblock, paths).c_str());
  std::printf("%s", describe_metadata_use(**rt).c_str());
  return 0;
}

}  // namespace peregrine::cli
