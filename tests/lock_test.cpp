// Tests of ccf's lock primitives: the MCS queue lock, RTM detection and the elided MCS lock.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ccf/detail/elided_lock.hpp"
#include "ccf/detail/mcs_lock.hpp"
#include "ccf/detail/rtm.hpp"

#include "run_threads.hpp"

namespace {

namespace cd = ccf::detail;
using ccf::detail::elided_mcs_lock;
using ccf::detail::lock_mode;
using ccf::detail::mcs_lock;

constexpr int thread_count = 8;  // more threads than the machines' cores
#if CCF_TSAN
constexpr int iterations = 2000;
#else
constexpr int iterations = 10000;
#endif

using ccf_test::run_threads;

// Shared state a critical section checks: a plain counter and an "inside" flag that catches two
// threads in the section at once.
struct section_probe {
  std::uint64_t counter = 0;  // deliberately not atomic: protected by the lock under test
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};

  void enter_and_increment() {
    if (inside.fetch_add(1, std::memory_order_relaxed) != 0) {
      overlaps.fetch_add(1, std::memory_order_relaxed);
    }
    const std::uint64_t before = counter;
    counter = before + 1;
    inside.fetch_sub(1, std::memory_order_relaxed);
  }
};

// ---------------------------------------------------------------------------------- mcs_lock

TEST(McsLock, LayoutIsOneCacheLine) {
  EXPECT_EQ(alignof(mcs_lock), ccf::cache_line_size);
  EXPECT_EQ(alignof(mcs_lock::node), ccf::cache_line_size);
  std::array<mcs_lock, 2> locks;
  const auto gap =
      reinterpret_cast<std::uintptr_t>(&locks[1]) - reinterpret_cast<std::uintptr_t>(&locks[0]);
  EXPECT_EQ(gap, ccf::cache_line_size);
}

TEST(McsLock, ExplicitNodeLockUnlockAndState) {
  mcs_lock lk;
  mcs_lock::node n;
  EXPECT_FALSE(lk.is_locked());
  lk.lock(n);
  EXPECT_TRUE(lk.is_locked());
  EXPECT_TRUE(lk.is_tail(n));
  lk.unlock(n);
  EXPECT_FALSE(lk.is_locked());
  EXPECT_FALSE(lk.is_tail(n));
  // The node is reusable at once.
  lk.lock(n);
  EXPECT_TRUE(lk.is_locked());
  lk.unlock(n);
  EXPECT_FALSE(lk.is_locked());
}

TEST(McsLock, TryLockSemantics) {
  mcs_lock lk;
  mcs_lock::node a;
  mcs_lock::node b;
  EXPECT_TRUE(lk.try_lock(a));
  EXPECT_FALSE(lk.try_lock(b));  // held
  EXPECT_TRUE(lk.is_tail(a));    // the failed attempt did not enqueue
  lk.unlock(a);
  EXPECT_TRUE(lk.try_lock(b));
  lk.unlock(b);
  EXPECT_FALSE(lk.is_locked());

  // Node-less interface: a failed try_lock must not leave a slot behind.
  EXPECT_TRUE(lk.try_lock());
  EXPECT_TRUE(lk.owned_by_this_thread());
  bool other_got_it = true;
  std::thread other([&] {
    other_got_it = lk.try_lock();
    for (std::size_t i = 0; i < 2 * mcs_lock::max_held_locks; ++i) {
      EXPECT_FALSE(lk.try_lock());
      EXPECT_FALSE(lk.owned_by_this_thread());
    }
  });
  other.join();
  EXPECT_FALSE(other_got_it);
  lk.unlock();
  EXPECT_FALSE(lk.is_locked());
  EXPECT_FALSE(lk.owned_by_this_thread());
  std::thread later([&] {
    EXPECT_TRUE(lk.try_lock());
    lk.unlock();
  });
  later.join();
}

TEST(McsLock, MutualExclusionExplicitNodes) {
  mcs_lock lk;
  section_probe probe;
  run_threads(thread_count, [&](int) {
    mcs_lock::node n;
    for (int i = 0; i < iterations; ++i) {
      lk.lock(n);
      probe.enter_and_increment();
      lk.unlock(n);
    }
  });
  EXPECT_EQ(probe.counter, static_cast<std::uint64_t>(thread_count) * iterations);
  EXPECT_EQ(probe.overlaps.load(), 0);
  EXPECT_FALSE(lk.is_locked());
}

