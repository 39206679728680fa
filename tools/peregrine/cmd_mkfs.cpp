// `peregrine mkfs` / `mkfs.peregrine`: creates a volume over member drives
// or files. Exit codes: 0 created, 1 refused or failed (nothing written
// when a member is refused), 2 bad command line.
#include <boost/program_options.hpp>

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_args.h"
#include "commands.h"
#include "peregrine/volume/describe.h"
#include "peregrine/volume/mkfs.h"
#include "peregrine/volume/size_text.h"

namespace peregrine::cli {
namespace {

namespace po = boost::program_options;

constexpr const char* kUsage =
    "usage: peregrine mkfs [OPTIONS] MEMBER...\n"
    "       mkfs.peregrine [OPTIONS] MEMBER...\n\n"
    "Creates a peregrine volume striped over the MEMBERs (block devices or\n"
    "regular files), in the order given. Refuses members that hold a\n"
    "filesystem, partition table or peregrine volume unless --force.\n\n"
    "options";

// Boost parses the text; size_text gives it the K/M/G meaning.
Expected<uint64_t> size_option(const po::variables_map& vm, const char* name) {
  auto v = parse_size(vm[name].as<std::string>());
  if (!v) return Status::error(EINVAL, std::string("--") + name + ": " + v.status().message());
  return v;
}

}  // namespace

int cmd_mkfs(int argc, char** argv) {
  // Messages name the command as it was invoked: argv[0] is "mkfs" under
  // `peregrine mkfs`, a path ending in mkfs.peregrine under the alias.
  const std::string self = std::filesystem::path(argv[0]).filename().string();
  const char* prog = self == "mkfs.peregrine" ? "mkfs.peregrine" : "peregrine mkfs";
  po::options_description opts(kUsage);
  opts.add_options()("help,h", "print this help")("stripe-unit,s", po::value<std::string>()->value_name("SIZE"),
                                                  "stripe unit, a power of two from 4K to 1M (default 128K)")(
      "label,L", po::value<std::string>()->value_name("LABEL"), "volume label, at most 63 bytes")(
      "size", po::value<std::string>()->value_name("SIZE"),
      "create regular-file members, or extend smaller ones, to SIZE")(
      "bytes-per-inode,i", po::value<std::string>()->value_name("SIZE"),
      "size the metadata area for one file per SIZE of volume (default 64K, at least 1K)")(
      "inodes,N", po::value<std::string>()->value_name("COUNT"), "size the metadata area for COUNT files")(
      "meta-size", po::value<std::string>()->value_name("SIZE"),
      "metadata area size, instead of sizing it for a number of files")(
      "force,f", "overwrite existing filesystems, partition tables and peregrine volumes");
  po::variables_map vm;
  std::vector<std::string> members;
  std::string error;
  if (!parse_command_line(argc, argv, opts, &vm, &members, &error)) {
    std::fprintf(stderr, "%s: %s\n\n", prog, error.c_str());
    std::cerr << opts << "\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << opts
              << "\nSIZE takes a K, M, G or T suffix (powers of 1024).\n\n"
                 "The metadata area holds every inode, directory entry, xattr and extent\n"
                 "(twice: two checkpoint slots, plus a journal). mkfs makes it large enough\n"
                 "for one file per 64K of volume (--bytes-per-inode), or for --inodes files,\n"
                 "at 256 bytes per file (a name of about 150 bytes and a few extents), and\n"
                 "at least 16M. Files with shorter names take less: `df -i` and\n"
                 "`peregrine info` count with what the files there take.\n";
    return 0;
  }
  if (members.empty()) {
    std::fprintf(stderr, "%s: no members given\n\n", prog);
    std::cerr << opts << "\n";
    return 2;
  }

  MkfsOptions o;
  o.members = members;
  o.force = vm.count("force") > 0;
  if (vm.count("label")) o.label = vm["label"].as<std::string>();
  if (vm.count("inodes")) {
    const std::string text = vm["inodes"].as<std::string>();
    uint64_t n = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc() || end != text.data() + text.size() || n == 0) {
      std::fprintf(stderr, "%s: --inodes: '%s' is not a positive whole number\n", prog, text.c_str());
      return 2;
    }
    o.inodes = n;
  }
  for (const char* name : {"stripe-unit", "size", "meta-size", "bytes-per-inode"}) {
    if (!vm.count(name)) continue;
    auto v = size_option(vm, name);
    if (!v) {
      std::fprintf(stderr, "%s: %s\n", prog, v.status().message().c_str());
      return 2;
    }
    std::string n = name;
    if (n == "stripe-unit") {
      if (*v > UINT32_MAX) {
        std::fprintf(stderr, "%s: --stripe-unit: %s is too large\n", prog, format_size(*v).c_str());
        return 2;
      }
      o.stripe_unit = static_cast<uint32_t>(*v);
    } else if (n == "size") {
      o.size = *v;
    } else if (n == "bytes-per-inode") {
      o.bytes_per_inode = *v;
    } else {
      o.meta_size = *v;
    }
  }

  auto made = make_volume(o);
  if (!made) {
    std::fprintf(stderr, "%s: %s\n", prog, made.status().message().c_str());
    return 1;
  }
  std::printf("created peregrine %s", describe_volume(made->superblock, made->members).c_str());
  std::printf("  %-18s%llu files at %llu bytes each (more with shorter names)\n",
              "metadata holds:", static_cast<unsigned long long>(made->files_planned),
              static_cast<unsigned long long>(kMetaBytesPerFile));
  return 0;
}

}  // namespace peregrine::cli
