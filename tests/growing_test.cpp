// Tests of the growing filters (ccf::growing_cuckoo_filter, ccf::concurrent_growing_cuckoo_filter):
// growth from a small capacity to 4096 times it with no false negative and a measured
// false-positive rate within the bound, erase, files, the runtime filter's growing kind, and
// lookups racing growth on other threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <ccf/cuckoo_filter.hpp>
#include <ccf/growing_cuckoo_filter.hpp>
#include <ccf/params.hpp>
#include <ccf/runtime_filter.hpp>

#include "filter_types.hpp"
#include "heap_in_use.hpp"
#include "run_threads.hpp"
#include "test_allocator.hpp"

namespace {

using u64 = std::uint64_t;
using ccf_test::key_of;
using ccf_test::test_scale;

/// Keys inserted (stream 1) and keys never inserted (stream 2).
u64 present(std::size_t i) {
  return key_of(i, 1);
}
u64 absent(std::size_t i) {
  return key_of(i, 2);
}

/// The false positives among `n` absent keys must be at most bound * n plus five standard
/// deviations (a test that fails only when the rate is above the bound, not by chance).
template <class F>
void expect_fpr_within(const F& f, double bound, std::size_t n, const std::string& what) {
  std::size_t hits = 0;
  for (std::size_t i = 0; i < n; ++i)
    hits += f.contains(absent(i)) ? 1 : 0;
  const double mean = bound * static_cast<double>(n);
  EXPECT_LE(static_cast<double>(hits), mean + 5 * std::sqrt(mean) + 1)
      << what << ": " << hits << " false positives of " << n << ", bound " << bound;
}

TEST(growing_filter, grows_4096_times_with_no_false_negative_and_the_rate_within_its_bound) {
  for (double target : {1e-2, 1e-3, 1e-4}) {
    const std::size_t initial = 1000;
    const std::size_t n = static_cast<std::size_t>(4096 * initial * std::min(1.0, test_scale()));
    ccf::growing_cuckoo_filter<u64> f(initial, target);
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_TRUE(f.insert(present(i)));
    EXPECT_EQ(f.size(), n);
    EXPECT_GE(f.doublings(), test_scale() >= 1 ? 12u : 9u);
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_TRUE(f.contains(present(i))) << "false negative: key " << i << " of " << n;
    EXPECT_LE(f.fpr_bound(), target) << "within the doublings the target is kept for";
    expect_fpr_within(f, f.fpr_bound(), 1000000, "target " + std::to_string(target));
    EXPECT_LE(f.load_factor(), ccf::detail::growing_load);
  }
}

/// Bits per item at the load where the table doubles, against the static filter of least memory
/// for the same rate: at most 5 more.
TEST(growing_filter, bits_per_item_are_those_of_a_static_filter_plus_at_most_five) {
  for (double target : {1e-2, 1e-3, 1e-4, 1e-5, 1e-6}) {
    const unsigned width = ccf::detail::growing_width(target, 16);
    const double growing_bits = width / ccf::detail::growing_load;
    const ccf::filter_params p = ccf::smallest_layout_for(std::size_t{1} << 24, target);
    const double static_bits = p.fingerprint_bits / p.load_factor;
    EXPECT_LE(growing_bits, static_bits + 5)
        << "target " << target << ": " << width << "-bit slots vs the static " << p.fingerprint_bits
        << " x " << p.slots_per_bucket;
  }
  // And measured, just before a doubling.
  ccf::growing_cuckoo_filter<u64> f(1000, 1e-3);
  std::size_t i = 0;
  while (f.doublings() < 8)
    f.insert(present(i++));
  const std::size_t at = f.capacity();  // the insert past it doubles the table
  while (f.size() < at)
    f.insert(present(i++));
  EXPECT_EQ(f.doublings(), 8u);
  const double bits = 8.0 * static_cast<double>(f.size_in_bytes()) / static_cast<double>(f.size());
  EXPECT_LE(bits, ccf::detail::growing_width(1e-3, 16) / 0.94) << "bits per item when full";
}

TEST(growing_filter, holds_its_capacity_before_it_first_doubles) {
  // A filter made for N items doubled at the N-th insert (twice the memory `ccf build --grow`
  // needed for N keys).
  for (const std::size_t n : {std::size_t{1}, std::size_t{5000}, std::size_t{50000}}) {
    ccf::growing_cuckoo_filter<u64> f(n, 1e-3);
    const std::size_t cap = f.capacity();
    ASSERT_GE(cap, n);
    for (std::size_t i = 0; i < cap; ++i)
      ASSERT_TRUE(f.insert(present(i)));
    EXPECT_EQ(f.doublings(), 0u) << n;
    ASSERT_TRUE(f.insert(present(cap)));
    EXPECT_EQ(f.doublings(), 1u) << n;
    for (std::size_t i = 0; i <= cap; ++i)
      ASSERT_TRUE(f.contains(present(i)));
  }
}

TEST(growing_filter, memory_counts_the_hashes_a_small_filter_keeps) {
  ccf::growing_cuckoo_filter<u64> f(1000, 1e-3);
  for (std::size_t i = 0; i < 900; ++i)
    ASSERT_TRUE(f.insert(present(i)));
  ASSERT_EQ(f.chunks(), 1u);  // one chunk: it keeps its hashes
  EXPECT_GE(f.memory_in_bytes(), f.size_in_bytes() + 900 * 2 * sizeof(std::uint64_t));
  ccf::runtime_filter r(ccf::filter_config::growing_for_rate(1000, 1e-3));
  for (std::size_t i = 0; i < 900; ++i)
    ASSERT_TRUE(r.insert(std::to_string(i)));
  EXPECT_GE(r.memory_in_bytes(), r.size_in_bytes() + 900 * 2 * sizeof(std::uint64_t));
  // A split table keeps no hashes; a static filter holds its table only.
  ccf::growing_cuckoo_filter<u64> large(1000000, 1e-3);
  ASSERT_GT(large.chunks(), 1u);
  EXPECT_EQ(large.memory_in_bytes(), large.size_in_bytes());
  const ccf::runtime_filter s(ccf::filter_config::for_rate(1000, 0.01));
  EXPECT_EQ(s.memory_in_bytes(), s.size_in_bytes());
}

TEST(growing_filter, memory_in_bytes_is_what_the_heap_holds_for_it) {
  // It reported a third of the heap a small filter took (each kept hash's 16-byte node had a
  // cache line of its own), and the set's bucket array stayed after the table split.
  const std::optional<std::size_t> before = heap_in_use();
  if (!before) return;  // no glibc heap to measure (sanitizer builds)
  auto expect_near = [&](const ccf::growing_cuckoo_filter<u64>& f, const char* when) {
    const std::size_t heap = *heap_in_use() - *before, reported = f.memory_in_bytes();
    std::printf("[ growing ] %s: heap %zu bytes, memory_in_bytes %zu\n", when, heap, reported);
    EXPECT_LE(static_cast<double>(heap), 1.5 * static_cast<double>(reported))
        << when << ": heap " << heap << ", memory_in_bytes " << reported;
    EXPECT_LE(static_cast<double>(reported), 1.5 * static_cast<double>(heap) + 65536)
        << when << ": heap " << heap << ", memory_in_bytes " << reported;
  };
  {
    ccf::growing_cuckoo_filter<u64> f(1000, 1e-3);
    std::size_t i = 0;
    for (; i < 40000; ++i)
      ASSERT_TRUE(f.insert(present(i)));
    ASSERT_EQ(f.chunks(), 1u);  // it keeps its hashes
    expect_near(f, "keeping hashes");
    while (f.chunks() == 1)
      ASSERT_TRUE(f.insert(present(i++)));
    expect_near(f, "split");
  }
}

TEST(growing_filter, erase_removes_one_copy_and_never_another_key) {
  const std::size_t n = static_cast<std::size_t>(400000 * std::min(1.0, test_scale() * 2));
  ccf::growing_cuckoo_filter<u64> f(500, 1e-3);
  for (std::size_t i = 0; i < n; ++i)
    f.insert(present(i));
  // Erase every other key (the table is past its first splits: no hashes kept).
  for (std::size_t i = 0; i < n; i += 2)
    ASSERT_TRUE(f.erase(present(i))) << "erase of inserted key " << i;
  EXPECT_EQ(f.size(), n - (n + 1) / 2);
  for (std::size_t i = 1; i < n; i += 2)
    ASSERT_TRUE(f.contains(present(i))) << "false negative after erasing others: " << i;
  std::size_t still = 0;
  for (std::size_t i = 0; i < n; i += 2)
    still += f.contains(present(i)) ? 1 : 0;
  EXPECT_LT(still, n / 200) << "erased keys still answered yes";
  // A key inserted twice is erased twice.
  f.insert(absent(7));
  f.insert(absent(7));
  EXPECT_EQ(f.count(absent(7)), 2u);
  EXPECT_TRUE(f.erase(absent(7)));
  EXPECT_TRUE(f.contains(absent(7)));
  EXPECT_TRUE(f.erase(absent(7)));
}

TEST(growing_filter, the_ninth_copy_of_an_item_is_refused_without_growing) {
  for (std::size_t before : {std::size_t{0}, std::size_t{300000}}) {  // rebuilding, splitting
    ccf::growing_cuckoo_filter<u64> f(1000, 1e-3);
    for (std::size_t i = 0; i < before; ++i)
      f.insert(present(i));
    const std::size_t buckets = f.num_buckets();
    std::size_t copies = 0;
    for (int i = 0; i < 20; ++i)
      copies += f.insert(absent(1)) ? 1 : 0;
    EXPECT_EQ(copies, 8u);
    EXPECT_EQ(f.count(absent(1)), 8u);
    EXPECT_EQ(f.num_buckets(), buckets) << "the table grew for copies of one item";
    EXPECT_EQ(f.size(), before + 8);
    const std::vector<u64> many(10, absent(2));
    EXPECT_EQ(f.insert_many(many), 8u);
  }
}

TEST(growing_filter, eight_copies_go_in_where_the_two_buckets_are_one) {
  // While hashes are kept a doubling draws an item's buckets anew: a key whose two buckets were
  // one bucket (four slots) had its fifth copy refused. Some of these keys have one bucket.
  for (std::uint64_t key = 0; key < 2000; ++key) {
    ccf::growing_cuckoo_filter<u64> f(1000, 1e-3);
    std::size_t copies = 0;
    for (int i = 0; i < 9; ++i)
      copies += f.insert(key) ? 1 : 0;
    ASSERT_EQ(copies, 8u) << "key " << key;
    ASSERT_EQ(f.count(key), 8u) << "key " << key;
  }
}

/// Inserts `keys` keys `copies` times each into f, failing as soon as the table holds more than
/// twice the 16 / growing_load slots per item that grows_for allows (a split table doubles only
/// at a load of growing_load / 8 or more), or twice the smallest split table. Every key that went
/// in at least once must be found, size() must count exactly the inserts that returned true, and
/// at least `least_accepted` of the inserts must have gone in.
template <class F>
void insert_copies_within_bounded_memory(F& f, std::size_t keys, unsigned copies,
                                         double least_accepted) {
  const double most_slots_per_item = 16 / ccf::detail::growing_load;
  const std::size_t smallest_split = 2 * ccf::detail::growing_chunk * ccf::detail::growing_slots;
  std::vector<unsigned> accepted(keys);
  std::size_t total = 0;
  for (std::size_t i = 0; i < keys; ++i) {
    for (unsigned c = 0; c < copies; ++c)
      accepted[i] += f.insert(present(i)) ? 1 : 0;
    total += accepted[i];
    const double allowed =
        std::max(static_cast<double>(smallest_split), most_slots_per_item * total);
    ASSERT_LE(static_cast<double>(f.size_in_tags()), 2 * allowed)
        << copies << " copies of " << i + 1 << " keys: " << f.size_in_tags() << " slots for "
        << total << " items, " << f.doublings() << " doublings";
  }
  EXPECT_EQ(f.size(), total);
  EXPECT_GE(static_cast<double>(total), least_accepted * static_cast<double>(keys * copies))
      << copies << " copies: " << keys * copies - total << " inserts refused";
  for (std::size_t i = 0; i < keys; ++i) {
    if (accepted[i] == 0) continue;
    ASSERT_TRUE(f.contains(present(i))) << "false negative: key " << i;
    ASSERT_GE(f.count(present(i)), accepted[i]) << "key " << i;
  }
}

TEST(growing_filter, keys_inserted_many_times_each_do_not_double_it_without_bound) {
  // Two keys of five copies each in one pair of buckets have no room, and a doubling separates
  // them only by chance: with 400,000 such keys the table doubled until memory ran out.
  // Refusals grow with the copies: past 2 x 4 of one item they are the rule.
  const auto keys = static_cast<std::size_t>(400000 * std::min(1.0, test_scale() * 2));
  for (const auto& [copies, least_accepted] : {std::pair{3u, 0.999}, {5u, 0.99}, {8u, 0.9}}) {
    ccf::growing_cuckoo_filter<u64> f(1000, 1e-3);
    insert_copies_within_bounded_memory(f, keys, copies, least_accepted);
  }
  ccf::concurrent_growing_cuckoo_filter<u64> c(1000, 1e-3);
  insert_copies_within_bounded_memory(c, keys, 6, 0.95);
}

TEST(growing_filter, an_insert_doubles_at_most_once_and_a_refused_one_changes_no_item) {
  // Entries whose fingerprint is used up are in both halves of every split (12-bit slots have 3
  // bits: fpr 0.04): one insert doubled the table until memory ran out. A small filter's rebuild
  // that found no table for copies of two items threw length_error, at times with the item in.
  const auto keys = static_cast<std::size_t>(20000 * std::min(1.0, test_scale() * 2));
  for (const double fpr : {0.04, 1e-3}) {
    for (const std::size_t start : {std::size_t{1000}, std::size_t{240000}}) {
      ccf::growing_cuckoo_filter<u64> f(start, fpr);
      u64 first = 0;
      while (static_cast<double>(f.size()) < 0.949 * static_cast<double>(f.size_in_tags()))
        ASSERT_TRUE(f.insert(present(first++)));
      std::vector<unsigned> accepted(keys);
      for (std::size_t n = 0; n < keys; ++n) {
        for (int c = 0; c < 8; ++c) {
          const unsigned doublings = f.doublings();
          const std::size_t size = f.size();
          bool in = false;
          ASSERT_NO_THROW(in = f.insert(present(first + n))) << "fpr " << fpr << " key " << n;
          ASSERT_LE(f.doublings(), doublings + 1) << "one insert doubled the table twice";
          ASSERT_EQ(f.size(), size + (in ? 1 : 0)) << "a refused insert changed the items";
          accepted[n] += in ? 1 : 0;
        }
      }
      for (u64 k = 0; k < first; ++k)
        ASSERT_TRUE(f.contains(present(k))) << "false negative, fpr " << fpr;
      for (std::size_t n = 0; n < keys; ++n) {
        if (accepted[n] != 0) {
          ASSERT_TRUE(f.contains(present(first + n))) << "false negative";
        }
      }
    }
  }
}

TEST(growing_filter, an_insert_that_runs_out_of_memory_changes_nothing) {
  // The table took the entry, then keeping its hash threw: the item was in, counted, could not
  // be erased, and vanished at the next doubling while size() still counted it.
  auto arena = std::make_shared<ccf_test::test_arena>();
  using alloc = ccf_test::arena_allocator<std::uint64_t>;
  ccf::growing_cuckoo_filter<u64, ccf::hash<u64>, alloc> f(1000, 0.01, {}, alloc(arena));
  for (u64 k = 1; k <= 100; ++k)
    ASSERT_TRUE(f.insert(k));
  arena->fail = true;
  EXPECT_THROW(f.insert(4242), std::bad_alloc);
  arena->fail = false;
  EXPECT_EQ(f.size(), 100u);
  EXPECT_FALSE(f.erase(4242)) << "the refused item was erased: it had gone in";
  for (u64 k = 101; f.doublings() == 0; ++k)
    ASSERT_TRUE(f.insert(k));
  const std::size_t n = f.size();
  for (u64 k = 1; k <= n; ++k)
    ASSERT_TRUE(f.contains(k)) << k;
  for (u64 k = 1; k <= n; ++k)
    ASSERT_TRUE(f.erase(k)) << k;
  EXPECT_EQ(f.size(), 0u) << "size() counted an item the table no longer held";
}

TEST(growing_filter, a_small_filter_refuses_to_erase_a_key_never_inserted) {
  ccf::growing_cuckoo_filter<u64> f(1000, 1e-3);
  for (std::size_t i = 0; i < 3000; ++i)
    f.insert(present(i));
  EXPECT_GT(f.doublings(), 0u);
  for (std::size_t i = 0; i < 10000; ++i)
    ASSERT_FALSE(f.erase(absent(i))) << "erased a key never inserted";
  EXPECT_EQ(f.size(), 3000u);
  for (std::size_t i = 0; i < 3000; ++i)
    ASSERT_TRUE(f.contains(present(i)));
}

TEST(growing_filter, a_large_initial_capacity_starts_split) {
  ccf::growing_cuckoo_filter<u64> f(1000000, 1e-3);
  EXPECT_GT(f.chunks(), 1u);
  EXPECT_GE(f.capacity(), 1000000u);
  for (std::size_t i = 0; i < 1100000; ++i)
    f.insert(present(i));
  for (std::size_t i = 0; i < 1100000; ++i)
    ASSERT_TRUE(f.contains(present(i)));
}

TEST(growing_filter, parameters_out_of_reach_are_refused) {
  EXPECT_THROW(ccf::growing_cuckoo_filter<u64>(0, 1e-3), std::invalid_argument);
  EXPECT_THROW(ccf::growing_cuckoo_filter<u64>(100, 0.0), std::invalid_argument);
  EXPECT_THROW(ccf::growing_cuckoo_filter<u64>(100, 1.0), std::invalid_argument);
  EXPECT_THROW(ccf::growing_cuckoo_filter<u64>(100, 1e-12), std::invalid_argument);
  // More doublings than a file records (it made filters whose files did not load).
  ccf::growth_options o;
  o.max_doublings = 65;
  EXPECT_THROW(ccf::growing_cuckoo_filter<u64>(100, 1e-2, o), std::invalid_argument);
  EXPECT_THROW(ccf::filter_config::growing_for_rate(100, 1e-2, ccf::filter_kind::sequential, 65),
               std::invalid_argument);
  o.max_doublings = 64;
  const ccf::growing_cuckoo_filter<u64> most(100, 1e-2, o);
  EXPECT_EQ(ccf::growing_cuckoo_filter<u64>(most.to_bytes()).max_doublings(), 64u);
  // The error names the best rate there is (it printed 0.000000).
  try {
    ccf::growing_cuckoo_filter<u64>(100, 1e-12);
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("at best "), std::string::npos) << what;
    EXPECT_EQ(what.find("0.000000"), std::string::npos) << what;
    EXPECT_NE(what.find("e-0"), std::string::npos) << what;
  }
  // A start too large for any table is refused before its chunk count is computed (the count
  // overflowed, and the filter claimed a table of 8 bytes that the first insert wrote past).
  for (const std::size_t huge : {std::size_t{1} << 62, std::numeric_limits<std::size_t>::max()}) {
    EXPECT_THROW(ccf::growing_cuckoo_filter<u64>(huge, 1e-3), std::length_error) << huge;
    EXPECT_THROW(ccf::concurrent_growing_cuckoo_filter<u64>(huge, 1e-3), std::length_error);
  }
  // Wider slots for lower rates and for more doublings.
  EXPECT_LT(ccf::detail::growing_width(1e-2, 16), ccf::detail::growing_width(1e-4, 16));
  EXPECT_LE(ccf::detail::growing_width(1e-3, 4), ccf::detail::growing_width(1e-3, 30));
  for (unsigned w = 12; w <= 30; w += 2) {
    EXPECT_LT(ccf::detail::growing_fpr_bound(w, 3), ccf::detail::growing_fpr_bound(w, 4));
    EXPECT_GT(ccf::detail::growing_fpr_bound(w, 3), ccf::detail::growing_fpr_bound(w + 2, 3));
  }
}

