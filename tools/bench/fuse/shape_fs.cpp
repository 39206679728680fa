// peregrine-shape-fs: one modelled SSD as a directory, for benchmarks only.
// A passthrough FUSE filesystem over a backing directory (tmpfs) whose
// reads and writes complete when ShapeModel says the modelled drive would
// have finished them: at most --qd inside at once (the rest wait in FIFO
// order), IOPS and bandwidth caps, a service latency. fio, mergerfs and
// peregrine itself can all sit on it, so "4 drives of 80 us" means the same
// device for every system tools/bench/run compares (docs/performance.md).
//
//   peregrine-shape-fs [-f] --latency-us N --qd N --iops N --mb-s N BACKING MOUNTPOINT
//
// Files are opened direct_io (no page cache above the drive). Each request
// is served on a libfuse worker thread, which does the IO on the backing
// file at once and then sleeps until the modelled completion; enough
// workers are allowed that the kernel's queue, not the thread count,
// limits the depth.
//
// Thread rules: libfuse worker threads call every operation concurrently.
// The Drive (slots and model) is guarded by its mutex; nothing else is
// shared between requests.
#define FUSE_USE_VERSION 312
#include <dirent.h>
#include <fcntl.h>
#include <fuse.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <iostream>
#include <mutex>
#include <string>

#include "peregrine/backend/shape_model.h"
#include "peregrine/util/clock.h"

namespace po = boost::program_options;

namespace {

// The modelled drive: FIFO admission into queue_depth slots, then the model.
// A finished IO hands its slot straight to the oldest waiter, so a release
// wakes one thread, not every waiting one. The slot frees at the modelled
// completion, not when this thread wakes from its sleep, as in ShapedDevice:
// a real drive does not wait for its host to take the next command.
class Drive {
 public:
  explicit Drive(peregrine::ShapeParams p) : model_(p) {}

