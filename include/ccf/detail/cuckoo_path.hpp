// ccf — concurrent cuckoo filters.
// detail/cuckoo_path.hpp: the breadth-first search for a cuckoo path, shared by every table.
//
// search() looks, without writing anything, for a bucket with a free slot reachable from i1 or
// i2 by moving items to their alternate buckets, breadth first and level by level (see search()).
// At most `max_kicks` buckets are queued beyond i1 and i2. Every node records its bucket and the
// value of the slot it moves as the search saw it (the tag, or tag and payload): a path moves
// slots, not tags, so an item with a payload is never confused with another one of the same tag.
// Where the item comes from, the parent node and the slot in its bucket, follows from the node's
// place in the queue: the breadth-first layout puts node h's children at 2 + h * Slots, in slot
// order (smaller nodes, and half the stores per queued bucket).
//
// execute() walks the path found backwards, from the free slot to i1 / i2, calling
// hop(src, slot, value, dst, last) for each move; each hop re-validates (the slot still holds that
// value, dst still has room) and moves the item atomically under the table's protocol, and
// execute stops at the first hop that no longer applies. The last move, out of i1 or i2, is
// marked as such: the engine puts the new item into the slot it frees in the same atomic change.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
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

/// How a path search waits for memory. `ahead`: every level's buckets are computed first and
/// prefetched together (a search of a table in memory waits about once per level); `cached`:
/// each bucket's alternates are computed and tested at once, stopping at the first with room
/// (the table, or the chunk searched, is in the caches: nothing to wait for, less to compute).
enum class search_mode { ahead, cached };

template <class Slot, unsigned Slots>
class cuckoo_path {
 public:
  /// Node n >= roots is the item in slot slot_of(n) of node parent(n)'s bucket, moved to its
  /// other bucket: the breadth-first layout places node h's children at roots + h * Slots, so
  /// neither needs storing.
  struct node {
    std::size_t bucket;  // bucket this node stands for
    Slot value;          // the item as the search saw it
  };
  using queue = std::vector<node>;
  /// Nodes 0 and 1 are i1 and i2 (the same bucket twice when i1 == i2: the copy's children are
  /// the first root's, which were full, so it never leads anywhere).
  static constexpr std::size_t roots = 2;
  static constexpr std::size_t parent(std::size_t n) noexcept { return (n - roots) / Slots; }
  static constexpr unsigned slot_of(std::size_t n) noexcept {
    return static_cast<unsigned>((n - roots) % Slots);
  }
  static constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
  /// Buckets an `ahead` search keeps prefetched beyond the one it tests.
  static constexpr std::size_t prefetch_burst = 32;

  /// The calling thread's search queue, reused across inserts (sized once, then used as an
  /// array: no push_back on the search's path).
  static queue& scratch() {
    thread_local queue q;
    return q;
  }

  /// Sizes `q` for searches of up to `max_kicks` buckets beyond the roots (a search sizes it
  /// itself; a caller that must not see that allocation throw does it first).
  static void reserve(queue& q, std::size_t max_kicks) {
    if (q.size() < max_kicks + roots + Slots) q.resize(max_kicks + roots + Slots);
  }

