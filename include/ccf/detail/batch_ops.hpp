// ccf — concurrent cuckoo filters.
// detail/batch_ops.hpp: batched lookups and inserts, and the parallel bulk build, over any
// cuckoo engine.
//
// Items are given as n positions, position k from locate(k), so that batches of keys and batches
// of hashes share the code.
//
// Lookups (batch_lookup), in blocks of `window` items: the positions of block b + 1 are computed
// and their buckets prefetched before the items of block b are looked up, so a batch keeps a
// block's cache misses in flight instead of one. (A ring that prefetched the item `window` places
// ahead of each lookup did the same with an index and a bound test per item: the blocks ran
// batched lookups 10-14 % faster in memory and 4-5 % in the caches, docs/benchmarks.md.) Tables of
// up to 1 MiB stay in the caches: there batches go one item at a time (prefetching and deferring
// would only add work).
//
// Mixed batches (batch_apply: contains, insert and erase in one stream) go in the same blocks;
// a block's buckets are fetched for writing where its item writes, and each item completes before
// the next starts, so a mixed batch is exactly its calls one at a time with their misses
// overlapped (a refused insert answers false and the batch goes on).
//
// Inserts (batch_insert), strictly in order: exactly items [0, result) end up inserted; a batch
// that throws (memory, the lock-free filter's thread limit) first takes back every item it placed.
//  * Small batches, or tables of one chunk: each item's buckets are prefetched `window` items
//    ahead; an item whose two buckets are both full is set aside in a ring of `defer` items while
//    the buckets its path search will read first are prefetched (prefetch_alternates), and comes
//    back `defer` full-bucket items later. When an item is refused, the items after it that
//    already went in are erased again.
//  * Large batches on chunked tables loaded 50 % or more (at least `grouped_min_per_chunk` items
//    per chunk; below that load inserts rarely search and the prefetch window does as well or
//    better): the items are taken in equal blocks (up to four of at most 4 M items, or four of
//    at most 16 M, or as many of at most 16 M as a larger batch needs), each sorted by chunk
//    (in one pass into a region per chunk, or by counting when a region overflows; scratch
//    memory of about 8 bytes per item of a block, allocated once per call) and inserted chunk
//    by chunk, starting from a chunk the block picks; a chunk that receives many items is first
//    swept into the caches sequentially, so its items' path searches hit the caches. When the chunk
//    fits in half of the core's L2, or in half of one hardware thread's share of the L3, they
//    run in search_mode::cached; otherwise the chunk does not stay in the caches while its items
//    go in, and they go on prefetching each level to hide the misses. An item refused in a
//    block sets a cutoff: items of the block after it are skipped, the ones after it already
//    inserted are erased again, and items before it are still inserted; the result is the same
//    as inserting in order. The batch then goes on one item at a time from the refused item:
//    in a concurrent filter, the items other threads' blocks placed past their own cutoffs may
//    have filled its chunk until they are erased (two batches filling a table at once could
//    each stop well short of full that way; tests/batch_insert_test.cpp).
//  Erasing again (engine.take_back) leaves an item alone when a clear() has run since its block
//  began: the clear removed the copy the batch placed, and a copy there now is another thread's
//  (erasing it would be a false negative). An item placed after such a clear then stays: the
//  result of a batch that a clear overlapped no longer says which of its items are present.
//
// Bulk build (bulk_insert): the table belongs to the caller alone. In rounds of 16 M items, the
// hashes are partitioned by chunk in parallel (a two-pass counting scatter: count per thread and
// chunk, then scatter, hashing twice rather than storing the hashes; threads started once, four
// barriers a round), then threads take whole chunks — the even ones, then the odd ones — sweep
// each into the caches (when it gets enough items; searched as above) and fill it with no
// lock and no atomic instruction (insert_direct: both buckets of every item and every cuckoo path
// lie in the item's chunk, and chunks share no word; the last bucket of a chunk may be loaded
// with the word after it, which is why neighbouring chunks are not filled at the same time). The
// result is an ordinary table of the engine's kind.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

#include "ccf/allocator.hpp"
#include "ccf/config.hpp"
#include "ccf/detail/cuckoo_path.hpp"
#include "ccf/detail/indexer.hpp"
#include "ccf/detail/parallel.hpp"

