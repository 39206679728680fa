// One pass of readdir over a directory whose entries are renamed away and
// back meanwhile (xfstests generic/736), side by side with a native
// directory: the pass ends, and every entry that was neither removed nor
// added during it is listed exactly once (POSIX; entries that come and go
// may or may not be). Before, an entry renamed back in got a new, larger
// cookie, so the running pass met it again and again: one pass over 5,000
// files returned 15,001 entries.
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <thread>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

using ReaddirRenamesTest = SideBySideTest;

std::string name_of(const char* prefix, int i) { return prefix + std::to_string(i); }

bool make_files(const std::string& dir, const char* prefix, int n) {
  for (int i = 0; i < n; ++i)
    if (::mknod((dir + "/" + name_of(prefix, i)).c_str(), S_IFREG | 0644, 0) != 0) return false;
  return true;
}

// Lists `dir` once with readdir(3), calling `each(name)` for every entry
// but "." and "..", and counts how often each name came. Stops after
// `cap` entries: a pass that long does not end.
struct Listing {
  std::map<std::string, int> seen;
  long total = 0;
  bool ended = false;
};
template <typename Each>
Listing list_once(const std::string& dir, long cap, Each each) {
  Listing l;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return l;
  errno = 0;
  while (struct dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    ++l.seen[name];
    if (++l.total > cap) break;
    each(name);
    errno = 0;
  }
  l.ended = l.total <= cap && errno == 0;
  ::closedir(d);
  return l;
}

// The entries named prefix0..prefix{n-1} that `l` did not list exactly once.
int not_once(const Listing& l, const char* prefix, int n) {
  int wrong = 0;
  for (int i = 0; i < n; ++i) {
    auto it = l.seen.find(name_of(prefix, i));
    wrong += it == l.seen.end() || it->second != 1;
  }
  return wrong;
}

// generic/736: each entry, once listed, is renamed into another directory
// and back. Each is stable until it has been listed, so each must come once.
TEST_F(ReaddirRenamesTest, EntriesRenamedAwayAndBackAfterTheyAreListedComeOnce) {
  constexpr int kFiles = 5000;
  same("one pass renaming each entry away and back", [&](const std::string& r) {
    const std::string dir = r + "/dir", away = r + "/away";
    if (::mkdir(dir.c_str(), 0755) != 0 || ::mkdir(away.c_str(), 0755) != 0 || !make_files(dir, "f", kFiles))
      return outcome(-1);
    bool renamed = true;
    Listing l = list_once(dir, 3L * kFiles, [&](const std::string& name) {
      renamed = renamed && ::rename((dir + "/" + name).c_str(), (away + "/" + name).c_str()) == 0 &&
                ::rename((away + "/" + name).c_str(), (dir + "/" + name).c_str()) == 0;
    });
    if (!renamed) return Outcome{-2, errno};
    EXPECT_TRUE(l.ended) << r << ": the pass did not end after " << l.total << " entries";
    EXPECT_EQ(not_once(l, "f", kFiles), 0) << r << ": " << l.total << " entries listed for " << kFiles;
    return outcome(l.ended ? l.total : -3);
  });
  expect_same_trees();
}

// Another thread renames some entries away and back, again and again,
// while one pass lists the directory: the pass ends, and lists each of
// the other entries exactly once.
TEST_F(ReaddirRenamesTest, APassConcurrentWithRenamesEndsAndListsStableEntriesOnce) {
  constexpr int kStable = 2000, kMoving = 50;
  same("one pass while another thread renames", [&](const std::string& r) {
    const std::string dir = r + "/dir", away = r + "/away";
    if (::mkdir(dir.c_str(), 0755) != 0 || ::mkdir(away.c_str(), 0755) != 0 || !make_files(dir, "s", kStable) ||
        !make_files(dir, "m", kMoving))
      return outcome(-1);
    std::atomic<bool> listing_done{false};
    std::atomic<long> rounds{0};
    std::atomic<bool> rename_failed{false};
    std::thread mover([&] {
      while (!listing_done.load()) {
        for (int i = 0; i < kMoving; ++i) {
          const std::string name = name_of("m", i);
          if (::rename((dir + "/" + name).c_str(), (away + "/" + name).c_str()) != 0 ||
              ::rename((away + "/" + name).c_str(), (dir + "/" + name).c_str()) != 0)
            rename_failed = true;
        }
        ++rounds;
      }
    });
    // Started only once the mover has been round at least once, so the
    // renames overlap the listing.
    while (rounds.load() == 0) std::this_thread::yield();
    Listing l = list_once(dir, 100L * (kStable + kMoving), [](const std::string&) {});
    listing_done = true;
    mover.join();
    if (rename_failed) return outcome(-2);
    EXPECT_TRUE(l.ended) << r << ": the pass did not end after " << l.total << " entries";
    EXPECT_EQ(not_once(l, "s", kStable), 0) << r;
    return outcome(l.ended && not_once(l, "s", kStable) == 0 ? 0 : -3);
  });
}

}  // namespace
}  // namespace peregrine::fstest
