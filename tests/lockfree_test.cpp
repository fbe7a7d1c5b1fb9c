// Tests specific to ccf's lock-free cuckoo filter (include/ccf/lockfree_cuckoo_filter.hpp,
// detail/lockfree_core.hpp, detail/lockfree_table.hpp): the bucket word layout, version counters
// (every change advances one, hops advance two, wrap-around), two-choice placement, relocation
// hops, hop-heavy workloads, lookups that never write, clear() under concurrency, the table API's
// argument checks, and the supported layouts. The typed contract and stress tests
// (contract_test.cpp, stress_concurrent_test.cpp) also run over the lock-free filter.
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <latch>
#include <random>
#include <span>
#include <stdexcept>
#include <thread>
#include <vector>

#include "ccf/config.hpp"
#include "ccf/detail/kcas.hpp"
#include "filter_types.hpp"

namespace ccf_test {
namespace {

namespace cd = ccf::detail;

using core12 = cd::lockfree_core<12, 4>;
using format12 = cd::lockfree_word_format<12, 4>;
using format8 = cd::lockfree_word_format<8, 4>;

#if CCF_TSAN
constexpr int tsan_divisor = 10;
#else
constexpr int tsan_divisor = 1;
#endif

/// A position {i1, alt(i1, tag), tag} with two distinct buckets, searched from a starting bucket.
template <class Core>
typename Core::position pair_for(const Core& core, std::size_t start,
                                 typename Core::tag_type first_tag = 1) {
  for (typename Core::tag_type t = first_tag;; ++t) {
    const std::size_t i2 = core.indexer().alt_index(start, t);
    if (i2 != start) return {start, i2, t};
  }
}

template <class Core>
std::uint64_t counter_sum(const Core& core) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < core.table().num_buckets(); ++i)
    sum += Core::format::counter(core.table().load(i));
  return sum;
}

template <class Core>
std::size_t stored_tags(const Core& core) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < core.table().num_buckets(); ++i)
    n += Core::format::lanes::lanes - Core::format::free_slots(core.table().load(i));
  return n;
}

// ---------------------------------------------------------------------------------------------
// Word format and layouts

TEST(lockfree_word, default_layout_is_four_12_bit_tags_and_a_14_bit_counter) {
  static_assert(format12::tag_bits == 48 && format12::counter_bits == 14);
  static_assert(format12::tag_mask == 0xffffffffffffULL);
  static_assert(format12::counter_mask == 0x3fffULL << 48);
  static_assert(format8::counter_bits == 30);
  static_assert(ccf::lockfree_cuckoo_filter<u64>::counter_bits == 14);
  static_assert(ccf::lockfree_cuckoo_filter<u64>::fingerprint_bits == 12);
  static_assert(ccf::lockfree_cuckoo_filter<u64>::slots_per_bucket == 4);
  static_assert(ccf::lockfree_cuckoo_filter<u64, 8, 4>::counter_bits == 30);

  const std::uint64_t w = format12::make({0xabc, 0x001, 0xfff, 0x000}, 0x1234);
  EXPECT_EQ(w, 0x1234ULL << 48 | 0x000fff001abcULL);
  EXPECT_EQ(w & ~cd::kcas_value_mask, 0u);
  EXPECT_EQ(format12::tag_at(w, 0), 0xabcu);
  EXPECT_EQ(format12::tag_at(w, 1), 0x001u);
  EXPECT_EQ(format12::tag_at(w, 2), 0xfffu);
  EXPECT_EQ(format12::tag_at(w, 3), 0u);
  EXPECT_EQ(format12::counter(w), 0x1234u);
  EXPECT_EQ(format12::free_slots(w), 1u);
  EXPECT_EQ(format12::free_slot(w), 3);
  EXPECT_EQ(format12::find(w, 0xfff), 2);
  EXPECT_EQ(format12::find(w, 0x123), -1);
  EXPECT_TRUE(format12::has(w, 0x001));
  // Counter bits never look like tags: a word with an empty tag area and a full counter.
  const std::uint64_t c = format12::with_counter(0, format12::counter_modulus - 1);
  EXPECT_EQ(format12::free_slots(c), 4u);
  EXPECT_FALSE(format12::has(c, 0xfff));
  EXPECT_EQ(format12::count(format12::make({7, 7, 5, 7}, 3), 7), 3u);
  EXPECT_EQ(format12::set_tag(w, 3, 0x555), format12::make({0xabc, 0x001, 0xfff, 0x555}, 0x1234));
}

