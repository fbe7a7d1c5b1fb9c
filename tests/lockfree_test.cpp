// The lock-free filter's bucket words and engine: the cuckoo engine over versioned tag words with
// the K-CAS protocol (detail/versioned_tag_layout.hpp, kcas_protocol.hpp, cuckoo_engine.hpp). The
// bucket word (tags, version counter, seal bit), next(), the supported layouts, the table's words,
// placement and version counters (every change advances one, a hop two, wrap-around), hops,
// lookups that take no K-CAS slot, clear() concurrent with writers, canonical saves.
// lockfree_filter_test.cpp tests ccf::lockfree_cuckoo_filter as a whole; contract_test.cpp and
// stress_concurrent_test.cpp also run over it.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <latch>
#include <memory>
#include <random>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "ccf/allocator.hpp"
#include "ccf/config.hpp"
#include "ccf/detail/bucket_table.hpp"
#include "ccf/detail/cuckoo_engine.hpp"
#include "ccf/detail/kcas.hpp"
#include "ccf/detail/kcas_protocol.hpp"
#include "ccf/detail/versioned_tag_layout.hpp"
#include "filter_types.hpp"
#include "lockfree_support.hpp"
#include "run_threads.hpp"

namespace ccf_test {
namespace {

namespace cd = ccf::detail;

using layout12 = cd::versioned_tag_layout<12, 4>;
using layout8 = cd::versioned_tag_layout<8, 4>;
using engine12 = cd::cuckoo_engine<layout12, cd::kcas_protocol>;
using tag_t = engine12::tag_type;
using lf = ccf::lockfree_cuckoo_filter<u64>;

/// Buckets of one chunk: the engine tests use the classical (global) alternate function.
constexpr std::size_t global_chunk = ccf::global_alternate::max_chunk_buckets(4);

engine12 make_engine(std::size_t capacity) {
  return engine12(capacity, global_chunk, engine12::default_max_kicks);
}

cd::position position_of(const engine12& core, u64 key) {
  return core.indexer().locate(ccf::hash<u64>{}(key, ccf::default_seed));
}

/// A position {start, alt(start, tag), tag} with two distinct buckets.
cd::position pair_for(const engine12& core, std::size_t start, tag_t first_tag = 1) {
  for (tag_t t = first_tag;; ++t) {
    const std::size_t i2 = core.indexer().alt(start, t);
    if (i2 != start) return {start, i2, t};
  }
}

std::uint64_t counter_sum(const engine12& core) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < core.num_buckets(); ++i)
    sum += layout12::counter(core.table().load(i));
  return sum;
}

std::size_t stored_tags(const engine12& core) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < core.num_buckets(); ++i)
    n += 4 - layout12::free_count(core.table().load(i));
  return n;
}

// ---------------------------------------------------------------------------------------------
// Word layout

