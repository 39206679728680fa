// Internal to the external sorts (edge_runs.cpp, import's sliced id map):
// runs the same work, typically a sort, on the two halves of a batch at
// once, one half on the calling thread and one on a thread it starts and
// joins, so that the sorts of import and gen use both cores of a small
// machine. The halves are not merged in memory (that would take a second
// buffer the size of the batch): callers merge them as they stream them
// out, or use each half on its own.
// Thread rules: stateless; fn must be safe to run on the two (disjoint)
// halves concurrently.
#pragma once

#include <cstddef>
#include <exception>
#include <span>
#include <system_error>
#include <thread>

namespace peregrine::graph::detail {

// Below this many elements one thread does the whole batch: starting a
// thread would cost more than it saves.
inline constexpr size_t kTwoHalvesMin = 1 << 15;

// Calls fn(half, 0) on data[0, mid) and fn(half, 1) on data[mid, size),
// concurrently; returns mid. A small batch, a machine with one core, a
// caller that asks for one thread (`two_threads` false: --threads 1), or
// a thread that cannot be started: done on the calling thread with mid =
// size (the second half is empty). An exception from either half is
// rethrown here once both have ended.
template <class T, class Fn>
size_t for_two_halves(std::span<T> data, bool two_threads, Fn&& fn) {
  auto alone = [&] {
    fn(data, 0);
    fn(data.subspan(data.size()), 1);
    return data.size();
  };
  if (!two_threads || data.size() < kTwoHalvesMin || std::thread::hardware_concurrency() < 2) return alone();
  const size_t mid = data.size() / 2;
  std::exception_ptr second_error;
  std::thread second;
  try {
    second = std::thread([&] {
      try {
        fn(data.subspan(mid), 1);
      } catch (...) {
        second_error = std::current_exception();
      }
    });
  } catch (const std::system_error&) {
    return alone();
  }
  std::exception_ptr first_error;
  try {
    fn(data.first(mid), 0);
  } catch (...) {
    first_error = std::current_exception();
  }
  second.join();
  if (first_error) std::rethrow_exception(first_error);
  if (second_error) std::rethrow_exception(second_error);
  return mid;
}

}  // namespace peregrine::graph::detail
