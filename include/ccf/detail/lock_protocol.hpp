// ccf — concurrent cuckoo filters.
// detail/lock_protocol.hpp: the concurrency protocol of the sequential and the lock-based
// filters — every change of a bucket is made under the lock policy's locks.
//
// A concurrency protocol gives the cuckoo engine (cuckoo_engine.hpp) four operations on a
// bucket_table, and every engine operation is written with them:
//   read(t, i1, i2, f)     f(b1, b2) on the values of buckets i1 and i2 at one instant;
//   probe(t, i1, i2, f)    the same for an existence test (f returning bool);
//   update(t, i1, i2, f)   f(b1, b2) may change its copies of the two buckets; the protocol
//                          commits every changed bucket atomically with respect to the values f
//                          saw (i1 == i2: f gets the same bucket twice);
//   exclusive(t, f)        f() with no other operation in progress (save);
//   exclusive_clear(t, f)  the same for an f that empties the table (clear): lookups that
//                          overlap it answer as of before it or after it, never of a mix.
// Here update() takes lock_two(i1, i2), loads both buckets, runs f and stores what changed; read
// and probe run inside the policy's read(), which validates optimistic readers (striped) or
// takes a read lock (global, elided MCS). With null_locking (single-threaded filters) all of it
// reduces to plain loads and stores. direct_access is the same update with no lock at all, for
// phases in which the caller has the table, or its part of it, to itself (bulk building).
#pragma once

#include <cstddef>
#include <type_traits>

#include "ccf/config.hpp"
#include "ccf/detail/heap_bytes.hpp"
#include "ccf/detail/lock_policy.hpp"
#include "ccf/detail/word_policy.hpp"

namespace ccf::detail {

/// update() without locks: load both buckets, run f on copies, store what changed.
struct direct_access {
  template <class Table, class F>
  static CCF_FORCEINLINE auto update(Table& t, std::size_t i1, std::size_t i2, F&& f) {
    using bucket = typename Table::bucket;
    if (i1 == i2) {
      const bucket old = t.load(i1);
      bucket b = old;
      auto r = f(b, b);
      if (!(b == old)) t.store(i1, old, b);
      return r;
    }
    const bucket old1 = t.load(i1);
    const bucket old2 = t.load(i2);
    bucket b1 = old1;
    bucket b2 = old2;
    auto r = f(b1, b2);
    if (!(b1 == old1)) t.store(i1, old1, b1);
    if (!(b2 == old2)) t.store(i2, old2, b2);
    return r;
  }
};

template <lock_policy LockPolicy>
class lock_protocol {
 public:
  using lock_type = LockPolicy;
  using word_policy = std::conditional_t<LockPolicy::concurrent, atomic_words, plain_words>;
  static constexpr bool concurrent = LockPolicy::concurrent;
  /// Inserts choose their bucket without locks, then lock only that one (one stripe, not two).
  static constexpr bool lock_one_first = concurrent;
  static constexpr const char* name = LockPolicy::name;

  lock_protocol(std::size_t num_buckets, std::size_t group) : locks_(num_buckets, group) {}

  /// Readies the calling thread for updates (cuckoo_engine::prepare_inserts): locks need nothing.
  static void prepare_thread() noexcept {}

  template <class Table, class F>
  CCF_FORCEINLINE auto read(const Table& t, std::size_t i1, std::size_t i2, F&& f) const {
    return locks_.read(i1, i2, [&]() noexcept { return f(t.load(i1), t.load(i2)); });
  }
  template <class Table, class F>
  CCF_FORCEINLINE bool probe(const Table& t, std::size_t i1, std::size_t i2, F&& f) const {
    return read(t, i1, i2, f);
  }
  template <class Table, class F>
  CCF_FORCEINLINE auto update(Table& t, std::size_t i1, std::size_t i2, F&& f) {
    [[maybe_unused]] auto guard = locks_.lock_two(i1, i2);
    return direct_access::update(t, i1, i2, f);
  }
  template <class Table, class F>
  auto exclusive(const Table& /*t*/, F&& f) const {
    [[maybe_unused]] auto guard = locks_.lock_all();
    return f();
  }
  /// exclusive() for an f that empties the table: every lock is held, so readers see the table
  /// whole or empty (optimistic readers that overlap it validate against the held stripes).
  template <class Table, class F>
  auto exclusive_clear(const Table& t, F&& f) const {
    return exclusive(t, f);
  }
  CCF_FORCEINLINE void prefetch(std::size_t i1, std::size_t i2) const noexcept {
    if constexpr (requires { locks_.prefetch(i1, i2); }) locks_.prefetch(i1, i2);
  }
  /// For an update to come: the lock words it will write.
  CCF_FORCEINLINE void prefetch_for_write(std::size_t i1, std::size_t i2) const noexcept {
    if constexpr (requires { locks_.prefetch_for_write(i1, i2); }) {
      locks_.prefetch_for_write(i1, i2);
    }
  }

  LockPolicy& locks() const noexcept { return locks_; }
  /// What the lock policy holds on the heap (nothing, for a policy that does not say).
  std::size_t heap_bytes() const noexcept { return heap_bytes_of(locks_); }

 private:
  mutable LockPolicy locks_;
};

}  // namespace ccf::detail
