// Placeholder until the 'mount' command lands; replaced by its implementation.
#include <cstdio>

#include "commands.h"

namespace peregrine::cli {

int cmd_mount(int, char**) {
  std::fprintf(stderr, "peregrine: 'mount' is not available in this build yet\n");
  return 2;
}

}  // namespace peregrine::cli
