// Replacing a file so that a reader sees the old content or the new, never
// a part: node_exporter's textfile collector may read a metrics file at any
// moment while `peregrine stats --output` rewrites it.
// Thread rules: main thread only (one writer per file; two writers of one
// file each leave a whole file).
#pragma once

#include <string>
#include <string_view>

#include "peregrine/util/result.h"

namespace peregrine::cli {

// Writes `content` to a new temporary file in the directory of `path`
// (named path + ".tmp.XXXXXX", so a collector that reads only *.prom
// ignores it), gives it the mode a new file gets (0666 less the umask),
// fsyncs it, renames it over `path` and fsyncs the directory. On failure
// removes the temporary file and `path` is as it was; the error names the
// file and the step that failed.
Status replace_file(const std::string& path, std::string_view content);

}  // namespace peregrine::cli
