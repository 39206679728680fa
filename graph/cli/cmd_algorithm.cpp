// `peregrine-graph {bfs,sssp,bc,kcore,cc,pagerank,tc}`: open the graph, run one
// semi-external algorithm, report its IO, optionally validate it against the
// in-memory reference (not counted in the wall time), optionally write the
// per-vertex result (--out).
#include <sys/resource.h>

#include <chrono>
#include <iostream>

#include "commands.h"
#include "options.h"
#include "peregrine/graph/adjacency_reader.h"
#include "peregrine/graph/bc.h"
#include "peregrine/graph/bfs.h"
#include "peregrine/graph/cc.h"
#include "peregrine/graph/csr_check.h"
#include "peregrine/graph/id_map.h"
#include "peregrine/graph/kcore.h"
#include "peregrine/graph/memory_graph.h"
#include "peregrine/graph/pagerank.h"
#include "peregrine/graph/sssp.h"
#include "peregrine/graph/tc.h"
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

// What the command line asked for, checked.
struct AlgorithmArgs {
  std::string alg;
  std::string dir;
  std::string out_file;
  OutFormat out_format{};
  ReaderOptions reader;
  bool has_root = false;
  uint64_t root = 0;
  uint32_t roots = 1;
  bool top_down = false;  // bfs: no bottom-up levels
  PagerankOptions pagerank;
  SsspOptions sssp;
  unsigned threads = 0;  // threads that compute (tc; bfs, sssp, bc, pagerank over kept lists), 0 = one per CPU
  bool validate = false;
  bool json = false;
};

