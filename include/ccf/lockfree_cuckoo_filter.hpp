// ccf — concurrent cuckoo filters.
// lockfree_cuckoo_filter.hpp: the lock-free concurrent cuckoo filter.
//
// ccf::lockfree_cuckoo_filter<Key, FingerprintBits, SlotsPerBucket, Hash> has the members of
// ccf::cuckoo_filter, each safe to call from any number of threads at once, and takes no lock:
// every bucket is one 64-bit word (SlotsPerBucket tags + a version counter) changed only by
// compare-and-swap, and a relocation of a tag between its two buckets is one 2-word K-CAS
// (detail/kcas.hpp). Lookups never write shared memory. The algorithm and its correctness
// argument are in detail/lockfree_core.hpp; docs/lockfree.md has the guarantees and measurements.
//
// Layouts: FingerprintBits 4..16, SlotsPerBucket 2..8, FingerprintBits * SlotsPerBucket <= 48
// (default 12 x 4, about 0.2 % false positives at 95 % load; 8 x 4 is the 2025 paper's layout).
//
// Guarantees: every operation is linearizable with respect to a multiset of tags (up to the
// version-counter wrap-around bound in lockfree_core.hpp), hence a key inserted and not erased is
// found by every contains that starts after the insert returned. insert, contains, count and
// erase are lock-free. size() is exact whenever no operation is in flight. clear() may run
// concurrently with other operations but is not atomic. Each thread that updates a lock-free
// filter holds one of ccf's 512 K-CAS descriptor slots until it exits; an update from a 513th live
// thread throws ccf::kcas_thread_limit_error. The filter is movable, not copyable.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ccf/detail/filter_frontend.hpp"
#include "ccf/detail/lockfree_core.hpp"
#include "ccf/hash.hpp"

namespace ccf {

template <class Key, unsigned FingerprintBits = 12, unsigned SlotsPerBucket = 4,
          class Hash = ccf::hash<Key>>
class lockfree_cuckoo_filter
    : public detail::basic_filter<Key, Hash,
                                  detail::lockfree_core<FingerprintBits, SlotsPerBucket>> {
  static_assert(detail::lockfree_layout_supported(FingerprintBits, SlotsPerBucket),
                "ccf::lockfree_cuckoo_filter supports FingerprintBits 4..16 and SlotsPerBucket "
                "2..8 with FingerprintBits * SlotsPerBucket <= 48 (one 62-bit word per bucket)");
  using base =
      detail::basic_filter<Key, Hash, detail::lockfree_core<FingerprintBits, SlotsPerBucket>>;

 public:
  static constexpr unsigned fingerprint_bits = FingerprintBits;
  static constexpr unsigned slots_per_bucket = SlotsPerBucket;
  /// Width of each bucket's version counter.
  static constexpr unsigned counter_bits = 62 - FingerprintBits * SlotsPerBucket;
  using base::base;

  /// Relocation hops completed so far (each one 2-word K-CAS); a diagnostic.
  std::size_t relocations() const noexcept { return this->core().relocations(); }
};

}  // namespace ccf
