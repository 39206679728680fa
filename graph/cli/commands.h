// The peregrine-graph subcommands. Each takes the arguments after its name
// (argv[0] is the command name), prints to stdout/stderr and returns the
// process exit code: 0 ok, 1 error (bad input, IO), 2 usage, 3 validation
// failed.
// Thread rules: single-threaded entry points.
#pragma once

namespace peregrine::graph::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInvalid = 3;

int cmd_gen(int argc, char** argv);
int cmd_import(int argc, char** argv);
int cmd_check(int argc, char** argv);
int cmd_export(int argc, char** argv);
// algorithm is one of bfs, sssp, bc, kcore, cc, pagerank, tc.
int cmd_algorithm(int argc, char** argv);

}  // namespace peregrine::graph::cli
