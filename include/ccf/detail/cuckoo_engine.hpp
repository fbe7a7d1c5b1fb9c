// ccf — concurrent cuckoo filters.
// detail/cuckoo_engine.hpp: the one cuckoo engine every ccf table is an instance of.
//
// cuckoo_engine<Layout, Protocol, Allocator> is a table of buckets with partial-key cuckoo
// placement, generic over four things, each written once:
//   the slot layout   what a bucket holds and how it is matched: bit-packed tags (filters,
//                     packed_tag_layout.hpp), tags plus a version in one K-CAS word (the
//                     lock-free filter, versioned_tag_layout.hpp), or tags with a payload (the
//                     key-value store's index, payload_slot_layout.hpp); the empty slot is the
//                     layout's business;
//   the indexer       how i1, the tag and i2 come from a hash, and alt(i, tag): global or
//                     chunk-local alternates (indexer.hpp), chosen by the filter type;
//   the word policy   plain or atomic words, or K-CAS words (word_policy.hpp), chosen by
//   and the protocol  the concurrency protocol: no lock, striped, elided MCS or global locks
//                     (lock_protocol.hpp over a lock policy), or K-CAS (kcas_protocol.hpp).
// The engine works on positions {i1, i2, tag}; hashing a key into a position is the front end's
// job (filter_frontend.hpp, or the store), which lets callers that already hashed a key place it
// by hash.
//
// Invariant (no false negatives). Every stored item with tag t lies in bucket i or alt(i, t) of
// the key that stored it. Nothing removes an item but erase, and every relocation is one *hop*
// committed by the protocol as one atomic change of both buckets: the item is written into a free
// slot of alt(src, t) and cleared from src. A reader sees a hop entirely or not at all (validated
// or locked reads, or double collects), so it always finds t in one of its two buckets.
//
// Insert. (1) Place the item into whichever of i1, i2 has more free slots (two choices keep
// buckets evenly filled; protocols with cheap single-bucket locks choose without locks, then lock
// only that bucket and check again). (2) Otherwise a breadth-first search that writes nothing
// looks for a cuckoo path (cuckoo_path.hpp): from i1 and i2, each visited bucket's items are
// expanded to their alternate buckets until a bucket with a free slot turns up or `max_kicks`
// buckets have been queued; with chunked alternates the whole search stays in one chunk. It
// prefetches a level's buckets together when the table is past the caches, and tests each
// bucket's alternates at once when it is not (tables up to 1 MiB, or a chunk that a grouped batch
// swept into the caches: insert_cached, insert_direct); both find the same path. (3) The
// path is executed backwards from the free slot, one hop at a time; each hop checks that the
// slot still holds the item the search saw and that the destination still has room. (4) The
// last hop, out of i1 or i2, also puts the new item into the slot it frees, in the same atomic
// change (one commit fewer per search, and nothing can take that slot in between). If a hop no
// longer applies, the item tries i1 and i2 again and the search starts again (at most 64 rounds).
// Nothing moves before a whole path is known, so an insert that finds no path changes nothing: a
// full table refuses cleanly and loses nothing, with no stash.
//
// Lookups compare the tag with both buckets and OR the two answers: no branch on the first
// bucket (65 % of hits are there, so such a branch is random). Matching gives the set of matching
// slots (slot_mask), which the store walks to compare full keys; filters only ask whether it is
// empty. erase removes one slot holding the tag (for the store: the slot holding one exact item).
//
// Also here, once for every table: the capacity rule, max kicks, the thesis's HashTable API
// (read_tag, write_tag, find_tag_in_buckets, delete_tag_from_bucket, insert_tag_to_bucket), and
// the table's canonical form for files: the bit-packed tag array of packed_tag_layout, which
// every tag layout saves to and loads from, so a file saved by one filter kind loads into another
// with the same tags, bucket size and alternate function.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "ccf/allocator.hpp"
#include "ccf/config.hpp"
#include "ccf/detail/bucket_table.hpp"
#include "ccf/detail/canonical_table.hpp"
#include "ccf/detail/cuckoo_path.hpp"
#include "ccf/detail/heap_bytes.hpp"
#include "ccf/detail/indexer.hpp"
#include "ccf/detail/item_counter.hpp"
#include "ccf/detail/lock_protocol.hpp"
#include "ccf/detail/sizing.hpp"

