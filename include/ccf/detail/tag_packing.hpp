// ccf — concurrent cuckoo filters.
// detail/tag_packing.hpp: how a bucket of SlotsPerBucket tags of FingerprintBits bits is packed.
//
// A bucket is split into `chunks` equal chunks of `tags_per_chunk` tags; a chunk is at most 64 bits
// and is what one SWAR operation (tag_matching.hpp) examines:
//
//   bits  slots  tags/chunk  chunk bits  chunks     bits  slots  tags/chunk  chunk bits  chunks
//    4    2/4/8    2/4/8      8/16/32      1         16   2/4/8    2/4/4     32/64/64    1/1/2
//    8    2/4/8    2/4/8     16/32/64      1         32   2/4/8    2/2/2     64/64/64    1/2/4
//   12    2/4/8    2/4/4     24/48/48    1/1/2
//
// The table is one bit array of chunks laid end to end (no padding between buckets), so a bucket
// costs exactly bits * slots bits: 12-bit and 4-bit tags are bit-packed. Chunks of 8/16/32/64 bits
// never straddle a 64-bit word; chunks of 24 and 48 bits may, and are then read from two adjacent
// words (the table keeps one spare word at its end so that read never runs past it).
#pragma once

#include <cstdint>
#include <numeric>

namespace ccf::detail {

template <unsigned Bits, unsigned Slots>
struct tag_packing {
  static_assert(Bits == 4 || Bits == 8 || Bits == 12 || Bits == 16 || Bits == 32,
                "FingerprintBits must be 4, 8, 12, 16 or 32");
  static_assert(Slots == 2 || Slots == 4 || Slots == 8, "SlotsPerBucket must be 2, 4 or 8");

  static constexpr unsigned bits = Bits;
  static constexpr unsigned slots = Slots;
  static constexpr unsigned max_tags_per_chunk = Bits == 32 ? 2 : (Bits >= 12 ? 4 : 8);
  static constexpr unsigned tags_per_chunk =
      Slots < max_tags_per_chunk ? Slots : max_tags_per_chunk;
  static constexpr unsigned chunks = Slots / tags_per_chunk;
  static constexpr unsigned chunk_bits = Bits * tags_per_chunk;
  static constexpr unsigned bucket_bits = Bits * Slots;
  /// Buckets in the smallest run of whole buckets that also fills whole 64-bit words. Two buckets
  /// that share a word are always in the same group (lock policies lock groups, not buckets).
  static constexpr unsigned buckets_per_word_group = std::lcm(bucket_bits, 64u) / bucket_bits;
  /// True when a chunk can straddle two 64-bit words.
  static constexpr bool straddles = (64 % chunk_bits) != 0;

  using tag_type = std::uint32_t;
  static constexpr tag_type empty_tag = 0;
  static constexpr std::uint64_t max_tag = (std::uint64_t{1} << Bits) - 1;

  /// 64-bit words needed for `num_buckets` buckets, including the spare word at the end.
  static constexpr std::uint64_t words_for(std::uint64_t num_buckets) noexcept {
    return (num_buckets * chunks * chunk_bits + 63) / 64 + 1;
  }
};

}  // namespace ccf::detail
