// Progress lines on stderr for the long-running subcommands (gen, import):
// on a terminal one line redrawn every percent, in a log one line per 10 %
// of each phase.
// Thread rules: single-threaded (call from the command's thread).
#pragma once

#include <string>

#include "peregrine/graph/generator.h"

namespace peregrine::graph::cli {

// A ProgressFn printing "COMMAND: PHASE N%"; `last_phase` ends the output
// line on a terminal. quiet gives a function that prints nothing.
ProgressFn stderr_progress(const std::string& command, const std::string& last_phase, bool quiet);

}  // namespace peregrine::graph::cli
