#include "peregrine/fs/daemon.h"

#include <syslog.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "fs_context.h"
#include "peregrine/config/engine_mapping.h"
#include "peregrine/volume/assembly.h"

namespace peregrine::fs {
namespace {

bool g_foreground = true;

void log(int priority, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void log(int priority, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (g_foreground) {
    std::fprintf(stderr, "peregrine: ");
    std::vfprintf(stderr, fmt, ap);
    std::fprintf(stderr, "\n");
  } else {
    vsyslog(priority, fmt, ap);
  }
  va_end(ap);
}

void op_init(void* userdata, fuse_conn_info* conn) {
  auto* fs = static_cast<FsContext*>(userdata);
  const config::FuseSettings& f = fs->settings.fuse;
  // Async reads and async direct IO let the kernel keep many requests in
  // flight per file: the engine needs depth to keep every drive busy.
  unsigned want = FUSE_CAP_ASYNC_READ | FUSE_CAP_ASYNC_DIO | FUSE_CAP_PARALLEL_DIROPS;
  if (f.cache == config::CacheMode::kWriteback) want |= FUSE_CAP_WRITEBACK_CACHE;
  conn->want |= (want & conn->capable);
  conn->max_write = f.max_request_bytes;
  conn->max_readahead = f.max_request_bytes;
  conn->max_background = f.max_background;
  conn->congestion_threshold = f.effective_congestion_threshold();
}

uint32_t queue_depth_for(const config::Settings& s, const MemberFile& m) {
  if (s.drive.queue_depth) return *s.drive.queue_depth;
  uint32_t qd = m.info().queue_depth;  // sysfs nr_requests of a block device
  if (qd == 0) return 32;
  return std::min<uint32_t>(qd, 1024);
}

}  // namespace

int run_daemon(const DaemonOptions& o) {
  g_foreground = o.foreground;
  if (!o.foreground) openlog("peregrine", LOG_PID, LOG_DAEMON);
  bool ready_sent = false;
  auto fail = [&](const Status& s) {
    if (!ready_sent) {
      ready_sent = true;
      o.on_ready(s);
    } else {
      log(LOG_ERR, "%s", s.message().c_str());
    }
    return 1;
  };

  auto vol = assemble(o.members, MemberFile::Mode::read_write);
  if (!vol) return fail(vol.status());
  for (const std::string& w : vol->warnings) log(LOG_WARNING, "%s", w.c_str());
  const Superblock& sb = vol->superblock;
  const VolumeGeometry& geo = vol->geometry;
  uint32_t n = geo.member_count;

  std::vector<DriveSpec> specs;
  std::vector<std::string> names;
  for (const MemberFile& m : vol->members) {
    DriveSpec d;
    d.name = m.info().path;
    d.fd = m.fd();
    d.queue_depth = queue_depth_for(o.settings, m);
    d.numa_node = m.info().numa_node;
    specs.push_back(std::move(d));
    names.push_back(m.info().path);
  }
  // Benchmarks only: make every member behave like a given SSD (see
  // tools/bench/fuse). "LATENCY_US:QUEUE_DEPTH:IOPS:MB_PER_S".
  if (const char* shape = std::getenv("PEREGRINE_BENCH_SHAPE")) {
    unsigned long lat_us = 0, iops = 0, mbps = 0;
    unsigned qd = 0;
    if (std::sscanf(shape, "%lu:%u:%lu:%lu", &lat_us, &qd, &iops, &mbps) != 4)
      return fail(Status::error(EINVAL, "PEREGRINE_BENCH_SHAPE must be LATENCY_US:QUEUE_DEPTH:IOPS:MB_PER_S"));
    for (DriveSpec& d : specs) {
      d.shape = ShapeParams{lat_us * 1000, qd, iops, mbps * 1000000};
      d.queue_depth = qd;
    }
    log(LOG_WARNING, "members shaped for benchmarking: %s", shape);
  }
  StripeMap map(n, geo.stripe_unit, geo.data_start, geo.member_data_size);
  auto engine = Engine::create(config::engine_config(o.settings, n), map, std::move(specs));
  if (!engine) return fail(engine.status());
  auto pool = std::make_unique<SubmitterPool>(**engine);
  auto io = std::make_unique<EngineVolumeIo>(*pool);

  meta::Geometry mg;
  mg.meta_offset = sb.meta_offset;
  mg.meta_size = sb.meta_size;
  mg.data_offset = sb.meta_offset + sb.meta_size;
  mg.data_size = geo.volume_size() - mg.data_offset;
  mg.stripe_unit = geo.stripe_unit;
  mg.member_count = n;
  auto meta = meta::Metadata::mount(*io, mg);
  if (!meta) {
    return fail(Status::error(meta.status().errnum(), "volume on " + o.members.front() + " and " +
                                                          std::to_string(n - 1) + " more: metadata: " +
                                                          meta.status().message()));
  }
  const meta::MountReport& report = (*meta)->mount_report();
  if (report.replayed_batches > 0 || report.orphans_freed > 0) {
    log(LOG_NOTICE, "recovered: %llu journal batches replayed, %llu orphaned files freed",
        static_cast<unsigned long long>(report.replayed_batches),
        static_cast<unsigned long long>(report.orphans_freed));
  }

  FsContext ctx(**meta, *pool, *io, o.settings, names);
  fuse_lowlevel_ops ops{};
  ops.init = op_init;
  add_attr_ops(ops);
  add_namespace_ops(ops);
  add_dir_ops(ops);
  add_file_ops(ops);
  add_read_ops(ops);
  add_write_ops(ops);
  add_xattr_ops(ops);
  add_space_ops(ops);

  std::string mount_opts = "fsname=peregrine,subtype=peregrine,default_permissions";
  if (o.settings.fuse.allow_other) mount_opts += ",allow_other";
  std::vector<std::string> argv_s = {"peregrine", "-o", mount_opts};
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  fuse_args args = FUSE_ARGS_INIT(static_cast<int>(argv.size()), argv.data());
  fuse_session* se = fuse_session_new(&args, &ops, sizeof ops, &ctx);
  int exit_code = 0;
  if (se == nullptr) {
    exit_code = fail(Status::error(EIO, "cannot create the FUSE session (is /dev/fuse available?)"));
  } else if (fuse_set_signal_handlers(se) != 0) {
    exit_code = fail(Status::error(EIO, "cannot install signal handlers"));
    fuse_session_destroy(se);
    se = nullptr;
  } else if (fuse_session_mount(se, o.mountpoint.c_str()) != 0) {
    exit_code = fail(Status::error(EIO, "mountpoint " + o.mountpoint + ": cannot mount there (see the message above)"));
    fuse_remove_signal_handlers(se);
    fuse_session_destroy(se);
    se = nullptr;
  }
  if (se != nullptr) {
    log(LOG_INFO, "mounted %u members on %s", n, o.mountpoint.c_str());
    ready_sent = true;
    o.on_ready(Status::ok());
    fuse_loop_config* cfg = fuse_loop_cfg_create();
    fuse_loop_cfg_set_clone_fd(cfg, 1);
    fuse_loop_cfg_set_max_threads(cfg, o.settings.fuse.workers);
    fuse_loop_cfg_set_idle_threads(cfg, o.settings.fuse.workers);
    int rc = fuse_session_loop_mt(se, cfg);
    fuse_loop_cfg_destroy(cfg);
    fuse_session_unmount(se);
    fuse_remove_signal_handlers(se);
    fuse_session_destroy(se);
    if (rc != 0) log(LOG_WARNING, "FUSE session ended with error %d", rc);
  }
  // Every FUSE worker has ended, so every reply went out and no IO is in
  // flight but the metadata layer's own: checkpoint, flush, stop.
  Status s = (*meta)->unmount();
  if (!s) {
    log(LOG_ERR, "unmount: %s", s.message().c_str());
    exit_code = 1;
  }
  meta->reset();
  io.reset();
  pool.reset();
  engine->reset();
  if (exit_code == 0 && ready_sent) log(LOG_INFO, "unmounted %s cleanly", o.mountpoint.c_str());
  return exit_code;
}

}  // namespace peregrine::fs
