// The cuckoo engine and its indexer: the alternate function (an involution inside a chunk), the
// loads chunked tables reach, false-positive rates of chunked and global tables, the payload slot
// layout (payloads, tombstones, in-place replacement, relocations), erasing duplicates, the
// refusal of over-wide tags by write_tag, the lock_policy concept and custom allocators (the
// by-hash entry points and batched inserts: batch_insert_test.cpp).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

#include <ccf/detail/cuckoo_engine.hpp>
#include <ccf/detail/indexer.hpp>
#include <ccf/detail/lock_policy.hpp>
#include <ccf/detail/payload_slot_layout.hpp>
#include <ccf/params.hpp>

#include "filter_types.hpp"
#include "run_threads.hpp"

namespace ccf_test {
namespace {

using ccf::detail::cuckoo_indexer;
using ccf::detail::position;
using u128 = ccf::detail::uint128;

/// How many times a loop over seeds runs: all of them unless CCF_TEST_SCALE asks for less.
std::size_t scaled_count(std::size_t n) {
  const double s = std::min(1.0, test_scale());
  return std::max<std::size_t>(1, static_cast<std::size_t>(static_cast<double>(n) * s));
}

// ---- a. the indexer ----

template <unsigned Bits>
void check_indexer(const cuckoo_indexer<Bits>& ix, std::uint64_t seed) {
  constexpr std::uint64_t max_tag = (std::uint64_t{1} << Bits) - 1;
  const std::size_t n = ix.num_buckets();
  ASSERT_EQ(n, ix.chunks() * ix.chunk_size());
  if (ix.chunks() > 1) {
    ASSERT_EQ(ix.chunk_size() % 64, 0u);
  }
  std::mt19937_64 rng(seed);
  std::uint64_t tag_or = 0;
  for (int k = 0; k < 20000; ++k) {
    const std::uint64_t h = rng();
    const position p = ix.locate(h);
    ASSERT_EQ(p.i1, static_cast<std::size_t>((static_cast<u128>(h) * n) >> 64)) << "h=" << h;
    ASSERT_LT(p.i2, n);
    ASSERT_GE(p.tag, 1u);
    ASSERT_LE(p.tag, max_tag);
    ASSERT_EQ(p.tag, ix.tag_of(h));
    ASSERT_EQ(p.i2, ix.alt(p.i1, p.tag));
    ASSERT_EQ(p.i1, ix.alt(p.i2, p.tag));
    ASSERT_EQ(ix.chunk_base(p.i1), ix.chunk_base(p.i2));
    ASSERT_EQ(ix.chunk_of_hash(h), p.i1 / ix.chunk_size());
    tag_or |= p.tag;
    // A random bucket and tag: alt is an involution that stays in the bucket's chunk.
    const std::size_t i = static_cast<std::size_t>(rng() % n);
    const auto t = static_cast<std::uint32_t>(1 + rng() % max_tag);
    const std::size_t j = ix.alt(i, t);
    ASSERT_LT(j, n);
    ASSERT_EQ(ix.alt(j, t), i) << "i=" << i << " tag=" << t;
    ASSERT_EQ(ix.chunk_base(j), ix.chunk_base(i));
    ASSERT_EQ(ix.alt_in(ix.chunk_base(i), i, t), j);
    ASSERT_EQ(ix.chunk_base(i) % ix.chunk_size(), 0u);
  }
  // The top tag bit is reached (tags use every bit of the width).
  EXPECT_NE(tag_or >> (Bits - 1), 0u);
}

template <unsigned Bits>
void check_plans() {
  const std::pair<std::size_t, std::size_t> plans[] = {
      {1, 1000},        {7, 7},           {1000, 1000},     {1001, 1000},           {100003, 4096},
      {262145, 131072}, {655360, 131072}, {1000003, 65536}, {5000, ~std::size_t{0}}};
  std::uint64_t seed = 1;
  for (const auto& [min_buckets, max_chunk] : plans) {
    SCOPED_TRACE(testing::Message() << "plan(" << min_buckets << ", " << max_chunk << ")");
    const auto ix = cuckoo_indexer<Bits>::plan(min_buckets, max_chunk);
    ASSERT_GE(ix.num_buckets(), min_buckets);
    if (min_buckets <= max_chunk) {
      EXPECT_EQ(ix.chunks(), 1u);
      EXPECT_EQ(ix.num_buckets(), min_buckets);
    } else {
      EXPECT_EQ(ix.chunks(), (min_buckets + max_chunk - 1) / max_chunk);
      EXPECT_EQ(ix.chunk_size() % 64, 0u);
      EXPECT_LT(ix.num_buckets(), min_buckets + 64 * ix.chunks());
      if (max_chunk % 64 == 0) {
        EXPECT_LE(ix.chunk_size(), max_chunk);
      }
    }
    check_indexer(ix, seed++);
  }
}

TEST(indexer, alt_is_an_involution_inside_the_chunk_for_every_width) {
  check_plans<4>();
  check_plans<8>();
  check_plans<12>();
  check_plans<16>();
  check_plans<32>();
}

TEST(indexer, tags_at_the_extremes_and_chunks_as_documented) {
  const auto ix = cuckoo_indexer<8>::plan(1000, 1000);
  EXPECT_EQ(ix.tag_of(0), 1u);
  EXPECT_EQ(ix.tag_of(0xffffffff), 255u);
  const auto wide = cuckoo_indexer<32>::plan(1000, 1000);
  EXPECT_EQ(wide.tag_of(0xffffffff), 0xffffffffu);
  EXPECT_EQ(wide.locate(~std::uint64_t{0}).i1, 999u);
  static_assert(ccf::chunked_alternate::max_chunk_buckets(2) == (std::size_t{1} << 18));
  static_assert(ccf::chunked_alternate::max_chunk_buckets(4) == (std::size_t{1} << 17));
  static_assert(ccf::chunked_alternate::max_chunk_buckets(8) == (std::size_t{1} << 16));
  ccf::cuckoo_filter<u64, 16, 4> chunked(600000);
  EXPECT_EQ(chunked.chunks(), 2u);
  EXPECT_GT(chunked.num_buckets(), std::size_t{1} << 17);
  EXPECT_EQ(chunked.num_buckets() % (64 * chunked.chunks()), 0u);
  ccf::cuckoo_filter<u64, 16, 4, ccf::hash<u64>, ccf::global_alternate> global(600000);
  EXPECT_EQ(global.chunks(), 1u);
  // Both buckets of every key lie in one chunk.
  const std::size_t chunk = chunked.num_buckets() / chunked.chunks();
  for (u64 i = 0; i < 10000; ++i) {
    const position p = chunked.locate(key_of(i));
    ASSERT_EQ(p.i1 / chunk, p.i2 / chunk);
    ASSERT_EQ(chunked.alt_index(p.i1, p.tag), p.i2);
  }
}

// ---- b. loads reached ----

/// Inserts keys until 95 % of the table's slots are used; every insert must succeed.
template <class F>
void fill_to_95_percent(std::size_t capacity, std::uint64_t seed, std::size_t min_chunks) {
  F f(capacity, seed);
  ASSERT_GE(f.chunks(), min_chunks);
  const std::size_t target = f.size_in_tags() * 95 / 100;
  for (std::size_t i = 0; i < target; ++i)
    ASSERT_TRUE(f.insert(key_of(i, seed))) << "seed " << seed << ": refused at item " << i << " of "
                                           << target << " (" << f.info() << ")";
  ASSERT_EQ(f.size(), target);
  ASSERT_GT(f.relocations(), 0u);
}

TEST(load, ninety_five_percent_at_4_slots_with_no_refused_insert_over_100_seeds) {
  // 600000 items: two chunks of about 80,000 buckets (chunked_alternate caps them at 2^17).
  const std::size_t seeds = scaled_count(100);
  for (std::uint64_t seed = 1; seed <= seeds; ++seed)
    ASSERT_NO_FATAL_FAILURE((fill_to_95_percent<ccf::cuckoo_filter<u64, 16, 4>>(600000, seed, 2)));
}

TEST(load, ninety_five_percent_with_five_full_size_chunks) {
  const std::size_t seeds = scaled_count(10);
  for (std::uint64_t seed = 1; seed <= seeds; ++seed)
    ASSERT_NO_FATAL_FAILURE(
        (fill_to_95_percent<ccf::cuckoo_filter<u64, 16, 4>>(2400000, 500 + seed, 5)));
}

TEST(load, ninety_five_percent_with_8_and_12_bit_tags_and_the_global_alternate) {
  const std::size_t seeds = scaled_count(10);
  for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
    ASSERT_NO_FATAL_FAILURE((fill_to_95_percent<ccf::cuckoo_filter<u64, 8, 4>>(600000, seed, 2)));
    ASSERT_NO_FATAL_FAILURE(
        (fill_to_95_percent<ccf::cuckoo_filter<u64, 12, 4>>(600000, 100 + seed, 2)));
    ASSERT_NO_FATAL_FAILURE(
        (fill_to_95_percent<ccf::cuckoo_filter<u64, 16, 4, ccf::hash<u64>, ccf::global_alternate>>(
            600000, 200 + seed, 1)));
  }
}

// ---- c. false-positive rates ----

/// Fills f to 95 % and returns the number of false positives among `absent` keys never inserted.
template <class F>
std::size_t false_positives_at_95_percent(F& f, std::size_t absent) {
  const std::size_t target = f.size_in_tags() * 95 / 100;
  for (std::size_t i = 0; i < target; ++i) {
    if (!f.insert(key_of(i, 1))) {
      ADD_FAILURE() << "refused at " << i;
      return 0;
    }
  }
  std::size_t hits = 0;
  std::vector<u64> batch(1 << 16);
  for (std::size_t done = 0; done < absent; done += batch.size()) {
    for (std::size_t k = 0; k < batch.size(); ++k)
      batch[k] = key_of(done + k, 2);
    hits += f.contains_many(std::span<const u64>(batch));
  }
  return hits;
}

template <unsigned Bits>
void check_fpr(std::size_t absent) {
  absent = std::max<std::size_t>(absent / 65536, 1) * 65536;
  ccf::cuckoo_filter<u64, Bits, 4> chunked(600000, 3);
  ccf::cuckoo_filter<u64, Bits, 4, ccf::hash<u64>, ccf::global_alternate> global(600000, 3);
  ASSERT_EQ(chunked.chunks(), 2u);
  const auto fp_chunked = static_cast<double>(false_positives_at_95_percent(chunked, absent));
  const auto fp_global = static_cast<double>(false_positives_at_95_percent(global, absent));
  for (const auto& [fp, load] :
       {std::pair{fp_chunked, chunked.load_factor()}, std::pair{fp_global, global.load_factor()}}) {
    const double want = ccf::expected_fpr(Bits, 4, load) * static_cast<double>(absent);
    // Five standard deviations of a binomial count, plus a little for the model.
    EXPECT_NEAR(fp, want, 5 * std::sqrt(want) + 0.02 * want)
        << Bits << "-bit tags at load " << load << " over " << absent << " absent keys";
  }
  EXPECT_NEAR(fp_chunked, fp_global, 5 * std::sqrt(fp_chunked + fp_global) + 5)
      << "chunked and global tables should have the same false-positive rate";
}

TEST(false_positive_rate, chunked_and_global_16_bit_match_the_model_at_95_percent) {
  check_fpr<16>(static_cast<std::size_t>(4000000 * std::min(1.0, test_scale())));
}

TEST(false_positive_rate, chunked_and_global_8_bit_match_the_model_at_95_percent) {
  check_fpr<8>(static_cast<std::size_t>(1000000 * std::min(1.0, test_scale())));
}

// ---- d. the payload slot layout ----

template <class Lock>
using payload_engine = ccf::detail::cuckoo_engine<ccf::detail::payload_slot_layout<24, 4>,
                                                  ccf::detail::lock_protocol<Lock>>;
using payload_layout = ccf::detail::payload_slot_layout<24, 4>;

template <class Lock>
class payload_engine_test : public ::testing::Test {};
using lock_kinds = ::testing::Types<ccf::detail::null_locking, ccf::striped_locking>;
TYPED_TEST_SUITE(payload_engine_test, lock_kinds);

constexpr std::size_t big_chunk = ccf::chunked_alternate::max_chunk_buckets(4);

template <class E>
position position_of(const E& e, u64 k) {
  return e.indexer().locate(key_of(k, 7));
}
/// A position whose two buckets differ.
template <class E>
position two_bucket_position(const E& e, u64 from) {
  for (u64 k = from;; ++k) {
    const position p = position_of(e, k);
    if (p.i1 != p.i2) return p;
  }
}
template <class E>
std::multiset<std::uint64_t> payloads_at(const E& e, const position& p) {
  std::multiset<std::uint64_t> out;
  const std::size_t n = e.for_each_match(p, [&](std::uint64_t v) {
    EXPECT_EQ(payload_layout::tag_of(v), p.tag);
    EXPECT_EQ(payload_layout::status_of(v), payload_layout::occupied);
    out.insert(payload_layout::payload_of(v));
  });
  EXPECT_EQ(n, out.size());
  return out;
}
/// Every (bucket, slot) of p's two buckets whose raw value is v.
template <class E>
std::vector<std::pair<std::size_t, unsigned>> slots_holding(const E& e, const position& p,
                                                            std::uint64_t v) {
  std::vector<std::pair<std::size_t, unsigned>> at;
  for (std::size_t i : {p.i1, p.i2}) {
    if (i == p.i2 && p.i2 == p.i1 && !at.empty()) break;
    const auto b = e.table().load(i);
    for (unsigned j = 0; j < payload_layout::slots; ++j)
      if (payload_layout::get(b, j) == v) at.emplace_back(i, j);
  }
  return at;
}

// The slot encoding: tag, status and payload fields of one 64-bit word.
constexpr auto sample_slot = payload_layout::make(0xabcdef, 123456789);
static_assert(payload_layout::tag_of(sample_slot) == 0xabcdef);
static_assert(payload_layout::payload_of(sample_slot) == 123456789);
static_assert(payload_layout::status_of(sample_slot) == payload_layout::occupied);
static_assert(payload_layout::payload_bits == 38);
constexpr auto top_slot = payload_layout::make(1, payload_layout::max_payload);
static_assert(payload_layout::payload_of(top_slot) == payload_layout::max_payload);
static_assert(payload_layout::tag_of(top_slot) == 1);

TYPED_TEST(payload_engine_test, for_each_match_walks_every_slot_with_the_tag) {
  payload_engine<TypeParam> e(10000, big_chunk, 500);
  const position p = two_bucket_position(e, 0);
  std::multiset<std::uint64_t> want;
  for (std::uint64_t k = 0; k < 6; ++k) {
    ASSERT_TRUE(e.insert(p, payload_layout::make(p.tag, 1000 + k)));
    want.insert(1000 + k);
  }
  EXPECT_EQ(payloads_at(e, p), want);
  EXPECT_EQ(e.count(p), 6u);
  // The same buckets with another tag match nothing; the same tag from i2's side matches all.
  const std::uint32_t other = p.tag == 1 ? 2 : p.tag - 1;
  EXPECT_EQ(e.for_each_match(position{p.i1, p.i2, other}, [](std::uint64_t) {}), 0u);
  EXPECT_EQ(payloads_at(e, position{p.i2, p.i1, p.tag}), want);
  // Fill both buckets; a ninth item of this tag has nowhere to go and changes nothing.
  ASSERT_TRUE(e.insert(p, payload_layout::make(p.tag, 1006)));
  ASSERT_TRUE(e.insert(p, payload_layout::make(p.tag, 1007)));
  const std::size_t hops = e.relocations();
  EXPECT_FALSE(e.insert(p, payload_layout::make(p.tag, 1008)));
  EXPECT_EQ(e.size(), 8u);
  EXPECT_EQ(e.relocations(), hops);
  EXPECT_EQ(payloads_at(e, p).size(), 8u);
}

TYPED_TEST(payload_engine_test, replace_slot_changes_the_payload_in_place) {
  payload_engine<TypeParam> e(1000, big_chunk, 500);
  const position p = two_bucket_position(e, 0);
  const auto a = payload_layout::make(p.tag, 7);
  const auto b = payload_layout::make(p.tag, 8);
  ASSERT_TRUE(e.insert(p, payload_layout::make(p.tag, 6)));
  ASSERT_TRUE(e.insert(p, a));
  const auto where = slots_holding(e, p, a);
  ASSERT_EQ(where.size(), 1u);
  ASSERT_TRUE(e.replace_slot(p, a, b));
  EXPECT_EQ(slots_holding(e, p, b), where);
  EXPECT_TRUE(slots_holding(e, p, a).empty());
  EXPECT_EQ(payloads_at(e, p), (std::multiset<std::uint64_t>{6, 8}));
  EXPECT_EQ(e.size(), 2u);
  EXPECT_FALSE(e.replace_slot(p, a, b));  // `a` is gone
  EXPECT_FALSE(e.replace_slot(p, payload_layout::make(p.tag, 99), a));
  EXPECT_EQ(payloads_at(e, p), (std::multiset<std::uint64_t>{6, 8}));
}

TYPED_TEST(payload_engine_test, erase_slot_leaves_a_tombstone_that_inserts_reuse) {
  payload_engine<TypeParam> e(1000, big_chunk, 500);
  const position p = two_bucket_position(e, 0);
  for (std::uint64_t k = 0; k < 8; ++k)
    ASSERT_TRUE(e.insert(p, payload_layout::make(p.tag, k)));
  const auto victim = payload_layout::make(p.tag, 3);
  const auto where = slots_holding(e, p, victim);
  ASSERT_EQ(where.size(), 1u);
  ASSERT_TRUE(e.erase_slot(p, victim));
  EXPECT_EQ(e.size(), 7u);
  EXPECT_EQ(e.count(p), 7u);
  EXPECT_EQ(payloads_at(e, p).count(3), 0u);
  // The slot is a tombstone: status deleted, tag and payload kept.
  const auto raw = payload_layout::get(e.table().load(where[0].first), where[0].second);
  EXPECT_EQ(payload_layout::status_of(raw), payload_layout::deleted);
  EXPECT_EQ(payload_layout::tag_of(raw), p.tag);
  EXPECT_EQ(payload_layout::payload_of(raw), 3u);
  EXPECT_FALSE(e.erase_slot(p, victim));  // a tombstone is not erased twice
  // A tombstone counts as free: the next insert takes it without moving anything.
  const std::size_t hops = e.relocations();
  const auto fresh = payload_layout::make(p.tag, 99);
  ASSERT_TRUE(e.insert(p, fresh));
  EXPECT_EQ(e.relocations(), hops);
  EXPECT_EQ(slots_holding(e, p, fresh), where);
  EXPECT_EQ(e.size(), 8u);
  EXPECT_EQ(payloads_at(e, p), (std::multiset<std::uint64_t>{0, 1, 2, 4, 5, 6, 7, 99}));
  // erase() removes one slot with the tag, whichever payload.
  ASSERT_TRUE(e.erase(p));
  EXPECT_EQ(payloads_at(e, p).size(), 7u);
}

TYPED_TEST(payload_engine_test, payloads_follow_their_tags_through_relocations_to_95_percent) {
  const auto capacity = static_cast<std::size_t>(600000 * std::min(1.0, test_scale()));
  for (const std::size_t max_chunk : {big_chunk, ccf::global_alternate::max_chunk_buckets(4)}) {
    SCOPED_TRACE(testing::Message() << "max chunk " << max_chunk);
    payload_engine<TypeParam> e(capacity, max_chunk, 500);
    const std::size_t n = e.size_in_tags() * 95 / 100;
    for (std::uint64_t k = 0; k < n; ++k) {
      const position p = position_of(e, k);
      ASSERT_TRUE(e.insert(p, payload_layout::make(p.tag, k))) << "item " << k << " of " << n;
    }
    EXPECT_EQ(e.size(), n);
    EXPECT_GT(e.relocations(), n / 20);
    for (std::uint64_t k = 0; k < n; ++k)
      ASSERT_EQ(payloads_at(e, position_of(e, k)).count(k), 1u) << "payload " << k << " lost";
    // Erase every other item by its exact slot; the others keep their payloads.
    for (std::uint64_t k = 0; k < n; k += 2) {
      const position p = position_of(e, k);
      ASSERT_TRUE(e.erase_slot(p, payload_layout::make(p.tag, k)));
    }
    EXPECT_EQ(e.size(), n - (n + 1) / 2);
    for (std::uint64_t k = 0; k < n; ++k)
      ASSERT_EQ(payloads_at(e, position_of(e, k)).count(k), k % 2) << "payload " << k;
    e.clear();
    EXPECT_EQ(e.size(), 0u);
    for (std::uint64_t k = 0; k < 1000; ++k)
      ASSERT_EQ(e.for_each_match(position_of(e, k), [](std::uint64_t) {}), 0u);
    for (std::size_t i = 0; i < e.num_buckets(); i += 997)
      ASSERT_EQ(e.table().load(i), payload_layout::bucket{}) << "bucket " << i;
  }
}

TEST(payload_engine_concurrent, replace_and_relocations_never_show_two_live_slots) {
  payload_engine<ccf::striped_locking> e(200000, big_chunk, 500);
  const position p = two_bucket_position(e, 1u << 20);
  const auto a = payload_layout::make(p.tag, 1);
  const auto b = payload_layout::make(p.tag, 2);
  ASSERT_TRUE(e.insert(p, a));
  const auto rounds = static_cast<int>(20000 * std::max(0.1, std::min(1.0, test_scale())));
  std::atomic<int> writers_done{0};
  std::atomic<std::size_t> bad{0}, fills_refused{0}, reads{0};
  run_threads(3, [&](int t) {
    if (t == 0) {  // flips the payload in place
      for (int r = 0; r < rounds; ++r) {
        if (!e.replace_slot(p, r % 2 ? b : a, r % 2 ? a : b)) bad.fetch_add(1);
      }
      writers_done.fetch_add(1);
    } else if (t == 1) {  // fills the table to 95 %, relocating items (maybe ours)
      const std::size_t n = e.size_in_tags() * 93 / 100;
      for (std::uint64_t k = 0; k < n; ++k) {
        const position q = position_of(e, k);
        if (!e.insert(q, payload_layout::make(q.tag, k + 10))) fills_refused.fetch_add(1);
      }
      writers_done.fetch_add(1);
    } else {  // sees exactly one live slot with payload 1 or 2
      while (writers_done.load() < 2) {
        std::size_t ours = 0;
        e.for_each_match(p, [&](std::uint64_t v) {
          const auto pay = payload_layout::payload_of(v);
          ours += pay == 1 || pay == 2 ? 1 : 0;
        });
        if (ours != 1) bad.fetch_add(1);
        reads.fetch_add(1);
      }
    }
  });
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_EQ(fills_refused.load(), 0u);
  EXPECT_GT(reads.load(), 0u);
  EXPECT_EQ(payloads_at(e, p).count(rounds % 2 ? 2 : 1), 1u);
  for (std::uint64_t k = 0; k < 1000; ++k)
    ASSERT_EQ(payloads_at(e, position_of(e, k)).count(k + 10), 1u);
}

// ---- e. duplicates and erase ----

template <class F>
class every_filter : public ::testing::Test {};
TYPED_TEST_SUITE(every_filter, all_filters);

TYPED_TEST(every_filter, duplicates_fill_both_buckets_and_erase_removes_one_copy_at_a_time) {
  using F = TypeParam;
  constexpr unsigned slots = F::slots_per_bucket;
  F f(1000);
  u64 key = 0;
  for (u64 i = 0;; ++i) {
    key = key_of(i, 3);
    if (f.locate(key).i1 != f.locate(key).i2) break;
  }
  const position p = f.locate(key);
  for (unsigned c = 1; c <= 2 * slots; ++c) {
    ASSERT_TRUE(f.insert(key)) << "copy " << c;
    ASSERT_EQ(f.count(key), c);
  }
  for (const std::size_t i : {p.i1, p.i2})
    for (unsigned j = 0; j < slots; ++j)
      ASSERT_EQ(f.read_tag(i, j), p.tag) << "bucket " << i << " slot " << j;
  EXPECT_FALSE(f.insert(key));
  EXPECT_EQ(f.size(), 2u * slots);
  for (unsigned c = 2 * slots; c-- > 0;) {
    ASSERT_TRUE(f.erase(key));
    ASSERT_EQ(f.count(key), c);
    ASSERT_EQ(f.size(), c);
  }
  EXPECT_FALSE(f.contains(key));
  EXPECT_FALSE(f.erase(key));
  EXPECT_EQ(f.size(), 0u);
}

// ---- f. write_tag refuses tags wider than the slot ----

TYPED_TEST(every_filter, write_tag_refuses_a_tag_wider_than_the_slot_and_changes_nothing) {
  using F = TypeParam;
  using tag_t = typename F::tag_type;
  constexpr unsigned slots = F::slots_per_bucket;
  constexpr std::uint64_t max_tag = (std::uint64_t{1} << F::fingerprint_bits) - 1;
  F f(1000);
  for (std::size_t i = 0; i < 3; ++i)
    for (unsigned j = 0; j < slots; ++j)
      f.write_tag(i, j, static_cast<tag_t>(1 + (i * slots + j) % max_tag));
  auto snapshot = [&] {
    std::vector<tag_t> v;
    for (std::size_t i = 0; i < 3; ++i)
      for (unsigned j = 0; j < slots; ++j)
        v.push_back(f.read_tag(i, j));
    return v;
  };
  const auto before = snapshot();
  const std::size_t size = f.size();
  EXPECT_EQ(size, 3u * slots);
  if constexpr (F::fingerprint_bits < 32) {
    for (unsigned j : {0u, slots - 1}) {
      EXPECT_THROW(f.write_tag(1, j, static_cast<tag_t>(max_tag + 1)), std::invalid_argument);
      EXPECT_THROW(f.write_tag(1, j, ~tag_t{0}), std::invalid_argument);
    }
    EXPECT_THROW(f.write_tag(0, 0, static_cast<tag_t>(max_tag + 1)), std::invalid_argument);
    tag_t old = 0;
    EXPECT_THROW(f.insert_tag_to_bucket(1, static_cast<tag_t>(max_tag + 1), true, old),
                 std::invalid_argument);
  }
  tag_t old = 0;
  EXPECT_THROW(f.insert_tag_to_bucket(1, 0, true, old), std::invalid_argument);
  EXPECT_THROW(f.write_tag(f.num_buckets(), 0, 1), std::out_of_range);
  volatile unsigned past_last_slot = slots;  // not a constant: no -Warray-bounds on the dead path
  EXPECT_THROW(f.write_tag(0, past_last_slot, 1), std::out_of_range);
  EXPECT_EQ(snapshot(), before);
  EXPECT_EQ(f.size(), size);
  // The widest valid tag fits and leaves its neighbours alone.
  f.write_tag(1, 0, static_cast<tag_t>(max_tag));
  auto want = before;
  want[slots] = static_cast<tag_t>(max_tag);
  EXPECT_EQ(snapshot(), want);
  f.write_tag(1, 0, 0);
  EXPECT_EQ(f.size(), size - 1);
}

TEST(write_tag, eight_bit_filter_refuses_0x1ff) {
  ccf::cuckoo_filter<u64, 8, 4> f(1000);
  f.write_tag(0, 1, 0x11);
  f.write_tag(1, 0, 0x22);
  EXPECT_THROW(f.write_tag(0, 0, 0x1FF), std::invalid_argument);
  EXPECT_EQ(f.read_tag(0, 0), 0u);
  EXPECT_EQ(f.read_tag(0, 1), 0x11u);
  EXPECT_EQ(f.read_tag(1, 0), 0x22u);
  EXPECT_EQ(f.size(), 2u);
  try {
    f.write_tag(0, 3, 0x1FF);
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("8-bit"), std::string::npos) << e.what();
  }
  EXPECT_EQ(f.read_tag(1, 0), 0x22u);
}

