// Thread-safety annotations: lock rules the compiler checks.
//
// With clang, -Wthread-safety (the `asan` CMake preset, a clang build and
// a step of tools/run-tests) checks at compile time that a member marked
// GUARDED_BY(mu) is read or written only with mu held, that a function
// marked REQUIRES(mu) is called only with mu held and EXCLUDES(mu) only
// without it, and that every ACQUIRE has its RELEASE. With any other
// compiler the macros expand to nothing and change no code.
//
// The analysis knows only annotated lock types: libstdc++'s std::mutex and
// std::shared_mutex are not, so guarded state uses peregrine::Mutex and
// peregrine::SharedMutex (util/mutex.h). The names and meanings follow
// clang's documentation ("Thread Safety Analysis") and LevelDB's
// port/thread_annotations.h.
//
// Thread rules: none (macros only).
#pragma once

#if defined(__clang__)
#define PEREGRINE_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define PEREGRINE_THREAD_ANNOTATION(x)
#endif

// A class whose objects are locks ("mutex": the name used in messages).
#define CAPABILITY(x) PEREGRINE_THREAD_ANNOTATION(capability(x))
// A class whose objects hold a lock for their lifetime (RAII).
#define SCOPED_CAPABILITY PEREGRINE_THREAD_ANNOTATION(scoped_lockable)

// Data: read with the lock held (shared is enough), written with it held
// exclusively. PT_: the same for what a pointer points at.
#define GUARDED_BY(x) PEREGRINE_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) PEREGRINE_THREAD_ANNOTATION(pt_guarded_by(x))

// Lock order between two locks (checked only by -Wthread-safety-beta).
#define ACQUIRED_BEFORE(...) PEREGRINE_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) PEREGRINE_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))

// Functions: the caller holds the lock(s) (exclusively / at least shared).
#define REQUIRES(...) PEREGRINE_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) PEREGRINE_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
// Functions: the caller must not hold the lock(s) (the function takes them).
#define EXCLUDES(...) PEREGRINE_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))

// Functions that take or drop a lock and return with it so.
#define ACQUIRE(...) PEREGRINE_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) PEREGRINE_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) PEREGRINE_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) PEREGRINE_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
// Returns the first argument (true/false) when it took the lock.
#define TRY_ACQUIRE(...) PEREGRINE_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define TRY_ACQUIRE_SHARED(...) PEREGRINE_THREAD_ANNOTATION(try_acquire_shared_capability(__VA_ARGS__))

// Tells the analysis the lock is held from here on, where it cannot see
// the acquire (a lambda that runs under the caller's lock).
#define ASSERT_CAPABILITY(x) PEREGRINE_THREAD_ANNOTATION(assert_capability(x))
#define ASSERT_SHARED_CAPABILITY(x) PEREGRINE_THREAD_ANNOTATION(assert_shared_capability(x))

// A function returning a reference to the lock it names.
#define RETURN_CAPABILITY(x) PEREGRINE_THREAD_ANNOTATION(lock_returned(x))

// Turns the analysis off for one function: only where the rule it would
// check does not hold by design; say why next to it.
#define NO_THREAD_SAFETY_ANALYSIS PEREGRINE_THREAD_ANNOTATION(no_thread_safety_analysis)
