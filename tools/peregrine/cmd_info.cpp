// `peregrine info MEMBER...`: assembles the members read-only and prints
// the volume's geometry, or the reason assembly refused them. Never writes.
// Exit codes: 0 assembled, 1 refused, 2 bad command line.
#include <boost/program_options.hpp>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "cli_args.h"
#include "commands.h"
#include "peregrine/volume/assembly.h"
#include "peregrine/volume/describe.h"

namespace peregrine::cli {

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

  auto vol = assemble(members, MemberFile::Mode::read_only);
  if (!vol) {
    std::fprintf(stderr, "peregrine info: %s\n", vol.status().message().c_str());
    return 1;
  }
  for (const std::string& w : vol->warnings) std::fprintf(stderr, "peregrine info: warning: %s\n", w.c_str());
  std::vector<std::string> paths;
  for (const MemberFile& m : vol->members) paths.push_back(m.info().path);
  std::printf("%s", describe_volume(vol->superblock, paths).c_str());
  return 0;
}

}  // namespace peregrine::cli
