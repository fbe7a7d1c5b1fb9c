// ccf — concurrent cuckoo filters.
// detail/cuckoo_core.hpp: the cuckoo algorithm shared by the sequential and the lock-based
// concurrent filters.
//
// Layout. A bucket_table<Bits, Slots, WordPolicy> of n buckets, a bucket_indexer<Bits> (i1, tag,
// alt), an item counter and a lock policy. The core works on positions {i1, i2, tag}; hashing a
// key into a position is the front end's job.
//
// Invariant (no false negatives). Every stored tag t lies in bucket i or alt(i, t) of the key that
// stored it. Nothing ever removes a tag except erase, and every relocation is one *hop*: under the
// locks of both buckets, t is written into a free slot of alt(src, t) and then cleared from src.
// A reader validated by the lock policy sees a hop entirely or not at all, so it always finds t in
// one of its two buckets.
//
// Insert. (1) Put the tag into whichever of i1, i2 has more free slots (concurrent filters
// choose without locks, then lock only that bucket and re-check). (2) Otherwise a
// breadth-first search, taking no lock, looks for a cuckoo path: starting from i1 and i2, each
// visited bucket's tags are expanded to their alternate buckets until a bucket with a free slot is
// found or `max_kicks` buckets have been queued (children are prefetched as they are queued, so
// the search overlaps its cache misses). (3) The path is executed backwards from the free slot,
// one hop at a time; each hop re-checks under its two locks that the tag is still in the source
// and that the destination still has room, and the search restarts if not. (4) The freed slot in
// i1 or i2 takes the new tag under lock_two(i1, i2). Because nothing moves before a whole path is
// known, an insert that finds no path changes nothing: a full table refuses cleanly and loses
// nothing. The search reads buckets without locks; it only proposes, the hops decide.
//
// Lookups (contains, count) run inside the lock policy's read(), erase under lock_two. With
// null_locking and plain_words all of this reduces to the plain single-threaded algorithm.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "ccf/config.hpp"
#include "ccf/detail/bucket_table.hpp"
#include "ccf/detail/cuckoo_path.hpp"
#include "ccf/detail/hashing.hpp"
#include "ccf/detail/item_counter.hpp"
#include "ccf/detail/sizing.hpp"

namespace ccf::detail {

template <unsigned Bits, unsigned Slots, class WordPolicy, class LockPolicy>
class cuckoo_core {
 public:
  using table_type = bucket_table<Bits, Slots, WordPolicy>;
  using bucket = typename table_type::bucket;
  using tag_type = typename table_type::tag_type;
  using indexer_type = bucket_indexer<Bits>;
  using position = typename indexer_type::position;
  using lock_policy = LockPolicy;
  using counter_type = std::conditional_t<WordPolicy::concurrent, sharded_counter, plain_counter>;

  static constexpr std::size_t default_max_kicks = 500;
  static constexpr unsigned fingerprint_bits = Bits;
  static constexpr unsigned slots_per_bucket = Slots;

  cuckoo_core(std::size_t capacity, std::size_t max_kicks)
      : table_(checked_buckets(capacity)),
        indexer_(table_.num_buckets()),
        locks_(table_.num_buckets(), tag_packing<Bits, Slots>::buckets_per_word_group),
        max_kicks_(max_kicks) {
    // The load-factor rule's capacity, unless the table was grown for a short fingerprint (then
    // what was asked for is what is promised).
    const auto by_load = static_cast<std::size_t>(static_cast<double>(table_.num_buckets()) *
                                                  Slots * design_load(Slots, Bits));
    capacity_ = by_load <= capacity + capacity / 20 + 64 ? std::max(by_load, capacity) : capacity;
  }

  /// Tag for the constructor that builds an empty core of exactly `num_buckets` buckets.
  struct exact_buckets_t {};

  cuckoo_core(exact_buckets_t, std::size_t num_buckets, std::size_t capacity, std::size_t max_kicks)
      : table_(num_buckets),
        indexer_(num_buckets),
        locks_(num_buckets, tag_packing<Bits, Slots>::buckets_per_word_group),
        max_kicks_(max_kicks),
        capacity_(capacity) {}