TEST(growing_filter, clear_empties_it) {
  ccf::growing_cuckoo_filter<u64> f(100, 1e-3);
  for (std::size_t i = 0; i < 100000; ++i)
    f.insert(present(i));
  f.clear();
  EXPECT_EQ(f.size(), 0u);
  std::size_t hits = 0;
  for (std::size_t i = 0; i < 100000; ++i)
    hits += f.contains(present(i)) ? 1 : 0;
  EXPECT_EQ(hits, 0u);
  for (std::size_t i = 0; i < 1000; ++i)
    f.insert(present(i));
  for (std::size_t i = 0; i < 1000; ++i)
    ASSERT_TRUE(f.contains(present(i)));
}

// ---- files ----

template <class F>
void expect_same_answers(const F& a, const F& b, std::size_t n) {
  EXPECT_EQ(a.size(), b.size());
  EXPECT_EQ(a.num_buckets(), b.num_buckets());
  EXPECT_EQ(a.doublings(), b.doublings());
  EXPECT_EQ(a.fpr_bound(), b.fpr_bound());
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(a.contains(present(i)), b.contains(present(i)));
    ASSERT_EQ(a.contains(absent(i)), b.contains(absent(i)));
  }
}

TEST(growing_filter, files_round_trip_at_every_stage_and_keep_growing) {
  // Empty, small (hashes kept), just split, and split many times.
  for (std::size_t n : {std::size_t{0}, std::size_t{50}, std::size_t{5000}, std::size_t{150000},
                        std::size_t{600000}}) {
    ccf::growing_cuckoo_filter<u64> f(1000, 1e-3);
    for (std::size_t i = 0; i < n; ++i)
      f.insert(present(i));
    const std::vector<std::byte> bytes = f.to_bytes();
    std::stringstream stream;
    f.save(stream);
    EXPECT_EQ(stream.str().size(), bytes.size());
    ccf::growing_cuckoo_filter<u64> g(bytes);
    ccf::growing_cuckoo_filter<u64> h(stream);
    expect_same_answers(f, g, n + 1000);
    expect_same_answers(f, h, n + 1000);
    // The loaded filter grows on as the original would, and still erases.
    for (std::size_t i = n; i < n + 100000; ++i)
      g.insert(present(i));
    for (std::size_t i = 0; i < n + 100000; ++i)
      ASSERT_TRUE(g.contains(present(i))) << "after loading " << n << " items: key " << i;
    for (std::size_t i = 0; i < n; i += 3)
      ASSERT_TRUE(g.erase(present(i)));
  }
}