namespace ccf::detail {

template <class Layout, class Protocol,
          class Allocator = table_allocator<typename Layout::word_type>>
class cuckoo_engine {
 public:
  using layout_type = Layout;
  using protocol_type = Protocol;
  using allocator_type = Allocator;
  using table_type = bucket_table<Layout, typename Protocol::word_policy, Allocator>;
  using bucket = typename Layout::bucket;
  using slot_type = typename Layout::slot_type;
  using tag_type = typename Layout::tag_type;
  using indexer_type = cuckoo_indexer<Layout::tag_bits>;
  using counter_type = std::conditional_t<Protocol::concurrent, sharded_counter, plain_counter>;
  using clear_counter_type = std::conditional_t<Protocol::concurrent, rare_counter, plain_counter>;

  static constexpr unsigned fingerprint_bits = Layout::tag_bits;
  static constexpr unsigned slots_per_bucket = Layout::slots;
  static constexpr std::size_t default_max_kicks = 500;
  /// The most buckets one path search may queue (its queue is per thread and sized for it).
  static constexpr std::size_t max_max_kicks = std::size_t{1} << 16;
  /// Search-and-execute rounds one insert may run before it reports "full".
  static constexpr unsigned max_attempts = 64;
  /// Tables up to this size are searched as if in the caches (search_mode::cached).
  static constexpr std::size_t cached_table_bytes = std::size_t{1} << 20;

  /// An empty table for `capacity` items, chunked by `max_chunk` buckets at most; capacity()
  /// is `capacity` (the slack that sizing adds is what makes it hold them, not room to promise).
  /// Throws std::invalid_argument for capacity 0, std::length_error when the table would not fit
  /// in memory.
  cuckoo_engine(std::size_t capacity, std::size_t max_chunk, std::size_t max_kicks,
                const Allocator& alloc = Allocator())
      : cuckoo_engine(plan(capacity, max_chunk), capacity, max_kicks, alloc) {}

  /// An empty table with exactly the buckets of `indexer` (loading a file).
  cuckoo_engine(const indexer_type& indexer, std::size_t capacity, std::size_t max_kicks,
                const Allocator& alloc = Allocator())
      : indexer_(checked(indexer, capacity, max_kicks)),
        table_(indexer.num_buckets(), alloc),
        protocol_(indexer.num_buckets(), Layout::buckets_per_word_group),
        max_kicks_(max_kicks),
        capacity_(capacity) {}

  /// A move leaves `other` an empty table for one item with its settings, made first: a
  /// moved-from filter answers every call as an empty one does (contains() and size() crashed on
  /// its null table). The move stays noexcept (a throwing one makes std::vector copy whole
  /// tables when it grows), so running out of memory for that small table (a few KiB with the
  /// counters and locks) ends the program.
  cuckoo_engine(cuckoo_engine&& other) noexcept
      : cuckoo_engine(plan(1, other.indexer_.chunk_size()), 1, other.max_kicks_,
                      Allocator(other.table_.get_allocator())) {
    swap(other);
  }
  /// Takes other's table with its allocator, propagating or not (docs/design.md, Guarantees).
  cuckoo_engine& operator=(cuckoo_engine&& other) noexcept {
    if (this != &other) {
      cuckoo_engine taken(std::move(other));
      swap(taken);
    }
    return *this;
  }
  /// Copies where the table, protocol and counters copy (the sequential filter); an assignment
  /// that runs out of memory throws and leaves the target as it was.
  static constexpr bool copyable = std::is_copy_constructible_v<table_type> &&
                                   std::is_copy_constructible_v<Protocol> &&
                                   std::is_copy_constructible_v<counter_type>;
  cuckoo_engine(const cuckoo_engine&) = default;
  /// The table keeps its allocator, as standard containers do, unless the allocator propagates
  /// on copy assignment.
  cuckoo_engine& operator=(const cuckoo_engine& other) requires copyable {
    if (this != &other) {
      using traits = std::allocator_traits<typename table_type::allocator_type>;
      cuckoo_engine copy(other, traits::propagate_on_container_copy_assignment::value
                                    ? other.table_.get_allocator()
                                    : table_.get_allocator());
      swap(copy);
    }
    return *this;
  }
  ~cuckoo_engine() = default;