// Parses and checks every option (a bad value is a usage error, exit 2,
// before the graph is opened). Returns an exit code when the command ends
// here (--help, bad options).
std::optional<int> parse_algorithm_args(int argc, char** argv, AlgorithmArgs* a) {
  a->alg = argv[0];
  const std::string& alg = a->alg;
  po::options_description opts(alg + " options");
  std::string max_io, gap, out_format, threads = "0", memory = "auto";
  opts.add_options()("graph", po::value(&a->dir)->required()->value_name("DIR"),
                     "graph directory (from gen or import)")(
      "out", po::value(&a->out_file)->value_name("FILE"),
      "write the result of every vertex to FILE, one text line per vertex in the input's ids")(
      "out-format", po::value(&out_format)->default_value("text")->value_name("FMT"),
      "text, or bin: little-endian 8-byte fields per vertex (docs/graph.md)")(
      "validate", "check the graph data and the result against the in-memory reference")(
      "qd", po::value(&a->reader.queue_depth)->default_value(64)->value_name("N"),
      "io_uring queue depth: reads in flight")("max-io", po::value(&max_io)->default_value("256K")->value_name("SIZE"),
                                               "largest single read (multiple of 4K)")(
      "gap", po::value(&gap)->default_value("16K")->value_name("SIZE"),
      "coalesce lists separated by at most this many bytes")("buffered",
                                                             "read through the page cache instead of O_DIRECT")(
      "memory", po::value(&memory)->default_value("auto")->value_name("SIZE"),
      "keep the lists in memory after one read when they fit in SIZE (e.g. 2G); auto: half of the memory "
      "available when the command starts; 0: read them from the graph on every pass")(
      "threads", po::value(&threads)->default_value("0")->value_name("N"),
      "threads that compute (tc always; bfs, sssp, bc and pagerank when the lists are kept in memory); 0: one "
      "per CPU")("json", "print the report as JSON");
  if (alg == "bfs") {
    opts.add_options()("root", po::value(&a->root)->value_name("VERTEX"),
                       "root vertex, an id of the input (default: the vertex of highest degree)")(
        "roots", po::value(&a->roots)->default_value(1)->value_name("N"),
        "searches to run: --root first, then pseudo-random vertices with edges; TEPS is their harmonic mean")(
        "top-down",
        "expand every level from the frontier (by default an undirected graph's widest levels go "
        "bottom-up, from the vertices not reached yet, when their lists are the fewer entries)");
  } else if (alg == "sssp") {
    opts.add_options()("root", po::value(&a->root)->value_name("VERTEX"),
                       "source vertex, an id of the input (default: the vertex of highest degree)")(
        "delta", po::value(&a->sssp.delta)->default_value(0)->value_name("D"),
        "delta-stepping bucket width, in weight units; 0: the graph's largest weight (1 when unweighted)");
  } else if (alg == "bc") {
    opts.add_options()("root", po::value(&a->root)->value_name("VERTEX"),
                       "first source, an id of the input (default: the vertex of highest degree)")(
        "roots", po::value(&a->roots)->default_value(1)->value_name("N"),
        "sources: --root first, then pseudo-random vertices with edges (as bfs --roots)");
  } else if (alg == "pagerank") {
    PagerankOptions& pr = a->pagerank;
    opts.add_options()("iterations", po::value(&pr.max_iterations)->default_value(20)->value_name("N"),
                       "maximum iterations")("epsilon",
                                             po::value(&pr.epsilon)->default_value(1e-8, "1e-8")->value_name("E"),
                                             "stop when an iteration changes ranks by less (L1)")(
        "damping", po::value(&pr.damping)->default_value(0.85, "0.85")->value_name("D"), "damping factor");
  }
  po::variables_map vm;
  if (auto rc = parse_command(argc, argv, "peregrine-graph " + alg + " --graph DIR [options]", opts, vm)) return rc;
  a->has_root = vm.count("root") > 0;
  a->top_down = vm.count("top-down") > 0;
  a->validate = vm.count("validate") > 0;
  a->json = vm.count("json") > 0;
  auto max_io_bytes = parse_size(max_io);
  auto gap_bytes = parse_size(gap);
  if (!max_io_bytes || *max_io_bytes > UINT32_MAX) return usage_error(alg, "--max-io: bad size '" + max_io + "'");
  if (!gap_bytes || *gap_bytes > UINT32_MAX) return usage_error(alg, "--gap: bad size '" + gap + "'");
  ReaderOptions& ro = a->reader;
  if (ro.queue_depth < 1 || ro.queue_depth > 4096) return usage_error(alg, "--qd must be between 1 and 4096");
  ro.max_io_bytes = static_cast<uint32_t>(*max_io_bytes);
  ro.coalesce_gap_bytes = static_cast<uint32_t>(*gap_bytes);
  ro.direct = vm.count("buffered") == 0;
  if (Status st = AdjacencyReader::check_options(ro); !st) return usage_error(alg, "--max-io: " + st.message());
  auto out_fmt = parse_out_format(out_format);
  if (!out_fmt) return usage_error(alg, "--out-format: unknown format '" + out_format + "' (text, bin)");
  a->out_format = *out_fmt;
  if ((alg == "bfs" || alg == "bc") && (a->roots < 1 || a->roots > 1024))
    return usage_error(alg, "--roots must be between 1 and 1024");
  if (auto rc = parse_threads(alg, threads, &a->threads)) return rc;
  if (memory == "auto") {
    ro.keep_bytes = available_memory() / 2;
  } else {
    auto keep = parse_size(memory);
    if (!keep) return usage_error(alg, "--memory: bad size '" + memory + "' (use e.g. 0, 512M, 2G or auto)");
    ro.keep_bytes = *keep;
  }
  // tc reads each list once (into batches of its own), cc once and then
  // only the lists outside its largest set: keeping them would cost the
  // memory and the overlap of reading with computing.
  if (alg == "cc" || alg == "tc") ro.keep_bytes = 0;
  if (alg == "pagerank") {
    const PagerankOptions& pr = a->pagerank;
    if (pr.max_iterations < 1) return usage_error(alg, "--iterations must be at least 1");
    if (!(pr.damping >= 0 && pr.damping < 1)) return usage_error(alg, "--damping must be in [0, 1)");
    if (!(pr.epsilon >= 0)) return usage_error(alg, "--epsilon must be 0 or more");
  }
  return std::nullopt;
}