TEST(lockfree_word, bump_advances_only_the_counter_and_wraps) {
  for (std::uint64_t c : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{16382}}) {
    const std::uint64_t w = format12::make({0xfff, 0xfff, 0xfff, 0xfff}, c);
    const std::uint64_t b = format12::bump(w);
    EXPECT_EQ(format12::counter(b), c + 1);
    EXPECT_EQ(b & format12::tag_mask, w & format12::tag_mask);
  }
  const std::uint64_t top = format12::make({0xfff, 0xfff, 0xfff, 0xfff}, 16383);
  EXPECT_EQ(top, cd::kcas_value_mask);  // every value bit set: the largest possible word
  const std::uint64_t wrapped = format12::bump(top);
  EXPECT_EQ(format12::counter(wrapped), 0u);
  EXPECT_EQ(wrapped, format12::tag_mask);
  EXPECT_EQ(wrapped & ~cd::kcas_value_mask, 0u) << "the carry must not reach the reserved bits";
  const std::uint64_t top8 = format8::with_counter(format8::make({1, 2, 3, 4}, 0), (1u << 30) - 1);
  EXPECT_EQ(format8::counter(format8::bump(top8)), 0u);
  EXPECT_EQ(format8::bump(top8) & format8::tag_mask, top8 & format8::tag_mask);
}

TEST(lockfree_word, unsupported_layouts_are_rejected) {
  static_assert(cd::lockfree_layout_supported(12, 4));
  static_assert(cd::lockfree_layout_supported(8, 4));
  static_assert(cd::lockfree_layout_supported(16, 2));
  static_assert(cd::lockfree_layout_supported(6, 8));
  static_assert(cd::lockfree_layout_supported(16, 3));
  static_assert(!cd::lockfree_layout_supported(16, 4), "64 bits of tags leave no counter");
  static_assert(!cd::lockfree_layout_supported(12, 8));
  static_assert(!cd::lockfree_layout_supported(13, 4), "52 bits: a counter under 14 bits");
  static_assert(!cd::lockfree_layout_supported(12, 1));
  static_assert(!cd::lockfree_layout_supported(3, 8));
  static_assert(!cd::lockfree_layout_supported(17, 2));
  SUCCEED();
}

TEST(lockfree_table, words_are_zeroed_cache_line_aligned_and_sized) {
  for (std::size_t n : {1u, 9u, 1000u, 1u << 21}) {
    cd::lockfree_table<12, 4> t(n);
    EXPECT_EQ(t.num_buckets(), n);
    EXPECT_EQ(t.size_in_bytes(), n * 8);
    EXPECT_EQ(t.size_in_tags(), n * 4);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(&t.word(0)) % ccf::cache_line_size, 0u);
    for (std::size_t i = 0; i < n; i += 1 + n / 64)
      EXPECT_EQ(t.load(i), 0u);
    EXPECT_EQ(t.load(n - 1), 0u);
    EXPECT_NE(t.info().find("14-bit version counters"), std::string::npos) << t.info();
  }
}

// ---------------------------------------------------------------------------------------------
// Placement, versions, hops

TEST(lockfree_core, insert_takes_the_emptier_bucket_and_every_change_advances_its_counter) {
  core12 core(1000, core12::default_max_kicks);
  const auto p = pair_for(core, 10);
  typename core12::tag_type old = 0;
  ASSERT_TRUE(core.insert_tag_to_bucket(p.i1, p.tag == 1 ? 2 : 1, false, old));
  EXPECT_EQ(format12::counter(core.table().load(p.i1)), 1u);
  ASSERT_TRUE(core.insert(p));  // i1 has 3 free slots, i2 has 4
  EXPECT_TRUE(format12::has(core.table().load(p.i2), p.tag));
  EXPECT_FALSE(format12::has(core.table().load(p.i1), p.tag));
  EXPECT_EQ(format12::counter(core.table().load(p.i2)), 1u);
  ASSERT_TRUE(core.insert(p));  // now 3 and 3: ties go to i1
  EXPECT_TRUE(format12::has(core.table().load(p.i1), p.tag));
  EXPECT_EQ(format12::counter(core.table().load(p.i1)), 2u);
  EXPECT_EQ(core.count(p), 2u);
  ASSERT_TRUE(core.erase(p));  // one copy, from i1 first
  EXPECT_FALSE(format12::has(core.table().load(p.i1), p.tag));
  EXPECT_EQ(format12::counter(core.table().load(p.i1)), 3u);
  EXPECT_EQ(format12::counter(core.table().load(p.i2)), 1u);
  EXPECT_TRUE(core.contains(p));
  EXPECT_EQ(core.size(), 2u);
  // Lookups change nothing.
  const std::uint64_t w1 = core.table().load(p.i1), w2 = core.table().load(p.i2);
  for (int i = 0; i < 100; ++i) {
    EXPECT_TRUE(core.contains(p));
    EXPECT_EQ(core.count(p), 1u);
  }
  EXPECT_EQ(core.table().load(p.i1), w1);
  EXPECT_EQ(core.table().load(p.i2), w2);
}

