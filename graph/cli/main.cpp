// peregrine-graph: generate Kronecker graphs or import edge lists as on-disk CSR and run
// semi-external graph algorithms on them (docs/graph.md).
#include <cstring>
#include <iostream>
#include <string>

#include "commands.h"

namespace {

void usage(std::ostream& out) {
  out << "usage: peregrine-graph COMMAND [options]   (COMMAND --help for its options)\n\n"
         "commands:\n"
         "  gen       generate a Graph500 Kronecker graph as an on-disk CSR\n"
         "  import    read an edge list (text, GAP .el/.wel, DIMACS .gr, Matrix Market, binary) into a CSR\n"
         "  bfs       breadth-first search from a root (reports TEPS)\n"
         "  sssp      single-source shortest paths (delta-stepping; 1 per edge if unweighted)\n"
         "  bc        betweenness centrality from one or more sources (Brandes)\n"
         "  kcore     core number of every vertex\n"
         "  cc        connected components (weakly connected on a directed graph)\n"
         "  pagerank  PageRank by power iteration\n"
         "  tc        triangle count (and the triangles at every vertex with --out)\n"
         "  check     verify a graph directory (checksums, sortedness, symmetry)\n"
         "  export    write a graph back as a text edge list, .wel if weighted (for gapbs and others)\n\n"
         "Algorithms keep vertex state in memory and read adjacency lists with\n"
         "O_DIRECT through io_uring from one IO thread. --out FILE writes one\n"
         "line per vertex (in the input's vertex ids).\n";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace peregrine::graph::cli;
  if (argc < 2) {
    usage(std::cerr);
    return kExitUsage;
  }
  std::string cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    usage(std::cout);
    return kExitOk;
  }
  try {
    if (cmd == "gen") return cmd_gen(argc - 1, argv + 1);
    if (cmd == "import") return cmd_import(argc - 1, argv + 1);
    if (cmd == "check") return cmd_check(argc - 1, argv + 1);
    if (cmd == "export") return cmd_export(argc - 1, argv + 1);
    if (cmd == "bfs" || cmd == "sssp" || cmd == "bc" || cmd == "kcore" || cmd == "cc" || cmd == "pagerank" ||
        cmd == "tc")
      return cmd_algorithm(argc - 1, argv + 1);
  } catch (const std::exception& e) {
    std::cerr << "peregrine-graph " << cmd << ": " << e.what() << "\n";
    return kExitError;
  }
  std::cerr << "peregrine-graph: unknown command '" << cmd << "'\n\n";
  usage(std::cerr);
  return kExitUsage;
}