TEST(versioned_word, default_layout_is_four_12_bit_tags_a_13_bit_counter_and_a_seal) {
  static_assert(layout12::counter_shift == 48 && layout12::counter_bits == 13);
  static_assert(layout12::tag_mask == 0xffffffffffffULL);
  static_assert(layout12::counter_mask == 0x1fffULL << 48);
  static_assert(layout12::seal_bit == std::uint64_t{1} << 61);
  static_assert((layout12::tag_mask | layout12::counter_mask | layout12::seal_bit) ==
                cd::kcas_value_mask);
  static_assert(layout8::counter_shift == 32 && layout8::counter_bits == 29);
  static_assert(layout8::counter_mask == 0x1fffffffULL << 32);
  static_assert(lf::counter_bits == 13);
  static_assert(lf::fingerprint_bits == 12 && lf::slots_per_bucket == 4);
  static_assert(ccf::lockfree_cuckoo_filter<u64, 8, 4>::counter_bits == 29);

  const std::uint64_t w = layout12::make({0xabc, 0x001, 0xfff, 0x000}, 0x1234);
  EXPECT_EQ(w, 0x1234ULL << 48 | 0x000fff001abcULL);
  EXPECT_EQ(w & ~cd::kcas_value_mask, 0u);
  EXPECT_FALSE(layout12::sealed(w));
  for (unsigned j = 0; j < 4; ++j)
    EXPECT_EQ(layout12::get(w, j), (std::array<tag_t, 4>{0xabc, 0x001, 0xfff, 0})[j]);
  EXPECT_EQ(layout12::counter(w), 0x1234u);
  EXPECT_EQ(layout12::free_count(w), 1u);
  EXPECT_EQ(layout12::free(w), cd::slot_mask(0b1000));
  EXPECT_EQ(layout12::match(w, 0xfff), cd::slot_mask(0b0100));
  EXPECT_FALSE(layout12::match(w, 0x123).any());
  EXPECT_TRUE(layout12::has(w, 0x001));
  EXPECT_EQ(layout12::make({1, 2, 3, 4}, 0x2000), layout12::make({1, 2, 3, 4}, 0))
      << "the counter is taken mod 2^13";
  // Counter and seal bits never look like tags: an empty tag area, a full counter, the seal.
  const std::uint64_t c = layout12::make({0, 0, 0, 0}, 0x1fff) | layout12::seal_bit;
  EXPECT_TRUE(layout12::sealed(c));
  EXPECT_EQ(layout12::free_count(c), 4u);
  EXPECT_EQ(layout12::free(c), cd::slot_mask(0b1111));
  EXPECT_FALSE(layout12::has(c, 0xfff));
  EXPECT_FALSE(layout12::has(c, 0x1));
  EXPECT_EQ(layout12::count(layout12::make({7, 7, 5, 7}, 3), 7), 3u);
  std::uint64_t s = w;
  layout12::set(s, 3, 0x555);
  EXPECT_EQ(s, layout12::make({0xabc, 0x001, 0xfff, 0x555}, 0x1234));
  layout12::vacate(s, 0);
  EXPECT_EQ(s, layout12::make({0, 0x001, 0xfff, 0x555}, 0x1234));
}

/// match/has/count/free/get of random words (random counters and seals) against the slots.
template <unsigned Bits, unsigned Slots>
void check_versioned_queries() {
  using L = cd::versioned_tag_layout<Bits, Slots>;
  std::mt19937_64 rng(Bits * 16 + Slots);
  for (int iter = 0; iter < 5000; ++iter) {
    std::array<tag_t, Slots> tags{};
    const auto tag = static_cast<tag_t>(rng() & L::max_tag);
    for (auto& t : tags) {
      const unsigned r = rng() % 3;
      t = r == 0 ? 0 : (r == 1 ? tag : static_cast<tag_t>(rng() & L::max_tag));
    }
    std::uint64_t b = L::make(tags, rng());
    if (rng() % 2 != 0) b |= L::seal_bit;
    std::uint32_t match = 0, free = 0;
    for (unsigned j = 0; j < Slots; ++j) {
      ASSERT_EQ(L::get(b, j), tags[j]);
      match |= static_cast<std::uint32_t>(tags[j] == tag) << j;
      free |= static_cast<std::uint32_t>(tags[j] == 0) << j;
    }
    ASSERT_EQ(L::match(b, tag), cd::slot_mask(match)) << Bits << "x" << Slots;
    ASSERT_EQ(L::has(b, tag), match != 0);
    ASSERT_EQ(L::count(b, tag), static_cast<unsigned>(std::popcount(match)));
    ASSERT_EQ(L::free(b), cd::slot_mask(free));
    ASSERT_EQ(L::free_count(b), static_cast<unsigned>(std::popcount(free)));
    ASSERT_EQ(b & ~cd::kcas_value_mask, 0u);
  }
}

TEST(versioned_word, queries_match_a_slot_by_slot_reference_whatever_the_counter_and_seal) {
  check_versioned_queries<12, 4>();
  check_versioned_queries<8, 4>();
  check_versioned_queries<16, 2>();
  check_versioned_queries<16, 3>();
  check_versioned_queries<6, 8>();
  check_versioned_queries<4, 2>();
}

