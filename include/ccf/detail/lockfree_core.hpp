// ccf — concurrent cuckoo filters.
// detail/lockfree_core.hpp: the lock-free cuckoo filter's algorithm, on ccf's K-CAS.
//
// Layout. A lockfree_table (detail/lockfree_table.hpp): one kcas_word per bucket holding S tags
// of F bits and a version counter (12 x 4: tags in bits 0..47, counter in bits 48..61), n buckets
// with n from buckets_for_capacity (not a power of two), bucket_indexer<F> for {i1, i2, tag}, a
// sharded item counter, and a sharded count of relocation hops (diagnostics). No locks, and no
// per-operation allocation: the K-CAS descriptors are per thread and reused (kcas.hpp).
//
// Invariants.
//   (I1) Every stored tag t lies in bucket i or alt(i, t) of a key that stored it, so a copy of t
//        found in bucket i1 can only have come from a key whose two buckets are {i1, i2}.
//   (I2) Every change of a bucket word advances its counter by exactly one (mod 2^c, c =
//        62 - S*F): insert, erase, both words of a hop, clear, and the table API. The counter is a
//        version number, not only a relocation count (see "Why versions" below).
//   (I3) A relocation (hop) is one 2-word K-CAS that removes t from bucket src and puts it into a
//        free slot of dst = alt(src, t): at every instant each tag is in exactly one bucket, so
//        the copies of t in {i1, i2} change only by inserts (+1) and erases (-1).
//
// Insert. Read w1 = bucket i1 and w2 = bucket i2 (kcas_load: reads, never writes). If either has a
// free slot, put the tag into the one with more free slots (two choices keep buckets evenly
// filled) by one single-word cas(word, seen, seen + tag + version); if the cas fails the word
// changed, so read both again. If both are full, read both again: equal words mean both were
// full at one instant (the double collect below), which is where a refused insert linearizes.
// Then a breadth-first search (no writes) looks for a cuckoo path: from i1 and i2, every queued
// bucket's tags are expanded to their alternate buckets (children prefetched as they are queued)
// until a bucket with a free slot turns up or max_kicks buckets are queued. The path is executed
// backwards from the free slot, one hop per 2-word kcas: the source word loses the tag, the
// destination word gains it in a free slot, both versions advance. Each hop re-reads its two
// words and re-checks "tag still in src, room still in dst" before its K-CAS and retries a few
// times when the K-CAS fails on changed words; a hop that no longer applies abandons the path.
// Then the insert tries i1 / i2 again, searching anew if the slot was taken (at most 64 rounds).
// Nothing moves before a whole path is known and every completed hop keeps (I1) and (I3), so a
// refused insert changes nothing any reader can tell apart from a relocation.
//
// Lookups (contains, count) and erase use a double collect. Read w1 at T1, w2 at T2, then w1 at
// T3 and w2 at T4 (T1 < T2 < T3 < T4). If a read shows the tag, the answer is "present" at that
// read (contains returns at once: a positive lookup costs two loads). Otherwise, if w1(T3) ==
// w1(T1) and w2(T4) == w2(T2), then by (I2) neither word changed in between (up to the counter
// wrap-around below), so throughout [T2, T3] the buckets held exactly the values read: a
// snapshot of both, and the answer computed from it linearizes at T2. If a word changed, the
// second pair becomes the first pair of the next round. erase uses the first pair to pick the
// word (i1 first, else i2) and removes one copy with one single-word cas; "absent" needs the
// validated snapshot. count always needs it (and then is exact).
//
// Why a present tag is never missed. Suppose the copies of t in {i1, i2} never dropped to zero
// during a lookup, and the lookup answered "absent": t was in no word it read and the words were
// equal pairwise. By the snapshot argument both words held values without t at one instant in
// [T2, T3], contradicting the assumption: a "false" answer needs a counter to wrap around exactly
// (next paragraph). In particular an item inserted before the lookup started and not erased is
// always found, whatever relocations run meanwhile.
//
// Why versions, not relocation counters. With counters that only hops advance (as in the 2025
// paper), a lookup that compares counters can answer "absent" while the item is present if
// inserts and erases of the same key run meanwhile: e.g. t sits only in w2; the lookup reads w1
// (no t); another thread inserts t into w1; a third erases the copy in w2; the lookup reads w2
// (no t), then re-reads w1: t is there, but the counters are unchanged and the lookup answers
// "absent" although one copy existed at every instant. Versions cost nothing extra (the counter
// travels in the same CAS) and make lookups linearizable, so ccf's linearizability test can
// check every operation against a sequential multiset.
//
// Counter wrap-around: the bound. A wrong "absent" needs a word to pass through a non-zero
// multiple of 2^c changes between the lookup's two reads of it and come back bit-identical
// (same tags, counter equal mod 2^c). With c = 14 (12 x 4) that is at least 16,384 successful
// CAS / K-CAS operations on that one bucket between two loads a few nanoseconds apart; each
// costs a cache-line transfer (>= ~5-20 ns), so the lookup must be stalled (preempted) for at
// least ~0.1-0.3 ms while other threads hammer that same bucket without pause, and even then the
// count of changes must land on a multiple of 16,384: probability 2^-14 ~ 6.1e-5 for an
// arbitrary count. For an item that is not itself being erased and re-inserted meanwhile it is
// worse still for the adversary: the tag can only leave w1 and reappear in w2 by hops, which
// advance both words, so both counters must wrap exactly: 2^-28 ~ 3.7e-9 per such stalled
// lookup. With a uniform workload the per-bucket update rate is the total rate divided by n
// (100 M updates/s over 1 M buckets: one bucket sees 16,384 changes in ~160 s), so the bound
// only matters for a few hot buckets. 8 x 4 words have 30-bit counters: 2^-30 and 2^-60, and
// >= 2^30 changes of one bucket (seconds of hammering) between two loads.
//
// Progress. Lock-free: an operation retries only when a word it read changed, i.e. another
// operation succeeded (a failed cas / K-CAS means the word held another value), and the K-CAS is
// lock-free itself. Lookups never write shared memory (kcas_load), so they scale with cores;
// insert, erase and hops are one CAS / one K-CAS each in the absence of contention. An insert
// that keeps losing races gives up after 64 search rounds and reports "full" (only at very high
// load under heavy contention, as in the lock-based core). Memory orders: kcas_load, cas and
// kcas are sequentially consistent (kcas.hpp), so every read and write of a bucket word takes
// part in one total order; the double collect relies on nothing else.
//
// clear() empties each bucket with one cas (version advanced) and subtracts what it removed
// from the item count: safe to run concurrently with any operation, but not atomic as a whole
// (an insert that runs meanwhile may survive it). The thesis's table API (read_tag, write_tag,
// find_tag_in_buckets, delete_tag_from_bucket, insert_tag_to_bucket) is implemented with cas on
// the bucket words.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "ccf/config.hpp"
#include "ccf/detail/cuckoo_path.hpp"
#include "ccf/detail/hashing.hpp"
#include "ccf/detail/item_counter.hpp"
#include "ccf/detail/kcas.hpp"
#include "ccf/detail/lockfree_table.hpp"
#include "ccf/detail/sizing.hpp"

