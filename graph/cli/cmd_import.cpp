// `peregrine-graph import`: the user's edge list to an on-disk CSR.
#include <chrono>
#include <iostream>
#include <vector>

#include "commands.h"
#include "options.h"
#include "peregrine/graph/importer.h"
#include "progress.h"
#include "report.h"

namespace peregrine::graph::cli {

int cmd_import(int argc, char** argv) {
  po::options_description opts("import options");
  std::string input, out, memory, format, threads;
  ImportOptions o;
  opts.add_options()("input", po::value(&input)->required()->value_name("FILE"),
                     "edge list to read; - reads standard input (e.g. zcat graph.txt.gz | ... --input -)")(
      "out", po::value(&out)->required()->value_name("DIR"), "output graph directory (created)")(
      "format", po::value(&format)->default_value("auto")->value_name("FMT"),
      "text or el (SNAP or GAP edge list), wel (GAP weighted edge list: text --weighted), mm (Matrix Market "
      "coordinate), gr (DIMACS shortest-path graph, weighted), bin32, bin64 (little-endian id pairs); auto: mm if "
      "the file starts with %%MatrixMarket, gr if it is named *.gr or starts with a 'c' or 'p sp' line, else text "
      "(weighted if named *.wel)")(
      "weighted",
      "keep each edge's weight (text: the third column; mm: the values of an 'integer' matrix), "
      "for sssp; a duplicate edge keeps its smallest weight")(
      "directed", "keep arcs as given (default: undirected, every edge stored both ways)")(
      "memory", po::value(&memory)->default_value("1G")->value_name("SIZE"),
      "memory budget for the sort batches and the id map, e.g. 256M, 2G")(
      "threads", po::value(&threads)->default_value("0")->value_name("N"),
      "text parsing threads, 1 to 256 (0 = one per core)")("quiet,q", "no progress on stderr")(
      "json", "print the summary as JSON");
  po::variables_map vm;
  if (auto rc = parse_command(argc, argv, "peregrine-graph import --input FILE --out DIR [options]", opts, vm))
    return *rc;
  // GAP's names: .el is a text edge list, .wel one with weights.
  auto f = parse_input_format(format == "el" || format == "wel" ? "text" : format);
  if (!f)
    return usage_error("import",
                       "--format: unknown format '" + format + "' (auto, text, el, wel, mm, gr, bin32, bin64)");
  o.format = *f;
  o.weighted = vm.count("weighted") > 0 || format == "wel";
  o.directed = vm.count("directed") > 0;
  auto mem = parse_size(memory);
  if (!mem) return usage_error("import", "--memory: bad size '" + memory + "' (use e.g. 512M or 2G)");
  if (*mem < kMinMemoryBytes)
    return usage_error("import", "--memory must be at least " + std::to_string(kMinMemoryBytes / 1024) + "K");
  o.memory_bytes = *mem;
  if (auto rc = parse_threads("import", threads, &o.threads)) return *rc;

  // Seconds per phase for the report: a phase ends when the next begins.
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  std::vector<std::pair<std::string, Clock::time_point>> phases;
  uint64_t input_bytes = 0;  // parsed so far: the file's size, or a stream's at its end
  ProgressFn print = stderr_progress("import", o.directed ? "merge-in" : "merge", vm.count("quiet") > 0);
  ProgressFn progress = [&](std::string_view phase, uint64_t done, uint64_t total) {
    if (phases.empty() || phases.back().first != phase) phases.emplace_back(std::string(phase), Clock::now());
    if (phase == "parse") input_bytes = done;
    print(phase, done, total);
  };
  ImportStats stats;
  auto meta = import_graph(input, o, out, progress, &stats);
  const auto t1 = Clock::now();
  double secs = std::chrono::duration<double>(t1 - t0).count();
  if (!meta) {
    std::cerr << "peregrine-graph import: " << meta.status().message() << "\n";
    return kExitError;
  }
  Report r;
  r.add("command", std::string("import"));
  r.add("graph", out);
  r.add("input", input);
  r.add("directed", meta->directed);
  r.add("weighted", meta->weighted);
  r.add("vertices", meta->vertices);
  r.add("input_edges", meta->input_edges);
  r.add("self_loops_dropped", meta->self_loops);
  r.add("duplicates_dropped", meta->duplicates);
  r.add("edges", meta->edges);
  r.add("adjacency_bytes", meta->adjacency_entries * 4);
  r.add("input_bytes", input_bytes);
  r.add("wall_seconds", secs);
  r.add("input_mb_per_s", secs > 0 ? static_cast<double>(input_bytes) / 1e6 / secs : 0.0);
  r.add("input_reads", stats.input_reads);
  r.add("id_map_slices", stats.id_map_slices);
  r.add("id_map_bytes", stats.id_map_bytes);
  for (size_t i = 0; i < phases.size(); ++i) {
    auto start = i == 0 ? t0 : phases[i].second;  // parse starts with the command
    auto end = i + 1 < phases.size() ? phases[i + 1].second : t1;
    std::string name = phases[i].first;
    for (char& c : name)
      if (c == '-') c = '_';
    r.add(name + "_seconds", std::chrono::duration<double>(end - start).count());
  }
  if (vm.count("json"))
    r.print_json(std::cout);
  else
    r.print_text(std::cout);
  return kExitOk;
}

}  // namespace peregrine::graph::cli
