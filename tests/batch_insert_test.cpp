// Batched inserts and the by-hash entry points: every form by hash agrees with the key form, and
// large batches that take the grouped (chunk by chunk) path insert exactly a prefix of the batch,
// stopping where inserting the keys one at a time would.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

#include <ccf/detail/batch_ops.hpp>
#include <ccf/detail/indexer.hpp>

#include "filter_types.hpp"
#include "run_threads.hpp"

namespace ccf_test {
namespace {

using ccf::detail::position;

template <class F>
class by_hash : public ::testing::Test {};
TYPED_TEST_SUITE(by_hash, all_filters);

// ---- a. the by-hash entry points ----

template <class F>
std::vector<std::uint64_t> hashes_of(const F& f, const std::vector<u64>& keys) {
  std::vector<std::uint64_t> h;
  for (u64 k : keys)
    h.push_back(f.hash_of(k));
  return h;
}

TYPED_TEST(by_hash, entry_points_agree_with_the_key_forms) {
  using F = TypeParam;
  F f(20000, 77);
  const auto keys = make_keys(10000, 5);
  const auto absent = make_keys(20000, 6);
  for (u64 k : keys) {
    ASSERT_EQ(f.hash_of(k), ccf::hash<u64>{}(k, ccf::key_seed(77)));
    ASSERT_EQ(f.hash_of(k), ccf::mix64(k ^ ccf::mix64(77)));
    const position a = f.locate(k), b = f.locate_hash(f.hash_of(k));
    ASSERT_TRUE(a.i1 == b.i1 && a.i2 == b.i2 && a.tag == b.tag);
  }
  for (std::size_t i = 0; i < keys.size(); ++i)
    ASSERT_TRUE(i % 2 ? f.insert(keys[i]) : f.insert_hash(f.hash_of(keys[i])));
  for (u64 k : keys) {
    ASSERT_TRUE(f.contains(k));
    ASSERT_TRUE(f.contains_hash(f.hash_of(k)));
    ASSERT_EQ(f.count_hash(f.hash_of(k)), f.count(k));
  }
  for (u64 k : absent)
    ASSERT_EQ(f.contains(k), f.contains_hash(f.hash_of(k)));
  // Batches: by key and by hash give identical tables and answers.
  F g(20000, 77), h(20000, 77);
  const auto hashes = hashes_of(g, keys);
  EXPECT_EQ(g.insert_many(std::span<const u64>(keys)), keys.size());
  EXPECT_EQ(h.insert_many_hashes(std::span<const std::uint64_t>(hashes)), keys.size());
  EXPECT_EQ(g.size(), h.size());
  EXPECT_EQ(g.to_bytes(), h.to_bytes());
  std::vector<u64> mixed(absent.begin(), absent.begin() + 5000);
  mixed.insert(mixed.end(), keys.begin(), keys.begin() + 5000);
  const auto mixed_hashes = hashes_of(g, mixed);
  auto found1 = std::make_unique<bool[]>(mixed.size());
  auto found2 = std::make_unique<bool[]>(mixed.size());
  const std::size_t hits1 =
      g.contains_many(std::span<const u64>(mixed), std::span<bool>(found1.get(), mixed.size()));
  const std::size_t hits2 = g.contains_many_hashes(std::span<const std::uint64_t>(mixed_hashes),
                                                   std::span<bool>(found2.get(), mixed.size()));
  EXPECT_EQ(hits1, hits2);
  EXPECT_EQ(g.contains_many(std::span<const u64>(mixed)), hits1);
  std::size_t hits = 0;
  for (std::size_t i = 0; i < mixed.size(); ++i) {
    ASSERT_EQ(found1[i], g.contains(mixed[i])) << i;
    ASSERT_EQ(found2[i], found1[i]) << i;
    hits += found1[i] ? 1 : 0;
  }
  EXPECT_EQ(hits, hits1);
  EXPECT_GE(hits, 5000u);
  EXPECT_THROW(g.contains_many(std::span<const u64>(mixed), std::span<bool>(found1.get(), 10)),
               std::invalid_argument);
  for (u64 k : keys)
    ASSERT_TRUE(g.erase_hash(g.hash_of(k)));
  EXPECT_EQ(g.size(), 0u);
}

// ---- b. grouped batch inserts ----

template <class F>
class grouped_insert : public ::testing::Test {};
using grouped_filters =
    ::testing::Types<ccf::cuckoo_filter<u64>, ccf::concurrent_cuckoo_filter<u64>,
                     ccf::lockfree_cuckoo_filter<u64>>;
TYPED_TEST_SUITE(grouped_insert, grouped_filters);

/// A filter of several chunks filled one key at a time to `load`; returns the keys stored.
template <class F>
std::vector<u64> prefill(F& f, double load) {
  const auto n = static_cast<std::size_t>(static_cast<double>(f.size_in_tags()) * load);
  std::vector<u64> keys = make_keys(n, 11);
  for (u64 k : keys)
    EXPECT_TRUE(f.insert(k));
  return keys;
}

TYPED_TEST(grouped_insert, a_batch_that_does_not_fit_inserts_exactly_a_prefix) {
  TypeParam f(600000, 5);
  ASSERT_GE(f.chunks(), 2u);
  const auto before_keys = prefill(f, 0.75);
  const std::size_t before = f.size();
  ASSERT_GE(f.load_factor(), ccf::detail::grouped_min_load);
  // A quarter of the table more: cannot fit, and large enough for the grouped path.
  const auto batch = make_keys(f.size_in_tags() / 4, 12);
  ASSERT_GE(batch.size(), ccf::detail::grouped_min_per_chunk * f.chunks());
  const std::size_t r = f.insert_many(std::span<const u64>(batch));
  ASSERT_LT(r, batch.size());
  EXPECT_EQ(f.size(), before + r);
  EXPECT_GE(f.load_factor(), 0.93) << "the batch stopped early: " << f.info();
  for (std::size_t i = 0; i < r; ++i)
    ASSERT_TRUE(f.contains(batch[i])) << "keys[" << i << "] of the inserted prefix is missing";
  // keys[r]'s chunk is as it was when keys[r] was refused: it is refused again.
  EXPECT_FALSE(f.insert(batch[r]));
  EXPECT_EQ(f.size(), before + r);
  // Nothing past the prefix stayed behind: erasing the prefix and the prefill empties the table.
  for (std::size_t i = 0; i < r; ++i)
    ASSERT_TRUE(f.erase(batch[i])) << i;
  for (u64 k : before_keys)
    ASSERT_TRUE(f.erase(k));
  EXPECT_EQ(f.size(), 0u);
  EXPECT_EQ(f.contains_many(std::span<const u64>(batch)), 0u);
}

TYPED_TEST(grouped_insert, a_batch_of_hashes_that_fits_is_inserted_entirely) {
  TypeParam f(600000, 6);
  const auto before_keys = prefill(f, 0.72);
  const std::size_t before = f.size();
  const auto batch = make_keys(f.size_in_tags() * 15 / 100, 13);
  const auto hashes = hashes_of(f, batch);
  EXPECT_EQ(f.insert_many_hashes(std::span<const std::uint64_t>(hashes)), batch.size());
  EXPECT_EQ(f.size(), before + batch.size());
  EXPECT_EQ(f.contains_many(std::span<const u64>(batch)), batch.size());
  EXPECT_EQ(f.contains_many(std::span<const u64>(before_keys)), before_keys.size());
}

TYPED_TEST(grouped_insert, a_second_batch_after_a_refusal_keeps_the_prefix_rule) {
  TypeParam f(600000, 7);
  prefill(f, 0.75);
  const auto first = make_keys(f.size_in_tags() / 4, 14);
  const std::size_t r1 = f.insert_many(std::span<const u64>(first));
  ASSERT_LT(r1, first.size());
  const std::size_t before = f.size();
  // Almost full now: a second large batch inserts a (short) prefix, possibly empty.
  const auto second = make_keys(20000, 15);
  const std::size_t r2 = f.insert_many(std::span<const u64>(second));
  EXPECT_EQ(f.size(), before + r2);
  for (std::size_t i = 0; i < r2; ++i)
    ASSERT_TRUE(f.contains(second[i]));
  if (r2 < second.size()) {
    EXPECT_FALSE(f.insert(second[r2]));
  }
}

TYPED_TEST(grouped_insert, many_copies_of_one_key_stop_the_batch_where_one_at_a_time_would) {
  // Thousands of copies of one key overflow its chunk's region of the one-pass sort (the
  // counting sort takes over), and at most 2 x slots copies fit, so a copy is refused: the
  // batch must stop exactly where inserting its keys one at a time into the same filter stops.
  TypeParam f(600000, 8), g(600000, 8);
  const auto before_keys = prefill(f, 0.72);
  prefill(g, 0.72);
  ASSERT_GE(f.load_factor(), ccf::detail::grouped_min_load);
  std::vector<u64> batch = make_keys(f.size_in_tags() / 10, 16);
  ASSERT_GE(batch.size(), ccf::detail::grouped_min_per_chunk * f.chunks());
  const u64 copied = batch[batch.size() / 3];
  for (std::size_t i = batch.size() / 2; i < batch.size() / 2 + 10000; ++i)
    batch[i] = copied;
  std::size_t want = 0;
  while (want < batch.size() && g.insert(batch[want]))
    ++want;
  ASSERT_LT(want, batch.size()) << "one at a time, a copy should have been refused";
  ASSERT_GE(want, batch.size() / 2) << "refused before the copies: the test proves nothing";
  const std::size_t before = f.size();
  EXPECT_EQ(f.insert_many(std::span<const u64>(batch)), want);
  EXPECT_EQ(f.size(), before + want);
  EXPECT_EQ(f.count(copied), g.count(copied));
  // Exactly the prefix went in: erasing it and the prefill empties the table.
  for (std::size_t i = 0; i < want; ++i)
    ASSERT_TRUE(f.erase(batch[i])) << i;
  for (u64 k : before_keys)
    ASSERT_TRUE(f.erase(k));
  EXPECT_EQ(f.size(), 0u);
}

TEST(grouped_insert_blocks, a_batch_goes_in_up_to_four_equal_blocks_until_they_reach_the_largest) {
  using ccf::detail::grouped_block;
  using ccf::detail::grouped_min_block;
  using ccf::detail::insert_block_size;
  constexpr std::size_t M = std::size_t{1} << 20;
  static_assert(grouped_min_block == 4 * M && grouped_block == 16 * M, "the figures below");
  // Up to the smallest block: one block of the whole batch.
  EXPECT_EQ(insert_block_size(1), 1u);
  EXPECT_EQ(insert_block_size(grouped_min_block), grouped_min_block);
  // Up to four smallest blocks: as many equal blocks as blocks of the smallest size need.
  EXPECT_EQ(insert_block_size(grouped_min_block + 1), grouped_min_block / 2 + 1);
  EXPECT_EQ(insert_block_size(6 * M), 3 * M);
  EXPECT_EQ(insert_block_size(16 * M), 4 * M);
  // Then four blocks, up to four of the largest size.
  EXPECT_EQ(insert_block_size(20 * M), 5 * M);
  EXPECT_EQ(insert_block_size(64 * M), 16 * M);
  // Then blocks of at most the largest size, equal: one item more than four largest blocks goes
  // in five, and 252 M items in sixteen.
  EXPECT_EQ(insert_block_size(64 * M + 1), (64 * M + 5) / 5);
  EXPECT_EQ(insert_block_size(252 * M), 252 * M / 16);
  for (const std::size_t n : {std::size_t{1}, 3 * M, 5 * M + 7, 17 * M + 3, 65 * M, 1000 * M + 1}) {
    const std::size_t b = insert_block_size(n);
    const std::size_t blocks = (n + b - 1) / b;
    EXPECT_LE(b, grouped_block) << n;
    EXPECT_GT(2 * b, std::min(n, grouped_min_block)) << n;
    EXPECT_LT(blocks * b - n, blocks)
        << n << ": the last block is short by more than one per block";
    if (n > 4 * grouped_min_block && n <= 4 * grouped_block) {
      EXPECT_EQ(blocks, 4u) << n;
    }
  }
}

TYPED_TEST(grouped_insert, a_batch_from_just_over_half_load_to_nearly_full_goes_in_entirely) {
  // Grouped from its first key (the table is just past grouped_min_load) to 92 % load: every
  // path search of the batch runs chunk by chunk, and no key is lost or refused.
  TypeParam f(600000, 10);
  ASSERT_GE(f.chunks(), 2u);
  const auto before_keys = prefill(f, 0.52);
  ASSERT_GE(f.load_factor(), ccf::detail::grouped_min_load);
  const std::size_t before = f.size();
  const auto batch = make_keys(f.size_in_tags() * 40 / 100, 19);
  ASSERT_GE(batch.size(), ccf::detail::grouped_min_per_chunk * f.chunks());
  EXPECT_EQ(f.insert_many(std::span<const u64>(batch)), batch.size()) << f.info();
  EXPECT_EQ(f.size(), before + batch.size());
  EXPECT_GE(f.load_factor(), 0.9);
  EXPECT_EQ(f.contains_many(std::span<const u64>(batch)), batch.size());
  EXPECT_EQ(f.contains_many(std::span<const u64>(before_keys)), before_keys.size());
}

TEST(grouped_insert_blocks, a_batch_of_two_blocks_that_does_not_fit_inserts_exactly_a_prefix) {
  // One key more than the smallest block: the batch goes in two grouped blocks (of equal size,
  // though the result does not show how it was cut), the first fits and the refusal comes in the
  // second. The prefix rule holds across the block boundary.
  ccf::cuckoo_filter<u64> f(11000000, 9);
  ASSERT_GE(f.chunks(), 2u);
  const auto before_keys = make_keys(static_cast<std::size_t>(f.size_in_tags() * 0.72), 17);
  ASSERT_EQ(f.insert_many(std::span<const u64>(before_keys)), before_keys.size());
  ASSERT_GE(f.load_factor(), ccf::detail::grouped_min_load);
  const std::size_t before = f.size();
  const auto batch = make_keys(ccf::detail::grouped_min_block + 1, 18);
  ASSERT_GE(batch.size() / 2, ccf::detail::grouped_min_per_chunk * f.chunks());
  ASSERT_GT(before + batch.size(), f.size_in_tags());
  const std::size_t r = f.insert_many(std::span<const u64>(batch));
  ASSERT_GT(r, batch.size() / 2) << "the first block should fit";
  ASSERT_LT(r, batch.size());
  EXPECT_EQ(f.size(), before + r);
  EXPECT_EQ(f.contains_many(std::span<const u64>(batch.data(), r)), r);
  EXPECT_FALSE(f.insert(batch[r]));
  for (std::size_t i = 0; i < r; ++i)
    ASSERT_TRUE(f.erase(batch[i])) << i;
  for (u64 k : before_keys)
    ASSERT_TRUE(f.erase(k));
  EXPECT_EQ(f.size(), 0u);
}

TEST(grouped_insert_blocks, concurrent_batches_into_a_full_table_fill_it) {
  // Two threads fill a concurrent filter past full with large batches (grouped, from 50 % load).
  // A grouped batch places items past its own refusal before it erases them again; another
  // batch that meets them finds its chunk full. Both stopped there, near 87 % load: a refused
  // batch goes on one item at a time, so that the batch that is refused last meets the table
  // as it is.
  for (u64 round = 0; round < 4; ++round) {
    ccf::concurrent_cuckoo_filter<u64> f(1500000, round + 1);
    ASSERT_GE(f.chunks(), 2u);
    const auto before = make_keys(f.size_in_tags() / 2, 40 + round);
    ASSERT_EQ(f.insert_many(std::span<const u64>(before)), before.size());
    const std::size_t per_thread = f.size_in_tags() / 2, slice = per_thread / 4;
    std::vector<u64> keys[2] = {make_keys(per_thread, 50 + round),
                                make_keys(per_thread, 60 + round)};
    std::size_t went_in[2] = {0, 0};
    ccf_test::run_threads(2, [&](int t) {
      for (std::size_t s = 0; s < per_thread; s += slice) {
        const std::span<const u64> part(keys[t].data() + s, std::min(slice, per_thread - s));
        const std::size_t r = f.insert_many(part);
        went_in[t] += r;
        if (r < part.size()) break;
      }
    });
    EXPECT_EQ(f.size(), before.size() + went_in[0] + went_in[1]);
    EXPECT_GE(f.load_factor(), 0.93)
        << "round " << round << ": " << went_in[0] << " + " << went_in[1] << " items went in";
    for (int t = 0; t < 2; ++t) {
      EXPECT_EQ(f.contains_many(std::span<const u64>(keys[t].data(), went_in[t])), went_in[t]);
    }
  }
}

}  // namespace
}  // namespace ccf_test