namespace ccf::detail {

template <unsigned Bits, unsigned Slots>
class lockfree_core {
 public:
  using table_type = lockfree_table<Bits, Slots>;
  using format = typename table_type::format;
  using tag_type = typename format::tag_type;
  using indexer_type = bucket_indexer<Bits>;
  using position = typename indexer_type::position;

  static constexpr std::size_t default_max_kicks = 500;
  /// Search-and-execute rounds one insert may run before it reports "full".
  static constexpr unsigned max_attempts = 64;
  /// K-CAS attempts of one hop whose words keep changing before the path is abandoned.
  static constexpr unsigned hop_retries = 8;

  lockfree_core(std::size_t capacity, std::size_t max_kicks)
      : table_(checked_buckets(capacity)), indexer_(table_.num_buckets()), max_kicks_(max_kicks) {
    // The load-factor rule's capacity, unless the table was grown for a short fingerprint (then
    // what was asked for is what is promised): the same rule as cuckoo_core.
    const auto by_load = static_cast<std::size_t>(static_cast<double>(table_.num_buckets()) *
                                                  Slots * design_load(Slots, Bits));
    capacity_ = by_load <= capacity + capacity / 20 + 64 ? std::max(by_load, capacity) : capacity;
  }

  const table_type& table() const noexcept { return table_; }
  const indexer_type& indexer() const noexcept { return indexer_; }
  std::size_t capacity() const noexcept { return capacity_; }
  std::size_t size() const noexcept { return count_.get(); }
  std::size_t max_kicks() const noexcept { return max_kicks_; }
  /// Relocation hops completed so far (each one 2-word K-CAS); a diagnostic.
  std::size_t relocations() const noexcept { return hops_.get(); }

  CCF_FORCEINLINE void prefetch(const position& p) const noexcept {
    table_.prefetch(p.i1);
    table_.prefetch(p.i2);
  }
  CCF_FORCEINLINE void prefetch_for_write(const position& p) const noexcept {
    table_.prefetch_for_write(p.i1);
    table_.prefetch_for_write(p.i2);
  }

  bool insert(const position& p) {
    typename path::queue& q = path::scratch();
    for (unsigned attempt = 0; attempt < max_attempts; ++attempt) {
      if (place(p)) return true;
      const std::size_t leaf =
          path::template search<Slots>(q, p.i1, p.i2, max_kicks_, search_view{table_}, indexer_);
      if (leaf == path::none) return false;
      // A path that no longer applies is searched for again.
      path::execute(q, leaf, [this](std::size_t src, std::size_t dst, tag_type tag) {
        return hop(src, dst, tag);
      });
    }
    return false;
  }