 private:
  /// A copy of `other` whose table's memory comes from `alloc` (copy assignment).
  cuckoo_engine(const cuckoo_engine& other, const typename table_type::allocator_type& alloc)
      : indexer_(other.indexer_),
        table_(other.table_, alloc),
        protocol_(other.protocol_),
        count_(other.count_),
        hops_(other.hops_),
        clears_(other.clears_),
        max_kicks_(other.max_kicks_),
        capacity_(other.capacity_) {}

 public:
  void swap(cuckoo_engine& other) noexcept {
    using std::swap;
    swap(indexer_, other.indexer_);
    swap(table_, other.table_);
    swap(protocol_, other.protocol_);
    swap(count_, other.count_);
    swap(hops_, other.hops_);
    swap(clears_, other.clears_);
    swap(max_kicks_, other.max_kicks_);
    swap(capacity_, other.capacity_);
  }

  /// The bytes of the table of `buckets` buckets.
  static std::size_t table_bytes(std::size_t buckets) noexcept {
    return Layout::words_for(buckets) * sizeof(typename Layout::word_type);
  }
  /// The indexer (bucket count and chunking) of a table for `capacity` items. Throws
  /// std::invalid_argument for capacity 0, std::length_error when the count would overflow.
  static indexer_type plan(std::size_t capacity, std::size_t max_chunk) {
    return indexer_type::plan(buckets_for_capacity(capacity, Layout::slots, Layout::tag_bits),
                              max_chunk);
  }

  const table_type& table() const noexcept { return table_; }
  const indexer_type& indexer() const noexcept { return indexer_; }
  const Protocol& protocol() const noexcept { return protocol_; }
  std::size_t num_buckets() const noexcept { return table_.num_buckets(); }
  std::size_t size_in_tags() const noexcept { return table_.num_buckets() * Layout::slots; }
  std::size_t size_in_bytes() const noexcept { return table_.size_in_bytes(); }
  /// The table and what the protocol and the counters hold on the heap (a concurrent table's
  /// lock words and counter shards).
  std::size_t memory_in_bytes() const noexcept {
    return size_in_bytes() + heap_bytes_of(protocol_) + heap_bytes_of(count_) +
           heap_bytes_of(hops_) + heap_bytes_of(clears_);
  }
  std::size_t capacity() const noexcept { return capacity_; }
  std::size_t size() const noexcept { return count_.get(); }
  std::size_t max_kicks() const noexcept { return max_kicks_; }
  /// Relocation hops completed so far (a diagnostic: each moved one item to its other bucket).
  std::size_t relocations() const noexcept { return hops_.get(); }

  // ---- lookups ----
  CCF_FORCEINLINE bool contains(const position& p) const {
    return protocol_.probe(table_, p.i1, p.i2, [&](const bucket& b1, const bucket& b2) noexcept {
      // Both buckets, no branch between them (a hit is in either with like odds).
      return int{Layout::has(b1, p.tag)} + int{Layout::has(b2, p.tag)} != 0;
    });
  }
  std::size_t count(const position& p) const {
    return protocol_.read(table_, p.i1, p.i2, [&](const bucket& b1, const bucket& b2) noexcept {
      return std::size_t{Layout::count(b1, p.tag)} +
             (p.i2 != p.i1 ? std::size_t{Layout::count(b2, p.tag)} : 0);
    });
  }
  /// Calls f(slot value) for every occupied slot holding p.tag in the two buckets, as they were
  /// at one instant (f runs after the read, outside any lock). Returns how many there were.
  template <class F>
  std::size_t for_each_match(const position& p, F&& f) const {
    struct found {
      std::array<slot_type, 2 * Layout::slots> v;
      std::size_t n = 0;
    };
    const found all =
        protocol_.read(table_, p.i1, p.i2, [&](const bucket& b1, const bucket& b2) noexcept {
          found r;
          for (unsigned j : Layout::match(b1, p.tag))
            r.v[r.n++] = Layout::get(b1, j);
          if (p.i2 != p.i1) {
            for (unsigned j : Layout::match(b2, p.tag))
              r.v[r.n++] = Layout::get(b2, j);
          }
          return r;
        });
    for (std::size_t k = 0; k < all.n; ++k)
      f(all.v[k]);
    return all.n;
  }

