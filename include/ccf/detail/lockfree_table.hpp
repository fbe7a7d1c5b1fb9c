// ccf — concurrent cuckoo filters.
// detail/lockfree_table.hpp: the lock-free filter's bucket word format and the table of words.
//
// One bucket is one kcas_word (detail/kcas.hpp), so every change of a bucket is one single-word
// CAS and a relocation (two buckets) is one 2-word K-CAS:
//
//   bits 0 .. S*F-1     S tags of F bits, slot j in bits j*F .. j*F+F-1; tag 0 = empty slot
//   bits S*F .. 61      the bucket's version counter, 62 - S*F bits, advanced (mod 2^bits) by
//                       every change of the word
//   bits 62, 63         reserved by the K-CAS (always 0 in a stored value)
//
// The default 12-bit x 4 layout has its tags in bits 0..47 and a 14-bit counter in bits 48..61;
// 8-bit x 4 leaves a 30-bit counter. Layouts need F in 4..16, S in 2..8 and S*F <= 48, so every
// counter has at least 14 bits (lockfree_core.hpp explains what the counter width buys).
//
// The table is a cache-line aligned array of kcas_words (2 MiB aligned and advised as a huge-page
// candidate from 8 MiB up, like table_memory): bucket i is word i, and a lookup of a key touches
// two words, hence at most two cache lines. The bucket count is not a power of two
// (bucket_indexer maps hashes onto any count).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "ccf/config.hpp"
#include "ccf/detail/kcas.hpp"
#include "ccf/detail/tag_matching.hpp"

namespace ccf::detail {

/// Whether a lock-free bucket word can hold `slots` tags of `bits` bits and a version counter of
/// at least 14 bits below the K-CAS's two reserved bits.
constexpr bool lockfree_layout_supported(unsigned bits, unsigned slots) noexcept {
  return bits >= 4 && bits <= 16 && slots >= 2 && slots <= 8 && bits * slots <= 48;
}

/// The bucket word format: pure functions on 62-bit values (no memory access).
template <unsigned Bits, unsigned Slots>
struct lockfree_word_format {
  static_assert(lockfree_layout_supported(Bits, Slots),
                "ccf::lockfree_cuckoo_filter supports FingerprintBits 4..16 and SlotsPerBucket "
                "2..8 with FingerprintBits * SlotsPerBucket <= 48: a bucket is one 62-bit K-CAS "
                "word holding the tags and a version counter of at least 14 bits (e.g. 12 x 4, "
                "8 x 4, 16 x 2)");

  using tag_type = std::uint32_t;
  using lanes = swar<Bits, Slots>;

  static constexpr unsigned tag_bits = Bits * Slots;
  static constexpr unsigned counter_shift = tag_bits;
  static constexpr unsigned counter_bits = 62 - tag_bits;
  static constexpr std::uint64_t tag_mask = lanes::word_mask;
  static constexpr std::uint64_t counter_mask = kcas_value_mask & ~tag_mask;
  static constexpr std::uint64_t counter_unit = std::uint64_t{1} << counter_shift;
  static constexpr std::uint64_t counter_modulus = std::uint64_t{1} << counter_bits;
  static constexpr std::uint64_t max_tag = lanes::lane_mask;
  static_assert((tag_mask | counter_mask) == kcas_value_mask && (tag_mask & counter_mask) == 0);

