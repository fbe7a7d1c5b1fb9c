// ccf — concurrent cuckoo filters.
// kcas_state.hpp: the shared state behind ccf's K-CAS: how a word encodes either a value or a
// descriptor tag, the reusable per-thread descriptors, and the fixed-capacity registry that hands
// descriptor slots to threads. The algorithm and its design notes live in kcas.hpp; include that
// header, not this one.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "ccf/config.hpp"

namespace ccf {

/// Thrown by a K-CAS update (detail::kcas, detail::cas, detail::kcas_read) when the calling thread
/// needs a descriptor slot and all detail::kcas_max_threads slots are held by live threads.
/// Nothing has been modified when it is thrown; the call may be retried once threads have exited.
class kcas_thread_limit_error : public std::runtime_error {
 public:
  kcas_thread_limit_error()
      : std::runtime_error(
            "ccf: K-CAS thread registry is full: more than 512 live threads use ccf's lock-free "
            "structures") {}
};

}  // namespace ccf

namespace ccf::detail {

/// The most words one K-CAS may update.
inline constexpr std::size_t kcas_max_words = 8;
/// The most threads that may hold a K-CAS descriptor slot at the same time.
inline constexpr std::size_t kcas_max_threads = 512;
/// Bits 63 and 62 of every K-CAS word are reserved for descriptor tags: values stored through the
/// K-CAS must be < 2^62, i.e. (value & ~kcas_value_mask) == 0.
inline constexpr std::uint64_t kcas_value_mask = (std::uint64_t{1} << 62) - 1;

/// One 64-bit word that K-CAS operations may update. It holds a user value (< 2^62) or, while an
/// operation is in flight on it, a descriptor tag; read it with kcas_load / kcas_read, update it
/// with cas / kcas. Neither copyable nor movable (its address identifies it).
class kcas_word {
 public:
  /// The bits a user value may use.
  static constexpr std::uint64_t value_mask = kcas_value_mask;

  constexpr kcas_word() noexcept = default;
  constexpr explicit kcas_word(std::uint64_t value) noexcept : raw_(value) {}
  kcas_word(const kcas_word&) = delete;
  kcas_word& operator=(const kcas_word&) = delete;

  /// Plain access for phases in which no thread runs a K-CAS operation (construction, clear,
  /// serialization, after joining the workers). The caller provides the synchronization; the
  /// store releases, so that a lookup that reads its value (a clear's, while lookups run) also
  /// sees what the storing thread did before it (the clear's epoch).
  [[nodiscard]] std::uint64_t quiescent_load() const noexcept {
    return raw_.load(std::memory_order_relaxed);
  }
  void quiescent_store(std::uint64_t value) noexcept {
    raw_.store(value, std::memory_order_release);
  }

