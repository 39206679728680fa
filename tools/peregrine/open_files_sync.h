// `peregrine sync`'s middle step: fsync every file of a volume that is open
// for writing, by the list its daemon publishes (fs/open_files_xattr.h).
// syncfs(2) starts the writebacks of their dirty pages but can return
// before the daemon has them; a file's fsync waits for them.
//
// Thread rules: none inside; the caller's thread.
#pragma once
#include <string>

#include "peregrine/util/result.h"

namespace peregrine::cli {

// `root_fd` is the mount's root, opened as the directory `root`. Files
// closed or removed meanwhile are skipped (a close waited for its own
// writebacks); errors name the file and the step.
Status fsync_files_open_for_writing(int root_fd, const std::string& root);

}  // namespace peregrine::cli