  CCF_FORCEINLINE bool contains(const position& p) const noexcept {
    const kcas_word& w1 = table_.word(p.i1);
    if (p.i1 == p.i2) return format::has(kcas_load(w1), p.tag);
    const kcas_word& w2 = table_.word(p.i2);
    std::uint64_t a1 = kcas_load(w1);
    std::uint64_t a2 = kcas_load(w2);
    for (;;) {
      if (format::has(a1, p.tag) || format::has(a2, p.tag)) return true;
      const std::uint64_t b1 = kcas_load(w1);
      const std::uint64_t b2 = kcas_load(w2);
      if (b1 == a1 && b2 == a2) return false;  // a snapshot without the tag
      a1 = b1;
      a2 = b2;
    }
  }

  std::size_t count(const position& p) const noexcept {
    const kcas_word& w1 = table_.word(p.i1);
    if (p.i1 == p.i2) return format::count(kcas_load(w1), p.tag);
    const kcas_word& w2 = table_.word(p.i2);
    std::uint64_t a1 = kcas_load(w1);
    std::uint64_t a2 = kcas_load(w2);
    for (;;) {
      const std::uint64_t b1 = kcas_load(w1);
      const std::uint64_t b2 = kcas_load(w2);
      if (b1 == a1 && b2 == a2) return format::count(a1, p.tag) + format::count(a2, p.tag);
      a1 = b1;
      a2 = b2;
    }
  }

  bool erase(const position& p) {
    kcas_word& w1 = table_.word(p.i1);
    kcas_word& w2 = table_.word(p.i2);
    const bool one = p.i1 == p.i2;
    std::uint64_t a1 = kcas_load(w1);
    std::uint64_t a2 = one ? a1 : kcas_load(w2);
    for (;;) {
      int j = format::find(a1, p.tag);
      const bool first = j >= 0;
      if (!first && !one) j = format::find(a2, p.tag);
      if (j >= 0) {
        kcas_word& w = first ? w1 : w2;
        const std::uint64_t seen = first ? a1 : a2;
        if (cas(w, seen, format::bump(format::set_tag(seen, static_cast<unsigned>(j), 0)))) {
          count_.add(-1);
          return true;
        }
        a1 = kcas_load(w1);
        a2 = one ? a1 : kcas_load(w2);
        continue;
      }
      if (one) return false;  // one word: the single read is a snapshot
      const std::uint64_t b1 = kcas_load(w1);
      const std::uint64_t b2 = kcas_load(w2);
      if (b1 == a1 && b2 == a2) return false;
      a1 = b1;
      a2 = b2;
    }
  }

  /// Empties every bucket, one cas per non-empty bucket. Safe concurrently with other
  /// operations, but not atomic as a whole.
  void clear() {
    std::ptrdiff_t removed = 0;
    for (std::size_t i = 0; i < table_.num_buckets(); ++i) {
      kcas_word& w = table_.word(i);
      for (std::uint64_t v = kcas_load(w); (v & format::tag_mask) != 0; v = kcas_load(w)) {
        if (cas(w, v, format::bump(v & format::counter_mask))) {
          removed += static_cast<std::ptrdiff_t>(Slots - format::free_slots(v));
          break;
        }
      }
    }
    count_.add(-removed);
  }

  // ---- the thesis's HashTable operations, each one cas on a bucket word ----
  tag_type read_tag(std::size_t i, unsigned j) const {
    check_slot(i, j);
    return format::tag_at(table_.load(i), j);
  }
  void write_tag(std::size_t i, unsigned j, tag_type tag) {
    check_slot(i, j);
    check_tag(tag, true);
    kcas_word& w = table_.word(i);
    for (;;) {
      const std::uint64_t v = kcas_load(w);
      const tag_type old = format::tag_at(v, j);
      if (cas(w, v, format::bump(format::set_tag(v, j, tag)))) {
        count_.add(static_cast<std::ptrdiff_t>(old == 0) - static_cast<std::ptrdiff_t>(tag == 0));
        return;
      }
    }
  }
  bool find_tag_in_buckets(std::size_t i1, std::size_t i2, tag_type tag) const {
    check_slot(i1, 0);
    check_slot(i2, 0);
    return contains(position{i1, i2, tag});
  }
  /// Removes one copy of `tag` (non-zero) from bucket i.
  bool delete_tag_from_bucket(std::size_t i, tag_type tag) {
    check_slot(i, 0);
    if (tag == 0) return false;
    return erase(position{i, i, tag});
  }
  /// Puts `tag` (non-zero) in a free slot of bucket i (true). When the bucket is full and
  /// `kickout` is set, `tag` replaces a randomly chosen victim, returned in `old_tag` (false).
  bool insert_tag_to_bucket(std::size_t i, tag_type tag, bool kickout, tag_type& old_tag) {
    check_slot(i, 0);
    check_tag(tag, false);
    kcas_word& w = table_.word(i);
    for (;;) {
      const std::uint64_t v = kcas_load(w);
      const int j = format::free_slot(v);
      if (j >= 0) {
        if (cas(w, v, format::bump(format::set_tag(v, static_cast<unsigned>(j), tag)))) {
          count_.add(1);
          return true;
        }
        continue;
      }
      if (!kickout) return false;
      const unsigned victim = victim_random() % Slots;
      const tag_type old = format::tag_at(v, victim);
      if (cas(w, v, format::bump(format::set_tag(v, victim, tag)))) {
        old_tag = old;
        return false;
      }
    }
  }

