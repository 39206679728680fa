// `peregrine-graph export`: a graph directory back to a text edge list in
// the input's ids, "u v" a line, the form other graph tools read (GAP's
// .el: gapbs's benchmarks take it with -f FILE.el, and -s for an
// undirected graph); a weighted graph as "u v weight" (GAP's .wel). An
// undirected graph gives each edge once (gapbs's -s symmetrizes it again),
// a directed one every arc. Vertices without edges do not appear: an edge
// list cannot say they exist.
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
  ReaderOptions options;
  options.weights = g->weighted();
  auto reader = AdjacencyReader::open(*g, options);
  if (!reader) return error(reader.status());
  auto file = FileWriter::create(out, 1 << 20, false);
  if (!file) return error(file.status());
  const bool directed = g->directed();
  uint64_t lines = 0;
  Status written;
  char line[64];
  // One line per edge (weights: nullptr for an unweighted graph).
  auto write_lines = [&](Vertex u, std::span<const Vertex> nbrs, const uint32_t* weights) {
    if (!written) return;
    for (size_t i = 0; i < nbrs.size(); ++i) {
      const Vertex v = nbrs[i];
      if (!directed && v < u) continue;  // the other copy of an undirected edge
      char* p = std::to_chars(line, line + sizeof line, ids->user_id(u)).ptr;
      *p++ = ' ';
      p = std::to_chars(p, line + sizeof line, ids->user_id(v)).ptr;
      if (weights != nullptr) {
        *p++ = ' ';
        p = std::to_chars(p, line + sizeof line, weights[i]).ptr;
      }
      *p++ = '\n';
      written = file->append(line, static_cast<size_t>(p - line));
      if (!written) return;
      ++lines;
    }
  };
  Status st = g->weighted()
                  ? (*reader)->read_all([&](Vertex u, std::span<const Vertex> nbrs, std::span<const uint32_t> w) {
                      write_lines(u, nbrs, w.data());
                    })
                  : (*reader)->read_all([&](Vertex u, std::span<const Vertex> nbrs) { write_lines(u, nbrs, nullptr); });
  if (!st) return error(st);
  if (!written) return error(written);
  if (Status f = file->finish(); !f) return error(f);
  Report rep;
  rep.add("graph", dir);
  rep.add("out", out);
  rep.add("directed", directed);
  rep.add("weighted", g->weighted());
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
