// ccf::build and bulk_insert: parallel chunk-by-chunk filling of every filter kind, for integer
// and string keys and 1, 2 or 4 threads; skip_present with repeated keys; filter_full_error when
// the keys do not fit; the result is an ordinary filter (it saves, loads into a sequential filter
// of the same layout and keeps working with insert and erase); one-chunk tables.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <ccf/params.hpp>

#include "filter_types.hpp"
#include "run_threads.hpp"

namespace ccf_test {
namespace {

static_assert(std::is_base_of_v<std::length_error, ccf::filter_full_error>);
__extension__ using u128 = unsigned __int128;

std::size_t scaled(std::size_t n) {
  return std::max<std::size_t>(
      2000, static_cast<std::size_t>(static_cast<double>(n) * std::min(1.0, test_scale())));
}

/// n distinct keys of type Key (std::string keys are 16 hex digits of key_of, so never short).
template <class Key>
std::vector<Key> keys_of(std::size_t n, u64 stream) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::vector<std::string> keys(n);
    char buf[17];
    for (std::size_t i = 0; i < n; ++i) {
      std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(key_of(i, stream)));
      keys[i] = buf;
    }
    return keys;
  } else {
    return make_keys(n, stream);
  }
}

/// The sequential filter with F's key, hash and layout: it loads F's files.
template <class F>
using sequential_of =
    ccf::cuckoo_filter<typename F::key_type, F::fingerprint_bits, F::slots_per_bucket,
                       typename F::hasher, typename F::alternate_type>;

template <class F>
std::span<const typename F::key_type> span_of(const std::vector<typename F::key_type>& keys) {
  return std::span<const typename F::key_type>(keys);
}

TEST(bulk_build_move, every_kind_is_movable_so_that_build_can_return_it) {
  // ccf::build returns the filter by value; the lock-free filter is documented as movable.
  static_assert(std::is_move_constructible_v<ccf::cuckoo_filter<u64>>);
  static_assert(std::is_move_constructible_v<ccf::concurrent_cuckoo_filter<u64>>);
  static_assert(!std::is_copy_constructible_v<ccf::lockfree_cuckoo_filter<u64>>);
  EXPECT_TRUE(std::is_move_constructible_v<ccf::lockfree_cuckoo_filter<std::string>>);
  const auto keys = make_keys(10000, 30);
  ccf::lockfree_cuckoo_filter<u64> f(20000, 3);
  EXPECT_EQ(f.insert_many(std::span<const u64>(keys)), keys.size());
  ccf::lockfree_cuckoo_filter<u64> g(std::move(f));
  EXPECT_EQ(g.size(), keys.size());
  EXPECT_EQ(g.contains_many(std::span<const u64>(keys)), keys.size());
  EXPECT_TRUE(g.insert(key_of(0, 31)));
  std::stringstream file;
  g.save(file);  // the snapshot lock came along
  EXPECT_EQ(ccf::lockfree_cuckoo_filter<u64>(file).size(), keys.size() + 1);
}

template <class F>
class bulk_build : public ::testing::Test {};
using built_filters =
    ::testing::Types<ccf::cuckoo_filter<u64>, ccf::cuckoo_filter<u64, 12, 4>,
                     ccf::concurrent_cuckoo_filter<u64>, ccf::lockfree_cuckoo_filter<u64>,
                     ccf::cuckoo_filter<std::string>, ccf::concurrent_cuckoo_filter<std::string>,
                     ccf::lockfree_cuckoo_filter<std::string>>;
TYPED_TEST_SUITE(bulk_build, built_filters);

/// Enough keys for several chunks (2^17 buckets at most at 4 slots), fewer for strings.
template <class F>
std::size_t many() {
  return scaled(std::is_same_v<typename F::key_type, std::string> ? 600000 : 1000000);
}

