// ccf — concurrent cuckoo filters.
// detail/indexer.hpp: from a 64-bit key hash to its two buckets and its tag (partial-key cuckoo
// hashing), over a table cut into chunks.
//
// The table has n = m * C buckets: m chunks of C buckets each (any m >= 1 and C >= 1; neither is
// rounded to a power of two). Both buckets of a key lie in one chunk:
//   chunk = floor(h * m / 2^64)                 (multiply-shift range reduction of the hash)
//   off   = floor(frac * C / 2^64)              (frac = h * m mod 2^64: the bits the first
//                                               reduction left over, uniform given the chunk)
//   i1    = chunk * C + off                      (so i1 = floor(h * n / 2^64) exactly)
//   tag   = 1 + ((h mod 2^32) * (2^f - 1)) >> 32 (uniform over the 2^f - 1 non-zero tags;
//                                               0 marks an empty slot)
//   alt(i, tag) = base + (H(tag) - (i - base)) mod C,  base = the first bucket of i's chunk,
//                 H(tag) = floor(fold((tag ^ s) * K) * C / 2^64), fold(p) = high ^ low half of
//                 the 128-bit product
// alt is an involution within the chunk for every tag (alt(alt(i, t), t) = i), so a tag moves
// back and forth knowing only its bucket and its own bits, and a cuckoo path never leaves the
// chunk of the key that started it. H costs two multiplies (the old mix64 and range cost three).
//
// Two alternate functions are offered, and a filter file records which one built it:
//   global_alternate   one chunk: m = 1, C = n (the classical cuckoo filter: a key's second
//                      bucket can be anywhere);
//   chunked_alternate  chunks of at most 2^19 slots (C <= 2^19 / slots buckets; 1 MiB of 16-bit
//                      x 4 buckets): a cuckoo path stays inside one chunk, which fits in a
//                      core's L2 cache (or most of it). Batched inserts of many keys take them
//                      chunk by chunk, and the bulk build gives each thread whole chunks with no
//                      lock at all.
// The false-positive rate does not depend on the chunking: a lookup still compares its tag with
// the 2b slots of two buckets of uniformly random tags. Chunks of 2^19 slots reach the same loads
// as a whole table (95 % at 4 slots: tests/engine_test.cpp checks 100 seeds). Smaller chunks do
// not: keys fall into chunks binomially, so with more, smaller chunks the fullest chunk is
// further above the mean load — at 2^26 buckets, chunks of 2^17 slots refused an insert at
// 94.85 %, and 4 KiB chunks refuse from about 88 %. C is a multiple of 64 buckets when m > 1,
// so chunks never share a 64-bit word or a cache line.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ccf/config.hpp"

namespace ccf::detail {

__extension__ using uint128 = unsigned __int128;

/// floor(x * n / 2^64): maps a uniform 64-bit value to [0, n).
CCF_FORCEINLINE constexpr std::uint64_t range_reduce(std::uint64_t x, std::uint64_t n) noexcept {
  return static_cast<std::uint64_t>((static_cast<uint128>(x) * n) >> 64);
}

/// What a filter file records about the alternate function.
enum class alternate_kind : std::uint32_t { global = 1, chunked = 2, growing = 3 };

/// A key's place: its two buckets and its tag.
struct position {
  std::size_t i1;
  std::size_t i2;
  std::uint32_t tag;
};

template <unsigned TagBits>
class cuckoo_indexer {
 public:
  using tag_type = std::uint32_t;
  static constexpr std::uint64_t max_tag = (std::uint64_t{1} << TagBits) - 1;

  cuckoo_indexer() = default;
  cuckoo_indexer(std::size_t chunks, std::size_t chunk_size) noexcept
      : m_(chunks), c_(chunk_size), reciprocal_(reciprocal(chunks, chunk_size)) {}

  /// The chunking of a table of at least `min_buckets` buckets with chunks of at most
  /// `max_chunk` buckets: one chunk when it fits, else m = ceil(min_buckets / max_chunk) chunks
  /// of C = ceil(min_buckets / m) buckets rounded up to a multiple of 64 (so the table grows by
  /// less than 64 buckets per chunk).
  static cuckoo_indexer plan(std::size_t min_buckets, std::size_t max_chunk) noexcept {
    if (min_buckets <= max_chunk) return cuckoo_indexer(1, min_buckets);
    const std::size_t m = (min_buckets + max_chunk - 1) / max_chunk;
    const std::size_t c = ((min_buckets + m - 1) / m + 63) / 64 * 64;
    return cuckoo_indexer(m, c);
  }

  std::size_t num_buckets() const noexcept { return m_ * c_; }
  std::size_t chunks() const noexcept { return m_; }
  std::size_t chunk_size() const noexcept { return c_; }

