// Stress test of ccf's lock primitives used as striped locks: concurrent "transfers" between
// accounts protected by lock stripes, while auditors take every stripe (the per-thread maximum
// of held locks) and check that the total never changes.
//
// The default run is short. CCF_STRESS_SCALE=<n> in the environment multiplies the work.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "ccf/detail/elided_lock.hpp"
#include "ccf/detail/mcs_lock.hpp"

namespace {

using ccf::detail::elided_mcs_lock;
using ccf::detail::lock_mode;
using ccf::detail::mcs_lock;

constexpr std::size_t stripe_count = mcs_lock::max_held_locks;
constexpr std::size_t accounts_per_stripe = 8;
constexpr std::size_t account_count = stripe_count * accounts_per_stripe;
constexpr std::int64_t initial_balance = 1000;

int scale() {
  const char* value = std::getenv("CCF_STRESS_SCALE");
  const int parsed = value != nullptr ? std::atoi(value) : 1;
  return parsed > 0 ? parsed : 1;
}

#if CCF_TSAN
constexpr int base_transfers = 1500;
#else
constexpr int base_transfers = 20000;
#endif

// Small per-thread pseudo-random generator (xorshift64*).
struct rng {
  std::uint64_t state;
  std::uint64_t next() {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545f4914f6cdd1dULL;
  }
};

// Locks a stripe for the given mode; plain mcs_locks ignore the mode.
void lock_stripe(mcs_lock& lk, lock_mode) {
  lk.lock();
}
void lock_stripe(elided_mcs_lock& lk, lock_mode mode) {
  lk.lock(mode);
}

// Runs the bank on `stripes`; returns how many times each stripe was acquired.
template <typename Lock>
std::array<std::uint64_t, stripe_count> run_bank(std::array<Lock, stripe_count>& stripes,
                                                 int transfer_threads, int auditor_threads) {
  std::array<std::atomic<std::uint64_t>, stripe_count> acquired{};
  std::array<std::int64_t, account_count> balances;
  balances.fill(initial_balance);
  const std::int64_t expected_total = initial_balance * static_cast<std::int64_t>(account_count);
  const int transfers = base_transfers * scale();
  std::atomic<int> transfer_threads_left{transfer_threads};
  std::atomic<std::uint64_t> audits{0};
  std::atomic<int> bad_audits{0};
  std::atomic<int> negative_balances{0};

  std::vector<std::thread> pool;
  for (int t = 0; t < transfer_threads; ++t) {
    pool.emplace_back([&, t] {
      rng gen{0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(t + 1)};
      for (int i = 0; i < transfers; ++i) {
        const std::size_t from = gen.next() % account_count;
        const std::size_t to = gen.next() % account_count;
        const std::size_t s1 = from / accounts_per_stripe;
        const std::size_t s2 = to / accounts_per_stripe;
        const auto amount = static_cast<std::int64_t>(gen.next() % 10);
        // Stripes are always taken in increasing index order.
        const std::size_t lo = s1 < s2 ? s1 : s2;
        const std::size_t hi = s1 < s2 ? s2 : s1;
        lock_stripe(stripes[lo], lock_mode::update);
        acquired[lo].fetch_add(1, std::memory_order_relaxed);
        if (hi != lo) {
          lock_stripe(stripes[hi], lock_mode::update);
          acquired[hi].fetch_add(1, std::memory_order_relaxed);
        }
        if (balances[from] >= amount) {
          balances[from] -= amount;
          balances[to] += amount;
        }
        if (balances[from] < 0) negative_balances.fetch_add(1, std::memory_order_relaxed);
        // Release in a thread-dependent order.
        if (t % 2 == 0 && hi != lo) {
          stripes[lo].unlock();
          stripes[hi].unlock();
        } else {
          if (hi != lo) stripes[hi].unlock();
          stripes[lo].unlock();
        }
      }
      transfer_threads_left.fetch_sub(1, std::memory_order_release);
    });
  }
  for (int a = 0; a < auditor_threads; ++a) {
    pool.emplace_back([&] {
      do {
        for (std::size_t i = 0; i < stripe_count; ++i) {
          lock_stripe(stripes[i], lock_mode::read);
          acquired[i].fetch_add(1, std::memory_order_relaxed);
        }
        std::int64_t total = 0;
        for (const std::int64_t balance : balances)
          total += balance;
        if (total != expected_total) bad_audits.fetch_add(1, std::memory_order_relaxed);
        for (auto& stripe : stripes)
          stripe.unlock();
        audits.fetch_add(1, std::memory_order_relaxed);
        std::this_thread::yield();
      } while (transfer_threads_left.load(std::memory_order_acquire) > 0);
    });
  }
  for (auto& th : pool)
    th.join();

  std::int64_t total = 0;
  for (const std::int64_t balance : balances)
    total += balance;
  EXPECT_EQ(total, expected_total);
  EXPECT_EQ(bad_audits.load(), 0);
  EXPECT_EQ(negative_balances.load(), 0);
  EXPECT_GE(audits.load(), static_cast<std::uint64_t>(auditor_threads));
  for (const auto& stripe : stripes)
    EXPECT_FALSE(stripe.is_locked());
  std::array<std::uint64_t, stripe_count> counts{};
  for (std::size_t i = 0; i < stripe_count; ++i)
    counts[i] = acquired[i].load();
  return counts;
}

TEST(StressLock, McsStripedTransfersWithAuditors) {
  std::array<mcs_lock, stripe_count> stripes;
  run_bank(stripes, 6, 2);
}

TEST(StressLock, ElidedStripedTransfersWithAuditors) {
  std::array<elided_mcs_lock, stripe_count> stripes;
  const auto counts = run_bank(stripes, 6, 2);
  for (std::size_t i = 0; i < stripe_count; ++i) {
    if (!ccf::detail::rtm_supported()) {
      EXPECT_EQ(stripes[i].fallback_acquisitions(), counts[i]);
      EXPECT_EQ(stripes[i].speculative_commits(), 0u);
    } else {
      EXPECT_EQ(stripes[i].fallback_acquisitions() + stripes[i].speculative_commits(), counts[i]);
    }
  }
}

}  // namespace