  // ---- updates ----
  bool insert(const position& p, slot_type v) {
    return table_.size_in_bytes() <= cached_table_bytes ? insert_counted<search_mode::cached>(p, v)
                                                        : insert_counted<search_mode::ahead>(p, v);
  }
  /// insert() for a caller that brought p's chunk into the caches (grouped batches).
  bool insert_cached(const position& p, slot_type v) {
    return insert_counted<search_mode::cached>(p, v);
  }
  bool insert(const position& p) requires Layout::tag_only { return insert(p, p.tag); }
  /// Readies the calling thread so that its inserts into this table do not throw (a batch that
  /// must take back what it placed when one does): sizes its path-search queue for max_kicks(),
  /// and under the K-CAS protocol takes its thread slot. Throws std::bad_alloc or
  /// kcas_thread_limit_error, having changed nothing.
  void prepare_inserts() const {
    path::reserve(path::scratch(), max_kicks_);
    Protocol::prepare_thread();
  }

  /// Removes one occupied slot holding p.tag (for layouts whose entries differ in how much they
  /// say, the most specific one: Layout::erase_before).
  bool erase(const position& p) {
    if constexpr (requires { Layout::erase_before(slot_type{}, slot_type{}); }) {
      return remove_most_specific(p);
    } else {
      return remove_if(p, [](slot_type) { return true; });
    }
  }
  /// How many times the table was cleared. A batched insert reads it before it places items, so
  /// that its rollback (take_back) leaves alone what a clear removed meanwhile.
  std::size_t clears() const noexcept { return clears_.get(); }
  /// erase(p) for an item this thread placed, unless a clear has run since clears() returned
  /// `seen`: the item is gone then, and a tag of p's in its buckets is another thread's, whose
  /// erasing would be a false negative. The count is read inside the update, where no clear can
  /// run (a clear holds every lock, or has changed the words the update commits against).
  bool take_back(const position& p, std::size_t seen) requires Layout::tag_only {
    return remove_if(
        p, [](slot_type) { return true; }, [&] { return clears_.get() == seen; });
  }
  /// Removes the occupied slot holding exactly `v` (an item with a payload).
  bool erase_slot(const position& p, slot_type v) {
    return remove_if(p, [v](slot_type s) { return s == v; });
  }
  /// Replaces the occupied slot holding exactly `old` by `now` (same tag), in place.
  bool replace_slot(const position& p, slot_type old, slot_type now) {
    return protocol_.update(table_, p.i1, p.i2, [&](bucket& b1, bucket& b2) {
      return replace_in(b1, p.tag, old, now) || (p.i2 != p.i1 && replace_in(b2, p.tag, old, now));
    });
  }

  /// Empties the table. The item count drops by the items removed (counted in the frozen
  /// table), so an insert or erase that committed before the clear but had not yet counted itself
  /// still leaves size() exact.
  void clear() {
    protocol_.exclusive_clear(table_, [&] {
      const std::size_t removed = canonical_table<Layout>::count_items(table_, num_buckets());
      if constexpr (Layout::versioned) {
        for (std::size_t i = 0; i < num_buckets(); ++i) {
          const bucket old = table_.load(i);
          bucket now = old;
          for (unsigned j = 0; j < Layout::slots; ++j)
            Layout::vacate(now, j);
          if (!(now == old)) table_.store(i, old, now);
        }
      } else {
        table_.zero();
      }
      count_.add(-static_cast<std::ptrdiff_t>(removed));
      clears_.add(1);
      return 0;
    });
  }

