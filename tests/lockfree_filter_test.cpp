// ccf::lockfree_cuckoo_filter as a whole: hop-heavy parallel churn, save() and clear() concurrent
// with writers and readers (one consistent snapshot, the seal lifted afterwards), the table API's
// argument checks, and every supported layout filled, found and emptied. lockfree_test.cpp tests
// its bucket words and engine.
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

using lf = ccf::lockfree_cuckoo_filter<u64>;
using tag_t = lf::tag_type;

// ---------------------------------------------------------------------------------------------
// Workloads through the public filter

TEST(lockfree_filter, hop_heavy_parallel_churn_keeps_every_key) {
  constexpr int threads_n = 4;
  lf f(40000, 17);
  const std::size_t per = f.capacity() / threads_n;
  const std::size_t pool = per + per / 4;
  std::vector<std::vector<u64>> pools;
  for (int t = 0; t < threads_n; ++t)
    pools.push_back(make_keys(pool, 200 + t));
  std::vector<std::vector<char>> present(threads_n, std::vector<char>(pool, 0));
  const int rounds = scaled(40000, 4000);
  std::atomic<std::size_t> failures{0};
  run_threads(threads_n, [&](int t) {
    std::mt19937_64 rng(t);
    // Fill to the capacity, then replace keys one for one: the table stays at ~94 % load,
    // where most inserts need cuckoo paths.
    for (std::size_t i = 0; i < per; ++i) {
      present[t][i] = f.insert(pools[t][i]);
      if (!present[t][i]) failures.fetch_add(1);
    }
    for (int r = 0; r < rounds; ++r) {
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
  EXPECT_EQ(failures.load(), 0u);
  EXPECT_GT(f.relocations(), static_cast<std::size_t>(rounds / 20));
  std::size_t live = 0;
  for (int t = 0; t < threads_n; ++t) {
    for (std::size_t i = 0; i < pool; ++i) {
      live += present[t][i];
      ASSERT_TRUE(!present[t][i] || f.contains(pools[t][i])) << "key lost after relocations";
    }
  }
  EXPECT_EQ(f.size(), live);
  EXPECT_EQ(tags_in(f), live);
  EXPECT_GE(f.load_factor(), 0.9);
}

// save() while two writers insert and erase: every file loads (into the lock-free and the
// sequential filter), holds every key present throughout the save, and describes one snapshot
// (its item count is the number of its tags); the writers go on after the save. During a save a
// writer may run up to half a window ahead and then waits for the save to end: however the
// threads are scheduled, some of its keys stay present throughout every save.
TEST(lockfree_filter, save_during_concurrent_writes_is_one_consistent_snapshot) {
  using seq = ccf::cuckoo_filter<u64, 12, 4>;
  lf f(200000, 3);
  const auto stable = make_keys(100000, 300);
  ASSERT_EQ(f.insert_many(std::span<const u64>(stable)), stable.size());
  constexpr std::size_t window = 20000;  // each writer keeps its last `window` keys
  const int saves = scaled(10, 3);
  struct progress {
    std::atomic<std::size_t> inserted{0};  // keys [0, inserted) had their insert return
    std::atomic<std::size_t> erasing{0};   // keys [0, erasing) had their erase begin
    std::atomic<std::size_t> after_save{0};
    std::atomic<std::size_t> failures{0};
    std::atomic<std::size_t> pause_at{SIZE_MAX};  // key the writer waits before while a save runs
  };
  std::array<progress, 2> w;
  std::atomic<bool> saved_all{false};
  std::atomic<bool> stop{false};
  std::vector<std::string> files;
  auto writer = [&](int t) {
    for (std::size_t i = 0; !stop.load(std::memory_order_acquire); ++i) {
      while (i >= w[t].pause_at.load(std::memory_order_acquire) && !stop.load())
        std::this_thread::yield();
      if (!f.insert(key_of(i, 310 + t))) w[t].failures.fetch_add(1);
      w[t].inserted.store(i + 1, std::memory_order_release);
      if (i >= window) {
        w[t].erasing.store(i - window + 1, std::memory_order_release);
        if (!f.erase(key_of(i - window, 310 + t))) w[t].failures.fetch_add(1);
      }
      if (saved_all.load(std::memory_order_acquire)) w[t].after_save.fetch_add(1);
    }
  };
  std::thread a(writer, 0), b(writer, 1);
  // Waits (at most 20 s) until both writers reach `goal`; writers that never get there are
  // blocked for good (a seal left on), and cannot be joined: the test ends the process.
  auto wait_for_writers = [&](auto goal, const char* what) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!(goal(0) && goal(1))) {
      if (std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << "writers blocked " << what << ": the seal was not lifted";
        std::fflush(nullptr);
        std::_Exit(1);
      }
      std::this_thread::yield();
    }
  };
  std::array<std::size_t, 2> last{0, 0};
  std::vector<std::array<std::size_t, 4>> windows;  // per save: [erasing, inserted) per writer
  for (int s = 0; s < saves; ++s) {
    // Let both writers make progress first, so that every save overlaps writes.
    wait_for_writers([&](int t) { return w[t].inserted.load() >= last[t] + 200; }, "between saves");
    for (int t = 0; t < 2; ++t)
      w[t].pause_at.store(w[t].inserted.load() + window / 2, std::memory_order_release);
    const std::size_t i0 = w[0].inserted.load(), i1 = w[1].inserted.load();
    std::ostringstream out(std::ios::binary);
    f.save(out);
    const std::size_t e0 = w[0].erasing.load(), e1 = w[1].erasing.load();
    for (int t = 0; t < 2; ++t)
      w[t].pause_at.store(SIZE_MAX, std::memory_order_release);
    files.push_back(out.str());
    windows.push_back({e0, i0, e1, i1});
    last = {i0, i1};
  }
  saved_all = true;
  // The writers go on after the last save.
  wait_for_writers([&](int t) { return w[t].after_save.load() >= 1000; }, "after the last save");
  stop = true;
  a.join();
  b.join();
  EXPECT_EQ(w[0].failures.load() + w[1].failures.load(), 0u);
  EXPECT_EQ(f.size(), tags_in(f));
  EXPECT_EQ(f.contains_many(std::span<const u64>(stable)), stable.size());

  for (std::size_t s = 0; s < files.size(); ++s) {
    SCOPED_TRACE(testing::Message() << "save " << s);
    std::istringstream in(files[s], std::ios::binary);
    const lf g(in);
    const seq h(std::as_bytes(std::span<const char>(files[s])));
    EXPECT_EQ(g.size(), h.size());
    EXPECT_EQ(h.size(), tags_in(h));
    EXPECT_EQ(g.size(), tags_in(g));
    EXPECT_GE(g.size(), stable.size());
    EXPECT_LE(g.size(), stable.size() + 2 * (window + 1)) << "more keys than ever were present";
    const auto bytes = g.to_bytes();
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()), files[s])
        << "loading and saving again must reproduce the file";
    EXPECT_EQ(g.contains_many(std::span<const u64>(stable)), stable.size());
    EXPECT_EQ(h.contains_many(std::span<const u64>(stable)), stable.size());
    for (int t = 0; t < 2; ++t) {
      const std::size_t from = windows[s][2 * t], to = windows[s][2 * t + 1];
      EXPECT_GT(to, from);
      for (std::size_t i = from; i < to; ++i) {
        ASSERT_TRUE(g.contains(key_of(i, 310 + t))) << "writer " << t << " key " << i;
        ASSERT_TRUE(h.contains(key_of(i, 310 + t))) << "writer " << t << " key " << i;
      }
    }
  }
}

