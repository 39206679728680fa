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
  PagerankOptions pr;
  opts.add_options()
      ("graph", po::value(&dir)->required(), "graph directory (from gen)")
      ("validate", "check the result against the in-memory reference")
      ("qd", po::value(&ro.queue_depth)->default_value(64), "io_uring queue depth: reads in flight")
      ("max-io", po::value(&max_io)->default_value("256K"), "largest single read (multiple of 4K)")
      ("gap", po::value(&gap)->default_value("16K"), "coalesce lists separated by at most this many bytes")
      ("buffered", "read through the page cache instead of O_DIRECT")
      ("json", "print the report as JSON");
  if (alg == "bfs") {
    opts.add_options()("root", po::value(&root), "root vertex (default: the vertex of highest degree)");
  } else if (alg == "pagerank") {
    opts.add_options()
        ("iterations", po::value(&pr.max_iterations)->default_value(20), "maximum iterations")
        ("epsilon", po::value(&pr.epsilon)->default_value(1e-8), "stop when an iteration changes ranks by less (L1)")
        ("damping", po::value(&pr.damping)->default_value(0.85), "damping factor");
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

  // Run; keep the result for validation.
  std::optional<BfsResult> bfs;
  std::optional<KcoreResult> kcore;
  std::optional<CcResult> cc;
  std::optional<PagerankResult> rank;
  Status st;
  const double cpu0 = cpu_seconds();
  auto t0 = Clock::now();
  if (alg == "bfs") {
    auto r = run_bfs(g, **reader, root);
    if (r) bfs = std::move(*r); else st = r.status();
  } else if (alg == "kcore") {
    auto r = run_kcore(g, **reader);
    if (r) kcore = std::move(*r); else st = r.status();
  } else if (alg == "cc") {
    auto r = run_cc(g, **reader);
    if (r) cc = std::move(*r); else st = r.status();
  } else {
    auto r = run_pagerank(g, **reader, pr);
    if (r) rank = std::move(*r); else st = r.status();
  }
  const double secs = since(t0);
  const double cpu = cpu_seconds() - cpu0;
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
    rep.add("teps", secs > 0 ? static_cast<double>(bfs->component_edges) / secs : 0.0);
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
  if (vm.count("validate")) {
    auto vt0 = Clock::now();
    auto m = load_memory_graph(g);
    if (!m) {
      std::cerr << prefix << m.status().message() << "\n";
      return kExitError;
    }
    if (bfs) st = validate_bfs(*m, *bfs);
    else if (kcore) st = validate_kcore(*m, *kcore);
    else if (cc) st = validate_cc(*m, *cc);
    else {
      double l1 = 0;
      st = validate_pagerank(*m, *rank, pr.damping, &l1);
      rep.add("validate_l1", l1);
    }
    rep.add("validated", st.is_ok());
    rep.add("validate_seconds", since(vt0));
    if (!st) {
      std::cerr << prefix << st.message() << "\n";
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
