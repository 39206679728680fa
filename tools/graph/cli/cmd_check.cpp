// `peregrine-graph check`: full verification of a graph directory.
#include <iostream>

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
  Status st = check_graph(*m);
  if (!st) {
    std::cerr << "peregrine-graph check: " << st.message() << "\n";
    return kExitError;
  }
  std::cout << dir << ": ok (" << g->meta.vertices << " vertices, " << g->meta.edges << " edges)\n";
  return kExitOk;
}

}  // namespace peregrine::graph::cli