  // Blocks the calling worker until the IO of `bytes` would have completed.
  void serve(uint64_t bytes) {
    std::unique_lock lock(mu_);
    uint32_t qd = model_.params().queue_depth;
    uint64_t entered = peregrine::monotonic_ns();
    if ((qd != 0 && inside_ >= qd) || !waiting_.empty()) {
      Waiter me;
      waiting_.push_back(&me);
      me.admitted.wait(lock, [&] { return me.slot; });
      entered = std::max(entered, me.slot_freed_ns);
    } else {
      ++inside_;
    }
    uint64_t release = model_.admit(entered, bytes);
    lock.unlock();
    timespec ts{static_cast<time_t>(release / 1000000000ull), static_cast<long>(release % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
    }
    lock.lock();
    if (waiting_.empty()) {
      --inside_;
      return;
    }
    Waiter* next = waiting_.front();
    waiting_.pop_front();
    next->slot = true;  // the slot passes on: inside_ stays
    next->slot_freed_ns = release;
    next->admitted.notify_one();
  }

 private:
  struct Waiter {
    std::condition_variable admitted;
    bool slot = false;
    uint64_t slot_freed_ns = 0;
  };
  std::mutex mu_;
  peregrine::ShapeModel model_;
  uint32_t inside_ = 0;
  std::deque<Waiter*> waiting_;  // arrival order
};

struct State {
  std::string backing;
  Drive* drive = nullptr;
};

State& state() { return *static_cast<State*>(fuse_get_context()->private_data); }
std::string real(const char* path) { return state().backing + path; }
int err(int rc) { return rc < 0 ? -errno : rc; }

void* shape_init(fuse_conn_info* conn, fuse_config* cfg) {
  cfg->direct_io = 1;    // every read and write reaches the drive
  cfg->nullpath_ok = 1;  // IO on an open file needs no path lookup
  cfg->use_ino = 1;
  conn->want |= FUSE_CAP_ASYNC_DIO;  // one fio job's queue depth arrives in parallel
  conn->max_background = 1024;
  conn->congestion_threshold = 768;
  conn->max_write = 1 << 20;
  // Short sleeps must not be rounded up by the default 50 us timer slack.
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  return fuse_get_context()->private_data;
}

int shape_getattr(const char* path, struct stat* st, fuse_file_info* fi) {
  if (fi != nullptr) return err(fstat(static_cast<int>(fi->fh), st));
  return err(lstat(real(path).c_str(), st));
}

int shape_readdir(const char* path, void* buf, fuse_fill_dir_t fill, off_t, fuse_file_info*, fuse_readdir_flags) {
  DIR* d = opendir(real(path).c_str());
  if (d == nullptr) return -errno;
  while (dirent* e = readdir(d)) {
    struct stat st {};
    st.st_ino = e->d_ino;
    st.st_mode = static_cast<mode_t>(DTTOIF(e->d_type));
    if (fill(buf, e->d_name, &st, 0, static_cast<fuse_fill_dir_flags>(0)) != 0) break;
  }
  closedir(d);
  return 0;
}

int shape_open(const char* path, fuse_file_info* fi) {
  // The backing file is tmpfs: O_DIRECT means nothing there.
  int fd = open(real(path).c_str(), fi->flags & ~O_DIRECT);
  if (fd < 0) return -errno;
  fi->fh = static_cast<uint64_t>(fd);
  fi->direct_io = 1;
  return 0;
}

int shape_create(const char* path, mode_t mode, fuse_file_info* fi) {
  int fd = open(real(path).c_str(), (fi->flags & ~O_DIRECT) | O_CREAT, mode);
  if (fd < 0) return -errno;
  fi->fh = static_cast<uint64_t>(fd);
  fi->direct_io = 1;
  return 0;
}

int shape_read(const char*, char* buf, size_t size, off_t off, fuse_file_info* fi) {
  ssize_t n = pread(static_cast<int>(fi->fh), buf, size, off);
  if (n < 0) return -errno;
  state().drive->serve(size);
  return static_cast<int>(n);
}

int shape_write(const char*, const char* buf, size_t size, off_t off, fuse_file_info* fi) {
  ssize_t n = pwrite(static_cast<int>(fi->fh), buf, size, off);
  if (n < 0) return -errno;
  state().drive->serve(size);
  return static_cast<int>(n);
}

int shape_release(const char*, fuse_file_info* fi) { return err(close(static_cast<int>(fi->fh))); }
int shape_fsync(const char*, int, fuse_file_info*) { return 0; }  // tmpfs: nothing to flush
int shape_unlink(const char* path) { return err(unlink(real(path).c_str())); }
int shape_mkdir(const char* path, mode_t mode) { return err(mkdir(real(path).c_str(), mode)); }
int shape_rmdir(const char* path) { return err(rmdir(real(path).c_str())); }
int shape_chmod(const char* path, mode_t mode, fuse_file_info*) { return err(chmod(real(path).c_str(), mode)); }
int shape_statfs(const char*, struct statvfs* st) { return err(statvfs(state().backing.c_str(), st)); }

int shape_rename(const char* from, const char* to, unsigned int flags) {
  if (flags != 0) return -EINVAL;
  return err(rename(real(from).c_str(), real(to).c_str()));
}

int shape_chown(const char* path, uid_t uid, gid_t gid, fuse_file_info*) {
  return err(lchown(real(path).c_str(), uid, gid));
}

int shape_truncate(const char* path, off_t size, fuse_file_info* fi) {
  if (fi != nullptr) return err(ftruncate(static_cast<int>(fi->fh), size));
  return err(truncate(real(path).c_str(), size));
}

int shape_utimens(const char* path, const timespec tv[2], fuse_file_info* fi) {
  if (fi != nullptr) return err(futimens(static_cast<int>(fi->fh), tv));
  return err(utimensat(AT_FDCWD, real(path).c_str(), tv, AT_SYMLINK_NOFOLLOW));
}

int shape_fallocate(const char*, int mode, off_t off, off_t len, fuse_file_info* fi) {
  return err(fallocate(static_cast<int>(fi->fh), mode, off, len));
}

}  // namespace

int main(int argc, char** argv) {
  po::options_description opts("options");
  bool foreground = false;
  uint64_t latency_us = 80, iops = 20000, mb_s = 500;
  uint32_t qd = 32;
  std::string backing, mountpoint;
  opts.add_options()("help,h", "print this help")("foreground,f", po::bool_switch(&foreground),
                                                  "stay in the foreground")(
      "latency-us", po::value(&latency_us)->value_name("N")->default_value(80), "service latency per IO")(
      "qd", po::value(&qd)->value_name("N")->default_value(32), "IOs the drive serves at once")(
      "iops", po::value(&iops)->value_name("N")->default_value(20000), "IO starts per second (0 = no cap)")(
      "mb-s", po::value(&mb_s)->value_name("N")->default_value(500), "transfer rate, MB/s (0 = no cap)");
  po::options_description hidden;
  hidden.add_options()("backing", po::value(&backing))("mountpoint", po::value(&mountpoint));
  po::positional_options_description pos;
  pos.add("backing", 1).add("mountpoint", 1);
  po::options_description all;
  all.add(opts).add(hidden);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::fprintf(stderr, "peregrine-shape-fs: %s\n", e.what());
    return 2;
  }
  if (vm.count("help") || backing.empty() || mountpoint.empty()) {
    std::cout << "usage: peregrine-shape-fs [OPTIONS] BACKING MOUNTPOINT\n\n"
                 "One modelled SSD (benchmarks only): BACKING's files, served with the given\n"
                 "latency, queue depth, IOPS and bandwidth.\n\n"
              << opts;
    return vm.count("help") ? 0 : 2;
  }
  if (qd == 0) {
    std::fprintf(stderr, "peregrine-shape-fs: --qd must be at least 1\n");
    return 2;
  }
  char* resolved = realpath(backing.c_str(), nullptr);
  if (resolved == nullptr) {
    std::fprintf(stderr, "peregrine-shape-fs: backing directory %s: %s\n", backing.c_str(), std::strerror(errno));
    return 1;
  }
  Drive drive(peregrine::ShapeParams{latency_us * 1000, qd, iops, mb_s * 1000000});
  State st{resolved, &drive};
  std::free(resolved);

