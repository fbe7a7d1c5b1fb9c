// ccf — concurrent cuckoo filters.
// detail/batch_ops.hpp: batched lookups and inserts, and the parallel bulk build, over any
// cuckoo engine.
//
// Items are given as n positions, position k from locate(k), so that batches of keys and batches
// of hashes share the code.
//
// Lookups (batch_lookup). The positions of the next `window` items are computed and their buckets
// prefetched before the current item is looked up, so a batch keeps that many cache misses in
// flight instead of one. Tables of up to 1 MiB stay in the caches: there batches go one item at a
// time (prefetching and deferring would only add work).
//
// Inserts (batch_insert), strictly in order: exactly items [0, result) end up inserted.
//  * Small batches, or tables of one chunk: the same prefetch window; an item whose two buckets
//    are both full is set aside in a ring of `defer` items while the buckets its path search will
//    read first are prefetched (prefetch_alternates), and comes back `defer` full-bucket items
//    later. When an item is refused, the items after it that already went in are erased again.
//  * Large batches on chunked tables loaded 70 % or more (at least `grouped_min_per_chunk` items
//    per chunk; below that load inserts rarely search and the prefetch window does better): the
//    items are taken in blocks of up to 4 M, each block sorted by chunk (a counting sort of
//    hashes) and inserted chunk by chunk; a chunk that receives many items is first swept into
//    the caches sequentially, so its items' path searches (about 14 bucket reads each at 95 %
//    load) hit the caches instead of memory. An item refused in a block sets a cutoff: items of the block
//    after it are skipped, the ones after it already inserted are erased again, and items before
//    it are still inserted; the result is the same as inserting in order.
//
// Bulk build (bulk_insert): the table belongs to the caller alone. In rounds of 16 M items, the
// hashes are partitioned by chunk in parallel (a two-pass counting scatter: count per thread and
// chunk, then scatter, hashing twice rather than storing the hashes), then threads take whole
// chunks — the even ones, then the odd ones — sweep each into the caches and fill it with no
// lock and no atomic instruction (insert_direct: both buckets of every item and every cuckoo path
// lie in the item's chunk, and chunks share no word; the last bucket of a chunk may be loaded
// with the word after it, which is why neighbouring chunks are not filled at the same time). The
// result is an ordinary table of the engine's kind.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "ccf/allocator.hpp"
#include "ccf/config.hpp"
#include "ccf/detail/indexer.hpp"

namespace ccf {

/// What a bulk build did (ccf::build, runtime_filter::bulk_insert).
struct bulk_result {
  std::size_t inserted = 0;
  std::size_t duplicates = 0;  // items skipped because the filter already answered yes
  std::size_t refused = 0;     // items that did not fit
};

}  // namespace ccf

namespace ccf::detail {

inline constexpr std::size_t batch_window = 16;
inline constexpr std::size_t defer_window = 16;
/// Tables up to this size stay in a core's caches: batches then go one item at a time, since
/// prefetching and deferring only add work there.
inline constexpr std::size_t in_cache_bytes = std::size_t{1} << 20;
/// Grouping by chunk pays once a block gives each chunk this many items, and once the table is
/// loaded enough that inserts search for cuckoo paths (below, a prefetch window does better).
inline constexpr std::size_t grouped_min_per_chunk = 256;
inline constexpr double grouped_min_load = 0.7;
/// Items per block of a grouped insert (25 bytes of scratch each).
inline constexpr std::size_t grouped_block = std::size_t{1} << 22;
/// A chunk is swept into the caches before its items when they are at least one per this many
/// of its cache lines.
inline constexpr std::size_t warm_lines_per_item = 8;

template <class Engine, class Locate, class Sink>
std::size_t batch_lookup(const Engine& engine, std::size_t n, Locate&& locate, Sink&& sink) {
  if (engine.size_in_bytes() <= in_cache_bytes) {
    std::size_t hits = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const bool hit = engine.contains(locate(i));
      hits += hit ? 1 : 0;
      sink(i, hit);
    }
    return hits;
  }
  std::array<position, batch_window> ring;
  for (std::size_t i = 0; i < std::min(n, batch_window); ++i) {
    ring[i] = locate(i);
    engine.prefetch(ring[i]);
  }
  std::size_t hits = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const position p = ring[i % batch_window];
    if (i + batch_window < n) {
      ring[i % batch_window] = locate(i + batch_window);
      engine.prefetch(ring[i % batch_window]);
    }
    const bool hit = engine.contains(p);
    hits += hit ? 1 : 0;
    sink(i, hit);
  }
  return hits;
}

