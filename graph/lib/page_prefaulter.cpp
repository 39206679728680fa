#include "page_prefaulter.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <system_error>

namespace peregrine::graph::detail {
namespace {
// One madvise() at a time: small enough to stop soon, large enough that
// the calls cost nothing beside the faults.
constexpr size_t kStep = 2 << 20;
}  // namespace

PagePrefaulter::PagePrefaulter(std::vector<std::span<std::byte>> regions) : regions_(std::move(regions)) {
  // Prefaulting only saves the reads time: where no thread can start (a
  // process limit, no memory for a stack), they fault their pages in
  // themselves, as ThreadTeam's owner runs alone.
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::system_error&) {
  }
}

PagePrefaulter::~PagePrefaulter() {
  stop_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
}

void PagePrefaulter::finish() {
  if (thread_.joinable()) thread_.join();
}

void PagePrefaulter::run() {
  for (std::span<std::byte> region : regions_) {
    for (size_t done = 0; done < region.size(); done += kStep) {
      if (stop_.load(std::memory_order_relaxed)) return;
      // A kernel without MADV_POPULATE_WRITE (before 5.14) says EINVAL:
      // then the reads fault their pages in, as they would anyway.
      if (::madvise(region.data() + done, std::min(kStep, region.size() - done), MADV_POPULATE_WRITE) != 0) return;
    }
  }
}

}  // namespace peregrine::graph::detail