// clear() while readers look keys up: readers never block, a key once seen absent stays absent
// (nothing re-inserts it), and after the clear nothing is found.
TEST(lockfree_filter, clear_while_readers_run) {
  lf f(30000, 4);
  const auto keys = make_keys(25000, 400);
  ASSERT_EQ(f.insert_many(std::span<const u64>(keys)), keys.size());
  std::latch first_pass(2);
  std::atomic<bool> cleared{false};
  std::atomic<std::size_t> errors{0}, found_after{0}, passes{0};
  run_threads(3, [&](int t) {
    if (t == 2) {
      first_pass.wait();
      f.clear();
      cleared = true;
      return;
    }
    std::vector<char> gone(keys.size(), 0);
    bool first = true;
    for (;;) {
      const bool last = cleared.load();  // a pass that starts after the clear returned
      for (std::size_t k = 0; k < keys.size(); ++k) {
        const bool hit = f.contains(keys[k]);
        if (first && !hit) errors.fetch_add(1);
        if (hit && gone[k]) errors.fetch_add(1);  // came back after being seen absent
        if (!hit) gone[k] = 1;
        if (last && hit) found_after.fetch_add(1);
      }
      passes.fetch_add(1);
      if (first) first_pass.count_down();
      first = false;
      if (last) break;
    }
  });
  EXPECT_EQ(errors.load(), 0u);
  EXPECT_EQ(found_after.load(), 0u);
  EXPECT_GE(passes.load(), 4u);
  EXPECT_EQ(f.size(), 0u);
  EXPECT_EQ(tags_in(f), 0u);
  EXPECT_TRUE(f.insert(keys[0])) << "usable after the clear";
  EXPECT_TRUE(f.contains(keys[0]));
}

