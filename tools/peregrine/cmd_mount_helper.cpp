// Placeholder until the 'mount_helper' command lands; replaced by its implementation.
#include <cstdio>

#include "commands.h"

namespace peregrine::cli {

int cmd_mount_helper(int, char**) {
  std::fprintf(stderr, "peregrine: 'mount_helper' is not available in this build yet\n");
  return 2;
}

}  // namespace peregrine::cli
