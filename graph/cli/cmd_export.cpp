// `peregrine-graph export`: a graph directory back to a text edge list in
// the input's ids, "u v" a line, the form other graph tools read (GAP's
// .el: gapbs's benchmarks take it with -f FILE.el, and -s for an
// undirected graph). An undirected graph gives each edge once (gapbs's -s
// symmetrizes it again), a directed one every arc. Vertices without
// edges do not appear: an edge list cannot say they exist.
#include <charconv>
#include <chrono>
#include <iostream>

#include "commands.h"
#include "options.h"
#include "peregrine/graph/adjacency_reader.h"
#include "peregrine/graph/file_writer.h"
#include "peregrine/graph/id_map.h"
#include "report.h"

namespace peregrine::graph::cli {

int cmd_export(int argc, char** argv) {
  po::options_description opts("export options");
  std::string dir, out;
  opts.add_options()("graph", po::value(&dir)->required()->value_name("DIR"), "graph directory")(
      "out", po::value(&out)->required()->value_name("FILE"), "edge list to write (replaced if it exists)")(
      "json", "print the report as JSON");
  po::variables_map vm;
  if (auto rc = parse_command(argc, argv, "peregrine-graph export --graph DIR --out FILE", opts, vm)) return *rc;
  auto error = [](const Status& s) {
    std::cerr << "peregrine-graph export: " << s.message() << "\n";
    return kExitError;
  };
  const auto t0 = std::chrono::steady_clock::now();
  auto g = open_graph(dir);
  if (!g) return error(g.status());
  auto ids = IdMap::load(*g);
  if (!ids) return error(ids.status());
  auto reader = AdjacencyReader::open(*g, ReaderOptions{});
  if (!reader) return error(reader.status());
  auto file = FileWriter::create(out, 1 << 20, false);
  if (!file) return error(file.status());
  const bool directed = g->directed();
  uint64_t lines = 0;
  Status written;
  char line[48];
  Status st = (*reader)->read_all([&](Vertex u, std::span<const Vertex> nbrs) {
    if (!written) return;
    for (Vertex v : nbrs) {
      if (!directed && v < u) continue;  // the other copy of an undirected edge
      char* p = std::to_chars(line, line + sizeof line, ids->user_id(u)).ptr;
      *p++ = ' ';
      p = std::to_chars(p, line + sizeof line, ids->user_id(v)).ptr;
      *p++ = '\n';
      written = file->append(line, static_cast<size_t>(p - line));
      if (!written) return;
      ++lines;
    }
  });
  if (!st) return error(st);
  if (!written) return error(written);
  if (Status f = file->finish(); !f) return error(f);
  Report rep;
  rep.add("graph", dir);
  rep.add("out", out);
  rep.add("directed", directed);
  rep.add("edges", lines);
  rep.add("bytes", file->bytes());
  rep.add("wall_seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  if (vm.count("json"))
    rep.print_json(std::cout);
  else
    rep.print_text(std::cout);
  return kExitOk;
}

}  // namespace peregrine::graph::cli
