// clear() alongside other operations, for every concurrent filter (the lock policies and the
// lock-free filter): lookups see the table of before the clear or of after it, never a mix; a
// batched insert's rollback does not erase another thread's key that a clear made room for; and
// lookups that run while the table is emptied race with nothing (a TSan run checks the stores).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <thread>
#include <vector>

#include "ccf/concurrent_cuckoo_filter.hpp"
#include "ccf/hash.hpp"
#include "ccf/lockfree_cuckoo_filter.hpp"
#include "filter_types.hpp"
#include "run_threads.hpp"

namespace ccf_test {
namespace {

// ---- lookups during a clear ----

template <class F>
class clear_lookups : public ::testing::Test {};
using global_alternate_filters = ::testing::Types<
    ccf::concurrent_cuckoo_filter<u64, 16, 4, ccf::hash<u64>, ccf::striped_locking,
                                  ccf::global_alternate>,
    ccf::concurrent_cuckoo_filter<u64, 16, 4, ccf::hash<u64>, ccf::global_locking,
                                  ccf::global_alternate>,
    ccf::lockfree_cuckoo_filter<u64, 12, 4, ccf::hash<u64>, ccf::global_alternate>>;
TYPED_TEST_SUITE(clear_lookups, global_alternate_filters);

/// The first key from `from` on whose two buckets satisfy pred(i1, i2).
template <class F, class Pred>
u64 key_where(const F& f, u64 from, Pred pred) {
  for (u64 k = from;; ++k) {
    const auto p = f.locate(k);
    if (p.i1 != p.i2 && pred(std::min(p.i1, p.i2), std::max(p.i1, p.i2))) return k;
  }
}

// A clear empties the table bucket by bucket, from the first to the last. A key stored S + 1
// times (S slots a bucket), so in both of its buckets, one near each end, has a count of S + 1
// before the clear and 0 after it: a lookup that answered anything else saw one bucket emptied
// and the other not yet. A key in the first buckets found absent and then
// a key in the last buckets found present is the same mix seen by two lookups in a row.
TYPED_TEST(clear_lookups, see_the_table_whole_or_empty) {
  using F = TypeParam;
  const int runs = std::max(3, static_cast<int>(8 * test_scale()));
  int mixed_counts = 0, mixed_pairs = 0, lookups_during = 0;
  for (int run = 0; run < runs; ++run) {
    F f(std::size_t{1} << 21);
    const std::size_t n = f.num_buckets(), edge = n / 64;
    const u64 both = key_where(
        f, 1, [&](std::size_t lo, std::size_t hi) { return lo < edge && hi >= n - edge; });
    const u64 first =
        key_where(f, both + 1, [&](std::size_t, std::size_t hi) { return hi < edge; });
    const u64 last =
        key_where(f, first + 1, [&](std::size_t lo, std::size_t) { return lo >= n - edge; });
    const std::size_t copies = F::slots_per_bucket + 1;
    for (std::size_t c = 0; c < copies; ++c)
      ASSERT_TRUE(f.insert(both));
    ASSERT_TRUE(f.insert(first) && f.insert(last));
    const auto keys = make_keys(n, 7000 + static_cast<u64>(run));  // a quarter full
    ASSERT_EQ(f.insert_many(std::span<const u64>(keys)), keys.size());
    ASSERT_EQ(f.count(both), copies);
    std::atomic<bool> reading{false}, cleared{false};
    run_threads(2, [&](int t) {
      if (t == 0) {
        while (!reading.load())
          std::this_thread::yield();
        f.clear();
        cleared = true;
        return;
      }
      reading = true;
      while (!cleared.load()) {
        const std::size_t c = f.count(both);
        if (c != 0 && c != copies) ++mixed_counts;
        const bool first_there = f.contains(first);
        if (!first_there && f.contains(last)) ++mixed_pairs;
        if (c == 0 || !first_there) ++lookups_during;
      }
    });
    EXPECT_EQ(f.size(), 0u);
    EXPECT_EQ(f.count(both), 0u);
    EXPECT_FALSE(f.contains(last));
  }
  EXPECT_EQ(mixed_counts, 0) << "count() of a key in both its buckets was partial during a clear";
  EXPECT_EQ(mixed_pairs, 0) << "a key was absent, then a key the same clear removed present";
  std::printf("lookups that saw the clear take effect while it ran: %d in %d runs\n",
              lookups_during, runs);
}

// ---- a batch's rollback and a clear ----

// A clear and an insert on the same thread from inside the hash function, the moment a batched
// insert's rollback hashes the item it is about to take back: what another thread could do at
// that instant, made certain.
std::function<void(u64)> on_hash;  // called with each key hashed, when set
struct hooked_hash {
  std::uint64_t operator()(u64 key, std::uint64_t seed) const noexcept {
    if (on_hash) on_hash(key);
    return ccf::hash<u64>{}(key, seed);
  }
};

template <class F>
class clear_rollback : public ::testing::Test {};
using hooked_filters = ::testing::Types<
    ccf::concurrent_cuckoo_filter<u64, 16, 4, hooked_hash>,
    ccf::concurrent_cuckoo_filter<u64, 16, 4, hooked_hash, ccf::global_locking>,
    ccf::concurrent_cuckoo_filter<u64, 16, 4, hooked_hash, ccf::elided_mcs_locking>,
    ccf::lockfree_cuckoo_filter<u64, 12, 4, hooked_hash>>;
TYPED_TEST_SUITE(clear_rollback, hooked_filters);

// The batch: 2S + 1 copies of x (S slots a bucket: the last copy finds both buckets full and is
// set aside, then refused) and k, which goes in while the last x waits and is taken back when it
// is refused. When the rollback hashes k, "another thread" clears the filter and inserts k.
// The rollback must leave that k alone: the batch's own copy went with the clear.
TYPED_TEST(clear_rollback, leaves_a_key_inserted_after_a_clear) {
  using F = TypeParam;
  F f(1000000);  // more than 1 MiB: the batch goes through the prefetch window and deferrals
  const u64 x = 12345;
  ASSERT_NE(f.locate(x).i1, f.locate(x).i2);
  const u64 k = x + 1;
  std::vector<u64> batch(2 * F::slots_per_bucket + 1, x);
  batch.push_back(k);
  int hashed_k = 0;
  bool cleared = false;
  on_hash = [&](u64 key) {
    if (key != k || ++hashed_k != 2) return;  // 1: the batch places k; 2: it takes k back
    f.clear();
    cleared = f.insert(k);  // hashes k a third time
  };
  const std::size_t done = f.insert_many(std::span<const u64>(batch));
  on_hash = nullptr;
  ASSERT_TRUE(cleared) << "the rollback did not hash k a second time (hashed " << hashed_k
                       << " times)";
  EXPECT_EQ(done, 2 * F::slots_per_bucket) << "the last copy of x is refused";
  EXPECT_TRUE(f.contains(k)) << "the rollback erased the k inserted after the clear";
  EXPECT_EQ(f.size(), 1u);
}

// Without a clear the rollback still takes k back.
TYPED_TEST(clear_rollback, takes_back_what_went_in_after_a_refusal) {
  using F = TypeParam;
  F f(1000000);
  const u64 x = 12345, k = x + 1;
  std::vector<u64> batch(2 * F::slots_per_bucket + 1, x);
  batch.push_back(k);
  EXPECT_EQ(f.insert_many(std::span<const u64>(batch)), 2 * F::slots_per_bucket);
  EXPECT_FALSE(f.contains(k));
  EXPECT_EQ(f.size(), 2 * F::slots_per_bucket);
}

}  // namespace
}  // namespace ccf_test
