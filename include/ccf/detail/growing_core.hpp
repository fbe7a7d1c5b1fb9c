// ccf — concurrent cuckoo filters.
// detail/growing_core.hpp: a cuckoo table that doubles when it fills, without the keys — the core
// of ccf::growing_cuckoo_filter and ccf::concurrent_growing_cuckoo_filter.
//
// Layout. One cuckoo engine (cuckoo_engine.hpp) over growing_tag_layout<W, 4>: W-bit slots holding
// an 8-bit anchor and a variable-length fingerprint. The table is 2^k chunks of C buckets, and a
// key's hash h gives:
//   chunk        the top k bits of h
//   fingerprint  the next W - 9 bits of h (what is stored; it shrinks as k grows, see below)
//   offset       range(h2, C) and anchor = h2 mod 2^8, with h2 = mix64(h ^ salt), both fixed
//   buckets      i1 = chunk * C + offset, i2 = alt(i1, anchor) inside the chunk (indexer.hpp)
// so lookups probe two buckets, at any size.
//
// Growth, two phases.
//  * While the table is one chunk of at most max_chunk (2^15) buckets, the core keeps the
//    hashes of its items (a hash multiset, 8 bytes and a node per item, on tables of at most 2^17
//    slots) and doubles by building a table of twice the buckets from them: exact, as if the
//    items had been inserted there. Past max_chunk that is two chunks of max_chunk (up to four
//    times the buckets, which frees the hashes: they take more than the extra buckets). Erasing
//    a key that was never inserted is refused here.
//  * From two chunks of max_chunk buckets on, the table doubles by splitting every chunk in two,
//    with no key and no hash: an entry in chunk c at offset o, slot j, goes to chunk 2c + b at the
//    same offset and slot, b being its fingerprint's top bit, which the fingerprint gives up (the
//    next key bit of the chunk number); its buckets are still i1 and alt(i1, anchor) of its key.
//    Slots of the halves never collide (each gets a subset of the old bucket's slots), so a split
//    is a pure copy; chunks split independently, so threads split them in parallel. An entry with
//    no fingerprint bit left goes to both halves (a duplicate; a lookup finds it in either).
//   The chunk size stays max_chunk: chunks of 2^17 slots keep loads of about 95 % at any size
//   (smaller chunks, as a growth that splits from a small table would have, fill unevenly).
//   A split table far from full that finds no room for an item refuses it rather than double
//   (grows_for): there, copies of a few items crowd two buckets, which no doubling reliably
//   separates.
//
// The false-positive rate (docs/growing.md has the derivation). A query matches an entry when the
// anchors agree and the entry's L fingerprint bits equal the query's: probability 2^-(8 + L). An
// entry made after the table's d-th split has L = W - 9 - (splits since). When the filter grows by
// inserts, half of its items are newer than the last split, a quarter one split older and so on,
// so with D splits done the rate is at most
//     eps(D) = 2 * 4 * load * 2^-(W-1) * (D + 2) / 2,
// growing by one half of the base rate per split. plan_growth() picks the smallest W for which
// eps(max_doublings) is within the target (W - 1 >= log2(8 * 0.95 * (max_doublings + 2) / 2 /
// target)): the target holds for up to max_doublings splits (default 16) and then degrades
// gently. Phase-one rebuilds make every entry new again.
//
// Concurrency (Concurrent = true). Operations on the current table use the engine's striped
// protocol: lookups take no lock. Writers hold a sharded reader-writer lock for reading; growth
// takes it for writing, so writers wait while the table doubles, while lookups go on, lock-free,
// in the old table (unchanged while no writer runs, hence never missing an item). The new table
// is published with one atomic store; the old one is freed once every lookup that may have seen
// it has left (read_epochs.hpp: lookups never wait for that).
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ccf/allocator.hpp"
#include "ccf/config.hpp"
#include "ccf/detail/cuckoo_engine.hpp"
#include "ccf/detail/growing_tag_layout.hpp"
#include "ccf/detail/heap_bytes.hpp"
#include "ccf/detail/indexer.hpp"
#include "ccf/detail/item_counter.hpp"
#include "ccf/detail/lock_protocol.hpp"
#include "ccf/detail/null_locking.hpp"
#include "ccf/detail/parallel.hpp"
#include "ccf/detail/read_epochs.hpp"
#include "ccf/detail/sharded_rwlock.hpp"
#include "ccf/detail/sizing.hpp"
#include "ccf/detail/striped_locking.hpp"
#include "ccf/hash.hpp"
#include "ccf/params.hpp"