// --root in the input's ids, as a vertex of the graph (bfs, sssp, bc).
Expected<Vertex> bfs_root(const AlgorithmArgs& a, const Graph& g, const IdMap& ids) {
  if (!a.has_root) return default_bfs_root(g);
  auto v = ids.find(a.root);
  if (!v && !g.meta.has_id_map)
    return Status::error(EINVAL, "root " + std::to_string(a.root) + " out of range: graph " + a.dir + " has " +
                                     std::to_string(g.num_vertices()) + " vertices (0.." +
                                     std::to_string(g.num_vertices() - 1) + ")");
  if (!v)
    return Status::error(EINVAL, "root " + std::to_string(a.root) + " is not a vertex of graph " + a.dir +
                                     " (not an id of the input it was imported from)");
  return *v;
}

// The graph's readers: its out-lists, and a directed graph's in-lists
// (transposed CSR) where the algorithm or --validate needs them.
struct GraphReaders {
  std::unique_ptr<AdjacencyReader> out;
  // On the heap: the in-list reader and the reference keep its address
  // while GraphReaders moves.
  std::unique_ptr<Graph> transpose;
  std::unique_ptr<AdjacencyReader> in;  // PageRank pulls over it
};

Expected<GraphReaders> open_readers(const AlgorithmArgs& a, const Graph& g) {
  GraphReaders r;
  ReaderOptions out_options = a.reader;
  out_options.weights = a.alg == "sssp" && g.weighted();  // the others ignore weights
  auto out = AdjacencyReader::open(g, out_options);
  if (!out) return out.status();
  r.out = std::move(*out);
  const bool uses_in = a.alg == "pagerank";
  if (g.directed() && (uses_in || a.validate)) {
    auto t = open_transpose(g);
    if (!t) return t.status();
    r.transpose = std::make_unique<Graph>(std::move(*t));
    if (uses_in) {
      auto in = AdjacencyReader::open(*r.transpose, a.reader);
      if (!in) return in.status();
      r.in = std::move(*in);
    }
  }
  return r;
}

// --validate's in-memory copy (and a directed graph's transpose), loaded
// before the run and never timed; the graph data is checked first, since
// the references assume a well-formed graph. *invalid: the data's problem.
struct Reference {
  std::optional<MemoryGraph> graph, transpose;
};

Expected<Reference> load_reference(const Graph& g, const GraphReaders& readers, Status* invalid) {
  Reference ref;
  auto m = load_memory_graph(g);
  if (!m) return m.status();
  ref.graph = std::move(*m);
  ref.graph->graph = &g;
  if (readers.transpose) {
    auto t = load_memory_graph(*readers.transpose);
    if (!t) return t.status();
    ref.transpose = std::move(*t);
    ref.transpose->graph = &*readers.transpose;
  }
  Status data = check_graph(*ref.graph, ref.transpose ? &*ref.transpose : nullptr);
  if (!data) *invalid = Status::error(EDOM, "validation failed: graph data: " + data.message());
  return ref;
}

// One algorithm's run: its result, the time and CPU of the algorithm alone
// (validation excluded), and BFS's per-search rates.
struct AlgorithmRun {
  std::optional<BfsResult> bfs;  // the first root's
  std::optional<SsspResult> sssp;
  std::optional<KcoreResult> kcore;
  std::optional<CcResult> cc;
  std::optional<PagerankResult> rank;
  std::optional<TcResult> tc;
  std::optional<BcResult> bc;
  double secs = 0;
  double cpu = 0;
  double inv_teps_sum = 0, teps_min = 0, teps_max = 0;
  uint64_t runs = 0;
  double validate_secs = 0;
  double pagerank_l1 = -1;  // set by PageRank validation
};

