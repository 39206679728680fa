// Placeholder until the 'stats' command lands; replaced by its implementation.
#include <cstdio>

#include "commands.h"

namespace peregrine::cli {

int cmd_stats(int, char**) {
  std::fprintf(stderr, "peregrine: 'stats' is not available in this build yet\n");
  return 2;
}

}  // namespace peregrine::cli