namespace ccf::detail {

/// The writers' gate of the single-threaded core: nothing to lock.
struct null_gate {
  void lock() noexcept {}
  void unlock() noexcept {}
  void lock_shared() noexcept {}
  void unlock_shared() noexcept {}
};
/// What a sequential filter has for read_epochs: no lookup runs during a doubling.
struct no_epochs {};

inline constexpr unsigned growing_slots = 4;
inline constexpr double growing_load = 0.95;
inline constexpr std::size_t growing_max_kicks = 500;
/// The most doublings a filter may be made to keep its rate for (files record at most this).
inline constexpr unsigned growing_max_max_doublings = 64;
/// Buckets of a chunk once the table splits (2^17 slots).
inline constexpr std::size_t growing_chunk = std::size_t{1} << 15;

/// The buckets of a growing filter's first table for `capacity` items: capacity / (slots x load),
/// at least 64; past one chunk, a power-of-two number of chunks (the table splits from the
/// start). Throws std::length_error for a count no table can have.
inline std::size_t growing_initial_buckets(std::size_t capacity) {
  const double wanted = std::ceil(static_cast<double>(capacity) / (growing_slots * growing_load));
  check_bucket_count(wanted, capacity);  // before the doublings below
  const std::size_t buckets = std::max<std::size_t>(64, static_cast<std::size_t>(wanted));
  if (buckets <= growing_chunk) return buckets;
  std::size_t chunked = growing_chunk;
  while (chunked < buckets)
    chunked *= 2;
  return chunked;
}

/// The false-positive bound of a growing filter with W-bit slots after `splits` splits, at
/// growing_load.
inline double growing_fpr_bound(unsigned width, unsigned splits) noexcept {
  return 2.0 * growing_slots * growing_load * std::ldexp(1.0, -static_cast<int>(width - 1)) *
         (splits + 2.0) / 2.0;
}

/// The slot width (even, 12 to 32) that keeps the rate within `target` for `max_doublings`
/// splits. Throws std::invalid_argument when no width does.
inline unsigned growing_width(double target, unsigned max_doublings) {
  if (!(target > 0.0 && target < 1.0)) {
    throw std::invalid_argument("ccf: the target false-positive rate must be in (0, 1)");
  }
  // A file records at most 64 (a filter made with more could not be loaded again).
  if (max_doublings > growing_max_max_doublings) {
    throw std::invalid_argument("ccf: max_doublings must be at most 64, not " +
                                std::to_string(max_doublings));
  }
  for (unsigned w = 12; w <= 32; w += 2) {
    if (growing_fpr_bound(w, max_doublings) <= target) return w;
  }
  // %g: std::to_string printed the best rate, 3.2e-08 at 16 doublings, as 0.000000.
  throw std::invalid_argument("ccf: a growing filter reaches a false-positive rate of at best " +
                              params_format_double(growing_fpr_bound(32, max_doublings)) + " for " +
                              std::to_string(max_doublings) + " doublings");
}

template <unsigned W, bool Concurrent, class Allocator = table_allocator<std::uint64_t>>
class growing_core {
 public:
  using layout = growing_tag_layout<W, growing_slots>;
  using protocol =
      std::conditional_t<Concurrent, lock_protocol<striped_locking>, lock_protocol<null_locking>>;
  using engine_type = cuckoo_engine<layout, protocol, Allocator>;
  using indexer_type = typename engine_type::indexer_type;
  using counter_type = std::conditional_t<Concurrent, sharded_counter, plain_counter>;
  static constexpr unsigned fingerprint_bits = layout::fingerprint_bits;

  /// The table of one size.
  struct state {
    std::unique_ptr<engine_type> table;
    unsigned k = 0;                // 2^k chunks
    std::uint64_t generation = 0;  // which table published this is (1, 2, ...): never reused
    std::size_t chunk_size() const noexcept { return table->indexer().chunk_size(); }
    std::size_t slots() const noexcept { return table->size_in_tags(); }
  };