namespace ccf {

/// What a bulk build did (ccf::build, runtime_filter::bulk_insert).
struct bulk_result {
  std::size_t inserted = 0;
  std::size_t duplicates = 0;  // items skipped because the filter already answered yes
  std::size_t refused = 0;     // items that did not fit

  bulk_result& operator+=(const bulk_result& other) noexcept {
    inserted += other.inserted;
    duplicates += other.duplicates;
    refused += other.refused;
    return *this;
  }
};

/// What one operation of a mixed batch (apply_many) does: the filter's contains, insert or
/// erase of its key.
enum class operation_kind : unsigned char { contains, insert, erase };

/// One operation of a mixed batch: what it does and to which key (for apply_many_hashes, the
/// key's hash_of).
template <class Key>
struct operation {
  operation_kind kind = operation_kind::contains;
  Key key{};
};
/// ccf::operation{kind, key} deduces operation<Key> where a compiler lacks C++20's deduction for
/// aggregates.
template <class Key>
operation(operation_kind, Key) -> operation<Key>;

}  // namespace ccf

namespace ccf::detail {

inline constexpr std::size_t batch_window = 16;
inline constexpr std::size_t defer_window = 16;
/// Grouping by chunk pays once a block gives each chunk this many items, and once the table is
/// loaded enough that inserts search for cuckoo paths (below, a prefetch window does as well).
inline constexpr std::size_t grouped_min_per_chunk = 256;
inline constexpr double grouped_min_load = 0.5;
/// A batch goes in equal blocks (insert_block_size): as many as blocks of at most
/// grouped_min_block items need, up to four; then four, until a quarter of the batch exceeds
/// grouped_block; then as many as blocks of at most grouped_block items need. About 8 bytes of
/// scratch per item of a block.
inline constexpr std::size_t grouped_block = std::size_t{1} << 24;
inline constexpr std::size_t grouped_min_block = std::size_t{1} << 22;
/// A chunk is swept into the caches before its items when they are at least one per this many
/// of its cache lines.
inline constexpr std::size_t warm_lines_per_item = 8;

/// The calling machine's cache of `level` (2 or 3) in bytes as the C library reports it (L2: per
/// core; L3: as reported, often the whole socket's or the VM's), or `fallback` where it does not.
inline std::size_t cache_bytes(int level, std::size_t fallback) noexcept {
#if defined(_SC_LEVEL2_CACHE_SIZE) && defined(_SC_LEVEL3_CACHE_SIZE)
  const long reported = ::sysconf(level == 2 ? _SC_LEVEL2_CACHE_SIZE : _SC_LEVEL3_CACHE_SIZE);
  if (reported > 0) return static_cast<std::size_t>(reported);
#else
  (void)level;
#endif
  return fallback;
}

/// Whether a chunk of `chunk_bytes`, once swept into the caches, stays there while its items go
/// in: it fits in half of a core's L2, or in half of one hardware thread's share of the L3 (1 MiB
/// and 0 where the C library does not say).
inline bool chunk_stays_cached(std::size_t chunk_bytes) noexcept {
  static const std::size_t l2 = cache_bytes(2, std::size_t{1} << 20);
  static const std::size_t l3_share =
      cache_bytes(3, 0) / std::max(1U, std::thread::hardware_concurrency());
  return 2 * chunk_bytes <= l2 || 2 * chunk_bytes <= l3_share;
}

/// Sweeps chunk c into the caches when `count` items are about to go into it and that pays (at
/// least one item per `warm_lines_per_item` of its lines); true when it did and the chunk stays
/// in the caches (chunk_stays_cached), so that the items' path searches can run in
/// search_mode::cached: a search that tests each bucket as it computes it, stopping at the first
/// with room, waits less for cache hits than one that prefetches whole levels first.
template <class Engine>
bool warm_if_worth_it(Engine& engine, std::size_t c, std::size_t count) {
  const std::size_t chunk_bytes = engine.size_in_bytes() / engine.indexer().chunks();
  if (count * warm_lines_per_item < chunk_bytes / cache_line_size) return false;
  engine.warm_chunk(c);
  return chunk_stays_cached(chunk_bytes);
}

template <class Engine, class Locate, class Sink>
std::size_t batch_lookup(const Engine& engine, std::size_t n, Locate&& locate, Sink&& sink) {
  if (engine.size_in_bytes() <= Engine::cached_table_bytes) {
    std::size_t hits = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const bool hit = engine.contains(locate(i));
      hits += hit ? 1 : 0;
      sink(i, hit);
    }
    return hits;
  }
  std::array<std::array<position, batch_window>, 2> blocks;  // block b, and block b + 1 fetched
  auto fetch = [&](std::array<position, batch_window>& block, std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) {
      block[i - from] = locate(i);
      engine.prefetch(block[i - from]);
    }
  };
  std::size_t hits = 0;
  fetch(blocks[0], 0, std::min(n, batch_window));
  for (std::size_t from = 0, b = 0; from < n; from += batch_window, b ^= 1) {
    const std::size_t to = std::min(n, from + batch_window);
    fetch(blocks[b ^ 1], to, std::min(n, to + batch_window));
    for (std::size_t i = from; i < to; ++i) {
      const bool hit = engine.contains(blocks[b][i - from]);
      hits += hit ? 1 : 0;
      sink(i, hit);
    }
  }
  return hits;
}

