// ccf — concurrent cuckoo filters.
// cuckoo_filter.hpp: the single-threaded cuckoo filter.
//
// ccf::cuckoo_filter<Key, FingerprintBits, SlotsPerBucket, Hash> stores a FingerprintBits-bit tag
// per item in a table of buckets of SlotsPerBucket slots (bit-packed: no padding between buckets),
// with partial-key cuckoo hashing: an item lives in bucket i1 = h(key) or i2 = alt(i1, tag), alt an
// involution over any bucket count. Lookups test both buckets with bit-parallel tag matching.
// Inserts that find both buckets full run a bounded breadth-first search for a cuckoo path and
// only then move tags, so a refused insert (the table is full) changes nothing.
// False positive rate about 2 * SlotsPerBucket * load / (2^FingerprintBits - 1); no false
// negatives for items inserted and not erased. Erase only what was inserted.
//
// Not thread-safe (one writer, no concurrent readers): use ccf::concurrent_cuckoo_filter or
// ccf::lockfree_cuckoo_filter for that. The algorithm is the one in detail/cuckoo_core.hpp, with
// plain words and no locks.
#pragma once

#include <cstdint>

#include "ccf/detail/cuckoo_core.hpp"
#include "ccf/detail/filter_frontend.hpp"
#include "ccf/detail/null_locking.hpp"
#include "ccf/detail/word_policy.hpp"
#include "ccf/hash.hpp"

namespace ccf {

template <class Key, unsigned FingerprintBits = 16, unsigned SlotsPerBucket = 4,
          class Hash = ccf::hash<Key>>
class cuckoo_filter
    : public detail::basic_filter<Key, Hash,
                                  detail::cuckoo_core<FingerprintBits, SlotsPerBucket,
                                                      detail::plain_words, detail::null_locking>> {
  using base = detail::basic_filter<Key, Hash,
                                    detail::cuckoo_core<FingerprintBits, SlotsPerBucket,
                                                        detail::plain_words, detail::null_locking>>;

 public:
  static constexpr unsigned fingerprint_bits = FingerprintBits;
  static constexpr unsigned slots_per_bucket = SlotsPerBucket;
  using base::base;
};

}  // namespace ccf