TYPED_TEST(bulk_build, every_key_is_found_with_1_2_and_4_threads) {
  using F = TypeParam;
  const auto keys = keys_of<typename F::key_type>(many<F>(), 1);
  const auto absent = keys_of<typename F::key_type>(100000, 2);
  std::vector<std::byte> first_bytes;
  std::size_t first_fp = 0;
  for (unsigned threads : {1u, 2u, 4u}) {
    SCOPED_TRACE(testing::Message() << threads << " threads");
    const ccf::build_options options{.threads = threads, .seed = 42, .max_kicks = 300};
    F f = ccf::build<F>(span_of<F>(keys), keys.size(), options);
    EXPECT_TRUE(test_scale() < 1.0 || f.chunks() >= 2) << f.info();
    EXPECT_EQ(f.size(), keys.size());
    EXPECT_EQ(f.seed(), 42u);
    EXPECT_EQ(f.max_kicks(), 300u);
    EXPECT_GE(f.capacity(), keys.size());
    // Built for keys.size() items: the table is about as full as its design load.
    EXPECT_GT(f.load_factor(), 0.88) << f.info();
    EXPECT_LT(f.load_factor(), 0.96) << f.info();
    EXPECT_EQ(f.contains_many(span_of<F>(keys)), keys.size());
    for (std::size_t i = 0; i < keys.size(); i += 97)
      ASSERT_TRUE(f.contains(keys[i])) << i;
    // A false-positive rate as the model says for this load.
    const double fp = static_cast<double>(f.contains_many(span_of<F>(absent)));
    const double want =
        ccf::expected_fpr(F::fingerprint_bits, F::slots_per_bucket, f.load_factor()) * 100000;
    EXPECT_LE(fp, 1.5 * want + 10);
    // Each chunk's keys go in in input order whatever the thread count: the same table.
    if (threads == 1) {
      first_bytes = f.to_bytes();
      first_fp = static_cast<std::size_t>(fp);
    } else {
      EXPECT_EQ(f.to_bytes(), first_bytes);
      EXPECT_EQ(static_cast<std::size_t>(fp), first_fp);
    }
  }
}

TYPED_TEST(bulk_build, build_equals_inserting_the_keys_one_at_a_time) {
  using F = TypeParam;
  // Two chunks at any CCF_TEST_SCALE, so that threads fill neighbouring chunks at once.
  const auto keys = keys_of<typename F::key_type>(scaled(500000), 3);
  F one_by_one(600000, 9);
  ASSERT_EQ(one_by_one.chunks(), 2u);
  for (const auto& k : keys)
    ASSERT_TRUE(one_by_one.insert(k));
  for (unsigned threads : {2u, 4u}) {
    const F built = ccf::build<F>(span_of<F>(keys), 600000, {.threads = threads, .seed = 9});
    EXPECT_EQ(built.size(), one_by_one.size());
    EXPECT_EQ(built.to_bytes(), one_by_one.to_bytes());
  }
}

TYPED_TEST(bulk_build, skip_present_stores_repeated_keys_once_and_counts_duplicates) {
  using F = TypeParam;
  const std::size_t distinct = scaled(200000);
  const auto unique = keys_of<typename F::key_type>(distinct, 4);
  std::vector<typename F::key_type> keys;
  for (int copy = 0; copy < 3; ++copy)
    keys.insert(keys.end(), unique.begin(), unique.end());
  std::shuffle(keys.begin(), keys.end(), std::mt19937_64(5));
  for (unsigned threads : {1u, 4u}) {
    F f(distinct, 11);
    const ccf::bulk_result r = f.bulk_insert(span_of<F>(keys), threads, true);
    EXPECT_EQ(r.refused, 0u);
    EXPECT_EQ(r.inserted + r.duplicates, keys.size());
    EXPECT_EQ(f.size(), r.inserted);
    EXPECT_LE(f.size(), distinct);
    // A distinct key is skipped only when it is a false positive at that moment.
    const double fpr = ccf::expected_fpr(F::fingerprint_bits, F::slots_per_bucket, 1.0);
    EXPECT_GE(static_cast<double>(f.size()),
              static_cast<double>(distinct) * (1 - fpr) - 5 * std::sqrt(distinct * fpr) - 5)
        << "too many distinct keys were skipped";
    EXPECT_GE(r.duplicates, 2 * distinct);
    EXPECT_EQ(f.contains_many(span_of<F>(unique)), distinct);
    // build() with skip_present: the same filter.
    const F g = ccf::build<F>(span_of<F>(keys), distinct,
                              {.threads = threads, .seed = 11, .skip_present = true});
    EXPECT_EQ(g.size(), f.size());
    EXPECT_EQ(g.to_bytes(), f.to_bytes());
  }
}

