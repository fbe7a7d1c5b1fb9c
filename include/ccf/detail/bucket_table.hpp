// ccf — concurrent cuckoo filters.
// detail/bucket_table.hpp: the array of buckets, and the thesis's HashTable operations on it.
//
// Layout: tag_packing<Bits, Slots> chunks laid end to end in one zeroed array of 64-bit words; the
// chunk k (bucket k / chunks) starts at bit k * chunk_bits. A slot holding 0 is empty. A bucket is
// read as `chunks` words (one for every layout but 16-bit x 8, 12-bit x 8 and 32-bit x 4/8), and
// all queries on it (match, count, free slot) are SWAR operations over whole chunks.
//
// Writes change a slot by xor-ing (old ^ new) into its bits through the word policy, so with
// atomic_words two writers that hold locks on different buckets sharing a word both land. This
// layer does no locking: the cuckoo core takes the lock policy's locks around it.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "ccf/config.hpp"
#include "ccf/detail/table_memory.hpp"
#include "ccf/detail/tag_matching.hpp"
#include "ccf/detail/tag_packing.hpp"

namespace ccf::detail {

template <unsigned Bits, unsigned Slots, class WordPolicy>
class bucket_table {
 public:
  using packing = tag_packing<Bits, Slots>;
  using tag_type = typename packing::tag_type;
  using chunk_ops = swar<Bits, packing::tags_per_chunk>;
  static constexpr unsigned chunks = packing::chunks;
  static constexpr unsigned tags_per_chunk = packing::tags_per_chunk;
  static constexpr unsigned chunk_bits = packing::chunk_bits;

  /// A bucket's contents as read at one moment.
  struct bucket {
    std::array<std::uint64_t, chunks> chunk;
  };

  bucket_table() = default;
  explicit bucket_table(std::size_t num_buckets)
      : memory_(packing::words_for(num_buckets)), num_buckets_(num_buckets) {}

  std::size_t num_buckets() const noexcept { return num_buckets_; }
  std::size_t size_in_bytes() const noexcept { return memory_.bytes(); }
  std::size_t size_in_tags() const noexcept { return num_buckets_ * Slots; }
  void clear() noexcept { memory_.zero(); }

  CCF_FORCEINLINE void prefetch(std::size_t i) const noexcept {
    CCF_PREFETCH(memory_.data() + ((i * chunks * chunk_bits) >> 6));
  }
  CCF_FORCEINLINE void prefetch_for_write(std::size_t i) const noexcept {
    CCF_PREFETCH_WRITE(memory_.data() + ((i * chunks * chunk_bits) >> 6));
  }

  CCF_FORCEINLINE bucket load(std::size_t i) const noexcept {
    bucket b;
    for (unsigned c = 0; c < chunks; ++c)
      b.chunk[c] = load_chunk(i * chunks + c);
    return b;
  }

  // ---- queries on a loaded bucket (SIMD or SWAR over the whole bucket, no per-slot loop) ----
  using simd = simd_match<Bits, Slots>;
  static constexpr bool use_simd = simd::available;

  static CCF_FORCEINLINE bool has(const bucket& b, tag_type tag) noexcept {
    if constexpr (use_simd) return simd::mask(b.chunk, tag) != 0;
    std::uint64_t any = 0;
    for (unsigned c = 0; c < chunks; ++c)
      any |= chunk_ops::match_lanes(b.chunk[c], tag);
    return any != 0;
  }
  static CCF_FORCEINLINE unsigned count(const bucket& b, tag_type tag) noexcept {
    if constexpr (use_simd) {
      return popcount64(simd::mask(b.chunk, tag)) / simd::bytes_per_slot;
    }
    unsigned n = 0;
    for (unsigned c = 0; c < chunks; ++c)
      n += chunk_ops::count(b.chunk[c], tag);
    return n;
  }
  /// Slot index holding `tag` (0 finds an empty slot), or -1.
  static CCF_FORCEINLINE int find(const bucket& b, tag_type tag) noexcept {
    if constexpr (use_simd) {
      const std::uint32_t m = simd::mask(b.chunk, tag);
      return m == 0 ? -1 : static_cast<int>(std::countr_zero(m) / simd::bytes_per_slot);
    }
    for (unsigned c = 0; c < chunks; ++c) {
      const std::uint64_t m = chunk_ops::match_lanes(b.chunk[c], tag);
      if (m != 0) return static_cast<int>(c * tags_per_chunk + chunk_ops::first_lane(m));
    }
    return -1;
  }
  static CCF_FORCEINLINE int free_slot(const bucket& b) noexcept { return find(b, 0); }
  static CCF_FORCEINLINE tag_type tag_at(const bucket& b, unsigned j) noexcept {
    return static_cast<tag_type>(chunk_ops::get(b.chunk[j / tags_per_chunk], j % tags_per_chunk));
  }

