// Tag matching and bucket layouts (include/ccf/detail/tag_matching.hpp, slot_mask.hpp,
// packed_tag_layout.hpp, payload_slot_layout.hpp, bucket_table.hpp): SWAR lane queries and
// to_slots against a lane-by-lane reference for every lane layout (to_slots over every lane
// pattern), the thesis's hasvalue predicates, SSE2 whole-bucket matching against the SWAR and
// slot-by-slot references, slot_mask iteration, and every packed_tag_layout's queries, get/set,
// and load/store round trips through plain and atomic words (straddling chunks included) that
// never touch a neighbouring bucket's bits.
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "ccf/detail/bucket_table.hpp"
#include "ccf/detail/packed_tag_layout.hpp"
#include "ccf/detail/payload_slot_layout.hpp"
#include "ccf/detail/slot_mask.hpp"
#include "ccf/detail/tag_matching.hpp"
#include "ccf/detail/word_policy.hpp"

namespace {

namespace cd = ccf::detail;
using u64 = std::uint64_t;

// ---------------------------------------------------------------------------------------------
// SWAR over one word

/// The lane mask (top bit of each lane) with exactly the lanes of `pattern` set.
template <unsigned Bits, unsigned Lanes>
u64 lanes_of(std::uint32_t pattern) {
  u64 m = 0;
  for (unsigned k = 0; k < Lanes; ++k) {
    if ((pattern >> k) & 1U) m |= u64{1} << (k * Bits + Bits - 1);
  }
  return m;
}

template <unsigned Bits, unsigned Lanes>
void check_random_words() {
  using s = cd::swar<Bits, Lanes>;
  std::mt19937_64 rng(Bits * 100 + Lanes);
  for (int iter = 0; iter < 20000; ++iter) {
    u64 w = rng() & s::word_mask;
    // Plant zeros and copies of the tag so matches are frequent.
    const u64 tag = rng() & s::lane_mask;
    for (unsigned l = 0; l < Lanes; ++l) {
      const unsigned r = rng() % 4;
      if (r == 0) w &= ~(s::lane_mask << (l * Bits));
      if (r == 1) w = (w & ~(s::lane_mask << (l * Bits))) | (tag << (l * Bits));
    }
    unsigned zeros = 0, matches = 0;
    std::uint32_t zero_slots = 0, match_slots = 0;
    int first_zero = -1;
    for (unsigned l = 0; l < Lanes; ++l) {
      const u64 v = (w >> (l * Bits)) & s::lane_mask;
      ASSERT_EQ(s::get(w, l), v);
      if (v == 0) {
        ++zeros;
        zero_slots |= 1U << l;
        if (first_zero < 0) first_zero = static_cast<int>(l);
      }
      if (v == tag) {
        ++matches;
        match_slots |= 1U << l;
      }
    }
    ASSERT_EQ(s::zero_lanes(w), (lanes_of<Bits, Lanes>(zero_slots)));
    ASSERT_EQ(s::match_lanes(w, tag), (lanes_of<Bits, Lanes>(match_slots)));
    ASSERT_EQ(static_cast<unsigned>(std::popcount(s::zero_lanes(w))), zeros);
    ASSERT_EQ(s::count_lanes(s::zero_lanes(w)), zeros);
    ASSERT_EQ(s::count(w, tag), matches);
    ASSERT_EQ(s::has(w, tag), matches > 0);
    ASSERT_EQ(s::to_slots(s::zero_lanes(w)), zero_slots);
    ASSERT_EQ(s::to_slots(s::match_lanes(w, tag)), match_slots);
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

/// to_slots over all 2^Lanes lane patterns: one bit per lane, whichever path (multiply or loop)
/// the layout takes; count_lanes and first_lane agree with it.
template <unsigned Bits, unsigned Lanes>
void check_to_slots_exhaustively() {
  using s = cd::swar<Bits, Lanes>;
  for (std::uint32_t pattern = 0; pattern < (1U << Lanes); ++pattern) {
    const u64 lanes = lanes_of<Bits, Lanes>(pattern);
    ASSERT_EQ(s::to_slots(lanes), pattern) << Bits << "x" << Lanes << " pattern " << pattern;
    ASSERT_EQ(s::count_lanes(lanes), static_cast<unsigned>(std::popcount(pattern)));
    if (pattern != 0) {
      ASSERT_EQ(s::first_lane(lanes), static_cast<unsigned>(std::countr_zero(pattern)));
    }
  }
}

TEST(swar, to_slots_is_exact_for_every_lane_pattern) {
  check_to_slots_exhaustively<4, 2>();   // multiply
  check_to_slots_exhaustively<4, 4>();   // loop (Bits == Lanes)
  check_to_slots_exhaustively<4, 8>();   // loop
  check_to_slots_exhaustively<8, 2>();   // multiply
  check_to_slots_exhaustively<8, 4>();   // multiply
  check_to_slots_exhaustively<8, 8>();   // loop
  check_to_slots_exhaustively<12, 2>();  // multiply
  check_to_slots_exhaustively<12, 4>();  // multiply
  check_to_slots_exhaustively<16, 2>();  // multiply
  check_to_slots_exhaustively<16, 4>();  // multiply
  check_to_slots_exhaustively<32, 2>();  // multiply
  // Lane widths of the lock-free layouts that are not packed layouts (versioned_tag_layout).
  check_to_slots_exhaustively<6, 8>();
  check_to_slots_exhaustively<16, 3>();
  check_to_slots_exhaustively<5, 8>();
  // Usable in constant expressions.
  static_assert(cd::swar<12, 4>::to_slots(u64{1} << 47 | u64{1} << 11) == 0b1001U);
  static_assert(cd::swar<4, 8>::to_slots(u64{1} << 31) == 0x80U);
}

TEST(swar, thesis_predicates) {
  EXPECT_TRUE(cd::hasvalue8(0x11223344, 0x22));
  EXPECT_FALSE(cd::hasvalue8(0x11223344, 0x55));
  EXPECT_TRUE(cd::hasvalue16(0x0001000200030004ULL, 3));
  EXPECT_FALSE(cd::hasvalue16(0x0001000200030004ULL, 5));
  EXPECT_TRUE(cd::hasvalue12(0xabc123456ULL, 0x123));
  EXPECT_FALSE(cd::hasvalue12(0xabc123456ULL, 0x234));
  EXPECT_TRUE(cd::hasvalue4(0x1234, 0x3));
  EXPECT_FALSE(cd::hasvalue4(0x1234, 0x5));
  EXPECT_FALSE(cd::hasvalue4(0x1234, 0x0)) << "four 4-bit lanes, none empty";
  EXPECT_TRUE(cd::hasvalue4(0x1204, 0x0));
  EXPECT_FALSE(cd::hasvalue4(0x51234, 0x5)) << "bits past the four lanes are not a lane";
  EXPECT_FALSE(cd::hasvalue8(0x01010101, 0x00)) << "no empty lane";
}

// ---------------------------------------------------------------------------------------------
// slot_mask

TEST(popcount, slot_mask_counts_agree_with_std_popcount_for_every_mask_of_eight_slots) {
  for (std::uint32_t m = 0; m < 256; ++m) {
    ASSERT_EQ(cd::popcount_slots(m), static_cast<unsigned>(std::popcount(m))) << m;
    ASSERT_EQ(cd::popcount64(m), static_cast<unsigned>(std::popcount(m))) << m;
  }
}

TEST(slot_mask, iterates_exactly_the_set_bits) {
  auto check = [](std::uint32_t bits) {
    const cd::slot_mask m(bits);
    std::vector<unsigned> seen;
    for (unsigned j : m)
      seen.push_back(j);
    std::vector<unsigned> want;
    for (unsigned j = 0; j < 32; ++j) {
      if ((bits >> j) & 1U) want.push_back(j);
      ASSERT_EQ(m.test(j), ((bits >> j) & 1U) != 0);
    }
    ASSERT_EQ(seen, want) << bits;
    ASSERT_EQ(m.count(), want.size());
    ASSERT_EQ(m.any(), !want.empty());
    ASSERT_EQ(static_cast<bool>(m), !want.empty());
    ASSERT_EQ(m.bits(), bits);
    if (!want.empty()) {
      ASSERT_EQ(m.first(), want.front());
    }
  };
  for (std::uint32_t bits = 0; bits < (1U << 16); ++bits)
    check(bits);
  std::mt19937 rng(3);
  for (int i = 0; i < 2000; ++i)
    check(static_cast<std::uint32_t>(rng()));
  check(0x80000000U);
  check(0xffffffffU);
  EXPECT_EQ(cd::slot_mask(0b0110) | cd::slot_mask(0b1001), cd::slot_mask(0b1111));
  EXPECT_EQ(cd::slot_mask(0b0110) & cd::slot_mask(0b0011), cd::slot_mask(0b0010));
  EXPECT_FALSE(cd::slot_mask().any());
}

// ---------------------------------------------------------------------------------------------
// SSE2 whole-bucket matching

#if CCF_HAS_SSE2
template <unsigned Bits, unsigned Slots>
void check_simd() {
  using simd = cd::simd_match<Bits, Slots>;
  static_assert(simd::available);
  constexpr std::size_t words = (Bits * Slots + 63) / 64;
  constexpr unsigned per_word = 64 / Bits < Slots ? 64 / Bits : Slots;
  using lanes = cd::swar<Bits, per_word>;
  const u64 mask = (u64{1} << Bits) - 1;
  std::mt19937_64 rng(Bits * 7 + Slots);
  for (int iter = 0; iter < 20000; ++iter) {
    std::array<u64, words> w{};
    std::array<u64, Slots> slot{};
    // Tags with the top bit set too (signed compares and saturating packs must not care).
    const u64 tag = iter % 5 == 0 ? 0 : (iter % 7 == 0 ? (u64{1} << (Bits - 1)) : rng() & mask);
    for (unsigned j = 0; j < Slots; ++j) {
      const unsigned r = rng() % 4;
      slot[j] = r == 0 ? 0 : (r == 1 ? tag : rng() & mask);
      w[j / per_word] |= slot[j] << ((j % per_word) * Bits);
    }
    std::uint32_t want = 0;
    for (unsigned j = 0; j < Slots; ++j)
      want |= static_cast<std::uint32_t>(slot[j] == tag) << j;
    std::uint32_t by_swar = 0;
    for (std::size_t k = 0; k < words; ++k)
      by_swar |= lanes::to_slots(lanes::match_lanes(w[k], tag)) << (k * per_word);
    ASSERT_EQ(by_swar, want);
    ASSERT_EQ(simd::slots(w, static_cast<std::uint32_t>(tag)), want)
        << Bits << "x" << Slots << " tag " << tag;
  }
}

TEST(simd_match, agrees_with_swar_and_a_slot_by_slot_reference) {
  check_simd<8, 2>();
  check_simd<8, 4>();
  check_simd<8, 8>();
  check_simd<16, 2>();
  check_simd<16, 4>();
  check_simd<16, 8>();
  check_simd<32, 2>();
  check_simd<32, 4>();
  check_simd<32, 8>();
  static_assert(!cd::simd_match<12, 4>::available && !cd::simd_match<4, 8>::available);
}
#endif

// ---------------------------------------------------------------------------------------------
// packed_tag_layout

template <unsigned Bits, unsigned Slots>
void check_layout_constants() {
  using L = cd::packed_tag_layout<Bits, Slots>;
  constexpr unsigned per_chunk = Bits == 32 ? 2 : (Bits >= 12 ? 4 : 8);
  static_assert(L::tags_per_chunk == (Slots < per_chunk ? Slots : per_chunk));
  static_assert(L::chunks * L::tags_per_chunk == Slots);
  static_assert(L::chunk_bits == Bits * L::tags_per_chunk && L::chunk_bits <= 64);
  static_assert(L::bucket_bits == Bits * Slots);
  static_assert(L::straddles == (64 % L::chunk_bits != 0));
  static_assert(L::max_tag == (u64{1} << Bits) - 1);
  static_assert(L::use_simd == (CCF_HAS_SSE2 && (Bits == 8 || Bits == 16 || Bits == 32)));
  static_assert((L::buckets_per_word_group * L::bucket_bits) % 64 == 0);
  for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{1000}}) {
    EXPECT_EQ(L::words_for(n), (n * L::bucket_bits + 63) / 64 + 1) << "one spare word";
    EXPECT_EQ(L::first_word(n), n * L::bucket_bits / 64);
  }
}

/// match/free/count/has/get/set on one bucket value against the slots it was built from.
template <unsigned Bits, unsigned Slots>
void check_bucket_queries() {
  using L = cd::packed_tag_layout<Bits, Slots>;
  std::mt19937_64 rng(Bits * 10 + Slots);
  for (int iter = 0; iter < 20000; ++iter) {
    const auto tag = static_cast<std::uint32_t>(rng() & L::max_tag);
    std::array<std::uint32_t, Slots> slot{};
    typename L::bucket b;
    for (unsigned j = 0; j < Slots; ++j) {
      const unsigned r = rng() % 3;
      slot[j] = r == 0 ? 0 : (r == 1 ? tag : static_cast<std::uint32_t>(rng() & L::max_tag));
      L::set(b, j, slot[j]);
    }
    // Overwrite one slot again: set must replace, not or, the old value.
    const unsigned j0 = rng() % Slots;
    L::set(b, j0, static_cast<std::uint32_t>(L::max_tag));
    L::set(b, j0, slot[j0]);
    std::uint32_t match = 0, free = 0;
    for (unsigned j = 0; j < Slots; ++j) {
      ASSERT_EQ(L::get(b, j), slot[j]);
      match |= static_cast<std::uint32_t>(slot[j] == tag) << j;
      free |= static_cast<std::uint32_t>(slot[j] == 0) << j;
    }
    ASSERT_EQ(L::match(b, tag), cd::slot_mask(match)) << Bits << "x" << Slots;
    ASSERT_EQ(L::free(b), cd::slot_mask(free));
    ASSERT_EQ(L::count(b, tag), static_cast<unsigned>(std::popcount(match)));
    ASSERT_EQ(L::has(b, tag), match != 0);
    ASSERT_EQ(L::free_count(b), static_cast<unsigned>(std::popcount(free)));
    const unsigned v = rng() % Slots;
    typename L::bucket e = b;
    L::erase(e, v);
    ASSERT_EQ(L::get(e, v), 0u);
    ASSERT_TRUE(L::free(e).test(v));
    for (unsigned j = 0; j < Slots; ++j) {
      if (j != v) {
        ASSERT_EQ(L::get(e, j), slot[j]);
      }
    }
  }
}

/// Bit k of a word array.
inline bool bit_at(const std::vector<u64>& w, std::size_t k) {
  return ((w[k / 64] >> (k % 64)) & 1U) != 0;
}

/// A mask of the bits of bucket i in a word array of `words` words.
inline std::vector<u64> bits_of_bucket(std::size_t words, std::size_t i, unsigned bucket_bits) {
  std::vector<u64> m(words, 0);
  for (std::size_t k = i * bucket_bits; k < (i + 1) * bucket_bits; ++k)
    m[k / 64] |= u64{1} << (k % 64);
  return m;
}

/// Random stores into a word array through WordPolicy: every bucket loads back as last stored,
/// every slot sits at bit (i * Slots + j) * Bits (the canonical form), and a store changes no
/// bit outside its own bucket.
template <unsigned Bits, unsigned Slots, class WordPolicy>
void check_word_array() {
  using L = cd::packed_tag_layout<Bits, Slots>;
  const std::size_t n = 67;  // odd, so the last bucket ends inside a word
  std::vector<u64> words(L::words_for(n), 0);
  std::vector<std::uint32_t> shadow(n * Slots, 0);
  std::mt19937_64 rng(Bits * 1000 + Slots);
  std::size_t straddling = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    const std::size_t i = rng() % n;
    const typename L::bucket old = L::template load<WordPolicy>(words.data(), i);
    typename L::bucket now = old;
    for (unsigned j = 0; j < Slots; ++j) {
      if (rng() % 2 != 0) L::set(now, j, static_cast<std::uint32_t>(rng() & L::max_tag));
    }
    const std::vector<u64> before = words;
    L::template store<WordPolicy>(words.data(), i, old, now);
    for (unsigned j = 0; j < Slots; ++j)
      shadow[i * Slots + j] = L::get(now, j);
    ASSERT_EQ((L::template load<WordPolicy>(words.data(), i)), now);
    const std::vector<u64> own = bits_of_bucket(words.size(), i, L::bucket_bits);
    for (std::size_t k = 0; k < words.size(); ++k)
      ASSERT_EQ((words[k] ^ before[k]) & ~own[k], 0u) << "bucket " << i << " changed word " << k;
    for (unsigned c = 0; c < L::chunks; ++c) {
      const std::size_t off = (i * L::chunks + c) * L::chunk_bits;
      straddling += off / 64 != (off + L::chunk_bits - 1) / 64;
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    const typename L::bucket b = L::template load<WordPolicy>(words.data(), i);
    for (unsigned j = 0; j < Slots; ++j) {
      ASSERT_EQ(L::get(b, j), shadow[i * Slots + j]) << i << "," << j;
      std::uint32_t canonical = 0;
      for (unsigned k = 0; k < Bits; ++k)
        canonical |= static_cast<std::uint32_t>(bit_at(words, (i * Slots + j) * Bits + k)) << k;
      ASSERT_EQ(canonical, shadow[i * Slots + j]);
    }
  }
  for (std::size_t k = n * L::bucket_bits; k < words.size() * 64; ++k)
    ASSERT_FALSE(bit_at(words, k)) << "bit " << k << " past the last bucket";
  if (L::straddles) {
    EXPECT_GT(straddling, 0u) << "no store exercised a chunk that straddles two words";
  } else {
    EXPECT_EQ(straddling, 0u);
  }
}

template <unsigned Bits, unsigned Slots>
void check_layout() {
  SCOPED_TRACE(testing::Message() << Bits << "-bit x " << Slots);
  check_layout_constants<Bits, Slots>();
  check_bucket_queries<Bits, Slots>();
  check_word_array<Bits, Slots, cd::plain_words>();
  check_word_array<Bits, Slots, cd::atomic_words>();
}

TEST(packed_tag_layout, four_bit_tags) {
  check_layout<4, 2>();
  check_layout<4, 4>();
  check_layout<4, 8>();
}
TEST(packed_tag_layout, eight_bit_tags) {
  check_layout<8, 2>();
  check_layout<8, 4>();
  check_layout<8, 8>();
}
TEST(packed_tag_layout, twelve_bit_tags_straddle_words) {
  static_assert(cd::packed_tag_layout<12, 2>::straddles &&
                cd::packed_tag_layout<12, 4>::straddles && cd::packed_tag_layout<12, 8>::straddles);
  check_layout<12, 2>();
  check_layout<12, 4>();
  check_layout<12, 8>();
}
TEST(packed_tag_layout, sixteen_bit_tags) {
  check_layout<16, 2>();
  check_layout<16, 4>();
  check_layout<16, 8>();
}
TEST(packed_tag_layout, thirty_two_bit_tags) {
  check_layout<32, 2>();
  check_layout<32, 4>();
  check_layout<32, 8>();
}

// A bucket table over the packed layout: zeroed, cache-line aligned with any allocator, and its
// load/store are the layout's.
TEST(bucket_table, packed_words_are_zeroed_aligned_and_round_trip) {
  using L = cd::packed_tag_layout<12, 4>;
  using table = cd::bucket_table<L, cd::atomic_words, std::allocator<u64>>;
  for (std::size_t n : {std::size_t{1}, std::size_t{5}, std::size_t{1001}}) {
    table t(n, std::allocator<u64>());
    ASSERT_EQ(t.num_buckets(), n);
    ASSERT_EQ(t.words().size(), L::words_for(n));
    ASSERT_EQ(t.size_in_bytes(), L::words_for(n) * 8);
    ASSERT_EQ(reinterpret_cast<std::uintptr_t>(t.words().data()) % ccf::cache_line_size, 0u);
    for (std::size_t k = 0; k < t.words().size(); ++k)
      ASSERT_EQ(t.load_word(k), 0u);
    std::vector<std::array<std::uint32_t, 4>> shadow(n);
    std::mt19937_64 rng(n);
    for (std::size_t i = 0; i < n; ++i) {
      const L::bucket old = t.load(i);
      L::bucket now = old;
      for (unsigned j = 0; j < 4; ++j) {
        shadow[i][j] = static_cast<std::uint32_t>(rng() & L::max_tag);
        L::set(now, j, shadow[i][j]);
      }
      t.store(i, old, now);
    }
    for (std::size_t i = 0; i < n; ++i) {
      for (unsigned j = 0; j < 4; ++j)
        ASSERT_EQ(L::get(t.load(i), j), shadow[i][j]);
    }
    table copy(t);
    ASSERT_EQ(copy.load(n - 1), t.load(n - 1));
    t.zero();
    for (std::size_t k = 0; k < t.words().size(); ++k)
      ASSERT_EQ(t.load_word(k), 0u);
    ASSERT_EQ(L::get(copy.load(0), 0), shadow[0][0]) << "a copy owns its words";
  }
}

// ---------------------------------------------------------------------------------------------
// payload_slot_layout (the store's index): only occupied slots match; a tombstone is free.

TEST(payload_slot_layout, matches_occupied_slots_and_counts_tombstones_as_free) {
  using L = cd::payload_slot_layout<16, 4>;
  L::bucket b;
  L::set(b, 0, L::make(0x1234, 7));
  L::set(b, 1, L::make(0x1234, L::max_payload));
  L::set(b, 2, L::make(0x4321, 9));
  EXPECT_EQ(L::payload_of(L::get(b, 1)), L::max_payload);
  EXPECT_EQ(L::tag_of(L::get(b, 1)), 0x1234u);
  EXPECT_EQ(L::status_of(L::get(b, 0)), u64{L::occupied});
  EXPECT_EQ(L::match(b, 0x1234), cd::slot_mask(0b0011));
  EXPECT_EQ(L::free(b), cd::slot_mask(0b1000));
  EXPECT_FALSE(L::has(b, 0)) << "an available slot is not a match for tag 0";
  L::erase(b, 0);
  EXPECT_EQ(L::status_of(L::get(b, 0)), u64{L::deleted});
  EXPECT_EQ(L::payload_of(L::get(b, 0)), 7u) << "a tombstone keeps its payload";
  EXPECT_EQ(L::match(b, 0x1234), cd::slot_mask(0b0010));
  EXPECT_EQ(L::free(b), cd::slot_mask(0b1001));
  EXPECT_EQ(L::free_count(b), 2u);
  L::vacate(b, 2);
  EXPECT_EQ(L::get(b, 2), 0u);
  EXPECT_EQ(L::count(b, 0x4321), 0u);
}

}  // namespace