  // ---- pieces for batched inserts and bulk builds ----
  CCF_FORCEINLINE void prefetch(const position& p) const noexcept {
    table_.prefetch(p.i1);
    table_.prefetch(p.i2);
    protocol_.prefetch(p.i1, p.i2);
  }
  CCF_FORCEINLINE void prefetch_for_write(const position& p) const noexcept {
    table_.prefetch_for_write(p.i1);
    table_.prefetch_for_write(p.i2);
    if constexpr (requires { protocol_.prefetch_for_write(p.i1, p.i2); }) {
      protocol_.prefetch_for_write(p.i1, p.i2);
    }
  }
  /// One placement attempt without a path search (batched inserts try this first).
  bool try_place(const position& p, slot_type v) {
    if (!place(protocol_, p, v)) return false;
    count_.add(1);
    return true;
  }
  /// Prefetches the alternate buckets of every item in i1 and i2 (the first level of a path
  /// search), so that a batched insert can overlap that level's misses with other keys' work.
  void prefetch_alternates(const position& p) const noexcept {
    const std::size_t base = indexer_.chunk_base(p.i1);
    for (const std::size_t i : {p.i1, p.i2}) {
      const bucket b = table_.load(i);
      CCF_UNROLL_SLOTS
      for (unsigned s = 0; s < Layout::slots; ++s)
        table_.prefetch(indexer_.alt_in(base, i, Layout::tag_of(Layout::get(b, s))));
    }
  }
  /// Brings chunk c into the caches with two sequential sweeps (before many inserts into it).
  /// One sweep is not enough: the inserts that follow one sweep from memory still wait on lines
  /// that a second, cheaper sweep finds in the caches (docs/design.md has the figures).
  void warm_chunk(std::size_t c) const noexcept {
    if constexpr (requires { table_.warm(0, 1); }) {
      const std::size_t first = c * indexer_.chunk_size(), last = first + indexer_.chunk_size();
      volatile std::uint64_t keep = table_.warm(first, last);
      keep = table_.warm(first, last);
      static_cast<void>(keep);
    }
  }
  /// Inserts without the protocol, for a caller that has the chunk of p to itself (a bulk build
  /// gives each thread whole chunks). The item count is not changed: see add_to_size.
  template <search_mode Mode = search_mode::cached>
  bool insert_direct(const position& p, slot_type v) {
    direct_access direct;
    return insert_with<Mode>(direct, p, v);
  }
  bool contains_direct(const position& p) const noexcept {
    return int{Layout::has(table_.load(p.i1), p.tag)} +
               int{Layout::has(table_.load(p.i2), p.tag)} !=
           0;
  }
  void add_to_size(std::ptrdiff_t d) noexcept { count_.add(d); }
  /// Sets bucket i, which is empty, to b — for a caller that has the table to itself (the growing
  /// filter's splits). The item count is not changed.
  void fill_bucket(std::size_t i, const bucket& b) noexcept { table_.store(i, bucket{}, b); }

  // ---- the thesis's HashTable operations, synchronised by the protocol ----
  tag_type read_tag(std::size_t i, unsigned j) const requires Layout::tag_only {
    check_slot(i, j);
    return protocol_.read(
        table_, i, i, [j](const bucket& b, const bucket&) noexcept { return Layout::get(b, j); });
  }
  /// Sets slot j of bucket i to `tag` (0 empties it). A tag wider than the slot is refused.
  void write_tag(std::size_t i, unsigned j, tag_type tag) requires Layout::tag_only {
    check_slot(i, j);
    check_tag(tag, true);
    const tag_type old = protocol_.update(table_, i, i, [&](bucket& b, bucket&) {
      const tag_type before = Layout::get(b, j);
      Layout::set(b, j, tag);
      return before;
    });
    count_.add(static_cast<std::ptrdiff_t>(old == 0) - static_cast<std::ptrdiff_t>(tag == 0));
  }
  /// Whether bucket i1 or i2 holds `tag`; never for 0 (an empty slot is no tag). A tag wider
  /// than the slot is refused, here and below (its low bits are another item's tag: deleting it
  /// lost that item).
  bool find_tag_in_buckets(std::size_t i1, std::size_t i2,
                           tag_type tag) const requires Layout::tag_only {
    check_slot(i1, 0);
    check_slot(i2, 0);
    check_tag(tag, true);
    return tag != 0 && contains(position{i1, i2, tag});
  }
  /// Removes one copy of `tag` from bucket i.
  bool delete_tag_from_bucket(std::size_t i, tag_type tag) requires Layout::tag_only {
    check_slot(i, 0);
    check_tag(tag, true);
    return tag != 0 && erase(position{i, i, tag});
  }
  /// Puts `tag` (non-zero) in a free slot of bucket i (true). When the bucket is full and
  /// `kickout` is set, `tag` replaces a randomly chosen victim, returned in `old_tag` (false).
  bool insert_tag_to_bucket(std::size_t i, tag_type tag, bool kickout,
                            tag_type& old_tag) requires Layout::tag_only {
    check_slot(i, 0);
    check_tag(tag, false);
    const unsigned victim = victim_random() % Layout::slots;
    tag_type evicted = 0;
    const int outcome = protocol_.update(table_, i, i, [&](bucket& b, bucket&) {
      const slot_mask room = Layout::free(b);
      if (room) {
        Layout::set(b, room.first(), tag);
        return 1;
      }
      if (!kickout) return 0;
      evicted = Layout::get(b, victim);
      Layout::set(b, victim, tag);
      return 2;
    });
    if (outcome == 1) count_.add(1);
    if (outcome == 2) old_tag = evicted;
    return outcome == 1;
  }

