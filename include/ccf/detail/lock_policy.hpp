// ccf — concurrent cuckoo filters.
// detail/lock_policy.hpp: the contract of a lock policy, as a C++20 concept.
//
// A lock policy guards the buckets of a table for lock_protocol (lock_protocol.hpp). It provides:
//   Policy(std::size_t num_buckets, std::size_t group)
//                            buckets i and j with i / group == j / group may share a table word:
//                            the policy must let only one writer at a time touch such a group;
//   guard lock_two(i1, i2)   exclusive access to buckets i1 and i2 (i1 == i2 allowed), released
//                            when the returned guard is destroyed; never deadlocks;
//   guard lock_all()         exclusive access to the whole table (clear, save);
//   read(i1, i2, f)          runs f(), a pure read of buckets i1 and i2, so that its result is
//                            that of some instant (under a read lock, or optimistically with
//                            validation and retry), and returns what f returned;
//   concurrent, name         whether it guards anything, and what it is called in reports.
// ccf has four: null_locking (single-threaded), striped_locking (sequence-lock stripes, lookups
// take no lock), elided_mcs_locking (the thesis's MCS lock with RTM elision) and global_locking
// (one mutex, the baseline).
#pragma once

#include <concepts>
#include <cstddef>

namespace ccf::detail {

template <class P>
concept lock_policy = std::constructible_from<P, std::size_t, std::size_t> &&
    requires(P& p, std::size_t i) {
  { P::concurrent } -> std::convertible_to<bool>;
  { P::name } -> std::convertible_to<const char*>;
  p.lock_two(i, i);
  p.lock_all();
  {
    p.read(i, i, [] { return 1; })
    } -> std::same_as<int>;
};

}  // namespace ccf::detail