TEST(growing_filter, corrupt_and_foreign_files_are_refused) {
  ccf::growing_cuckoo_filter<u64> f(1000, 1e-3);
  for (std::size_t i = 0; i < 200000; ++i)
    f.insert(present(i));
  const std::vector<std::byte> good = f.to_bytes();
  using G = ccf::growing_cuckoo_filter<u64>;
  // A flipped bit anywhere fails the checksum (or the header checks).
  for (std::size_t at : {std::size_t{3}, std::size_t{90}, good.size() / 2, good.size() - 3}) {
    std::vector<std::byte> bad = good;
    bad[at] ^= std::byte{0x10};
    EXPECT_THROW(G{bad}, ccf::format_error) << "byte " << at;
  }
  // Truncated anywhere.
  for (std::size_t keep : {std::size_t{0}, std::size_t{40}, std::size_t{100}, good.size() - 1}) {
    EXPECT_THROW(G(std::span<const std::byte>(good.data(), keep)), ccf::format_error) << keep;
  }
  // A static filter's file is not a growing filter's, and back; another key type is refused.
  ccf::cuckoo_filter<u64> s(1000);
  s.insert(1);
  EXPECT_THROW(G{s.to_bytes()}, ccf::format_error);
  EXPECT_THROW(ccf::cuckoo_filter<u64>{good}, ccf::format_error);
  EXPECT_THROW(ccf::growing_cuckoo_filter<std::string>{good}, ccf::format_error);
}

