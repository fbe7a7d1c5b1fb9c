// ccf — concurrent cuckoo filters.
// detail/elided_mcs_locking.hpp: the thesis's lock policy — one MCS queue lock for the whole
// table, taken in read mode (0) by lookups and update mode (1) by inserts and erases, and elided
// with Intel RTM where the processor has it (detail/elided_lock.hpp: speculative path, abort when
// the lock is held, up to max_retries, then the MCS fallback). Where RTM is absent, every
// operation takes the MCS lock: a fair, queue-ordered global lock.
//
// As in the thesis, lookups take the lock too; unlike it, an insert's path search runs outside the
// lock (each hop re-checks under it), so a full table does not hold everyone up during a search.
#pragma once

#include <cstddef>
#include <memory>

#include "ccf/detail/elided_lock.hpp"

namespace ccf::detail {

class elided_mcs_locking {
 public:
  static constexpr bool concurrent = true;
  static constexpr const char* name = "elided_mcs";

  explicit elided_mcs_locking(std::size_t /*num_buckets*/ = 0, std::size_t /*group*/ = 1)
      : lock_(std::make_unique<elided_mcs_lock>()) {}

  class guard {
   public:
    guard(elided_mcs_lock& lock, lock_mode mode) noexcept : lock_(&lock) { lock_->lock(mode); }
    guard(const guard&) = delete;
    guard& operator=(const guard&) = delete;
    ~guard() { lock_->unlock(); }

   private:
    elided_mcs_lock* lock_;
  };

  [[nodiscard]] guard lock_two(std::size_t, std::size_t) noexcept {
    return guard(*lock_, lock_mode::update);
  }
  [[nodiscard]] guard lock_all() noexcept { return guard(*lock_, lock_mode::update); }
  template <class F>
  auto read(std::size_t, std::size_t, F&& f) {
    guard g(*lock_, lock_mode::read);
    return f();
  }

  const elided_mcs_lock& lock() const noexcept { return *lock_; }
  std::size_t heap_bytes() const noexcept { return sizeof(elided_mcs_lock); }

 private:
  std::unique_ptr<elided_mcs_lock> lock_;  // a pointer keeps filters movable
};

}  // namespace ccf::detail