  CCF_FORCEINLINE tag_type tag_of(std::uint64_t h) const noexcept {
    return static_cast<tag_type>((((h & 0xffffffffULL) * max_tag) >> 32) + 1);
  }
  /// The chunk a hash falls into.
  CCF_FORCEINLINE std::size_t chunk_of_hash(std::uint64_t h) const noexcept {
    return static_cast<std::size_t>(range_reduce(h, m_));
  }
  CCF_FORCEINLINE position locate(std::uint64_t h) const noexcept {
    const tag_type tag = tag_of(h);
    std::size_t base = 0;
    std::uint64_t frac = h;
    if (m_ != 1) {
      const uint128 p = static_cast<uint128>(h) * m_;
      base = static_cast<std::size_t>(p >> 64) * c_;
      frac = static_cast<std::uint64_t>(p);
    }
    const std::size_t i1 = base + static_cast<std::size_t>(range_reduce(frac, c_));
    return {i1, alt_in(base, i1, tag), tag};
  }
  /// The first bucket of bucket i's chunk.
  CCF_FORCEINLINE std::size_t chunk_base(std::size_t i) const noexcept {
    if (m_ == 1) return 0;
    if (reciprocal_ != 0) return static_cast<std::size_t>(range_reduce(i, reciprocal_)) * c_;
    return i - i % c_;
  }
  /// The other bucket of `tag` when it sits in bucket i.
  CCF_FORCEINLINE std::size_t alt(std::size_t i, tag_type tag) const noexcept {
    return alt_in(chunk_base(i), i, tag);
  }
  /// alt(i, tag) for a bucket i of the chunk that starts at `base`.
  CCF_FORCEINLINE std::size_t alt_in(std::size_t base, std::size_t i, tag_type tag) const noexcept {
    const auto h = static_cast<std::size_t>(range_reduce(tag_hash(tag), c_));
    const std::size_t off = i - base;
    // (h - off) mod C with a mask, not a branch: h < off is a coin toss, so a branch on it
    // would be mispredicted every other time.
    const std::size_t wrap = c_ & (std::size_t{0} - static_cast<std::size_t>(h < off));
    return base + (h - off) + wrap;
  }

 private:
  /// A 64-bit hash of a tag: one 64 x 64 -> 128-bit multiply of the salted tag, folded (the high
  /// and low halves xored). Fibonacci hashing (tag * K alone) is not enough: its values for
  /// consecutive tags are evenly spaced, so alt(alt(i, t), t') = i + H(t') - H(t) steps through few
  /// distinct offsets and the cuckoo graph gets short cycles (4-bit x 4 tables then fill to 82 %
  /// instead of 93 %: 0.937, the mean over tables of 2^18 buckets in docs/evaluation.md).
  static CCF_FORCEINLINE std::uint64_t tag_hash(tag_type tag) noexcept {
    const uint128 p = static_cast<uint128>(tag ^ 0x2d358dccaa6c78a5ULL) * 0x8bb84b93962eacc9ULL;
    return static_cast<std::uint64_t>(p >> 64) ^ static_cast<std::uint64_t>(p);
  }

  /// ceil(2^64 / C), when floor(i * it / 2^64) = floor(i / C) for every bucket i (a multiply
  /// instead of a division); 0 otherwise. With r = it - 2^64 / C in [0, 1), i * it / 2^64 exceeds
  /// i / C by i * r / 2^64 < 1 / C when i * C < 2^64, too little to reach the next integer (the
  /// fraction of i / C is at most 1 - 1 / C): every table of fewer than 2^64 / C buckets
  /// qualifies (2^47 buckets, 1 PiB of 16-bit x 4 tags, with chunks of 2^17 buckets).
  static std::uint64_t reciprocal(std::size_t chunks, std::size_t chunk_size) noexcept {
    if (chunks <= 1 || chunk_size <= 1) return 0;
    const uint128 span = static_cast<uint128>(chunks) * chunk_size * chunk_size;
    if ((span >> 64) != 0) return 0;
    return ~std::uint64_t{0} / chunk_size + 1;
  }

  std::size_t m_ = 1;
  std::size_t c_ = 1;
  std::uint64_t reciprocal_ = 0;
};

}  // namespace ccf::detail

namespace ccf {

/// The classical alternate function: a key's second bucket anywhere in the table.
struct global_alternate {
  static constexpr detail::alternate_kind kind = detail::alternate_kind::global;
  static constexpr const char* name = "global";
  static constexpr std::size_t max_chunk_buckets(unsigned /*slots*/) noexcept {
    return ~std::size_t{0};
  }
};

/// Chunk-local alternates: both buckets of a key in one chunk of at most 2^19 slots.
struct chunked_alternate {
  static constexpr detail::alternate_kind kind = detail::alternate_kind::chunked;
  static constexpr const char* name = "chunked";
  static constexpr std::size_t max_chunk_buckets(unsigned slots) noexcept {
    return (std::size_t{1} << 19) / slots;
  }
};

}  // namespace ccf
