// `peregrine-graph {bfs,kcore,cc,pagerank}`: open the graph, run one
// semi-external algorithm, report its IO, optionally validate it against the
// in-memory reference (not counted in the wall time).
#include <sys/resource.h>

#include <chrono>
#include <iostream>

#include "commands.h"
#include "options.h"
#include "peregrine/graph/adjacency_reader.h"
#include "peregrine/graph/bfs.h"
#include "peregrine/graph/cc.h"
#include "peregrine/graph/kcore.h"
#include "peregrine/graph/memory_graph.h"
#include "peregrine/graph/pagerank.h"
#include "peregrine/graph/validate.h"
#include "report.h"

namespace peregrine::graph::cli {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// User + system CPU of the whole process, io_uring workers included: with
// wall time it tells an IO-bound run from a CPU-bound (or CPU-starved) one.
double cpu_seconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return sec(ru.ru_utime) + sec(ru.ru_stime);
}

}  // namespace

int cmd_algorithm(int argc, char** argv) {
  const std::string alg = argv[0];
  const std::string prefix = "peregrine-graph " + alg + ": ";
  po::options_description opts(alg + " options");
  std::string dir, max_io, gap;
  ReaderOptions ro;
  uint64_t root = 0;
  uint32_t roots = 1;
  PagerankOptions pr;
  opts.add_options()
      ("graph", po::value(&dir)->required()->value_name("DIR"), "graph directory (from gen)")
      ("validate", "check the result against the in-memory reference")
      ("qd", po::value(&ro.queue_depth)->default_value(64)->value_name("N"), "io_uring queue depth: reads in flight")
      ("max-io", po::value(&max_io)->default_value("256K")->value_name("SIZE"), "largest single read (multiple of 4K)")
      ("gap", po::value(&gap)->default_value("16K")->value_name("SIZE"), "coalesce lists separated by at most this many bytes")
      ("buffered", "read through the page cache instead of O_DIRECT")
      ("json", "print the report as JSON");
  if (alg == "bfs") {
    opts.add_options()
        ("root", po::value(&root)->value_name("VERTEX"), "root vertex (default: the vertex of highest degree)")
        ("roots", po::value(&roots)->default_value(1)->value_name("N"),
         "searches to run: --root first, then pseudo-random vertices with edges; TEPS is their harmonic mean");
  } else if (alg == "pagerank") {
    opts.add_options()
        ("iterations", po::value(&pr.max_iterations)->default_value(20)->value_name("N"), "maximum iterations")
        ("epsilon", po::value(&pr.epsilon)->default_value(1e-8, "1e-8")->value_name("E"), "stop when an iteration changes ranks by less (L1)")
        ("damping", po::value(&pr.damping)->default_value(0.85, "0.85")->value_name("D"), "damping factor");
  }
  po::variables_map vm;
  if (auto rc = parse_command(argc, argv, "peregrine-graph " + alg + " --graph DIR [options]", opts, vm)) return *rc;
  auto max_io_bytes = parse_size(max_io);
  auto gap_bytes = parse_size(gap);
  if (!max_io_bytes || *max_io_bytes > UINT32_MAX || !gap_bytes || *gap_bytes > UINT32_MAX) {
    std::cerr << prefix << "bad --max-io or --gap size\n";
    return kExitUsage;
  }
  if (ro.queue_depth < 1 || ro.queue_depth > 4096) {
    std::cerr << prefix << "--qd must be between 1 and 4096\n";
    return kExitUsage;
  }
  ro.max_io_bytes = static_cast<uint32_t>(*max_io_bytes);
  ro.coalesce_gap_bytes = static_cast<uint32_t>(*gap_bytes);
  ro.direct = vm.count("buffered") == 0;

  auto graph = open_graph(dir);
  if (!graph) {
    std::cerr << prefix << graph.status().message() << "\n";
    return kExitError;
  }
  const Graph& g = *graph;
  if (alg == "bfs" && !vm.count("root")) root = default_bfs_root(g);
  if (alg == "bfs" && (roots < 1 || roots > 1024)) {
    std::cerr << prefix << "--roots must be between 1 and 1024\n";
    return kExitUsage;
  }
  if (alg == "bfs" && root >= g.num_vertices()) {
    std::cerr << prefix << "root " << root << " out of range: graph " << dir << " has " << g.num_vertices()
              << " vertices (0.." << g.num_vertices() - 1 << ")\n";
    return kExitUsage;
  }
  auto reader = AdjacencyReader::open(g, ro);
  if (!reader) {
    std::cerr << prefix << reader.status().message() << "\n";
    return kExitError;
  }
  if (ro.direct && !(*reader)->direct())
    std::cerr << prefix << "warning: " << g.adjacency_path().string()
              << ": filesystem refused O_DIRECT; reading through the page cache\n";

  Report rep;
  rep.add("algorithm", alg);
  rep.add("graph", dir);
  rep.add("scale", uint64_t{g.meta.scale});
  rep.add("vertices", g.meta.vertices);
  rep.add("edges", g.meta.edges);
  rep.add("direct", (*reader)->direct());
  rep.add("queue_depth", uint64_t{ro.queue_depth});

  // The in-memory copy for --validate is loaded first and never timed.
  const bool validate = vm.count("validate") > 0;
  std::optional<MemoryGraph> mem;
  double validate_secs = 0;
  if (validate) {
    auto vt0 = Clock::now();
    auto m = load_memory_graph(g);
    if (!m) {
      std::cerr << prefix << m.status().message() << "\n";
      return kExitError;
    }
    mem = std::move(*m);
    mem->graph = &g;
    validate_secs += since(vt0);
  }

  // Run (BFS: once per root); time only the algorithm.
  std::optional<BfsResult> bfs;  // the first root's
  std::optional<KcoreResult> kcore;
  std::optional<CcResult> cc;
  std::optional<PagerankResult> rank;
  Status st;         // run error
  Status invalid;    // first validation failure
  double secs = 0;
  double cpu = 0;
  double inv_teps_sum = 0, teps_min = 0, teps_max = 0;
  uint64_t runs = 0;
  double pagerank_l1 = -1;  // set by PageRank validation
  auto timed = [&](auto&& body) {
    const double cpu0 = cpu_seconds();
    auto t0 = Clock::now();
    body();
    const double s = since(t0);
    secs += s;
    cpu += cpu_seconds() - cpu0;
    return s;
  };
  auto check = [&](auto&& validator) {
    if (!validate || !invalid.is_ok()) return;
    auto vt0 = Clock::now();
    invalid = validator();
    validate_secs += since(vt0);
  };
  if (alg == "bfs") {
    for (Vertex r0 : pick_bfs_roots(g, static_cast<Vertex>(root), roots)) {
      std::optional<BfsResult> one;
      double s = timed([&] {
        auto r = run_bfs(g, **reader, r0);
        if (r) one = std::move(*r); else st = r.status();
      });
      if (!st) break;
      check([&] { return validate_bfs(*mem, *one); });
      // Graph500 reports the harmonic mean of the per-search TEPS.
      double teps = s > 0 ? static_cast<double>(one->component_edges) / s : 0.0;
      inv_teps_sum += teps > 0 ? 1.0 / teps : 0.0;
      teps_min = runs == 0 ? teps : std::min(teps_min, teps);
      teps_max = std::max(teps_max, teps);
      ++runs;
      if (!bfs) bfs = std::move(one);
    }
  } else if (alg == "kcore") {
    timed([&] {
      auto r = run_kcore(g, **reader);
      if (r) kcore = std::move(*r); else st = r.status();
    });
    if (st) check([&] { return validate_kcore(*mem, *kcore); });
  } else if (alg == "cc") {
    timed([&] {
      auto r = run_cc(g, **reader);
      if (r) cc = std::move(*r); else st = r.status();
    });
    if (st) check([&] { return validate_cc(*mem, *cc); });
  } else {
    timed([&] {
      auto r = run_pagerank(g, **reader, pr);
      if (r) rank = std::move(*r); else st = r.status();
    });
    if (st) {
      check([&] {
        return validate_pagerank(*mem, *rank, pr.damping, &pagerank_l1);
      });
    }
  }
  if (!st) {
    std::cerr << prefix << st.message() << "\n";
    return kExitError;
  }
  const IoStats& io = (*reader)->stats();
  rep.add("wall_seconds", secs);
  rep.add("cpu_seconds", cpu);
  rep.add("bytes_read", io.bytes);
  rep.add("list_bytes", io.list_bytes);
  rep.add("ios", io.reads);
  rep.add("mb_per_s", secs > 0 ? static_cast<double>(io.bytes) / 1e6 / secs : 0.0);
  rep.add("iops", secs > 0 ? static_cast<double>(io.reads) / secs : 0.0);
  if (bfs) {
    rep.add("root", uint64_t{bfs->root});
    rep.add("reached", bfs->reached);
    rep.add("levels", bfs->levels);
    rep.add("component_edges", bfs->component_edges);
    rep.add("roots", runs);
    rep.add("teps", inv_teps_sum > 0 ? static_cast<double>(runs) / inv_teps_sum : 0.0);
    if (runs > 1) {
      rep.add("teps_min", teps_min);
      rep.add("teps_max", teps_max);
    }
  } else if (kcore) {
    rep.add("max_core", uint64_t{kcore->max_core});
    rep.add("batches", kcore->batches);
  } else if (cc) {
    rep.add("components", cc->components);
    rep.add("largest_component", cc->largest);
    rep.add("rounds", cc->rounds);
  } else {
    rep.add("iterations", uint64_t{rank->iterations});
    rep.add("last_delta", rank->last_delta);
  }

  int rc = kExitOk;
  if (validate) {
    if (pagerank_l1 >= 0) rep.add("validate_l1", pagerank_l1);
    rep.add("validated", invalid.is_ok());
    rep.add("validate_seconds", validate_secs);
    if (!invalid) {
      std::cerr << prefix << invalid.message() << "\n";
      rc = kExitInvalid;
    }
  }
  if (vm.count("json"))
    rep.print_json(std::cout);
  else
    rep.print_text(std::cout);
  return rc;
}

}  // namespace peregrine::graph::cli
