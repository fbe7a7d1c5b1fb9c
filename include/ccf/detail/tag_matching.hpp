// ccf — concurrent cuckoo filters.
// detail/tag_matching.hpp: bit-parallel (SWAR) tag matching over one 64-bit word.
//
// A chunk is up to 64 bits holding `Lanes` tags of `Bits` bits each, lane 0 in the low bits. Every
// query below looks at all lanes at once with a handful of word operations; nothing loops slot
// by slot. This generalises the thesis's hasvalue4/8/12/16 to any lane width that divides into a
// word, and makes the per-lane test exact, so the same masks also count matches and locate the
// first free or matching slot.
//
// Exact zero-lane test (no borrow between lanes): with low = the lanes' low Bits-1 bits,
//   y = (x & low) + low        -> a lane's top bit is set iff the lane's low bits are non-zero
//   zero_lanes(x) = ~(y | x | low) & top
// so the top bit of a lane is set exactly when that whole lane is zero.
//
// SIMD. For tags of 8, 16 and 32 bits (whole bytes), simd_match compares a whole bucket of up to
// 256 bits with SSE2 (part of every x86-64) and returns one bit per matching slot; buckets of
// 16-bit x 8 and 32-bit tags span several words, where this is about three times faster than
// SWAR per word, and even a one-word bucket gains in builds without -march=native (measured on
// in-cache buckets). 4- and 12-bit lanes are not byte-aligned and
// stay with SWAR.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "ccf/config.hpp"

#if CCF_HAS_SSE2
#include <emmintrin.h>
#endif

namespace ccf::detail {

/// Population count. std::popcount becomes a library call on x86-64 builds without -mpopcnt;
/// this falls back to the branch-free bit-slicing count there.
CCF_FORCEINLINE constexpr unsigned popcount64(std::uint64_t x) noexcept {
#if defined(__POPCNT__) || !CCF_X86_64
  return static_cast<unsigned>(std::popcount(x));
#else
  x = x - ((x >> 1) & 0x5555555555555555ULL);
  x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
  return static_cast<unsigned>((x * 0x0101010101010101ULL) >> 56);
#endif
}

/// Population count of a slot mask (at most 8 bits): two 4-bit look-ups in one constant, fewer
/// instructions than popcount64 where that is not one instruction (x86-64 without -mpopcnt).
CCF_FORCEINLINE constexpr unsigned popcount_slots(std::uint32_t mask) noexcept {
  constexpr std::uint64_t nibble_counts = 0x4332322132212110ULL;  // nibble i: popcount(i)
  return static_cast<unsigned>(((nibble_counts >> ((mask & 15U) * 4)) & 15U) +
                               ((nibble_counts >> (((mask >> 4) & 15U) * 4)) & 15U));
}

template <unsigned Bits, unsigned Lanes>
struct swar {
  static_assert(Bits >= 2 && Bits <= 32, "lane width out of range");
  static_assert(Lanes >= 1 && Bits * Lanes <= 64, "lanes must fit one word");

  static constexpr unsigned bits = Bits;
  static constexpr unsigned lanes = Lanes;
  static constexpr unsigned used_bits = Bits * Lanes;

  static constexpr std::uint64_t lane_mask = (std::uint64_t{1} << Bits) - 1;
  static constexpr std::uint64_t word_mask =
      used_bits == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << used_bits) - 1;

  static constexpr std::uint64_t repeat(std::uint64_t v) noexcept {
    std::uint64_t r = 0;
    for (unsigned i = 0; i < Lanes; ++i)
      r |= v << (i * Bits);
    return r;
  }

  static constexpr std::uint64_t ones = repeat(1);  // lowest bit of each lane
  static constexpr std::uint64_t top = repeat(std::uint64_t{1} << (Bits - 1));  // highest bit
  static constexpr std::uint64_t low = repeat(lane_mask >> 1);  // all but the highest