// ---- g. the lock_policy concept ----

struct policy_without_read {
  static constexpr bool concurrent = true;
  static constexpr const char* name = "no read";
  policy_without_read(std::size_t, std::size_t) {}
  int lock_two(std::size_t, std::size_t) { return 0; }
  int lock_all() { return 0; }
};
struct policy_without_constructor {
  static constexpr bool concurrent = false;
  static constexpr const char* name = "no constructor";
  policy_without_constructor() = delete;
  int lock_two(std::size_t, std::size_t) { return 0; }
  int lock_all() { return 0; }
  template <class F>
  auto read(std::size_t, std::size_t, F&& f) {
    return f();
  }
};

/// A minimal custom policy: one mutex, and counters of what the filter asked for.
struct counting_mutex_locking {
  static constexpr bool concurrent = true;
  static constexpr const char* name = "counting";
  static inline std::atomic<std::size_t> locks{0}, reads{0};
  counting_mutex_locking(std::size_t, std::size_t) {}
  std::unique_lock<std::mutex> lock_two(std::size_t, std::size_t) {
    locks.fetch_add(1);
    return std::unique_lock<std::mutex>(mutex);
  }
  std::unique_lock<std::mutex> lock_all() { return std::unique_lock<std::mutex>(mutex); }
  template <class F>
  auto read(std::size_t, std::size_t, F&& f) {
    reads.fetch_add(1);
    std::lock_guard<std::mutex> guard(mutex);
    return f();
  }
  std::mutex mutex;
};

