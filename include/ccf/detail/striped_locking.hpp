// ccf — concurrent cuckoo filters.
// detail/striped_locking.hpp: ccf's scalable lock policy — striped sequence locks, lookups that
// take no lock.
//
// Layout. At most 2^14 stripes, each one 64-bit version word; bucket i belongs to stripe
// i >> s: a stripe covers a run of 2^s consecutive buckets, s the least that needs no more than
// 2^14 stripes, and at least a group — the run of buckets that share table words (1 bucket for
// 16-bit x 4 slots, up to 8 for bit-packed layouts) — so a word is only ever written under one
// stripe and table writes need no atomic read-modify-write. Runs, not interleaving: threads
// that work in different chunks of a table (grouped batches) lock disjoint stripes, whose words
// stay in their own caches. The lock array (128 KiB at most) stays in the caches while the table
// does not.
//
// Writers. An odd version means "locked". lock_two(i1, i2) takes the stripes of i1 and i2 with a
// compare-and-swap from even v to v + 1, the lower stripe first (a fixed global order: no
// deadlock); release stores v + 2. A release fence after taking a stripe orders the odd version
// before the writer's table writes.
//
// Readers. read(i1, i2, f) samples both versions (acquire), waits while either is odd, runs f —
// which only loads table words with relaxed atomics — then, after an acquire fence, checks that
// neither version changed, and runs f again if one did. Every table change happens inside a
// writer's section, so a validated f saw the buckets as they were at one instant: in particular a
// relocation hop (tag written to its other bucket, then cleared from this one, both stripes held)
// is seen entirely or not at all, and a present tag is never missed. Lookups write nothing
// shared, so they scale with the number of cores; a lookup retries only when a writer touched
// one of its two stripes during the few nanoseconds it ran.
//
// The item count lives in the core's sharded counter, not in the stripes.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "ccf/config.hpp"

namespace ccf::detail {

class striped_locking {
 public:
  static constexpr bool concurrent = true;
  static constexpr const char* name = "striped";
  static constexpr std::size_t max_stripes = std::size_t{1} << 14;

  /// Runs of at least `group` (a power of two) consecutive buckets share a stripe.
  explicit striped_locking(std::size_t num_buckets, std::size_t group = 1)
      : shift_(shift_for(num_buckets, group)),
        count_((std::max<std::size_t>(num_buckets, 1) - 1) / (std::size_t{1} << shift_) + 1),
        versions_(std::make_unique<std::atomic<std::uint64_t>[]>(count_)) {}

  /// The lock array: a version word per stripe.
  std::size_t heap_bytes() const noexcept { return count_ * sizeof(versions_[0]); }

  class guard {
   public:
    guard(striped_locking& owner, std::size_t lo, std::size_t hi) noexcept
        : owner_(&owner), lo_(lo), hi_(hi) {}
    guard(const guard&) = delete;
    guard& operator=(const guard&) = delete;
    ~guard() {
      if (hi_ != lo_) owner_->release(hi_);
      owner_->release(lo_);
    }

   private:
    striped_locking* owner_;
    std::size_t lo_, hi_;
  };

  class all_guard {
   public:
    explicit all_guard(striped_locking& owner) noexcept : owner_(&owner) {
      for (std::size_t s = 0; s < owner_->count_; ++s)
        owner_->acquire(s);
    }
    all_guard(const all_guard&) = delete;
    all_guard& operator=(const all_guard&) = delete;
    ~all_guard() {
      for (std::size_t s = owner_->count_; s-- > 0;)
        owner_->release(s);
    }

   private:
    striped_locking* owner_;
  };

  [[nodiscard]] guard lock_two(std::size_t i1, std::size_t i2) noexcept {
    std::size_t a = stripe(i1), b = stripe(i2);
    if (a > b) std::swap(a, b);
    // The compare-and-swap on a holds back every later access: b's word is fetched first, so
    // that its miss overlaps a's.
    if (b != a) CCF_PREFETCH_WRITE(&versions_[b]);
    acquire(a);
    if (b != a) acquire(b);
    return guard(*this, a, b);
  }
  [[nodiscard]] all_guard lock_all() noexcept { return all_guard(*this); }

  template <class F>
  CCF_FORCEINLINE auto read(std::size_t i1, std::size_t i2, F&& f) const {
    const std::atomic<std::uint64_t>& s1 = versions_[stripe(i1)];
    const std::atomic<std::uint64_t>& s2 = versions_[stripe(i2)];
    for (;;) {
      const std::uint64_t v1 = s1.load(std::memory_order_acquire);
      const std::uint64_t v2 = s2.load(std::memory_order_acquire);
      if (CCF_UNLIKELY(((v1 | v2) & 1) != 0)) {
        CCF_CPU_RELAX();
        continue;
      }
      auto result = f();
      std::atomic_thread_fence(std::memory_order_acquire);
      if (CCF_LIKELY(s1.load(std::memory_order_relaxed) == v1 &&
                     s2.load(std::memory_order_relaxed) == v2)) {
        return result;
      }
    }
  }

  /// Batched lookups prefetch the two version words along with the buckets.
  CCF_FORCEINLINE void prefetch(std::size_t i1, std::size_t i2) const noexcept {
    CCF_PREFETCH(&versions_[stripe(i1)]);
    CCF_PREFETCH(&versions_[stripe(i2)]);
  }
  /// Batched inserts prefetch them for writing: the lock's compare-and-swap then finds its line
  /// here rather than in another core's cache.
  CCF_FORCEINLINE void prefetch_for_write(std::size_t i1, std::size_t i2) const noexcept {
    CCF_PREFETCH_WRITE(&versions_[stripe(i1)]);
    CCF_PREFETCH_WRITE(&versions_[stripe(i2)]);
  }

  std::size_t stripes() const noexcept { return count_; }
  /// The stripe of bucket i.
  std::size_t stripe_of(std::size_t i) const noexcept { return stripe(i); }

 private:
  /// The least s >= log2(group) with at most max_stripes runs of 2^s buckets.
  static unsigned shift_for(std::size_t num_buckets, std::size_t group) noexcept {
    auto s =
        static_cast<unsigned>(std::countr_zero(std::bit_ceil(std::max<std::size_t>(group, 1))));
    while (((std::max<std::size_t>(num_buckets, 1) - 1) >> s) >= max_stripes)
      ++s;
    return s;
  }
  std::size_t stripe(std::size_t i) const noexcept { return i >> shift_; }

  void acquire(std::size_t s) noexcept {
    std::atomic<std::uint64_t>& v = versions_[s];
    for (;;) {
      std::uint64_t cur = v.load(std::memory_order_relaxed);
      if ((cur & 1) == 0 && v.compare_exchange_weak(cur, cur + 1, std::memory_order_acquire,
                                                    std::memory_order_relaxed)) {
        break;
      }
      CCF_CPU_RELAX();
    }
    std::atomic_thread_fence(std::memory_order_release);
  }
  void release(std::size_t s) noexcept {
    // Only the holder writes a locked stripe: a plain release store publishes v + 2.
    std::atomic<std::uint64_t>& v = versions_[s];
    v.store(v.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }

  unsigned shift_;
  std::size_t count_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> versions_;
};

}  // namespace ccf::detail