  growing_core(std::size_t initial_capacity, unsigned threads, const Allocator& alloc = Allocator())
      : threads_(threads), alloc_(alloc), hashes_(hash_allocator_of(alloc)) {
    if (initial_capacity == 0) throw std::invalid_argument("ccf: capacity must be at least 1");
    const std::size_t buckets = growing_initial_buckets(initial_capacity);
    // Checked here, naming the capacity asked for: the first table's own capacity (with its
    // slack, and rounded up to whole chunks) is larger, and named a number nobody had given.
    check_fits_in_memory(engine_type::table_bytes(buckets), initial_capacity);
    if (buckets > growing_chunk) {
      // Start splitting at once: 2^k chunks of growing_chunk buckets.
      publish(make_state(static_cast<unsigned>(std::countr_zero(buckets / growing_chunk)),
                         growing_chunk));
    } else {
      publish(make_state(0, buckets));
      keeps_hashes_ = true;
    }
  }

  // ---- operations on hashes ----
  /// Inserts h, doubling the table when it is full. False, and no item changes, when h's two
  /// buckets hold nothing but entries no doubling separates from h (after more than 2 x 4
  /// inserts of one item, or of items whose anchor and stored fingerprint agree once the table
  /// splits), when a split table far from full finds no room for h (grows_for()), when the table
  /// cannot double (rebuilt()), or when h finds no room even in the table doubled for it: an
  /// insert doubles the table for room at most once.
  bool insert(std::uint64_t h) {
    bool doubled_for_room = false;
    for (;;) {
      std::uint64_t seen = 0;
      bool inserted = false, full = false;
      {
        std::shared_lock<writer_gate> writing(writers_);
        const state* s = current_.load(std::memory_order_acquire);
        seen = s->generation;
        const position p = locate(*s, h);
        inserted = insert_entry(*s, p, h);
        if (inserted) {
          items_.add(1);
          // Past capacity(): a filter made for N items holds N before it first doubles.
          full = s->table->size() >
                     static_cast<std::size_t>(growing_load * static_cast<double>(s->slots())) &&
                 worth_doubling(*s);
        } else if (doubled_for_room || stays_refused(*s, p, h)) {
          return false;
        }
      }
      if (inserted) {
        if (full) grow_after_insert(seen);
        return true;
      }
      if (!grow(seen)) return false;
      doubled_for_room = true;
    }
  }
  bool contains(std::uint64_t h) const {
    [[maybe_unused]] auto reading = read_guard();
    const state& s = *current_.load(std::memory_order_acquire);
    return s.table->contains(locate(s, h));
  }
  std::size_t count(std::uint64_t h) const {
    [[maybe_unused]] auto reading = read_guard();
    const state& s = *current_.load(std::memory_order_acquire);
    return s.table->count(locate(s, h));
  }
  bool erase(std::uint64_t h) {
    std::shared_lock<writer_gate> writing(writers_);
    const state& s = *current_.load(std::memory_order_acquire);
    if (keeps_hashes_) {
      // An insert of h puts h in the set before its entry in the table: an erase that took h out
      // and then found no entry yet would leave the entry without its hash, and the next rebuild
      // would drop it (a false negative for a key whose erase answered false). So h leaves only
      // with an entry, under the set's mutex.
      std::lock_guard<std::mutex> lk(hashes_mutex_);
      const auto it = hashes_.find(h);
      if (it == hashes_.end()) return false;  // never inserted: refused
      if (!s.table->erase(locate(s, h))) return false;
      hashes_.erase(it);
    } else if (!s.table->erase(locate(s, h))) {
      return false;
    }
    items_.add(-1);
    return true;
  }

  /// Removes every item; the table keeps its size.
  void clear() {
    std::unique_lock<writer_gate> paused(writers_);
    current_.load(std::memory_order_acquire)->table->clear();
    {
      std::lock_guard<std::mutex> lk(hashes_mutex_);
      hashes_.clear();
    }
    failed_rebuild_ = std::numeric_limits<std::size_t>::max();
    items_.reset();
  }