TEST(bulk_build_exact, skip_present_with_32_bit_tags_keeps_exactly_the_distinct_keys) {
  using F = ccf::cuckoo_filter<u64, 32, 4>;
  const std::size_t distinct = scaled(300000);
  const auto unique = make_keys(distinct, 6);
  std::vector<u64> keys = unique;
  keys.insert(keys.end(), unique.begin(), unique.begin() + distinct / 2);
  std::shuffle(keys.begin(), keys.end(), std::mt19937_64(7));
  F f(distinct);
  const ccf::bulk_result r = f.bulk_insert(std::span<const u64>(keys), 4, true);
  EXPECT_EQ(r.inserted, distinct);
  EXPECT_EQ(r.duplicates, distinct / 2);
  EXPECT_EQ(r.refused, 0u);
  EXPECT_EQ(f.size(), distinct);
  for (std::size_t i = 0; i < distinct; i += 101)
    ASSERT_EQ(f.count(unique[i]), 1u);
}

TYPED_TEST(bulk_build, without_skip_present_repeated_keys_are_stored_each_time) {
  using F = TypeParam;
  const auto unique = keys_of<typename F::key_type>(1000, 8);
  std::vector<typename F::key_type> keys;
  for (int copy = 0; copy < 3; ++copy)
    keys.insert(keys.end(), unique.begin(), unique.end());
  // Copies of a key share its two buckets: room for the copies, not only for distinct keys.
  const F f = ccf::build<F>(span_of<F>(keys), 2 * keys.size(), {.threads = 2});
  EXPECT_EQ(f.size(), keys.size());
  for (const auto& k : unique)
    ASSERT_GE(f.count(k), 3u);
}

TYPED_TEST(bulk_build, too_small_a_capacity_throws_filter_full_error_naming_the_counts) {
  using F = TypeParam;
  const auto keys = keys_of<typename F::key_type>(100000, 9);
  const std::size_t capacity = F(50000).capacity();
  for (unsigned threads : {1u, 2u}) {
    try {
      (void)ccf::build<F>(span_of<F>(keys), 50000, {.threads = threads});
      ADD_FAILURE() << "no filter_full_error";
    } catch (const ccf::filter_full_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(" of 100000 keys"), std::string::npos) << what;
      EXPECT_NE(what.find("filter of " + std::to_string(capacity) + " items"), std::string::npos)
          << what;
      EXPECT_NE(what.find("did not fit"), std::string::npos) << what;
    }
  }
  EXPECT_THROW((void)ccf::build<F>(span_of<F>(keys), 1000), std::length_error);
  // bulk_insert itself reports the refusals and keeps what fitted.
  F f(50000);
  const ccf::bulk_result r = f.bulk_insert(span_of<F>(keys), 2, false);
  EXPECT_GT(r.refused, 0u);
  EXPECT_EQ(r.inserted + r.refused, keys.size());
  EXPECT_EQ(f.size(), r.inserted);
  EXPECT_GE(r.inserted, capacity);
}