 private:
  friend struct kcas_access;
  std::atomic<std::uint64_t> raw_{0};
};

/// The K-CAS algorithm's access to the raw atomic of a word.
struct kcas_access {
  static std::atomic<std::uint64_t>& raw(kcas_word& word) noexcept { return word.raw_; }
  static const std::atomic<std::uint64_t>& raw(const kcas_word& word) noexcept { return word.raw_; }
};

/// Encoding of raw words and descriptor states (see the essay in kcas.hpp).
namespace kcas_encoding {

inline constexpr std::uint64_t kcas_bit = std::uint64_t{1} << 63;  // word holds a K-CAS tag
inline constexpr std::uint64_t dcss_bit = std::uint64_t{1} << 62;  // word holds a DCSS tag
inline constexpr std::uint64_t reserved_bits = kcas_bit | dcss_bit;
inline constexpr unsigned slot_bits = 9;
inline constexpr std::uint64_t slot_mask = (std::uint64_t{1} << slot_bits) - 1;
inline constexpr unsigned seq_bits = 62 - slot_bits;  // 53
inline constexpr std::uint64_t seq_mask = (std::uint64_t{1} << seq_bits) - 1;
static_assert(kcas_max_threads <= slot_mask + 1, "slot index must fit in a tag");
static_assert((reserved_bits & kcas_value_mask) == 0);

[[nodiscard]] constexpr bool is_value(std::uint64_t raw) noexcept {
  return (raw & reserved_bits) == 0;
}
[[nodiscard]] constexpr bool is_kcas_tag(std::uint64_t raw) noexcept {
  return (raw & kcas_bit) != 0;
}
[[nodiscard]] constexpr bool is_dcss_tag(std::uint64_t raw) noexcept {
  return (raw & dcss_bit) != 0;
}
/// A tag: mark bit | sequence number (53 bits) | slot (9 bits).
[[nodiscard]] constexpr std::uint64_t make_tag(std::uint64_t mark, std::uint32_t slot,
                                               std::uint64_t seq) noexcept {
  return mark | ((seq & seq_mask) << slot_bits) | slot;
}
[[nodiscard]] constexpr std::uint32_t tag_slot(std::uint64_t tag) noexcept {
  return static_cast<std::uint32_t>(tag & slot_mask);
}
[[nodiscard]] constexpr std::uint64_t tag_seq(std::uint64_t tag) noexcept {
  return (tag >> slot_bits) & seq_mask;
}

/// A K-CAS descriptor's state word: (sequence number << 2) | status.
inline constexpr std::uint64_t status_undecided = 0;
inline constexpr std::uint64_t status_succeeded = 1;
inline constexpr std::uint64_t status_failed = 2;
[[nodiscard]] constexpr std::uint64_t make_state(std::uint64_t seq, std::uint64_t status) noexcept {
  return ((seq & seq_mask) << 2) | status;
}
[[nodiscard]] constexpr std::uint64_t state_seq(std::uint64_t state) noexcept {
  return (state >> 2) & seq_mask;
}
[[nodiscard]] constexpr std::uint64_t state_status(std::uint64_t state) noexcept {
  return state & 3;
}

}  // namespace kcas_encoding

/// One word of a K-CAS descriptor. Every field is atomic: helpers read them while the owner may
/// already be rewriting them for its next operation (the sequence number tells them apart).
struct kcas_descriptor_entry {
  std::atomic<kcas_word*> word{nullptr};
  std::atomic<std::uint64_t> expected{0};
  std::atomic<std::uint64_t> desired{0};
};

/// A thread's reusable K-CAS descriptor.
struct alignas(cache_line_size) kcas_descriptor {
  std::atomic<std::uint64_t> state{0};  // make_state(seq, status)
  std::atomic<std::uint32_t> count{0};  // words in the current operation
  std::array<kcas_descriptor_entry, kcas_max_words> entries{};
};

/// A thread's reusable DCSS descriptor: "if K-CAS kcas_tag is still undecided, replace expected
/// in *word by kcas_tag".
struct alignas(cache_line_size) dcss_descriptor {
  std::atomic<std::uint64_t> seq{0};
  std::atomic<kcas_word*> word{nullptr};
  std::atomic<std::uint64_t> expected{0};
  std::atomic<std::uint64_t> kcas_tag{0};
};

struct kcas_thread_record {
  kcas_descriptor kcas;
  dcss_descriptor dcss;
};

/// The process-wide table of descriptor slots. A slot (and its sequence numbers) outlives the
/// thread that held it: a thread that takes a released slot continues its sequence numbers, so a
/// stale tag of the previous holder can never validate against the new holder's descriptor.
class kcas_registry {
 public:
  constexpr kcas_registry() noexcept = default;
  kcas_registry(const kcas_registry&) = delete;
  kcas_registry& operator=(const kcas_registry&) = delete;

  [[nodiscard]] kcas_thread_record& record(std::uint32_t slot) noexcept { return records_[slot]; }

  /// Claims the lowest free slot; throws kcas_thread_limit_error when none is free.
  [[nodiscard]] std::uint32_t acquire_slot() {
    for (std::uint32_t i = 0; i < kcas_max_threads; ++i) {
      bool expected = false;
      if (!in_use_[i].load(std::memory_order_relaxed) &&
          in_use_[i].compare_exchange_strong(expected, true, std::memory_order_acquire,
                                             std::memory_order_relaxed)) {
        return i;
      }
    }
    throw kcas_thread_limit_error();
  }

  /// Returns a slot; its holder must have no K-CAS operation in flight.
  void release_slot(std::uint32_t slot) noexcept {
    in_use_[slot].store(false, std::memory_order_release);
  }

  /// Slots held right now (a diagnostic; racy by nature).
  [[nodiscard]] std::size_t slots_in_use() const noexcept {
    std::size_t n = 0;
    for (const auto& flag : in_use_)
      n += flag.load(std::memory_order_relaxed) ? 1U : 0U;
    return n;
  }

 private:
  std::array<kcas_thread_record, kcas_max_threads> records_{};
  std::array<std::atomic<bool>, kcas_max_threads> in_use_{};
};

/// The one registry of the process (constant-initialized: no start-up order issue).
inline constinit kcas_registry kcas_global_registry{};

/// Holds this thread's slot from its first K-CAS update to its exit.
class kcas_thread_slot {
 public:
  kcas_thread_slot() : slot_(kcas_global_registry.acquire_slot()) {}
  ~kcas_thread_slot() { kcas_global_registry.release_slot(slot_); }
  kcas_thread_slot(const kcas_thread_slot&) = delete;
  kcas_thread_slot& operator=(const kcas_thread_slot&) = delete;
  [[nodiscard]] std::uint32_t get() const noexcept { return slot_; }

 private:
  std::uint32_t slot_;
};

/// This thread's descriptor slot, registered on first use (may throw kcas_thread_limit_error;
/// a later call tries again).
[[nodiscard]] inline std::uint32_t kcas_this_thread_slot() {
  thread_local const kcas_thread_slot slot;
  return slot.get();
}

/// Descriptor slots currently held by live threads (diagnostics and tests).
[[nodiscard]] inline std::size_t kcas_threads_in_use() noexcept {
  return kcas_global_registry.slots_in_use();
}

}  // namespace ccf::detail
