// peregrine: one binary, several commands. Also answers to the names
// mkfs.peregrine, fsck.peregrine, mount.peregrine and umount.fuse.peregrine
// (installed as links).
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "commands.h"

namespace {

using Command = int (*)(int, char**);

struct Entry {
  const char* name;
  Command run;
  const char* summary;
};

constexpr Entry kCommands[] = {
    {"mkfs", peregrine::cli::cmd_mkfs, "create a volume over member drives or files"},
    {"info", peregrine::cli::cmd_info, "assemble members and print the volume's geometry"},
    {"examine", peregrine::cli::cmd_examine, "print what one member records: volume, place, state, last mount"},
    {"scan", peregrine::cli::cmd_scan, "find members, group them by volume, print conf sections and fstab lines"},
    {"fsck", peregrine::cli::cmd_fsck, "check (and repair) a volume"},
    {"mount", peregrine::cli::cmd_mount, "mount a volume as a filesystem"},
    {"stats", peregrine::cli::cmd_stats, "per-drive statistics of a mounted volume"},
    {"sync", peregrine::cli::cmd_sync, "make everything written to a mounted volume durable now"},
    {"config", peregrine::cli::cmd_config, "validate and print the configuration"},
    {"replace", peregrine::cli::cmd_replace, "copy a member to a new drive or file, which takes its place"},
    {"grow", peregrine::cli::cmd_grow, "extend a volume over members that became larger"},
};

void usage(FILE* out) {
  std::fprintf(out,
               "usage: peregrine COMMAND [ARGS...]\n\n"
               "Stripes one POSIX filesystem over several SSDs and serves each drive\n"
               "with its own thread.\n\ncommands:\n");
  for (const Entry& e : kCommands) std::fprintf(out, "  %-8s %s\n", e.name, e.summary);
  std::fprintf(out, "\nRun 'peregrine COMMAND --help' for a command's options.\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::string_view self = argv[0];
  if (auto slash = self.rfind('/'); slash != std::string_view::npos) self.remove_prefix(slash + 1);
  if (self == "mkfs.peregrine") return peregrine::cli::cmd_mkfs(argc, argv);
  if (self == "fsck.peregrine") return peregrine::cli::cmd_fsck(argc, argv);
  if (self == "mount.peregrine") return peregrine::cli::cmd_mount_helper(argc, argv);
  if (self == "umount.fuse.peregrine") return peregrine::cli::cmd_umount_helper(argc, argv);

  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  std::string_view cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    usage(stdout);
    return 0;
  }
  if (cmd == "--version") {
    std::printf("peregrine %s\n", PEREGRINE_VERSION);
    return 0;
  }
  for (const Entry& e : kCommands) {
    if (cmd == e.name) return e.run(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "peregrine: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return 2;
}
