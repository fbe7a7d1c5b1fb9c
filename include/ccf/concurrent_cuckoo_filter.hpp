// ccf — concurrent cuckoo filters.
// concurrent_cuckoo_filter.hpp: the lock-based concurrent cuckoo filter.
//
// ccf::concurrent_cuckoo_filter<Key, FingerprintBits, SlotsPerBucket, Hash, LockPolicy,
// Alternate, Allocator> has the members of ccf::cuckoo_filter, each safe to call from any number
// of threads at once. It is the same cuckoo engine (detail/cuckoo_engine.hpp: two-choice
// placement, lock-free breadth-first path search, paths executed backwards from the free slot one
// re-validated hop at a time) over the same bit-packed buckets, with atomic word access and one
// of three lock policies:
//
//   ccf::striped_locking     (default) striped sequence locks: writers lock the stripes of their
//                            two buckets in a fixed order; lookups take no lock at all and
//                            validate the two stripe versions instead (detail/striped_locking.hpp).
//   ccf::elided_mcs_locking  the thesis's design: one MCS queue lock with read/update modes,
//                            elided with Intel RTM where available (detail/elided_mcs_locking.hpp).
//   ccf::global_locking      one std::mutex: the baseline (detail/global_locking.hpp).
//
// Any type that satisfies ccf::lock_policy (detail/lock_policy.hpp) can be used as well.
//
// Guarantee: a key inserted (insert returned true) and not erased is found by every contains
// that starts after the insert returned, whatever other threads insert, erase or relocate in the
// meantime. size() is exact whenever no operation is in flight.
#pragma once

#include <cstdint>

#include "ccf/allocator.hpp"
#include "ccf/detail/cuckoo_engine.hpp"
#include "ccf/detail/elided_mcs_locking.hpp"
#include "ccf/detail/filter_frontend.hpp"
#include "ccf/detail/global_locking.hpp"
#include "ccf/detail/indexer.hpp"
#include "ccf/detail/lock_policy.hpp"
#include "ccf/detail/lock_protocol.hpp"
#include "ccf/detail/packed_tag_layout.hpp"
#include "ccf/detail/striped_locking.hpp"
#include "ccf/hash.hpp"

namespace ccf {

using striped_locking = detail::striped_locking;
using elided_mcs_locking = detail::elided_mcs_locking;
using global_locking = detail::global_locking;
using detail::lock_policy;

template <class Key, unsigned FingerprintBits = 16, unsigned SlotsPerBucket = 4,
          class Hash = ccf::hash<Key>, lock_policy LockPolicy = striped_locking,
          class Alternate = chunked_alternate, class Allocator = table_allocator<std::uint64_t>>
class concurrent_cuckoo_filter
    : public detail::basic_filter<
          Key, Hash,
          detail::cuckoo_engine<detail::packed_tag_layout<FingerprintBits, SlotsPerBucket>,
                                detail::lock_protocol<LockPolicy>, Allocator>,
          Alternate> {
  using base = detail::basic_filter<
      Key, Hash,
      detail::cuckoo_engine<detail::packed_tag_layout<FingerprintBits, SlotsPerBucket>,
                            detail::lock_protocol<LockPolicy>, Allocator>,
      Alternate>;

 public:
  using lock_policy = LockPolicy;
  static_assert(detail::is_filter_width(FingerprintBits),
                "FingerprintBits must be 4, 8, 12, 16 or 32");
  using base::base;
};

}  // namespace ccf