  /// Top bit of each lane set iff that lane of `x` is zero.
  static CCF_FORCEINLINE constexpr std::uint64_t zero_lanes(std::uint64_t x) noexcept {
    const std::uint64_t y = (x & low) + low;
    return ~(y | x | low) & top;
  }
  /// Top bit of each lane set iff that lane of `x` equals `tag`.
  static CCF_FORCEINLINE constexpr std::uint64_t match_lanes(std::uint64_t x,
                                                             std::uint64_t tag) noexcept {
    return zero_lanes(x ^ (tag * ones));
  }
  static CCF_FORCEINLINE constexpr bool has(std::uint64_t x, std::uint64_t tag) noexcept {
    return match_lanes(x, tag) != 0;
  }
  static CCF_FORCEINLINE constexpr unsigned count(std::uint64_t x, std::uint64_t tag) noexcept {
    return count_lanes(match_lanes(x, tag));
  }
  /// Number of lanes whose top bit is set in a lane mask: one shift, one multiply (the per-lane
  /// ones add up in the top lane; at most 16 lanes, so the sum fits a lane of 4+ bits).
  static CCF_FORCEINLINE constexpr unsigned count_lanes(std::uint64_t lane_bits) noexcept {
    return static_cast<unsigned>((((lane_bits >> (Bits - 1)) * ones) >> ((Lanes - 1) * Bits)) &
                                 lane_mask);
  }
  /// Lane index of the lowest set top bit of a lane mask (mask must be non-zero).
  static CCF_FORCEINLINE constexpr unsigned first_lane(std::uint64_t lane_bits) noexcept {
    return static_cast<unsigned>(std::countr_zero(lane_bits)) / Bits;
  }
  static CCF_FORCEINLINE constexpr std::uint64_t get(std::uint64_t x, unsigned lane) noexcept {
    return (x >> (lane * Bits)) & lane_mask;
  }
  /// A lane mask (top bit of each lane) as one bit per lane: bit k set iff lane k's top bit is.
  /// With Bits > Lanes one multiply gathers the bits: after the shift, bit k sits at k * Bits,
  /// and the term k of the multiplier sum_j 2^(j (Bits - 1)) with j = Lanes - 1 - k moves it to
  /// (Lanes - 1)(Bits - 1) + k; since Bits - 1 >= Lanes no two terms share a position, so
  /// nothing carries (tag_matching_test checks every pattern). Narrower lanes take a loop.
  static CCF_FORCEINLINE constexpr std::uint32_t to_slots(std::uint64_t lane_bits) noexcept {
    const std::uint64_t y = lane_bits >> (Bits - 1);
    if constexpr (Bits > Lanes) {
      constexpr std::uint64_t gather = [] {
        std::uint64_t m = 0;
        for (unsigned j = 0; j < Lanes; ++j)
          m |= std::uint64_t{1} << (j * (Bits - 1));
        return m;
      }();
      constexpr unsigned shift = (Lanes - 1) * (Bits - 1);
      return static_cast<std::uint32_t>(((y * gather) >> shift) &
                                        ((std::uint64_t{1} << Lanes) - 1));
    } else {
      std::uint32_t r = 0;
      for (unsigned k = 0; k < Lanes; ++k)
        r |= static_cast<std::uint32_t>((y >> (k * Bits)) & 1U) << k;
      return r;
    }
  }
};

#if CCF_HAS_SSE2
/// Whole-bucket SSE2 matching for byte-aligned tags: slots(words, tag) has bit j set when slot j
/// of the bucket equals `tag`. The comparison results are narrowed to one byte per slot with
/// saturating packs before the byte mask is taken, so the mask has one bit per slot.
template <unsigned Bits, unsigned Slots>
struct simd_match {
  static constexpr bool available = (Bits == 8 || Bits == 16 || Bits == 32) && Bits * Slots <= 256;
  static constexpr std::uint32_t valid = (std::uint32_t{1} << Slots) - 1;

  static CCF_FORCEINLINE __m128i broadcast(std::uint32_t tag) noexcept {
    if constexpr (Bits == 8) return _mm_set1_epi8(static_cast<char>(tag));
    if constexpr (Bits == 16) return _mm_set1_epi16(static_cast<short>(tag));
    if constexpr (Bits == 32) return _mm_set1_epi32(static_cast<int>(tag));
  }
  static CCF_FORCEINLINE __m128i equal(__m128i v, __m128i t) noexcept {
    if constexpr (Bits == 8) return _mm_cmpeq_epi8(v, t);
    if constexpr (Bits == 16) return _mm_cmpeq_epi16(v, t);
    if constexpr (Bits == 32) return _mm_cmpeq_epi32(v, t);
  }
  /// One bit per slot from the lane-wise comparison results of up to 16 slots.
  static CCF_FORCEINLINE std::uint32_t narrow(__m128i lo, __m128i hi) noexcept {
    if constexpr (Bits == 8) return static_cast<std::uint32_t>(_mm_movemask_epi8(lo));
    if constexpr (Bits == 16) {
      return static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_packs_epi16(lo, hi)));
    }
    if constexpr (Bits == 32) {
      const __m128i half = _mm_packs_epi32(lo, hi);
      return static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_packs_epi16(half, half)));
    }
  }
  template <std::size_t Words>
  static CCF_FORCEINLINE std::uint32_t slots(const std::array<std::uint64_t, Words>& w,
                                             std::uint32_t tag) noexcept {
    const __m128i t = broadcast(tag);
    if constexpr (Words == 1) {
      const __m128i e = equal(_mm_cvtsi64_si128(static_cast<long long>(w[0])), t);
      return narrow(e, e) & valid;
    } else if constexpr (Words == 2) {
      const __m128i e =
          equal(_mm_set_epi64x(static_cast<long long>(w[1]), static_cast<long long>(w[0])), t);
      return narrow(e, e) & valid;
    } else {
      static_assert(Words == 4, "buckets of at most four words");
      const __m128i lo =
          equal(_mm_set_epi64x(static_cast<long long>(w[1]), static_cast<long long>(w[0])), t);
      const __m128i hi =
          equal(_mm_set_epi64x(static_cast<long long>(w[3]), static_cast<long long>(w[2])), t);
      return narrow(lo, hi) & valid;
    }
  }
};
#else
template <unsigned Bits, unsigned Slots>
struct simd_match {
  static constexpr bool available = false;
};
#endif

// The thesis's named predicates, for the 4-slot words it describes.
constexpr bool hasvalue4(std::uint64_t v, std::uint64_t tag) noexcept {
  return swar<4, 4>::has(v, tag);
}
constexpr bool hasvalue8(std::uint64_t v, std::uint64_t tag) noexcept {
  return swar<8, 4>::has(v, tag);
}
constexpr bool hasvalue12(std::uint64_t v, std::uint64_t tag) noexcept {
  return swar<12, 4>::has(v, tag);
}
constexpr bool hasvalue16(std::uint64_t v, std::uint64_t tag) noexcept {
  return swar<16, 4>::has(v, tag);
}

}  // namespace ccf::detail
