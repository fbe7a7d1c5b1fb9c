// ccf — concurrent cuckoo filters.
// detail/versioned_tag_layout.hpp: the lock-free filter's slot layout — one K-CAS word per
// bucket, holding its tags and a version counter.
//
//   bits 0 .. S*F-1     S tags of F bits, slot j in bits j*F .. j*F+F-1; tag 0 = empty slot
//   bits S*F .. 60      the bucket's version counter, 61 - S*F bits, advanced (mod 2^bits) by
//                       every change of the word
//   bit 61              the seal: set on every word while a snapshot is taken (save, clear);
//                       writers that meet it wait, readers read on (kcas_protocol.hpp)
//   bits 62, 63         reserved by the K-CAS (always 0 in a stored value)
//
// The default 12-bit x 4 layout has its tags in bits 0..47 and a 13-bit counter in bits 48..60;
// 8-bit x 4 leaves a 29-bit counter. Layouts need F in 4..16, S in 2..8 and S*F <= 48, so every
// counter has at least 13 bits (kcas_protocol.hpp explains what the counter width buys).
//
// A bucket is word i of an array of kcas_words, so a lookup touches at most two cache lines.
// Changes are made by the K-CAS protocol with cas / kcas on these words; store() is only for
// phases in which the caller has the table to itself (loading, bulk building, sealed clears).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "ccf/config.hpp"
#include "ccf/detail/kcas.hpp"
#include "ccf/detail/slot_mask.hpp"
#include "ccf/detail/tag_matching.hpp"

namespace ccf::detail {

/// Whether one K-CAS word can hold `slots` tags of `bits` bits, the seal bit and a version
/// counter of at least 13 bits.
constexpr bool versioned_layout_supported(unsigned bits, unsigned slots) noexcept {
  return bits >= 4 && bits <= 16 && slots >= 2 && slots <= 8 && bits * slots <= 48;
}

template <unsigned Bits, unsigned Slots>
struct versioned_tag_layout {
  static_assert(versioned_layout_supported(Bits, Slots),
                "ccf::lockfree_cuckoo_filter supports FingerprintBits 4..16 and SlotsPerBucket "
                "2..8 with FingerprintBits * SlotsPerBucket <= 48: a bucket is one 62-bit K-CAS "
                "word holding the tags, a seal bit and a version counter of at least 13 bits "
                "(e.g. 12 x 4, 8 x 4, 16 x 2)");

  static constexpr unsigned tag_bits = Bits;
  static constexpr unsigned slots = Slots;
  static constexpr bool versioned = true;
  static constexpr bool tag_only = true;
  static constexpr unsigned buckets_per_word_group = 1;
  static constexpr std::uint64_t max_tag = (std::uint64_t{1} << Bits) - 1;

  using word_type = kcas_word;
  using tag_type = std::uint32_t;
  using slot_type = std::uint32_t;
  using bucket = std::uint64_t;
  using lanes = swar<Bits, Slots>;

  static constexpr unsigned counter_shift = Bits * Slots;
  static constexpr unsigned counter_bits = 61 - counter_shift;
  static constexpr std::uint64_t tag_mask = lanes::word_mask;
  static constexpr std::uint64_t seal_bit = std::uint64_t{1} << 61;
  static constexpr std::uint64_t counter_mask = (seal_bit - 1) & ~tag_mask;
  static constexpr std::uint64_t counter_unit = std::uint64_t{1} << counter_shift;
  static_assert((tag_mask | counter_mask | seal_bit) == kcas_value_mask);

  static constexpr std::size_t words_for(std::size_t num_buckets) noexcept { return num_buckets; }
  static constexpr std::size_t first_word(std::size_t i) noexcept { return i; }

  template <class WordPolicy>
  static CCF_FORCEINLINE bucket load(const word_type* w, std::size_t i) noexcept {
    return kcas_load(w[i]);
  }
  /// Exclusive phases only: writes `now` as the next version of `old`, keeping old's seal.
  template <class WordPolicy>
  static void store(word_type* w, std::size_t i, const bucket& old, const bucket& now) noexcept {
    w[i].quiescent_store(next(old, now));
  }

  // ---- versions and the seal ----
  static constexpr std::uint64_t counter(bucket b) noexcept {
    return (b & counter_mask) >> counter_shift;
  }
  /// The word that replaces `old` when its tags become those of `now`: the counter advances by
  /// one (wrapping), the seal is kept.
  static constexpr bucket next(bucket old, bucket now) noexcept {
    return (now & tag_mask) | ((old + counter_unit) & counter_mask) | (old & seal_bit);
  }
  static constexpr bool sealed(bucket b) noexcept { return (b & seal_bit) != 0; }
  /// A word from its slots and counter (tests and diagnostics).
  static constexpr bucket make(const std::array<tag_type, Slots>& tags,
                               std::uint64_t counter_value) noexcept {
    bucket b = (counter_value << counter_shift) & counter_mask;
    for (unsigned j = 0; j < Slots; ++j)
      set(b, j, static_cast<slot_type>(tags[j] & max_tag));
    return b;
  }

  // ---- queries on a bucket value ----
  static CCF_FORCEINLINE slot_mask match(bucket b, tag_type tag) noexcept {
    return slot_mask(lanes::to_slots(lanes::match_lanes(b & tag_mask, tag)));
  }
  static CCF_FORCEINLINE bool has(bucket b, tag_type tag) noexcept {
    return lanes::has(b & tag_mask, tag);
  }
  static CCF_FORCEINLINE unsigned count(bucket b, tag_type tag) noexcept {
    return lanes::count(b & tag_mask, tag);
  }
  static CCF_FORCEINLINE slot_mask free(bucket b) noexcept { return match(b, 0); }
  static CCF_FORCEINLINE unsigned free_count(bucket b) noexcept { return count(b, 0); }
  static CCF_FORCEINLINE slot_type get(bucket b, unsigned j) noexcept {
    return static_cast<slot_type>(lanes::get(b, j));
  }
  static CCF_FORCEINLINE void set(bucket& b, unsigned j, slot_type v) noexcept {
    const unsigned shift = j * Bits;
    b = (b & ~(max_tag << shift)) | (static_cast<std::uint64_t>(v) << shift);
  }
  static CCF_FORCEINLINE void vacate(bucket& b, unsigned j) noexcept { set(b, j, 0); }
  static CCF_FORCEINLINE void erase(bucket& b, unsigned j) noexcept { set(b, j, 0); }
  static constexpr tag_type tag_of(slot_type v) noexcept { return v; }
  static constexpr slot_type slot_of(tag_type tag) noexcept { return tag; }
};

}  // namespace ccf::detail
