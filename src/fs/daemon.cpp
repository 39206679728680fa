#include "peregrine/fs/daemon.h"

#include <syslog.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon_log.h"
#include "peregrine/util/test_hooks.h"
#include "stop_signal_waker.h"
#include "fs_context.h"
#include "peregrine/config/cpu_list.h"
#include "peregrine/volume/mount_record.h"
#include "member_errors.h"
#include "online_grow.h"
#include "online_replace.h"
#include "online_restripe.h"
#include "peregrine/fs/stats_log.h"
#include "peregrine/fs/volume_runtime.h"
#include "peregrine/util/clock.h"
#include "request_staging.h"
#include "test_faults.h"
#include "transport/reply_yield.h"
#include "transport/transport.h"

namespace peregrine::fs {
namespace {

// What a read-only mount did with the journal, for the log.
std::vector<std::string> read_only_notes(const meta::MountReport& r) {
  std::vector<std::string> out;
  if (!r.read_only) return out;
  if (r.replayed_batches > 0)
    out.push_back("read-only: the journal left by an unclean stop (" + std::to_string(r.replayed_batches) +
                  " batches) was applied in memory only; the members are unchanged, and the next read-write "
                  "mount writes it");
  if (r.skipped_batches > 0)
    out.push_back("norecovery: " + std::to_string(r.skipped_batches) +
                  " journal batches left by an unclean stop are not applied; files show their state at the last "
                  "checkpoint (the next read-write mount applies them)");
  return out;
}

void op_init(void* userdata, fuse_conn_info* conn) {
  auto* fs = &static_cast<FsContext&>(*static_cast<TransportHost*>(userdata));
  const config::FuseSettings& f = fs->settings.fuse;
  // Async reads and async direct IO let the kernel keep many requests in
  // flight per file: the engine needs depth to keep every drive busy.
  unsigned want = FUSE_CAP_ASYNC_READ | FUSE_CAP_ASYNC_DIO | FUSE_CAP_PARALLEL_DIROPS;
  // File handles that outlive the kernel's inode cache and the mount (NFS
  // export, open_by_handle_at): inode numbers are never reused and persist.
  want |= FUSE_CAP_EXPORT_SUPPORT;
  if (f.cache == config::CacheMode::kWriteback) want |= FUSE_CAP_WRITEBACK_CACHE;
  // POSIX ACLs: the kernel checks them and caches them from getxattr; the
  // umask comes with each create (DONT_MASK), because a directory's default
  // ACL, which only the filesystem reads, decides whether it applies.
  if (f.acl) {
    want |= FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK;
    if ((conn->capable & FUSE_CAP_POSIX_ACL) == 0)
      fs->log(LOG_WARNING,
              "fuse.acl: the kernel does not offer POSIX ACLs to FUSE filesystems; they are kept but "
              "not enforced");
  }
  // fstrim opens the mount point: its FITRIM reaches the daemon only as a
  // directory ioctl (fs_trim.cpp).
  want |= FUSE_CAP_IOCTL_DIR;
  conn->want |= (want & conn->capable);
  // libfuse asks for FUSE_HANDLE_KILLPRIV by default; the transport asks
  // for its successor, FUSE_HANDLE_KILLPRIV_V2, whose marks say when the
  // caller lacks CAP_FSETID (fs_context.h, suidgid_to_drop).
  conn->want &= ~FUSE_CAP_HANDLE_KILLPRIV;
  // With the page cache in use the kernel's own times and sizes are the
  // ones that count (the daemon's copy of a file's mtime lags until the
  // kernel sends it), so a refresh of the attributes must not drop the
  // cached data as libfuse's default AUTO_INVAL_DATA would on an mtime it
  // takes for another writer's: the daemon is the only writer, and says so
  // itself when cached data goes stale (EXPLICIT_INVAL_DATA). Without this a
  // file read twice is read from the members twice.
  if (f.cache == config::CacheMode::kWriteback) {
    conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
    if ((conn->capable & FUSE_CAP_EXPLICIT_INVAL_DATA) != 0) conn->want |= FUSE_CAP_EXPLICIT_INVAL_DATA;
  }
  conn->max_write = f.max_request_bytes;
  conn->max_readahead = f.max_request_bytes;
  conn->max_background = f.max_background;
  conn->congestion_threshold = f.effective_congestion_threshold();
}

// The source df and findmnt show for the mount, as a libfuse fsname=
// option: which volume it is, so two volumes can be told apart. What the
// user wrote as the source when there is one (mount -a finds an fstab line
// mounted only when the two agree), else peregrine:LABEL. The type stays
// fuse.peregrine (subtype). libfuse splits -o at commas unless escaped
// with a backslash.
std::string mount_source(const std::string& given, const Superblock& sb) {
  std::string name = !given.empty()     ? given
                     : sb.label.empty() ? "peregrine:" + sb.volume_uuid.to_string()
                                        : "peregrine:" + sb.label;
  std::string out;
  for (char c : name) {
    if (c == ',' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// The mount-time write of a read-write mount: the mount record on every
// member (last mount time, mount point, member paths: what `peregrine
// examine` shows). A read-only mount must skip this and
// record_clean_unmount() both. Failure is only a warning: the record
// informs people, the volume does not depend on it.
std::optional<MountRecord> record_read_write_mount(const VolumeRuntime& vr, const std::string& mountpoint,
                                                  const DaemonLog& log) {
  auto r = record_mount_on_members(vr.volume, mountpoint, static_cast<uint64_t>(std::time(nullptr)));
  if (!r) {
    log.log(LOG_WARNING, "%s", r.status().message().c_str());
    return std::nullopt;
  }
  return std::move(*r);
}

// After the checkpoint and flush of a clean unmount: marks the mount record
// of record_read_write_mount() clean.
void record_clean_unmount(const VolumeRuntime& vr, const MountRecord& record, const DaemonLog& log) {
  if (Status s = record_clean_unmount_on_members(vr.volume, record, static_cast<uint64_t>(std::time(nullptr))); !s)
    log.log(LOG_WARNING, "%s", s.message().c_str());
}

// Assembly's warnings (a backup superblock in use, ...) and the test and
// benchmark modes, in the log and, for a background mount, where `peregrine
// mount` ran.
void log_volume_warnings(const DaemonOptions& o, const VolumeRuntime& vr, const DaemonLog& log) {
  for (const std::string& w : vr.volume.warnings) {
    log.log(LOG_WARNING, "%s", w.c_str());
    if (!o.foreground) std::fprintf(stderr, "peregrine mount: warning: %s\n", w.c_str());
  }
  if (test_hook("PEREGRINE_BENCH_SHAPE") != nullptr) log.log(LOG_WARNING, "members shaped for benchmarking");
  if (const char* faults = test_hook(kTestFaultsEnv))
    log.log(LOG_WARNING, "TEST ONLY: member faults injected (%s=%s)", kTestFaultsEnv, faults);
  if (const char* cut = test_hook(kTestPowerCutEnv))
    log.log(LOG_WARNING, "TEST ONLY: members keep undo logs for power cuts (%s=%s)", kTestPowerCutEnv, cut);
  if (!planted_bug().empty())
    log.log(LOG_WARNING, "TEST ONLY: a bug planted for the power-cut harness (%s=%s)", kTestPlantEnv,
        planted_bug().c_str());
}

meta::Options metadata_options(const DaemonOptions& o, MemberErrorLog& member_errors, const DaemonLog& log) {
  meta::Options m;
  m.read_only = o.read_only;
  m.skip_replay = o.norecovery;
  m.posix_acl = o.settings.fuse.acl;
  m.discard = o.settings.fuse.discard && !o.read_only;
  m.plant_journal_without_data_flush = planted_bug() == kPlantJournalWithoutDataFlush;
  m.plant_discard_before_free_durable = planted_bug() == kPlantDiscardBeforeFreeDurable;
  switch (o.settings.fuse.atime) {
    case config::AtimeMode::kRelatime: m.atime = meta::AtimeRule::kRelatime; break;
    case config::AtimeMode::kStrictatime: m.atime = meta::AtimeRule::kStrict; break;
    case config::AtimeMode::kNoatime: m.atime = meta::AtimeRule::kNoatime; break;
  }
  // With fuse.cache=writeback the kernel keeps a regular file's mtime and
  // ctime across its writes, stamped with current_time(): the coarse
  // clock, as for any filesystem without multigrain timestamps. It sends
  // them with SETATTR when they changed, and a WRITE it writes back later
  // must not stamp them again (a tick later). The daemon's own stamps
  // (creations, names, directories) come from the same clock, or a file
  // written just after another was created gets an older mtime
  // (generic/423). With fuse.cache=direct the daemon stamps everything,
  // from the fine clock.
  if (o.settings.fuse.cache == config::CacheMode::kWriteback) {
    m.clock = realtime_coarse_ns;
    m.kernel_stamps_writes = true;
  }
  // A metadata write that fails must not be acknowledged later as if it
  // were on disk: the journal stops, the volume turns read-only, and the
  // log says which member and what to do.
  m.on_read_only = [&member_errors, &log](int err, const char* what) {
    std::string cause = member_errors.last_write_failure();
    if (cause.empty()) cause = std::string("error: ") + std::strerror(-err);
    log.log(LOG_CRIT,
        "volume is now read-only: a metadata write (%s) failed: %s. Changes fail with EROFS and fsync with EIO; "
        "what was not yet durable is lost. Unmount, fix or replace the member, and mount again: the journal "
        "replays up to the last durable commit.",
        what, cause.c_str());
  };
  return m;
}

// What recovery did at mount: replayed journal, freed orphans, and why the
// volume is read-only if it is.
void log_mount_report(const DaemonOptions& o, const meta::MountReport& report, const DaemonLog& log) {
  if (report.replayed_batches > 0 || report.orphans_freed > 0) {
    log.log(LOG_NOTICE, "recovered: %llu journal batches replayed, %llu orphaned files freed",
        static_cast<unsigned long long>(report.replayed_batches),
        static_cast<unsigned long long>(report.orphans_freed));
  }
  for (const std::string& line : read_only_notes(report)) {
    log.log(LOG_NOTICE, "%s", line.c_str());
    if (!o.foreground) std::fprintf(stderr, "peregrine mount: %s\n", line.c_str());
  }
}

// Which way small files are read (drive.small_reads_via_page_cache), so
// that a volume of block devices does not leave its user guessing.
void log_member_cache(const config::Settings& settings, const VolumeRuntime& vr, uint64_t file_bytes,
                      const DaemonLog& log) {
  if (!settings.drive.small_reads_via_page_cache) return;
  unsigned cached = 0;
  for (const MemberFile& m : vr.volume.members) cached += m.page_cache_fd() >= 0;
  if (file_bytes == 0) {
    log.log(LOG_INFO, "small files are read direct: no member is a file on ext4 or XFS "
                      "(drive.small_reads_via_page_cache)");
    return;
  }
  log.log(LOG_INFO, "files up to %llu KiB are read through the page cache of %u of %zu members (files on ext4 "
                    "or XFS; drive.small_reads_via_page_cache)",
          static_cast<unsigned long long>(file_bytes >> 10), cached, vr.volume.members.size());
}

fuse_lowlevel_ops filesystem_ops(const DaemonOptions& o) {
  fuse_lowlevel_ops ops{};
  ops.init = op_init;
  add_attr_ops(ops);
  add_namespace_ops(ops);
  add_dir_ops(ops);
  add_file_ops(ops);
  add_data_ops(ops);
  add_xattr_ops(ops);
  add_space_ops(ops, o.settings.fuse.cache);
  add_trim_ops(ops);
  if (o.read_only) make_read_only(ops);
  return ops;
}

// libfuse's -o string: the source df shows, the type, permissions and the
// kernel options the caller passed on.
std::string kernel_mount_options(const DaemonOptions& o, const Superblock& sb) {
  std::string opts = "fsname=" + mount_source(o.source, sb) + ",subtype=peregrine,default_permissions";
  if (o.settings.fuse.allow_other) opts += ",allow_other";
  if (o.read_only) opts += ",ro";
  for (const std::string& k : o.kernel_options) opts += "," + k;
  return opts;
}

// Creates the FUSE session, mounts it and routes it through the
// transport. Returns the session, or nullptr after undoing what it did
// (the error is in *error).
fuse_session* mount_session(const DaemonOptions& o, const Superblock& sb, const fuse_lowlevel_ops& ops, FsContext& ctx,
                            Transport& transport, Status* error) {
  std::vector<std::string> argv_s = {"peregrine", "-o", kernel_mount_options(o, sb)};
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  fuse_args args = FUSE_ARGS_INIT(static_cast<int>(argv.size()), argv.data());
  fuse_session* se = fuse_session_new(&args, &ops, sizeof ops, static_cast<TransportHost*>(&ctx));
  ctx.session = se;
  if (se == nullptr) {
    *error = Status::error(EIO, "cannot create the FUSE session (is /dev/fuse available?)");
    return nullptr;
  }
  if (fuse_set_signal_handlers(se) != 0) {
    *error = Status::error(EIO, "cannot install signal handlers");
    fuse_session_destroy(se);
    return nullptr;
  }
  if (fuse_session_mount(se, o.mountpoint.c_str()) != 0) {
    *error = Status::error(EIO, "mountpoint " + o.mountpoint + ": cannot mount there (see the message above)");
    fuse_remove_signal_handlers(se);
    fuse_session_destroy(se);
    return nullptr;
  }
  if (int trc = transport.install(se); trc != 0) {
    *error = Status::error(EIO, "mountpoint " + o.mountpoint +
                                    ": cannot route the FUSE session through its transport: " + std::strerror(-trc));
    fuse_session_unmount(se);
    fuse_remove_signal_handlers(se);
    fuse_session_destroy(se);
    return nullptr;
  }
  return se;
}

// Serves until the kernel ends the session (umount) or a signal stops the
// loop, then drains: no request runs, every data op has replied, the
// session is gone. Tells the caller it failed if the session ended before
// INIT (`ready_sent` still false).
void serve_until_unmounted(const DaemonOptions& o, VolumeRuntime& vr, FsContext& ctx, Transport& transport,
                           fuse_session* se, std::atomic<bool>& ready_sent, const DaemonLog& log) {
  fuse_loop_config* cfg = fuse_loop_cfg_create();
  fuse_loop_cfg_set_clone_fd(cfg, 1);
  fuse_loop_cfg_set_max_threads(cfg, o.settings.fuse.workers);
  fuse_loop_cfg_set_idle_threads(cfg, o.settings.fuse.workers);
  std::optional<StatsLog> stats_log;
  if (o.settings.stats.log_interval_s != 0) {
    stats_log.emplace(*vr.engine, o.settings.stats.log_interval_s, [&transport, &log](const std::string& line) {
      TransportStatus t = transport.status();
      std::string rings;
      for (uint64_t n : t.ring_requests) rings += (rings.empty() ? " ring_requests=" : ",") + std::to_string(n);
      log.log(LOG_INFO, "%s transport=%s%s", line.c_str(), t.name.c_str(), rings.c_str());
    });
  }
  int rc = 0;
  {
    const StopSignalWaker waker;  // a stop signal ends the loop, whichever thread takes it
    rc = transport.serve(se, cfg);
  }
  if (!ready_sent.exchange(true)) {
    o.on_ready(
        Status::error(EIO, "the kernel ended the FUSE session on " + o.mountpoint + " before it was initialised"));
  }
  if (o.on_stopping) o.on_stopping();
  // The workers are gone; ring threads run no new request. IO that
  // requests started (or staged and handed on as they ended) may still be
  // on the drives: its replies need the session and the rings, and its
  // metadata updates must land before the checkpoint.
  transport.quiesce();
  ctx.wait_for_data_ops();
  transport.stop();
  stats_log.reset();
  fuse_loop_cfg_destroy(cfg);
  fuse_session_unmount(se);
  fuse_remove_signal_handlers(se);
  fuse_session_destroy(se);
  // libfuse's loop returns the number of the signal that ended it (its
  // handlers for SIGTERM, SIGINT, SIGHUP: the ordinary way to stop a
  // daemon), or -errno when reading requests failed.
  if (rc > 0) {
    const char* name = sigabbrev_np(rc);
    log.log(LOG_INFO, "stopping on SIG%s", name != nullptr ? name : std::to_string(rc).c_str());
  } else if (rc < 0) {
    log.log(LOG_WARNING, "FUSE session ended with an error: %s", std::strerror(-rc));
  }
}

// Every FUSE worker has ended and every data op has replied, so no IO is
// in flight but the metadata layer's own: checkpoint, flush, stop, and
// mark the mount record clean. Returns whether that all went well.
bool finish_unmount(meta::Metadata& meta, const VolumeRuntime& vr, const std::optional<MountRecord>& mount_record,
                    const DaemonLog& log) {
  Status s = meta.write_failed()
                 ? Status::error(EROFS,
                                 "the volume went read-only while mounted (a metadata write failed, or an "
                                 "online restripe could not vouch for later writes: the log said which), so no "
                                 "checkpoint was written; the next mount replays the journal")
                 : meta.unmount();
  if (!s) {
    log.log(LOG_ERR, "unmount: %s", s.message().c_str());
    return false;
  }
  if (mount_record) record_clean_unmount(vr, *mount_record, log);
  return true;
}

}  // namespace

int run_daemon(const DaemonOptions& o) {
  const DaemonLog log(o.settings.log, o.foreground);
  // Set by whichever thread tells the caller first: the main thread, or
  // the libfuse worker on which the io-uring transport starts serving.
  std::atomic<bool> ready_sent{false};
  auto fail = [&](const Status& s) {
    if (!ready_sent.exchange(true)) {
      o.on_ready(s);
    } else {
      log.log(LOG_ERR, "%s", s.message().c_str());
    }
    return 1;
  };

  if (Status s = config::check_cpus_usable(o.settings.drive.cpus, "drive.cpus"); !s) return fail(s);
  // Every IO error of a member is logged with the member's name (a few per
  // member; peregrine stats counts them all).
  MemberErrorLog member_errors(log.as_line());
  auto rt = open_volume(o.members, o.read_only ? MemberFile::Mode::read_only : MemberFile::Mode::read_write, o.settings,
                        [&member_errors](const IoErrorReport& r) { member_errors.report(r); });
  if (!rt) return fail(rt.status());
  VolumeRuntime& vr = **rt;
  member_errors.set_names(vr.member_names);
  log_volume_warnings(o, vr, log);
  const uint32_t n = vr.volume.geometry.member_count;
  auto meta = meta::Metadata::mount(*vr.io, vr.meta_geometry, metadata_options(o, member_errors, log));
  if (!meta) {
    return fail(Status::error(meta.status().errnum(), "volume on " + o.members.front() + " and " +
                                                          std::to_string(n - 1) +
                                                          " more: metadata: " + meta.status().message()));
  }
  log_mount_report(o, (*meta)->mount_report(), log);

  // Decided before the mount, so that fuse.transport = io-uring on a kernel
  // without it is refused rather than mounted.
  auto plan = plan_transport(o.settings.fuse.transport);
  if (!plan) return fail(plan.status());

  FsContext ctx(**meta, *vr.pool, *vr.io, o.settings, vr.member_names);
  // Classic workers, or the io-uring rings, look for the next request
  // before sleeping (read_spin.h). Not the workers of an io-uring mount:
  // they read /dev/fuse only for INIT and forgets.
  const uint64_t spin_ns = uint64_t{o.settings.fuse.read_spin_us} * 1000;
  ctx.read_spin.set_limit_ns(plan->uring ? 0 : spin_ns);
  ctx.ring_spin.set_limit_ns(plan->uring ? spin_ns : 0);
  // A lone program's metadata requests keep one classic reader only where
  // it looks for them (lone_caller.h): asleep in read(), a single reader
  // would be woken for each, wherever it slept.
  ctx.lone_caller.set_enabled(!plan->uring && o.settings.fuse.one_reader && spin_ns != 0 &&
                              batches_requests(o.settings));
  // Following lowers the reader to SCHED_IDLE: only where it can come back,
  // and with a second worker to look out for it stalled.
  ctx.lone_caller.set_may_follow(o.settings.fuse.follow_lone_caller && o.settings.fuse.workers >= 2 &&
                                 ReplyYield::permitted());
  ctx.member_cache_file_bytes = member_cache_file_bytes(o.settings, vr);
  ctx.volume_label = vr.volume.superblock.label;
  ctx.volume_uuid = vr.volume.superblock.volume_uuid.to_string();
  ctx.log = log.as_line();
  Mutex layout_mu;  // online grow and online replace change the member list one at a time
  // After a switch, the member error log names NEW.
  auto rename_member = [&member_errors](uint32_t i, const std::string& path) { member_errors.rename(i, path); };
  OnlineReplace online_replace(vr, o.settings, layout_mu, log.as_line(), rename_member);
  // One change of the member list at a time, and none while a replace or
  // a restripe stands half-done (holds_members says why).
  OnlineRestripe online_restripe(
      vr, **meta, o.settings, layout_mu, log.as_line(),
      [&online_replace] { return online_replace.holds_members("add members"); }, rename_member);
  online_replace.refuse_while([&online_restripe] { return online_restripe.holds_members("replace a member"); });
  OnlineGrow online_grow(
      vr, **meta, layout_mu,
      [&]() -> std::string {
        if (std::string why = online_restripe.holds_members("grow the volume"); !why.empty()) return why;
        return online_replace.holds_members("grow the volume");
      },
      log.as_line());
  ctx.online_grow = &online_grow;
  ctx.online_replace = o.read_only ? nullptr : &online_replace;
  ctx.online_restripe = o.read_only ? nullptr : &online_restripe;
  ctx.read_only = o.read_only;
  // The io-uring transport says it serves once its rings are registered,
  // so that when a mount command returns, requests already use them.
  auto serving = [&] {
    if (!ready_sent.exchange(true)) o.on_ready(Status::ok());
  };
  std::unique_ptr<Transport> transport = Transport::create(ctx, *plan, log.as_line(), serving);
  ctx.transport = transport.get();
  const fuse_lowlevel_ops ops = filesystem_ops(o);

  int exit_code = 0;
  std::optional<MountRecord> mount_record;
  Status mount_error;
  if (fuse_session* se = mount_session(o, vr.volume.superblock, ops, ctx, *transport, &mount_error); se == nullptr) {
    exit_code = fail(mount_error);
  } else {
    // A read-only mount writes nothing to the members, not even this record.
    if (!o.read_only) mount_record = record_read_write_mount(vr, o.mountpoint, log);
    // Tests only: from now on the daemon's own member writes go through the
    // power-cut layers too. Not the mount's record, made durable before a
    // request is served: the power-cut tests count member IOs from the
    // first one the volume serves.
    for (uint32_t i = 0; i < vr.member_layers.size(); ++i)
      if (vr.member_layers[i]) vr.volume.members[i].route_writes_through(vr.member_layers[i]);
    log_member_cache(o.settings, vr, ctx.member_cache_file_bytes, log);
    log.log(LOG_INFO, "mounted %u members on %s%s", n, o.mountpoint.c_str(), o.read_only ? " read-only" : "");
    if (!plan->uring) serving();
    serve_until_unmounted(o, vr, ctx, *transport, se, ready_sent, log);
  }
  // A copy or a move still running gives up: the unmount's flush and
  // mount record must find the member list settled.
  online_replace.stop();
  online_restripe.stop();
  if (!finish_unmount(**meta, vr, mount_record, log)) exit_code = 1;
  meta->reset();
  rt->reset();
  if (exit_code == 0 && ready_sent) log.log(LOG_INFO, "unmounted %s cleanly", o.mountpoint.c_str());
  return exit_code;
}

}  // namespace peregrine::fs