/// Throws std::invalid_argument unless an output span of `out` elements can take one result
/// for each of `items` items of the batch member `member` (contains_many, apply_many ...).
inline void check_output_size(const char* member, std::size_t items, std::size_t out) {
  if (out < items) {
    throw std::invalid_argument(std::string("ccf: ") + member +
                                " needs an output span of at least " + std::to_string(items) +
                                " elements, got " + std::to_string(out));
  }
}

/// check_output_size, then std::invalid_argument unless every op's kind is one of
/// operation_kind's: apply_many checks both before it runs any op.
template <class K>
void check_operations(const char* member, std::span<const operation<K>> ops, std::size_t results) {
  check_output_size(member, ops.size(), results);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind > operation_kind::erase) {
      throw std::invalid_argument(std::string("ccf: ") + member + ": operation " +
                                  std::to_string(i) + " has kind " +
                                  std::to_string(static_cast<unsigned>(ops[i].kind)) +
                                  ", not one of operation_kind's (contains, insert, erase); no "
                                  "operation ran");
    }
  }
}

/// Runs items [0, n) in order, item i being the operation kind(i) at position locate(i), and
/// passes each one's result to sink(i, result); returns how many were true. As batch_lookup, in
/// blocks of batch_window items whose buckets are fetched (for writing where the item writes)
/// while the block before runs; item i completes before item i + 1 starts, so a batch does what
/// the same calls made one at a time would. Kinds are checked by the caller.
template <class Engine, class Kind, class Locate, class Sink>
std::size_t batch_apply(Engine& engine, std::size_t n, Kind&& kind, Locate&& locate, Sink&& sink) {
  auto run = [&](operation_kind k, const position& p) {
    if (k == operation_kind::contains) return engine.contains(p);
    return k == operation_kind::insert ? engine.insert(p, p.tag) : engine.erase(p);
  };
  std::size_t yes = 0;
  if (engine.size_in_bytes() <= Engine::cached_table_bytes) {
    for (std::size_t i = 0; i < n; ++i) {
      const bool r = run(kind(i), locate(i));
      yes += r ? 1 : 0;
      sink(i, r);
    }
    return yes;
  }
  struct item {
    position p;
    operation_kind k;
  };
  std::array<std::array<item, batch_window>, 2> blocks;  // block b, and block b + 1 fetched
  auto fetch = [&](std::array<item, batch_window>& block, std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) {
      item& it = block[i - from];
      it = {locate(i), kind(i)};
      if (it.k == operation_kind::contains) {
        engine.prefetch(it.p);
      } else {
        engine.prefetch_for_write(it.p);
      }
    }
  };
  fetch(blocks[0], 0, std::min(n, batch_window));
  for (std::size_t from = 0, b = 0; from < n; from += batch_window, b ^= 1) {
    const std::size_t to = std::min(n, from + batch_window);
    fetch(blocks[b ^ 1], to, std::min(n, to + batch_window));
    for (std::size_t i = from; i < to; ++i) {
      const item& it = blocks[b][i - from];
      const bool r = run(it.k, it.p);
      yes += r ? 1 : 0;
      sink(i, r);
    }
  }
  return yes;
}

