// ccf — concurrent cuckoo filters.
// detail/packed_tag_layout.hpp: the filters' slot layout — buckets of Slots bit-packed tags.
//
// A slot holds a tag of Bits bits (2 to 32; the filters offer 4, 8, 12, 16 and 32, the growing
// filter's layout others); tag 0 marks an empty slot. A bucket is split into `chunks` equal chunks
// of `tags_per_chunk` tags (the largest power of two of them that fits 64 bits, at most Slots); a
// chunk is what one SWAR operation (tag_matching.hpp) examines:
//
//   bits  slots  tags/chunk  chunk bits  chunks     bits  slots  tags/chunk  chunk bits  chunks
//    4    2/4/8    2/4/8      8/16/32      1         16   2/4/8    2/4/4     32/64/64    1/1/2
//    8    2/4/8    2/4/8     16/32/64      1         32   2/4/8    2/2/2     64/64/64    1/2/4
//   12    2/4/8    2/4/4     24/48/48    1/1/2
//
// The table is one bit array of chunks laid end to end (no padding between buckets), so a bucket
// costs exactly Bits * Slots bits: 12-bit and 4-bit tags are bit-packed. Chunks of 8/16/32/64
// bits never straddle a 64-bit word; chunks of 24 and 48 bits may, and are then read from two
// adjacent words (the table keeps one spare word at its end so that read never runs past it).
// This word array is also the payload of ccf's filter files (serialization.hpp): every tag
// layout saves and loads through it.
//
// A bucket value is a copy of its chunks. Queries on it (match, free, count) are SSE2 compares for
// 8/16/32-bit tags and SWAR over whole chunks otherwise, never a loop over slots. A store writes
// old ^ new into the words through the word policy, so with atomic words two writers that hold
// the locks of different buckets sharing a word both land: the lock policies lock groups of
// buckets_per_word_group buckets together, so a word has one writer at a time.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <numeric>

#include "ccf/config.hpp"
#include "ccf/detail/slot_mask.hpp"
#include "ccf/detail/tag_matching.hpp"

namespace ccf::detail {

/// The fingerprint widths ccf's filters offer.
constexpr bool is_filter_width(unsigned bits) noexcept {
  return bits == 4 || bits == 8 || bits == 12 || bits == 16 || bits == 32;
}

/// 64-bit words of a table of bit-packed tags, `buckets` x `slots` of `bits` bits, and a spare
/// word: packed_tag_layout's table, and the table of every static filter's file. `Int` is
/// std::size_t, or a wider type for the fields of a header not checked yet.
template <class Int>
constexpr Int packed_words(Int buckets, Int slots, Int bits) noexcept {
  return (buckets * slots * bits + 63) / 64 + 1;
}

template <unsigned Bits, unsigned Slots>
struct packed_tag_layout {
  static_assert(Bits >= 2 && Bits <= 32, "slots of 2 to 32 bits");
  static_assert(Slots == 2 || Slots == 4 || Slots == 8, "SlotsPerBucket must be 2, 4 or 8");

  static constexpr unsigned tag_bits = Bits;
  static constexpr unsigned slots = Slots;
  static constexpr bool versioned = false;
  static constexpr bool tag_only = true;  // a slot is its tag (the thesis's table API applies)
  static constexpr unsigned max_tags_per_chunk = std::bit_floor(64u / Bits);
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
  static constexpr std::uint64_t max_tag = (std::uint64_t{1} << Bits) - 1;

  using word_type = std::uint64_t;
  using tag_type = std::uint32_t;
  using slot_type = std::uint32_t;
  using chunk_ops = swar<Bits, tags_per_chunk>;
  using simd = simd_match<Bits, Slots>;
  static constexpr bool use_simd = simd::available;

  struct bucket {
    std::array<std::uint64_t, chunks> chunk{};
    friend constexpr bool operator==(const bucket&, const bucket&) noexcept = default;
  };

  /// 64-bit words for `num_buckets` buckets, including the spare word at the end.
  static constexpr std::size_t words_for(std::size_t num_buckets) noexcept {
    return packed_words<std::size_t>(num_buckets, Slots, Bits);
  }
  /// The first word of bucket i (for prefetching).
  static constexpr std::size_t first_word(std::size_t i) noexcept {
    return (i * chunks * chunk_bits) >> 6;
  }

  template <class WordPolicy>
  static CCF_FORCEINLINE bucket load(const word_type* w, std::size_t i) noexcept {
    bucket b;
    for (unsigned c = 0; c < chunks; ++c)
      b.chunk[c] = load_chunk<WordPolicy>(w, i * chunks + c);
    return b;
  }
  template <class WordPolicy>
  static CCF_FORCEINLINE void store(word_type* w, std::size_t i, const bucket& old,
                                    const bucket& now) noexcept {
    for (unsigned c = 0; c < chunks; ++c) {
      const std::uint64_t delta = old.chunk[c] ^ now.chunk[c];
      if (delta != 0) flip_chunk<WordPolicy>(w, i * chunks + c, delta);
    }
  }

