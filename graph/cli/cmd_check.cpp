// `peregrine-graph check`: full verification of a graph directory.
#include <iostream>
#include <optional>

#include "commands.h"
#include "options.h"
#include "peregrine/graph/csr_check.h"

namespace peregrine::graph::cli {

int cmd_check(int argc, char** argv) {
  po::options_description opts("check options");
  std::string dir;
  opts.add_options()("graph", po::value(&dir)->required()->value_name("DIR"), "graph directory");
  po::variables_map vm;
  if (auto rc = parse_command(argc, argv, "peregrine-graph check --graph DIR", opts, vm)) return *rc;
  auto g = open_graph(dir);
  if (!g) {
    std::cerr << "peregrine-graph check: " << g.status().message() << "\n";
    return kExitError;
  }
  auto m = load_memory_graph(*g);
  if (!m) {
    std::cerr << "peregrine-graph check: " << m.status().message() << "\n";
    return kExitError;
  }
  std::optional<Graph> t;
  std::optional<MemoryGraph> tm;
  if (g->directed()) {
    auto tg = open_transpose(*g);
    if (!tg) {
      std::cerr << "peregrine-graph check: " << tg.status().message() << "\n";
      return kExitError;
    }
    t = std::move(*tg);
    auto l = load_memory_graph(*t);
    if (!l) {
      std::cerr << "peregrine-graph check: " << l.status().message() << "\n";
      return kExitError;
    }
    tm = std::move(*l);
    tm->graph = &*t;
  }
  Status st = check_graph(*m, tm ? &*tm : nullptr);
  if (!st) {
    std::cerr << "peregrine-graph check: " << st.message() << "\n";
    return kExitError;
  }
  std::cout << dir << ": ok (" << g->meta.vertices << " vertices, " << g->meta.edges
            << (g->directed() ? " arcs, directed)\n" : " edges)\n");
  return kExitOk;
}

}  // namespace peregrine::graph::cli