/// Inserts items [0, n) in order with a prefetch window and deferred full-bucket items; stops
/// at the first refusal and erases the items after it that went in. Returns the number inserted.
template <class Engine, class Locate>
std::size_t insert_in_order(Engine& engine, std::size_t n, Locate&& locate) {
  if (engine.size_in_bytes() <= Engine::cached_table_bytes) {
    for (std::size_t i = 0; i < n; ++i) {
      const position p = locate(i);
      if (!engine.insert(p, p.tag)) return i;  // nothing after item i went in
    }
    return n;
  }
  struct pending {
    std::size_t index;
    position p;
  };
  const std::size_t clears = engine.clears();  // a clear from here on takes back for us
  std::array<position, batch_window> ring;
  std::array<pending, defer_window> deferred;
  std::size_t first = 0, waiting = 0;
  for (std::size_t i = 0; i < std::min(n, batch_window); ++i) {
    ring[i] = locate(i);
    engine.prefetch_for_write(ring[i]);
  }
  // Item j was refused: take back the items after it that went in (not those still waiting).
  auto refuse = [&](std::size_t j, std::size_t upto) {
    for (std::size_t k = j + 1; k < upto; ++k) {
      bool still_waiting = false;
      for (std::size_t d = 0; d < waiting; ++d)
        still_waiting |= deferred[(first + d) % defer_window].index == k;
      if (!still_waiting) engine.take_back(locate(k), clears);
    }
    return j;
  };
  auto drain_one = [&]() {
    const pending q = deferred[first];
    first = (first + 1) % defer_window;
    --waiting;
    return q;
  };
  for (std::size_t i = 0; i < n; ++i) {
    const position p = ring[i % batch_window];
    if (i + batch_window < n) {
      ring[i % batch_window] = locate(i + batch_window);
      engine.prefetch_for_write(ring[i % batch_window]);
    }
    if (engine.try_place(p, p.tag)) continue;
    engine.prefetch_alternates(p);
    if (waiting == defer_window) {
      const pending q = drain_one();
      if (!engine.insert(q.p, q.p.tag)) return refuse(q.index, i);
    }
    deferred[(first + waiting) % defer_window] = {i, p};
    ++waiting;
  }
  while (waiting != 0) {
    const pending q = drain_one();
    if (!engine.insert(q.p, q.p.tag)) return refuse(q.index, n);
  }
  return n;
}

/// Scratch memory of batched inserts and bulk builds: n elements allocated through
/// table_allocator (huge-page advised when large) and not initialised — each is written before
/// it is read — so that a batch pays neither zeroing nor 4 KiB page faults for it.
template <class T>
class scratch_array {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_default_constructible_v<T>);

 public:
  scratch_array() = default;
  explicit scratch_array(std::size_t n) : data_(table_allocator<T>().allocate(n), deleter{n}) {}
  T* get() const noexcept { return data_.get(); }
  T& operator[](std::size_t i) const noexcept { return data_[i]; }

 private:
  struct deleter {
    std::size_t n = 0;
    void operator()(T* p) const noexcept { table_allocator<T>().deallocate(p, n); }
  };
  std::unique_ptr<T[], deleter> data_;
};

/// The scratch of a grouped insert: the hashes of a block's items in chunk order, chunk c's at
/// sorted[chunk_begin[c], chunk_end[c]). A stable sort: the items of one chunk keep their order,
/// so each one's offset in the block can be found again (offsets_in_chunk_order) when a refusal
/// needs it; until then no offset is kept. Chunk c first gets a region of its own, sized for
/// every block up to `block` items (region_for), and the block is sorted in one pass; a block
/// that overflows a region (keys far from uniform over the chunks, many copies of one key) is
/// sorted again by counting first.
struct grouping_scratch {
  explicit grouping_scratch(std::size_t block, std::size_t chunks)
      : sorted(std::max(block, region_for(block, chunks) * chunks)),
        chunk_begin(chunks),
        chunk_end(chunks) {}
  /// A chunk's region for blocks of n items over m chunks: the mean, plus eight standard
  /// deviations of a binomial count, plus 64.
  static std::size_t region_for(std::size_t n, std::size_t m) noexcept {
    const std::size_t mean = (n + m - 1) / m;
    return mean + 8 * static_cast<std::size_t>(std::sqrt(static_cast<double>(mean))) + 64;
  }
  std::size_t positions() const noexcept { return chunk_end.back(); }  // chunks >= 1

