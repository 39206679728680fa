// peregrine-null-fuse: the FUSE ceiling of docs/design.md section 6. Serves
// one file, /data, whose reads return zeros and whose writes are discarded,
// with the same session tuning as the peregrine daemon (async read, async
// direct IO, 1 MiB requests, max_background, cloned /dev/fuse fds, the
// same worker count) and the same transports (docs/transport.md). No FUSE
// filesystem can beat it on this machine with the same transport.
//
//   peregrine-null-fuse [-f] [--workers N] [--size BYTES]
//                       [--transport auto|io-uring|classic] MOUNTPOINT
#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <syslog.h>
#include <vector>

#include "transport.h"

namespace {

constexpr fuse_ino_t kDataIno = 2;
uint64_t g_size = 1ull << 30;
std::vector<char> g_zeros(1 << 20, 0);

void fill(fuse_ino_t ino, struct stat* st) {
  std::memset(st, 0, sizeof *st);
  st->st_ino = ino;
  if (ino == FUSE_ROOT_ID) {
    st->st_mode = S_IFDIR | 0755;
    st->st_nlink = 2;
  } else {
    st->st_mode = S_IFREG | 0644;
    st->st_nlink = 1;
    st->st_size = static_cast<off_t>(g_size);
  }
}

void op_init(void*, fuse_conn_info* conn) {
  conn->want |= (FUSE_CAP_ASYNC_READ | FUSE_CAP_ASYNC_DIO) & conn->capable;
  conn->max_write = 1 << 20;
  conn->max_readahead = 1 << 20;
  conn->max_background = 256;
  conn->congestion_threshold = 192;
}

void op_lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  if (parent != FUSE_ROOT_ID || std::strcmp(name, "data") != 0) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  fuse_entry_param e{};
  e.ino = kDataIno;
  e.attr_timeout = 3600;
  e.entry_timeout = 3600;
  fill(kDataIno, &e.attr);
  fuse_reply_entry(req, &e);
}

void op_getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  struct stat st;
  fill(ino, &st);
  fuse_reply_attr(req, &st, 3600);
}

void op_open(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  fi->direct_io = 1;  // as the daemon's default cache mode
  fuse_reply_open(req, fi);
}

void op_read(fuse_req_t req, fuse_ino_t, size_t size, off_t off, fuse_file_info*) {
  uint64_t o = static_cast<uint64_t>(off);
  size_t n = o >= g_size ? 0 : std::min<uint64_t>(size, g_size - o);
  fuse_reply_buf(req, g_zeros.data(), std::min(n, g_zeros.size()));
}

void op_write(fuse_req_t req, fuse_ino_t, const char*, size_t size, off_t, fuse_file_info*) {
  fuse_reply_write(req, size);
}

// Serves through the daemon's transports; nothing is ever staged.
class NullHost final : public peregrine::fs::TransportHost {
 public:
  explicit NullHost(unsigned workers) : workers_(workers) {}
  Limits transport_limits() const override { return Limits{workers_, 128, 1u << 20, false}; }

 private:
  unsigned workers_;
};

}  // namespace

int main(int argc, char** argv) {
  bool foreground = false;
  unsigned workers = 4;
  std::string transport_name = "classic";
  std::string mountpoint;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-f") {
      foreground = true;
    } else if (a == "--workers" && i + 1 < argc) {
      workers = static_cast<unsigned>(std::atoi(argv[++i]));
    } else if (a == "--size" && i + 1 < argc) {
      g_size = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--transport" && i + 1 < argc) {
      transport_name = argv[++i];
    } else if (a == "-h" || a == "--help") {
      std::printf(
          "usage: peregrine-null-fuse [-f] [--workers N] [--size BYTES] [--transport auto|io-uring|classic] "
          "MOUNTPOINT\n");
      return 0;
    } else {
      mountpoint = a;
    }
  }
  if (mountpoint.empty()) {
    std::fprintf(stderr, "peregrine-null-fuse: no mountpoint\n");
    return 2;
  }
  peregrine::config::FuseTransport wanted = peregrine::config::FuseTransport::kClassic;
  if (transport_name == "auto") {
    wanted = peregrine::config::FuseTransport::kAuto;
  } else if (transport_name == "io-uring") {
    wanted = peregrine::config::FuseTransport::kIoUring;
  } else if (transport_name != "classic") {
    std::fprintf(stderr, "peregrine-null-fuse: --transport %s: give auto, io-uring or classic\n",
                 transport_name.c_str());
    return 2;
  }
  auto plan = peregrine::fs::plan_transport(wanted);
  if (!plan) {
    std::fprintf(stderr, "peregrine-null-fuse: %s\n", plan.status().message().c_str());
    return 1;
  }
  NullHost host(workers);
  auto transport = peregrine::fs::Transport::create(
      host, *plan,
      [](int, const std::string& line) { std::fprintf(stderr, "peregrine-null-fuse: %s\n", line.c_str()); }, [] {});
  host.transport = transport.get();
  fuse_lowlevel_ops ops{};
  ops.init = op_init;
  ops.lookup = op_lookup;
  ops.getattr = op_getattr;
  ops.open = op_open;
  ops.read = op_read;
  ops.write = op_write;
  char arg0[] = "peregrine-null-fuse", o[] = "-o", opts[] = "fsname=nullfuse,subtype=nullfuse";
  char* av[] = {arg0, o, opts};
  fuse_args args = FUSE_ARGS_INIT(3, av);
  fuse_session* se = fuse_session_new(&args, &ops, sizeof ops, static_cast<peregrine::fs::TransportHost*>(&host));
  if (se == nullptr || fuse_set_signal_handlers(se) != 0 || fuse_session_mount(se, mountpoint.c_str()) != 0 ||
      transport->install(se) != 0) {
    std::fprintf(stderr, "peregrine-null-fuse: cannot mount on %s\n", mountpoint.c_str());
    return 1;
  }
  fuse_daemonize(foreground ? 1 : 0);
  fuse_loop_config* cfg = fuse_loop_cfg_create();
  fuse_loop_cfg_set_clone_fd(cfg, 1);
  fuse_loop_cfg_set_max_threads(cfg, workers);
  fuse_loop_cfg_set_idle_threads(cfg, workers);
  int rc = transport->serve(se, cfg);
  transport->quiesce();
  transport->stop();
  fuse_loop_cfg_destroy(cfg);
  fuse_session_unmount(se);
  fuse_remove_signal_handlers(se);
  fuse_session_destroy(se);
  return rc == 0 ? 0 : 1;
}
