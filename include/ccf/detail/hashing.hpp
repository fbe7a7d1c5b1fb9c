// ccf — concurrent cuckoo filters.
// detail/hashing.hpp: from a 64-bit key hash to (first bucket, tag), and the alternate bucket.
//
// Partial-key cuckoo hashing over a table of n buckets, n any positive integer (not rounded up to a
// power of two, so the table is sized to the capacity asked for):
//   i1  = high 64 bits of h * n                       (multiply-shift range reduction: uses the
//                                                      hash's high bits, no division)
//   tag = 1 + ((h mod 2^32) * (2^f - 1)) >> 32        (uniform over the 2^f - 1 non-zero tags;
//                                                      0 marks an empty slot)
//   alt(i, tag) = (H(tag) - i) mod n, H(tag) = range(mix64(tag ^ salt), n)
// alt is an involution for every tag: alt(alt(i, t), t) = H - (H - i) = i (mod n), so a tag can
// always be moved back and forth knowing only its bucket and its own bits, and the tag is hashed
// before use so that the two buckets of a key are spread over the whole table.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ccf/config.hpp"
#include "ccf/hash.hpp"

namespace ccf::detail {

__extension__ using uint128 = unsigned __int128;

/// floor(x * n / 2^64): maps a uniform 64-bit value to [0, n).
CCF_FORCEINLINE constexpr std::uint64_t range_reduce(std::uint64_t x, std::uint64_t n) noexcept {
  return static_cast<std::uint64_t>((static_cast<uint128>(x) * n) >> 64);
}

template <unsigned Bits>
class bucket_indexer {
 public:
  using tag_type = std::uint32_t;
  static constexpr std::uint64_t max_tag = (std::uint64_t{1} << Bits) - 1;

  struct position {
    std::size_t i1;
    std::size_t i2;
    tag_type tag;
  };

  bucket_indexer() = default;
  explicit bucket_indexer(std::size_t num_buckets) noexcept : n_(num_buckets) {}

  std::size_t num_buckets() const noexcept { return n_; }

  CCF_FORCEINLINE tag_type tag_of(std::uint64_t h) const noexcept {
    const std::uint64_t low = h & 0xffffffffULL;
    return static_cast<tag_type>(((low * max_tag) >> 32) + 1);
  }
  CCF_FORCEINLINE std::size_t index_of(std::uint64_t h) const noexcept {
    return static_cast<std::size_t>(range_reduce(h, n_));
  }
  CCF_FORCEINLINE std::size_t alt_index(std::size_t i, tag_type tag) const noexcept {
    const auto h = static_cast<std::size_t>(range_reduce(mix64(tag ^ tag_salt), n_));
    return h >= i ? h - i : h + n_ - i;
  }
  CCF_FORCEINLINE position locate(std::uint64_t h) const noexcept {
    const tag_type t = tag_of(h);
    const std::size_t i1 = index_of(h);
    return {i1, alt_index(i1, t), t};
  }

 private:
  static constexpr std::uint64_t tag_salt = 0x5bd1e9955bd1e995ULL;
  std::size_t n_ = 1;
};

}  // namespace ccf::detail
