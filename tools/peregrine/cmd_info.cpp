// Placeholder until the 'info' command lands; replaced by its implementation.
#include <cstdio>

#include "commands.h"

namespace peregrine::cli {

int cmd_info(int, char**) {
  std::fprintf(stderr, "peregrine: 'info' is not available in this build yet\n");
  return 2;
}

}  // namespace peregrine::cli