// lockfree_cuckoo_filter.hpp documents the filter as "movable, not copyable".
template <class F>
void check_movable() {
  EXPECT_FALSE(std::is_copy_constructible_v<F>);
  EXPECT_TRUE(std::is_move_constructible_v<F>) << "documented as movable";
  if constexpr (std::is_move_constructible_v<F>) {
    F a(1000);
    ASSERT_TRUE(a.insert(1));
    const F b(std::move(a));
    EXPECT_TRUE(b.contains(1));
  }
}
// save() and clear() seal every word and unseal it afterwards; both may help an operation they
// meet, which takes a K-CAS thread slot. From a thread past the slot limit they are refused up
// front (ccf::kcas_thread_limit_error, nothing sealed, nothing cleared): before, they went ahead
// without a slot and, meeting an operation to help, threw halfway, with the unsealing in a
// destructor ending the program.
/// Runs `body` on a new thread while every other K-CAS thread slot is held (by idle threads).
template <class Body>
void past_the_thread_limit(Body&& body) {
  const std::size_t others = ccf::detail::kcas_max_threads - ccf::detail::kcas_threads_in_use();
  std::latch holding(static_cast<std::ptrdiff_t>(others)), done(1);
  std::vector<std::thread> holders;
  holders.reserve(others);
  const auto hold = [&] {
    try {
      static_cast<void>(ccf::detail::kcas_this_thread_slot());
    } catch (const ccf::kcas_thread_limit_error&) {  // a slot another test's thread still held
    }
    holding.count_down();
    done.wait();  // every slot stays held until the body is over
  };
  try {
    for (std::size_t i = 0; i < others; ++i)
      holders.emplace_back(hold);
  } catch (...) {  // no thread could be started: let those that run go
    done.count_down();
    for (auto& t : holders)
      t.join();
    throw;
  }
  holding.wait();
  std::thread(body).join();
  done.count_down();
  for (auto& t : holders)
    t.join();
}

TEST(lockfree_filter, save_and_clear_past_the_thread_limit_are_refused_before_sealing) {
  lf f(4096);
  for (u64 k = 0; k < 1000; ++k)
    ASSERT_TRUE(f.insert(k));
  bool save_refused = false, clear_refused = false;
  past_the_thread_limit([&] {
    std::ostringstream out;
    try {
      f.save(out);
    } catch (const ccf::kcas_thread_limit_error&) {
      save_refused = true;
    }
    try {
      f.clear();
    } catch (const ccf::kcas_thread_limit_error&) {
      clear_refused = true;
    }
  });
  EXPECT_TRUE(save_refused);
  EXPECT_TRUE(clear_refused);
  EXPECT_EQ(f.size(), 1000u) << "a refused clear emptied the filter";
  for (u64 k = 0; k < 1000; ++k)
    ASSERT_TRUE(f.contains(k)) << k;
  // No word was left sealed: writers, which wait for a seal to go, go on, and clear() works.
  EXPECT_TRUE(f.insert(5000));
  EXPECT_TRUE(f.erase(5000));
  f.clear();
  EXPECT_EQ(f.size(), 0u);
}

