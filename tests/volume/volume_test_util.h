// Shared helpers for the volume tests: a private temp directory of
// file-backed members, whole-file snapshots (to prove "nothing written"),
// and raw superblock surgery. Single-threaded test code.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "peregrine/util/crc32c.h"
#include "peregrine/volume/mkfs.h"
#include "peregrine/volume/superblock.h"

namespace peregrine::test {

class VolumeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/peregrine-volume-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  // A regular file of `size` bytes, every byte `fill` (0 = sparse zeros).
  std::string make_file(const std::string& name, uint64_t size, char fill = 0) {
    std::string p = path(name);
    {
      std::ofstream out(p, std::ios::binary | std::ios::trunc);
      if (fill != 0) {
        std::string chunk(1 << 20, fill);
        for (uint64_t done = 0; done < size; done += chunk.size())
          out.write(chunk.data(), static_cast<std::streamsize>(std::min<uint64_t>(chunk.size(), size - done)));
      }
    }
    std::filesystem::resize_file(p, size);
    return p;
  }

  std::vector<std::string> make_files(const std::string& prefix, int n, uint64_t size, char fill = 0) {
    std::vector<std::string> out;
    for (int i = 0; i < n; ++i) out.push_back(make_file(prefix + std::to_string(i), size, fill));
    return out;
  }

  // Creates a volume over `members` with default options; fails the test on refusal.
  MkfsResult mkfs(const std::vector<std::string>& members, uint32_t stripe_unit = 64 * 1024) {
    MkfsOptions o;
    o.members = members;
    o.stripe_unit = stripe_unit;
    auto r = make_volume(o);
    EXPECT_TRUE(r) << r.status().message();
    return r ? *r : MkfsResult{};
  }

  std::string dir_;
};

inline std::string read_file(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::string s(std::filesystem::file_size(p), '\0');
  in.read(s.data(), static_cast<std::streamsize>(s.size()));
  return s;
}

inline std::map<std::string, std::string> snapshot(const std::vector<std::string>& paths) {
  std::map<std::string, std::string> s;
  for (const auto& p : paths)
    if (std::filesystem::exists(p)) s[p] = read_file(p);
  return s;
}

inline std::string read_bytes(const std::string& p, uint64_t offset, size_t len) {
  std::ifstream in(p, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset));
  std::string s(len, '\0');
  in.read(s.data(), static_cast<std::streamsize>(len));
  return s;
}

inline void write_bytes(const std::string& p, uint64_t offset, const std::string& bytes) {
  std::fstream f(p, std::ios::binary | std::ios::in | std::ios::out);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Re-computes the CRC of a raw superblock image after a test edited it.
inline void reseal(std::string& block) {
  uint32_t crc = crc32c(block.data(), kSuperblockSize - 4);
  for (int i = 0; i < 4; ++i) block[kSuperblockSize - 4 + i] = static_cast<char>(crc >> (8 * i));
}

inline void put_le32(std::string& block, size_t off, uint32_t v) {
  for (int i = 0; i < 4; ++i) block[off + i] = static_cast<char>(v >> (8 * i));
}

// Writes `block` over both superblock copies of a member.
inline void write_both_copies(const std::string& p, const std::string& block) {
  write_bytes(p, kPrimarySuperblockOffset, block);
  write_bytes(p, kBackupSuperblockOffset, block);
}

#define EXPECT_MENTIONS(status, text) \
  EXPECT_NE((status).message().find(text), std::string::npos) << "message: " << (status).message()

}  // namespace peregrine::test