// Runs the algorithm (BFS: once per root), validating each result against
// `ref` while `*invalid` is still ok. Returns the run's error, if any.
Status run_algorithm(const AlgorithmArgs& a, const Graph& g, GraphReaders& readers, Vertex root_vertex,
                     const Reference* ref, Status* invalid, AlgorithmRun* out) {
  AlgorithmRun& run = *out;
  Status st;
  auto timed = [&](auto&& body) {
    const double cpu0 = cpu_seconds();
    auto t0 = Clock::now();
    body();
    const double s = since(t0);
    run.secs += s;
    run.cpu += cpu_seconds() - cpu0;
    return s;
  };
  auto check = [&](auto&& validator) {
    if (ref == nullptr || !invalid->is_ok()) return;
    auto vt0 = Clock::now();
    *invalid = validator();
    run.validate_secs += since(vt0);
  };
  // An algorithm's result into its slot, or its error into st.
  auto keep = [&st](auto&& result, auto& slot) {
    if (result)
      slot = std::move(*result);
    else
      st = result.status();
  };
  AdjacencyReader& reader = *readers.out;
  if (a.alg == "bfs") {
    const BfsDirection direction = a.top_down ? BfsDirection::kTopDown : BfsDirection::kOptimising;
    for (Vertex r0 : pick_bfs_roots(g, root_vertex, a.roots)) {
      std::optional<BfsResult> one;
      double s = timed([&] { keep(run_bfs(g, reader, r0, direction, a.threads), one); });
      if (!st) break;
      check([&] { return validate_bfs(*ref->graph, *one); });
      // Graph500 reports the harmonic mean of the per-search TEPS.
      double teps = s > 0 ? static_cast<double>(one->component_edges) / s : 0.0;
      run.inv_teps_sum += teps > 0 ? 1.0 / teps : 0.0;
      run.teps_min = run.runs == 0 ? teps : std::min(run.teps_min, teps);
      run.teps_max = std::max(run.teps_max, teps);
      ++run.runs;
      if (!run.bfs) run.bfs = std::move(one);
    }
  } else if (a.alg == "sssp") {
    SsspOptions options = a.sssp;
    options.threads = a.threads;
    timed([&] { keep(run_sssp(g, reader, root_vertex, options), run.sssp); });
    if (st) check([&] { return validate_sssp(*ref->graph, *run.sssp); });
  } else if (a.alg == "kcore") {
    timed([&] { keep(run_kcore(g, reader), run.kcore); });
    if (st) check([&] { return validate_kcore(*ref->graph, *run.kcore); });
  } else if (a.alg == "cc") {
    timed([&] { keep(run_cc(g, reader), run.cc); });
    if (st) check([&] { return validate_cc(*ref->graph, *run.cc); });
  } else if (a.alg == "bc") {
    const std::vector<Vertex> sources = pick_bfs_roots(g, root_vertex, a.roots);
    timed([&] { keep(run_bc(g, reader, sources, a.threads), run.bc); });
    if (st) check([&] { return validate_bc(*ref->graph, *run.bc); });
  } else if (a.alg == "tc") {
    TcOptions options;
    // Counted per vertex only when asked for: --out writes them, and
    // --validate checks them too.
    options.per_vertex = !a.out_file.empty() || a.validate;
    options.threads = a.threads;
    timed([&] { keep(run_tc(g, reader, options), run.tc); });
    if (st) check([&] { return validate_tc(*ref->graph, *run.tc); });
  } else {
    PagerankOptions options = a.pagerank;
    options.threads = a.threads;
    timed([&] { keep(run_pagerank(g, reader, options, readers.in.get()), run.rank); });
    if (st) check([&] { return validate_pagerank(*ref->graph, *run.rank, a.pagerank.damping, &run.pagerank_l1); });
  }
  return st;
}

