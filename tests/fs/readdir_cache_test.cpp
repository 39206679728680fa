// The kernel keeps a directory's listing in its page cache across opens
// (FOPEN_CACHE_DIR with FOPEN_KEEP_CACHE, fs_dir.cpp): a listing repeated
// with no change between costs no READDIR request, and every change made
// through the mount shows in the next listing, side by side with a native
// directory.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "fs_test_util.h"
#include "peregrine/fs/stats_xattr.h"

namespace peregrine::fstest {
namespace {

using json = nlohmann::json;

// Names in `dir` (without "." and ".."), and each one's type, as readdir
// gives them; "!errno" if the directory could not be listed.
std::set<std::string> listing(const std::string& dir) {
  std::set<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return {"!" + std::string(std::strerror(errno))};
  while (dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") names.insert(n + (e->d_type == DT_DIR ? "/" : e->d_type == DT_LNK ? "@" : ""));
  }
  ::closedir(d);
  return names;
}

// Every request the daemon has read since mount, on either transport.
uint64_t requests_so_far(const std::string& mountpoint) {
  std::string buf(1 << 20, '\0');
  ssize_t n = ::getxattr(mountpoint.c_str(), fs::kStatsXattr, buf.data(), buf.size());
  if (n <= 0) return 0;
  const json t = json::parse(buf.substr(0, static_cast<size_t>(n))).at("transport");
  auto rings = t.at("ring_requests").get<std::vector<uint64_t>>();
  return t.at("dev_fuse_requests").get<uint64_t>() + std::accumulate(rings.begin(), rings.end(), uint64_t{0});
}

using ReaddirCacheTest = SideBySideTest;

TEST_F(ReaddirCacheTest, EveryChangeThroughTheMountShowsInTheNextListing) {
  struct Step {
    const char* what;
    std::function<int(const std::string&)> op;  // on the root; 0 or -1 with errno
  };
  const std::vector<Step> steps = {
      {"create", [](const std::string& r) { return ::mknod((r + "/d/new").c_str(), S_IFREG | 0644, 0); }},
      {"unlink", [](const std::string& r) { return ::unlink((r + "/d/f7").c_str()); }},
      {"rename within", [](const std::string& r) { return ::rename((r + "/d/f8").c_str(), (r + "/d/g8").c_str()); }},
      {"rename over", [](const std::string& r) { return ::rename((r + "/d/f9").c_str(), (r + "/d/f10").c_str()); }},
      {"rename in", [](const std::string& r) { return ::rename((r + "/e/in").c_str(), (r + "/d/in").c_str()); }},
      {"rename out", [](const std::string& r) { return ::rename((r + "/d/f11").c_str(), (r + "/e/out").c_str()); }},
      {"mkdir", [](const std::string& r) { return ::mkdir((r + "/d/sub").c_str(), 0755); }},
      {"link", [](const std::string& r) { return ::link((r + "/d/f12").c_str(), (r + "/d/f12.link").c_str()); }},
      {"symlink", [](const std::string& r) { return ::symlink("f13", (r + "/d/f13.sym").c_str()); }},
      {"rmdir", [](const std::string& r) { return ::rmdir((r + "/d/sub").c_str()); }},
      {"unlink all but one", [](const std::string& r) {
         for (int i = 20; i < 300; ++i)
           if (::unlink((r + "/d/f" + std::to_string(i)).c_str()) != 0) return -1;
         return 0;
       }},
  };
  same("set up", [](const std::string& r) {
    if (::mkdir((r + "/d").c_str(), 0755) != 0 || ::mkdir((r + "/e").c_str(), 0755) != 0) return outcome(-1);
    for (int i = 0; i < 300; ++i)
      if (::mknod((r + "/d/f" + std::to_string(i)).c_str(), S_IFREG | 0644, 0) != 0) return outcome(-1);
    return outcome(::mknod((r + "/e/in").c_str(), S_IFREG | 0644, 0));
  });
  // Listed twice before each change: the second listing comes from the
  // kernel's cache, which the change must then drop.
  for (const Step& s : steps) {
    ASSERT_EQ(listing(at("d")), listing(native_->path() + "/d")) << "before: " << s.what;
    ASSERT_EQ(listing(at("d")), listing(native_->path() + "/d")) << "before: " << s.what;
    same(s.what, [&](const std::string& r) { return outcome(s.op(r)); });
    EXPECT_EQ(listing(at("d")), listing(native_->path() + "/d")) << "after: " << s.what;
    EXPECT_EQ(listing(at("e")), listing(native_->path() + "/e")) << "after: " << s.what;
  }
  EXPECT_EQ(listing(at("d")).size(), 21u);  // f0-f19 but f7 f8 f9 f11; new g8 in f12.link f13.sym
}

TEST_F(ReaddirCacheTest, AListingRepeatedWithNoChangeCostsNoReaddir) {
  const std::string root = volume_->mountpoint();
  if (test_transport() == "classic") GTEST_SKIP() << "the classic transport counts no requests (libfuse reads them)";
  const std::string dir = at("many");
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  constexpr size_t kEntries = 20000;
  for (size_t i = 0; i < kEntries; ++i)
    ASSERT_EQ(::mknod((dir + "/entry-with-a-longish-name-" + std::to_string(i)).c_str(), S_IFREG | 0644, 0), 0);
  const uint64_t t0 = requests_so_far(root);
  const std::set<std::string> first = listing(dir);
  const uint64_t t1 = requests_so_far(root);
  const std::set<std::string> second = listing(dir);
  const uint64_t t2 = requests_so_far(root);
  ASSERT_EQ(first.size(), kEntries);
  EXPECT_EQ(first, second);
  // The first listing reads the entries in several READDIRPLUS requests
  // (up to 1 MiB each on recent kernels), besides OPENDIR, RELEASEDIR and
  // the stats read; the second only opens and releases the directory (a
  // GETATTR may refresh its access time).
  EXPECT_GE(t1 - t0, 6u);
  EXPECT_LE(t2 - t1, 4u) << "the first listing took " << (t1 - t0) << " requests";
}

}  // namespace
}  // namespace peregrine::fstest
