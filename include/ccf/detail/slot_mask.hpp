// ccf — concurrent cuckoo filters.
// detail/slot_mask.hpp: the set of slots of one bucket that answer a query.
//
// Every slot layout answers "which slots hold this tag" and "which slots are free" with a
// slot_mask: bit j set means slot j (at most 32 slots per bucket). It can be tested, counted and
// iterated, so a filter asks mask.any() while the key-value store walks every matching slot to
// compare full keys.
#pragma once

#include <bit>
#include <cstdint>

#include "ccf/config.hpp"

namespace ccf::detail {

class slot_mask {
 public:
  constexpr slot_mask() noexcept = default;
  constexpr explicit slot_mask(std::uint32_t bits) noexcept : bits_(bits) {}

  constexpr std::uint32_t bits() const noexcept { return bits_; }
  constexpr bool any() const noexcept { return bits_ != 0; }
  constexpr explicit operator bool() const noexcept { return any(); }
  constexpr unsigned count() const noexcept { return static_cast<unsigned>(std::popcount(bits_)); }
  /// The lowest slot in the set (the set must not be empty).
  constexpr unsigned first() const noexcept {
    return static_cast<unsigned>(std::countr_zero(bits_));
  }
  constexpr bool test(unsigned j) const noexcept { return ((bits_ >> j) & 1U) != 0; }

  friend constexpr slot_mask operator|(slot_mask a, slot_mask b) noexcept {
    return slot_mask(a.bits_ | b.bits_);
  }
  friend constexpr slot_mask operator&(slot_mask a, slot_mask b) noexcept {
    return slot_mask(a.bits_ & b.bits_);
  }
  friend constexpr bool operator==(slot_mask, slot_mask) noexcept = default;

  /// Iterates the slot indices in the set, lowest first.
  class iterator {
   public:
    constexpr explicit iterator(std::uint32_t bits) noexcept : bits_(bits) {}
    constexpr unsigned operator*() const noexcept {
      return static_cast<unsigned>(std::countr_zero(bits_));
    }
    constexpr iterator& operator++() noexcept {
      bits_ &= bits_ - 1;
      return *this;
    }
    friend constexpr bool operator==(iterator, iterator) noexcept = default;

   private:
    std::uint32_t bits_;
  };
  constexpr iterator begin() const noexcept { return iterator(bits_); }
  constexpr iterator end() const noexcept { return iterator(0); }

 private:
  std::uint32_t bits_ = 0;
};

}  // namespace ccf::detail