/// A file's bytes with its checksum made right again (forging what the checksum guards).
std::vector<std::byte> resealed(std::vector<std::byte> bytes) {
  const std::uint64_t sum = XXH3_64bits(bytes.data(), bytes.size() - 8);
  ccf::detail::put_le(reinterpret_cast<unsigned char*>(&bytes[bytes.size() - 8]), sum, 8);
  return bytes;
}

/// A growing filter of one chunk (its file keeps its items' hashes) holding present(0..499).
ccf::growing_cuckoo_filter<u64> small_filled_filter() {
  ccf::growing_cuckoo_filter<u64> f(1000, 1e-3);
  for (std::size_t i = 0; i < 500; ++i)
    EXPECT_TRUE(f.insert(present(i)));
  return f;
}

TEST(growing_filter, a_doubling_count_its_table_cannot_have_is_refused) {
  // A file that said 64 doublings loaded; its next doubling made 65, which its own file then
  // refused (in Redis: a saved database that no longer loads).
  using G = ccf::growing_cuckoo_filter<u64>;
  G f(1000, 1e-3);
  for (std::size_t i = 0; i < 20000; ++i)
    ASSERT_TRUE(f.insert(present(i)));
  ASSERT_GT(f.doublings(), 2u);
  const std::vector<std::byte> good = f.to_bytes();
  constexpr std::size_t doublings_at = 80 + 2 * 8;  // header, target, max_doublings
  ASSERT_EQ(ccf::detail::get_le(reinterpret_cast<const unsigned char*>(&good[doublings_at]), 8),
            f.doublings());
  auto with_doublings = [&](std::uint64_t d) {
    std::vector<std::byte> bad = good;
    ccf::detail::put_le(reinterpret_cast<unsigned char*>(&bad[doublings_at]), d, 8);
    return resealed(std::move(bad));
  };
  const auto most = static_cast<std::uint64_t>(std::bit_width(f.num_buckets()) - 1);
  for (std::uint64_t d : {most + 1, std::uint64_t{64}, std::uint64_t{65}, ~std::uint64_t{0}}) {
    EXPECT_THROW(G{with_doublings(d)}, ccf::format_error) << d << " doublings";
  }
  // The most a table of its buckets can have loads, grows, and its file loads again.
  G g{with_doublings(most)};
  EXPECT_EQ(g.doublings(), most);
  for (std::size_t i = 20000; i < 80000; ++i)
    ASSERT_TRUE(g.insert(present(i)));
  ASSERT_GT(g.doublings(), most);
  const G h{g.to_bytes()};
  EXPECT_EQ(h.doublings(), g.doublings());
  for (std::size_t i = 0; i < 80000; ++i)
    ASSERT_TRUE(h.contains(present(i))) << i;
}