TEST(McsLock, MutualExclusionLockableWithTryLock) {
  mcs_lock lk;
  section_probe probe;
  std::atomic<std::uint64_t> acquisitions{0};
  run_threads(thread_count, [&](int t) {
    for (int i = 0; i < iterations; ++i) {
      if (t % 2 == 0) {
        std::lock_guard<mcs_lock> guard(lk);
        probe.enter_and_increment();
        acquisitions.fetch_add(1, std::memory_order_relaxed);
      } else if (lk.try_lock()) {
        probe.enter_and_increment();
        acquisitions.fetch_add(1, std::memory_order_relaxed);
        lk.unlock();
      }
    }
  });
  EXPECT_EQ(probe.counter, acquisitions.load());
  EXPECT_GE(acquisitions.load(), static_cast<std::uint64_t>(thread_count / 2) * iterations);
  EXPECT_EQ(probe.overlaps.load(), 0);
  EXPECT_FALSE(lk.is_locked());
}

TEST(McsLock, ThreadHoldsTwoLocksAtOnce) {
  mcs_lock first;
  mcs_lock second;
  first.lock();
  second.lock();
  EXPECT_TRUE(first.owned_by_this_thread());
  EXPECT_TRUE(second.owned_by_this_thread());
  std::thread probe([&] {
    EXPECT_FALSE(first.try_lock());
    EXPECT_FALSE(second.try_lock());
  });
  probe.join();
  // Release in acquisition order (not LIFO): each unlock must release its own lock.
  first.unlock();
  EXPECT_FALSE(first.is_locked());
  EXPECT_TRUE(second.is_locked());
  EXPECT_FALSE(first.owned_by_this_thread());
  EXPECT_TRUE(second.owned_by_this_thread());
  second.unlock();
  EXPECT_FALSE(second.is_locked());
}

TEST(McsLock, ScopedLockOnSeveralLocksFromManyThreads) {
  std::array<mcs_lock, 3> locks;
  std::array<std::uint64_t, 3> cells{};
  run_threads(thread_count, [&](int t) {
    for (int i = 0; i < iterations / 4; ++i) {
      // Different acquisition orders in different threads: std::scoped_lock avoids deadlock.
      const int a = (t + i) % 3;
      const int b = (a + 1 + t % 2) % 3;
      std::scoped_lock guard(locks[static_cast<std::size_t>(a)],
                             locks[static_cast<std::size_t>(b)]);
      ++cells[static_cast<std::size_t>(a)];
      ++cells[static_cast<std::size_t>(b)];
    }
  });
  const std::uint64_t total = cells[0] + cells[1] + cells[2];
  EXPECT_EQ(total, 2ull * thread_count * (iterations / 4));
  for (const auto& lk : locks)
    EXPECT_FALSE(lk.is_locked());
}

TEST(McsLock, MaxHeldLocksAreUsable) {
  std::array<mcs_lock, mcs_lock::max_held_locks> locks;
  for (auto& lk : locks)
    lk.lock();
  for (const auto& lk : locks)
    EXPECT_TRUE(lk.owned_by_this_thread());
  for (auto& lk : locks)
    lk.unlock();
  for (const auto& lk : locks)
    EXPECT_FALSE(lk.is_locked());
}

// Takes one lock more than a thread may hold through the node-less interface.
void lock_too_many() {
  std::array<mcs_lock, mcs_lock::max_held_locks + 1> locks;
  for (auto& lk : locks)
    lk.lock();
}

TEST(McsLockDeathTest, HoldingTooManyLocksTerminates) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(lock_too_many(), "");
}

TEST(McsLockDeathTest, UnlockingALockNotHeldTerminates) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        mcs_lock lk;
        lk.unlock();
      },
      "");
}

// Holds the lock, lets threads enqueue one at a time (each waits until its node is the queue's
// tail before the next one starts), releases, and checks that they ran in enqueue order.
TEST(McsLock, FifoHandOff) {
  constexpr int waiters = 6;
  mcs_lock lk;
  mcs_lock::node owner;
  std::array<mcs_lock::node, waiters> nodes;
  std::vector<int> order;  // written under the lock
  lk.lock(owner);
  std::vector<std::thread> pool;
  for (int w = 0; w < waiters; ++w) {
    pool.emplace_back([&, w] {
      auto& n = nodes[static_cast<std::size_t>(w)];
      lk.lock(n);
      order.push_back(w);
      lk.unlock(n);
    });
    while (!lk.is_tail(nodes[static_cast<std::size_t>(w)]))
      std::this_thread::yield();
  }
  lk.unlock(owner);
  for (auto& th : pool)
    th.join();
  ASSERT_EQ(order.size(), static_cast<std::size_t>(waiters));
  for (int w = 0; w < waiters; ++w)
    EXPECT_EQ(order[static_cast<std::size_t>(w)], w);
  EXPECT_FALSE(lk.is_locked());
}

// ---------------------------------------------------------------------------------- rtm