TYPED_TEST(bulk_build, a_built_filter_saves_and_loads_into_a_sequential_filter) {
  using F = TypeParam;
  const auto keys = keys_of<typename F::key_type>(scaled(400000), 10);
  const auto absent = keys_of<typename F::key_type>(50000, 11);
  const F f = ccf::build<F>(span_of<F>(keys), keys.size(), {.threads = 4, .seed = 5});
  std::stringstream file;
  f.save(file);
  sequential_of<F> g(file);
  EXPECT_EQ(g.size(), f.size());
  EXPECT_EQ(g.seed(), 5u);
  EXPECT_EQ(g.num_buckets(), f.num_buckets());
  EXPECT_EQ(g.chunks(), f.chunks());
  EXPECT_EQ(g.to_bytes(), f.to_bytes());
  EXPECT_EQ(g.contains_many(span_of<F>(keys)), keys.size());
  for (const auto& k : absent)
    ASSERT_EQ(g.contains(k), f.contains(k));
  // And back from bytes into the built filter's own type.
  const auto bytes = g.to_bytes();
  const F h{std::span<const std::byte>(bytes)};
  EXPECT_EQ(h.contains_many(span_of<F>(keys)), keys.size());
}

TYPED_TEST(bulk_build, a_built_filter_keeps_working_with_insert_and_erase) {
  using F = TypeParam;
  const auto keys = keys_of<typename F::key_type>(scaled(200000), 12);
  const auto more = keys_of<typename F::key_type>(keys.size() / 2, 13);
  F f = ccf::build<F>(span_of<F>(keys), keys.size() * 2, {.threads = 4});
  for (const auto& k : more)
    ASSERT_TRUE(f.insert(k));
  EXPECT_EQ(f.size(), keys.size() + more.size());
  for (std::size_t i = 0; i < keys.size(); i += 2)
    ASSERT_TRUE(f.erase(keys[i])) << i;
  EXPECT_EQ(f.size(), keys.size() / 2 + more.size());
  for (std::size_t i = 1; i < keys.size(); i += 2)
    ASSERT_TRUE(f.contains(keys[i])) << i;
  EXPECT_EQ(f.contains_many(span_of<F>(more)), more.size());
  // A second bulk_insert into the non-empty filter: the new keys only, each once.
  const ccf::bulk_result r = f.bulk_insert(span_of<F>(more), 2, true);
  EXPECT_EQ(r.duplicates, more.size());
  EXPECT_EQ(r.inserted, 0u);
  EXPECT_EQ(f.size(), keys.size() / 2 + more.size());
}

TYPED_TEST(bulk_build, a_table_of_one_chunk_is_built_with_more_threads_than_chunks) {
  using F = TypeParam;
  const auto keys = keys_of<typename F::key_type>(5000, 14);
  for (unsigned threads : {0u, 4u, 16u}) {
    const F f = ccf::build<F>(span_of<F>(keys), keys.size(), {.threads = threads});
    EXPECT_EQ(f.chunks(), 1u);
    EXPECT_EQ(f.size(), keys.size());
    EXPECT_EQ(f.contains_many(span_of<F>(keys)), keys.size());
  }
  const F empty = ccf::build<F>(span_of<F>(std::vector<typename F::key_type>{}), 100, {});
  EXPECT_EQ(empty.size(), 0u);
}

TYPED_TEST(bulk_build, a_built_concurrent_filter_is_used_by_several_threads_afterwards) {
  using F = TypeParam;
  const auto keys = keys_of<typename F::key_type>(scaled(100000), 15);
  F f = ccf::build<F>(span_of<F>(keys), keys.size() * 2, {.threads = 2});
  if constexpr (std::is_same_v<F, sequential_of<F>>) {
    GTEST_SUCCEED() << "the sequential filter is single-threaded";
  } else {
    const auto more = keys_of<typename F::key_type>(keys.size(), 16);
    std::atomic<std::size_t> failures{0};
    run_threads(2, [&](int t) {
      for (std::size_t i = static_cast<std::size_t>(t); i < more.size(); i += 2) {
        if (!f.insert(more[i])) failures.fetch_add(1);
        if (!f.contains(keys[i])) failures.fetch_add(1);
      }
    });
    EXPECT_EQ(failures.load(), 0u);
    EXPECT_EQ(f.size(), keys.size() + more.size());
    EXPECT_EQ(f.contains_many(span_of<F>(more)), more.size());
  }
}