// The IO both readers did, and what the run found, into the report.
Status report_run(const AlgorithmArgs& a, const Graph& g, const GraphReaders& readers, const IdMap& ids,
                  const AlgorithmRun& run, Report& rep) {
  IoStats io = readers.out->stats();
  if (readers.in) {
    io.reads += readers.in->stats().reads;
    io.bytes += readers.in->stats().bytes;
    io.list_bytes += readers.in->stats().list_bytes;
  }
  rep.add("wall_seconds", run.secs);
  rep.add("cpu_seconds", run.cpu);
  rep.add("bytes_read", io.bytes);
  rep.add("list_bytes", io.list_bytes);
  rep.add("ios", io.reads);
  rep.add("mb_per_s", run.secs > 0 ? static_cast<double>(io.bytes) / 1e6 / run.secs : 0.0);
  rep.add("iops", run.secs > 0 ? static_cast<double>(io.reads) / run.secs : 0.0);
  rep.add("lists_in_memory", readers.out->kept() || (readers.in && readers.in->kept()));
  // The root (or first source) in the input's ids. The id map is loaded
  // only for --root and --out; otherwise the root's id is looked up alone.
  auto add_root = [&](Vertex root) {
    auto user_root = a.has_root || !a.out_file.empty() ? Expected<uint64_t>(ids.user_id(root)) : read_user_id(g, root);
    if (!user_root) return user_root.status();
    rep.add("root", *user_root);
    return Status::ok();
  };
  if (run.bfs) {
    if (Status st = add_root(run.bfs->root); !st) return st;
    rep.add("reached", run.bfs->reached);
    rep.add("levels", run.bfs->levels);
    rep.add("component_edges", run.bfs->component_edges);
    rep.add("bottom_up_levels", run.bfs->bottom_up_levels);
    rep.add("roots", run.runs);
    rep.add("teps", run.inv_teps_sum > 0 ? static_cast<double>(run.runs) / run.inv_teps_sum : 0.0);
    if (run.runs > 1) {
      rep.add("teps_min", run.teps_min);
      rep.add("teps_max", run.teps_max);
    }
  } else if (run.sssp) {
    if (Status st = add_root(run.sssp->root); !st) return st;
    rep.add("delta", run.sssp->delta);
    rep.add("reached", run.sssp->reached);
    rep.add("max_distance", run.sssp->max_distance);
    rep.add("buckets", run.sssp->buckets);
    rep.add("rounds", run.sssp->rounds);
    rep.add("relaxations", run.sssp->relaxations);
  } else if (run.kcore) {
    rep.add("max_core", uint64_t{run.kcore->max_core});
    rep.add("batches", run.kcore->batches);
  } else if (run.cc) {
    rep.add("weakly_connected", g.directed());  // directed: arcs taken both ways
    rep.add("components", run.cc->components);
    rep.add("largest_component", run.cc->largest);
    rep.add("rounds", run.cc->rounds);
  } else if (run.bc) {
    if (Status st = add_root(run.bc->sources.front()); !st) return st;
    rep.add("sources", static_cast<uint64_t>(run.bc->sources.size()));
    rep.add("levels", run.bc->levels);
    double top = 0;
    for (double x : run.bc->score) top = std::max(top, x);
    rep.add("max_score", top);
  } else if (run.tc) {
    rep.add("triangles", run.tc->triangles);
    rep.add("batches", run.tc->batches);
  } else {
    rep.add("iterations", uint64_t{run.rank->iterations});
    rep.add("last_delta", run.rank->last_delta);
  }
  return Status::ok();
}

Status write_out(const AlgorithmArgs& a, const IdMap& ids, const AlgorithmRun& run) {
  return run.bfs     ? write_bfs_out(a.out_file, a.out_format, ids, *run.bfs)
         : run.sssp  ? write_sssp_out(a.out_file, a.out_format, ids, *run.sssp)
         : run.kcore ? write_kcore_out(a.out_file, a.out_format, ids, *run.kcore)
         : run.cc    ? write_cc_out(a.out_file, a.out_format, ids, *run.cc)
         : run.tc    ? write_tc_out(a.out_file, a.out_format, ids, *run.tc)
         : run.bc    ? write_bc_out(a.out_file, a.out_format, ids, *run.bc)
                     : write_pagerank_out(a.out_file, a.out_format, ids, *run.rank);
}

}  // namespace