TEST(growing_filter, a_target_rate_its_slots_are_not_for_is_refused) {
  // A file's slot width follows from its target rate and max doublings: one forged to another
  // rate (0.5, 1e-300 on 18-bit slots) loaded and then claimed that rate.
  using G = ccf::growing_cuckoo_filter<u64>;
  const G f = small_filled_filter();
  const std::vector<std::byte> good = f.to_bytes();
  constexpr std::size_t target_at = 80, max_doublings_at = 88;
  auto with = [&](std::size_t at, std::uint64_t v) {
    std::vector<std::byte> bad = good;
    ccf::detail::put_le(reinterpret_cast<unsigned char*>(&bad[at]), v, 8);
    return resealed(std::move(bad));
  };
  const unsigned width = ccf::detail::growing_width(1e-3, f.max_doublings());
  for (const double rate : {0.5, 1e-300, 1e-9, 0.0, -1e-3, 1.0}) {
    EXPECT_THROW(G{with(target_at, std::bit_cast<std::uint64_t>(rate))}, ccf::format_error) << rate;
  }
  ASSERT_NE(ccf::detail::growing_width(1e-3, 64), width);
  EXPECT_THROW(G{with(max_doublings_at, 64)}, ccf::format_error);
  // A rate with the same slots loads, and keeps it.
  const double near = 1.001e-3;
  ASSERT_EQ(ccf::detail::growing_width(near, f.max_doublings()), width);
  const G g{with(target_at, std::bit_cast<std::uint64_t>(near))};
  EXPECT_EQ(g.target_fpr(), near);
  for (std::size_t i = 0; i < 500; ++i)
    ASSERT_TRUE(g.contains(present(i)));
  EXPECT_NO_THROW(G{resealed(good)}) << "the forging itself is sound";
}