TEST(Rtm, AbortStatusDecoding) {
  const unsigned locked_abort = cd::rtm_abort_explicit | (cd::rtm_locked_code << 24);
  EXPECT_TRUE(cd::rtm_aborted_because_locked(locked_abort));
  EXPECT_EQ(cd::rtm_abort_code(locked_abort), cd::rtm_locked_code);
  EXPECT_FALSE(cd::rtm_aborted_because_locked(cd::rtm_abort_explicit | (7u << 24)));
  EXPECT_FALSE(cd::rtm_aborted_because_locked(cd::rtm_abort_conflict | cd::rtm_abort_retry));
  EXPECT_FALSE(cd::rtm_aborted_because_locked(cd::rtm_started));
}

TEST(Rtm, SupportImpliesCpuidFlag) {
  const bool supported = cd::rtm_supported();
  EXPECT_EQ(supported, cd::rtm_supported());  // cached
  if (supported) {
    EXPECT_TRUE(cd::rtm_cpuid_flag());
  }
  if (CCF_TSAN || cd::rtm_disabled_by_environment()) {
    EXPECT_FALSE(supported);
  }
  if (!cd::rtm_cpuid_flag()) {
    EXPECT_FALSE(cd::rtm_probe());
  }
  std::printf("rtm: cpuid flag %d, supported %d\n", cd::rtm_cpuid_flag() ? 1 : 0,
              supported ? 1 : 0);
}

TEST(Rtm, EnvironmentVariableDisablesRtm) {
  const char* saved = std::getenv("CCF_NO_RTM");
  const std::string saved_value = saved != nullptr ? saved : "";
  ASSERT_EQ(setenv("CCF_NO_RTM", "1", 1), 0);
  EXPECT_TRUE(cd::rtm_disabled_by_environment());
  EXPECT_FALSE(cd::rtm_probe());
  ASSERT_EQ(setenv("CCF_NO_RTM", "0", 1), 0);
  EXPECT_FALSE(cd::rtm_disabled_by_environment());
  ASSERT_EQ(setenv("CCF_NO_RTM", "", 1), 0);
  EXPECT_FALSE(cd::rtm_disabled_by_environment());
  if (saved != nullptr) {
    setenv("CCF_NO_RTM", saved_value.c_str(), 1);
  } else {
    unsetenv("CCF_NO_RTM");
  }
}

// ---------------------------------------------------------------------------------- elided

// Checks the acquisition statistics after `acquisitions` successful lock/try_lock calls.
void expect_counters(const elided_mcs_lock& lk, std::uint64_t acquisitions) {
  if (!cd::rtm_supported()) {
    EXPECT_EQ(lk.fallback_acquisitions(), acquisitions);
    EXPECT_EQ(lk.speculative_commits(), 0u);
  } else {
    EXPECT_EQ(lk.speculative_commits() + lk.fallback_acquisitions(), acquisitions);
  }
}

TEST(ElidedMcsLock, Layout) {
  EXPECT_EQ(sizeof(elided_mcs_lock), 2 * ccf::cache_line_size);
  EXPECT_EQ(alignof(elided_mcs_lock), ccf::cache_line_size);
}

TEST(ElidedMcsLock, SingleThreadCountersAndMode) {
  elided_mcs_lock lk;
  expect_counters(lk, 0);
  lk.lock(lock_mode::read);
  if (!cd::rtm_supported()) {
    EXPECT_TRUE(lk.is_locked());
    EXPECT_EQ(lk.mode(), lock_mode::read);
  }
  lk.unlock();
  lk.lock(lock_mode::update);
  if (!cd::rtm_supported()) {
    EXPECT_TRUE(lk.is_locked());
    EXPECT_EQ(lk.mode(), lock_mode::update);
  }
  lk.unlock();
  lk.lock(lock_mode::read);
  if (!cd::rtm_supported()) {
    EXPECT_EQ(lk.mode(), lock_mode::read);
  }
  lk.unlock();
  {
    std::lock_guard<elided_mcs_lock> guard(lk);  // Lockable: update mode
    if (!cd::rtm_supported()) {
      EXPECT_EQ(lk.mode(), lock_mode::update);
    }
  }
  EXPECT_FALSE(lk.is_locked());
  expect_counters(lk, 4);
}

TEST(ElidedMcsLock, TryLockSemantics) {
  elided_mcs_lock lk;
  std::uint64_t acquisitions = 0;
  ASSERT_TRUE(lk.try_lock(lock_mode::read));
  ++acquisitions;
  if (!cd::rtm_supported()) {
    EXPECT_EQ(lk.mode(), lock_mode::read);
    bool other_got_it = true;
    std::thread other([&] { other_got_it = lk.try_lock(); });
    other.join();
    EXPECT_FALSE(other_got_it);
  }
  lk.unlock();
  std::thread later([&] {
    EXPECT_TRUE(lk.try_lock());
    if (!cd::rtm_supported()) {
      EXPECT_EQ(lk.mode(), lock_mode::update);
    }
    lk.unlock();
  });
  later.join();
  ++acquisitions;
  EXPECT_FALSE(lk.is_locked());
  expect_counters(lk, acquisitions);
}