TEST(lockfree_core, a_hop_moves_the_tag_and_advances_both_counters) {
  core12 core(1000, core12::default_max_kicks);
  const auto p = pair_for(core, 20);
  // Fill both buckets with tags other than p.tag, then insert p: it needs at least one hop.
  typename core12::tag_type t = 100, old = 0;
  std::vector<typename core12::position> fillers;
  for (std::size_t b : {p.i1, p.i2}) {
    for (unsigned s = 0; s < 4; ++s, ++t) {
      if (t == p.tag) ++t;
      ASSERT_TRUE(core.insert_tag_to_bucket(b, t, false, old));
      fillers.push_back({b, core.indexer().alt_index(b, t), t});
    }
  }
  const std::uint64_t before = counter_sum(core);
  EXPECT_EQ(before, 8u);
  EXPECT_EQ(core.relocations(), 0u);
  ASSERT_TRUE(core.insert(p));
  const std::size_t hops = core.relocations();
  EXPECT_GE(hops, 1u);
  // Every hop advanced two counters, the insert one.
  EXPECT_EQ(counter_sum(core), before + 2 * hops + 1);
  EXPECT_TRUE(core.contains(p));
  for (const auto& f : fillers) {
    EXPECT_TRUE(core.contains(f)) << "a relocated tag was lost";
    EXPECT_EQ(core.count(f), 1u);
  }
  EXPECT_EQ(core.size(), 9u);
  EXPECT_EQ(stored_tags(core), 9u);
}

TEST(lockfree_core, counters_count_every_change_over_a_random_workload) {
  core12 core(3000, core12::default_max_kicks);
  std::mt19937_64 rng(5);
  std::vector<u64> keys = make_keys(6000, 3);
  std::vector<int> live(keys.size(), 0);
  std::uint64_t changes = 0;
  for (int op = 0; op < 30000; ++op) {
    const std::size_t k = rng() % keys.size();
    const auto p = core.indexer().locate(ccf::hash<u64>{}(keys[k], ccf::default_seed));
    if (rng() % 3 != 0) {
      if (core.insert(p)) {
        ++live[k];
        ++changes;
      }
    } else if (live[k] > 0) {  // erase only what was inserted
      ASSERT_TRUE(core.erase(p));
      ++changes;
      --live[k];
    }
  }
  EXPECT_GT(core.relocations(), 100u) << "the workload should run near full load";
  // Counters have not wrapped (few changes per bucket): their sum counts every change.
  EXPECT_EQ(counter_sum(core), changes + 2 * core.relocations());
  EXPECT_EQ(core.size(), stored_tags(core));
  for (std::size_t k = 0; k < keys.size(); ++k) {
    if (live[k] > 0) {
      const auto p = core.indexer().locate(ccf::hash<u64>{}(keys[k], ccf::default_seed));
      ASSERT_GE(core.count(p), static_cast<std::size_t>(live[k]));
    }
  }
}

TEST(lockfree_core, counter_wrap_around_keeps_every_operation_working) {
  core12 core(1000, core12::default_max_kicks);
  const auto p = pair_for(core, 30);
  const typename core12::tag_type other = p.tag == 9 ? 10 : 9;
  typename core12::tag_type old = 0;
  // A stable tag in i2 makes i1 the emptier bucket: every insert and erase of p hits i1.
  ASSERT_TRUE(core.insert_tag_to_bucket(p.i2, other, false, old));
  const typename core12::position stable{p.i2, p.i2, other};
  constexpr int rounds = 20000;  // 40,000 changes of i1: two wraps of a 14-bit counter
  for (int r = 0; r < rounds; ++r) {
    ASSERT_TRUE(core.insert(p)) << r;
    ASSERT_EQ(core.count(p), 1u);
    ASSERT_TRUE(core.erase(p)) << r;
    ASSERT_FALSE(core.contains(p));
    ASSERT_TRUE(core.contains(stable));
  }
  EXPECT_EQ(format12::counter(core.table().load(p.i1)), (2u * rounds) % 16384u);
  EXPECT_EQ(format12::counter(core.table().load(p.i2)), 1u);
  EXPECT_EQ(core.size(), 1u);
}