int cmd_algorithm(int argc, char** argv) {
  AlgorithmArgs a;
  if (auto rc = parse_algorithm_args(argc, argv, &a)) return *rc;
  const std::string& alg = a.alg;
  const std::string prefix = "peregrine-graph " + alg + ": ";
  auto error = [&](const Status& s) {
    std::cerr << prefix << s.message() << "\n";
    return kExitError;
  };

  auto graph = open_graph(a.dir);
  if (!graph) return error(graph.status());
  const Graph& g = *graph;
  if (alg == "kcore" && g.directed())
    return usage_error(alg, "k-core is defined on undirected graphs; " + a.dir +
                                " is directed (import it without --directed to get the k-cores of the underlying "
                                "undirected graph)");
  if (alg == "tc" && g.directed())
    return usage_error(alg, "triangle counting is defined on undirected graphs; " + a.dir +
                                " is directed (import it without --directed to count the triangles of the "
                                "underlying undirected graph)");
  // The id map costs 8 bytes per vertex: load it only for --root and --out.
  auto ids = a.has_root || !a.out_file.empty() ? IdMap::load(g) : IdMap::identity(g.num_vertices());
  if (!ids) return error(ids.status());
  Vertex root_vertex = 0;
  if (alg == "bfs" || alg == "sssp" || alg == "bc") {
    auto r = bfs_root(a, g, *ids);
    if (!r) return usage_error(alg, r.status().message());
    root_vertex = *r;
  }
  auto readers = open_readers(a, g);
  if (!readers) return error(readers.status());
  if (a.reader.direct && !readers->out->direct())
    std::cerr << prefix << "warning: " << g.adjacency_path().string()
              << ": filesystem refused O_DIRECT; reading through the page cache\n";

  Report rep;
  rep.add("algorithm", alg);
  rep.add("graph", a.dir);
  if (!g.meta.imported) rep.add("scale", uint64_t{g.meta.scale});
  rep.add("directed", g.directed());
  rep.add("weighted", g.weighted());
  rep.add("vertices", g.meta.vertices);
  rep.add("edges", g.meta.edges);
  rep.add("direct", readers->out->direct());
  rep.add("queue_depth", uint64_t{a.reader.queue_depth});

  Status invalid;  // first validation failure
  double validate_secs = 0;
  std::optional<Reference> ref;
  if (a.validate) {
    auto vt0 = Clock::now();
    auto r = load_reference(g, *readers, &invalid);
    if (!r) return error(r.status());
    ref = std::move(*r);
    validate_secs += since(vt0);
  }
  AlgorithmRun run;
  if (Status st = run_algorithm(a, g, *readers, root_vertex, ref ? &*ref : nullptr, &invalid, &run); !st)
    return error(st);
  validate_secs += run.validate_secs;
  if (Status st = report_run(a, g, *readers, *ids, run, rep); !st) return error(st);
  if (!a.out_file.empty()) {
    if (Status ws = write_out(a, *ids, run); !ws) return error(ws);
    rep.add("out", a.out_file);
  }

  int rc = kExitOk;
  if (a.validate) {
    if (run.pagerank_l1 >= 0) rep.add("validate_l1", run.pagerank_l1);
    rep.add("validated", invalid.is_ok());
    rep.add("validate_seconds", validate_secs);
    if (!invalid) {
      std::cerr << prefix << invalid.message() << "\n";
      rc = kExitInvalid;
    }
  }
  if (a.json)
    rep.print_json(std::cout);
  else
    rep.print_text(std::cout);
  return rc;
}

}  // namespace peregrine::graph::cli
