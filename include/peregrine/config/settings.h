// The runtime tunables of a peregrine mount, as typed values.
//
// Settings is what the daemon reads: one plain struct per config-file table
// ([engine], [drive], [io_uring], [fuse], [stats], [log]). The members carry
// no defaults of their own on purpose: every default, unit, range and doc
// text lives in ONE table (options.h), and Settings::defaults() is built
// from it, so the code, the shipped conf file and docs/configuration.md
// cannot disagree.
//
// Thread rules: built once on the main thread before anything is mounted,
// then only read (copy it or share it const); nothing here synchronises.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "peregrine/config/cpu_list.h"

namespace peregrine::config {

// Which scheduler serves the members (docs/design.md sections 2.1 and 6).
enum class Scheduler { kPerDrive, kPerVolume };
// How the kernel caches file data: every read/write reaches the daemon
// (direct), or the kernel page cache absorbs writes (writeback).
enum class CacheMode { kDirect, kWriteback };
// When reads and listings update access times: the mount options of the
// same names (relatime is ext4's default).
enum class AtimeMode { kRelatime, kStrictatime, kNoatime };
// How FUSE requests reach the daemon (docs/transport.md): io_uring where the
// kernel offers it (auto), always io_uring, or read()/writev() on /dev/fuse.
enum class FuseTransport { kAuto, kIoUring, kClassic };
enum class LogLevel { kError, kWarn, kInfo, kDebug };
// auto: syslog when the daemon runs in the background, stderr in the foreground.
enum class LogTarget { kAuto, kStderr, kSyslog };

// Staging layer: batching (watermarks) and back-pressure (pressure points).
struct EngineSettings {
  Scheduler scheduler;
  // Watermarks are per member drive; the batch thresholds a worker uses are
  // these times the member count (Falcon section 4.3). Use the helpers.
  uint32_t low_watermark_per_drive;
  uint32_t high_watermark_per_drive;
  bool inline_dispatch;     // serve a batch that does not cross the low watermark inline
  uint32_t inline_poll_us;  // ring threads and classic workers: wait this long for inline-dispatched IO
  // Pressure points count sub-IOs queued but not yet dispatched on ONE
  // drive; each drive compares its own count, so N drives hold at most
  // N x high_pressure_per_drive queued sub-IOs in total.
  uint32_t low_pressure_per_drive;
  uint32_t high_pressure_per_drive;

  uint64_t low_watermark(uint32_t members) const { return uint64_t{low_watermark_per_drive} * members; }
  uint64_t high_watermark(uint32_t members) const { return uint64_t{high_watermark_per_drive} * members; }
};

// Drive layer: pinned drive threads, one per member or per CPU.
struct DriveSettings {
  std::optional<uint32_t> queue_depth;  // nullopt = auto (sysfs nr_requests, else 32)
  CpuAffinity cpus;                     // where drive threads run
  std::optional<uint32_t> threads;      // nullopt = auto (one per CPU the drives are placed on)
  uint32_t max_merge_bytes;             // power of two
  uint32_t max_merge_iovecs;
  uint32_t hold_answered_us;  // 0 = never hold
  bool small_reads_via_page_cache;  // members' own page cache for small files' reads
};

struct IoUringSettings {
  std::optional<uint32_t> sq_entries;  // nullopt = auto (sized from the member's queue depth)
  bool sqpoll;
  uint32_t sqpoll_idle_ms;
  bool copy_inline_on_tmpfs;
};

struct FuseSettings {
  uint32_t workers;
  FuseTransport transport;
  uint32_t ring_depth;       // io_uring transport: entries (requests in flight) per kernel queue
  uint32_t ring_memory_mib;  // io_uring transport: budget of every ring's entries together
  bool pin_rings;            // io_uring transport: pin each ring thread to its queue's CPU
  uint32_t ring_yield_ns;    // io_uring transport: SCHED_IDLE while committing a reply this quick
  bool batch_requests;       // keep data IO staged across requests (docs/design.md section 2.5)
  bool one_reader;           // classic: one worker at a time sleeps in read() (ReadTurn)
  uint32_t read_spin_us;     // classic: longest look for the next request before sleeping (ReadSpin)
  bool follow_lone_caller;   // classic: the one reader follows a lone program to its CPU (LoneCallerFollow)
  uint32_t max_background;
  std::optional<uint32_t> congestion_threshold;  // nullopt = auto (3/4 of max_background)
  uint32_t max_request_bytes;                    // power of two
  CacheMode cache;
  uint32_t tail_blocks;  // fuse.cache=direct: files' partial last blocks kept in memory (fs/tail_blocks.h)
  uint32_t read_blocks;  // fuse.cache=direct: blocks of small reads kept in memory (fs/read_blocks.h)
  uint32_t write_behind_mib;    // writeback cache: writebacks answered before the members have them
  uint32_t attr_timeout_s;      // how long the kernel keeps attributes without asking again
  uint32_t entry_timeout_s;     // ... a name's inode
  uint32_t negative_timeout_s;  // ... that a name does not exist (0: not at all)
  bool allow_other;
  bool acl;  // POSIX ACLs (FUSE_POSIX_ACL), as ext4's acl mount option
  AtimeMode atime;
  bool discard;  // discard freed space online (ext4's discard mount option)

  uint32_t effective_congestion_threshold() const {
    return congestion_threshold ? *congestion_threshold : max_background * 3 / 4;
  }
};

struct StatsSettings {
  bool enabled;
  uint32_t log_interval_s;  // 0 = no periodic stats line in the log
};

struct LogSettings {
  LogLevel level;
  LogTarget target;
};

struct Settings {
  EngineSettings engine;
  DriveSettings drive;
  IoUringSettings io_uring;
  FuseSettings fuse;
  StatsSettings stats;
  LogSettings log;

  // Every option at its built-in default, from the option table.
  static Settings defaults();
};

}  // namespace peregrine::config