TEST(growing_filter, a_one_chunk_file_without_kept_hashes_is_refused) {
  // A table of one chunk keeps its items' hashes. A file saying it does not loaded, and its
  // doublings then split it into chunks of a size that no file has (its own next file was
  // refused) and whose words two splitting threads shared.
  using G = ccf::growing_cuckoo_filter<u64>;
  const G f(100003, 1e-3);
  ASSERT_EQ(f.chunks(), 1u);
  const std::vector<std::byte> good = f.to_bytes();
  constexpr std::size_t keeps_at = 80 + 3 * 8;  // header, target, max_doublings, doublings
  ASSERT_EQ(ccf::detail::get_le(reinterpret_cast<const unsigned char*>(&good[keeps_at]), 8), 1u);
  std::vector<std::byte> bad = good;
  ccf::detail::put_le(reinterpret_cast<unsigned char*>(&bad[keeps_at]), 0, 8);
  EXPECT_THROW(G{resealed(std::move(bad))}, ccf::format_error);
  EXPECT_NO_THROW(G{resealed(good)}) << "the forging itself is sound";
}

TEST(growing_filter, a_file_whose_kept_hashes_are_not_its_tables_is_refused) {
  // A small filter's file keeps its items' hashes, from which a doubling rebuilds the table. A
  // file whose hashes are other items' (its checksum made right) loaded, and the doubling after
  // it lost every item the table had answered for.
  using G = ccf::growing_cuckoo_filter<u64>;
  const G f = small_filled_filter();
  const std::vector<std::byte> good = f.to_bytes();
  auto word = [](const std::vector<std::byte>& b, std::size_t at) {
    return ccf::detail::get_le(reinterpret_cast<const unsigned char*>(&b[at]), 8);
  };
  const std::size_t words = word(good, 56), kept = word(good, 80 + 4 * 8);
  ASSERT_EQ(kept, 500u);
  const std::size_t first = 80 + 8 * (words - kept);  // the kept hashes end the body
  auto forged = [&](auto&& hash_at) {
    std::vector<std::byte> bad = good;
    std::vector<std::uint64_t> hashes(kept);
    for (std::size_t i = 0; i < kept; ++i)
      hashes[i] = hash_at(i);
    std::sort(hashes.begin(), hashes.end());
    for (std::size_t i = 0; i < kept; ++i)
      ccf::detail::put_le(reinterpret_cast<unsigned char*>(&bad[first + 8 * i]), hashes[i], 8);
    return resealed(std::move(bad));
  };
  // The same hashes, resealed, load: the forging itself is sound.
  EXPECT_NO_THROW(G{forged([&](std::size_t i) { return f.hash_of(present(i)); })});
  // Other items' hashes; and one item's hash twice, in place of another's.
  EXPECT_THROW(G{forged([&](std::size_t i) { return f.hash_of(present(i + 1000000)); })},
               ccf::format_error);
  EXPECT_THROW(G{forged([&](std::size_t i) { return f.hash_of(present(i == 0 ? 1 : i)); })},
               ccf::format_error);
}