TEST(versioned_word, next_advances_only_the_counter_wraps_and_keeps_the_seal) {
  const std::uint64_t full = layout12::make({0xfff, 0xfff, 0xfff, 0xfff}, 0);
  for (std::uint64_t c : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{8190}}) {
    const std::uint64_t w = layout12::make({0xfff, 0x123, 0, 0xfff}, c);
    const std::uint64_t n = layout12::next(w, w);
    EXPECT_EQ(layout12::counter(n), c + 1);
    EXPECT_EQ(n & layout12::tag_mask, w & layout12::tag_mask);
    EXPECT_FALSE(layout12::sealed(n));
    // The tags come from `now`, the counter from `old`.
    const std::uint64_t m = layout12::next(w, full | layout12::make({}, 77));
    EXPECT_EQ(m & layout12::tag_mask, full & layout12::tag_mask);
    EXPECT_EQ(layout12::counter(m), c + 1);
  }
  const std::uint64_t top = layout12::make({0xfff, 0xfff, 0xfff, 0xfff}, 8191);
  const std::uint64_t wrapped = layout12::next(top, top);
  EXPECT_EQ(layout12::counter(wrapped), 0u);
  EXPECT_EQ(wrapped, layout12::tag_mask);
  EXPECT_FALSE(layout12::sealed(wrapped)) << "the carry must not reach the seal";
  // The seal of `old` is kept, that of `now` ignored; the carry never reaches bits 62-63.
  const std::uint64_t sealed_top = top | layout12::seal_bit;
  EXPECT_EQ(sealed_top, cd::kcas_value_mask) << "every value bit set: the largest word";
  const std::uint64_t sw = layout12::next(sealed_top, top);
  EXPECT_TRUE(layout12::sealed(sw));
  EXPECT_EQ(layout12::counter(sw), 0u);
  EXPECT_EQ(sw & ~cd::kcas_value_mask, 0u);
  EXPECT_FALSE(layout12::sealed(layout12::next(top, sealed_top)));
  const std::uint64_t top8 = layout8::make({1, 2, 3, 4}, (1u << 29) - 1);
  EXPECT_EQ(layout8::counter(layout8::next(top8, top8)), 0u);
  EXPECT_EQ(layout8::next(top8, top8) & layout8::tag_mask, top8 & layout8::tag_mask);
  EXPECT_EQ(layout8::counter(layout8::next(layout8::make({}, 5), top8)), 6u);
}

TEST(versioned_word, unsupported_layouts_are_rejected) {
  static_assert(cd::versioned_layout_supported(12, 4));
  static_assert(cd::versioned_layout_supported(8, 4));
  static_assert(cd::versioned_layout_supported(16, 2));
  static_assert(cd::versioned_layout_supported(6, 8));
  static_assert(cd::versioned_layout_supported(16, 3));
  static_assert(cd::versioned_layout_supported(4, 2));
  static_assert(!cd::versioned_layout_supported(16, 4), "64 bits of tags leave no counter");
  static_assert(!cd::versioned_layout_supported(12, 8));
  static_assert(!cd::versioned_layout_supported(13, 4), "52 bits: a counter under 13 bits");
  static_assert(!cd::versioned_layout_supported(7, 8), "56 bits of tags");
  static_assert(!cd::versioned_layout_supported(12, 1));
  static_assert(!cd::versioned_layout_supported(4, 9));
  static_assert(!cd::versioned_layout_supported(3, 8));
  static_assert(!cd::versioned_layout_supported(17, 2));
  // Every supported layout keeps a counter of at least 13 bits.
  for (unsigned bits = 1; bits <= 20; ++bits) {
    for (unsigned slots = 1; slots <= 10; ++slots)
      EXPECT_TRUE(!cd::versioned_layout_supported(bits, slots) || bits * slots <= 61 - 13);
  }
}

