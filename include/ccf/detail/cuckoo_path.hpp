// ccf — concurrent cuckoo filters.
// detail/cuckoo_path.hpp: the breadth-first search for a cuckoo path, shared by every core.
//
// search() looks, without writing anything, for a bucket with a free slot reachable from i1 or
// i2 by moving tags to their alternate buckets. The queue starts with i1 and i2; a popped bucket
// with a free slot ends the search; otherwise each of its tags t queues alt(bucket, t), and that
// bucket is prefetched as it is queued, so the search has many cache misses in flight at once.
// At most `max_kicks` buckets are queued beyond i1 and i2. A node records the tag that would move
// into its bucket and the node it would move from.
//
// execute() walks the path found backwards, from the free slot to i1 / i2, calling hop(src, dst,
// tag) for each move; each core's hop re-validates and performs one move atomically (under two
// locks, or as one 2-word K-CAS), and execute stops at the first hop that no longer applies.
//
// Also shared by the cores: the argument check of the thesis's table API and the per-thread
// random choice of a kick-out victim.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

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

template <class Tag>
class cuckoo_path {
 public:
  struct node {
    std::size_t bucket;    // bucket this node stands for
    std::uint32_t parent;  // node whose bucket the tag moves out of (no_parent for i1 / i2)
    Tag tag;               // the tag that moves from the parent's bucket into this one
  };
  using queue = std::vector<node>;
  static constexpr std::uint32_t no_parent = std::numeric_limits<std::uint32_t>::max();
  static constexpr std::size_t none = std::numeric_limits<std::size_t>::max();

  /// The calling thread's search queue, reused across inserts.
  static queue& scratch() {
    thread_local queue q;
    return q;
  }

  /// Returns the index in `q` of a node whose bucket has a free slot, or `none`. `view` offers
  /// load(i) -> B, prefetch(i), and static free_slot(const B&) -> int, tag_at(const B&, s) -> Tag;
  /// `indexer` offers alt_index(i, tag).
  template <unsigned Slots, class View, class Indexer>
  static std::size_t search(queue& q, std::size_t i1, std::size_t i2, std::size_t max_kicks,
                            const View& view, const Indexer& indexer) {
    q.clear();
    q.push_back({i1, no_parent, 0});
    if (i2 != i1) q.push_back({i2, no_parent, 0});
    const std::size_t limit = max_kicks + q.size();
    for (std::size_t head = 0; head < q.size(); ++head) {
      const std::size_t index = q[head].bucket;
      const auto b = view.load(index);
      if (View::free_slot(b) >= 0) return head;
      if (q.size() + Slots > limit) continue;
      for (unsigned s = 0; s < Slots; ++s) {
        const Tag t = View::tag_at(b, s);
        const std::size_t alt = indexer.alt_index(index, t);
        if (alt == index) continue;  // a tag whose two buckets coincide cannot move
        view.prefetch(alt);
        q.push_back({alt, static_cast<std::uint32_t>(head), t});
      }
    }
    return none;
  }

  /// Executes the path ending at `leaf`: hop(src, dst, tag) from the free slot back to i1 / i2.
  template <class Hop>
  static bool execute(const queue& q, std::size_t leaf, Hop&& hop) {
    for (std::size_t n = leaf; q[n].parent != no_parent; n = q[n].parent) {
      if (!hop(q[q[n].parent].bucket, q[n].bucket, q[n].tag)) return false;
    }
    return true;
  }
};

}  // namespace ccf::detail