  // ---- sizes ----
  std::size_t size() const noexcept { return items_.get(); }
  std::size_t num_buckets() const {
    return with_state([](const state& s) { return s.table->num_buckets(); });
  }
  std::size_t size_in_tags() const {
    return with_state([](const state& s) { return s.slots(); });
  }
  std::size_t size_in_bytes() const {
    return with_state([](const state& s) { return s.table->size_in_bytes(); });
  }
  /// size_in_bytes() plus the hashes kept while the table is small: a heap block per hash (a
  /// link and the hash, as std::unordered_multiset holds them) and a link per bucket of the set
  /// (none while it is empty). A node takes glibc's smallest block, 32 bytes, unless the set's
  /// allocator has a static block_bytes(bytes): then each block is what that says its heap gives.
  /// A concurrent filter's locks, epochs and counter shards count too.
  std::size_t memory_in_bytes() const {
    std::shared_lock<writer_gate> writing(writers_);  // no growth: the table and set stay
    std::lock_guard<std::mutex> lk(hashes_mutex_);
    return current_.load(std::memory_order_acquire)->table->memory_in_bytes() + kept_bytes() +
           heap_bytes_of(items_) + heap_bytes_of(writers_) + heap_bytes_of(epochs_);
  }
  std::size_t chunks() const {
    return with_state([](const state& s) { return std::size_t{1} << s.k; });
  }
  /// Items the table takes before it doubles (the insert of one more doubles it).
  std::size_t capacity() const {
    return static_cast<std::size_t>(growing_load * static_cast<double>(size_in_tags()));
  }
  unsigned threads() const noexcept { return threads_; }
  const Allocator& get_allocator() const noexcept { return alloc_; }
  /// Times the table doubled (each a rebuild or a split).
  unsigned doublings() const noexcept { return doublings_.load(std::memory_order_relaxed); }
  /// Splits that made the current table (the k of its 2^k chunks).
  unsigned splits() const {
    return with_state([](const state& s) { return s.k; });
  }
  bool keeps_hashes() const {
    return with_state([this](const state&) { return keeps_hashes_.load(); });
  }

  /// f(the table as it is now), while no growth can free it.
  template <class F>
  auto with_state(F&& f) const {
    [[maybe_unused]] auto reading = read_guard();
    return f(*current_.load(std::memory_order_acquire));
  }
  /// The hashes kept while the table is one small chunk (saving), in increasing order.
  template <class F>
  void for_each_hash(F&& f) const {
    std::vector<std::uint64_t> hashes;
    {
      std::lock_guard<std::mutex> lk(hashes_mutex_);
      hashes = sorted_hashes();
    }
    for (std::uint64_t h : hashes)
      f(h);
  }
  /// Replaces the table (loading a file) with 2^k chunks of `chunk` buckets read from `words`;
  /// returns the entries it holds.
  template <class Source>
  std::size_t load_table(unsigned k, std::size_t chunk, Source& words) {
    auto s = make_state(k, chunk);
    const std::size_t entries = s->table->load_canonical(words);
    publish(std::move(s));
    return entries;
  }
  /// What the loaded table holds: items, and the hashes kept while it is one small chunk. False
  /// when the hashes disagree with the table (kept_hashes_in_table): nothing is set then.
  bool set_contents(std::size_t items, unsigned doublings, bool keeps_hashes,
                    const std::vector<std::uint64_t>& hashes) {
    if (keeps_hashes && !kept_hashes_in_table(hashes)) return false;
    doublings_.store(doublings, std::memory_order_relaxed);
    keeps_hashes_.store(keeps_hashes);
    hashes_.clear();
    hashes_.insert(hashes.begin(), hashes.end());
    items_.reset();
    items_.add(static_cast<std::ptrdiff_t>(items));
    return true;
  }
  /// Whether the table holds an entry for each of `hashes`: grouped by the bucket pair and entry
  /// they place, every group is matched by at least as many entries as it has hashes. A file
  /// could pair a table with the hashes of other items, and the next doubling, which rebuilds the
  /// table from the hashes alone, would then lose every item the table answered for.
  bool kept_hashes_in_table(const std::vector<std::uint64_t>& hashes) const {
    const state& s = *current_.load(std::memory_order_acquire);
    std::vector<position> places(hashes.size());
    std::transform(hashes.begin(), hashes.end(), places.begin(),
                   [&](std::uint64_t h) { return locate(s, h); });
    const auto key = [](const position& p) { return std::pair(std::min(p.i1, p.i2), p.tag); };
    std::sort(places.begin(), places.end(),
              [&](const position& a, const position& b) { return key(a) < key(b); });
    for (std::size_t i = 0, j = 0; i < places.size(); i = j) {
      while (j < places.size() && key(places[j]) == key(places[i]))
        ++j;
      if (s.table->count(places[i]) < j - i) return false;
    }
    return true;
  }
  /// The writers' lock, for a consistent save (shared: stops growth, not lookups).
  template <class F>
  auto with_writers_paused(F&& f) const {
    std::unique_lock<writer_gate> paused(writers_);
    return f();
  }

