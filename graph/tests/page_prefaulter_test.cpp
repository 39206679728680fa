// PagePrefaulter: fresh memory faulted in, every page of every region,
// and the bytes already written there left as they were.
#include "page_prefaulter.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "resident_pages.h"

namespace peregrine::graph::detail {
namespace {

// Pages of [p, p + len) in memory.
size_t resident(std::byte* p, size_t len) {
  const std::vector<bool> pages = peregrine::test::resident_pages(p, len);
  EXPECT_EQ(pages.size(), len / 4096) << "mincore failed";
  return peregrine::test::count_true(pages);
}

TEST(PagePrefaulter, FaultsInEveryPageAndKeepsWhatWasWritten) {
  constexpr size_t kLen = 8u << 20;  // four steps, and a part of one
  constexpr size_t kPages = kLen / 4096;
  auto* a = static_cast<std::byte*>(::mmap(nullptr, kLen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  auto* b = static_cast<std::byte*>(::mmap(nullptr, kLen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(a, MAP_FAILED);
  ASSERT_NE(b, MAP_FAILED);
  ASSERT_EQ(resident(a, kLen) + resident(b, kLen), 0u);
  // As a read that got there first: some pages of `a` written already.
  std::memset(a + kLen / 2, 0x5a, 3 * 4096);
  {
    PagePrefaulter prefaulter({{a, kLen}, {b, kLen - 4096}});
    prefaulter.finish();
  }
  EXPECT_EQ(resident(a, kLen), kPages);
  EXPECT_EQ(resident(b, kLen), kPages - 1) << "past its region";
  for (size_t i = 0; i < 3 * 4096; ++i) ASSERT_EQ(a[kLen / 2 + i], std::byte{0x5a}) << i;
  EXPECT_EQ(a[0], std::byte{0});
  ::munmap(a, kLen);
  ::munmap(b, kLen);
}

// Where its thread cannot start, the prefaulter does nothing and throws
// nothing: the reads fault their pages in themselves.
TEST(PagePrefaulter, DoesNothingWhereItsThreadCannotStart) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root, to become a user the process limit applies to";
  constexpr size_t kLen = 1u << 20;
  auto* a = static_cast<std::byte*>(::mmap(nullptr, kLen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(a, MAP_FAILED);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const rlimit one{1, 1};
    if (setrlimit(RLIMIT_NPROC, &one) != 0 || setgid(65534) != 0 || setuid(65534) != 0) _exit(2);
    try {
      PagePrefaulter prefaulter({{a, kLen}});
      prefaulter.finish();
    } catch (...) {
      _exit(3);
    }
    _exit(resident(a, kLen) == 0 ? 0 : 4);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ::munmap(a, kLen);
  ASSERT_TRUE(WIFEXITED(status)) << "the child ended on signal " << WTERMSIG(status);
  if (WEXITSTATUS(status) == 2) GTEST_SKIP() << "could not become uid 65534 with RLIMIT_NPROC 1";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: the prefaulter threw, 4: pages were faulted in with no thread";
}

}  // namespace
}  // namespace peregrine::graph::detail
