#include "peregrine/fs/daemon.h"

#include <syslog.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "fs_context.h"
#include "member_errors.h"
#include "peregrine/fs/stats_log.h"
#include "peregrine/fs/volume_runtime.h"
#include "request_staging.h"
#include "test_faults.h"
#include "transport/transport.h"

namespace peregrine::fs {
namespace {

bool g_to_syslog = false;
int g_max_priority = LOG_INFO;  // from log.level

void log(int priority, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void log(int priority, const char* fmt, ...) {
  if (priority > g_max_priority) return;
  va_list ap;
  va_start(ap, fmt);
  if (!g_to_syslog) {
    // One write per message (the stats thread logs beside the main thread),
    // sized to the message: paths in it can be long.
    va_list measure;
    va_copy(measure, ap);
    int n = std::vsnprintf(nullptr, 0, fmt, measure);
    va_end(measure);
    std::string line(n > 0 ? static_cast<size_t>(n) : 0, '\0');
    std::vsnprintf(line.data(), line.size() + 1, fmt, ap);
    std::fprintf(stderr, "peregrine: %s\n", line.c_str());
  } else {
    vsyslog(priority, fmt, ap);
  }
  va_end(ap);
}

void op_init(void* userdata, fuse_conn_info* conn) {
  auto* fs = &static_cast<FsContext&>(*static_cast<TransportHost*>(userdata));
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

}  // namespace

int run_daemon(const DaemonOptions& o) {
  // log.target: a daemon has no stderr once it is serving, so it always
  // uses syslog; in the foreground (e.g. under systemd) stderr unless told.
  g_to_syslog = !o.foreground || o.settings.log.target == config::LogTarget::kSyslog;
  switch (o.settings.log.level) {
    case config::LogLevel::kError: g_max_priority = LOG_ERR; break;
    case config::LogLevel::kWarn: g_max_priority = LOG_WARNING; break;
    case config::LogLevel::kInfo: g_max_priority = LOG_INFO; break;
    case config::LogLevel::kDebug: g_max_priority = LOG_DEBUG; break;
  }
  if (g_to_syslog) openlog("peregrine", LOG_PID, LOG_DAEMON);
  // Set by whichever thread tells the caller first: the main thread, or
  // the libfuse worker on which the io-uring transport starts serving.
  std::atomic<bool> ready_sent{false};
  auto fail = [&](const Status& s) {
    if (!ready_sent.exchange(true)) {
      o.on_ready(s);
    } else {
      log(LOG_ERR, "%s", s.message().c_str());
    }
    return 1;
  };

  // Every IO error of a member is logged with the member's name (a few per
  // member; peregrine stats counts them all).
  MemberErrorLog member_errors(static_cast<uint32_t>(o.members.size()),
                               [](int priority, const std::string& line) { log(priority, "%s", line.c_str()); });
  auto rt = open_volume(o.members, MemberFile::Mode::read_write, o.settings,
                        [&member_errors](const IoErrorReport& r) { member_errors.report(r); });
  if (!rt) return fail(rt.status());
  VolumeRuntime& vr = **rt;
  member_errors.set_names(vr.member_names);
  for (const std::string& w : vr.volume.warnings) {
    log(LOG_WARNING, "%s", w.c_str());
    // In the background the log is syslog; say it where `peregrine mount` ran too.
    if (!o.foreground) std::fprintf(stderr, "peregrine mount: warning: %s\n", w.c_str());
  }
  if (std::getenv("PEREGRINE_BENCH_SHAPE") != nullptr) log(LOG_WARNING, "members shaped for benchmarking");
  if (const char* faults = std::getenv(kTestFaultsEnv))
    log(LOG_WARNING, "TEST ONLY: member faults injected (%s=%s)", kTestFaultsEnv, faults);
  uint32_t n = vr.volume.geometry.member_count;
  meta::Options meta_options;
  // A metadata write that fails must not be acknowledged later as if it
  // were on disk: the journal stops, the volume turns read-only, and the
  // log says which member and what to do.
  meta_options.on_read_only = [&member_errors](int err, const char* what) {
    std::string cause = member_errors.last_write_failure();
    if (cause.empty()) cause = std::string("error: ") + std::strerror(-err);
    log(LOG_CRIT,
        "volume is now read-only: a metadata write (%s) failed: %s. Changes fail with EROFS and fsync with EIO; "
        "what was not yet durable is lost. Unmount, fix or replace the member, and mount again: the journal "
        "replays up to the last durable commit.",
        what, cause.c_str());
  };
  auto meta = meta::Metadata::mount(*vr.io, vr.meta_geometry, std::move(meta_options));
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

  // Decided before the mount, so that fuse.transport = io-uring on a kernel
  // without it is refused rather than mounted.
  auto plan = plan_transport(o.settings.fuse.transport);
  if (!plan) return fail(plan.status());

  FsContext ctx(**meta, *vr.pool, *vr.io, o.settings, vr.member_names);
  // The io-uring transport says it serves once its rings are registered,
  // so that when a mount command returns, requests already use them.
  auto serving = [&] {
    if (!ready_sent.exchange(true)) o.on_ready(Status::ok());
  };
  std::unique_ptr<Transport> transport = Transport::create(
      ctx, *plan, [](int priority, const std::string& line) { log(priority, "%s", line.c_str()); }, serving);
  ctx.transport = transport.get();
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
  fuse_session* se = fuse_session_new(&args, &ops, sizeof ops, static_cast<TransportHost*>(&ctx));
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
  } else if (int trc = transport->install(se); trc != 0) {
    exit_code = fail(Status::error(EIO, "mountpoint " + o.mountpoint +
                                            ": cannot route the FUSE session through its transport: " +
                                            std::strerror(-trc)));
    fuse_session_unmount(se);
    fuse_remove_signal_handlers(se);
    fuse_session_destroy(se);
    se = nullptr;
  }
  if (se != nullptr) {
    log(LOG_INFO, "mounted %u members on %s", n, o.mountpoint.c_str());
    if (!plan->uring) serving();
    fuse_loop_config* cfg = fuse_loop_cfg_create();
    fuse_loop_cfg_set_clone_fd(cfg, 1);
    fuse_loop_cfg_set_max_threads(cfg, o.settings.fuse.workers);
    fuse_loop_cfg_set_idle_threads(cfg, o.settings.fuse.workers);
    std::optional<StatsLog> stats_log;
    if (o.settings.stats.log_interval_s != 0) {
      stats_log.emplace(*vr.engine, o.settings.stats.log_interval_s, [&transport](const std::string& line) {
        TransportStatus t = transport->status();
        std::string rings;
        for (uint64_t n : t.ring_requests) rings += (rings.empty() ? " ring_requests=" : ",") + std::to_string(n);
        log(LOG_INFO, "%s transport=%s%s", line.c_str(), t.name.c_str(), rings.c_str());
      });
    }
    int rc = transport->serve(se, cfg);
    if (!ready_sent.exchange(true)) {
      o.on_ready(Status::error(EIO, "the kernel ended the FUSE session on " + o.mountpoint +
                                        " before it was initialised"));
    }
    if (o.on_stopping) o.on_stopping();
    // The workers are gone; ring threads run no new request. IO that
    // requests started (or staged and handed on as they ended) may still be
    // on the drives: its replies need the session and the rings, and its
    // metadata updates must land before the checkpoint.
    transport->quiesce();
    ctx.wait_for_data_ops();
    transport->stop();
    stats_log.reset();
    fuse_loop_cfg_destroy(cfg);
    fuse_session_unmount(se);
    fuse_remove_signal_handlers(se);
    fuse_session_destroy(se);
    if (rc != 0) log(LOG_WARNING, "FUSE session ended with error %d", rc);
  }
  // Every FUSE worker has ended and every data op has replied, so no IO is
  // in flight but the metadata layer's own: checkpoint, flush, stop.
  Status s = (*meta)->read_only()
                 ? Status::error(EROFS, "the volume went read-only after a metadata write failed, so no checkpoint "
                                        "was written; the next mount replays the journal")
                 : (*meta)->unmount();
  if (!s) {
    log(LOG_ERR, "unmount: %s", s.message().c_str());
    exit_code = 1;
  }
  meta->reset();
  rt->reset();
  if (exit_code == 0 && ready_sent) log(LOG_INFO, "unmounted %s cleanly", o.mountpoint.c_str());
  return exit_code;
}

}  // namespace peregrine::fs
