// Test support for the online member changes (replace, restripe): writers
// that keep a mounted volume busy while its members change, and what the
// files they wrote must hold afterwards.
// Thread rules: write_until() runs on a thread of its own; the rest on the
// test's thread.
#pragma once

#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "fs_test_util.h"

namespace peregrine::fstest {

// What the writers put on the volume: each file's expected bytes.
using Contents = std::map<std::string, std::string>;

// Writes until `stop`, at least `min_rounds` rounds: appends to a log file
// with fsync, rewrites 4 KiB blocks of a file in place (buffered, and
// O_DIRECT on another), creates small files. Records what each file must
// hold.
void write_until(const Volume& v, const std::atomic<bool>& stop, int min_rounds, Contents& out);

// The first file whose bytes differ from `want` ("" when none).
std::string first_difference(const Contents& want);

// `peregrine fsck -n` over `members`.
RunResult fsck(const std::vector<std::string>& members);

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace peregrine::fstest
