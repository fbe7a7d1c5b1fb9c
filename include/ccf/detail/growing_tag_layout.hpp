// ccf — concurrent cuckoo filters.
// detail/growing_tag_layout.hpp: the growing filter's slot layout — fingerprints that give up one
// bit each time the table doubles.
//
// A slot is W bits (12 to 32), bit-packed as packed_tag_layout packs them, in two parts:
//
//   bits 0 .. 7        the anchor: 8 bits of the key's hash, fixed for the entry's life; the
//                      alternate bucket is computed from it (alt(i, anchor), indexer.hpp)
//   bits 8 .. W-1      the fingerprint, variable length: its L bits at the top, then a 1 (the
//                      marker), then zeros. L = W - 9 when the entry is made; every doubling of
//                      the table moves the fingerprint's top bit into the bucket address and
//                      shifts the rest up, so L shrinks by one (L = 0: only the marker is left)
//
// An empty slot is 0 (a used slot always has its marker). A query carries its full fingerprint
// (W - 9 bits, marker at bit 8) and its anchor; it matches a slot when the anchors are equal and
// the slot's L fingerprint bits equal the query's top L bits: the bits the table has not yet used
// for addressing are compared, the ones it has are implied by the bucket. Matching goes slot by
// slot (each slot has its own length; a scalar loop of at most 8 slots, no branch).
//
// Erasing removes the longest matching entry (the most specific): if it belongs to another key
// than the one erased, that key's bits extend the erased key's own (shorter) entry, which then
// still matches it — no erase ever makes another key a false negative (the rule of InfiniFilter,
// Dayan et al. 2023).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "ccf/config.hpp"
#include "ccf/detail/packed_tag_layout.hpp"
#include "ccf/detail/slot_mask.hpp"

namespace ccf::detail {

template <unsigned Width, unsigned Slots>
struct growing_tag_layout : packed_tag_layout<Width, Slots> {
  using packed = packed_tag_layout<Width, Slots>;
  using typename packed::bucket;
  using typename packed::slot_type;
  using typename packed::tag_type;
  static_assert(Width >= 12 && Width <= 32, "growing slots of 12 to 32 bits");

  static constexpr unsigned anchor_bits = 8;
  /// The indexer hashes the anchor for the alternate bucket (tag_of gives it).
  static constexpr unsigned tag_bits = anchor_bits;
  static constexpr bool tag_only = false;
  static constexpr unsigned fingerprint_bits = Width - anchor_bits - 1;  // when made
  static constexpr std::uint64_t anchor_mask = (std::uint64_t{1} << anchor_bits) - 1;
  static constexpr std::uint64_t var_mask = (std::uint64_t{1} << (Width - anchor_bits)) - 1;
  static constexpr std::uint64_t top_marker = std::uint64_t{1} << (Width - anchor_bits - 1);

  /// A new entry (and a query): the fingerprint's bits, the marker, the anchor.
  static constexpr slot_type make(std::uint64_t fingerprint, std::uint64_t anchor) noexcept {
    const std::uint64_t var = ((fingerprint & (top_marker - 1)) << 1) | 1;
    return static_cast<slot_type>((var << anchor_bits) | (anchor & anchor_mask));
  }
  static constexpr tag_type tag_of(slot_type v) noexcept {
    return static_cast<tag_type>(v & anchor_mask);
  }
  /// Fingerprint bits the entry still has (-1: an empty slot).
  static constexpr int length(slot_type v) noexcept {
    const std::uint64_t var = static_cast<std::uint64_t>(v) >> anchor_bits;
    if (var == 0) return -1;
    return static_cast<int>(Width - anchor_bits - 1) - std::countr_zero(var);
  }

  /// Whether slot v holds an entry that query q matches.
  static CCF_FORCEINLINE constexpr bool matches(std::uint64_t v, std::uint64_t q) noexcept {
    const std::uint64_t var = v >> anchor_bits;
    const std::uint64_t marker = var & (~var + 1);
    const std::uint64_t compared = ((~((marker << 1) - 1) & var_mask) << anchor_bits) | anchor_mask;
    return var != 0 && ((v ^ q) & compared) == 0;
  }
  static CCF_FORCEINLINE slot_mask match(const bucket& b, tag_type q) noexcept {
    std::uint32_t m = 0;
    for (unsigned j = 0; j < Slots; ++j)
      m |= static_cast<std::uint32_t>(matches(packed::get(b, j), q)) << j;
    return slot_mask(m);
  }
  static CCF_FORCEINLINE bool has(const bucket& b, tag_type q) noexcept {
    return match(b, q).any();
  }
  static CCF_FORCEINLINE unsigned count(const bucket& b, tag_type q) noexcept {
    return match(b, q).count();
  }
  /// Of two matching entries, whether a is to be erased rather than b (the longer one).
  static constexpr bool erase_before(slot_type a, slot_type b) noexcept {
    return length(a) > length(b);
  }

  /// The entry as it is after the table doubles: `bit` gets the fingerprint bit that now picks
  /// the entry's half; an entry with no fingerprint bit left goes to both halves (`both`).
  static constexpr slot_type split(slot_type v, unsigned& bit, bool& both) noexcept {
    const std::uint64_t var = static_cast<std::uint64_t>(v) >> anchor_bits;
    both = var == top_marker;
    if (both) return v;
    bit = static_cast<unsigned>(var >> (Width - anchor_bits - 1));
    return static_cast<slot_type>((((var << 1) & var_mask) << anchor_bits) | (v & anchor_mask));
  }
};

}  // namespace ccf::detail
