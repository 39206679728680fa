// `peregrine-graph {bfs,kcore,cc,pagerank}`: open the graph, run one
// semi-external algorithm, report its IO, optionally validate it against the
// in-memory reference (not counted in the wall time), optionally write the
// per-vertex result (--out).
#include <sys/resource.h>

#include <chrono>
#include <iostream>

#include "commands.h"
#include "options.h"
#include "peregrine/graph/adjacency_reader.h"
#include "peregrine/graph/bfs.h"
#include "peregrine/graph/cc.h"
#include "peregrine/graph/csr_check.h"
#include "peregrine/graph/id_map.h"
#include "peregrine/graph/kcore.h"
#include "peregrine/graph/memory_graph.h"
#include "peregrine/graph/pagerank.h"
#include "peregrine/graph/validate.h"
#include "report.h"
#include "vertex_output.h"

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
  std::string dir, max_io, gap, out_file, out_format;
  ReaderOptions ro;
  uint64_t root = 0;
  uint32_t roots = 1;
  PagerankOptions pr;
  opts.add_options()
      ("graph", po::value(&dir)->required()->value_name("DIR"), "graph directory (from gen or import)")
      ("out", po::value(&out_file)->value_name("FILE"),
       "write the result of every vertex to FILE, one text line per vertex in the input's ids")
      ("out-format", po::value(&out_format)->default_value("text")->value_name("FMT"),
       "text, or bin: little-endian 8-byte fields per vertex (docs/graph.md)")
      ("validate", "check the graph data and the result against the in-memory reference")
      ("qd", po::value(&ro.queue_depth)->default_value(64)->value_name("N"), "io_uring queue depth: reads in flight")
      ("max-io", po::value(&max_io)->default_value("256K")->value_name("SIZE"), "largest single read (multiple of 4K)")
      ("gap", po::value(&gap)->default_value("16K")->value_name("SIZE"), "coalesce lists separated by at most this many bytes")
      ("buffered", "read through the page cache instead of O_DIRECT")
      ("json", "print the report as JSON");
  if (alg == "bfs") {
    opts.add_options()
        ("root", po::value(&root)->value_name("VERTEX"),
         "root vertex, an id of the input (default: the vertex of highest degree)")
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
  // Every bad option value is a usage error (exit 2), checked before the
  // graph is opened.
  auto max_io_bytes = parse_size(max_io);
  auto gap_bytes = parse_size(gap);
  if (!max_io_bytes || *max_io_bytes > UINT32_MAX) return usage_error(alg, "--max-io: bad size '" + max_io + "'");
  if (!gap_bytes || *gap_bytes > UINT32_MAX) return usage_error(alg, "--gap: bad size '" + gap + "'");
  if (ro.queue_depth < 1 || ro.queue_depth > 4096) return usage_error(alg, "--qd must be between 1 and 4096");
  ro.max_io_bytes = static_cast<uint32_t>(*max_io_bytes);
  ro.coalesce_gap_bytes = static_cast<uint32_t>(*gap_bytes);
  ro.direct = vm.count("buffered") == 0;
  if (Status st = AdjacencyReader::check_options(ro); !st) return usage_error(alg, "--max-io: " + st.message());
  auto out_fmt = parse_out_format(out_format);
  if (!out_fmt) return usage_error(alg, "--out-format: unknown format '" + out_format + "' (text, bin)");
  if (alg == "bfs" && (roots < 1 || roots > 1024)) return usage_error(alg, "--roots must be between 1 and 1024");
  if (alg == "pagerank") {
    if (pr.max_iterations < 1) return usage_error(alg, "--iterations must be at least 1");
    if (!(pr.damping >= 0 && pr.damping < 1)) return usage_error(alg, "--damping must be in [0, 1)");
    if (!(pr.epsilon >= 0)) return usage_error(alg, "--epsilon must be 0 or more");
  }

  auto graph = open_graph(dir);
  if (!graph) {
    std::cerr << prefix << graph.status().message() << "\n";
    return kExitError;
  }
  const Graph& g = *graph;
  if (alg == "kcore" && g.directed())
    return usage_error(alg, "k-core is defined on undirected graphs; " + dir +
                                " is directed (import it without --directed to get the k-cores of the underlying "
                                "undirected graph)");
  // The id map costs 8 bytes per vertex: load it only for --root and --out
  // (the report's BFS root is looked up alone).
  auto ids = vm.count("root") || !out_file.empty() ? IdMap::load(g) : IdMap::identity(g.num_vertices());
  if (!ids) {
    std::cerr << prefix << ids.status().message() << "\n";
    return kExitError;
  }
  Vertex root_vertex = 0;
  if (alg == "bfs" && !vm.count("root")) {
    root_vertex = default_bfs_root(g);
  } else if (alg == "bfs") {
    auto v = ids->find(root);
    if (!v && !g.meta.has_id_map)
      return usage_error(alg, "root " + std::to_string(root) + " out of range: graph " + dir + " has " +
                                  std::to_string(g.num_vertices()) + " vertices (0.." +
                                  std::to_string(g.num_vertices() - 1) + ")");
    if (!v)
      return usage_error(alg, "root " + std::to_string(root) + " is not a vertex of graph " + dir +
                                  " (not an id of the input it was imported from)");
    root_vertex = *v;
  }
  auto reader = AdjacencyReader::open(g, ro);
  if (!reader) {
    std::cerr << prefix << reader.status().message() << "\n";
    return kExitError;
  }
  if (ro.direct && !(*reader)->direct())
    std::cerr << prefix << "warning: " << g.adjacency_path().string()
              << ": filesystem refused O_DIRECT; reading through the page cache\n";
  // A directed graph's in-lists: PageRank pulls over them, weak components
  // follow arcs both ways.
  std::optional<Graph> transpose;
  std::unique_ptr<AdjacencyReader> in_reader;
  if (g.directed() && (alg == "cc" || alg == "pagerank" || vm.count("validate"))) {
    auto t = open_transpose(g);
    if (!t) {
      std::cerr << prefix << t.status().message() << "\n";
      return kExitError;
    }
    transpose = std::move(*t);
    if (alg == "cc" || alg == "pagerank") {
      auto r = AdjacencyReader::open(*transpose, ro);
      if (!r) {
        std::cerr << prefix << r.status().message() << "\n";
        return kExitError;
      }
      in_reader = std::move(*r);
    }
  }

  Report rep;
  rep.add("algorithm", alg);
  rep.add("graph", dir);
  if (!g.meta.imported) rep.add("scale", uint64_t{g.meta.scale});
  rep.add("directed", g.directed());
  rep.add("vertices", g.meta.vertices);
  rep.add("edges", g.meta.edges);
  rep.add("direct", (*reader)->direct());
  rep.add("queue_depth", uint64_t{ro.queue_depth});

  // The in-memory copy for --validate is loaded first and never timed.
  const bool validate = vm.count("validate") > 0;
  std::optional<MemoryGraph> mem, mem_in;
  double validate_secs = 0;
  Status invalid;    // first validation failure
  if (validate) {
    auto vt0 = Clock::now();
    auto m = load_memory_graph(g);
    if (!m) {
      std::cerr << prefix << m.status().message() << "\n";
      return kExitError;
    }
    mem = std::move(*m);
    mem->graph = &g;
    if (transpose) {
      auto t = load_memory_graph(*transpose);
      if (!t) {
        std::cerr << prefix << t.status().message() << "\n";
        return kExitError;
      }
      mem_in = std::move(*t);
      mem_in->graph = &*transpose;
    }
    // The references assume a well-formed graph (symmetric if undirected):
    // check the data itself first.
    Status data = check_graph(*mem, mem_in ? &*mem_in : nullptr);
    if (!data) invalid = Status::error(EDOM, "validation failed: graph data: " + data.message());
    validate_secs += since(vt0);
  }

  // Run (BFS: once per root); time only the algorithm.
  std::optional<BfsResult> bfs;  // the first root's
  std::optional<KcoreResult> kcore;
  std::optional<CcResult> cc;
  std::optional<PagerankResult> rank;
  Status st;         // run error
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
    for (Vertex r0 : pick_bfs_roots(g, root_vertex, roots)) {
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
      auto r = run_cc(g, **reader, in_reader.get());
      if (r) cc = std::move(*r); else st = r.status();
    });
    if (st) check([&] { return validate_cc(*mem, *cc); });
  } else {
    timed([&] {
      auto r = run_pagerank(g, **reader, pr, in_reader.get());
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
  IoStats io = (*reader)->stats();  // plus the in-lists' reader, if any
  if (in_reader) {
    io.reads += in_reader->stats().reads;
    io.bytes += in_reader->stats().bytes;
    io.list_bytes += in_reader->stats().list_bytes;
  }
  rep.add("wall_seconds", secs);
  rep.add("cpu_seconds", cpu);
  rep.add("bytes_read", io.bytes);
  rep.add("list_bytes", io.list_bytes);
  rep.add("ios", io.reads);
  rep.add("mb_per_s", secs > 0 ? static_cast<double>(io.bytes) / 1e6 / secs : 0.0);
  rep.add("iops", secs > 0 ? static_cast<double>(io.reads) / secs : 0.0);
  if (bfs) {
    auto user_root = vm.count("root") || !out_file.empty() ? Expected<uint64_t>(ids->user_id(bfs->root))
                                                            : read_user_id(g, bfs->root);
    if (!user_root) {
      std::cerr << prefix << user_root.status().message() << "\n";
      return kExitError;
    }
    rep.add("root", *user_root);
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
    rep.add("weakly_connected", g.directed());  // directed: arcs taken both ways
    rep.add("components", cc->components);
    rep.add("largest_component", cc->largest);
    rep.add("rounds", cc->rounds);
  } else {
    rep.add("iterations", uint64_t{rank->iterations});
    rep.add("last_delta", rank->last_delta);
  }

  if (!out_file.empty()) {
    Status ws = bfs     ? write_bfs_out(out_file, *out_fmt, *ids, *bfs)
                : kcore ? write_kcore_out(out_file, *out_fmt, *ids, *kcore)
                : cc    ? write_cc_out(out_file, *out_fmt, *ids, *cc)
                        : write_pagerank_out(out_file, *out_fmt, *ids, *rank);
    if (!ws) {
      std::cerr << prefix << ws.message() << "\n";
      return kExitError;
    }
    rep.add("out", out_file);
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
