// `peregrine-graph gen`: Graph500 Kronecker graph to an on-disk CSR.
#include <chrono>
#include <cstdio>
#include <iostream>

#include "commands.h"
#include "options.h"
#include "peregrine/graph/generator.h"
#include "progress.h"
#include "report.h"

namespace peregrine::graph::cli {

int cmd_gen(int argc, char** argv) {
  po::options_description opts("gen options");
  uint32_t scale = 0;
  std::string out;
  std::string memory, threads;
  GenOptions g;
  opts.add_options()("scale", po::value(&scale)->required()->value_name("S"), "log2 of the vertex count (1..32)")(
      "edgefactor", po::value(&g.edgefactor)->default_value(16)->value_name("N"), "sampled edges per vertex")(
      "seed", po::value(&g.seed)->default_value(1)->value_name("N"), "random seed; the graph is a pure function of it")(
      "out", po::value(&out)->required()->value_name("DIR"), "output directory (created)")(
      "weighted", "give every edge a weight in [1, 255] (weights.u32, for sssp), as GAP's generator does")(
      "memory", po::value(&memory)->default_value("1G")->value_name("SIZE"), "sort memory budget, e.g. 256M, 2G")(
      "threads", po::value(&threads)->default_value("0")->value_name("N"),
      "sampling threads, 1 to 256 (0 = one per core)")("quiet,q", "no progress on stderr")("json",
                                                                                           "print the summary as JSON");
  po::variables_map vm;
  if (auto rc = parse_command(argc, argv, "peregrine-graph gen --scale S --out DIR [options]", opts, vm)) return *rc;
  g.scale = scale;
  g.weighted = vm.count("weighted") > 0;
  auto mem = parse_size(memory);
  if (!mem) {
    std::cerr << "peregrine-graph gen: --memory: bad size '" << memory << "' (use e.g. 512M or 2G)\n";
    return kExitUsage;
  }
  g.memory_bytes = *mem;
  if (auto rc = parse_threads("gen", threads, &g.threads)) return *rc;
  // Out-of-range values are usage errors (exit 2), like malformed ones.
  if (scale < 1 || scale > kMaxScale)
    return usage_error("gen", "--scale must be between 1 and 32, not " + std::to_string(scale));
  if (g.edgefactor < 1) return usage_error("gen", "--edgefactor must be at least 1");
  if (g.memory_bytes < kMinMemoryBytes)
    return usage_error("gen", "--memory must be at least " + std::to_string(kMinMemoryBytes / 1024) + "K");

  ProgressFn progress = stderr_progress("gen", "merge", vm.count("quiet") > 0);

  auto t0 = std::chrono::steady_clock::now();
  auto meta = generate_graph(g, out, progress);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!meta) {
    std::cerr << "peregrine-graph gen: " << meta.status().message() << "\n";
    return kExitError;
  }
  Report r;
  r.add("command", std::string("gen"));
  r.add("graph", out);
  r.add("scale", uint64_t{meta->scale});
  r.add("edgefactor", uint64_t{meta->edgefactor});
  r.add("seed", meta->seed);
  r.add("vertices", meta->vertices);
  r.add("sampled_edges", meta->sampled_edges);
  r.add("edges", meta->edges);
  r.add("weighted", meta->weighted);
  r.add("adjacency_bytes", meta->adjacency_entries * 4);
  r.add("wall_seconds", secs);
  if (vm.count("json"))
    r.print_json(std::cout);
  else
    r.print_text(std::cout);
  return kExitOk;
}

}  // namespace peregrine::graph::cli
