// ccf — concurrent cuckoo filters.
// detail/word_policy.hpp: how the bucket table's 64-bit words are read and changed.
//
// The sequential and the lock-based concurrent filters share one bucket table and one cuckoo
// engine; they differ in this policy (and in the lock policy):
//   plain_words  — ordinary loads and stores; for single-threaded use.
//   atomic_words - every access is a relaxed std::atomic_ref load or store on the same storage,
//                  so readers that take no lock never race (ordering comes from the lock
//                  policy's fences). A write is a load, an xor and a store, not an atomic
//                  read-modify-write: that is safe because every lock policy makes buckets that
//                  share a word share a lock (buckets_per_word_group of the layout), so a word
//                  has one writer at a time.
// On x86-64 relaxed atomic loads and stores are ordinary moves: no locked instruction at all.
// The lock-free filter's words are kcas_words, read with kcas_load and changed only by the K-CAS
// protocol (kcas_protocol.hpp); its layout ignores the word policy.
#pragma once

#include <atomic>
#include <cstdint>

#include "ccf/config.hpp"

namespace ccf::detail {

struct plain_words {
  static constexpr bool concurrent = false;
  static CCF_FORCEINLINE std::uint64_t load(const std::uint64_t& w) noexcept { return w; }
  static CCF_FORCEINLINE void store(std::uint64_t& w, std::uint64_t v) noexcept { w = v; }
  static CCF_FORCEINLINE void flip(std::uint64_t& w, std::uint64_t bits) noexcept { w ^= bits; }
};

struct atomic_words {
  static constexpr bool concurrent = true;
  static CCF_FORCEINLINE std::uint64_t load(const std::uint64_t& w) noexcept {
    // atomic_ref<T> needs a non-const T; the load does not write.
    return std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(w))
        .load(std::memory_order_relaxed);
  }
  static CCF_FORCEINLINE void store(std::uint64_t& w, std::uint64_t v) noexcept {
    std::atomic_ref<std::uint64_t>(w).store(v, std::memory_order_relaxed);
  }
  static CCF_FORCEINLINE void flip(std::uint64_t& w, std::uint64_t bits) noexcept {
    std::atomic_ref<std::uint64_t> ref(w);
    ref.store(ref.load(std::memory_order_relaxed) ^ bits, std::memory_order_relaxed);
  }
};

/// The lock-free filter's words: K-CAS words, changed only by cas / kcas.
struct kcas_words {
  static constexpr bool concurrent = true;
};

}  // namespace ccf::detail