TEST(growing_filter, a_file_keeping_fewer_hashes_than_items_is_refused_naming_that) {
  // The message said "it says 500 items, its table holds 500 entries": no mismatch at all.
  using G = ccf::growing_cuckoo_filter<u64>;
  const std::vector<std::byte> good = small_filled_filter().to_bytes();
  auto word = [](const std::vector<std::byte>& b, std::size_t at) {
    return ccf::detail::get_le(reinterpret_cast<const unsigned char*>(&b[at]), 8);
  };
  auto put = [](std::vector<std::byte>& b, std::size_t at, std::uint64_t v) {
    ccf::detail::put_le(reinterpret_cast<unsigned char*>(&b[at]), v, 8);
  };
  constexpr std::size_t words_at = 56, kept_at = 80 + 4 * 8;
  const std::size_t words = word(good, words_at), kept = word(good, kept_at);
  ASSERT_EQ(kept, 500u);
  // One kept hash fewer: the last one goes, and the body is a word shorter.
  std::vector<std::byte> bad = good;
  const std::size_t last = 80 + 8 * (words - 1);
  bad.erase(bad.begin() + static_cast<std::ptrdiff_t>(last),
            bad.begin() + static_cast<std::ptrdiff_t>(last + 8));
  put(bad, words_at, words - 1);
  put(bad, kept_at, kept - 1);
  try {
    const G loaded{resealed(std::move(bad))};
    ADD_FAILURE() << "a file keeping 499 hashes of 500 items loaded";
  } catch (const ccf::format_error& e) {
    EXPECT_NE(std::string(e.what()).find("says 500 items, it keeps 499 hashes"), std::string::npos)
        << e.what();
  }
}

// ---- the runtime filter's growing filters ----

TEST(growing_filter, the_runtime_filter_builds_loads_and_grows_them) {
  for (ccf::filter_kind kind : {ccf::filter_kind::sequential, ccf::filter_kind::concurrent}) {
    ccf::runtime_filter f(ccf::filter_config::growing_for_rate(100, 1e-4, kind));
    EXPECT_TRUE(f.growing());
    std::vector<std::string> keys;
    for (std::size_t i = 0; i < 200000; ++i)
      keys.push_back("key-" + std::to_string(i));
    const std::vector<std::string_view> views(keys.begin(), keys.end());
    const ccf::bulk_result r = f.bulk_insert(views, 2, false);
    EXPECT_EQ(r.inserted, keys.size());
    EXPECT_EQ(r.refused, 0u);
    EXPECT_EQ(f.size(), keys.size());
    EXPECT_GT(f.doublings(), 5u);
    EXPECT_LE(f.expected_fpr(), 1e-4);
    for (const std::string& k : keys) {
      ASSERT_EQ(f.hash_of(k), ccf::runtime_filter::key_hash(k, f.seed()));
      ASSERT_TRUE(f.contains(k));
    }
    const std::vector<std::byte> bytes = f.to_bytes();
    const ccf::runtime_filter g = ccf::runtime_filter::load(bytes, kind);
    EXPECT_TRUE(g.growing());
    EXPECT_EQ(g.size(), f.size());
    EXPECT_EQ(g.doublings(), f.doublings());
    for (const std::string& k : keys)
      ASSERT_TRUE(g.contains(k));
    // The typed growing filter over string keys reads the same file.
    ccf::growing_cuckoo_filter<std::string_view> typed(bytes);
    EXPECT_TRUE(typed.contains(keys[0]));
    EXPECT_THROW(ccf::runtime_filter::load(bytes, ccf::filter_kind::lockfree),
                 std::invalid_argument);
  }
  EXPECT_THROW(ccf::runtime_filter(
                   ccf::filter_config::growing_for_rate(100, 1e-3, ccf::filter_kind::lockfree)),
               std::invalid_argument);
}

// ---- concurrency ----

TEST(concurrent_growing_filter, a_bulk_insert_skipping_present_keys_stores_each_key_once) {
  // Each worker took a range of the items: two copies of a key in two ranges could both find it
  // absent, and both went in (5 to 9 keys of 200,000 stored twice in each run, on two threads).
  const std::size_t n = static_cast<std::size_t>(200000 * std::min(1.0, test_scale())) + 20000;
  std::vector<u64> keys(2 * n);
  for (std::size_t i = 0; i < n; ++i)
    keys[i] = keys[n + i] = present(i);
  for (const unsigned threads : {2U, 3U}) {
    // At 1e-7, no key is skipped as a false positive of another (0.02 expected).
    ccf::concurrent_growing_cuckoo_filter<u64> f(1000, 1e-7);
    const ccf::bulk_result r = f.bulk_insert(std::span<const u64>(keys), threads, true);
    EXPECT_EQ(r.inserted, n) << threads << " threads";
    EXPECT_EQ(r.duplicates, n);
    EXPECT_EQ(f.size(), n);
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_TRUE(f.erase(present(i))) << i;
    EXPECT_EQ(f.size(), 0u) << "keys stored twice";
  }
}

