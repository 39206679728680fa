// Mutex, SharedMutex and their scoped locks: std::mutex and
// std::shared_mutex with the thread-safety annotations
// (util/thread_annotations.h) that let clang check GUARDED_BY / REQUIRES
// rules. Same cost and semantics as the std types they wrap.
//
//   Mutex mu_;
//   int n_ GUARDED_BY(mu_);
//   void add() EXCLUDES(mu_) { MutexLock lock(mu_); ++n_; }
//
// Condition variables: a MutexLock waits on a std::condition_variable with
// wait()/wait_for(), as std::unique_lock does. A predicate is a lambda the
// analysis checks on its own: start it with mu_.assert_held().
//
// Thread rules: those of the std types.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#include "peregrine/util/thread_annotations.h"

namespace peregrine {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // No run-time check: declares to the analysis that the caller holds it.
  void assert_held() const ASSERT_CAPABILITY(this) {}

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// Holds a Mutex from construction to destruction (or unlock()).
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : lock_(mu.mu_) {}
  // Takes over a lock the caller already holds (after mu.try_lock()).
  MutexLock(Mutex& mu, std::adopt_lock_t) REQUIRES(mu) : lock_(mu.mu_, std::adopt_lock) {}
  ~MutexLock() RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void unlock() RELEASE() { lock_.unlock(); }
  void lock() ACQUIRE() { lock_.lock(); }

  // Release the mutex while waiting, hold it again on return.
  void wait(std::condition_variable& cv) { cv.wait(lock_); }
  template <class Predicate>
  void wait(std::condition_variable& cv, Predicate pred) {
    cv.wait(lock_, std::move(pred));
  }
  template <class Rep, class Period>
  std::cv_status wait_for(std::condition_variable& cv, const std::chrono::duration<Rep, Period>& d) {
    return cv.wait_for(lock_, d);
  }
  template <class Rep, class Period, class Predicate>
  bool wait_for(std::condition_variable& cv, const std::chrono::duration<Rep, Period>& d, Predicate pred) {
    return cv.wait_for(lock_, d, std::move(pred));
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

class CAPABILITY("mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  void lock_shared() ACQUIRE_SHARED() { mu_.lock_shared(); }
  void unlock_shared() RELEASE_SHARED() { mu_.unlock_shared(); }
  void assert_held() const ASSERT_CAPABILITY(this) {}
  void assert_shared_held() const ASSERT_SHARED_CAPABILITY(this) {}

 private:
  std::shared_mutex mu_;
};

// Holds a SharedMutex exclusively (std::unique_lock).
class SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~WriterLock() RELEASE() {
    if (held_) mu_.unlock();
  }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

  void unlock() RELEASE() {
    mu_.unlock();
    held_ = false;
  }
  void lock() ACQUIRE() {
    mu_.lock();
    held_ = true;
  }

 private:
  SharedMutex& mu_;
  bool held_ = true;
};

// Holds a SharedMutex shared (std::shared_lock).
class SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex& mu) ACQUIRE_SHARED(mu) : mu_(mu) { mu_.lock_shared(); }
  ~ReaderLock() RELEASE() {
    if (held_) mu_.unlock_shared();
  }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

  void unlock() RELEASE() {
    mu_.unlock_shared();
    held_ = false;
  }

 private:
  SharedMutex& mu_;
  bool held_ = true;
};

}  // namespace peregrine