  fuse_operations ops{};
  ops.init = shape_init;
  ops.getattr = shape_getattr;
  ops.readdir = shape_readdir;
  ops.open = shape_open;
  ops.create = shape_create;
  ops.read = shape_read;
  ops.write = shape_write;
  ops.release = shape_release;
  ops.fsync = shape_fsync;
  ops.unlink = shape_unlink;
  ops.mkdir = shape_mkdir;
  ops.rmdir = shape_rmdir;
  ops.rename = shape_rename;
  ops.chmod = shape_chmod;
  ops.chown = shape_chown;
  ops.truncate = shape_truncate;
  ops.utimens = shape_utimens;
  ops.statfs = shape_statfs;
  ops.fallocate = shape_fallocate;

  const char* fargv[] = {"peregrine-shape-fs", "-o", "fsname=peregrine-shape-fs,allow_other,default_permissions"};
  fuse_args args = FUSE_ARGS_INIT(3, const_cast<char**>(fargv));
  fuse* f = fuse_new(&args, &ops, sizeof ops, &st);
  if (f == nullptr) return 1;
  if (fuse_mount(f, mountpoint.c_str()) != 0) {
    fuse_destroy(f);
    return 1;
  }
  // Returns to the caller only once the mount serves.
  if (fuse_daemonize(foreground ? 1 : 0) != 0 || fuse_set_signal_handlers(fuse_get_session(f)) != 0) {
    fuse_unmount(f);
    fuse_destroy(f);
    return 1;
  }
  fuse_loop_config* loop = fuse_loop_cfg_create();
  // Every IO holds a worker while it sleeps, so workers bound the depth.
  fuse_loop_cfg_set_max_threads(loop, 4 * qd + 64);
  fuse_loop_cfg_set_idle_threads(loop, 4 * qd + 64);
  int rc = fuse_loop_mt(f, loop);
  fuse_loop_cfg_destroy(loop);
  fuse_remove_signal_handlers(fuse_get_session(f));
  fuse_unmount(f);
  fuse_destroy(f);
  return rc == 0 ? 0 : 1;
}
