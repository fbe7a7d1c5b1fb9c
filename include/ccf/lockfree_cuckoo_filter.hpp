// ccf — concurrent cuckoo filters.
// lockfree_cuckoo_filter.hpp: the lock-free concurrent cuckoo filter.
//
// ccf::lockfree_cuckoo_filter<Key, FingerprintBits, SlotsPerBucket, Hash, Alternate, Allocator>
// has the members of ccf::cuckoo_filter, each safe to call from any number of threads at once,
// and takes no lock: every bucket is one 64-bit word (SlotsPerBucket tags, a version counter and
// a seal bit) changed only by compare-and-swap, and a relocation of a tag between its two buckets
// is one 2-word K-CAS (detail/kcas.hpp). Lookups never write shared memory. It is the cuckoo
// engine (detail/cuckoo_engine.hpp) over versioned tag words with the K-CAS protocol
// (detail/kcas_protocol.hpp, which holds the correctness argument); docs/lockfree.md has the
// guarantees and measurements.
//
// Layouts: FingerprintBits 4..16, SlotsPerBucket 2..8, FingerprintBits * SlotsPerBucket <= 48
// (default 12 x 4, about 0.2 % false positives at 95 % load; 8 x 4 is the 2025 paper's layout).
//
// Guarantees: every operation is linearizable with respect to a multiset of tags (up to the
// version-counter wrap-around bound in kcas_protocol.hpp), hence a key inserted and not erased is
// found by every contains that starts after the insert returned. insert, contains, count and
// erase are lock-free. size() is exact whenever no operation is in flight. save() and clear() seal
// the table for their duration: they see (and clear) one consistent snapshot, and writers wait
// until they are done. Files are those of the other filters: a lock-free filter's file loads into
// a cuckoo_filter of the same layout and back (2, 4 or 8 slots a bucket; other bucket sizes have
// no file members). A thread takes one of ccf's 512 K-CAS descriptor slots at its first save or
// clear, its first update that moves an entry between buckets, or the first time it helps another
// thread's K-CAS, and keeps it until it exits; such a call from a thread past the limit throws
// ccf::kcas_thread_limit_error, having changed nothing. The filter is movable, not copyable.
#pragma once

#include <cstdint>

#include "ccf/allocator.hpp"
#include "ccf/detail/cuckoo_engine.hpp"
#include "ccf/detail/filter_frontend.hpp"
#include "ccf/detail/indexer.hpp"
#include "ccf/detail/kcas_protocol.hpp"
#include "ccf/detail/versioned_tag_layout.hpp"
#include "ccf/hash.hpp"

namespace ccf {

template <class Key, unsigned FingerprintBits = 12, unsigned SlotsPerBucket = 4,
          class Hash = ccf::hash<Key>, class Alternate = chunked_alternate,
          class Allocator = table_allocator<std::uint64_t>>
class lockfree_cuckoo_filter
    : public detail::basic_filter<
          Key, Hash,
          detail::cuckoo_engine<detail::versioned_tag_layout<FingerprintBits, SlotsPerBucket>,
                                detail::kcas_protocol, Allocator>,
          Alternate> {
  using layout = detail::versioned_tag_layout<FingerprintBits, SlotsPerBucket>;
  using base = detail::basic_filter<
      Key, Hash, detail::cuckoo_engine<layout, detail::kcas_protocol, Allocator>, Alternate>;

 public:
  /// Width of each bucket's version counter.
  static constexpr unsigned counter_bits = layout::counter_bits;
  using base::base;
};

}  // namespace ccf
