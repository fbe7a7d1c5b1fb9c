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
#pragma once

#include <bit>
#include <cstdint>

#include "ccf/config.hpp"

namespace ccf::detail {

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
    return static_cast<unsigned>(std::popcount(match_lanes(x, tag)));
  }
  /// Lane index of the lowest set top bit of a lane mask (mask must be non-zero).
  static CCF_FORCEINLINE constexpr unsigned first_lane(std::uint64_t lane_bits) noexcept {
    return static_cast<unsigned>(std::countr_zero(lane_bits)) / Bits;
  }
  static CCF_FORCEINLINE constexpr std::uint64_t get(std::uint64_t x, unsigned lane) noexcept {
    return (x >> (lane * Bits)) & lane_mask;
  }
};

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