// A batched insert from a thread past the slot limit: keys that went into a free slot (a plain
// CAS) were in when a cuckoo hop (a K-CAS) threw, and stayed. It is refused before it places any.
TEST(lockfree_filter, insert_many_past_the_thread_limit_places_nothing) {
  lf f(100000, 3);
  const auto before = make_keys(f.size_in_tags() * 85 / 100, 31);
  for (const u64 k : before)
    ASSERT_TRUE(f.insert(k));
  const auto batch = make_keys(2000, 32);
  bool refused = false;
  past_the_thread_limit([&] {
    try {
      f.insert_many(std::span<const u64>(batch));
    } catch (const ccf::kcas_thread_limit_error&) {
      refused = true;
    }
  });
  EXPECT_TRUE(refused);
  EXPECT_EQ(f.size(), before.size());
  for (const u64 k : before)
    ASSERT_TRUE(f.erase(k));
  EXPECT_EQ(f.size(), 0u);
  EXPECT_EQ(f.contains_many(std::span<const u64>(batch)), 0u) << "batch keys stayed behind";
}

TEST(lockfree_filter, is_movable_not_copyable) {
  check_movable<lf>();
}

// Files hold 2, 4 or 8 slots a bucket: a lock-free filter of another bucket size has no save,
// to_bytes or loading constructor (they existed and failed to compile).
template <class F>
constexpr bool has_files = requires(const F& f, std::ostream& out, std::span<const std::byte> b) {
  f.save(out);
  f.to_bytes();
  F(b);
};
TEST(lockfree_filter, has_files_for_the_bucket_sizes_files_hold) {
  static_assert(has_files<lf> && lf::has_file_format);
  static_assert(has_files<ccf::lockfree_cuckoo_filter<u64, 16, 2>>);
  static_assert(!has_files<ccf::lockfree_cuckoo_filter<u64, 16, 3>>);
  static_assert(!ccf::lockfree_cuckoo_filter<u64, 8, 5>::has_file_format);
  ccf::lockfree_cuckoo_filter<u64, 16, 3> f(1000);
  EXPECT_TRUE(f.insert(1) && f.contains(1)) << "the layout works without files";
}

TEST(lockfree_filter, table_api_checks_its_arguments) {
  lf f(1000);
  tag_t old = 0;
  EXPECT_THROW(f.insert_tag_to_bucket(f.num_buckets(), 1, false, old), std::out_of_range);
  EXPECT_THROW(f.insert_tag_to_bucket(0, 0, false, old), std::invalid_argument);
  EXPECT_THROW(f.insert_tag_to_bucket(0, 4096, false, old), std::invalid_argument);
  EXPECT_THROW(f.insert_tag_to_bucket(0, 4096, true, old), std::invalid_argument);
  EXPECT_THROW(f.write_tag(0, 0, 4096), std::invalid_argument);
  EXPECT_THROW(f.write_tag(0, 4, 1), std::out_of_range);
  EXPECT_THROW(f.write_tag(f.num_buckets(), 0, 1), std::out_of_range);
  EXPECT_THROW((void)f.read_tag(0, 4), std::out_of_range);
  EXPECT_THROW(f.delete_tag_from_bucket(f.num_buckets(), 1), std::out_of_range);
  EXPECT_THROW((void)f.find_tag_in_buckets(0, f.num_buckets(), 1), std::out_of_range);
  EXPECT_FALSE(f.delete_tag_from_bucket(0, 0)) << "tag 0 is an empty slot, not an item";
  EXPECT_EQ(f.size(), 0u);
  EXPECT_EQ(tags_in(f), 0u) << "a refused call wrote something";
  f.write_tag(3, 1, 4095);
  EXPECT_EQ(f.read_tag(3, 1), 4095u);
  EXPECT_EQ(f.size(), 1u);
  EXPECT_TRUE(f.find_tag_in_buckets(3, 3, 4095));
  f.write_tag(3, 1, 0);
  EXPECT_EQ(f.size(), 0u);
  // A full bucket: no room without kickout; with kickout a victim is returned and replaced.
  for (tag_t t = 1; t <= 4; ++t)
    ASSERT_TRUE(f.insert_tag_to_bucket(5, t, false, old));
  EXPECT_FALSE(f.insert_tag_to_bucket(5, 9, false, old));
  old = 0;
  EXPECT_FALSE(f.insert_tag_to_bucket(5, 9, true, old));
  EXPECT_GE(old, 1u);
  EXPECT_LE(old, 4u);
  EXPECT_TRUE(f.find_tag_in_buckets(5, 5, 9));
  EXPECT_FALSE(f.find_tag_in_buckets(5, 5, old));
  EXPECT_EQ(f.size(), 4u);
  EXPECT_TRUE(f.delete_tag_from_bucket(5, 9));
  EXPECT_EQ(f.size(), 3u);

  // The other filter kinds refuse wide tags the same way.
  ccf::cuckoo_filter<u64, 12, 4> s(1000);
  EXPECT_THROW(s.write_tag(0, 0, 4096), std::invalid_argument);
  EXPECT_THROW(s.insert_tag_to_bucket(0, 4096, false, old), std::invalid_argument);
  ccf::concurrent_cuckoo_filter<u64, 8, 4> c(1000);
  EXPECT_THROW(c.write_tag(0, 0, 256), std::invalid_argument);
  EXPECT_THROW(c.insert_tag_to_bucket(0, 256, false, old), std::invalid_argument);
  ccf::lockfree_cuckoo_filter<u64, 8, 4> l8(1000);
  EXPECT_THROW(l8.write_tag(0, 0, 256), std::invalid_argument);
  EXPECT_THROW(l8.insert_tag_to_bucket(0, 256, false, old), std::invalid_argument);
  EXPECT_EQ(tags_in(s) + tags_in(c) + tags_in(l8), 0u);
}