/// Writers insert keys while readers look up keys whose insert has returned (published through
/// `done`): through every doubling, none is ever missed.
TEST(concurrent_growing_filter, lookups_racing_growth_never_miss_an_item) {
  const std::size_t per_writer = static_cast<std::size_t>(300000 * test_scale()) + 1000;
  const int writers = 2, readers = 2;
  ccf::concurrent_growing_cuckoo_filter<u64> f(100, 1e-3);
  std::vector<std::atomic<std::size_t>> done(writers);
  std::atomic<std::size_t> misses{0}, checks{0};
  std::atomic<int> writing{writers};
  ccf_test::run_threads(writers + readers, [&](int t) {
    if (t < writers) {
      for (std::size_t i = 0; i < per_writer; ++i) {
        f.insert(present(i * writers + static_cast<std::size_t>(t)));
        done[static_cast<std::size_t>(t)].store(i + 1, std::memory_order_release);
      }
      writing.fetch_sub(1);
      return;
    }
    std::uint64_t x = static_cast<std::uint64_t>(t) * 0x9e3779b97f4a7c15ULL;
    while (writing.load() > 0) {
      for (int w = 0; w < writers; ++w) {
        const std::size_t upto = done[static_cast<std::size_t>(w)].load(std::memory_order_acquire);
        if (upto == 0) continue;
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        const std::size_t i = static_cast<std::size_t>(x >> 33) % upto;
        if (!f.contains(present(i * writers + static_cast<std::size_t>(w)))) misses.fetch_add(1);
        checks.fetch_add(1, std::memory_order_relaxed);
      }
    }
  });
  EXPECT_EQ(misses.load(), 0u) << "lookups missed inserted items during growth";
  EXPECT_GT(checks.load(), 1000u);
  EXPECT_GT(f.doublings(), 8u);
  EXPECT_EQ(f.size(), per_writer * writers);
  for (std::size_t i = 0; i < per_writer * writers; ++i)
    ASSERT_TRUE(f.contains(present(i)));
}

/// While the table is small an insert puts its hash among the kept ones before its entry into
/// the table. An erase of the same key racing it took the hash out, found no entry yet and
/// answered false; the entry then stayed without its hash, and the next doubling, which rebuilds
/// the table from the kept hashes, dropped the key (a false negative for a key not erased).
TEST(concurrent_growing_filter, an_erase_racing_an_insert_of_its_key_keeps_the_key_through_growth) {
  const std::size_t n = 10000;
  for (int round = 0; round < 12; ++round) {
    ccf::concurrent_growing_cuckoo_filter<u64> f(2 * n, 1e-3);
    std::vector<char> erased(n, 0);
    std::atomic<std::size_t> inserted{0};
    ccf_test::run_threads(2, [&](int t) {
      for (std::size_t i = 0; i < n; ++i) {
        if (t == 0) {
          f.insert(present(i));
          inserted.store(i + 1, std::memory_order_release);
        } else {
          for (int spins = 0; inserted.load(std::memory_order_acquire) < i; ++spins) {
            if (spins > 64) std::this_thread::yield();  // more threads than cores: let it run
          }
          erased[i] = f.erase(present(i)) ? 1 : 0;  // right as (or just after) it goes in
        }
      }
    });
    std::size_t kept = 0;
    for (const char e : erased)
      kept += e == 0 ? 1 : 0;
    EXPECT_EQ(f.size(), kept);
    const unsigned doublings = f.doublings();
    for (std::size_t i = 0; f.doublings() == doublings; ++i)
      ASSERT_TRUE(f.insert(absent(i)));
    for (std::size_t i = 0; i < n; ++i) {
      if (erased[i] == 0) {
        ASSERT_TRUE(f.contains(present(i))) << "round " << round << ": " << i;
      }
    }
  }
}

/// Inserts, erases and lookups of disjoint keys on several threads, with saves in between.
TEST(concurrent_growing_filter, mixed_operations_and_saves_keep_every_item) {
  const std::size_t per_thread = static_cast<std::size_t>(100000 * test_scale()) + 500;
  const int threads = 3;
  ccf::concurrent_growing_cuckoo_filter<u64> f(200, 1e-3);
  std::atomic<std::size_t> errors{0};
  std::vector<std::byte> snapshot;
  ccf_test::run_threads(threads + 1, [&](int t) {
    if (t == threads) {
      for (int k = 0; k < 5; ++k) {
        snapshot = f.to_bytes();  // a consistent file while others write
        ccf::concurrent_growing_cuckoo_filter<u64> copy(snapshot);
        if (copy.size() > per_thread * threads) errors.fetch_add(1);
      }
      return;
    }
    const std::size_t base = per_thread * static_cast<std::size_t>(t);
    for (std::size_t i = 0; i < per_thread; ++i) {
      f.insert(present(base + i));
      if (i % 4 == 3 && !f.erase(present(base + i - 1))) errors.fetch_add(1);
      if (!f.contains(present(base + i))) errors.fetch_add(1);
    }
  });
  EXPECT_EQ(errors.load(), 0u);
  EXPECT_EQ(f.size(), threads * (per_thread - per_thread / 4));
  for (int t = 0; t < threads; ++t) {
    for (std::size_t i = 0; i < per_thread; ++i) {
      if (i % 4 == 2 && i + 1 < per_thread) continue;  // erased
      ASSERT_TRUE(f.contains(present(per_thread * static_cast<std::size_t>(t) + i)))
          << t << " " << i;
    }
  }
}

}  // namespace
