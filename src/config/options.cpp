// THE option table. Every runtime tunable is declared here once, with its
// default, unit, range and doc text; conf/peregrine.conf and the option list
// in docs/configuration.md are generated from it (see render.h).
//
// Defaults and why (more in docs/configuration.md, "Tuning"):
// - watermarks follow Falcon section 4.3 (per-drive value x drive count),
//   except the low watermark, see its doc text;
// - pressure points bound the per-drive backlog (Falcon section 5);
// - FUSE worker count and max_background come from the facts measured on
//   these machines in docs/design.md section 6.
#include <string>

#include "peregrine/config/options.h"

namespace peregrine::config {

namespace {

uint32_t u32(const Value& v) { return static_cast<uint32_t>(std::get<int64_t>(v)); }
bool flag(const Value& v) { return std::get<bool>(v); }
const std::string& text(const Value& v) { return std::get<std::string>(v); }

// "auto" <-> nullopt for integer options that allow it.
std::optional<uint32_t> auto_u32(const Value& v) {
  if (std::holds_alternative<std::string>(v)) return std::nullopt;
  return u32(v);
}
Value from_auto(const std::optional<uint32_t>& v) {
  if (!v) return std::string("auto");
  return int64_t{*v};
}

// Choices are listed in the same order as the enum's enumerators.
template <typename E>
E choice(const Value& v, std::initializer_list<std::string_view> names) {
  int i = 0;
  for (std::string_view n : names) {
    if (n == text(v)) return static_cast<E>(i);
    ++i;
  }
  return static_cast<E>(0);  // unreachable: values are validated before store()
}
template <typename E>
Value choice_name(E e, std::initializer_list<std::string_view> names) {
  return std::string(names.begin()[static_cast<int>(e)]);
}

// Brace lists, one a line: left as they are by the formatter.
// clang-format off
#define PEREGRINE_CHOICES_SCHEDULER {"per-drive", "per-volume"}
#define PEREGRINE_CHOICES_CACHE {"direct", "writeback"}
#define PEREGRINE_CHOICES_ATIME {"relatime", "strictatime", "noatime"}
#define PEREGRINE_CHOICES_TRANSPORT {"auto", "io-uring", "classic"}
#define PEREGRINE_CHOICES_LEVEL {"error", "warn", "info", "debug"}
#define PEREGRINE_CHOICES_TARGET {"auto", "stderr", "syslog"}
// clang-format on

constexpr int64_t KiB = 1024;
constexpr int64_t MiB = 1024 * KiB;

// One table each: the [section] of the config file, in the order its
// reference (peregrine config --help) lists them.
std::vector<Option> engine_options() {
  return {
      {
          .key = "engine.scheduler",
          .kind = Kind::kChoice,
          .default_value = std::string("per-drive"),
          .choices = PEREGRINE_CHOICES_SCHEDULER,
          .doc = "Who serves the member drives. per-drive: pinned drive threads (one per "
                 "member, or one per CPU when members outnumber CPUs) sort, merge, allocate tags "
                 "and dispatch (the Falcon design). "
                 "per-volume: the FUSE worker that issued a request serves every drive itself, "
                 "round-robin, with tags taken at plug time, the way md RAID-0 and LVM do; "
                 "it exists as the baseline for benchmarks, not for production.",
          // clang-format off
          .store = [](Settings& s, const Value& v) {
            s.engine.scheduler = choice<Scheduler>(v, PEREGRINE_CHOICES_SCHEDULER);
          },
          // clang-format on
          .load = [](const Settings& s) { return choice_name(s.engine.scheduler, PEREGRINE_CHOICES_SCHEDULER); },
      },
      {
          .key = "engine.low_watermark_per_drive",
          .kind = Kind::kInteger,
          .default_value = int64_t{1},
          .unit = "sub-IOs per member drive",
          .min = 0,
          .max = 4096,
          .doc = "Inline threshold. A FUSE worker whose batch, plus everything the volume has "
                 "outstanding, is at most this times the member count serves it itself instead of "
                 "handing it to the drive threads, saving two thread hand-offs at queue depth 1. "
                 "0 never serves inline. Falcon used 16 per drive inside the kernel, where plug "
                 "lists are long; a FUSE worker's batch is usually one request, so 1 per drive "
                 "keeps inline serving to the lone small request it is meant for. Raise it for "
                 "light, latency-bound loads; it must not exceed high_watermark_per_drive. The "
                 "same threshold decides when fuse.batch_requests starts batching across "
                 "requests: at or above it the volume is busy enough for more requests to be "
                 "waiting.",
          .store = [](Settings& s, const Value& v) { s.engine.low_watermark_per_drive = u32(v); },
          .load = [](const Settings& s) { return Value(int64_t{s.engine.low_watermark_per_drive}); },
      },
      {
          .key = "engine.high_watermark_per_drive",
          .kind = Kind::kInteger,
          .default_value = int64_t{32},
          .unit = "sub-IOs per member drive",
          .min = 1,
          .max = 4096,
          .doc = "Batch limit. A FUSE worker stops batching and pushes its per-drive lists to "
                 "the drive threads once its batch holds this times the member count (with "
                 "fuse.batch_requests it also pushes as soon as no further request is waiting; "
                 "without, after every request). 32 is the typical internal "
                 "queue size of an SSD, Falcon's choice (256 for an 8-drive volume). Lower it "
                 "when per-request latency at depth matters more than merging; raise it for "
                 "drives with deeper internal queues.",
          .store = [](Settings& s, const Value& v) { s.engine.high_watermark_per_drive = u32(v); },
          .load = [](const Settings& s) { return Value(int64_t{s.engine.high_watermark_per_drive}); },
      },
      {
          .key = "engine.inline_dispatch",
          .kind = Kind::kBool,
          .default_value = true,
          .doc = "Allow the inline serving described under low_watermark_per_drive. The "
                 "thread that serves inline also completes what a memory-backed member "
                 "finished at once, between requests. Measured through FUSE on tmpfs "
                 "members: 1 context switch per IO instead of 2.2-3.3 and 1.4-1.6x the IOPS "
                 "at QD 1, 1.1-1.3x at QD 32-128 on io-uring (docs/performance-history.md). Drives "
                 "with latency go to their drive threads once the volume has the low "
                 "watermark outstanding. It also lets a FUSE thread move a lone piece on a memory "
                 "member itself (io_uring.copy_inline_on_tmpfs). Turn it off to measure the "
                 "hand-off alone.",
          .store = [](Settings& s, const Value& v) { s.engine.inline_dispatch = flag(v); },
          .load = [](const Settings& s) { return Value(s.engine.inline_dispatch); },
      },
      {
          .key = "engine.inline_poll_us",
          .kind = Kind::kInteger,
          .default_value = int64_t{100},
          .unit = "microseconds",
          .min = 0,
          .max = 1000,
          .doc = "How long the thread that served a lone request inline (an io_uring ring "
                 "thread, or a classic FUSE worker) waits for its member IO itself, polling the "
                 "member's completion queue, before it leaves the IO to the drive thread. A lone "
                 "read or write on a member with latency then costs no wake-up of the drive "
                 "thread (and, on io-uring, none of the ring thread either). A ring thread stops "
                 "at once when another request arrives on its ring; a classic worker polls "
                 "while the other workers read the next requests. Either polls only when nothing "
                 "else was in flight on the volume. The thread spins while it waits: one CPU "
                 "busy for up to this long per lone IO. Memory members finish inline and never "
                 "need it. Measured on 2 CPUs, 4 file members on a virtual disk, 4 KiB random "
                 "read at QD 1 on io-uring: 155-208 us per read without, 102-105 us with 100 "
                 "(the raw member file: 74 us). An fsync waiting for its file's writebacks "
                 "(fuse.cache=writeback) completes their member IO itself for up to this long "
                 "too. 0: never.",
          .store = [](Settings& s, const Value& v) { s.engine.inline_poll_us = u32(v); },
          .load = [](const Settings& s) { return Value(int64_t{s.engine.inline_poll_us}); },
      },
      {
          .key = "engine.low_pressure_per_drive",
          .kind = Kind::kInteger,
          .default_value = int64_t{768},
          .unit = "sub-IOs queued on one drive",
          .min = 1,
          .max = 1048576,
          .doc = "Workers blocked by high_pressure_per_drive resume once the drive's count of "
                 "queued-but-not-dispatched sub-IOs falls below this. Must be below "
                 "high_pressure_per_drive: the gap keeps workers from waking and blocking again "
                 "on every completion.",
          .store = [](Settings& s, const Value& v) { s.engine.low_pressure_per_drive = u32(v); },
          .load = [](const Settings& s) { return Value(int64_t{s.engine.low_pressure_per_drive}); },
      },
      {
          .key = "engine.high_pressure_per_drive",
          .kind = Kind::kInteger,
          .default_value = int64_t{1024},
          .unit = "sub-IOs queued on one drive",
          .min = 1,
          .max = 1048576,
          .doc = "Back-pressure. When a drive's count of queued-but-not-dispatched sub-IOs passes "
                 "this, workers that want to add to that drive block (the kernel FUSE queue then "
                 "throttles the application). Each drive compares its own count, so a volume of "
                 "N drives queues at most N times this: Falcon's volume-wide pressure point is "
                 "exactly the per-drive value times the drive count. Lower it to bound memory "
                 "(each queued sub-IO pins its buffer); raise it only if drives go idle while "
                 "workers are blocked.",
          .store = [](Settings& s, const Value& v) { s.engine.high_pressure_per_drive = u32(v); },
          .load = [](const Settings& s) { return Value(int64_t{s.engine.high_pressure_per_drive}); },
      },
  };
}

std::vector<Option> drive_options() {
  return {
      {
          .key = "drive.queue_depth",
          .kind = Kind::kInteger,
          .default_value = std::string("auto"),
          .unit = "IOs in flight per member",
          .min = 1,
          .max = 4096,
          .allows_auto = true,
          .auto_means = "the block device's /sys/block/DEV/queue/nr_requests; 32 for member files",
          .doc = "Tags per member drive: a drive thread never has more IOs outstanding on its "
                 "member; the rest waits in the drive's backlog. Lower it to leave room on a "
                 "device shared with other users; raise it for member files on storage that "
                 "gains from more parallelism.",
          .store = [](Settings& s, const Value& v) { s.drive.queue_depth = auto_u32(v); },
          .load = [](const Settings& s) { return from_auto(s.drive.queue_depth); },
      },
      {
          .key = "drive.cpus",
          .kind = Kind::kCpuList,
          .default_value = std::string("auto"),
          .doc = "Where the drive threads run. \"auto\": spread the members over the CPUs, "
                 "preferring each member's NUMA node, and pin the threads. \"none\": do not pin. "
                 "A CPU list such as \"0,2-3\" places the members round-robin over those CPUs. "
                 "Set a list to keep drive threads off CPUs reserved for the application.",
          .store = [](Settings& s, const Value& v) { s.drive.cpus = *parse_cpu_affinity(text(v)); },
          .load = [](const Settings& s) { return Value(s.drive.cpus.to_string()); },
      },
      {
          .key = "drive.threads",
          .kind = Kind::kInteger,
          .default_value = std::string("auto"),
          .unit = "threads",
          .min = 1,
          .max = 1024,
          .allows_auto = true,
          .auto_means = "one thread per CPU that `cpus` places members on (per allowed CPU with "
                        "\"none\"), never more than the members",
          .doc = "How many threads serve the member drives; member i is served by thread i mod "
                 "threads. One thread per member keeps each drive's work apart, but when members "
                 "outnumber CPUs each of those threads sleeps and wakes for nearly every "
                 "completion; a thread serving several members finds their completions together "
                 "(docs/performance-history.md, \"Drive threads\"). Set it to the member count for "
                 "one thread per member.",
          .store = [](Settings& s, const Value& v) { s.drive.threads = auto_u32(v); },
          .load = [](const Settings& s) { return from_auto(s.drive.threads); },
      },
      {
          .key = "drive.max_merge_bytes",
          .kind = Kind::kInteger,
          .default_value = int64_t{1 * MiB},
          .unit = "bytes",
          .min = 4 * KiB,
          .max = 8 * MiB,
          .power_of_two = true,
          .doc = "Largest IO a drive thread builds by merging adjacent same-direction sub-IOs. "
                 "Lower it if a member's max_sectors_kb is smaller (bigger IOs get split by the "
                 "kernel anyway); raise it for member files on storage that likes big IOs.",
          .store = [](Settings& s, const Value& v) { s.drive.max_merge_bytes = u32(v); },
          .load = [](const Settings& s) { return Value(int64_t{s.drive.max_merge_bytes}); },
      },
      {
          .key = "drive.max_merge_iovecs",
          .kind = Kind::kInteger,
          .default_value = int64_t{64},
          .unit = "iovecs per merged IO",
          .min = 1,
          .max = 1024,
          .doc = "Most buffers one merged readv/writev may gather (1024 is the kernel's IOV_MAX). "
                 "1 turns merging off.",
          .store = [](Settings& s, const Value& v) { s.drive.max_merge_iovecs = u32(v); },
          .load = [](const Settings& s) { return Value(int64_t{s.drive.max_merge_iovecs}); },
      },
      {
          .key = "drive.hold_answered_us",
          .kind = Kind::kInteger,
          .default_value = int64_t{2000},
          .unit = "microseconds",
          .min = 0,
          .max = 1000000,
          .doc = "fuse.cache = writeback, io-uring transport: how long a drive thread holds the page "
                 "cache's writebacks that a ring answered before their IO (fuse.write_behind_mib), so "
                 "that the next ones join them in one submission, merged where they are neighbours. "
                 "Unpacking a tree answers one small write per file; sent one by one, each cost an "
                 "IO's submission on the CPU the unpacking program runs on (measured on 2 vCPUs: "
                 "unpacking /usr/include onto disk members took 2.3 s with 2000, 3.0 s with 0). The "
                 "writes go at once when they reach drive.max_merge_bytes, when any other IO is queued "
                 "on the drive, when an fsync, a read, a truncate or an unmount waits for them, or when "
                 "a writer waits at a pressure point; the page cache answers reads of them meanwhile, and a writeback of a file "
                 "fsync'd lately is never held. The classic transport never holds: its workers answer "
                 "from another CPU, and there the sleeping drive threads made the unpacking slower "
                 "(docs/performance-history.md). 0: send each at once.",
          .store = [](Settings& s, const Value& v) { s.drive.hold_answered_us = u32(v); },
          .load = [](const Settings& s) { return Value(int64_t{s.drive.hold_answered_us}); },
      },
      {
          .key = "drive.small_reads_via_page_cache",
          .kind = Kind::kBool,
          .default_value = true,
          .doc = "Member files on ext4 or XFS: the reads that fill the kernel's page cache (buffered "
                 "reads on the default mount, a mapping's faults in either mode) of a file of at most "
                 "64 KiB and a stripe unit (the files packed side by side on each member) go through "
                 "the member's own page cache, on a second descriptor without O_DIRECT, whose read-ahead reads the next "
                 "small files with the first. Reading a tree of small files in about the order it was "
                 "written (tar, grep -r, cp -r after an unpack) then waits for the drive once per "
                 "read-ahead window instead of once per file (measured on 2 vCPUs, member files on a "
                 "virtual disk: a FUSE READ of a small file 21 us instead of 63 at the median, "
                 "docs/performance-history.md). The window is the member's: the read_ahead_kb of the "
                 "device under its filesystem. O_DIRECT reads, larger files and every write stay "
                 "direct; a direct write or a hole punched drops the cached pages it covers when it "
                 "completes. The cost: those pages stay in the page cache beside the file's own until "
                 "the kernel reclaims them, and a direct write over cached pages is handed to an "
                 "io_uring worker. Block devices and files on other filesystems are always read "
                 "direct: an asynchronous direct write to a block device drops cached pages only "
                 "before it starts, so a read-ahead racing it could keep the old bytes. Files on tmpfs "
                 "or ramfs are their own page cache. The mount's log says which way it went. false: "
                 "every member IO is O_DIRECT.",
          .store = [](Settings& s, const Value& v) { s.drive.small_reads_via_page_cache = flag(v); },
          .load = [](const Settings& s) { return Value(s.drive.small_reads_via_page_cache); },
      },
  };
}

std::vector<Option> io_uring_options() {
  return {
      {
          .key = "io_uring.sq_entries",
          .kind = Kind::kInteger,
          .default_value = std::string("auto"),
          .unit = "entries per ring",
          .min = 1,
          .max = 32768,
          .allows_auto = true,
          .auto_means = "room for every IO the member's queue depth allows, a resubmission of each "
                        "short one (the kernel rounds up to a power of two)",
          .doc = "Submission queue size of each member's ring. A smaller ring still works: the drive "
                 "thread then submits in several system calls per round when it dispatches more "
                 "IOs than fit. The completion queue is always sized for every outstanding IO.",
          .store = [](Settings& s, const Value& v) { s.io_uring.sq_entries = auto_u32(v); },
          .load = [](const Settings& s) { return from_auto(s.io_uring.sq_entries); },
      },
      {
          .key = "io_uring.sqpoll",
          .kind = Kind::kBool,
          .default_value = false,
          .doc = "Let a kernel thread poll each ring's submission queue (IORING_SETUP_SQPOLL): "
                 "saves the submit system call but keeps a CPU busy per ring. Off by default: "
                 "on a machine with few cores the poller steals the CPU the drive threads need "
                 "(docs/performance-history.md). Members on tmpfs or ramfs do their IO inline "
                 "(copy_inline_on_tmpfs), so a poller there has nothing to submit.",
          .store = [](Settings& s, const Value& v) { s.io_uring.sqpoll = flag(v); },
          .load = [](const Settings& s) { return Value(s.io_uring.sqpoll); },
      },
      {
          .key = "io_uring.sqpoll_idle_ms",
          .kind = Kind::kInteger,
          .default_value = int64_t{1000},
          .unit = "milliseconds",
          .min = 1,
          .max = 60000,
          .doc = "With sqpoll: how long the kernel poller spins without work before it sleeps.",
          .store = [](Settings& s, const Value& v) { s.io_uring.sqpoll_idle_ms = u32(v); },
          .load = [](const Settings& s) { return Value(int64_t{s.io_uring.sqpoll_idle_ms}); },
      },
      {
          .key = "io_uring.copy_inline_on_tmpfs",
          .kind = Kind::kBool,
          .default_value = true,
          .doc = "Members that are files on tmpfs or ramfs: the drive thread does each IO as a plain "
                 "preadv/pwritev instead of through the ring. Such files cannot take non-blocking IO, "
                 "so io_uring hands every IO to a kernel worker thread and back, two context switches "
                 "for a memory copy; copying inline measured 13% more 4 KiB IOPS through the mount "
                 "(docs/performance-history.md). A request that is one piece on such a member is "
                 "moved by the FUSE thread that serves it, past the drive's queue (docs/engine.md). "
                 "Block devices and files on disk filesystems always use the ring.",
          .store = [](Settings& s, const Value& v) { s.io_uring.copy_inline_on_tmpfs = flag(v); },
          .load = [](const Settings& s) { return Value(s.io_uring.copy_inline_on_tmpfs); },
      },
  };
}

std::vector<Option> fuse_options() {
  return {
      {
          .key = "fuse.workers",
          .kind = Kind::kInteger,
          .default_value = int64_t{2},
          .unit = "threads",
          .min = 1,
          .max = 256,
          .doc = "FUSE worker threads, each with its own cloned /dev/fuse descriptor. Workers "
                 "never wait for IO (the drive threads do), so few are needed: on a 2-core "
                 "machine, 2 workers gave 91-102K 4 KiB random-read IOPS at QD 128 where 4 "
                 "gave 85K (docs/performance-history.md). Raise it on machines with more cores.",
          .store = [](Settings& s, const Value& v) { s.fuse.workers = u32(v); },
          .load = [](const Settings& s) { return Value(int64_t{s.fuse.workers}); },
      },
      {
          .key = "fuse.transport",
          .kind = Kind::kChoice,
          .default_value = std::string("auto"),
          .choices = PEREGRINE_CHOICES_TRANSPORT,
          .doc = "How requests travel between the kernel and the daemon (docs/transport.md). "
                 "io-uring: FUSE over io_uring (Linux 6.14+ with the fuse module parameter "
                 "enable_uring set): one ring per CPU, each served by a thread pinned to that CPU "
                 "that runs the requests and stages their IO; no read() or writev() per request. "
                 "classic: fuse.workers threads read() each request from /dev/fuse and writev() "
                 "each reply. auto: io-uring when the kernel offers it, else classic, and the log "
                 "says which and why. io-uring refuses to mount on a kernel that does not offer it.",
          // clang-format off
          .store = [](Settings& s, const Value& v) {
            s.fuse.transport = choice<FuseTransport>(v, PEREGRINE_CHOICES_TRANSPORT);
          },
          // clang-format on
          .load = [](const Settings& s) { return choice_name(s.fuse.transport, PEREGRINE_CHOICES_TRANSPORT); },
      },
      {
          .key = "fuse.ring_depth",
          .kind = Kind::kInteger,
          .default_value = int64_t{128},
          .unit = "requests",
          .min = 2,
          .max = 1024,
          .doc = "io_uring transport: request entries per ring (one ring per CPU). The kernel puts "
                 "a request on the ring of the CPU its caller runs on, so this bounds the requests "
                 "one application thread can have in flight in the daemon; more wait in the kernel. "
                 "Each entry reserves fuse.max_request_bytes of address space for its payload, "
                 "touched only as far as requests use it; fuse.ring_memory_mib may lower both.",
          .store = [](Settings& s, const Value& v) { s.fuse.ring_depth = u32(v); },
          .load = [](const Settings& s) { return Value(int64_t{s.fuse.ring_depth}); },
      },
      {
          .key = "fuse.ring_memory_mib",
          .kind = Kind::kInteger,
          .default_value = int64_t{512},
          .unit = "MiB",
          .min = 16,
          .max = 1048576,
          .doc = "io_uring transport: the address space every ring's entries may reserve "
                 "together. The kernel keeps one ring per possible CPU and each entry must hold "
                 "a whole request, so fuse.ring_depth entries of fuse.max_request_bytes cost "
                 "8 GiB on a 64-CPU machine. When the configured shape does not fit, the daemon "
                 "first uses fewer entries per ring, down to 32 (what one application thread at "
                 "queue depth 32 keeps busy), then smaller requests, down to 256 KiB (the kernel "
                 "splits larger reads and writes), then fewer entries, down to 8; the log says "
                 "which shape it chose. With the defaults, 512 gives 128 entries of 1 MiB up to 3 "
                 "CPUs, 63 of 1 MiB on 8, 63 of 512 KiB on 16 and 31 of 256 KiB on 64. Pages are "
                 "touched only as far as requests use them.",
          .store = [](Settings& s, const Value& v) { s.fuse.ring_memory_mib = u32(v); },
          .load = [](const Settings& s) { return Value(int64_t{s.fuse.ring_memory_mib}); },
      },
      {
          .key = "fuse.pin_rings",
          .kind = Kind::kBool,
          .default_value = false,
          .doc = "io_uring transport: pin each ring's thread to the CPU whose requests it serves, "
                 "always. The kernel queues a request on the ring of the CPU its caller runs on. "
                 "false: a ring thread that answers most of its requests itself (metadata, memory "
                 "members, a lone IO it polls for) moves to that CPU, where it saves the cross-CPU "
                 "wake-ups of each request and reply (at QD 1 1.5x); one whose requests drive threads "
                 "answer (members with latency) runs wherever a CPU is free, and so does one that "
                 "serves the only busy queue direct IO at depth (one program with many requests in "
                 "flight, which beside it would take turns with it on one CPU: on 2 CPUs, tmpfs "
                 "members, one fio job, 4 KiB random read at QD 32, 342K IOPS against 216K pinned; "
                 "docs/transport.md). true pins every ring, which measured fewer IOPS on disk "
                 "members at QD 1 and at depth from one program.",
          .store = [](Settings& s, const Value& v) { s.fuse.pin_rings = flag(v); },
          .load = [](const Settings& s) { return Value(s.fuse.pin_rings); },
      },
      {
          .key = "fuse.ring_yield_ns",
          .kind = Kind::kInteger,
          .default_value = int64_t{1500},
          .unit = "nanoseconds",
          .min = 0,
          .max = 1000000,
          .doc = "io_uring transport: a ring thread on its queue's CPU lowers itself to SCHED_IDLE "
                 "while it sends its requests' replies (its own, and those a blocking-op thread "
                 "made, such as an fsync's), and back before it waits for the next "
                 "request, so that the scheduler wakes the application on this CPU, which then runs "
                 "at once, instead of on another CPU that may be halted (on a virtual machine each "
                 "such wake-up costs 10 us or more, and a program making one small request after "
                 "another moves from CPU to CPU with every reply). Replies about names, attributes "
                 "and page-cache IO are lowered whatever the ring took over them; a direct read or "
                 "write (O_DIRECT, or fuse.cache = direct) only when it was the round's one request, "
                 "answered within this long of the thread's wake-up while the volume's drive threads "
                 "had no IO outstanding: longer direct replies gain more from the two running on two "
                 "CPUs. A ring whose reply "
                 "still waited over 1 ms for its CPU stops for 10 ms, longer if that recurs "
                 "(ring_yield_stalls in the stats). Needs CAP_SYS_NICE (or an RLIMIT_NICE of 20) "
                 "to come back from SCHED_IDLE; without it the daemon never lowers a thread and "
                 "says so in the log. Measured on 2 vCPUs, tmpfs members, one process: 512-byte "
                 "direct reads 42-47K/s at 0, 137-148K/s at 1500; 4 KiB reads at QD 1 unchanged; "
                 "6000 costs 4 KiB O_DIRECT reads at QD 1 through io_uring 10% (docs/transport.md); "
                 "fsync's replies lowered too, SQLite commits on disk members 15% faster. "
                 "0: ring threads keep their "
                 "scheduling policy.",
          .store = [](Settings& s, const Value& v) { s.fuse.ring_yield_ns = u32(v); },
          .load = [](const Settings& s) { return Value(int64_t{s.fuse.ring_yield_ns}); },
      },
      {
          .key = "fuse.batch_requests",
          .kind = Kind::kBool,
          .default_value = true,
          .doc = "Batch IO across FUSE requests (per-drive scheduler). While the volume has at "
                 "least engine.low_watermark_per_drive times the member count outstanding, a "
                 "worker keeps the sub-IOs of each read and write staged and hands them to the "
                 "drive threads when no further request is waiting, when the batch reaches the "
                 "high watermark, before any other kind of request, and before it waits at a "
                 "file's IO gate or for IO of its own. On a quieter volume each request is "
                 "handed on at once, so a lone request does not pay for the extra check. "
                 "Measured on 2 cores, tmpfs members, QD 128: about 2% more IOPS, within this "
                 "machine's noise (docs/performance-history.md).",
          .store = [](Settings& s, const Value& v) { s.fuse.batch_requests = flag(v); },
          .load = [](const Settings& s) { return Value(s.fuse.batch_requests); },
      },
      {
          .key = "fuse.one_reader",
          .kind = Kind::kBool,
          .default_value = true,
          .doc = "classic transport, with fuse.batch_requests: while the volume has IO staged "
                 "or on its drives, only one worker at a time sleeps in read() on /dev/fuse. It "
                 "keeps that turn across requests that do not wait for IO and hands it on before "
                 "fsync, locks, an IO gate or synchronous IO; when requests queue behind the one "
                 "it took it calls an idle worker to help. With every worker sleeping in read(), "
                 "each request that arrives alone wakes a worker of its own. Measured on 2 cores, "
                 "4 members (docs/performance-history.md): two application threads +10% to +30% IOPS "
                 "(files on disk, shaped). On a quiet volume (metadata, memory members, whose "
                 "requests the worker answers itself) every worker reads: one worker alone there "
                 "halved the QD 1 IOPS and the stat rate of one application thread on a virtual "
                 "machine. Except, with fuse.read_spin_us, while one program thread alone makes "
                 "metadata requests (no reads or writes and no other caller for 100 ms): then one "
                 "worker reads, its look taking each request as it comes, and ls -lR of "
                 "/usr/include measured 1.2x faster, find and du 1.15x (docs/transport.md). "
                 "false: every idle worker always waits in read().",
          .store = [](Settings& s, const Value& v) { s.fuse.one_reader = flag(v); },
          .load = [](const Settings& s) { return Value(s.fuse.one_reader); },
      },
      {
          .key = "fuse.follow_lone_caller",
          .kind = Kind::kBool,
          .default_value = true,
          .doc = "classic transport, with fuse.one_reader: while one program thread alone makes "
                 "metadata requests, the worker that reads them holds itself to the CPU that "
                 "program runs on, at SCHED_IDLE, so that a request and its reply switch between "
                 "the two on one CPU instead of waking the other (a halted vCPU on a virtual "
                 "machine). Measured on 2 vCPUs (docs/transport.md): find, du -s and ls -lR of "
                 "/usr/include after a dropped cache 30% faster, getxattr() 1.3-1.5x as many a "
                 "second. While the program runs, the lowered reader waits for the CPU: another "
                 "program's request that comes meanwhile waits too, until a waiting worker finds "
                 "it waiting at two of its looks 5 ms apart with no read between, puts the reader "
                 "back and serves the request; following then pauses, 100 ms after the first "
                 "stall and twice as long after each one that follows (peregrine stats "
                 "--prometheus counts runs and stalls). A reader with no request for 100 ms goes "
                 "back too. Needs fuse.workers >= 2 and the right to raise a thread back from "
                 "SCHED_IDLE (CAP_SYS_NICE, as root, or an RLIMIT_NICE of 20); without them the "
                 "reader does not follow. "
                 "false: the reader stays where the scheduler puts it.",
          .store = [](Settings& s, const Value& v) { s.fuse.follow_lone_caller = flag(v); },
          .load = [](const Settings& s) { return Value(s.fuse.follow_lone_caller); },
      },
      {
          .key = "fuse.read_spin_us",
          .kind = Kind::kInteger,
          .default_value = int64_t{50},
          .unit = "microseconds",
          .min = 0,
          .max = 1000,
          .doc = "classic transport, with fuse.batch_requests: a worker that finds no request "
                 "waiting looks again for up to this long before it sleeps in the kernel; io_uring "
                 "transport: a ring thread does so after a run of lone direct reads or writes. One "
                 "worker or ring at a time, the window adapting to how soon requests come (it shrinks to "
                 "nothing while they come further apart than this). A program making one request "
                 "after another then costs one wake-up per request instead of two (10 us or more "
                 "each on a virtual machine). The spinning worker yields the CPU to anything else "
                 "ready to run there. Measured on 2 vCPUs (docs/transport.md): unpacking "
                 "/usr/include on disk members 11.1 s -> 5.3 s, reading it back 7.7 -> 4.5 s, "
                 "4 KiB O_DIRECT reads at QD 1 +12-16%; the daemon used 10% more CPU; io_uring on "
                 "tmpfs members, 4 KiB O_DIRECT writes at QD 1 33K/s -> 72K/s, reads 66K -> 77K. The "
                 "cost: a CPU kept busy for up to this long after each request while they come "
                 "closer together. 0: sleep at once.",
          .store = [](Settings& s, const Value& v) { s.fuse.read_spin_us = u32(v); },
          .load = [](const Settings& s) { return Value(int64_t{s.fuse.read_spin_us}); },
      },
      {
          .key = "fuse.max_background",
          .kind = Kind::kInteger,
          .default_value = int64_t{256},
          .unit = "requests",
          .min = 1,
          .max = 65535,
          .doc = "Most asynchronous requests (async direct IO, readahead) the kernel keeps "
                 "outstanding to the daemon. The kernel's default of 12 costs about 20% at depth "
                 "(measured, docs/design.md section 6); 256 covers an application at queue depth 256.",
          .store = [](Settings& s, const Value& v) { s.fuse.max_background = u32(v); },
          .load = [](const Settings& s) { return Value(int64_t{s.fuse.max_background}); },
      },
      {
          .key = "fuse.congestion_threshold",
          .kind = Kind::kInteger,
          .default_value = std::string("auto"),
          .unit = "requests",
          .min = 1,
          .max = 65535,
          .allows_auto = true,
          .auto_means = "3/4 of max_background, as the kernel does",
          .doc = "Outstanding asynchronous requests at which the kernel marks the filesystem "
                 "congested and slows writeback and readahead. Must not exceed max_background.",
          .store = [](Settings& s, const Value& v) { s.fuse.congestion_threshold = auto_u32(v); },
          .load = [](const Settings& s) { return from_auto(s.fuse.congestion_threshold); },
      },
      {
          .key = "fuse.max_request_bytes",
          .kind = Kind::kInteger,
          .default_value = int64_t{1 * MiB},
          .unit = "bytes",
          .min = 4 * KiB,
          .max = 1 * MiB,
          .power_of_two = true,
          .doc = "Largest read or write one FUSE request carries (max_read/max_write). 1 MiB is "
                 "the kernel's default cap of 256 pages per FUSE request. Lower it only to test "
                 "how the engine handles many small requests.",
          .store = [](Settings& s, const Value& v) { s.fuse.max_request_bytes = u32(v); },
          .load = [](const Settings& s) { return Value(int64_t{s.fuse.max_request_bytes}); },
      },
      {
          .key = "fuse.cache",
          .kind = Kind::kChoice,
          .default_value = std::string("writeback"),
          .choices = PEREGRINE_CHOICES_CACHE,
          .doc = "writeback: as ext4, buffered IO goes through the kernel page cache (reads are "
                 "cached across opens while the file is unchanged, buffered writes are absorbed "
                 "and written back later, at the latest by fsync, sync or unmount), while a file "
                 "opened with O_DIRECT bypasses the cache and takes the engine's direct path, "
                 "at the same speed as in direct mode (fio, the graph tools, databases with their "
                 "own cache). direct: every read and write of every open goes to the daemon, "
                 "whatever the open's flags (what keeps data paths measurable; small partial "
                 "writes use fuse.tail_blocks and fuse.read_blocks).",
          .store = [](Settings& s, const Value& v) { s.fuse.cache = choice<CacheMode>(v, PEREGRINE_CHOICES_CACHE); },
          .load = [](const Settings& s) { return choice_name(s.fuse.cache, PEREGRINE_CHOICES_CACHE); },
      },
      {
          .key = "fuse.tail_blocks",
          .kind = Kind::kInteger,
          .default_value = int64_t{1024},
          .unit = "blocks",
          .min = 0,
          .max = 1048576,
          .doc = "fuse.cache = direct: how many files may have their partial last 4 KiB block kept "
                 "in memory (about 4.2 KiB each), so that a small write that grows the file inside "
                 "that block (a log written a line at a time) patches memory instead of reading "
                 "and writing the block on the members. The block is written back before the "
                 "metadata that counts its bytes is committed (every commit interval, and at any "
                 "fsync), so a crash loses the last appends from the end of the file and never "
                 "leaves a size that covers bytes that were not written; reads see it at once. A "
                 "block left alone for two commits is dropped. 0: every such write does "
                 "read-modify-write on the members.",
          .store = [](Settings& s, const Value& v) { s.fuse.tail_blocks = u32(v); },
          .load = [](const Settings& s) { return Value(int64_t{s.fuse.tail_blocks}); },
      },
      {
          .key = "fuse.read_blocks",
          .kind = Kind::kInteger,
          .default_value = int64_t{256},
          .unit = "blocks",
          .min = 0,
          .max = 65536,
          .doc = "fuse.cache = direct: how many 4 KiB blocks that reads smaller than a block came "
                 "from are kept in memory (about 4.1 KiB each), so that the next small read of "
                 "the same block (a program reading 512 bytes or a line at a time) is answered "
                 "without reading the members again. A block is used only while no write, "
                 "truncate or fallocate has touched its file (or a file sharing its lock stripe) "
                 "since it was read. 0: every read goes to the members.",
          .store = [](Settings& s, const Value& v) { s.fuse.read_blocks = u32(v); },
          .load = [](const Settings& s) { return Value(int64_t{s.fuse.read_blocks}); },
      },
      {
          .key = "fuse.write_behind_mib",
          .kind = Kind::kInteger,
          .default_value = int64_t{64},
          .unit = "MiB",
          .min = 0,
          .max = 4096,
          .doc = "fuse.cache = writeback: how many MiB of the page cache's block-aligned writebacks "
                 "the daemon may answer before the members have them (it keeps its own copy until "
                 "they do), so that closing a file, which writes its dirty pages back and waits, "
                 "does not wait for the drives (unpacking a tree of small files). Extents are "
                 "marked written only once their bytes are on the members, so a crash shows zeros "
                 "where such a write did not land, never stale bytes; fsync waits for the file's "
                 "answered writes and reports their errors, as ext4 reports a failed writeback. "
                 "0: every write is answered once on the members.",
          .store = [](Settings& s, const Value& v) { s.fuse.write_behind_mib = u32(v); },
          .load = [](const Settings& s) { return Value(int64_t{s.fuse.write_behind_mib}); },
      },
      {
          .key = "fuse.attr_timeout_s",
          .kind = Kind::kInteger,
          .default_value = int64_t{3600},
          .unit = "seconds",
          .min = 0,
          .max = 86400,
          .doc = "How long the kernel keeps a file's attributes (stat) before it asks the daemon "
                 "again. Every change to the volume passes through this mount's kernel, which "
                 "updates or drops what it keeps as it passes, and the daemon tells it when it "
                 "changes an attribute itself (access times, block counts): so a long timeout "
                 "costs nothing in correctness and spares ls -l, find and tar one request per "
                 "file. 0: every stat reaches the daemon.",
          .store = [](Settings& s, const Value& v) { s.fuse.attr_timeout_s = u32(v); },
          .load = [](const Settings& s) { return Value(int64_t{s.fuse.attr_timeout_s}); },
      },
      {
          .key = "fuse.entry_timeout_s",
          .kind = Kind::kInteger,
          .default_value = int64_t{3600},
          .unit = "seconds",
          .min = 0,
          .max = 86400,
          .doc = "How long the kernel keeps what a name in a directory refers to before it looks "
                 "it up again. As fuse.attr_timeout_s: names change only through this mount. "
                 "0: every path walk looks each name up.",
          .store = [](Settings& s, const Value& v) { s.fuse.entry_timeout_s = u32(v); },
          .load = [](const Settings& s) { return Value(int64_t{s.fuse.entry_timeout_s}); },
      },
      {
          .key = "fuse.negative_timeout_s",
          .kind = Kind::kInteger,
          .default_value = int64_t{3600},
          .unit = "seconds",
          .min = 0,
          .max = 86400,
          .doc = "How long the kernel remembers that a name does not exist (a compiler's or "
                 "shell's search along include paths and PATH asks for many such names). A "
                 "create through this mount replaces the memory at once. 0: never remembered.",
          .store = [](Settings& s, const Value& v) { s.fuse.negative_timeout_s = u32(v); },
          .load = [](const Settings& s) { return Value(int64_t{s.fuse.negative_timeout_s}); },
      },
      {
          .key = "fuse.allow_other",
          .kind = Kind::kBool,
          .default_value = false,
          .doc = "Let users other than the one who mounted access the filesystem. A mount by a "
                 "non-root user needs user_allow_other in /etc/fuse.conf for this.",
          .store = [](Settings& s, const Value& v) { s.fuse.allow_other = flag(v); },
          .load = [](const Settings& s) { return Value(s.fuse.allow_other); },
      },
      {
          .key = "fuse.acl",
          .kind = Kind::kBool,
          .default_value = true,
          .doc = "POSIX access control lists, as ext4 has them by default (the mount options acl and "
                 "noacl say the same): setfacl/getfacl work, the kernel checks named users and groups, "
                 "new files and directories inherit their directory's default ACL instead of the "
                 "umask, and chmod and the ACL stay in step. false: system.posix_acl_* attributes are "
                 "refused (EOPNOTSUPP), the umask always applies, and ACLs kept from a mount with "
                 "them are not enforced.",
          .store = [](Settings& s, const Value& v) { s.fuse.acl = flag(v); },
          .load = [](const Settings& s) { return Value(s.fuse.acl); },
      },
      {
          .key = "fuse.atime",
          .kind = Kind::kChoice,
          .default_value = std::string("relatime"),
          .choices = PEREGRINE_CHOICES_ATIME,
          .doc = "When a read or a directory listing updates the access time; the mount options "
                 "of the same names say the same. relatime (ext4's default): when the access time "
                 "is not newer than the last change, or is a day old, so tools that ask \"read "
                 "since written?\" work, at most one metadata write per change or day. "
                 "strictatime: on every access (kept in memory, journaled with the file's next "
                 "change or fsync, and at unmount). noatime: never. With fuse.cache=writeback, "
                 "reads served from the page cache do not reach the daemon, so an open for "
                 "reading counts as the access (not one with O_NOATIME). Directory listings the kernel keeps (in either "
                 "mode) do not reach it either, so opening a directory counts as its access.",
          .store = [](Settings& s, const Value& v) { s.fuse.atime = choice<AtimeMode>(v, PEREGRINE_CHOICES_ATIME); },
          .load = [](const Settings& s) { return choice_name(s.fuse.atime, PEREGRINE_CHOICES_ATIME); },
      },
      {
          .key = "fuse.discard",
          .kind = Kind::kBool,
          .default_value = false,
          .doc = "Discard (TRIM) freed space on the members as it is freed, as ext4's discard mount "
                 "option (the mount options discard and nodiscard say the same): once the journal "
                 "record that freed an extent is durable, a background thread discards it "
                 "(BLKDISCARD on a block device, a punched hole in a member file) and only then "
                 "lets it be reused. Deleting does not wait for it. false (the default, as on "
                 "ext4): run fstrim on the mount point now and then instead (fstrim.timer: see "
                 "docs/usage.md).",
          .store = [](Settings& s, const Value& v) { s.fuse.discard = flag(v); },
          .load = [](const Settings& s) { return Value(s.fuse.discard); },
      },
  };
}

std::vector<Option> stats_options() {
  return {
      {
          .key = "stats.enabled",
          .kind = Kind::kBool,
          .default_value = true,
          .doc = "Keep per-drive counters (IOs, bytes, merges, backlog, blocked workers) for "
                 "peregrine stats. They are per-thread and cheap; turn them off only to measure "
                 "their cost.",
          .store = [](Settings& s, const Value& v) { s.stats.enabled = flag(v); },
          .load = [](const Settings& s) { return Value(s.stats.enabled); },
      },
      {
          .key = "stats.log_interval_s",
          .kind = Kind::kInteger,
          .default_value = int64_t{0},
          .unit = "seconds",
          .min = 0,
          .max = 86400,
          .doc = "Write a one-line summary of the interval's counters to the log this often (IOPS in "
                 "all and per drive, MB/s read and written, merges, tag and pressure waits, errors, "
                 "device latency p50 and p99); 0 never does. Intervals without IO or errors write "
                 "nothing, so an idle volume keeps the log quiet.",
          .store = [](Settings& s, const Value& v) { s.stats.log_interval_s = u32(v); },
          .load = [](const Settings& s) { return Value(int64_t{s.stats.log_interval_s}); },
      },
  };
}

std::vector<Option> log_options() {
  return {
      {
          .key = "log.level",
          .kind = Kind::kChoice,
          .default_value = std::string("info"),
          .choices = PEREGRINE_CHOICES_LEVEL,
          .doc = "Least severe message written. debug is verbose but never logs per IO.",
          .store = [](Settings& s, const Value& v) { s.log.level = choice<LogLevel>(v, PEREGRINE_CHOICES_LEVEL); },
          .load = [](const Settings& s) { return choice_name(s.log.level, PEREGRINE_CHOICES_LEVEL); },
      },
      {
          .key = "log.target",
          .kind = Kind::kChoice,
          .default_value = std::string("auto"),
          .choices = PEREGRINE_CHOICES_TARGET,
          .doc = "Where messages go. auto: syslog (the journal under systemd) when the daemon "
                 "runs in the background, as after peregrine mount or mount(8), whose stderr is "
                 "/dev/null once it serves; stderr with --foreground, as in "
                 "peregrine@NAME.service, whose stderr is the journal. stderr in the background "
                 "discards the log.",
          .store = [](Settings& s, const Value& v) { s.log.target = choice<LogTarget>(v, PEREGRINE_CHOICES_TARGET); },
          .load = [](const Settings& s) { return choice_name(s.log.target, PEREGRINE_CHOICES_TARGET); },
      },
  };
}

std::vector<Option> build_options() {
  std::vector<Option> all;
  for (auto table : {&engine_options, &drive_options, &io_uring_options, &fuse_options, &stats_options, &log_options}) {
    std::vector<Option> part = table();
    all.insert(all.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
  }
  return all;
}

}  // namespace

const std::vector<Option>& options() {
  static const std::vector<Option> table = build_options();
  return table;
}

const std::vector<std::string_view>& tables() {
  static const std::vector<std::string_view> names = {"engine", "drive", "io_uring", "fuse", "stats", "log"};
  return names;
}

std::string_view table_doc(std::string_view table) {
  if (table == "engine") return "Staging: how FUSE workers batch sub-IOs and when they must wait.";
  if (table == "drive") return "Drive threads: one per member or per CPU; tags, merging, CPU placement.";
  if (table == "io_uring") return "The io_uring instance of each member drive.";
  if (table == "fuse") return "The FUSE session: worker threads and what the kernel is told.";
  if (table == "stats") return "Counters read by peregrine stats.";
  if (table == "log") return "Messages of the daemon.";
  return "";
}

const std::vector<OrderRule>& order_rules() {
  static const std::vector<OrderRule> rules = {
      {"engine.low_watermark_per_drive", "engine.high_watermark_per_drive", false,
       "a batch cannot be served inline above the size at which it is pushed anyway"},
      {"engine.low_pressure_per_drive", "engine.high_pressure_per_drive", true,
       "blocked workers resume below the low point, so it must lie under the high point"},
      {"fuse.congestion_threshold", "fuse.max_background", false,
       "the kernel cannot be congested above the number of requests it may send"},
  };
  return rules;
}

const std::vector<VolumeKey>& volume_keys() {
  static const std::vector<VolumeKey> keys = {
      {"members", "array of strings", true,
       "The member block devices or files, in volume order (the order mkfs.peregrine was given). "
       "Prefer stable names such as /dev/disk/by-id/...: the superblocks are checked at mount, "
       "so a wrong or missing member is refused, never written to."},
      {"mountpoint", "string", false,
       "Absolute path where peregrine mount NAME and peregrine@NAME.service mount the volume."},
      {"options", "string", false,
       "Settings for this volume only, in -o syntax: comma-separated key=value pairs with the "
       "dotted names of this file, e.g. \"engine.high_watermark_per_drive=64,fuse.allow_other=true\", "
       "and the mount options of mount.peregrine(8) (ro, noexec, ...). "
       "They override the tables above; -o on the command line overrides them."},
  };
  return keys;
}

const Option* find_option(std::string_view key) {
  for (const Option& o : options())
    if (o.key == key) return &o;
  return nullptr;
}

std::string Option::allowed() const {
  switch (kind) {
    case Kind::kBool: return "true or false";
    case Kind::kCpuList:
      return "\"auto\", \"none\" or a CPU list such as \"0,2-3\" (CPUs 0.." + std::to_string(kMaxCpu) + ")";
    case Kind::kChoice: {
      std::string out;
      for (size_t i = 0; i < choices.size(); ++i) {
        if (i > 0) out += i + 1 == choices.size() ? " or " : ", ";
        out += '"' + std::string(choices[i]) + '"';
      }
      return out;
    }
    case Kind::kInteger: {
      std::string out = allows_auto ? "\"auto\" or " : "";
      if (power_of_two) out += "a power of two, ";
      out += std::to_string(min) + ".." + std::to_string(max);
      return out;
    }
  }
  return "";
}

std::string format_value(const Value& v) {
  if (const bool* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (const int64_t* n = std::get_if<int64_t>(&v)) return std::to_string(*n);
  // A TOML basic string: control characters must be escaped, or the
  // effective configuration (a member path with a newline, say) would not
  // read back; other bytes (UTF-8) pass as they are.
  std::string out = "\"";
  for (char c : std::get<std::string>(v)) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\t': out += "\\t"; break;
      case '\n': out += "\\n"; break;
      case '\f': out += "\\f"; break;
      case '\r': out += "\\r"; break;
      default:
        if (u < 0x20 || u == 0x7f) {
          static const char hex[] = "0123456789ABCDEF";
          out += "\\u00";
          out += hex[u >> 4];
          out += hex[u & 0xf];
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

Settings Settings::defaults() {
  Settings s{};
  for (const Option& o : options()) o.store(s, o.default_value);
  return s;
}

}  // namespace peregrine::config
