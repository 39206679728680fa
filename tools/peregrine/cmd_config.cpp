// Placeholder until the 'config' command lands; replaced by its implementation.
#include <cstdio>

#include "commands.h"

namespace peregrine::cli {

int cmd_config(int, char**) {
  std::fprintf(stderr, "peregrine: 'config' is not available in this build yet\n");
  return 2;
}

}  // namespace peregrine::cli