  // ---- the thesis's HashTable operations (unsynchronised) ----
  tag_type read_tag(std::size_t i, unsigned j) const noexcept {
    return static_cast<tag_type>(
        chunk_ops::get(load_chunk(i * chunks + j / tags_per_chunk), j % tags_per_chunk));
  }
  /// Sets slot j of bucket i to `tag`, given its current value `old_tag`.
  CCF_FORCEINLINE void replace_tag(std::size_t i, unsigned j, tag_type old_tag,
                                   tag_type tag) noexcept {
    const std::uint64_t delta = static_cast<std::uint64_t>(old_tag ^ tag)
                                << ((j % tags_per_chunk) * Bits);
    flip_chunk(i * chunks + j / tags_per_chunk, delta);
  }
  void write_tag(std::size_t i, unsigned j, tag_type tag) noexcept {
    replace_tag(i, j, read_tag(i, j), tag);
  }
  bool find_tag_in_buckets(std::size_t i1, std::size_t i2, tag_type tag) const noexcept {
    return has(load(i1), tag) || has(load(i2), tag);
  }
  bool delete_tag_from_bucket(std::size_t i, tag_type tag) noexcept {
    const int j = find(load(i), tag);
    if (j < 0) return false;
    replace_tag(i, static_cast<unsigned>(j), tag, 0);
    return true;
  }
  /// Puts `tag` in a free slot of bucket i (true). When the bucket is full and `kickout` is set,
  /// `tag` replaces the tag in slot `victim_slot`, which is returned in `old_tag` (false).
  bool insert_tag_to_bucket(std::size_t i, tag_type tag, bool kickout, tag_type& old_tag,
                            unsigned victim_slot = 0) noexcept {
    const bucket b = load(i);
    const int j = free_slot(b);
    if (j >= 0) {
      replace_tag(i, static_cast<unsigned>(j), 0, tag);
      return true;
    }
    if (kickout) {
      const unsigned v = victim_slot % Slots;
      old_tag = tag_at(b, v);
      replace_tag(i, v, old_tag, tag);
    }
    return false;
  }
  // ---- whole-table access (saving and loading) ----
  std::span<const std::uint64_t> words() const noexcept {
    return {memory_.data(), memory_.words()};
  }
  std::span<std::uint64_t> words() noexcept { return {memory_.data(), memory_.words()}; }
  /// Number of non-empty slots.
  std::size_t count_tags() const noexcept {
    std::size_t empty = 0;
    for (std::size_t i = 0; i < num_buckets_; ++i)
      empty += count(load(i), 0);
    return num_buckets_ * Slots - empty;
  }
  /// True when every bit past the last bucket (in the last word and the spare word) is zero.
  bool padding_is_clear() const noexcept {
    const std::size_t used = num_buckets_ * chunks * chunk_bits;
    const std::uint64_t* w = memory_.data();
    for (std::size_t k = used / 64; k < memory_.words(); ++k) {
      const unsigned keep = k == used / 64 ? static_cast<unsigned>(used % 64) : 0;
      const std::uint64_t mask = keep == 0 ? ~std::uint64_t{0} : ~((std::uint64_t{1} << keep) - 1);
      if ((WordPolicy::load(w[k]) & mask) != 0) return false;
    }
    return true;
  }

  std::string info() const {
    return "bucket table: " + std::to_string(num_buckets_) + " buckets x " + std::to_string(Slots) +
           " slots x " + std::to_string(Bits) + " bits = " + std::to_string(size_in_bytes()) +
           " bytes";
  }

 private:
  CCF_FORCEINLINE std::uint64_t load_chunk(std::size_t k) const noexcept {
    const std::uint64_t* w = memory_.data();
    const std::size_t off = k * chunk_bits;
    const std::size_t wi = off >> 6;
    const unsigned s = static_cast<unsigned>(off & 63);
    if constexpr (chunk_bits == 64) {
      return WordPolicy::load(w[wi]);
    } else if constexpr (!packing::straddles) {
      return (WordPolicy::load(w[wi]) >> s) & chunk_ops::word_mask;
    } else {
      const std::uint64_t lo = WordPolicy::load(w[wi]);
      const std::uint64_t hi = WordPolicy::load(w[wi + 1]);
      // (hi << 1) << (63 - s) is hi << (64 - s) without the undefined shift by 64 when s == 0.
      return ((lo >> s) | ((hi << 1) << (63 - s))) & chunk_ops::word_mask;
    }
  }
  CCF_FORCEINLINE void flip_chunk(std::size_t k, std::uint64_t delta) noexcept {
    std::uint64_t* w = memory_.data();
    const std::size_t off = k * chunk_bits;
    const std::size_t wi = off >> 6;
    const unsigned s = static_cast<unsigned>(off & 63);
    WordPolicy::flip(w[wi], delta << s);
    if constexpr (packing::straddles) {
      const std::uint64_t high = (delta >> 1) >> (63 - s);
      if (high != 0) WordPolicy::flip(w[wi + 1], high);
    }
  }

  table_memory memory_;
  std::size_t num_buckets_ = 0;
};

}  // namespace ccf::detail