  // ---- queries on a bucket value ----
  static CCF_FORCEINLINE slot_mask match(const bucket& b, tag_type tag) noexcept {
    if constexpr (use_simd) {
      return slot_mask(simd::slots(b.chunk, tag));
    } else {
      std::uint32_t m = 0;
      for (unsigned c = 0; c < chunks; ++c)
        m |= chunk_ops::to_slots(chunk_ops::match_lanes(b.chunk[c], tag)) << (c * tags_per_chunk);
      return slot_mask(m);
    }
  }
  /// match(b, tag).any(), without building the mask.
  static CCF_FORCEINLINE bool has(const bucket& b, tag_type tag) noexcept {
    if constexpr (use_simd) {
      return simd::slots(b.chunk, tag) != 0;
    } else {
      std::uint64_t any = 0;
      for (unsigned c = 0; c < chunks; ++c)
        any |= chunk_ops::match_lanes(b.chunk[c], tag);
      return any != 0;
    }
  }
  /// match(b, tag).count(), without building the mask.
  static CCF_FORCEINLINE unsigned count(const bucket& b, tag_type tag) noexcept {
    if constexpr (use_simd) {
      return popcount_slots(simd::slots(b.chunk, tag));
    } else {
      unsigned n = 0;
      for (unsigned c = 0; c < chunks; ++c)
        n += chunk_ops::count(b.chunk[c], tag);
      return n;
    }
  }
  static CCF_FORCEINLINE slot_mask free(const bucket& b) noexcept { return match(b, 0); }
  static CCF_FORCEINLINE unsigned free_count(const bucket& b) noexcept { return count(b, 0); }

  /// The chunk slot j is in (j < Slots; the mask only tells the compiler so: chunks is 1, 2 or 4).
  static constexpr unsigned chunk_of(unsigned j) noexcept {
    return (j / tags_per_chunk) & (chunks - 1);
  }
  static CCF_FORCEINLINE slot_type get(const bucket& b, unsigned j) noexcept {
    return static_cast<slot_type>(chunk_ops::get(b.chunk[chunk_of(j)], j % tags_per_chunk));
  }
  static CCF_FORCEINLINE void set(bucket& b, unsigned j, slot_type v) noexcept {
    const unsigned shift = (j % tags_per_chunk) * Bits;
    std::uint64_t& c = b.chunk[chunk_of(j)];
    c = (c & ~(chunk_ops::lane_mask << shift)) | (static_cast<std::uint64_t>(v) << shift);
  }
  /// Empties slot j (after its item moved away, or when the item is erased).
  static CCF_FORCEINLINE void vacate(bucket& b, unsigned j) noexcept { set(b, j, 0); }
  static CCF_FORCEINLINE void erase(bucket& b, unsigned j) noexcept { set(b, j, 0); }
  static constexpr tag_type tag_of(slot_type v) noexcept { return v; }
  static constexpr slot_type slot_of(tag_type tag) noexcept { return tag; }

  // ---- the canonical (file) form: the packed tag array itself ----
  static constexpr std::size_t canonical_words(std::size_t num_buckets) noexcept {
    return words_for(num_buckets);
  }

 private:
  template <class WordPolicy>
  static CCF_FORCEINLINE std::uint64_t load_chunk(const word_type* w, std::size_t k) noexcept {
    // A 64-bit chunk is word k (written so, not as (k * 64) >> 6, which the compiler must keep
    // as two shifts for the bits k * 64 would lose).
    if constexpr (chunk_bits == 64) return WordPolicy::load(w[k]);
    const std::size_t off = k * chunk_bits;
    const std::size_t wi = off >> 6;
    const unsigned s = static_cast<unsigned>(off & 63);
    if constexpr (!straddles) {
      return (WordPolicy::load(w[wi]) >> s) & chunk_ops::word_mask;
    } else {
      const std::uint64_t lo = WordPolicy::load(w[wi]);
      const std::uint64_t hi = WordPolicy::load(w[wi + 1]);
      // (hi << 1) << (63 - s) is hi << (64 - s) without the undefined shift by 64 when s == 0.
      return ((lo >> s) | ((hi << 1) << (63 - s))) & chunk_ops::word_mask;
    }
  }
  template <class WordPolicy>
  static CCF_FORCEINLINE void flip_chunk(word_type* w, std::size_t k,
                                         std::uint64_t delta) noexcept {
    if constexpr (chunk_bits == 64) {
      WordPolicy::flip(w[k], delta);
      return;
    }
    const std::size_t off = k * chunk_bits;
    const std::size_t wi = off >> 6;
    const unsigned s = static_cast<unsigned>(off & 63);
    WordPolicy::flip(w[wi], delta << s);
    if constexpr (straddles) {
      const std::uint64_t high = (delta >> 1) >> (63 - s);
      if (high != 0) WordPolicy::flip(w[wi + 1], high);
    }
  }
};

}  // namespace ccf::detail
