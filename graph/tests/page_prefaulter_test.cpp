// PagePrefaulter: fresh memory faulted in, every page of every region,
// and the bytes already written there left as they were.
#include "page_prefaulter.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

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

}  // namespace
}  // namespace peregrine::graph::detail