template <class Alloc>
void check_table_words(std::size_t n) {
  cd::bucket_table<layout12, cd::kcas_words, Alloc> t(n, Alloc());
  EXPECT_EQ(t.num_buckets(), n);
  EXPECT_EQ(t.size_in_bytes(), n * 8);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(&t.word(0)) % ccf::cache_line_size, 0u);
  for (std::size_t i = 0; i < n; i += 1 + n / 64)
    EXPECT_EQ(t.load(i), 0u);
  EXPECT_EQ(t.load(n - 1), 0u);
}

TEST(versioned_table, words_are_zeroed_cache_line_aligned_and_sized) {
  for (std::size_t n : {std::size_t{1}, std::size_t{9}, std::size_t{1000}, std::size_t{1} << 21}) {
    check_table_words<ccf::table_allocator<cd::kcas_word>>(n);
    check_table_words<std::allocator<cd::kcas_word>>(n);  // aligned whatever the allocator
  }
  const engine12 core = make_engine(1000);
  EXPECT_EQ(core.size_in_bytes(), core.num_buckets() * 8);
  EXPECT_EQ(core.table().words().size(), core.num_buckets());
}

// ---------------------------------------------------------------------------------------------
// Placement, versions, hops

TEST(lockfree_engine, insert_takes_the_emptier_bucket_and_every_change_advances_its_counter) {
  engine12 core = make_engine(1000);
  const auto p = pair_for(core, 10);
  tag_t old = 0;
  ASSERT_TRUE(core.insert_tag_to_bucket(p.i1, p.tag == 1 ? 2 : 1, false, old));
  EXPECT_EQ(layout12::counter(core.table().load(p.i1)), 1u);
  ASSERT_TRUE(core.insert(p));  // i1 has 3 free slots, i2 has 4
  EXPECT_TRUE(layout12::has(core.table().load(p.i2), p.tag));
  EXPECT_FALSE(layout12::has(core.table().load(p.i1), p.tag));
  EXPECT_EQ(layout12::counter(core.table().load(p.i2)), 1u);
  ASSERT_TRUE(core.insert(p));  // now 3 and 3: ties go to i1
  EXPECT_TRUE(layout12::has(core.table().load(p.i1), p.tag));
  EXPECT_EQ(layout12::counter(core.table().load(p.i1)), 2u);
  EXPECT_EQ(core.count(p), 2u);
  ASSERT_TRUE(core.erase(p));  // one copy, from i1 first
  EXPECT_FALSE(layout12::has(core.table().load(p.i1), p.tag));
  EXPECT_EQ(layout12::counter(core.table().load(p.i1)), 3u);
  EXPECT_EQ(layout12::counter(core.table().load(p.i2)), 1u);
  EXPECT_TRUE(core.contains(p));
  EXPECT_EQ(core.size(), 2u);
  // Lookups and refused changes change nothing.
  const std::uint64_t w1 = core.table().load(p.i1), w2 = core.table().load(p.i2);
  const cd::position absent{p.i1, p.i2, p.tag + 1000};
  for (int i = 0; i < 100; ++i) {
    EXPECT_TRUE(core.contains(p));
    EXPECT_EQ(core.count(p), 1u);
    EXPECT_FALSE(core.erase(absent));
  }
  EXPECT_EQ(core.table().load(p.i1), w1);
  EXPECT_EQ(core.table().load(p.i2), w2);
}