/// Inserts items [0, n) in order with a prefetch window and deferred full-bucket items; stops
/// at the first refusal and erases the items after it that went in. Returns the number inserted.
template <class Engine, class Locate>
std::size_t insert_in_order(Engine& engine, std::size_t n, Locate&& locate) {
  if (engine.size_in_bytes() <= in_cache_bytes) {
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
      if (!still_waiting) engine.erase(locate(k));
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

/// An item of a block, in chunk order.
struct sorted_item {
  std::uint64_t hash;
  std::size_t offset;  // in the block, i.e. in the original order
};

/// Sorts the items of [begin, end) by chunk (a counting sort): `sorted` gets their hashes and
/// offsets in chunk order, so that inserting them reads it sequentially; counts[c] ends as the
/// end of chunk c's items in `sorted`.
template <class Indexer, class HashAt>
void sort_block_by_chunk(const Indexer& indexer, std::size_t begin, std::size_t end,
                         HashAt&& hash_at, std::vector<std::uint64_t>& hashes,
                         std::vector<sorted_item>& sorted, std::vector<std::size_t>& counts) {
  const std::size_t n = end - begin;
  hashes.resize(n);
  sorted.resize(n);
  counts.assign(indexer.chunks() + 1, 0);
  for (std::size_t k = 0; k < n; ++k) {
    hashes[k] = hash_at(begin + k);
    ++counts[indexer.chunk_of_hash(hashes[k]) + 1];
  }
  for (std::size_t c = 1; c < counts.size(); ++c)
    counts[c] += counts[c - 1];
  for (std::size_t k = 0; k < n; ++k)
    sorted[counts[indexer.chunk_of_hash(hashes[k])]++] = {hashes[k], k};
}

/// Inserts the items of one block in chunk order; returns the offset of the first item (in
/// the original order) that could not be inserted, or the block's size. A chunk that receives at
/// least one item per `warm_lines_per_item` of its cache lines is first swept into the caches.
template <class Engine>
std::size_t insert_block_grouped(Engine& engine, const std::vector<std::uint64_t>& hashes,
                                 const std::vector<sorted_item>& sorted,
                                 const std::vector<std::size_t>& chunk_end,
                                 std::vector<unsigned char>& inserted) {
  const auto& indexer = engine.indexer();
  const std::size_t n = sorted.size();
  const std::size_t chunk_lines = engine.size_in_bytes() / indexer.chunks() / cache_line_size;
  inserted.assign(n, 0);
  std::size_t cutoff = n;
  for (std::size_t i = 0; i < std::min(n, batch_window); ++i)
    engine.prefetch_for_write(indexer.locate(sorted[i].hash));
  for (std::size_t c = 0, i = 0; c < indexer.chunks(); ++c) {
    const std::size_t end = chunk_end[c];
    if ((end - i) * warm_lines_per_item >= chunk_lines) engine.warm_chunk(c);
    for (; i < end; ++i) {
      if (i + batch_window < n) {
        engine.prefetch_for_write(indexer.locate(sorted[i + batch_window].hash));
      }
      const std::size_t k = sorted[i].offset;
      if (k >= cutoff) continue;
      const position p = indexer.locate(sorted[i].hash);
      if (engine.insert(p, p.tag)) {
        inserted[k] = 1;
      } else {
        cutoff = k;
      }
    }
  }
  for (std::size_t k = cutoff + 1; k < n; ++k) {
    if (inserted[k] != 0) engine.erase(indexer.locate(hashes[k]));
  }
  return cutoff;
}

/// Inserts items [0, n) as if one at a time in order (see the top of this file); hash_at(k) is
/// item k's hash. Returns how many were inserted: exactly items [0, result).
template <class Engine, class HashAt>
std::size_t batch_insert(Engine& engine, std::size_t n, HashAt&& hash_at) {
  const auto& indexer = engine.indexer();
  std::vector<std::uint64_t> hashes;
  std::vector<sorted_item> sorted;
  std::vector<std::size_t> counts;
  std::vector<unsigned char> inserted;
  for (std::size_t begin = 0; begin < n;) {
    const std::size_t end = std::min(n, begin + grouped_block);
    const double load =
        static_cast<double>(engine.size()) / static_cast<double>(engine.size_in_tags());
    std::size_t done;
    if (indexer.chunks() == 1 || end - begin < grouped_min_per_chunk * indexer.chunks() ||
        load < grouped_min_load) {
      done = insert_in_order(engine, end - begin,
                             [&](std::size_t k) { return indexer.locate(hash_at(begin + k)); });
    } else {
      sort_block_by_chunk(indexer, begin, end, hash_at, hashes, sorted, counts);
      done = insert_block_grouped(engine, hashes, sorted, counts, inserted);
    }
    if (done != end - begin) return begin + done;
    begin = end;
  }
  return n;
}

using scratch_allocator = table_allocator<std::uint64_t>;
struct scratch_deleter {
  void operator()(std::uint64_t* p) const noexcept { scratch_allocator().deallocate(p, 0); }
};

/// Inserts `count` hashes of one chunk with insert_direct (the caller owns the chunk).
template <class Engine>
void fill_chunk(Engine& engine, const std::uint64_t* hashes, std::size_t count, bool skip_present,
                bulk_result& r) {
  const auto& indexer = engine.indexer();
  for (std::size_t i = 0; i < count; ++i) {
    if (i + batch_window < count)
      engine.prefetch_for_write(indexer.locate(hashes[i + batch_window]));
    const position p = indexer.locate(hashes[i]);
    if (skip_present && engine.contains_direct(p)) {
      ++r.duplicates;
    } else if (engine.insert_direct(p, p.tag)) {
      ++r.inserted;
    } else {
      ++r.refused;
    }
  }
}

/// Items per round of a bulk build: the scratch for one round is 8 bytes per item.
inline constexpr std::size_t bulk_round = std::size_t{1} << 24;

/// Runs body(t) for t in [0, threads) on `threads` threads (this one included).
template <class Body>
void run_parallel(std::size_t threads, Body&& body) {
  std::vector<std::jthread> pool;
  for (std::size_t t = 1; t < threads; ++t)
    pool.emplace_back([&body, t] { body(t); });
  body(0);
}

/// Fills a table the caller has to itself with items [0, n) using `threads` threads (see the top
/// of this file), in rounds of `bulk_round` items. With `skip_present`, an item the table already
/// answers yes for is skipped (a repeat, or a false positive, which answers yes anyway). The
/// engine's size is updated.
template <class Engine, class HashAt>
bulk_result bulk_insert(Engine& engine, std::size_t n, HashAt&& hash_at, unsigned threads,
                        bool skip_present) {
  const auto& indexer = engine.indexer();
  const std::size_t m = indexer.chunks();
  const std::size_t t_count = std::max<std::size_t>(
      1, std::min<std::size_t>({threads, m, (std::min(n, bulk_round) + 4095) / 4096}));
  const std::size_t chunk_lines = engine.size_in_bytes() / m / cache_line_size;
  // Not zeroed, and in huge pages: first touched by the threads that fill it.
  std::unique_ptr<std::uint64_t[], scratch_deleter> sorted(
      scratch_allocator().allocate(std::min(n, bulk_round)));
  std::vector<std::size_t> counts(t_count * m), chunk_start(m + 1);
  std::vector<bulk_result> results(t_count);
  for (std::size_t begin = 0; begin < n; begin += bulk_round) {
    const std::size_t size = std::min(bulk_round, n - begin);
    auto slice = [&](std::size_t t) {
      return std::pair{begin + size * t / t_count, begin + size * (t + 1) / t_count};
    };
    std::fill(counts.begin(), counts.end(), 0);
    run_parallel(t_count, [&](std::size_t t) {
      std::size_t* c = &counts[t * m];
      for (auto [b, e] = slice(t); b < e; ++b)
        ++c[indexer.chunk_of_hash(hash_at(b))];
    });
    // Chunk c's items are those of thread 0, then thread 1, ...: exclusive prefix sums.
    std::size_t running = 0;
    for (std::size_t c = 0; c < m; ++c) {
      chunk_start[c] = running;
      for (std::size_t t = 0; t < t_count; ++t)
        running += std::exchange(counts[t * m + c], running);
    }
    chunk_start[m] = running;
    run_parallel(t_count, [&](std::size_t t) {
      std::size_t* c = &counts[t * m];
      for (auto [b, e] = slice(t); b < e; ++b) {
        const std::uint64_t h = hash_at(b);
        sorted[c[indexer.chunk_of_hash(h)]++] = h;
      }
    });
    // Even chunks, then odd ones: a thread filling chunk c may read the first word of chunk
    // c + 1 (a bucket that ends on the chunk boundary is loaded with the word after it), which
    // must not be written meanwhile.
    for (std::size_t parity = 0; parity < 2; ++parity) {
      std::atomic<std::size_t> next{0};
      run_parallel(t_count, [&](std::size_t t) {
        bulk_result& r = results[t];
        for (std::size_t c; (c = 2 * next.fetch_add(1, std::memory_order_relaxed) + parity) < m;) {
          const std::size_t b = chunk_start[c], e = chunk_start[c + 1];
          if ((e - b) * warm_lines_per_item >= chunk_lines) engine.warm_chunk(c);
          fill_chunk(engine, sorted.get() + b, e - b, skip_present, r);
        }
      });
    }
  }
  bulk_result total;
  for (const bulk_result& r : results) {
    total.inserted += r.inserted;
    total.duplicates += r.duplicates;
    total.refused += r.refused;
  }
  engine.add_to_size(static_cast<std::ptrdiff_t>(total.inserted));
  return total;
}

}  // namespace ccf::detail