static_assert(ccf::lock_policy<ccf::striped_locking>);
static_assert(ccf::lock_policy<ccf::global_locking>);
static_assert(ccf::lock_policy<ccf::elided_mcs_locking>);
static_assert(ccf::lock_policy<ccf::detail::null_locking>);
static_assert(ccf::lock_policy<counting_mutex_locking>);
static_assert(!ccf::lock_policy<int>);
static_assert(!ccf::lock_policy<policy_without_read>);
static_assert(!ccf::lock_policy<policy_without_constructor>);

TEST(lock_policy, a_custom_policy_guards_a_concurrent_filter) {
  ccf::concurrent_cuckoo_filter<u64, 16, 4, ccf::hash<u64>, counting_mutex_locking> f(10000);
  const std::size_t locks = counting_mutex_locking::locks.load();
  const std::size_t reads = counting_mutex_locking::reads.load();
  std::atomic<std::size_t> missing{0};
  run_threads(2, [&](int t) {
    for (u64 i = 0; i < 2000; ++i) {
      if (!f.insert(key_of(i, 10 + t)) || !f.contains(key_of(i, 10 + t))) missing.fetch_add(1);
    }
  });
  EXPECT_EQ(missing.load(), 0u);
  EXPECT_EQ(f.size(), 4000u);
  EXPECT_GE(counting_mutex_locking::locks.load() - locks, 4000u);
  EXPECT_GE(counting_mutex_locking::reads.load() - reads, 4000u);
}