TEST(lockfree_engine, a_hop_moves_the_tag_and_advances_both_counters) {
  engine12 core = make_engine(1000);
  const auto p = pair_for(core, 20);
  // Fill both buckets of p with other tags (write_tag), then insert p: it needs a hop.
  tag_t t = 100;
  std::vector<cd::position> fillers;
  for (std::size_t b : {p.i1, p.i2}) {
    for (unsigned s = 0; s < 4; ++s, ++t) {
      if (t == p.tag) ++t;
      core.write_tag(b, s, t);
      fillers.push_back({b, core.indexer().alt(b, t), t});
    }
  }
  const std::uint64_t before = counter_sum(core);
  EXPECT_EQ(before, 8u);
  EXPECT_EQ(core.size(), 8u);
  EXPECT_EQ(core.relocations(), 0u);
  ASSERT_TRUE(core.insert(p));
  const std::size_t hops = core.relocations();
  EXPECT_GE(hops, 1u);
  // Every hop advanced two counters; the insert rode on the last hop (it took the slot that hop
  // freed, in the same K-CAS), so it advanced none of its own.
  EXPECT_EQ(counter_sum(core), before + 2 * hops);
  EXPECT_TRUE(core.contains(p));
  std::size_t moved = 0;
  for (const auto& f : fillers) {
    EXPECT_TRUE(core.contains(f)) << "a relocated tag was lost";
    EXPECT_EQ(core.count(f), 1u);
    moved += !layout12::has(core.table().load(f.i1), f.tag) &&
             layout12::has(core.table().load(f.i2), f.tag);
  }
  EXPECT_GE(moved, 1u) << "no filler sits in its alternate bucket";
  EXPECT_EQ(core.size(), 9u);
  EXPECT_EQ(stored_tags(core), 9u);
}

TEST(lockfree_engine, counters_count_every_change_over_a_random_workload) {
  engine12 core = make_engine(3000);
  std::mt19937_64 rng(5);
  const std::vector<u64> keys = make_keys(6000, 3);
  std::vector<int> live(keys.size(), 0);
  std::uint64_t changes = 0, searched = 0;
  for (int op = 0; op < 30000; ++op) {
    const std::size_t k = rng() % keys.size();
    const auto p = position_of(core, keys[k]);
    if (rng() % 3 != 0) {
      // With both buckets full the insert needs a path, and its last hop takes the new tag in
      // the same K-CAS: no change of its own (one thread: no hop of the path can fail).
      const bool full = layout12::free_count(core.table().load(p.i1)) == 0 &&
                        layout12::free_count(core.table().load(p.i2)) == 0;
      if (core.insert(p)) {
        ++live[k];
        if (full) {
          ++searched;
        } else {
          ++changes;
        }
      }
    } else if (live[k] > 0) {  // erase only what was inserted
      ASSERT_TRUE(core.erase(p));
      ++changes;
      --live[k];
    }
  }
  EXPECT_GT(core.relocations(), 100u) << "the workload should run near full load";
  EXPECT_GT(searched, 50u);
  // Counters have not wrapped (few changes per bucket): their sum counts every change.
  EXPECT_EQ(counter_sum(core), changes + 2 * core.relocations());
  EXPECT_EQ(core.size(), stored_tags(core));
  for (std::size_t k = 0; k < keys.size(); ++k) {
    if (live[k] > 0) {
      ASSERT_GE(core.count(position_of(core, keys[k])), static_cast<std::size_t>(live[k]));
    }
  }
}

TEST(lockfree_engine, counter_wrap_around_keeps_every_operation_working) {
  engine12 core = make_engine(1000);
  const auto p = pair_for(core, 30);
  const tag_t other = p.tag == 9 ? 10 : 9;
  tag_t old = 0;
  // A stable tag in i2 makes i1 the emptier bucket: every insert and erase of p hits i1.
  ASSERT_TRUE(core.insert_tag_to_bucket(p.i2, other, false, old));
  const cd::position stable{p.i2, p.i2, other};
  constexpr int rounds = 20000;  // 40,000 changes of i1: four wraps of a 13-bit counter
  for (int r = 0; r < rounds; ++r) {
    ASSERT_TRUE(core.insert(p)) << r;
    ASSERT_EQ(core.count(p), 1u);
    ASSERT_TRUE(core.erase(p)) << r;
    ASSERT_FALSE(core.contains(p));
    ASSERT_TRUE(core.contains(stable));
  }
  EXPECT_EQ(layout12::counter(core.table().load(p.i1)), (2u * rounds) % 8192u);
  EXPECT_EQ(layout12::counter(core.table().load(p.i2)), 1u);
  EXPECT_EQ(core.size(), 1u);
}