/// The inverse of ccf::mix64, so that a test can choose the hashes of its integer keys.
u64 unmix64(u64 x) {
  auto unshift = [](u64 y, unsigned s) {
    for (unsigned k = s; k < 64; k += s)
      y ^= y >> k;  // after the loop y ^= y >> s has been undone
    return y;
  };
  auto inverse = [](u64 a) {
    u64 v = a;  // Newton's iteration for the inverse of an odd number mod 2^64
    for (int i = 0; i < 6; ++i)
      v *= 2 - a * v;
    return v;
  };
  x = unshift(x, 31);
  x *= inverse(0x94d049bb133111ebULL);
  x = unshift(x, 27);
  x *= inverse(0xbf58476d1ce4e5b9ULL);
  return unshift(x, 30);
}

/// Keys whose first bucket is the last bucket of a chunk or the first of the next one, for
/// every chunk boundary of f: threads that fill neighbouring chunks touch both sides at once.
template <class F>
std::vector<u64> chunk_boundary_keys(const F& f, std::size_t per_bucket) {
  const std::size_t n = f.num_buckets(), c = n / f.chunks();
  std::vector<u64> keys;
  for (std::size_t b = c; b < n; b += c) {
    for (const std::size_t target : {b - 1, b}) {
      const u128 lo = ((static_cast<u128>(target) << 64) + n - 1) / n;  // first h with i1 = target
      for (std::size_t j = 0; j < per_bucket; ++j) {
        // Tags come from the low 32 bits: vary them; stay far inside the 2^64 / n wide range.
        const u64 h = static_cast<u64>(lo) + ((j + 1) << 32) + (ccf::mix64(j) & 0xffffffff);
        EXPECT_EQ(f.locate_hash(h).i1, target);
        keys.push_back(unmix64(h) ^ ccf::key_seed(f.seed()));
      }
    }
  }
  return keys;
}

TEST(bulk_build_boundaries, chunks_filled_side_by_side_share_no_word) {
  // Under ThreadSanitizer this shows whether a thread filling chunk c reads or writes a word of
  // chunk c + 1 (12-bit x 4 buckets straddle words; chunks must not). Few keys per chunk, so no
  // chunk is swept into the caches first (warm_chunk), and enough for two threads.
  ASSERT_EQ(ccf::mix64(unmix64(12345)), 12345u);
  auto check = [](auto tag) {
    using F = decltype(tag);
    F probe(3000000, 21);
    ASSERT_GE(probe.chunks(), 6u);
    const auto keys = chunk_boundary_keys(probe, 4500 / (2 * (probe.chunks() - 1)) + 1);
    ASSERT_GT(keys.size(), 4096u);
    for (unsigned threads : {2u, 4u}) {
      F f(3000000, 21);
      const ccf::bulk_result r = f.bulk_insert(std::span<const u64>(keys), threads, false);
      EXPECT_EQ(r.inserted, keys.size());
      EXPECT_EQ(f.contains_many(std::span<const u64>(keys)), keys.size());
    }
  };
  check(ccf::cuckoo_filter<u64, 12, 4>(1));
  check(ccf::cuckoo_filter<u64, 16, 4>(1));
}

TEST(bulk_build_global, a_global_alternate_filter_with_a_standard_allocator_builds_in_one_chunk) {
  using F = ccf::cuckoo_filter<u64, 16, 4, ccf::hash<u64>, ccf::global_alternate,
                               std::allocator<std::uint64_t>>;
  const auto keys = make_keys(scaled(600000), 17);
  const F f = ccf::build<F>(std::span<const u64>(keys), keys.size(), {.threads = 4},
                            std::allocator<std::uint64_t>());
  EXPECT_EQ(f.chunks(), 1u);
  EXPECT_EQ(f.size(), keys.size());
  EXPECT_EQ(f.contains_many(std::span<const u64>(keys)), keys.size());
}

}  // namespace
}  // namespace ccf_test