// ---------------------------------------------------------------------------------------------
// Other layouts

template <class F>
class lockfree_layouts : public ::testing::Test {};
using layouts = ::testing::Types<
    ccf::lockfree_cuckoo_filter<u64, 12, 4>, ccf::lockfree_cuckoo_filter<u64, 8, 4>,
    ccf::lockfree_cuckoo_filter<u64, 16, 2>, ccf::lockfree_cuckoo_filter<u64, 6, 8>,
    ccf::lockfree_cuckoo_filter<u64, 16, 3>, ccf::lockfree_cuckoo_filter<u64, 4, 8>,
    ccf::lockfree_cuckoo_filter<u64, 12, 4, ccf::hash<u64>, ccf::global_alternate>>;
TYPED_TEST_SUITE(lockfree_layouts, layouts);

TYPED_TEST(lockfree_layouts, fill_to_capacity_find_all_erase_all) {
  const std::size_t n = 50000;
  TypeParam f(n, 8);
  static_assert(TypeParam::counter_bits ==
                61 - TypeParam::fingerprint_bits * TypeParam::slots_per_bucket);
  const auto keys = make_keys(n, 21);
  ASSERT_EQ(f.insert_many(std::span<const u64>(keys)), n);
  EXPECT_EQ(f.size(), n);
  EXPECT_EQ(tags_in(f), n);
  EXPECT_EQ(f.contains_many(std::span<const u64>(keys)), n);
  // False positives: 1 - (1 - 1 / (2^bits - 1))^(2 * slots * load).
  const auto probes = make_keys(200000, 22);
  const double fpr = static_cast<double>(f.contains_many(std::span<const u64>(probes))) /
                     static_cast<double>(probes.size());
  const double expected =
      1.0 - std::pow(1.0 - 1.0 / static_cast<double>((1u << TypeParam::fingerprint_bits) - 1),
                     2.0 * TypeParam::slots_per_bucket * f.load_factor());
  EXPECT_LT(fpr, expected * 1.3 + 1e-4);
  EXPECT_GT(fpr, expected * 0.7 - 1e-4);
  for (u64 k : keys)
    ASSERT_TRUE(f.erase(k));
  EXPECT_EQ(f.size(), 0u);
  EXPECT_EQ(tags_in(f), 0u);
  EXPECT_EQ(f.contains_many(std::span<const u64>(keys)), 0u);
}

}  // namespace
}  // namespace ccf_test