TEST(lockfree_engine, readers_keep_finding_a_tag_while_its_bucket_counter_wraps) {
  engine12 core = make_engine(1000);
  const auto p = pair_for(core, 40);
  const cd::position stable{p.i1, p.i2, p.tag == 9 ? 10u : 9u};
  ASSERT_TRUE(core.insert(stable));
  const cd::position churn{p.i1, p.i2, p.tag};
  const int rounds = scaled(100000, 10000);  // >= 20,000 changes: the counter wraps
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> misses{0};
  std::array<std::atomic<std::size_t>, 2> lookups{};
  std::atomic<int> wraps_seen{0};
  run_threads(3, [&](int t) {
    if (t == 0) {
      // Churn only while both readers run: wait for them, and go on until each has looked up a
      // while (on two cores one of the three threads may wait for a time slice).
      while (lookups[0].load() == 0 || lookups[1].load() == 0)
        std::this_thread::yield();
      for (int r = 0; r < rounds || lookups[0].load() < 1000 || lookups[1].load() < 1000; ++r) {
        if (!core.insert(churn) || !core.erase(churn)) misses.fetch_add(1000000);
        if (layout12::counter(core.table().load(p.i2)) == 0) wraps_seen.fetch_add(1);
      }
      stop = true;
      return;
    }
    while (!stop.load(std::memory_order_relaxed)) {
      if (!core.contains(stable)) misses.fetch_add(1);
      if (core.count(stable) != 1) misses.fetch_add(1);
      lookups[t - 1].fetch_add(1, std::memory_order_relaxed);
    }
  });
  EXPECT_EQ(misses.load(), 0u);
  EXPECT_GE(lookups[0].load() + lookups[1].load(), 2000u);
  EXPECT_GE(wraps_seen.load(), 1) << "the churned bucket's counter never wrapped";
  EXPECT_EQ(core.size(), 1u);
  EXPECT_EQ(core.count(stable), 1u);
  EXPECT_EQ(core.relocations(), 0u);
}

TEST(lockfree_engine, lookups_take_no_kcas_slot_and_hops_take_one) {
  engine12 core = make_engine(2000);
  for (u64 k : make_keys(1000, 12))
    ASSERT_TRUE(core.insert(position_of(core, k)));
  std::size_t before = 0, after_lookups = 0, after_hops = 0, hops = 0;
  std::thread t([&] {
    before = cd::kcas_threads_in_use();
    for (u64 k : make_keys(20000, 13)) {
      const auto p = position_of(core, k);
      (void)core.contains(p);
      (void)core.count(p);
    }
    after_lookups = cd::kcas_threads_in_use();
    for (u64 k : make_keys(3000, 14)) {
      if (!core.insert(position_of(core, k))) break;
    }
    hops = core.relocations();
    after_hops = cd::kcas_threads_in_use();
  });
  t.join();
  EXPECT_EQ(after_lookups, before) << "a lookup registered for K-CAS: it must only read";
  ASSERT_GT(hops, 0u);
  EXPECT_EQ(after_hops, before + 1);
  EXPECT_EQ(cd::kcas_threads_in_use(), before) << "the thread's slot is released at its exit";
}

