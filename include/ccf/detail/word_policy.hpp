// ccf — concurrent cuckoo filters.
// detail/word_policy.hpp: how the bucket table's 64-bit words are read and changed.
//
// The sequential and the concurrent filters share one bucket table and one cuckoo core; they differ
// in this policy (and in the lock policy):
//   plain_words  — ordinary loads and stores; for single-threaded use.
//   atomic_words — every access is a relaxed std::atomic_ref operation on the same storage. A tag
//   is
//                  changed with fetch_xor of (old ^ new) in its lane, so writers holding the locks
//                  of different buckets that share a word never lose each other's updates, and
//                  readers that take no lock never race (ordering comes from the lock policy's
//                  fences).
// On x86-64 a relaxed atomic load is an ordinary load; only writes pay for the locked xor.
#pragma once

#include <atomic>
#include <cstdint>

#include "ccf/config.hpp"

namespace ccf::detail {

struct plain_words {
  static constexpr bool concurrent = false;
  static CCF_FORCEINLINE std::uint64_t load(const std::uint64_t& w) noexcept { return w; }
  static CCF_FORCEINLINE void flip(std::uint64_t& w, std::uint64_t bits) noexcept { w ^= bits; }
};

struct atomic_words {
  static constexpr bool concurrent = true;
  static CCF_FORCEINLINE std::uint64_t load(const std::uint64_t& w) noexcept {
    // atomic_ref<T> needs a non-const T; the load does not write.
    return std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(w))
        .load(std::memory_order_relaxed);
  }
  static CCF_FORCEINLINE void flip(std::uint64_t& w, std::uint64_t bits) noexcept {
    std::atomic_ref<std::uint64_t>(w).fetch_xor(bits, std::memory_order_relaxed);
  }
};

}  // namespace ccf::detail
