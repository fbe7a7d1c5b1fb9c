// ccf — concurrent cuckoo filters.
// detail/null_locking.hpp: the lock policy of the single-threaded filter: no locks at all.
//
// Every lock policy gives the cuckoo core the same four things:
//   Policy(std::size_t num_buckets, std::size_t group);
//                            buckets i and j with i / group == j / group may share a table word:
//                            the policy must let only one writer at a time touch such a group;
//   guard lock_two(i1, i2)   exclusive access to buckets i1 and i2 (i1 == i2 allowed), released
//                            when the returned guard is destroyed; never deadlocks;
//   guard lock_all()         exclusive access to the whole table (clear());
//   read(i1, i2, f)          runs f(), a pure read of buckets i1 and i2, so that its result is
//                            that of some instant (under a read lock, or optimistically with
//                            validation and retry), and returns what f returned.
#pragma once

#include <cstddef>
#include <utility>

namespace ccf::detail {

struct null_locking {
  static constexpr bool concurrent = false;
  static constexpr const char* name = "none";

  struct guard {};

  explicit null_locking(std::size_t /*num_buckets*/ = 0, std::size_t /*group*/ = 1) noexcept {}

  guard lock_two(std::size_t, std::size_t) noexcept { return {}; }
  guard lock_all() noexcept { return {}; }
  template <class F>
  decltype(auto) read(std::size_t, std::size_t, F&& f) const {
    return std::forward<F>(f)();
  }
};

}  // namespace ccf::detail
