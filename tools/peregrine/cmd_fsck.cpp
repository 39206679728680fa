// Placeholder until the 'fsck' command lands; replaced by its implementation.
#include <cstdio>

#include "commands.h"

namespace peregrine::cli {

int cmd_fsck(int, char**) {
  std::fprintf(stderr, "peregrine: 'fsck' is not available in this build yet\n");
  return 2;
}

}  // namespace peregrine::cli