  /// {i1, i2, query} of hash h in table s.
  static position locate(const state& s, std::uint64_t h) noexcept {
    const std::size_t c = s.chunk_size();
    const std::size_t chunk = s.k == 0 ? 0 : static_cast<std::size_t>(h >> (64 - s.k));
    const std::uint64_t fingerprint = (h << s.k) >> (64 - fingerprint_bits);
    const std::uint64_t h2 = mix64(h ^ 0x6a09e667f3bcc909ULL);
    const std::size_t base = chunk * c;
    const std::size_t i1 = base + static_cast<std::size_t>(range_reduce(h2, c));
    const auto query = layout::make(fingerprint, h2);
    return {i1, s.table->indexer().alt_in(base, i1, layout::tag_of(query)), query};
  }

 private:
  using writer_gate = std::conditional_t<Concurrent, sharded_rwlock, null_gate>;

  // A node is a few bytes: the table's allocator would give each a cache line of its own (a
  // 16-byte node took 64 and more), so with it the set uses the default allocator; any other
  // allocator (Redis's) is rebound.
  static constexpr bool table_allocated =
      std::is_same_v<Allocator, table_allocator<typename Allocator::value_type>>;
  using hash_allocator = std::conditional_t<
      table_allocated, std::allocator<std::uint64_t>,
      typename std::allocator_traits<Allocator>::template rebind_alloc<std::uint64_t>>;
  static hash_allocator hash_allocator_of(const Allocator& alloc) {
    if constexpr (table_allocated) {
      return hash_allocator();
    } else {
      return hash_allocator(alloc);
    }
  }
  using hash_set = std::unordered_multiset<std::uint64_t, std::hash<std::uint64_t>,
                                           std::equal_to<std::uint64_t>, hash_allocator>;

  /// The heap bytes the kept hashes take, as memory_in_bytes() counts them (hashes_mutex_ held).
  std::size_t kept_bytes() const noexcept {
    if (hashes_.empty()) return 0;
    constexpr std::size_t node = sizeof(void*) + sizeof(std::uint64_t);
    const std::size_t links = hashes_.bucket_count() * sizeof(void*);
    if constexpr (requires { hash_allocator::block_bytes(links); }) {
      return hashes_.size() * hash_allocator::block_bytes(node) +
             hash_allocator::block_bytes(links);
    } else {
      return hashes_.size() * 32 + links;
    }
  }

  std::unique_ptr<state> make_state(unsigned k, std::size_t chunk) const {
    auto s = std::make_unique<state>();
    s->k = k;
    s->table = std::make_unique<engine_type>(
        indexer_type(std::size_t{1} << k, chunk),
        static_cast<std::size_t>(growing_load * static_cast<double>(chunk << k) * growing_slots),
        growing_max_kicks, alloc_);
    return s;
  }
  void publish(std::unique_ptr<state> s) {
    s->generation = ++generations_;
    current_.store(s.get(), std::memory_order_release);
    owned_ = std::move(s);
  }
  auto read_guard() const {
    if constexpr (Concurrent) {
      return read_epochs::guard(epochs_);
    } else {
      return 0;
    }
  }
  /// Puts h's entry into the table, and h among the kept hashes first where they are kept: the
  /// kept set allocates and may throw, and then nothing has changed (an entry without its kept
  /// hash could not be erased, and a rebuild would drop it while size() still counted it).
  bool insert_entry(const state& s, const position& p, std::uint64_t h) {
    if (!keeps_hashes_) return s.table->insert(p, p.tag);
    remember(h);
    bool inserted = false;
    try {
      inserted = s.table->insert(p, p.tag);
    } catch (...) {
      forget(h);
      throw;
    }
    if (!inserted) forget(h);
    return inserted;
  }
  void remember(std::uint64_t h) {
    std::lock_guard<std::mutex> lk(hashes_mutex_);
    hashes_.insert(h);
  }
  bool forget(std::uint64_t h) {
    std::lock_guard<std::mutex> lk(hashes_mutex_);
    const auto it = hashes_.find(h);
    if (it == hashes_.end()) return false;
    hashes_.erase(it);
    return true;
  }