  // ---- the canonical form (files) ----
  /// Streams the table's canonical words to sink(word) from a consistent snapshot (taken while
  /// other threads work); returns the number of items in that snapshot.
  template <class Sink>
  std::size_t save_canonical(Sink& sink) const {
    return protocol_.exclusive(
        table_, [&] { return canonical_table<Layout>::save(table_, num_buckets(), sink); });
  }
  /// Words [first, last) of the canonical form with sink(word), from a consistent snapshot.
  template <class Sink>
  void save_canonical_words(std::size_t first, std::size_t last, Sink& sink) const {
    protocol_.exclusive(table_, [&] {
      canonical_table<Layout>::save_words(table_, num_buckets(), first, last, sink);
      return 0;
    });
  }
  /// Fills a fresh table from canonical words read with source(); returns the item count, or
  /// throws format_error when bits past the last bucket are set.
  template <class Source>
  std::size_t load_canonical(Source& source) {
    const std::size_t items = canonical_table<Layout>::load(table_, num_buckets(), source);
    count_.reset();
    count_.add(static_cast<std::ptrdiff_t>(items));
    return items;
  }

 private:
  using path = cuckoo_path<slot_type, Layout::slots>;

  static const indexer_type& checked(const indexer_type& indexer, std::size_t capacity,
                                     std::size_t max_kicks) {
    if (max_kicks > max_max_kicks) {
      throw std::invalid_argument("ccf: max_kicks must be at most " +
                                  std::to_string(max_max_kicks) + ", not " +
                                  std::to_string(max_kicks));
    }
    check_bucket_count(static_cast<double>(indexer.num_buckets()), capacity);
    check_fits_in_memory(table_bytes(indexer.num_buckets()), capacity);
    return indexer;
  }
  void check_slot(std::size_t i, unsigned j) const {
    check_bucket_slot(i, j, num_buckets(), Layout::slots);
  }
  static void check_tag(tag_type tag, bool zero_allowed) {
    if (tag > Layout::max_tag || (tag == 0 && !zero_allowed)) {
      throw std::invalid_argument("ccf: tag " + std::to_string(tag) + " is not a valid " +
                                  std::to_string(Layout::tag_bits) + "-bit tag here" +
                                  (tag == 0 ? " (0 marks an empty slot)" : ""));
    }
  }

  template <search_mode Mode>
  bool insert_counted(const position& p, slot_type v) {
    if (!insert_with<Mode>(protocol_, p, v)) return false;
    count_.add(1);
    return true;
  }
  template <search_mode Mode, class Access>
  bool insert_with(Access& access, const position& p, slot_type v) {
    if (place(access, p, v)) return true;
    const std::size_t base = indexer_.chunk_base(p.i1);
    typename path::queue& q = path::scratch();
    for (unsigned attempt = 0; attempt < max_attempts; ++attempt) {
      const std::size_t leaf =
          path::template search<Layout, Mode>(q, p.i1, p.i2, base, max_kicks_, table_, indexer_);
      if (leaf == path::none) return false;
      const bool placed = path::execute(
          q, leaf, [&](std::size_t src, unsigned s, slot_type item, std::size_t dst, bool last) {
            return hop(access, src, s, item, dst, last ? std::optional(v) : std::nullopt);
          });
      if (placed || place(access, p, v)) return true;
    }
    return false;
  }

  /// Puts v into a free slot of i1 or i2, preferring the bucket with more free slots.
  template <class Access>
  CCF_FORCEINLINE bool place(Access& access, const position& p, slot_type v) {
    if constexpr (Protocol::lock_one_first && std::is_same_v<Access, Protocol>) {
      // The lock word is fetched for writing while the buckets load: its compare-and-swap then
      // finds the line here instead of waiting for it after the buckets' misses.
      protocol_.prefetch_for_write(p.i1, p.i2);
      const unsigned free1 = Layout::free_count(table_.load(p.i1));
      const unsigned free2 = p.i2 != p.i1 ? Layout::free_count(table_.load(p.i2)) : 0;
      if (free1 == 0 && free2 == 0) return false;
      const std::size_t i = free1 >= free2 ? p.i1 : p.i2;
      if (access.update(table_, i, i, [v](bucket& b, bucket&) { return put(b, v); })) return true;
    }
    return access.update(table_, p.i1, p.i2, [&](bucket& b1, bucket& b2) {
      const unsigned free1 = Layout::free_count(b1);
      const unsigned free2 = p.i2 != p.i1 ? Layout::free_count(b2) : 0;
      if (free1 == 0 && free2 == 0) return false;
      return put(free1 >= free2 ? b1 : b2, v);
    });
  }
  static CCF_FORCEINLINE bool put(bucket& b, slot_type v) noexcept {
    const slot_mask room = Layout::free(b);
    if (!room) return false;
    Layout::set(b, room.first(), v);
    return true;
  }