TEST(lockfree_core, readers_keep_finding_a_tag_while_its_bucket_counter_wraps) {
  core12 core(1000, core12::default_max_kicks);
  const auto p = pair_for(core, 40);
  const typename core12::position stable{p.i1, p.i2, p.tag == 9 ? 10u : 9u};
  ASSERT_TRUE(core.insert(stable));
  const typename core12::position churn{p.i1, p.i2, p.tag};
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> misses{0}, lookups{0};
  std::latch start(3);
  std::thread writer([&] {
    start.arrive_and_wait();
    for (int r = 0; r < 100000 / tsan_divisor; ++r) {
      if (!core.insert(churn) || !core.erase(churn)) misses.fetch_add(1000000);
    }
    stop = true;
  });
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&] {
      start.arrive_and_wait();
      std::size_t n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        if (!core.contains(stable)) misses.fetch_add(1);
        if (core.count(stable) != 1) misses.fetch_add(1);
        ++n;
      }
      lookups.fetch_add(n);
    });
  }
  writer.join();
  for (auto& r : readers)
    r.join();
  EXPECT_EQ(misses.load(), 0u);
  EXPECT_GT(lookups.load(), 0u);
  EXPECT_EQ(core.size(), 1u);
}

TEST(lockfree_core, lookups_take_no_kcas_slot_and_hops_take_one) {
  core12 core(2000, core12::default_max_kicks);
  const auto keys = make_keys(1000, 12);
  for (u64 k : keys) {
    ASSERT_TRUE(core.insert(core.indexer().locate(ccf::hash<u64>{}(k, ccf::default_seed))));
  }
  std::size_t before = 0, after_lookups = 0, after_hops = 0, hops = 0;
  std::thread t([&] {
    before = cd::kcas_threads_in_use();
    for (u64 k : make_keys(20000, 13)) {
      const auto p = core.indexer().locate(ccf::hash<u64>{}(k, ccf::default_seed));
      (void)core.contains(p);
      (void)core.count(p);
    }
    after_lookups = cd::kcas_threads_in_use();
    for (u64 k : make_keys(3000, 14)) {
      if (!core.insert(core.indexer().locate(ccf::hash<u64>{}(k, ccf::default_seed)))) break;
    }
    hops = core.relocations();
    after_hops = cd::kcas_threads_in_use();
  });
  t.join();
  EXPECT_EQ(after_lookups, before) << "a lookup registered for K-CAS: it must only read";
  ASSERT_GT(hops, 0u);
  EXPECT_EQ(after_hops, before + 1);
}

// ---------------------------------------------------------------------------------------------
// Workloads through the public filter

using lf = ccf::lockfree_cuckoo_filter<u64>;

TEST(lockfree_filter, hop_heavy_parallel_churn_keeps_every_key) {
  constexpr int threads_n = 4;
  const std::size_t capacity = 40000;
  lf f(capacity, 17);
  const std::size_t per = f.capacity() / threads_n;
  const std::size_t pool = per + per / 4;
  std::vector<std::vector<u64>> pools(threads_n);
  std::vector<std::vector<char>> present(threads_n);
  for (int t = 0; t < threads_n; ++t) {
    pools[t] = make_keys(pool, 200 + t);
    present[t].assign(pool, 0);
  }
  std::atomic<std::size_t> failures{0};
  std::latch start(threads_n);
  std::vector<std::thread> threads;
  for (int t = 0; t < threads_n; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      start.arrive_and_wait();
      // Fill to the capacity, then replace keys one for one: the table stays at ~94 % load,
      // where most inserts need cuckoo paths.
      for (std::size_t i = 0; i < per; ++i) {
        if (f.insert(pools[t][i])) {
          present[t][i] = 1;
        } else {
          failures.fetch_add(1);
        }
      }
      for (int r = 0; r < 40000 / tsan_divisor; ++r) {
        std::size_t i = rng() % pool;
        while (!present[t][i])
          i = rng() % pool;
        if (!f.erase(pools[t][i])) failures.fetch_add(1);
        present[t][i] = 0;
        std::size_t j = rng() % pool;
        while (present[t][j] || j == i)
          j = rng() % pool;
        if (f.insert(pools[t][j])) present[t][j] = 1;
      }
    });
  }
  for (auto& th : threads)
    th.join();
  EXPECT_EQ(failures.load(), 0u);
  EXPECT_GT(f.relocations(), 2000u / tsan_divisor);
  std::size_t live = 0;
  for (int t = 0; t < threads_n; ++t) {
    for (std::size_t i = 0; i < pool; ++i) {
      if (present[t][i]) {
        ++live;
        ASSERT_TRUE(f.contains(pools[t][i])) << "key lost after relocations";
      }
    }
  }
  EXPECT_EQ(f.size(), live);
  EXPECT_GE(f.load_factor(), 0.9);
}