  scratch_array<std::uint64_t> sorted;
  std::vector<std::size_t> chunk_begin, chunk_end;
};

/// Sorts the items of [begin, end) by chunk into s (see grouping_scratch): one pass into the
/// chunks' regions, hashing each item once, or, when a region overflows, a counting sort that
/// hashes each item twice more.
template <class Indexer, class HashAt>
void sort_block_by_chunk(const Indexer& indexer, std::size_t begin, std::size_t end,
                         HashAt&& hash_at, grouping_scratch& s) {
  const std::size_t m = indexer.chunks(), region = grouping_scratch::region_for(end - begin, m);
  for (std::size_t c = 0; c < m; ++c)
    s.chunk_begin[c] = s.chunk_end[c] = c * region;
  std::size_t k = begin;
  for (; k < end; ++k) {
    const std::uint64_t h = hash_at(k);
    const std::size_t c = indexer.chunk_of_hash(h);
    if (s.chunk_end[c] == s.chunk_begin[c] + region) break;
    s.sorted[s.chunk_end[c]++] = h;
  }
  if (k == end) return;
  std::fill(s.chunk_end.begin(), s.chunk_end.end(), 0);
  for (k = begin; k < end; ++k)
    ++s.chunk_end[indexer.chunk_of_hash(hash_at(k))];
  for (std::size_t c = 0, running = 0; c < m; ++c) {
    s.chunk_begin[c] = running;
    running += std::exchange(s.chunk_end[c], running);
  }
  for (k = begin; k < end; ++k) {
    const std::uint64_t h = hash_at(k);
    s.sorted[s.chunk_end[indexer.chunk_of_hash(h)]++] = h;
  }
}

/// offsets[i]: the offset in the block [begin, end) (the original order) of the item at
/// s.sorted[i], for i in a chunk's range.
template <class Indexer, class HashAt>
std::vector<std::uint32_t> offsets_in_chunk_order(const Indexer& indexer, std::size_t begin,
                                                  std::size_t end, HashAt& hash_at,
                                                  const grouping_scratch& s) {
  std::vector<std::uint32_t> offsets(s.positions());
  std::vector<std::size_t> next = s.chunk_begin;
  for (std::size_t k = begin; k < end; ++k)
    offsets[next[indexer.chunk_of_hash(hash_at(k))]++] = static_cast<std::uint32_t>(k - begin);
  return offsets;
}

/// The bookkeeping of a grouped block once an item was refused (a full table): every item's
/// offset in the block, which items went in, and the cutoff (the offset of the first item
/// refused). Empty until the first refusal.
struct grouped_refusals {
  std::vector<std::uint32_t> offsets;   // offsets_in_chunk_order
  std::vector<unsigned char> inserted;  // inserted[i]: sorted[i] went in
  std::size_t cutoff;

  bool started() const noexcept { return !offsets.empty(); }
  bool skips(std::size_t i) const noexcept { return started() && offsets[i] >= cutoff; }
  void start(std::vector<std::uint32_t> all_offsets) {
    std::vector<unsigned char> none(all_offsets.size(), 0);  // allocated before anything changes
    offsets = std::move(all_offsets);
    inserted = std::move(none);
  }
  /// Sorted positions [from, to) went in.
  void went_in(std::size_t from, std::size_t to) {
    if (!started()) return;
    std::fill(inserted.begin() + static_cast<std::ptrdiff_t>(from),
              inserted.begin() + static_cast<std::ptrdiff_t>(to), 1);
  }
};

