// `peregrine sync`: makes everything written to mounted volumes durable
// now. sync(1) and syncfs(2) write the kernel's dirty pages to the daemon
// but never ask a /dev/fuse daemon to make them durable (the kernel sends
// FUSE_SYNCFS only to virtiofs), and syncfs can return before the daemon
// has the writebacks it started. So the command takes three steps: syncfs
// on the mount, which hands the dirty pages over and reports writeback
// errors; an fsync of each file open for writing, which waits for that
// file's writebacks (open_files_sync.h; a closed file's close waited for
// its own); then an fsync of the root directory, which the daemon answers
// once the drives' caches are flushed and the whole journal is committed
// (src/fs/fs_dir.cpp, op_fsyncdir). Exit codes: 0 durable, 1 a volume
// could not be synced (not a peregrine mount, dead, an IO error, an open
// file it could not reach), 2 bad command line. Main thread only.
#include <fcntl.h>
#include <unistd.h>

#include <boost/program_options.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "cli_args.h"
#include "commands.h"
#include "mount_table.h"
#include "open_files_sync.h"
#include "peregrine/util/result.h"

namespace peregrine::cli {
namespace {

namespace po = boost::program_options;

constexpr const char* kUsage =
    "usage: peregrine sync [-v] PATH...\n\n"
    "Makes everything written so far to the peregrine volume that holds each\n"
    "PATH (its mount point or any path on it) durable: the page cache's dirty\n"
    "pages reach the daemon, the drives' write caches are flushed and the\n"
    "journal is committed. A crash or power cut after it returns loses none\n"
    "of it. Plain sync(1) and syncfs(2) do not reach a FUSE daemon.\n\n"
    "options";

// One volume, by its mount point: syncfs for the page cache, the open
// files' fsyncs for the writebacks syncfs did not wait for, then fsync of
// the root for the daemon's part. Errors name the path and the step.
Status sync_volume(const std::string& root) {
  int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    if (dead_mount_errno(e)) return Status::error(e, dead_mount_advice(root));
    return Status::error(e, root + ": cannot open the mount root: " + std::strerror(e));
  }
  Status out = Status::ok();
  if (::syncfs(fd) != 0) {
    int e = errno;
    out = Status::error(e, root + ": writing the page cache back failed (syncfs): " + std::strerror(e) +
                               "; what did reach the volume is made durable, the rest may be lost");
  }
  if (Status st = fsync_files_open_for_writing(fd, root); !st) {
    out = out ? st : Status::error(out.errnum(), out.message() + "; " + st.message());
  }
  if (::fsync(fd) != 0) {
    int e = errno;
    std::string why = e == EIO ? " (a drive or the journal failed: see the daemon's log)" : "";
    std::string msg = root + ": making the volume durable failed: " + std::strerror(e) + why;
    out = out ? Status::error(e, msg) : Status::error(out.errnum(), out.message() + "; " + msg);
  }
  ::close(fd);
  return out;
}

}  // namespace

int cmd_sync(int argc, char** argv) {
  po::options_description opts(kUsage);
  opts.add_options()("help,h", "print this help")("verbose,v", "say which volume was made durable");
  po::variables_map vm;
  std::vector<std::string> paths;
  std::string error;
  if (!parse_command_line(argc, argv, opts, &vm, &paths, &error)) {
    std::fprintf(stderr, "peregrine sync: %s\n\n", error.c_str());
    std::cerr << opts << "\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << opts
              << "\nEach volume is synced once, however many of its paths are given; the\n"
                 "command goes on to the next PATH after a failure and exits 1 if any failed.\n"
                 "`sync PATH` (coreutils, without -f) does the daemon's part too, but not the\n"
                 "page cache's: files written and not yet closed or fsync'd may stay behind.\n"
                 "Files open for writing are fsync'd one by one (syncfs(2) does not wait for\n"
                 "their writebacks); as root every such file, as another user the files it\n"
                 "owns: run it as root to cover every user's open files.\n";
    return 0;
  }
  if (paths.empty()) {
    std::fprintf(stderr, "peregrine sync: give the mount point of a volume (or a path on it)\n\n");
    std::cerr << opts << "\n";
    return 2;
  }
  const bool verbose = vm.count("verbose") > 0;
  std::vector<std::string> done;
  int code = 0;
  for (const std::string& p : paths) {
    auto mount = peregrine_mount(p);
    if (mount) {
      if (std::find(done.begin(), done.end(), mount->mountpoint) != done.end()) continue;
      done.push_back(mount->mountpoint);
    }
    Status st = mount ? sync_volume(mount->mountpoint) : mount.status();
    if (!st) {
      std::fprintf(stderr, "peregrine sync: %s\n", st.message().c_str());
      code = 1;
    } else if (verbose) {
      std::printf("%s: durable\n", mount->mountpoint.c_str());
    }
  }
  return code;
}

}  // namespace peregrine::cli