TEST(lockfree_core, clear_concurrent_with_inserts_and_erases_keeps_the_count_exact) {
  for (int round = 0; round < 10; ++round) {
    core12 core(20000, core12::default_max_kicks);
    const auto keys = make_keys(15000, 40 + round);
    std::vector<typename core12::position> pos;
    for (u64 k : keys)
      pos.push_back(core.indexer().locate(ccf::hash<u64>{}(k, ccf::default_seed)));
    for (std::size_t i = 0; i < pos.size(); i += 3)
      ASSERT_TRUE(core.insert(pos[i]));
    std::latch start(3);
    std::thread a([&] {
      start.arrive_and_wait();
      for (std::size_t i = 1; i < pos.size(); i += 3)
        (void)core.insert(pos[i]);
    });
    std::thread b([&] {
      start.arrive_and_wait();
      for (std::size_t i = 0; i < pos.size(); i += 3)
        (void)core.erase(pos[i]);
    });
    start.arrive_and_wait();
    core.clear();
    a.join();
    b.join();
    // Whatever survived the clear, the item count matches the tags in the table.
    EXPECT_EQ(core.size(), stored_tags(core)) << "round " << round;
    core.clear();
    EXPECT_EQ(core.size(), 0u);
    EXPECT_EQ(stored_tags(core), 0u);
  }
}

TEST(lockfree_filter, table_api_checks_its_arguments) {
  lf f(1000);
  typename lf::tag_type old = 0;
  EXPECT_THROW(f.insert_tag_to_bucket(f.num_buckets(), 1, false, old), std::out_of_range);
  EXPECT_THROW(f.insert_tag_to_bucket(0, 0, false, old), std::invalid_argument);
  EXPECT_THROW(f.insert_tag_to_bucket(0, 4096, false, old), std::invalid_argument);
  EXPECT_THROW(f.write_tag(0, 0, 4096), std::invalid_argument);
  EXPECT_THROW(f.delete_tag_from_bucket(f.num_buckets(), 1), std::out_of_range);
  EXPECT_THROW(f.find_tag_in_buckets(0, f.num_buckets(), 1), std::out_of_range);
  EXPECT_FALSE(f.delete_tag_from_bucket(0, 0)) << "tag 0 is an empty slot, not an item";
  EXPECT_EQ(f.size(), 0u);
  f.write_tag(3, 1, 4095);
  EXPECT_EQ(f.read_tag(3, 1), 4095u);
  EXPECT_EQ(f.size(), 1u);
  f.write_tag(3, 1, 0);
  EXPECT_EQ(f.size(), 0u);
  EXPECT_NE(f.info().find("version counters"), std::string::npos) << f.info();
}

// ---------------------------------------------------------------------------------------------
// Other layouts

template <class F>
class lockfree_layouts : public ::testing::Test {};
using layouts = ::testing::Types<
    ccf::lockfree_cuckoo_filter<u64, 12, 4>, ccf::lockfree_cuckoo_filter<u64, 8, 4>,
    ccf::lockfree_cuckoo_filter<u64, 16, 2>, ccf::lockfree_cuckoo_filter<u64, 6, 8>>;
TYPED_TEST_SUITE(lockfree_layouts, layouts);

TYPED_TEST(lockfree_layouts, fill_to_capacity_find_all_erase_all) {
  const std::size_t n = 50000;
  TypeParam f(n, 8);
  const auto keys = make_keys(n, 21);
  ASSERT_EQ(f.insert_many(std::span<const u64>(keys)), n);
  EXPECT_EQ(f.size(), n);
  EXPECT_EQ(f.contains_many(std::span<const u64>(keys)), n);
  // False positives: about 2 * slots * load / (2^bits - 1).
  const auto probes = make_keys(200000, 22);
  const double fpr = static_cast<double>(f.contains_many(std::span<const u64>(probes))) /
                     static_cast<double>(probes.size());
  const double expected = 2.0 * TypeParam::slots_per_bucket * f.load_factor() /
                          static_cast<double>((1u << TypeParam::fingerprint_bits) - 1);
  EXPECT_LT(fpr, expected * 1.3 + 1e-4);
  EXPECT_GT(fpr, expected * 0.7 - 1e-4);
  for (u64 k : keys)
    ASSERT_TRUE(f.erase(k));
  EXPECT_EQ(f.size(), 0u);
  EXPECT_EQ(f.contains_many(std::span<const u64>(keys)), 0u);
}

}  // namespace
}  // namespace ccf_test