  /// Streams every table word to `sink` while all locks are held (a consistent snapshot even
  /// with other threads at work); returns the item count of that snapshot.
  template <class Sink>
  std::size_t save_words(Sink& sink) const {
    [[maybe_unused]] auto guard = locks_.lock_all();
    for (const std::uint64_t& w : table_.words())
      sink(WordPolicy::load(w));
    return count_.get();
  }
  /// Fills the table of a fresh core from `source`, one word per call.
  template <class Source>
  void load_words(Source& source) {
    for (std::uint64_t& w : table_.words())
      WordPolicy::flip(w, source());
    count_.reset();
    count_.add(static_cast<std::ptrdiff_t>(table_.count_tags()));
  }

  const table_type& table() const noexcept { return table_; }
  const indexer_type& indexer() const noexcept { return indexer_; }
  std::size_t capacity() const noexcept { return capacity_; }
  std::size_t size() const noexcept { return count_.get(); }
  std::size_t max_kicks() const noexcept { return max_kicks_; }

  CCF_FORCEINLINE void prefetch(const position& p) const noexcept {
    table_.prefetch(p.i1);
    table_.prefetch(p.i2);
    if constexpr (requires { locks_.prefetch(p.i1, p.i2); }) locks_.prefetch(p.i1, p.i2);
  }
  CCF_FORCEINLINE void prefetch_for_write(const position& p) const noexcept {
    table_.prefetch_for_write(p.i1);
    table_.prefetch_for_write(p.i2);
  }

  /// One placement attempt, without a path search (batched inserts try this first).
  bool try_place(const position& p) { return place(p); }
  /// Prefetches the alternate buckets of every tag in i1 and i2 (the first level of a path
  /// search), so that a batched insert can overlap that level's misses with other keys' work.
  void prefetch_alternates(const position& p) const noexcept {
    for (const std::size_t i : {p.i1, p.i2}) {
      const bucket b = table_.load(i);
      for (unsigned s = 0; s < Slots; ++s) {
        table_.prefetch(indexer_.alt_index(i, table_type::tag_at(b, s)));
      }
    }
  }

  bool insert(const position& p) {
    if (place(p)) return true;
    typename path::queue& q = path::scratch();
    for (unsigned attempt = 0; attempt < max_attempts; ++attempt) {
      const std::size_t leaf =
          path::template search<Slots>(q, p.i1, p.i2, max_kicks_, table_, indexer_);
      if (leaf == path::none) return false;
      const bool moved =
          path::execute(q, leaf, [this](std::size_t src, std::size_t dst, tag_type tag) {
            return move_tag(src, dst, tag);
          });
      if (moved && place(p)) return true;
    }
    return false;
  }

  CCF_FORCEINLINE bool contains(const position& p) const {
    return locks_.read(p.i1, p.i2, [&]() noexcept {
      return table_type::has(table_.load(p.i1), p.tag) || table_type::has(table_.load(p.i2), p.tag);
    });
  }

  std::size_t count(const position& p) const {
    return locks_.read(p.i1, p.i2, [&]() noexcept {
      std::size_t n = table_type::count(table_.load(p.i1), p.tag);
      if (p.i2 != p.i1) n += table_type::count(table_.load(p.i2), p.tag);
      return n;
    });
  }

  bool erase(const position& p) {
    [[maybe_unused]] auto guard = locks_.lock_two(p.i1, p.i2);
    if (table_.delete_tag_from_bucket(p.i1, p.tag) ||
        (p.i2 != p.i1 && table_.delete_tag_from_bucket(p.i2, p.tag))) {
      count_.add(-1);
      return true;
    }
    return false;
  }

  void clear() {
    [[maybe_unused]] auto guard = locks_.lock_all();
    table_.clear();
    count_.reset();
  }