  /// Returns the index in `q` of a node whose bucket has a free slot, or `none`. The caller
  /// found i1 and i2 full (the roots, nodes 0 and 1, the same bucket twice when i1 == i2).
  /// `table` offers load(i) and prefetch(i); `indexer` offers alt_in(base, i, tag); every bucket
  /// of the search lies in the chunk that starts at `base`. Breadth first, level by level: node
  /// h's items become the Slots nodes that start at roots + h * Slots (one per slot, in slot
  /// order). The Slots children of a node are tested together, branch-free, and the search stops
  /// at the first group with room. At most `max_kicks` buckets are queued beyond the roots. An
  /// item whose two buckets coincide cannot move: its node is never taken.
  template <class Layout, search_mode Mode, class Table, class Indexer>
  static std::size_t search(queue& q, std::size_t i1, std::size_t i2, std::size_t base,
                            std::size_t max_kicks, const Table& table, const Indexer& indexer) {
    static_assert(Layout::slots == Slots);
    constexpr std::size_t slots = Slots;
    const std::size_t limit = max_kicks + 2;
    reserve(q, max_kicks);
    node* const nodes = q.data();
    nodes[0] = {i1, Slot{}};
    nodes[1] = {i2, Slot{}};
    std::size_t size = roots;  // nodes [0, size) are queued
    for (std::size_t begin = 0; begin < size;) {
      const std::size_t end = size;  // this level: nodes [begin, end), all full
      std::size_t level_end = end;   // its children queued so far (ahead: all of them)
      if constexpr (Mode == search_mode::ahead) {
        for (std::size_t h = begin; h < end && level_end + slots <= limit; ++h) {
          expand<Layout>(nodes, h, level_end, base, table, indexer,
                         level_end - end < prefetch_burst);
          level_end += slots;
        }
      }
      for (std::size_t h = begin; h < end && size + slots <= limit; ++h, size += slots) {
        std::array<std::size_t, slots> child;
        if constexpr (Mode == search_mode::cached) {
          child = expand<Layout>(nodes, h, size, base, table, indexer, false);
        } else {
          const std::size_t ahead = size + prefetch_burst;
          for (std::size_t k = ahead; k < std::min(level_end, ahead + slots); ++k)
            table.prefetch(nodes[k].bucket);
          CCF_UNROLL_SLOTS
          for (unsigned c = 0; c < slots; ++c)
            child[c] = nodes[size + c].bucket;
        }
        if (const std::uint32_t room = room_in<Layout>(child, nodes[h].bucket, table)) {
          return size + static_cast<std::size_t>(std::countr_zero(room));
        }
      }
      begin = end;
    }
    return none;
  }

  /// Executes the path ending at `leaf` (never a root): hop(src, slot, value, dst, last) from
  /// the free slot back to i1 / i2; `last` is true for the move out of i1 or i2. False when a hop
  /// no longer applied.
  template <class Hop>
  static bool execute(const queue& q, std::size_t leaf, Hop&& hop) {
    for (std::size_t n = leaf; n >= roots; n = parent(n)) {
      const std::size_t from = parent(n);
      if (!hop(q[from].bucket, slot_of(n), q[n].value, q[n].bucket, from < roots)) return false;
    }
    return true;
  }

 private:
  /// Bit c set when bucket child[c] has a free slot and is not `parent` (an item whose two
  /// buckets coincide cannot move): the children of one node tested together, with no branch
  /// between them.
  template <class Layout, class Table>
  static CCF_FORCEINLINE std::uint32_t room_in(const std::array<std::size_t, Layout::slots>& child,
                                               std::size_t parent, const Table& table) {
    std::uint32_t room = 0;
    CCF_UNROLL_SLOTS
    for (unsigned c = 0; c < Layout::slots; ++c) {
      const bool free = Layout::free(table.load(child[c])).any();
      room |= (static_cast<std::uint32_t>(free) & static_cast<std::uint32_t>(child[c] != parent))
              << c;
    }
    return room;
  }
  /// Writes node h's children (one per slot of its bucket: the slot's item moved to its other
  /// bucket) at nodes [at, at + Slots), prefetching them if asked, and returns their buckets.
  template <class Layout, class Table, class Indexer>
  static CCF_FORCEINLINE std::array<std::size_t, Layout::slots> expand(
      node* nodes, std::size_t h, std::size_t at, std::size_t base, const Table& table,
      const Indexer& indexer, bool prefetch) {
    const std::size_t index = nodes[h].bucket;
    const auto b = table.load(index);
    std::array<std::size_t, Layout::slots> child;
    CCF_UNROLL_SLOTS
    for (unsigned s = 0; s < Layout::slots; ++s) {
      const Slot v = Layout::get(b, s);
      child[s] = indexer.alt_in(base, index, Layout::tag_of(v));
      nodes[at + s] = {child[s], v};
      if (prefetch) table.prefetch(child[s]);
    }
    return child;
  }
};

}  // namespace ccf::detail