/// Inserts the items of block [begin, end), sorted into s, in chunk order; returns the offset
/// of the first item (in the original order) that could not be inserted, or the block's size. A
/// chunk that receives at least one item per `warm_lines_per_item` of its cache lines is first
/// swept into the caches. Until an item is refused (a full table) every item goes in and
/// nothing else is recorded; the first refusal recovers the offsets and which items went in
/// (grouped_refusals), so that the items after the cutoff are skipped from then on and taken out
/// again at the end. When that bookkeeping cannot be allocated, the items of the block that went
/// in are taken out again and std::bad_alloc propagates.
template <class Engine, class HashAt>
std::size_t insert_block_grouped(Engine& engine, std::size_t begin, std::size_t end,
                                 HashAt& hash_at, grouping_scratch& s) {
  static_assert(grouped_block <= std::size_t{1} << 32, "offsets are 32-bit");
  const auto& indexer = engine.indexer();
  const std::size_t m = indexer.chunks();
  const std::uint64_t* const sorted = s.sorted.get();
  grouped_refusals r{{}, {}, end - begin};
  const std::size_t clears = engine.clears();  // a clear from here on takes back for us
  // Chunks in turn from one the block chooses: threads that insert large batches at once start
  // at different chunks instead of contending for the same one (the result does not depend on
  // the order of chunks: every path stays in its chunk).
  const std::size_t first = indexer.chunk_of_hash(hash_at(begin));
  auto chunk_at = [&](std::size_t j) { return first + j < m ? first + j : first + j - m; };
  // The sorted ranges [from, to) taken before item i of the j-th chunk in turn: all went in
  // when i is the first item refused.
  auto for_each_taken_before = [&](std::size_t j, std::size_t i, auto&& f) {
    for (std::size_t d = 0; d <= j; ++d) {
      const std::size_t c = chunk_at(d);
      f(s.chunk_begin[c], d < j ? s.chunk_end[c] : i);
    }
  };
  for (std::size_t j = 0; j < m; ++j) {
    const std::size_t c = chunk_at(j), from = s.chunk_begin[c], to = s.chunk_end[c];
    const bool cached = warm_if_worth_it(engine, c, to - from);
    if (!cached) {
      for (std::size_t i = from; i < std::min(to, from + batch_window); ++i)
        engine.prefetch_for_write(indexer.locate(sorted[i]));
    }
    for (std::size_t i = from; i < to; ++i) {
      if (!cached && i + batch_window < to) {
        engine.prefetch_for_write(indexer.locate(sorted[i + batch_window]));
      }
      if (r.skips(i)) continue;
      const position p = indexer.locate(sorted[i]);
      if (cached ? engine.insert_cached(p, p.tag) : engine.insert(p, p.tag)) {
        r.went_in(i, i + 1);
        continue;
      }
      if (!r.started()) {  // the first refusal: every item taken before this one went in
        try {
          r.start(offsets_in_chunk_order(indexer, begin, end, hash_at, s));
        } catch (...) {  // no memory for the bookkeeping: the block takes back what went in
          for_each_taken_before(j, i, [&](std::size_t a, std::size_t b) {
            for (std::size_t k = a; k < b; ++k)
              engine.take_back(indexer.locate(sorted[k]), clears);
          });
          throw;
        }
        for_each_taken_before(j, i, [&](std::size_t a, std::size_t b) { r.went_in(a, b); });
      }
      r.cutoff = r.offsets[i];  // less than before: items at or past it are skipped
    }
  }
  for (std::size_t i = 0; i < r.inserted.size(); ++i) {
    if (r.inserted[i] != 0 && r.offsets[i] > r.cutoff) {
      engine.take_back(indexer.locate(sorted[i]), clears);
    }
  }
  return r.cutoff;
}

/// The size of the blocks a batched insert of n > 0 items is cut into (see grouped_block; the
/// last block may be smaller by less than one item per block). Blocks of equal size: a small
/// last block would give its chunks too few items to sweep them, and near full its path
/// searches would wait on memory. Larger blocks spread a block's sweep of its chunks over more
/// items; several blocks let the load, which decides each block's way, be seen rising within
/// one batch (a thread's share of a concurrent fill).
constexpr std::size_t insert_block_size(std::size_t n) noexcept {
  const std::size_t target = std::clamp((n + 3) / 4, grouped_min_block, grouped_block);
  const std::size_t blocks = (n - 1) / target + 1;
  return (n + blocks - 1) / blocks;
}