  // ---- the thesis's HashTable operations, synchronised by the lock policy ----
  tag_type read_tag(std::size_t i, unsigned j) const {
    check_slot(i, j);
    return locks_.read(i, i, [&]() noexcept { return table_.read_tag(i, j); });
  }
  void write_tag(std::size_t i, unsigned j, tag_type tag) {
    check_slot(i, j);
    [[maybe_unused]] auto guard = locks_.lock_two(i, i);
    const tag_type old = table_.read_tag(i, j);
    table_.replace_tag(i, j, old, tag);
    count_.add(static_cast<std::ptrdiff_t>(old == 0) - static_cast<std::ptrdiff_t>(tag == 0));
  }
  bool find_tag_in_buckets(std::size_t i1, std::size_t i2, tag_type tag) const {
    return contains(position{i1, i2, tag});
  }
  bool delete_tag_from_bucket(std::size_t i, tag_type tag) { return erase(position{i, i, tag}); }
  bool insert_tag_to_bucket(std::size_t i, tag_type tag, bool kickout, tag_type& old_tag) {
    check_slot(i, 0);
    [[maybe_unused]] auto guard = locks_.lock_two(i, i);
    const bool placed = table_.insert_tag_to_bucket(i, tag, kickout, old_tag, victim_random());
    if (placed) count_.add(1);
    return placed;
  }

 private:
  using path = cuckoo_path<tag_type>;
  static constexpr unsigned max_attempts = 64;

  static std::size_t checked_buckets(std::size_t capacity) {
    const std::size_t n = buckets_for_capacity(capacity, Slots, Bits);
    check_fits_in_memory(tag_packing<Bits, Slots>::words_for(n) * 8, capacity);
    return n;
  }
  void check_slot(std::size_t i, unsigned j) const {
    check_bucket_slot(i, j, table_.num_buckets(), Slots);
  }

  /// Puts p.tag into a free slot of i1 or i2, preferring the bucket with more free slots (two
  /// choices keep buckets evenly filled, so searches for cuckoo paths start later and end sooner).
  bool place(const position& p) {
    if constexpr (LockPolicy::concurrent) {
      // Choose the bucket without locks, then lock only its stripe: one lock instead of two
      // for most inserts. If the choice went stale, fall back to locking both.
      const unsigned free1 = table_type::count(table_.load(p.i1), 0);
      const unsigned free2 = p.i2 != p.i1 ? table_type::count(table_.load(p.i2), 0) : 0;
      if (free1 == 0 && free2 == 0) return false;
      const std::size_t i = free1 >= free2 ? p.i1 : p.i2;
      [[maybe_unused]] auto guard = locks_.lock_two(i, i);
      if (put(i, p.tag)) return true;
    }
    [[maybe_unused]] auto guard = locks_.lock_two(p.i1, p.i2);
    const bucket b1 = table_.load(p.i1);
    const bucket b2 = table_.load(p.i2);
    const unsigned free1 = table_type::count(b1, 0);
    const unsigned free2 = p.i2 != p.i1 ? table_type::count(b2, 0) : 0;
    if (free1 == 0 && free2 == 0) return false;
    const bool first = free1 >= free2;
    const std::size_t i = first ? p.i1 : p.i2;
    const int j = table_type::free_slot(first ? b1 : b2);
    table_.replace_tag(i, static_cast<unsigned>(j), 0, p.tag);
    count_.add(1);
    return true;
  }
  /// Puts `tag` into a free slot of bucket i (the caller holds its lock).
  CCF_FORCEINLINE bool put(std::size_t i, tag_type tag) {
    const int j = table_type::free_slot(table_.load(i));
    if (j < 0) return false;
    table_.replace_tag(i, static_cast<unsigned>(j), 0, tag);
    count_.add(1);
    return true;
  }

  /// One hop: moves a copy of `tag` from bucket src to a free slot of bucket dst = alt(src, tag).
  bool move_tag(std::size_t src, std::size_t dst, tag_type tag) {
    [[maybe_unused]] auto guard = locks_.lock_two(src, dst);
    const int from = table_type::find(table_.load(src), tag);
    if (from < 0) return false;
    const int to = table_type::free_slot(table_.load(dst));
    if (to < 0) return false;
    table_.replace_tag(dst, static_cast<unsigned>(to), 0, tag);
    table_.replace_tag(src, static_cast<unsigned>(from), tag, 0);
    return true;
  }

  table_type table_;
  indexer_type indexer_;
  mutable LockPolicy locks_;
  counter_type count_;
  std::size_t max_kicks_;
  std::size_t capacity_ = 0;
};

}  // namespace ccf::detail
