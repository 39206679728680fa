// peregrine-bench-engine: the engine alone (no FUSE), one submitting thread,
// member files on tmpfs. Prints ratios against references measured in the
// same run (docs/design.md section 6):
//   1. four shaped members: 4 KiB random and 1 MiB sequential, read and
//      write, against the shaped aggregate; per-drive vs per-volume
//      scheduler; a skewed random load (one drive gets half).
//   2. unshaped members: 4 KiB random read against fio straight on the
//      member files (one job per member), and CPU time per sub-IO.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "closed_loop.h"
#include "peregrine/backend/member_file.h"
#include "peregrine/engine/layered_device_factory.h"

namespace po = boost::program_options;
using namespace peregrine;
using namespace peregrine::bench;

namespace {

struct Options {
  std::string dir;
  uint32_t members = 4;
  uint64_t member_mib = 256;
  double seconds = 3;
  uint32_t depth = 256;
  std::string json;
  bool skip_fio = false;
};

struct Row {
  std::string scenario;
  std::string scheduler;
  double iops = 0;
  double mbps = 0;
  double reference = 0;  // same unit as the ratio's numerator
  std::string unit;      // "IOPS" or "MB/s"
  double ratio = 0;
  double subios_per_io = 0;
  double cpu_us_per_subio = 0;
};

std::vector<MemberFile> make_members(const Options& o) {
  std::vector<MemberFile> v;
  for (uint32_t i = 0; i < o.members; ++i) {
    std::string path = o.dir + "/member" + std::to_string(i);
    int fd = ::open(path.c_str(), O_CREAT | O_RDWR, 0600);
    if (fd < 0 || posix_fallocate(fd, 0, static_cast<off_t>(o.member_mib << 20)) != 0) {
      std::perror(path.c_str());
      std::exit(1);
    }
    ::close(fd);
    auto m = MemberFile::open(path, MemberFile::Mode::read_write);
    if (!m) {
      std::fprintf(stderr, "%s\n", m.status().message().c_str());
      std::exit(1);
    }
    v.push_back(std::move(*m));
  }
  return v;
}

std::unique_ptr<Engine> make_engine(const std::vector<MemberFile>& members, Scheduler sched,
                                    const std::optional<ShapeParams>& shape, uint32_t qd, uint32_t unit,
                                    uint64_t member_bytes) {
  std::vector<DriveSpec> specs;
  std::vector<DeviceLayers> layers;
  for (const MemberFile& m : members) {
    DriveSpec d;
    d.name = m.info().path;
    d.fd = m.fd();
    d.queue_depth = qd;
    specs.push_back(std::move(d));
    layers.push_back(DeviceLayers{.shape = shape, .faults = {}, .power_cut = {}, .wrap = {}});
  }
  EngineConfig c;
  c.scheduler = sched;
  StripeMap map(static_cast<uint32_t>(members.size()), unit, 0, member_bytes);
  LayeredDeviceFactory devices(std::move(layers));
  auto e = Engine::create(c, map, std::move(specs), devices);
  if (!e) {
    std::fprintf(stderr, "%s\n", e.status().message().c_str());
    std::exit(1);
  }
  return std::move(*e);
}

Row measure(const std::string& scenario, Engine& engine, Scheduler sched, IoOp op, uint64_t bytes, const Options& o,
            OffsetFn next, double reference, bool iops_metric) {
  std::vector<DriveStats> before;
  for (uint32_t d = 0; d < engine.drive_count(); ++d) before.push_back(engine.stats(d));
  LoopResult r = run_closed_loop(engine, op, bytes, o.depth, o.seconds, next);
  uint64_t subios = 0, ios = 0;
  for (uint32_t d = 0; d < engine.drive_count(); ++d) {
    DriveStats s = engine.stats(d);
    subios += s.subios - before[d].subios;
    ios += s.ios - before[d].ios;
  }
  Row row;
  row.scenario = scenario;
  row.scheduler = sched == Scheduler::per_drive ? "per-drive" : "per-volume";
  row.iops = static_cast<double>(r.requests) / r.seconds;
  row.mbps = static_cast<double>(r.bytes) / r.seconds / 1e6;
  row.reference = reference;
  row.unit = iops_metric ? "IOPS" : "MB/s";
  row.ratio = (iops_metric ? row.iops : row.mbps) / reference;
  row.subios_per_io = ios ? static_cast<double>(subios) / static_cast<double>(ios) : 0;
  row.cpu_us_per_subio = subios ? r.cpu_seconds * 1e6 / static_cast<double>(subios) : 0;
  if (r.errors != 0)
    std::fprintf(stderr, "warning: %s: %llu requests failed\n", scenario.c_str(),
                 static_cast<unsigned long long>(r.errors));
  std::fprintf(stderr, "  %-28s %-10s %10.0f IOPS %9.1f MB/s  ratio %.3f\n", scenario.c_str(), row.scheduler.c_str(),
               row.iops, row.mbps, row.ratio);
  return row;
}

// fio straight on the member files, one job per member, same total depth.
double fio_randread_iops(const Options& o) {
  std::ostringstream cmd;
  cmd << "fio --output-format=terse --terse-version=3 --group_reporting --ioengine=io_uring --direct=1"
      << " --rw=randread --bs=4k --time_based --runtime=" << static_cast<int>(o.seconds + 0.5)
      << " --iodepth=" << o.depth / o.members;
  for (uint32_t i = 0; i < o.members; ++i) cmd << " --name=m" << i << " --filename=" << o.dir << "/member" << i;
  FILE* p = popen(cmd.str().c_str(), "r");
  if (p == nullptr) return 0;
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  if (pclose(p) != 0) {
    std::fprintf(stderr, "fio failed; is it installed? (tools/install-deps)\n");
    return 0;
  }
  // Terse v3: field 8 (1-based) is the read IOPS.
  std::istringstream fields(out);
  std::string f;
  for (int i = 0; i < 8 && std::getline(fields, f, ';'); ++i) {
  }
  return std::stod(f);
}

void print_table(const std::vector<Row>& rows) {
  std::printf("\n| scenario | scheduler | IOPS | MB/s | reference | ratio | sub-IOs per IO | CPU us per sub-IO |\n");
  std::printf("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (const Row& r : rows) {
    std::printf("| %s | %s | %.0f | %.1f | %.0f %s | %.3f | %.1f | %.2f |\n", r.scenario.c_str(), r.scheduler.c_str(),
                r.iops, r.mbps, r.reference, r.unit.c_str(), r.ratio, r.subios_per_io, r.cpu_us_per_subio);
  }
}

void write_json(const std::vector<Row>& rows, const std::string& path) {
  std::ofstream out(path);
  out << "[\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    out << "  {\"scenario\": \"" << r.scenario << "\", \"scheduler\": \"" << r.scheduler << "\", \"iops\": " << r.iops
        << ", \"mbps\": " << r.mbps << ", \"reference\": " << r.reference << ", \"reference_unit\": \"" << r.unit
        << "\", \"ratio\": " << r.ratio << ", \"subios_per_io\": " << r.subios_per_io
        << ", \"cpu_us_per_subio\": " << r.cpu_us_per_subio << "}" << (i + 1 < rows.size() ? "," : "") << "\n";
  }
  out << "]\n";
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  po::options_description desc("peregrine-bench-engine: engine throughput with one submitting thread");
  desc.add_options()("help,h", "this help")("dir", po::value(&o.dir),
                                            "directory for member files (default: a new one under /dev/shm)")(
      "members", po::value(&o.members)->default_value(4), "member count")(
      "member-mib", po::value(&o.member_mib)->default_value(256), "member size in MiB")(
      "seconds", po::value(&o.seconds)->default_value(3), "seconds per measurement")(
      "depth", po::value(&o.depth)->default_value(256), "requests kept outstanding")(
      "json", po::value(&o.json), "also write the results as JSON to this file")("no-fio", po::bool_switch(&o.skip_fio),
                                                                                 "skip the fio reference");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, desc), vm);
    po::notify(vm);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "peregrine-bench-engine: %s\n", e.what());
    return 2;
  }
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  bool own_dir = o.dir.empty();
  if (own_dir) {
    char tmpl[] = "/dev/shm/peregrine-bench-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
      std::perror("mkdtemp /dev/shm");
      return 1;
    }
    o.dir = tmpl;
  }
  std::fprintf(stderr, "members: %u x %llu MiB in %s, %g s per run, depth %u\n", o.members,
               static_cast<unsigned long long>(o.member_mib), o.dir.c_str(), o.seconds, o.depth);
  std::vector<MemberFile> members = make_members(o);
  uint64_t member_bytes = o.member_mib << 20;
  const uint32_t unit = 4096;
  uint64_t volume = member_bytes * o.members;

  std::mt19937_64 rng(1);
  auto random4k = [&] { return (rng() % (volume / 4096)) * 4096; };
  uint64_t seq = 0;
  auto sequential = [&](uint64_t size) {
    return [&, size] {
      uint64_t off = seq;
      seq = (seq + size) % (volume / size * size);
      return off;
    };
  };
  auto skewed = [&] {
    uint64_t rows = volume / unit / o.members;
    uint64_t row = rng() % rows;
    uint32_t m = (rng() % 2 == 0) ? 0 : 1 + static_cast<uint32_t>(rng() % (o.members - 1));
    return (row * o.members + m) * unit;
  };

  ShapeParams ssd;
  ssd.latency_ns = 80000;
  ssd.queue_depth = 32;
  ssd.iops = 25000;
  ssd.bytes_per_sec = 500000000;
  double agg_iops = static_cast<double>(ssd.iops) * o.members;
  double agg_mbps = static_cast<double>(ssd.bytes_per_sec) * o.members / 1e6;
  // Skewed: drive 0 takes half, so it saturates first: the whole volume
  // can do twice drive 0's IOPS.
  double skew_iops = 2.0 * static_cast<double>(ssd.iops);

  std::vector<Row> rows;
  std::fprintf(stderr, "shaped members: 80 us, QD 32, 25K IOPS, 500 MB/s each\n");
  for (Scheduler s : {Scheduler::per_drive, Scheduler::per_volume}) {
    auto engine = make_engine(members, s, ssd, ssd.queue_depth, unit, member_bytes);
    rows.push_back(measure("shaped 4K randread", *engine, s, IoOp::read, 4096, o, random4k, agg_iops, true));
    rows.push_back(measure("shaped 4K randwrite", *engine, s, IoOp::write, 4096, o, random4k, agg_iops, true));
    seq = 0;
    rows.push_back(
        measure("shaped 1M seqread", *engine, s, IoOp::read, 1 << 20, o, sequential(1 << 20), agg_mbps, false));
    seq = 0;
    rows.push_back(
        measure("shaped 1M seqwrite", *engine, s, IoOp::write, 1 << 20, o, sequential(1 << 20), agg_mbps, false));
    rows.push_back(measure("shaped 4K randread skewed", *engine, s, IoOp::read, 4096, o, skewed, skew_iops, true));
  }

  std::fprintf(stderr, "unshaped tmpfs members\n");
  double fio_iops = o.skip_fio ? 0 : fio_randread_iops(o);
  {
    auto engine = make_engine(members, Scheduler::per_drive, std::nullopt, 64, unit, member_bytes);
    rows.push_back(measure("tmpfs 4K randread vs fio", *engine, Scheduler::per_drive, IoOp::read, 4096, o, random4k,
                           fio_iops > 0 ? fio_iops : 1, true));
  }
  print_table(rows);
  std::printf("\nfio, one job per member, iodepth %u each: %.0f IOPS\n", o.depth / o.members, fio_iops);
  if (!o.json.empty()) write_json(rows, o.json);
  members.clear();
  if (own_dir) std::filesystem::remove_all(o.dir);
  return 0;
}
