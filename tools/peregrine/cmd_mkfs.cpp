// Placeholder until the 'mkfs' command lands; replaced by its implementation.
#include <cstdio>

#include "commands.h"

namespace peregrine::cli {

int cmd_mkfs(int, char**) {
  std::fprintf(stderr, "peregrine: 'mkfs' is not available in this build yet\n");
  return 2;
}

}  // namespace peregrine::cli