// clear() while writers insert and erase: whatever survives the clear, size() counts exactly the
// tags in the table once every thread is done ("size() is exact whenever no operation is in
// flight"). More writers than cores, so that writers are often preempted mid-operation.
TEST(lockfree_engine, clear_concurrent_with_inserts_and_erases_keeps_the_count_exact) {
  constexpr int writers = 6;
  const int rounds = scaled(20, 10);
  for (int round = 0; round < rounds; ++round) {
    engine12 core = make_engine(20000);
    std::vector<std::vector<cd::position>> pools(writers);
    for (int t = 0; t < writers; ++t) {
      for (u64 k : make_keys(2500, 1000 + round * writers + t))
        pools[t].push_back(position_of(core, k));
    }
    std::atomic<std::size_t> ops{0};
    std::atomic<bool> stop{false};
    run_threads(writers + 1, [&](int t) {
      if (t == writers) {
        while (ops.load() < 20000)
          std::this_thread::yield();
        core.clear();
        stop = true;
        return;
      }
      std::mt19937_64 rng(round * 100 + t);
      std::vector<char> present(pools[t].size(), 0);
      while (!stop.load(std::memory_order_relaxed)) {
        const std::size_t k = rng() % pools[t].size();
        if (present[k]) {
          (void)core.erase(pools[t][k]);  // fails when the clear took it
          present[k] = 0;
        } else {
          present[k] = core.insert(pools[t][k]);
        }
        ops.fetch_add(1, std::memory_order_relaxed);
      }
    });
    // Whatever survived the clear, the item count matches the tags in the table.
    ASSERT_EQ(core.size(), stored_tags(core)) << "round " << round;
    for (std::size_t i = 0; i < core.num_buckets(); ++i)
      ASSERT_FALSE(layout12::sealed(core.table().load(i))) << "seal left on bucket " << i;
    core.clear();
    EXPECT_EQ(core.size(), 0u);
    EXPECT_EQ(stored_tags(core), 0u);
  }
}

TEST(lockfree_engine, save_canonical_packs_the_tags_and_changes_no_word) {
  engine12 core = make_engine(500);
  for (u64 k : make_keys(400, 15))
    ASSERT_TRUE(core.insert(position_of(core, k)));
  std::vector<std::uint64_t> before;
  for (std::size_t i = 0; i < core.num_buckets(); ++i)
    before.push_back(core.table().load(i));
  std::vector<std::uint64_t> words;
  auto sink = [&](std::uint64_t w) { words.push_back(w); };
  EXPECT_EQ(core.save_canonical(sink), 400u);
  ASSERT_EQ(words.size(), (cd::packed_tag_layout<12, 4>::words_for(core.num_buckets())));
  for (std::size_t i = 0; i < core.num_buckets(); ++i) {
    ASSERT_EQ(core.table().load(i), before[i]) << "save must lift the seal and keep counters";
    for (unsigned j = 0; j < 4; ++j) {
      const std::size_t bit = (i * 4 + j) * 12;
      const u64 lo = words[bit / 64] >> (bit % 64);
      const u64 hi = bit % 64 > 52 ? words[bit / 64 + 1] << (64 - bit % 64) : 0;
      ASSERT_EQ((lo | hi) & 0xfff, layout12::get(before[i], j)) << i << "," << j;
    }
  }
  // Loading the words back gives the same tags, counters 0.
  engine12 copy(core.indexer(), core.capacity(), core.max_kicks());
  std::size_t next = 0;
  auto source = [&] { return words[next++]; };
  EXPECT_EQ(copy.load_canonical(source), 400u);
  EXPECT_EQ(copy.size(), 400u);
  for (std::size_t i = 0; i < core.num_buckets(); ++i)
    ASSERT_EQ(copy.table().load(i), before[i] & layout12::tag_mask);
  // A sink that throws half way (a failing stream): the seal is lifted all the same.
  std::size_t taken = 0;
  auto failing = [&](std::uint64_t) {
    if (++taken == words.size() / 2) throw std::runtime_error("disk full");
  };
  EXPECT_THROW(core.save_canonical(failing), std::runtime_error);
  for (std::size_t i = 0; i < core.num_buckets(); ++i)
    ASSERT_EQ(core.table().load(i), before[i]) << "seal left on bucket " << i;
  EXPECT_TRUE(core.insert(position_of(core, key_of(1, 16)))) << "writers must not wait";
}

}  // namespace
}  // namespace ccf_test
