// ccf — concurrent cuckoo filters.
// cuckoo_filter.hpp: the single-threaded cuckoo filter.
//
// ccf::cuckoo_filter<Key, FingerprintBits, SlotsPerBucket, Hash, Alternate, Allocator> stores a
// FingerprintBits-bit tag per item in a table of buckets of SlotsPerBucket slots (bit-packed: no
// padding between buckets), with partial-key cuckoo hashing: an item lives in bucket i1 = h(key)
// or i2 = alt(i1, tag), alt an involution over any bucket count. With the default
// ccf::chunked_alternate both buckets lie in one chunk of at most 2^19 slots (1 MiB at 16-bit x
// 4), ccf::global_alternate lets i2 be anywhere. Lookups test both buckets with bit-parallel tag
// matching. Inserts that find both buckets full run a bounded breadth-first search for a cuckoo
// path and only then move tags, so a refused insert (the table is full) changes nothing.
// False positive rate about 2 * SlotsPerBucket * load / (2^FingerprintBits - 1); no false
// negatives for items inserted and not erased. Erase only what was inserted.
//
// Not thread-safe (one writer, no concurrent readers): use ccf::concurrent_cuckoo_filter or
// ccf::lockfree_cuckoo_filter for that. It is the cuckoo engine (detail/cuckoo_engine.hpp) over
// bit-packed tags, with plain words and no locks.
#pragma once

#include <cstdint>

#include "ccf/allocator.hpp"
#include "ccf/detail/cuckoo_engine.hpp"
#include "ccf/detail/filter_frontend.hpp"
#include "ccf/detail/indexer.hpp"
#include "ccf/detail/lock_protocol.hpp"
#include "ccf/detail/null_locking.hpp"
#include "ccf/detail/packed_tag_layout.hpp"
#include "ccf/hash.hpp"

namespace ccf {

template <class Key, unsigned FingerprintBits = 16, unsigned SlotsPerBucket = 4,
          class Hash = ccf::hash<Key>, class Alternate = chunked_alternate,
          class Allocator = table_allocator<std::uint64_t>>
class cuckoo_filter
    : public detail::basic_filter<
          Key, Hash,
          detail::cuckoo_engine<detail::packed_tag_layout<FingerprintBits, SlotsPerBucket>,
                                detail::lock_protocol<detail::null_locking>, Allocator>,
          Alternate> {
  using base = detail::basic_filter<
      Key, Hash,
      detail::cuckoo_engine<detail::packed_tag_layout<FingerprintBits, SlotsPerBucket>,
                            detail::lock_protocol<detail::null_locking>, Allocator>,
      Alternate>;

 public:
  static_assert(detail::is_filter_width(FingerprintBits),
                "FingerprintBits must be 4, 8, 12, 16 or 32");
  using base::base;
};

}  // namespace ccf
