// The contract every ccf cuckoo filter keeps, run over every filter type (tests/filter_types.hpp):
// no false negatives, refused inserts lose nothing, erase removes one copy, at most 2b copies,
// batch operations agree with single ones, agreement with an exact multiset, clean errors.
#include <algorithm>
#include <memory>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <unordered_map>

#include "filter_types.hpp"

namespace ccf_test {
namespace {

template <class F>
class contract : public ::testing::Test {};
TYPED_TEST_SUITE(contract, all_filters);

TYPED_TEST(contract, capacity_items_fit_and_are_all_found) {
  for (std::size_t cap : {1u, 2u, 3u, 7u, 100u, 1000u, 12345u, 100000u}) {
    for (u64 seed : {1u, 2u, 3u}) {
      TypeParam f(cap, seed);
      ASSERT_EQ(f.capacity(), cap);
      const auto keys = make_keys(cap, seed);
      for (std::size_t i = 0; i < cap; ++i) {
        ASSERT_TRUE(f.insert(keys[i])) << "capacity " << cap << " seed " << seed << " item " << i;
      }
      EXPECT_EQ(f.size(), cap);
      for (std::size_t i = 0; i < cap; ++i) {
        ASSERT_TRUE(f.contains(keys[i])) << "false negative, capacity " << cap << " item " << i;
        ASSERT_GE(f.count(keys[i]), 1u);
      }
    }
  }
}

TYPED_TEST(contract, refused_insert_loses_nothing) {
  TypeParam f(5000, 7);
  std::vector<u64> stored;
  u64 i = 0;
  for (;; ++i) {
    const u64 k = key_of(i, 9);
    if (!f.insert(k)) break;
    stored.push_back(k);
  }
  const std::size_t full = f.size();
  EXPECT_EQ(full, stored.size());
  EXPECT_GE(full, f.capacity());
  // Keep knocking on the full table: every refusal must leave everything in place.
  std::size_t refused = 0;
  for (u64 j = 1; j <= 2000; ++j) {
    if (f.insert(key_of(i + j, 9))) {
      stored.push_back(key_of(i + j, 9));
    } else {
      ++refused;
    }
  }
  EXPECT_GT(refused, 0u);
  EXPECT_EQ(f.size(), stored.size());
  for (u64 k : stored)
    ASSERT_TRUE(f.contains(k)) << "item lost by a refused insert";
}

TYPED_TEST(contract, erase_removes_exactly_one_copy) {
  TypeParam f(1000);
  const u64 k = key_of(42);
  const std::size_t before = f.count(k);
  ASSERT_TRUE(f.insert(k));
  ASSERT_TRUE(f.insert(k));
  EXPECT_EQ(f.count(k), before + 2);
  EXPECT_EQ(f.size(), 2u);
  ASSERT_TRUE(f.erase(k));
  EXPECT_EQ(f.count(k), before + 1);
  EXPECT_TRUE(f.contains(k));
  EXPECT_EQ(f.size(), 1u);
  ASSERT_TRUE(f.erase(k));
  EXPECT_EQ(f.count(k), before);
  EXPECT_EQ(f.size(), 0u);
  EXPECT_FALSE(f.erase(k));
  EXPECT_FALSE(f.contains(k));
}

TYPED_TEST(contract, duplicates_up_to_two_buckets_then_clean_refusal) {
  constexpr unsigned b = TypeParam::slots_per_bucket;
  TypeParam f(10000);
  const u64 k = key_of(7);
  const auto p = f.locate(k);
  const unsigned limit = p.i1 == p.i2 ? b : 2 * b;
  for (unsigned c = 0; c < limit; ++c)
    ASSERT_TRUE(f.insert(k)) << "copy " << c;
  EXPECT_EQ(f.count(k), limit);
  EXPECT_FALSE(f.insert(k));
  EXPECT_EQ(f.count(k), limit);
  EXPECT_EQ(f.size(), limit);
  for (unsigned c = 0; c < limit; ++c)
    ASSERT_TRUE(f.erase(k));
  EXPECT_EQ(f.size(), 0u);
  EXPECT_FALSE(f.contains(k));
}

TYPED_TEST(contract, batch_operations_agree_with_single_ones) {
  const std::size_t n = 20000;
  TypeParam a(n), b(n);
  const auto keys = make_keys(n, 3);
  for (u64 k : keys)
    ASSERT_TRUE(a.insert(k));
  EXPECT_EQ(b.insert_many(std::span<const u64>(keys)), n);
  EXPECT_EQ(a.size(), b.size());
  std::vector<u64> probe = make_keys(2 * n, 4);
  std::copy(keys.begin(), keys.end(), probe.begin());
  auto found = std::make_unique<bool[]>(probe.size());
  const std::size_t hits =
      b.contains_many(std::span<const u64>(probe), std::span<bool>(found.get(), probe.size()));
  std::size_t single_hits = 0;
  for (std::size_t i = 0; i < probe.size(); ++i) {
    ASSERT_EQ(found[i], a.contains(probe[i])) << i;
    ASSERT_EQ(found[i], b.contains(probe[i])) << i;
    single_hits += found[i] ? 1 : 0;
  }
  EXPECT_EQ(hits, single_hits);
  EXPECT_EQ(b.contains_many(std::span<const u64>(probe)), hits);
  EXPECT_GE(hits, n);
  bool small[1];
  EXPECT_THROW(b.contains_many(std::span<const u64>(probe), std::span<bool>(small, 1)),
               std::invalid_argument);
}

TYPED_TEST(contract, insert_many_stops_at_the_first_refusal) {
  TypeParam f(3000);
  const auto keys = make_keys(20000, 5);
  const std::size_t done = f.insert_many(std::span<const u64>(keys));
  ASSERT_LT(done, keys.size());
  EXPECT_EQ(f.size(), done);
  for (std::size_t i = 0; i < done; ++i)
    ASSERT_TRUE(f.contains(keys[i]));
}

TYPED_TEST(contract, insert_many_refusal_leaves_exactly_the_keys_before_it) {
  // Batched inserts may place keys out of order internally; a refusal must still leave exactly
  // keys[0, done) in the filter, wherever in the batch it happens.
  for (std::size_t extra : {0u, 50u, 500u, 5000u}) {
    TypeParam f(2000, extra);
    std::vector<u64> keys = make_keys(f.size_in_tags() + extra, 40 + extra);
    // A key repeated 2b + 1 times in a row is refused at its last copy, table full or not.
    std::vector<u64> repeated(2 * TypeParam::slots_per_bucket + 1, key_of(1, 99));
    const std::size_t done = f.insert_many(std::span<const u64>(keys));
    ASSERT_LT(done, keys.size());
    EXPECT_EQ(f.size(), done) << "extra " << extra;
    for (std::size_t i = 0; i < done; ++i)
      ASSERT_TRUE(f.contains(keys[i])) << i;
    TypeParam g(10000);
    const auto p = g.locate(repeated[0]);
    const std::size_t fit = p.i1 == p.i2 ? TypeParam::slots_per_bucket : repeated.size() - 1;
    std::vector<u64> batch = make_keys(100, 41);
    batch.insert(batch.begin() + 50, repeated.begin(), repeated.end());
    EXPECT_EQ(g.insert_many(std::span<const u64>(batch)), 50 + fit);
    EXPECT_EQ(g.size(), 50 + fit);
    EXPECT_EQ(g.count(repeated[0]), fit);
  }
}

TYPED_TEST(contract, agrees_with_an_exact_multiset) {
  TypeParam f(4000, 11);
  std::unordered_map<u64, std::size_t> oracle;
  std::size_t live = 0;
  std::mt19937_64 rng(123);
  const u64 universe = 3000;  // few keys: plenty of duplicates and erases of present keys
  for (int op = 0; op < 60000; ++op) {
    const u64 k = key_of(rng() % universe, 77);
    switch (rng() % 4) {
      case 0:
      case 1:
        if (f.insert(k)) {
          ++oracle[k];
          ++live;
        }
        break;
      case 2:
        if (oracle[k] > 0) {
          ASSERT_TRUE(f.erase(k)) << "erase of a present key failed";
          --oracle[k];
          --live;
        }
        break;
      default:
        if (oracle[k] > 0) {
          ASSERT_TRUE(f.contains(k)) << "false negative at op " << op;
          ASSERT_GE(f.count(k), oracle[k]);
        }
    }
    ASSERT_EQ(f.size(), live);
  }
  for (const auto& [k, c] : oracle) {
    if (c > 0) {
      ASSERT_GE(f.count(k), c);
    }
  }
}

TYPED_TEST(contract, clear_empties_the_filter) {
  TypeParam f(10000);
  const auto keys = make_keys(9000, 6);
  for (u64 k : keys)
    ASSERT_TRUE(f.insert(k));
  f.clear();
  EXPECT_EQ(f.size(), 0u);
  std::size_t still = 0;
  for (u64 k : keys)
    still += f.contains(k) ? 1 : 0;
  EXPECT_EQ(still, 0u);
  for (u64 k : keys)
    ASSERT_TRUE(f.insert(k));
  EXPECT_EQ(f.size(), keys.size());
}

TYPED_TEST(contract, a_moved_from_filter_is_an_empty_filter) {
  // It crashed: contains() read a null table, and a concurrent filter's size() a null counter.
  // The move stays noexcept (std::vector copies a table whose move may throw).
  static_assert(std::is_nothrow_move_constructible_v<TypeParam> &&
                std::is_nothrow_move_assignable_v<TypeParam>);
  TypeParam f(10000);
  const auto keys = make_keys(5000, 8);
  for (u64 k : keys)
    ASSERT_TRUE(f.insert(k));
  TypeParam g(std::move(f));
  EXPECT_EQ(g.size(), keys.size());
  EXPECT_EQ(f.size(), 0u);  // NOLINT(bugprone-use-after-move): the state under test
  EXPECT_TRUE(f.empty());
  EXPECT_FALSE(f.contains(keys[0]));
  ASSERT_TRUE(f.insert(keys[0]));
  EXPECT_TRUE(f.contains(keys[0]));
  EXPECT_EQ(f.size(), 1u);
  TypeParam h(100);
  h = std::move(g);
  EXPECT_EQ(g.size(), 0u);  // NOLINT(bugprone-use-after-move)
  EXPECT_FALSE(g.contains(keys[1]));
  g.clear();
  const TypeParam copy(g.to_bytes());
  EXPECT_EQ(copy.size(), 0u);
  std::size_t found = 0;
  for (u64 k : keys)
    found += h.contains(k) ? 1 : 0;
  EXPECT_EQ(found, keys.size());
  h = std::move(h);  // NOLINT: self-move leaves it as it was
  EXPECT_EQ(h.size(), keys.size());
}

TYPED_TEST(contract, bad_arguments_throw_clear_errors) {
  EXPECT_THROW(TypeParam(0), std::invalid_argument);
  EXPECT_THROW(TypeParam(std::size_t{1} << 62), std::length_error);
  EXPECT_THROW(TypeParam(~std::size_t{0}), std::length_error);
  try {
    TypeParam f(0);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("capacity"), std::string::npos) << e.what();
  }
}

TYPED_TEST(contract, thesis_table_api) {
  TypeParam f(1000);
  EXPECT_EQ(f.size_in_tags(), f.num_buckets() * TypeParam::slots_per_bucket);
  EXPECT_GT(f.size_in_bytes(), 0u);
  EXPECT_NE(f.info().find("buckets"), std::string::npos);
  const u64 k = key_of(1);
  const auto p = f.locate(k);
  EXPECT_LT(p.i1, f.num_buckets());
  EXPECT_LT(p.i2, f.num_buckets());
  EXPECT_NE(p.tag, 0u);
  EXPECT_EQ(f.alt_index(p.i1, p.tag), p.i2);
  EXPECT_EQ(f.alt_index(p.i2, p.tag), p.i1);
  EXPECT_FALSE(f.find_tag_in_buckets(p.i1, p.i2, p.tag));
  typename TypeParam::tag_type old = 0;
  ASSERT_TRUE(f.insert_tag_to_bucket(p.i1, p.tag, false, old));
  EXPECT_TRUE(f.contains(k));
  EXPECT_TRUE(f.find_tag_in_buckets(p.i1, p.i2, p.tag));
  EXPECT_EQ(f.size(), 1u);
  unsigned slot = TypeParam::slots_per_bucket;
  for (unsigned j = 0; j < TypeParam::slots_per_bucket; ++j) {
    if (f.read_tag(p.i1, j) == p.tag) slot = j;
  }
  ASSERT_LT(slot, TypeParam::slots_per_bucket);
  ASSERT_TRUE(f.delete_tag_from_bucket(p.i1, p.tag));
  EXPECT_FALSE(f.contains(k));
  EXPECT_EQ(f.size(), 0u);
  f.write_tag(p.i2, 0, p.tag);
  EXPECT_TRUE(f.contains(k));
  EXPECT_EQ(f.read_tag(p.i2, 0), p.tag);
  EXPECT_EQ(f.size(), 1u);
  // A full bucket: without kickout the insert is refused, with it a victim comes back.
  const typename TypeParam::tag_type other = p.tag == 1 ? 2 : 1;
  for (unsigned j = 0; j < TypeParam::slots_per_bucket; ++j)
    f.write_tag(p.i1, j, other);
  EXPECT_FALSE(f.insert_tag_to_bucket(p.i1, p.tag, false, old));
  old = 0;
  EXPECT_FALSE(f.insert_tag_to_bucket(p.i1, p.tag, true, old));
  EXPECT_EQ(old, other);
  EXPECT_TRUE(f.find_tag_in_buckets(p.i1, p.i1, p.tag));
  // A tag wider than the slot is refused by every call (delete_tag_from_bucket took its low
  // bits, another item's tag, and that item was lost); tag 0 is an empty slot, never found.
  const auto wide = static_cast<typename TypeParam::tag_type>(
      (std::uint64_t{1} << TypeParam::fingerprint_bits) | p.tag);
  if (TypeParam::fingerprint_bits < 32) {
    EXPECT_THROW((void)f.find_tag_in_buckets(p.i1, p.i2, wide), std::invalid_argument);
    EXPECT_THROW(f.delete_tag_from_bucket(p.i1, wide), std::invalid_argument);
    EXPECT_THROW(f.write_tag(p.i1, 0, wide), std::invalid_argument);
    EXPECT_THROW(f.insert_tag_to_bucket(p.i1, wide, true, old), std::invalid_argument);
    EXPECT_TRUE(f.find_tag_in_buckets(p.i1, p.i1, p.tag)) << "a refused call changed the table";
  }
  f.write_tag(p.i1, 0, 0);
  EXPECT_FALSE(f.find_tag_in_buckets(p.i1, p.i2, 0)) << "an empty slot is no tag";
  EXPECT_THROW(f.read_tag(f.num_buckets(), 0), std::out_of_range);
  EXPECT_THROW(f.write_tag(0, TypeParam::slots_per_bucket, 1), std::out_of_range);
}

TYPED_TEST(contract, string_keys_work_too) {
  using string_filter =
      ccf::cuckoo_filter<std::string, TypeParam::fingerprint_bits, TypeParam::slots_per_bucket>;
  string_filter f(5000);
  for (int i = 0; i < 5000; ++i)
    ASSERT_TRUE(f.insert("key-" + std::to_string(i)));
  for (int i = 0; i < 5000; ++i)
    ASSERT_TRUE(f.contains("key-" + std::to_string(i)));
}

}  // namespace
}  // namespace ccf_test
