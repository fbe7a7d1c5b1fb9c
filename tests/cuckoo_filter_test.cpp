// Properties of the sequential cuckoo filter that depend on its parameters: false-positive rate,
// load reached, space per item, bit-packed layout, no false negatives for every width and size.
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include <ccf/growing_cuckoo_filter.hpp>

#include "filter_types.hpp"

namespace ccf_test {
namespace {

template <unsigned Bits, unsigned Slots>
struct cfg {
  static constexpr unsigned bits = Bits;
  static constexpr unsigned slots = Slots;
  using filter = ccf::cuckoo_filter<u64, Bits, Slots>;
};

template <class C>
class every_layout : public ::testing::Test {};
using layouts = ::testing::Types<cfg<4, 2>, cfg<4, 4>, cfg<4, 8>, cfg<8, 2>, cfg<8, 4>, cfg<8, 8>,
                                 cfg<12, 2>, cfg<12, 4>, cfg<12, 8>, cfg<16, 2>, cfg<16, 4>,
                                 cfg<16, 8>, cfg<32, 2>, cfg<32, 4>, cfg<32, 8>>;
TYPED_TEST_SUITE(every_layout, layouts);

/// Fills one key at a time until the first refusal; returns the keys stored.
template <class F>
std::vector<u64> fill_until_refused(F& f, u64 stream) {
  std::vector<u64> stored;
  for (u64 i = 0;; ++i) {
    const u64 k = key_of(i, stream);
    if (!f.insert(k)) break;
    stored.push_back(k);
  }
  return stored;
}

TYPED_TEST(every_layout, no_false_negatives_when_full_and_after_erasing_half) {
  typename TypeParam::filter f(50000, 5);
  const auto stored = fill_until_refused(f, 1);
  ASSERT_GE(stored.size(), 50000u);
  for (u64 k : stored)
    ASSERT_TRUE(f.contains(k));
  for (std::size_t i = 0; i < stored.size(); i += 2)
    ASSERT_TRUE(f.erase(stored[i]));
  for (std::size_t i = 1; i < stored.size(); i += 2)
    ASSERT_TRUE(f.contains(stored[i]));
  EXPECT_EQ(f.size(), stored.size() / 2);
}

TYPED_TEST(every_layout, table_is_bit_packed) {
  typename TypeParam::filter f(30000);
  const std::size_t bits = f.num_buckets() * TypeParam::slots * TypeParam::bits;
  EXPECT_EQ(f.size_in_bytes(), ((bits + 63) / 64 + 1) * 8);
  // The bucket count is not rounded up to a power of two.
  EXPECT_NE(f.num_buckets() & (f.num_buckets() - 1), 0u);
}

TYPED_TEST(every_layout, load_reached_until_first_failure) {
  // 8-bit and wider tags: the loads partial-key cuckoo hashing is known to reach. 4-bit tags have
  // only 15 alternate buckets per bucket: they are held to the load their table is sized for
  // (with 2 slots the table also grows with n, so only the capacity promise applies).
  constexpr unsigned b = TypeParam::slots;
  const double want = TypeParam::bits == 4 ? (b == 2 ? 0.0 : (b == 4 ? 0.90 : 0.95))
                                           : (b == 2 ? 0.84 : (b == 4 ? 0.95 : 0.98));
  for (u64 seed : {1u, 2u}) {
    typename TypeParam::filter f(1000000, seed);
    const auto stored = fill_until_refused(f, seed);
    std::printf("[ load ] %2u-bit x %u, seed %llu: %.4f\n", TypeParam::bits, b,
                static_cast<unsigned long long>(seed), f.load_factor());
    EXPECT_GE(f.load_factor(), want) << "seed " << seed;
    EXPECT_GE(stored.size(), f.capacity()) << "seed " << seed;
    EXPECT_EQ(f.size(), stored.size());
  }
}

TYPED_TEST(every_layout, capacity_is_what_was_asked_for) {
  // It was the table's size times the design load where that was at most 5 % + 64 more: 16 for a
  // 16-bit x 2-slot filter of capacity 1, which 1 table in 20 could not hold.
  for (std::size_t cap : {1u, 7u, 500u, 100000u}) {
    EXPECT_EQ(typename TypeParam::filter(cap).capacity(), cap);
  }
}

TEST(four_bit_two_slot, tables_hold_their_capacity) {
  // Sized for 70 % load, 8 of these 200 tables refused an insert before 1,000 keys (one after
  // 608). What may still refuse is the overflow the sizing rule allows: about 1 table in 100
  // gets five items of one tag and bucket pair (docs/design.md, "Sizing").
  int refused = 0;
  for (u64 seed = 1; seed <= 200; ++seed) {
    ccf::cuckoo_filter<u64, 4, 2> f(1000, seed);
    std::size_t i = 0;
    while (i < 1000 && f.insert(key_of(i, seed + 1000)))
      ++i;
    refused += i < 1000 ? 1 : 0;
  }
  EXPECT_LE(refused, 3);
}

template <class C>
class sized_layout : public ::testing::Test {};
// Layouts whose table size follows the load-factor rule alone (tags of 8 bits and more).
using sized_layouts =
    ::testing::Types<cfg<8, 2>, cfg<8, 4>, cfg<8, 8>, cfg<12, 2>, cfg<12, 4>, cfg<12, 8>,
                     cfg<16, 2>, cfg<16, 4>, cfg<16, 8>, cfg<32, 2>, cfg<32, 4>, cfg<32, 8>>;
TYPED_TEST_SUITE(sized_layout, sized_layouts);

TYPED_TEST(sized_layout, space_bound_at_awkward_capacities) {
  // f / 0.94 * 1.02 bits per item for 4 and 8 slots; 2-slot tables are sized for 84 % load.
  const double design = TypeParam::slots == 2 ? 0.84 : 0.94;
  for (std::size_t cap : {10000u, 12345u, 999999u, 3000000u}) {
    typename TypeParam::filter f(cap);
    const double bits_per_item = f.size_in_bytes() * 8.0 / static_cast<double>(cap);
    EXPECT_LE(bits_per_item, TypeParam::bits / design * 1.02) << "capacity " << cap;
    EXPECT_EQ(f.capacity(), cap);
  }
}

/// Measured FPR against 2 b alpha / (2^f - 1) at full load, within +-15 %.
template <class F>
void check_fpr(std::size_t cap, double min_hits) {
  F f(cap, 99);
  const auto stored = fill_until_refused(f, 2);
  const double alpha = f.load_factor();
  const double expected =
      2.0 * F::slots_per_bucket * alpha / (std::ldexp(1.0, F::fingerprint_bits) - 1.0);
  const auto queries = static_cast<u64>(min_hits / expected);
  u64 hits = 0;
  for (u64 i = 0; i < queries; ++i)
    hits += f.contains(key_of(i, 1000)) ? 1 : 0;
  const double measured = static_cast<double>(hits) / static_cast<double>(queries);
  EXPECT_NEAR(measured, expected, 0.15 * expected)
      << "f=" << F::fingerprint_bits << " b=" << F::slots_per_bucket << " alpha=" << alpha
      << " queries=" << queries << " hits=" << hits;
}

TEST(fpr, matches_theory_for_8_12_16_bit_tags) {
  // >= 1500 expected false positives per case: the +-15 % band is more than 5 standard deviations.
  check_fpr<ccf::cuckoo_filter<u64, 8, 2>>(200000, 1500);
  check_fpr<ccf::cuckoo_filter<u64, 8, 4>>(200000, 1500);
  check_fpr<ccf::cuckoo_filter<u64, 8, 8>>(200000, 1500);
  check_fpr<ccf::cuckoo_filter<u64, 12, 2>>(200000, 1500);
  check_fpr<ccf::cuckoo_filter<u64, 12, 4>>(200000, 1500);
  check_fpr<ccf::cuckoo_filter<u64, 12, 8>>(200000, 1500);
  check_fpr<ccf::cuckoo_filter<u64, 16, 2>>(200000, 1500);
  check_fpr<ccf::cuckoo_filter<u64, 16, 4>>(200000, 1500);
  check_fpr<ccf::cuckoo_filter<u64, 16, 8>>(200000, 1500);
}

TEST(sizing, short_fingerprints_get_more_room_as_n_grows) {
  // f = Omega(log(n / b)): with 4-bit tags and 2 slots the table must grow faster than n.
  const std::size_t small = ccf::detail::buckets_for_capacity(1000, 2, 4);
  const std::size_t large = ccf::detail::buckets_for_capacity(1000000, 2, 4);
  EXPECT_GT(static_cast<double>(large) / small, 1000.0 * 1.5);
  // 16-bit tags need no such growth.
  const std::size_t s16 = ccf::detail::buckets_for_capacity(1000, 4, 16);
  const std::size_t l16 = ccf::detail::buckets_for_capacity(1000000, 4, 16);
  EXPECT_LT(static_cast<double>(l16) / s16, 1000.0);
}

TEST(copy, a_copy_is_independent) {
  ccf::cuckoo_filter<u64> a(1000);
  ASSERT_TRUE(a.insert(1));
  ccf::cuckoo_filter<u64> b = a;
  ASSERT_TRUE(b.insert(2));
  EXPECT_TRUE(b.contains(1));
  EXPECT_EQ(a.size(), 1u);
  EXPECT_EQ(b.size(), 2u);
}

TEST(seed, different_seeds_give_different_tables) {
  ccf::cuckoo_filter<u64> a(1000, 1), b(1000, 2);
  EXPECT_EQ(a.seed(), 1u);
  const auto pa = a.locate(12345), pb = b.locate(12345);
  EXPECT_TRUE(pa.i1 != pb.i1 || pa.tag != pb.tag);
}

TEST(hash, is_version_stable) {
  // Fixed values: a change here changes every stored filter's identity. A filter hashes with
  // key_seed(seed) = mix64(seed), mixed once per filter.
  EXPECT_EQ(ccf::hash<u64>{}(0, 0), ccf::mix64(0));
  EXPECT_EQ(ccf::mix64(1), 0x5692161d100b05e5ULL);
  EXPECT_EQ(ccf::hash<u64>{}(12345, ccf::key_seed(ccf::default_seed)), 0x7f6a6fb2086b7417ULL);
  EXPECT_EQ(ccf::cuckoo_filter<u64>(10).hash_of(12345), 0x7f6a6fb2086b7417ULL);
  EXPECT_EQ(ccf::hash<std::string>{}("ccf", ccf::default_seed), 0x9a3b99679a6c21e8ULL);
  EXPECT_EQ(ccf::hash<std::string>{}("", 0), 0x2d06800538d394c2ULL);  // XXH3_64bits of ""
}

template <class Key>
concept has_ccf_hash = requires(const Key& key) {
  ccf::hash<Key>{}(key, std::uint64_t{0});
};

TEST(hash, integers_wider_than_64_bits_have_no_hash) {
  // Cutting a 128-bit key to its low 64 bits would make keys that differ only in their high bits
  // (IPv6 addresses of one /64) one item: all of them answer yes once one is inserted.
  __extension__ using u128 = unsigned __int128;
  __extension__ using i128 = __int128;
  EXPECT_FALSE(has_ccf_hash<u128>);
  EXPECT_FALSE(has_ccf_hash<i128>);
  EXPECT_TRUE(has_ccf_hash<u64>);
  EXPECT_TRUE(has_ccf_hash<std::int8_t>);
  EXPECT_TRUE(has_ccf_hash<char32_t>);
  EXPECT_FALSE(has_ccf_hash<bool>);
}

template <class Filter, class K>
concept takes_as_it_is = requires(Filter& f, const K& k) {
  f.insert(k);
  f.hash_of(k);
};

/// A filter of strings and a growing one, given string views and C strings: the same items.
template <class Filter, class... Args>
void expect_strings_taken_as_they_are(Args... args) {
  Filter f(args...);
  const std::vector<std::string> keys = {"", "a", "user:42", std::string(300, 'x')};
  for (const std::string& k : keys)
    ASSERT_TRUE(f.insert(k));
  for (const std::string& k : keys) {
    const std::string_view view = k;
    EXPECT_TRUE(f.contains(view)) << k;
    EXPECT_TRUE(f.contains(k.c_str())) << k;
    EXPECT_EQ(f.count(view), 1U) << k;
    EXPECT_EQ(f.hash_of(view), f.hash_of(k)) << k;
  }
  EXPECT_TRUE(f.contains("user:42"));
  EXPECT_TRUE(f.erase(std::string_view("user:42")));
  EXPECT_FALSE(f.contains(std::string("user:42")));
  EXPECT_TRUE(f.insert("literal"));
  EXPECT_TRUE(f.contains(std::string("literal")));
}

TEST(hash, a_filter_of_strings_takes_views_and_c_strings_as_they_are) {
  // f.contains(view) on a filter of std::string did not compile, and f.contains("abc") made a
  // std::string: the string hash is transparent, as for std::unordered_set.
  expect_strings_taken_as_they_are<ccf::cuckoo_filter<std::string>>(100);
  expect_strings_taken_as_they_are<ccf::concurrent_cuckoo_filter<std::string>>(100);
  expect_strings_taken_as_they_are<ccf::growing_cuckoo_filter<std::string>>(10, 0.01);
  static_assert(takes_as_it_is<ccf::cuckoo_filter<std::string>, std::string_view>);
  static_assert(takes_as_it_is<ccf::cuckoo_filter<std::string_view>, std::string>);
  // An integer key converts to the key type as before; no other type is taken.
  ccf::cuckoo_filter<u64> ints(10);
  EXPECT_TRUE(ints.insert(5));
  EXPECT_TRUE(ints.contains(std::uint8_t{5}));
  static_assert(!takes_as_it_is<ccf::cuckoo_filter<std::string>, int>);
}

}  // namespace
}  // namespace ccf_test