// ---- h. custom allocators ----

inline std::atomic<std::ptrdiff_t> live_bytes{0};

template <class T>
struct counting_allocator {
  using value_type = T;
  counting_allocator() = default;
  template <class U>
  counting_allocator(const counting_allocator<U>&) noexcept {}  // NOLINT: rebinding
  T* allocate(std::size_t n) {
    live_bytes.fetch_add(static_cast<std::ptrdiff_t>(n * sizeof(T)));
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    live_bytes.fetch_sub(static_cast<std::ptrdiff_t>(n * sizeof(T)));
    std::allocator<T>().deallocate(p, n);
  }
  template <class U>
  bool operator==(const counting_allocator<U>&) const noexcept {
    return true;
  }
};

template <class F>
class allocator_test : public ::testing::Test {};
using counted_filters = ::testing::Types<
    ccf::cuckoo_filter<u64, 16, 4, ccf::hash<u64>, ccf::chunked_alternate, counting_allocator<u64>>,
    ccf::cuckoo_filter<u64, 12, 4, ccf::hash<u64>, ccf::global_alternate, counting_allocator<u64>>,
    ccf::concurrent_cuckoo_filter<u64, 16, 4, ccf::hash<u64>, ccf::striped_locking,
                                  ccf::chunked_alternate, counting_allocator<u64>>,
    ccf::lockfree_cuckoo_filter<u64, 12, 4, ccf::hash<u64>, ccf::chunked_alternate,
                                counting_allocator<u64>>>;
TYPED_TEST_SUITE(allocator_test, counted_filters);

TYPED_TEST(allocator_test, the_table_comes_from_the_allocator_and_goes_back_to_it) {
  ASSERT_EQ(live_bytes.load(), 0);
  {
    TypeParam f(300000);
    EXPECT_GE(live_bytes.load(), static_cast<std::ptrdiff_t>(f.size_in_bytes()));
    EXPECT_GT(f.size_in_bytes(), 300000u);
    const auto keys = make_keys(100000, 4);
    EXPECT_EQ(f.insert_many(std::span<const u64>(keys)), keys.size());
    EXPECT_EQ(f.contains_many(std::span<const u64>(keys)), keys.size());
    const std::ptrdiff_t one = live_bytes.load();
    {
      const auto bytes = f.to_bytes();
      TypeParam g{std::span<const std::byte>(bytes)};
      EXPECT_GE(live_bytes.load(), one + static_cast<std::ptrdiff_t>(g.size_in_bytes()));
      EXPECT_EQ(g.contains_many(std::span<const u64>(keys)), keys.size());
    }
    EXPECT_EQ(live_bytes.load(), one);
  }
  EXPECT_EQ(live_bytes.load(), 0);
}

}  // namespace
}  // namespace ccf_test