 private:
  using path = cuckoo_path<tag_type>;
  /// The table as the path search reads it: one word per bucket.
  struct search_view {
    const table_type& table;
    std::uint64_t load(std::size_t i) const noexcept { return table.load(i); }
    void prefetch(std::size_t i) const noexcept { table.prefetch(i); }
    static int free_slot(std::uint64_t w) noexcept { return format::free_slot(w); }
    static tag_type tag_at(std::uint64_t w, unsigned s) noexcept { return format::tag_at(w, s); }
  };

  static std::size_t checked_buckets(std::size_t capacity) {
    const std::size_t n = buckets_for_capacity(capacity, Slots, Bits);
    check_fits_in_memory(static_cast<std::uint64_t>(n) * sizeof(kcas_word), capacity);
    return n;
  }
  void check_slot(std::size_t i, unsigned j) const {
    check_bucket_slot(i, j, table_.num_buckets(), Slots);
  }
  static void check_tag(tag_type tag, bool zero_allowed) {
    if (tag > format::max_tag || (tag == 0 && !zero_allowed)) {
      throw std::invalid_argument("ccf: tag " + std::to_string(tag) + " is not a valid " +
                                  std::to_string(Bits) + "-bit tag here");
    }
  }

  /// Puts p.tag into a free slot of i1 or i2 (the one with more free slots) with one cas. False
  /// when a validated snapshot showed both buckets full.
  bool place(const position& p) {
    kcas_word& w1 = table_.word(p.i1);
    kcas_word& w2 = table_.word(p.i2);
    const bool one = p.i1 == p.i2;
    std::uint64_t a1 = kcas_load(w1);
    std::uint64_t a2 = one ? a1 : kcas_load(w2);
    for (;;) {
      const unsigned free1 = format::free_slots(a1);
      const unsigned free2 = one ? 0 : format::free_slots(a2);
      if (free1 != 0 || free2 != 0) {
        const bool first = free1 >= free2;
        const std::uint64_t seen = first ? a1 : a2;
        const auto j = static_cast<unsigned>(format::free_slot(seen));
        if (cas(first ? w1 : w2, seen, format::bump(format::set_tag(seen, j, p.tag)))) {
          count_.add(1);
          return true;
        }
        a1 = kcas_load(w1);
        a2 = one ? a1 : kcas_load(w2);
        continue;
      }
      if (one) return false;
      const std::uint64_t b1 = kcas_load(w1);
      const std::uint64_t b2 = kcas_load(w2);
      if (b1 == a1 && b2 == a2) return false;  // both full at one instant
      a1 = b1;
      a2 = b2;
    }
  }

  /// One hop: a 2-word K-CAS moving a copy of `tag` from bucket src to a free slot of bucket
  /// dst = alt(src, tag), advancing both versions.
  bool hop(std::size_t src, std::size_t dst, tag_type tag) {
    kcas_word& ws = table_.word(src);
    kcas_word& wd = table_.word(dst);
    for (unsigned attempt = 0; attempt < hop_retries; ++attempt) {
      const std::uint64_t s = kcas_load(ws);
      const std::uint64_t d = kcas_load(wd);
      const int from = format::find(s, tag);
      const int to = format::free_slot(d);
      if (from < 0 || to < 0) return false;
      const std::array<kcas_entry, 2> entries{{
          {&ws, s, format::bump(format::set_tag(s, static_cast<unsigned>(from), 0))},
          {&wd, d, format::bump(format::set_tag(d, static_cast<unsigned>(to), tag))},
      }};
      if (kcas(entries)) {
        hops_.add(1);
        return true;
      }
    }
    return false;
  }

  table_type table_;
  indexer_type indexer_;
  sharded_counter count_;
  sharded_counter hops_;
  std::size_t max_kicks_;
  std::size_t capacity_ = 0;
};

}  // namespace ccf::detail
