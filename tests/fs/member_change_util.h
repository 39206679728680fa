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

// After the daemon of `v` stopped itself (a test hook's _exit(9)): checks
// how it ended, reaps it, detaches its mount and waits until `members` are
// released.
void reap_stopped_daemon(Volume& v, const std::vector<std::string>& members);

// A loop device over a file `backing` of `bytes` in `dir`, whose first
// MiB holds junk (a member change must overwrite, not keep it); detached
// when this goes. path() is "" when losetup could not attach one (why()).
class JunkLoopDevice {
 public:
  JunkLoopDevice(const std::string& dir, uint64_t bytes);
  ~JunkLoopDevice();
  JunkLoopDevice(const JunkLoopDevice&) = delete;
  JunkLoopDevice& operator=(const JunkLoopDevice&) = delete;
  const std::string& path() const { return device_; }
  const std::string& why() const { return why_; }

 private:
  std::string device_, why_;
};

// `peregrine fsck -n` over `members`.
RunResult fsck(const std::vector<std::string>& members);

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace peregrine::fstest
