// SWAR tag matching against a lane-by-lane reference on random words.
#include <gtest/gtest.h>

#include <random>

#include <ccf/detail/bucket_table.hpp>
#include <ccf/detail/tag_matching.hpp>
#include <ccf/detail/word_policy.hpp>

namespace {

template <unsigned Bits, unsigned Lanes>
void check_random_words() {
  using s = ccf::detail::swar<Bits, Lanes>;
  std::mt19937_64 rng(Bits * 100 + Lanes);
  for (int iter = 0; iter < 20000; ++iter) {
    std::uint64_t w = rng() & s::word_mask;
    // Plant zeros and copies of the tag so matches are frequent.
    const std::uint64_t tag = rng() & s::lane_mask;
    for (unsigned l = 0; l < Lanes; ++l) {
      const unsigned r = rng() % 4;
      if (r == 0) w &= ~(s::lane_mask << (l * Bits));
      if (r == 1) w = (w & ~(s::lane_mask << (l * Bits))) | (tag << (l * Bits));
    }
    unsigned zeros = 0, matches = 0;
    int first_zero = -1;
    for (unsigned l = 0; l < Lanes; ++l) {
      const std::uint64_t v = (w >> (l * Bits)) & s::lane_mask;
      ASSERT_EQ(s::get(w, l), v);
      if (v == 0) {
        ++zeros;
        if (first_zero < 0) first_zero = static_cast<int>(l);
      }
      if (v == tag) ++matches;
    }
    ASSERT_EQ(static_cast<unsigned>(std::popcount(s::zero_lanes(w))), zeros);
    ASSERT_EQ(s::count(w, tag), matches);
    ASSERT_EQ(s::has(w, tag), matches > 0);
    if (first_zero >= 0) {
      ASSERT_EQ(static_cast<int>(s::first_lane(s::zero_lanes(w))), first_zero);
    }
  }
}

TEST(swar, exact_for_every_lane_layout) {
  check_random_words<4, 2>();
  check_random_words<4, 4>();
  check_random_words<4, 8>();
  check_random_words<8, 2>();
  check_random_words<8, 4>();
  check_random_words<8, 8>();
  check_random_words<12, 2>();
  check_random_words<12, 4>();
  check_random_words<16, 2>();
  check_random_words<16, 4>();
  check_random_words<32, 2>();
}

TEST(swar, thesis_predicates) {
  EXPECT_TRUE(ccf::detail::hasvalue8(0x11223344, 0x22));
  EXPECT_FALSE(ccf::detail::hasvalue8(0x11223344, 0x55));
  EXPECT_TRUE(ccf::detail::hasvalue16(0x0001000200030004ULL, 3));
  EXPECT_TRUE(ccf::detail::hasvalue12(0xabc123456ULL, 0x123));
  EXPECT_FALSE(ccf::detail::hasvalue12(0xabc123456ULL, 0x234));
  EXPECT_TRUE(ccf::detail::hasvalue4(0x1234, 0x3));
}

template <unsigned Bits, unsigned Slots>
void check_table_roundtrip() {
  using table = ccf::detail::bucket_table<Bits, Slots, ccf::detail::plain_words>;
  const std::size_t n = 1001;
  table t(n);
  std::mt19937_64 rng(Bits + Slots);
  std::vector<std::uint32_t> shadow(n * Slots, 0);
  const std::uint64_t mask = (std::uint64_t{1} << Bits) - 1;
  for (int iter = 0; iter < 50000; ++iter) {
    const std::size_t i = rng() % n;
    const unsigned j = rng() % Slots;
    const auto tag = static_cast<std::uint32_t>(rng() & mask);
    t.write_tag(i, j, tag);
    shadow[i * Slots + j] = tag;
  }
  for (std::size_t i = 0; i < n; ++i) {
    const auto b = t.load(i);
    for (unsigned j = 0; j < Slots; ++j) {
      ASSERT_EQ(t.read_tag(i, j), shadow[i * Slots + j]) << i << "," << j;
      ASSERT_EQ(table::tag_at(b, j), shadow[i * Slots + j]);
    }
  }
}

TEST(bucket_table, neighbouring_buckets_never_overwrite_each_other) {
  check_table_roundtrip<4, 2>();
  check_table_roundtrip<4, 8>();
  check_table_roundtrip<8, 4>();
  check_table_roundtrip<12, 2>();
  check_table_roundtrip<12, 4>();
  check_table_roundtrip<12, 8>();
  check_table_roundtrip<16, 8>();
  check_table_roundtrip<32, 8>();
}

}  // namespace

namespace {

// Whole-bucket queries (SIMD where the layout allows it, SWAR otherwise) against a slot-by-slot
// reference on random buckets with planted empties and matches.
template <unsigned Bits, unsigned Slots>
void check_bucket_queries() {
  using table = ccf::detail::bucket_table<Bits, Slots, ccf::detail::plain_words>;
  const std::size_t n = 257;
  table t(n);
  std::mt19937_64 rng(Bits * 10 + Slots);
  const std::uint64_t mask = (std::uint64_t{1} << Bits) - 1;
  for (int iter = 0; iter < 20000; ++iter) {
    const std::size_t i = rng() % n;
    const auto tag = static_cast<std::uint32_t>(rng() & mask);
    for (unsigned j = 0; j < Slots; ++j) {
      const unsigned r = rng() % 3;
      t.write_tag(i, j, r == 0 ? 0u : (r == 1 ? tag : static_cast<std::uint32_t>(rng() & mask)));
    }
    const auto b = t.load(i);
    unsigned count = 0, empties = 0;
    int first = -1, first_empty = -1;
    for (unsigned j = 0; j < Slots; ++j) {
      const auto v = t.read_tag(i, j);
      if (v == tag) {
        ++count;
        if (first < 0) first = static_cast<int>(j);
      }
      if (v == 0) {
        ++empties;
        if (first_empty < 0) first_empty = static_cast<int>(j);
      }
    }
    ASSERT_EQ(table::count(b, tag), count);
    ASSERT_EQ(table::has(b, tag), count > 0);
    ASSERT_EQ(table::find(b, tag), first);
    ASSERT_EQ(table::count(b, 0), empties);
    ASSERT_EQ(table::free_slot(b), first_empty);
  }
}

TEST(bucket_table, whole_bucket_queries_match_a_slot_by_slot_reference) {
  check_bucket_queries<4, 2>();
  check_bucket_queries<4, 8>();
  check_bucket_queries<8, 2>();
  check_bucket_queries<8, 4>();
  check_bucket_queries<8, 8>();
  check_bucket_queries<12, 4>();
  check_bucket_queries<12, 8>();
  check_bucket_queries<16, 2>();
  check_bucket_queries<16, 4>();
  check_bucket_queries<16, 8>();
  check_bucket_queries<32, 2>();
  check_bucket_queries<32, 4>();
  check_bucket_queries<32, 8>();
}

}  // namespace