  /// Whether no doubling can make room for h: its buckets are full of entries that will follow
  /// it wherever it goes. A split moves an entry by its stored bits, so entries that match h's
  /// now match it in every split table; a rebuild places by the kept hashes, so only copies of h
  /// itself stay together — and they get two buckets again even where h's two buckets are one
  /// bucket now (the rebuilt table draws h's buckets anew), so only 2 x slots copies fill them.
  /// `matches`: the entries in h's buckets that match it.
  bool only_copies_of(const position& p, std::uint64_t h, std::size_t matches) {
    const std::size_t room = (p.i1 == p.i2 ? 1u : 2u) * growing_slots;
    if (matches < room) return false;
    if (!keeps_hashes_) return true;
    std::lock_guard<std::mutex> lk(hashes_mutex_);
    return hashes_.count(h) >= 2 * growing_slots;
  }

  /// Whether a split table that found no room for an item (`matches` entries in its buckets
  /// match it) doubles, rather than refusing it. Below half
  /// of growing_load, no room means buckets crowded by copies of a few items (each takes room in
  /// only two buckets, as in a table of one-slot buckets) and a doubling separates them only by
  /// chance: keys inserted five times each made the table double until memory ran out. So a
  /// further copy of an item already there (or of one with its tag, which contains() answers
  /// for alike) is refused below growing_load / 2, and any item below growing_load / 8: after
  /// inserts, a split table has at most 16 / growing_load slots per item. (Small tables rebuild
  /// from the kept hashes and stop at growing_chunk buckets: only_copies_of decides there.)
  /// The load counts items, not entries: an entry whose fingerprint is used up is in both halves
  /// of every later split, and such copies kept the entries' load high however often it doubled.
  bool grows_for(const state& s, std::size_t matches) const {
    if (keeps_hashes_) return true;
    if (!worth_doubling(s)) return false;
    return items_load(s) >= growing_load / 2 || matches == 0;
  }
  /// Whether doubling can make room in `s`: not where its items fill less than an eighth of it.
  /// Entries copied at splits fill such a table (a forged file's may fill it all), and a split
  /// copies them again: the doubled table would be as full, and each insert would double it.
  bool worth_doubling(const state& s) const {
    return keeps_hashes_ || items_load(s) >= growing_load / 8;
  }
  double items_load(const state& s) const {
    return static_cast<double>(items_.get()) / static_cast<double>(s.slots());
  }
  /// Whether h, which found no room in `s`, is refused rather than tried in a doubled table.
  bool stays_refused(const state& s, const position& p, std::uint64_t h) {
    const std::size_t matches = s.table->count(p);
    return only_copies_of(p, h, matches) || !grows_for(s, matches);
  }

  /// Doubles the table of generation `seen` (unless another thread already did); false when it
  /// cannot (rebuilt() found no table for the kept hashes). A generation, not the table's
  /// address: a table published after `seen` was freed may have its address.
  bool grow(std::uint64_t seen) {
    std::lock_guard<std::mutex> one_growth(growth_mutex_);
    std::unique_ptr<state> old;
    {
      std::unique_lock<writer_gate> paused(writers_);
      const state& now = *current_.load(std::memory_order_acquire);
      if (now.generation != seen) return true;
      // A rebuild that failed fails again until the kept hashes change.
      if (keeps_hashes_ && hashes_.size() == failed_rebuild_) return false;
      std::unique_ptr<state> next = keeps_hashes_ ? rebuilt(now) : split(now);
      if (!next) {
        failed_rebuild_ = hashes_.size();
        return false;
      }
      old = std::move(owned_);
      publish(std::move(next));
      doublings_.fetch_add(1, std::memory_order_relaxed);
    }
    if constexpr (Concurrent) epochs_.synchronize();  // no lookup still reads `old`
    return true;
  }
  /// The doubling an insert that went in asks for past 95 % load. The item is in: if the table
  /// cannot double now (no memory, or no table for the kept hashes), it stays as it is and a
  /// later insert asks again.
  void grow_after_insert(std::uint64_t seen) {
    try {
      grow(seen);
    } catch (const std::bad_alloc&) {
    } catch (const std::length_error&) {
    } catch (const std::system_error&) {  // a mutex or a thread the doubling could not have
    }
  }