TEST(ElidedMcsLock, MutualExclusionAndModes) {
  elided_mcs_lock lk;
  section_probe probe;
  std::atomic<int> wrong_mode{0};
  run_threads(thread_count, [&](int t) {
    for (int i = 0; i < iterations; ++i) {
      const lock_mode mode = (t + i) % 3 == 0 ? lock_mode::read : lock_mode::update;
      lk.lock(mode);
      if (!cd::rtm_supported() && lk.mode() != mode) {
        wrong_mode.fetch_add(1, std::memory_order_relaxed);
      }
      probe.enter_and_increment();
      lk.unlock();
    }
  });
  const std::uint64_t total = static_cast<std::uint64_t>(thread_count) * iterations;
  EXPECT_EQ(probe.counter, total);
  EXPECT_EQ(probe.overlaps.load(), 0);
  EXPECT_EQ(wrong_mode.load(), 0);
  EXPECT_FALSE(lk.is_locked());
  expect_counters(lk, total);
}

TEST(ElidedMcsLock, MutualExclusionWithLockGuardAndTryLock) {
  elided_mcs_lock lk;
  section_probe probe;
  std::atomic<std::uint64_t> acquisitions{0};
  run_threads(thread_count, [&](int t) {
    for (int i = 0; i < iterations; ++i) {
      if (t % 2 == 0) {
        std::lock_guard<elided_mcs_lock> guard(lk);
        probe.enter_and_increment();
        acquisitions.fetch_add(1, std::memory_order_relaxed);
      } else if (lk.try_lock(lock_mode::read)) {
        probe.enter_and_increment();
        acquisitions.fetch_add(1, std::memory_order_relaxed);
        lk.unlock();
      }
    }
  });
  EXPECT_EQ(probe.counter, acquisitions.load());
  EXPECT_EQ(probe.overlaps.load(), 0);
  EXPECT_FALSE(lk.is_locked());
  expect_counters(lk, acquisitions.load());
}

TEST(ElidedMcsLock, TwoElidedLocksAndAPlainOneReleasedInAnyOrder) {
  elided_mcs_lock a;
  elided_mcs_lock b;
  mcs_lock plain;
  section_probe probe;
  run_threads(thread_count, [&](int t) {
    for (int i = 0; i < iterations / 4; ++i) {
      // Fixed global order a -> b -> plain; release order varies by thread.
      a.lock(lock_mode::update);
      b.lock(lock_mode::read);
      plain.lock();
      probe.enter_and_increment();
      if (t % 2 == 0) {
        a.unlock();
        plain.unlock();
        b.unlock();
      } else {
        plain.unlock();
        b.unlock();
        a.unlock();
      }
    }
  });
  const std::uint64_t total = static_cast<std::uint64_t>(thread_count) * (iterations / 4);
  EXPECT_EQ(probe.counter, total);
  EXPECT_EQ(probe.overlaps.load(), 0);
  EXPECT_FALSE(a.is_locked());
  EXPECT_FALSE(b.is_locked());
  EXPECT_FALSE(plain.is_locked());
  expect_counters(a, total);
  expect_counters(b, total);
}

TEST(ElidedMcsLock, FallbackOnlyWithoutRtm) {
  // The machines ccf is developed and benchmarked on have no RTM: there every acquisition must
  // be a fallback acquisition. Elsewhere the counters must still add up.
  elided_mcs_lock lk;
  constexpr int rounds = 100;
  for (int i = 0; i < rounds; ++i) {
    lk.lock(i % 2 == 0 ? lock_mode::read : lock_mode::update);
    lk.unlock();
  }
  if (!cd::rtm_supported()) {
    EXPECT_EQ(lk.fallback_acquisitions(), static_cast<std::uint64_t>(rounds));
    EXPECT_EQ(lk.speculative_commits(), 0u);
  } else {
    EXPECT_EQ(lk.fallback_acquisitions() + lk.speculative_commits(),
              static_cast<std::uint64_t>(rounds));
    // Uncontended empty sections on a working RTM implementation nearly always commit.
    EXPECT_GT(lk.speculative_commits(), 0u);
  }
}

TEST(ElidedMcsLockDeathTest, UnlockingALockNotHeldTerminates) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  if (cd::rtm_supported()) GTEST_SKIP() << "XEND outside a transaction faults instead";
  EXPECT_DEATH(
      {
        elided_mcs_lock lk;
        lk.unlock();
      },
      "");
}

}  // namespace
