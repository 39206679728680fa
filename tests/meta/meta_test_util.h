// Shared helpers for the metadata tests: a small test geometry, a
// deterministic clock, mounting on a MemoryVolumeIo.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <sstream>
#include <string>

#include "peregrine/meta/memory_volume_io.h"
#include "peregrine/meta/metadata.h"

namespace peregrine::meta::test {

inline constexpr uint64_t kMiB = 1 << 20;

// prefix + number. ("x" + std::to_string(i) trips a GCC 12 -Wrestrict
// false positive in optimised builds.)
inline std::string cat(const char* prefix, uint64_t n) {
  std::string s(prefix);
  s += std::to_string(n);
  return s;
}

inline Geometry small_geometry() {
  Geometry g;
  g.meta_offset = 0;
  g.meta_size = 4 * kMiB;
  g.data_offset = 4 * kMiB;
  g.data_size = 64 * kMiB;
  g.stripe_unit = 64 * 1024;
  g.member_count = 4;
  return g;
}

// Each call of the clock returns the next value, so timestamps are
// deterministic and every change gets a distinct time.
inline Options test_options() {
  Options o;
  auto t = std::make_shared<std::atomic<int64_t>>(1'000'000'000);
  o.clock = [t] { return t->fetch_add(1000); };
  o.commit_interval_ms = 0;  // commits only on fsync/sync/unmount
  o.pending_commit_bytes = uint64_t{1} << 40;
  o.alloc_window = kMiB;
  return o;
}

inline std::unique_ptr<Metadata> mount_ok(VolumeIo& io, const Geometry& g, Options o = test_options()) {
  auto md = Metadata::mount(io, g, std::move(o));
  EXPECT_TRUE(md.has_value()) << (md.has_value() ? "" : md.status().message());
  if (!md.has_value()) return nullptr;
  return std::move(*md);
}

inline std::unique_ptr<MemoryVolumeIo> new_volume(const Geometry& g) {
  return std::make_unique<MemoryVolumeIo>(g.data_offset + g.data_size);
}

struct ExtentLine {
  uint64_t ino, vol, len;
};

// Checks that no extent (from Model::dump text) is both in use and free,
// that extents do not overlap, and that used + free == data size.
inline void expect_space_consistent(const std::string& dump, const std::map<uint64_t, uint64_t>& free_map,
                                    const Geometry& g) {
  std::vector<ExtentLine> ext;
  std::istringstream in(dump);
  std::string line;
  uint64_t ino = 0;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string w;
    ls >> w;
    if (w == "ino") {
      ls >> ino;
    } else if (w == "extent") {
      uint64_t off, len, vol;
      std::string plus_len, arrow;
      ls >> off >> plus_len >> arrow >> vol;
      len = std::stoull(plus_len.substr(1));
      ext.push_back({ino, vol, len});
    }
  }
  std::map<uint64_t, uint64_t> used;
  uint64_t used_bytes = 0;
  for (const auto& e : ext) {
    auto [it, ok] = used.emplace(e.vol, e.len);
    EXPECT_TRUE(ok) << "two extents at " << e.vol;
    used_bytes += e.len;
  }
  uint64_t end = 0;
  for (const auto& [off, len] : used) {
    EXPECT_GE(off, end) << "extents overlap at " << off;
    end = off + len;
  }
  uint64_t free_bytes = 0;
  for (const auto& [off, len] : free_map) {
    free_bytes += len;
    auto it = used.upper_bound(off + len - 1);
    if (it != used.begin()) {
      --it;
      EXPECT_LE(it->first + it->second, off) << "free range " << off << "+" << len << " is in use";
    }
  }
  EXPECT_EQ(used_bytes + free_bytes, g.data_size);
}

}  // namespace peregrine::meta::test