  /// One hop: moves the item `item` from slot s of bucket src to a free slot of bucket dst, and
  /// leaves slot s empty, or holding `newcomer` (the new item, when src is i1 or i2: the insert
  /// then completes in the same atomic change as its last hop).
  template <class Access>
  bool hop(Access& access, std::size_t src, unsigned s, slot_type item, std::size_t dst,
           std::optional<slot_type> newcomer) {
    const bool moved = access.update(table_, src, dst, [&](bucket& from, bucket& to) {
      if (Layout::get(from, s) != item) return false;
      const slot_mask room = Layout::free(to);
      if (!room) return false;
      Layout::set(to, room.first(), item);
      if (newcomer) {
        Layout::set(from, s, *newcomer);
      } else {
        Layout::vacate(from, s);
      }
      return true;
    });
    if constexpr (std::is_same_v<Access, Protocol>) {
      if (moved) hops_.add(1);  // not in bulk builds: their threads share no counter
    }
    return moved;
  }

  /// Before an erase takes its locks: a lock's compare-and-swap holds back the loads after it,
  /// so under lock-based protocols the buckets and lock words are fetched first and their misses
  /// overlap the lock's.
  CCF_FORCEINLINE void prefetch_before_locking(const position& p) const noexcept {
    if constexpr (Protocol::lock_one_first) prefetch_for_write(p);
  }
  struct always {
    constexpr bool operator()() const noexcept { return true; }
  };
  /// Removes one slot holding p.tag whose value satisfies pred, if still() holds in the update.
  template <class Pred, class Still = always>
  bool remove_if(const position& p, Pred pred, Still still = {}) {
    prefetch_before_locking(p);
    const bool removed = protocol_.update(table_, p.i1, p.i2, [&](bucket& b1, bucket& b2) {
      if (!still()) return false;
      return remove_in(b1, p.tag, pred) || (p.i2 != p.i1 && remove_in(b2, p.tag, pred));
    });
    if (removed) count_.add(-1);
    return removed;
  }
  bool remove_most_specific(const position& p) {
    prefetch_before_locking(p);
    const bool removed = protocol_.update(table_, p.i1, p.i2, [&](bucket& b1, bucket& b2) {
      bucket* best = nullptr;
      unsigned best_slot = 0;
      const std::array<bucket*, 2> both{&b1, &b2};
      for (std::size_t k = 0; k < (p.i2 == p.i1 ? 1u : 2u); ++k) {
        bucket* b = both[k];
        for (unsigned j : Layout::match(*b, p.tag)) {
          if (best == nullptr ||
              Layout::erase_before(Layout::get(*b, j), Layout::get(*best, best_slot))) {
            best = b;
            best_slot = j;
          }
        }
      }
      if (best == nullptr) return false;
      Layout::erase(*best, best_slot);
      return true;
    });
    if (removed) count_.add(-1);
    return removed;
  }
  template <class Pred>
  static bool remove_in(bucket& b, tag_type tag, Pred& pred) {
    for (unsigned j : Layout::match(b, tag)) {
      if (pred(Layout::get(b, j))) {
        Layout::erase(b, j);
        return true;
      }
    }
    return false;
  }
  static bool replace_in(bucket& b, tag_type tag, slot_type old, slot_type now) {
    for (unsigned j : Layout::match(b, tag)) {
      if (Layout::get(b, j) == old) {
        Layout::set(b, j, now);
        return true;
      }
    }
    return false;
  }

  indexer_type indexer_;
  table_type table_;
  Protocol protocol_;
  counter_type count_;
  counter_type hops_;
  clear_counter_type clears_;  // clear() calls, each counted inside its exclusive phase
  std::size_t max_kicks_;
  std::size_t capacity_;
};

}  // namespace ccf::detail