  /// Phase one: a table of twice the buckets (one chunk, or two chunks of growing_chunk) built
  /// from the hashes kept; null when no table up to 2^4 chunks holds them (copies of two items
  /// whose offsets and anchors agree fill one pair of buckets until the chunk bits part them).
  std::unique_ptr<state> rebuilt(const state& s) {
    for (std::size_t buckets = s.table->num_buckets() * 2;; buckets *= 2) {
      // One chunk while it is small enough, then 2^k chunks of growing_chunk buckets.
      unsigned k = 0;
      while ((growing_chunk << k) < buckets)
        ++k;
      const std::size_t chunk = k == 0 ? buckets : growing_chunk;
      auto next = make_state(k, chunk);
      bool fits = true;
      // In increasing order, not the hash set's: a filter and a copy loaded from its file must
      // build the same table (replicas stay byte for byte the same).
      for (std::uint64_t h : sorted_hashes()) {
        const position p = locate(*next, h);
        if (!next->table->insert_direct(p, p.tag)) {
          fits = false;
          break;
        }
      }
      if (fits) {
        next->table->add_to_size(static_cast<std::ptrdiff_t>(hashes_.size()));
        if (k != 0) {
          keeps_hashes_ = false;
          hash_set(hash_allocator_of(alloc_)).swap(hashes_);  // clear() kept its bucket array
        }
        return next;
      }
      if (k >= 4) return nullptr;
    }
  }

  std::vector<std::uint64_t> sorted_hashes() const {
    std::vector<std::uint64_t> v(hashes_.begin(), hashes_.end());
    std::sort(v.begin(), v.end());
    return v;
  }

  /// Phase two: every chunk split in two (threads split chunks independently).
  std::unique_ptr<state> split(const state& s) {
    if (s.k >= 40) throw std::length_error("ccf: the growing filter cannot grow further");
    auto next = make_state(s.k + 1, s.chunk_size());
    const std::size_t chunks = std::size_t{1} << s.k;
    const std::size_t threads =
        std::clamp<std::size_t>(threads_ == 0 ? std::thread::hardware_concurrency() : threads_, 1,
                                std::max<std::size_t>(1, s.table->num_buckets() >> 16));
    std::atomic<std::size_t> next_chunk{0}, entries{0};
    auto work = [&] {
      std::size_t placed = 0;
      for (std::size_t c; (c = next_chunk.fetch_add(1)) < chunks;)
        placed += split_chunk(s, *next, c);
      entries.fetch_add(placed);
    };
    // Chunks are handed out as threads ask: a thread that cannot be started leaves its share to
    // those that were.
    run_shares(threads, [&](std::size_t) { work(); });
    next->table->add_to_size(static_cast<std::ptrdiff_t>(entries.load()));
    return next;
  }

  /// Copies chunk c of s into chunks 2c and 2c + 1 of next; returns the entries written.
  static std::size_t split_chunk(const state& s, state& next, std::size_t c) {
    using bucket = typename layout::bucket;
    const std::size_t size = s.chunk_size();
    std::size_t placed = 0;
    for (std::size_t o = 0; o < size; ++o) {
      const bucket from = s.table->table().load(c * size + o);
      bucket half[2]{};
      for (unsigned j = 0; j < growing_slots; ++j) {
        const auto v = layout::get(from, j);
        if (v == 0) continue;
        unsigned bit = 0;
        bool both = false;
        const auto moved = layout::split(v, bit, both);
        for (unsigned b = 0; b < 2; ++b) {
          if (both || b == bit) {
            layout::set(half[b], j, moved);
            ++placed;
          }
        }
      }
      for (unsigned b = 0; b < 2; ++b) {
        if (!(half[b] == bucket{})) next.table->fill_bucket((2 * c + b) * size + o, half[b]);
      }
    }
    return placed;
  }

  unsigned threads_;
  Allocator alloc_;
  std::unique_ptr<state> owned_;
  // Tables published so far (publish() runs with writers paused, or before the filter is shared).
  std::uint64_t generations_ = 0;
  std::atomic<const state*> current_{nullptr};
  counter_type items_;
  std::atomic<unsigned> doublings_{0};
  /// How many hashes were kept when a rebuild last failed (none: max).
  std::size_t failed_rebuild_ = std::numeric_limits<std::size_t>::max();
  std::atomic<bool> keeps_hashes_{false};
  hash_set hashes_;
  mutable std::mutex hashes_mutex_;
  mutable writer_gate writers_;
  // Lookups that may still read a table a doubling replaced (a sequential filter has none).
  [[no_unique_address]] mutable std::conditional_t<Concurrent, read_epochs, no_epochs> epochs_;
  std::mutex growth_mutex_;
};

}  // namespace ccf::detail
