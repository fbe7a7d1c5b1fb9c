// ccf — concurrent cuckoo filters.
// detail/cuckoo_path.hpp: the breadth-first search for a cuckoo path, shared by every table.
//
// search() looks, without writing anything, for a bucket with a free slot reachable from i1 or
// i2 by moving items to their alternate buckets, breadth first and level by level (see search()).
// At most `max_kicks` buckets are queued beyond i1 and i2. Every node records where its item
// comes from: the parent node, the slot in the parent's bucket, and the slot's value as the search
// saw it (the tag, or tag and payload): a path moves slots, not tags, so an item with a payload
// is never confused with another one of the same tag.
//
// execute() walks the path found backwards, from the free slot to i1 / i2, calling
// hop(src, slot, value, dst) for each move; each hop re-validates (the slot still holds that
// value, dst still has room) and moves the item atomically under the table's protocol, and
// execute stops at the first hop that no longer applies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "ccf/config.hpp"

namespace ccf::detail {

/// Throws std::out_of_range unless slot j of bucket i exists (the thesis's table API checks its
/// arguments; the filters' own operations never produce bad ones).
inline void check_bucket_slot(std::size_t i, unsigned j, std::size_t num_buckets, unsigned slots) {
  if (i >= num_buckets || j >= slots) {
    throw std::out_of_range("ccf: bucket " + std::to_string(i) + " slot " + std::to_string(j) +
                            " is outside a table of " + std::to_string(num_buckets) +
                            " buckets x " + std::to_string(slots) + " slots");
  }
}

/// A per-thread xorshift generator: which slot a kick-out evicts.
inline unsigned victim_random() noexcept {
  thread_local std::uint64_t state = 0x2545f4914f6cdd1dULL;
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return static_cast<unsigned>(state >> 32);
}

template <class Slot>
class cuckoo_path {
 public:
  struct node {
    std::size_t bucket;    // bucket this node stands for
    std::uint32_t parent;  // node whose bucket the item moves out of (no_parent for i1 / i2)
    std::uint32_t slot;    // the item's slot in the parent's bucket
    Slot value;            // the item as the search saw it
  };
  using queue = std::vector<node>;
  static constexpr std::uint32_t no_parent = std::numeric_limits<std::uint32_t>::max();
  static constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
  static constexpr std::size_t prefetch_burst = 32;

  /// The calling thread's search queue, reused across inserts (sized once, then used as an
  /// array: no push_back on the search's path).
  static queue& scratch() {
    thread_local queue q;
    return q;
  }

  /// Returns the index in `q` of a node whose bucket has a free slot, or `none`. `table` offers
  /// load(i) and prefetch(i); `indexer` offers alt_in(base, i, tag); every bucket of the search
  /// lies in the chunk that starts at `base`. The search goes level by level: a level's buckets
  /// are scanned for room (they were prefetched together, so their cache misses overlapped), and
  /// only when all of them are full are their items expanded into the next level, whose
  /// alternates are computed in one pass (independent multiplies) and prefetched together, up to
  /// `prefetch_burst` at a time. A search at 95 % load reads about 14 buckets in two levels: two
  /// rounds of memory latency instead of one per bucket.
  template <class Layout, class Table, class Indexer>
  static std::size_t search(queue& q, std::size_t i1, std::size_t i2, std::size_t base,
                            std::size_t max_kicks, const Table& table, const Indexer& indexer) {
    const std::size_t limit = max_kicks + 2;
    if (q.size() < limit + Layout::slots) q.resize(limit + Layout::slots);
    node* const nodes = q.data();
    std::size_t size = 0;
    nodes[size++] = {i1, no_parent, 0, Slot{}};
    if (i2 != i1) nodes[size++] = {i2, no_parent, 0, Slot{}};
    for (std::size_t begin = 0; begin < size;) {
      const std::size_t end = size;
      for (std::size_t h = begin; h < end; ++h) {
        if (h + prefetch_burst < end) table.prefetch(nodes[h + prefetch_burst].bucket);
        if (Layout::free(table.load(nodes[h].bucket)).any()) return h;
      }
      for (std::size_t h = begin; h < end && size + Layout::slots <= limit; ++h) {
        const std::size_t index = nodes[h].bucket;
        const auto b = table.load(index);
        for (unsigned s = 0; s < Layout::slots; ++s) {
          const Slot v = Layout::get(b, s);
          const std::size_t alt = indexer.alt_in(base, index, Layout::tag_of(v));
          if (alt == index) continue;  // an item whose two buckets coincide cannot move
          nodes[size] = {alt, static_cast<std::uint32_t>(h), s, v};
          if (size - end < prefetch_burst) table.prefetch(alt);
          ++size;
        }
      }
      begin = end;
    }
    return none;
  }

  /// Executes the path ending at `leaf`: hop(src, slot, value, dst) from the free slot back to
  /// i1 / i2. False when a hop no longer applied.
  template <class Hop>
  static bool execute(const queue& q, std::size_t leaf, Hop&& hop) {
    for (std::size_t n = leaf; q[n].parent != no_parent; n = q[n].parent) {
      if (!hop(q[q[n].parent].bucket, q[n].slot, q[n].value, q[n].bucket)) return false;
    }
    return true;
  }
};

}  // namespace ccf::detail
