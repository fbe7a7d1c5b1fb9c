// ccf — concurrent cuckoo filters.
// detail/payload_slot_layout.hpp: buckets whose slots carry a payload beside the tag — the
// key-value store's index (the seed design's {tag, status, offset} slots).
//
// A slot is one 64-bit word:
//
//   bits 0 .. T-1        tag (T = TagBits), never 0 in a used slot
//   bits T .. T+1        status: 0 available (never used), 1 occupied, 2 deleted
//   bits T+2 .. 63       payload (62 - T bits; the store keeps a log offset there)
//
// A bucket is Slots consecutive words. A slot is free for an insert unless it is occupied;
// erase() marks a slot deleted and keeps its tag and payload (a tombstone the store can count),
// while an item that moves to its other bucket leaves an available slot behind. Matching compares
// tag and status of every slot at once (the loop over at most 8 words is unrolled and branch
// free), and returns every occupied slot with the tag: the caller tells items with equal tags
// apart by their payloads.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "ccf/config.hpp"
#include "ccf/detail/slot_mask.hpp"

namespace ccf::detail {

template <unsigned TagBits, unsigned Slots>
struct payload_slot_layout {
  static_assert(TagBits >= 8 && TagBits <= 32, "payload slots hold tags of 8 to 32 bits");
  static_assert(Slots == 2 || Slots == 4 || Slots == 8, "2, 4 or 8 slots per bucket");

  static constexpr unsigned tag_bits = TagBits;
  static constexpr unsigned slots = Slots;
  static constexpr bool versioned = false;
  static constexpr bool tag_only = false;
  static constexpr unsigned buckets_per_word_group = 1;
  static constexpr unsigned payload_bits = 62 - TagBits;
  static constexpr std::uint64_t max_tag = (std::uint64_t{1} << TagBits) - 1;
  static constexpr std::uint64_t max_payload = (std::uint64_t{1} << payload_bits) - 1;

  enum status : std::uint64_t { available = 0, occupied = 1, deleted = 2 };
  static constexpr std::uint64_t status_mask = std::uint64_t{3} << TagBits;
  static constexpr std::uint64_t key_mask = max_tag | status_mask;

  using word_type = std::uint64_t;
  using tag_type = std::uint32_t;
  using slot_type = std::uint64_t;
  struct bucket {
    std::array<std::uint64_t, Slots> slot{};
    friend constexpr bool operator==(const bucket&, const bucket&) noexcept = default;
  };

  static constexpr std::size_t words_for(std::size_t num_buckets) noexcept {
    return num_buckets * Slots;
  }
  static constexpr std::size_t first_word(std::size_t i) noexcept { return i * Slots; }

  /// An occupied slot holding `tag` and `payload` (payload <= max_payload).
  static constexpr slot_type make(tag_type tag, std::uint64_t payload) noexcept {
    return tag | (std::uint64_t{occupied} << TagBits) | (payload << (TagBits + 2));
  }
  static constexpr std::uint64_t payload_of(slot_type v) noexcept { return v >> (TagBits + 2); }
  static constexpr std::uint64_t status_of(slot_type v) noexcept {
    return (v & status_mask) >> TagBits;
  }

  template <class WordPolicy>
  static CCF_FORCEINLINE bucket load(const word_type* w, std::size_t i) noexcept {
    bucket b;
    for (unsigned j = 0; j < Slots; ++j)
      b.slot[j] = WordPolicy::load(w[i * Slots + j]);
    return b;
  }
  template <class WordPolicy>
  static CCF_FORCEINLINE void store(word_type* w, std::size_t i, const bucket& old,
                                    const bucket& now) noexcept {
    for (unsigned j = 0; j < Slots; ++j) {
      if (old.slot[j] != now.slot[j]) WordPolicy::store(w[i * Slots + j], now.slot[j]);
    }
  }

  static CCF_FORCEINLINE slot_mask match(const bucket& b, tag_type tag) noexcept {
    const std::uint64_t want = tag | (std::uint64_t{occupied} << TagBits);
    std::uint32_t m = 0;
    for (unsigned j = 0; j < Slots; ++j)
      m |= static_cast<std::uint32_t>((b.slot[j] & key_mask) == want) << j;
    return slot_mask(m);
  }
  static CCF_FORCEINLINE bool has(const bucket& b, tag_type tag) noexcept {
    return match(b, tag).any();
  }
  static CCF_FORCEINLINE unsigned count(const bucket& b, tag_type tag) noexcept {
    return match(b, tag).count();
  }
  static CCF_FORCEINLINE slot_mask free(const bucket& b) noexcept {
    std::uint32_t m = 0;
    for (unsigned j = 0; j < Slots; ++j)
      m |= static_cast<std::uint32_t>(status_of(b.slot[j]) != occupied) << j;
    return slot_mask(m);
  }
  static CCF_FORCEINLINE unsigned free_count(const bucket& b) noexcept { return free(b).count(); }
  static CCF_FORCEINLINE slot_type get(const bucket& b, unsigned j) noexcept { return b.slot[j]; }
  static CCF_FORCEINLINE void set(bucket& b, unsigned j, slot_type v) noexcept { b.slot[j] = v; }
  static CCF_FORCEINLINE void vacate(bucket& b, unsigned j) noexcept { b.slot[j] = 0; }
  static CCF_FORCEINLINE void erase(bucket& b, unsigned j) noexcept {
    b.slot[j] = (b.slot[j] & ~status_mask) | (std::uint64_t{deleted} << TagBits);
  }
  static constexpr tag_type tag_of(slot_type v) noexcept {
    return static_cast<tag_type>(v & max_tag);
  }
};

}  // namespace ccf::detail