/// Inserts items [0, n) as if one at a time in order (see the top of this file); hash_at(k) is
/// item k's hash (called more than once for an item of a grouped block). Returns how many were
/// inserted: exactly items [0, result). When it throws (no memory for its scratch or for a path
/// search's first queue; the lock-free filter's thread limit), every item it placed is taken
/// back: the filter holds what it held before.
template <class Engine, class HashAt>
std::size_t batch_insert(Engine& engine, std::size_t n, HashAt&& hash_at) {
  const auto& indexer = engine.indexer();
  if (n == 0) return 0;
  engine.prepare_inserts();                    // from here on an insert does not throw
  const std::size_t clears = engine.clears();  // a clear from here on takes back for us
  const std::size_t block = insert_block_size(n);
  std::optional<grouping_scratch> scratch;  // allocated by the first grouped block
  auto in_order_from = [&](std::size_t from, std::size_t to) {
    return insert_in_order(engine, to - from,
                           [&](std::size_t k) { return indexer.locate(hash_at(from + k)); });
  };
  std::size_t begin = 0;  // items [0, begin) are in
  try {
    for (; begin < n;) {
      const std::size_t end = std::min(n, begin + block);
      const double load =
          static_cast<double>(engine.size()) / static_cast<double>(engine.size_in_tags());
      if (indexer.chunks() == 1 || end - begin < grouped_min_per_chunk * indexer.chunks() ||
          load < grouped_min_load) {
        const std::size_t done = in_order_from(begin, end);
        if (done != end - begin) return begin + done;
      } else {
        if (!scratch) scratch.emplace(block, indexer.chunks());
        sort_block_by_chunk(indexer, begin, end, hash_at, *scratch);
        const std::size_t done = insert_block_grouped(engine, begin, end, hash_at, *scratch);
        if (done != end - begin) {
          // The chunk of item begin + done was full. In a concurrent filter, items that other
          // threads' grouped batches placed past their own refusals may have filled it, and they
          // are being erased again: the rest of the batch goes one item at a time from the
          // refused one, refused only where its chunk is full when the item comes (alone, the
          // item meets the chunk as it was, and is refused again at once).
          begin += done;
          return begin + in_order_from(begin, n);
        }
      }
      begin = end;
    }
  } catch (...) {
    for (std::size_t k = 0; k < begin; ++k)
      engine.take_back(indexer.locate(hash_at(k)), clears);
    throw;
  }
  return n;
}

/// Inserts `count` hashes of one chunk with insert_direct (the caller owns the chunk) and adds
/// what happened to them to `out`, also when an insert throws (a path search's first queue).
template <search_mode Mode, class Engine>
void fill_chunk(Engine& engine, const std::uint64_t* hashes, std::size_t count, bool skip_present,
                bulk_result& out) {
  const auto& indexer = engine.indexer();
  bulk_result r;
  try {
    for (std::size_t i = 0; i < count; ++i) {
      if (Mode == search_mode::ahead && i + batch_window < count)
        engine.prefetch_for_write(indexer.locate(hashes[i + batch_window]));
      const position p = indexer.locate(hashes[i]);
      if (skip_present && engine.contains_direct(p)) {
        ++r.duplicates;
      } else if (engine.template insert_direct<Mode>(p, p.tag)) {
        ++r.inserted;
      } else {
        ++r.refused;
      }
    }
  } catch (...) {
    out += r;
    throw;
  }
  out += r;
}

/// Items per round of a bulk build: the scratch for one round is 8 bytes per item.
inline constexpr std::size_t bulk_round = std::size_t{1} << 24;