  static CCF_FORCEINLINE constexpr std::uint64_t counter(std::uint64_t w) noexcept {
    return (w & counter_mask) >> counter_shift;
  }
  /// `w` with its counter advanced by one, wrapping to 0 after counter_modulus - 1; the tags and
  /// the reserved bits are untouched (w + unit carries at most into bit 62, which is masked off).
  static CCF_FORCEINLINE constexpr std::uint64_t bump(std::uint64_t w) noexcept {
    return (w & tag_mask) | ((w + counter_unit) & counter_mask);
  }
  static CCF_FORCEINLINE constexpr std::uint64_t with_counter(std::uint64_t w,
                                                              std::uint64_t c) noexcept {
    return (w & tag_mask) | ((c << counter_shift) & counter_mask);
  }
  static CCF_FORCEINLINE constexpr bool has(std::uint64_t w, tag_type tag) noexcept {
    return lanes::has(w & tag_mask, tag);
  }
  static CCF_FORCEINLINE constexpr unsigned count(std::uint64_t w, tag_type tag) noexcept {
    return lanes::count(w & tag_mask, tag);
  }
  static CCF_FORCEINLINE constexpr unsigned free_slots(std::uint64_t w) noexcept {
    return count(w, 0);
  }
  /// Slot holding `tag` (0 finds an empty slot), the lowest one if several, or -1.
  static CCF_FORCEINLINE constexpr int find(std::uint64_t w, tag_type tag) noexcept {
    const std::uint64_t m = lanes::match_lanes(w & tag_mask, tag);
    return m != 0 ? static_cast<int>(lanes::first_lane(m)) : -1;
  }
  static CCF_FORCEINLINE constexpr int free_slot(std::uint64_t w) noexcept { return find(w, 0); }
  static CCF_FORCEINLINE constexpr tag_type tag_at(std::uint64_t w, unsigned j) noexcept {
    return static_cast<tag_type>(lanes::get(w, j));
  }
  /// `w` with slot j set to `tag` (tag <= max_tag); the counter is not changed.
  static CCF_FORCEINLINE constexpr std::uint64_t set_tag(std::uint64_t w, unsigned j,
                                                         tag_type tag) noexcept {
    const unsigned shift = j * Bits;
    return (w & ~(max_tag << shift)) | (static_cast<std::uint64_t>(tag) << shift);
  }
  /// A word from its slots and counter (tests and diagnostics).
  static constexpr std::uint64_t make(const std::array<tag_type, Slots>& tags,
                                      std::uint64_t counter_value) noexcept {
    std::uint64_t w = with_counter(0, counter_value);
    for (unsigned j = 0; j < Slots; ++j)
      w = set_tag(w, j, static_cast<tag_type>(tags[j] & max_tag));
    return w;
  }
};

/// The array of bucket words.
template <unsigned Bits, unsigned Slots>
class lockfree_table {
 public:
  using format = lockfree_word_format<Bits, Slots>;

  explicit lockfree_table(std::size_t num_buckets)
      : words_(allocate(num_buckets)), num_buckets_(num_buckets) {}

  std::size_t num_buckets() const noexcept { return num_buckets_; }
  std::size_t size_in_bytes() const noexcept { return num_buckets_ * sizeof(kcas_word); }
  std::size_t size_in_tags() const noexcept { return num_buckets_ * Slots; }
  std::string info() const {
    return "lock-free bucket table: " + std::to_string(num_buckets_) + " buckets x " +
           std::to_string(Slots) + " slots x " + std::to_string(Bits) + " bits + " +
           std::to_string(format::counter_bits) +
           "-bit version counters = " + std::to_string(size_in_bytes()) + " bytes";
  }

  CCF_FORCEINLINE kcas_word& word(std::size_t i) noexcept { return words_[i]; }
  CCF_FORCEINLINE const kcas_word& word(std::size_t i) const noexcept { return words_[i]; }
  /// The logical value of bucket i (never writes).
  CCF_FORCEINLINE std::uint64_t load(std::size_t i) const noexcept { return kcas_load(words_[i]); }

  CCF_FORCEINLINE void prefetch(std::size_t i) const noexcept { CCF_PREFETCH(&words_[i]); }
  CCF_FORCEINLINE void prefetch_for_write(std::size_t i) const noexcept {
    CCF_PREFETCH_WRITE(&words_[i]);
  }

 private:
  /// Destroys the words and returns their over-aligned storage.
  struct word_deleter {
    std::size_t count = 0;
    std::size_t align = cache_line_size;
    void operator()(kcas_word* p) const noexcept {
      std::destroy_n(p, count);
      ::operator delete (p, std::align_val_t{align});
    }
  };
  using word_array = std::unique_ptr<kcas_word[], word_deleter>;

  static word_array allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(kcas_word);
    constexpr std::size_t huge_page = std::size_t{2} << 20;
    const std::size_t align = bytes >= 4 * huge_page ? huge_page : cache_line_size;
    const std::size_t rounded = (bytes + align - 1) / align * align;
    void* raw = ::operator new (rounded, std::align_val_t{align});
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (align == huge_page) ::madvise(raw, rounded, MADV_HUGEPAGE);
#endif
    // Value-initialized words hold 0: every bucket empty, every counter 0. kcas_word's
    // constructor cannot throw.
    std::uninitialized_value_construct_n(static_cast<kcas_word*>(raw), n);
    return word_array(std::launder(static_cast<kcas_word*>(raw)), word_deleter{n, align});
  }

  word_array words_;
  std::size_t num_buckets_;
};

}  // namespace ccf::detail