/// bulk_insert on a team of t_count threads; std::nullopt, with nothing done and t_count set to
/// the threads that could be had (fewer), when not all of them could be started.
template <class Engine, class HashAt>
std::optional<bulk_result> bulk_insert_team(Engine& engine, std::size_t n, HashAt& hash_at,
                                            std::size_t& t_count, bool skip_present) {
  const auto& indexer = engine.indexer();
  const std::size_t m = indexer.chunks();
  // Not zeroed, and in huge pages: first touched by the threads that fill it.
  scratch_array<std::uint64_t> sorted(std::min(n, bulk_round));
  // counts[t * m + c]: thread t's items of chunk c, then where they go in `sorted`.
  std::vector<std::size_t> counts(t_count * m), chunk_start(m + 1);
  // Each thread tallies in a local and writes its slot once, at the end (or when it fails): no
  // false sharing.
  std::vector<bulk_result> results(t_count);
  std::array<std::atomic<std::size_t>, 2> next_pair{};
  // Between the phases of a round, on one thread: after counting, the exclusive prefix sums
  // (chunk c's items are thread 0's, then thread 1's, ...); after the odd chunks, a fresh round.
  std::size_t phase = 0;
  auto between = [&]() noexcept {
    if (phase % 4 == 0) {
      std::size_t running = 0;
      for (std::size_t c = 0; c < m; ++c) {
        chunk_start[c] = running;
        for (std::size_t t = 0; t < t_count; ++t)
          running += std::exchange(counts[t * m + c], running);
      }
      chunk_start[m] = running;
      next_pair[0].store(0, std::memory_order_relaxed);
      next_pair[1].store(0, std::memory_order_relaxed);
    } else if (phase % 4 == 3) {
      std::fill(counts.begin(), counts.end(), 0);
    }
    ++phase;
  };
  team_barrier sync(static_cast<std::ptrdiff_t>(t_count), between);
  const auto body = [&](std::size_t t, bulk_result& mine) {
    std::size_t* const c = &counts[t * m];
    for (std::size_t begin = 0; begin < n; begin += bulk_round) {
      const std::size_t size = std::min(bulk_round, n - begin);
      const std::size_t lo = begin + size * t / t_count, hi = begin + size * (t + 1) / t_count;
      for (std::size_t k = lo; k < hi; ++k)
        ++c[indexer.chunk_of_hash(hash_at(k))];
      sync.wait();
      for (std::size_t k = lo; k < hi; ++k) {
        const std::uint64_t h = hash_at(k);
        sorted[c[indexer.chunk_of_hash(h)]++] = h;
      }
      sync.wait();
      // Even chunks, then odd ones: a thread filling chunk c may read the first word of chunk
      // c + 1 (a bucket that ends on the chunk boundary is loaded with the word after it), which
      // must not be written meanwhile.
      for (std::size_t parity = 0; parity < 2; ++parity) {
        std::atomic<std::size_t>& next = next_pair[parity];
        for (std::size_t k; (k = 2 * next.fetch_add(1, std::memory_order_relaxed) + parity) < m;) {
          const std::uint64_t* items = sorted.get() + chunk_start[k];
          const std::size_t count = chunk_start[k + 1] - chunk_start[k];
          if (warm_if_worth_it(engine, k, count)) {
            fill_chunk<search_mode::cached>(engine, items, count, skip_present, mine);
          } else {
            fill_chunk<search_mode::ahead>(engine, items, count, skip_present, mine);
          }
        }
        sync.wait();
      }
    }
  };
  // The items that went in stay and are counted, also when a thread failed.
  const auto settle = [&] {
    bulk_result total;
    for (const bulk_result& r : results)
      total += r;
    engine.add_to_size(static_cast<std::ptrdiff_t>(total.inserted));
    return total;
  };
  try {
    const std::size_t ran_on = run_parallel(t_count, sync, [&](std::size_t t) {
      bulk_result mine;
      try {
        body(t, mine);
      } catch (...) {
        results[t] = mine;
        throw;
      }
      results[t] = mine;
    });
    if (ran_on < t_count) {
      t_count = ran_on;
      return std::nullopt;
    }
  } catch (...) {
    settle();
    throw;
  }
  return settle();
}

/// Fills a table the caller has to itself with items [0, n) using `threads` threads (see the top
/// of this file), in rounds of `bulk_round` items. With `skip_present`, an item the table already
/// answers yes for is skipped (a repeat, or a false positive, which answers yes anyway). The
/// engine's size is updated. The threads are started once; four barriers a round separate
/// counting, scattering, and filling the even and the odd chunks. Where fewer threads can be
/// started (a process's thread limit, no memory for a stack), it runs on those that can, down
/// to this one alone. When hash_at or an insert throws on some thread (an insert only
/// std::bad_alloc, as a thread's path-search queue is first sized), every thread stops at its
/// next barrier, the items that went in stay and are counted in the size, and the first
/// exception is rethrown.
template <class Engine, class HashAt>
bulk_result bulk_insert(Engine& engine, std::size_t n, HashAt&& hash_at, unsigned threads,
                        bool skip_present) {
  std::size_t t_count =
      std::max<std::size_t>(1, std::min<std::size_t>({threads, engine.indexer().chunks(),
                                                      (std::min(n, bulk_round) + 4095) / 4096}));
  // Each failed try leaves fewer threads to ask for, and one thread needs none started.
  for (;;) {
    if (auto r = bulk_insert_team(engine, n, hash_at, t_count, skip_present)) return *r;
  }
}

}  // namespace ccf::detail
