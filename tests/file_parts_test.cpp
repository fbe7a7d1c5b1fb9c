// Parts of a filter's file (read_bytes, which CF.SCANDUMP serves): for every kind of filter and
// every tag packing the lock-free layout has, bytes [offset, offset + len) equal those of
// to_bytes(), across the header, the table's words, a growing filter's prefix and kept hashes, and
// the trailer, and past the end; the file's size comes back with every part. A part before the
// trailer is made from the words it covers alone (window_writer), one that reaches the trailer
// from the whole file.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "ccf/concurrent_cuckoo_filter.hpp"
#include "ccf/cuckoo_filter.hpp"
#include "ccf/growing_cuckoo_filter.hpp"
#include "ccf/lockfree_cuckoo_filter.hpp"
#include "ccf/runtime_filter.hpp"

namespace {

using u64 = std::uint64_t;

/// The offsets and lengths a part is checked at: around the header, the words, the trailer and
/// the end, and spread over the table.
std::vector<u64> offsets_for(u64 size) {
  std::vector<u64> at = {0, 1, 7, 79, 80, 81, 87, 88, 100, 123};
  for (u64 k = 1; k < 40; ++k)
    at.push_back(size * k / 40 + k % 8);
  for (u64 back : {40u, 24u, 17u, 16u, 15u, 9u, 8u, 1u})
    at.push_back(size - back);
  for (u64 past : {0u, 1u, 1000u})
    at.push_back(size + past);
  at.push_back(std::numeric_limits<u64>::max());
  return at;
}

template <class F>
void expect_every_part_is_the_file_s(const F& f) {
  const std::vector<std::byte> file = f.to_bytes();
  const u64 size = file.size();
  const u64 lengths[] = {0, 1, 7, 8, 9, 64, 1000, 8193, size / 3, size, ~u64{0}};
  std::vector<std::byte> part = {std::byte{1}};  // replaced, not appended to
  for (u64 offset : offsets_for(size)) {
    for (u64 len : lengths) {
      SCOPED_TRACE(testing::Message()
                   << "offset " << offset << ", len " << len << ", size " << size);
      ASSERT_EQ(f.read_bytes(offset, len, part), size);
      const u64 from = std::min(offset, size);
      const u64 to = from + std::min(len, size - from);
      ASSERT_EQ(part.size(), to - from);
      ASSERT_TRUE(std::equal(part.begin(), part.end(), file.begin() + static_cast<long>(from)));
    }
  }
}

template <class F>
F filled(std::size_t capacity, double fill) {
  F f(capacity);
  const auto n = static_cast<u64>(static_cast<double>(capacity) * fill);
  for (u64 k = 0; k < n; ++k)
    f.insert(k * 0x9e3779b97f4a7c15ULL);
  return f;
}

TEST(file_parts, static_filters_of_every_packing) {
  expect_every_part_is_the_file_s(filled<ccf::cuckoo_filter<u64, 12, 4>>(20000, 0.9));
  expect_every_part_is_the_file_s(filled<ccf::cuckoo_filter<u64, 16, 8>>(20000, 0.9));
  expect_every_part_is_the_file_s(filled<ccf::cuckoo_filter<u64, 8, 2>>(20000, 0.9));
  expect_every_part_is_the_file_s(filled<ccf::cuckoo_filter<u64, 4, 8>>(20000, 0.9));
  expect_every_part_is_the_file_s(filled<ccf::cuckoo_filter<u64, 32, 2>>(5000, 0.9));
  expect_every_part_is_the_file_s(filled<ccf::concurrent_cuckoo_filter<u64, 12, 4>>(20000, 0.9));
}

// The lock-free table holds a bucket a word and is packed on saving: a part starts packing at a
// bucket that begins a word, every lcm(64, bucket bits) bits (1, 3, 5 and 7 words here).
TEST(file_parts, lock_free_filters_whose_buckets_and_words_align_every_few_words) {
  expect_every_part_is_the_file_s(filled<ccf::lockfree_cuckoo_filter<u64, 8, 4>>(20000, 0.9));
  expect_every_part_is_the_file_s(filled<ccf::lockfree_cuckoo_filter<u64, 12, 4>>(20000, 0.9));
  expect_every_part_is_the_file_s(filled<ccf::lockfree_cuckoo_filter<u64, 10, 4>>(20000, 0.9));
  expect_every_part_is_the_file_s(filled<ccf::lockfree_cuckoo_filter<u64, 7, 4>>(20000, 0.9));
  expect_every_part_is_the_file_s(filled<ccf::lockfree_cuckoo_filter<u64, 6, 8>>(3001, 0.5));
}

// A small growing filter's file holds its items' hashes after the table; a large one's none.
TEST(file_parts, growing_filters_with_and_without_kept_hashes) {
  ccf::growing_cuckoo_filter<u64> small(1000, 1e-3), large(300000, 1e-3);
  ccf::concurrent_growing_cuckoo_filter<u64> concurrent(1000, 1e-2);
  for (u64 k = 0; k < 6000; ++k) {
    small.insert(k);
    concurrent.insert(k);
  }
  for (u64 k = 0; k < 40000; ++k)
    large.insert(k);
  ASSERT_GT(small.doublings(), 0u);
  // The prefix's fifth word counts the kept hashes.
  const auto kept = [](const auto& f) {
    const std::vector<std::byte> file = f.to_bytes();
    u64 n = 0;
    for (int i = 7; i >= 0; --i)
      n = n << 8 | std::to_integer<u64>(file[80 + 4 * 8 + i]);
    return n;
  };
  ASSERT_EQ(kept(small), 6000u);
  ASSERT_EQ(kept(large), 0u);
  expect_every_part_is_the_file_s(small);
  expect_every_part_is_the_file_s(large);
  expect_every_part_is_the_file_s(concurrent);
  expect_every_part_is_the_file_s(ccf::growing_cuckoo_filter<u64>(10, 0.1));
}

// The runtime filter (what the Redis module and the tool hold) passes parts through its model.
TEST(file_parts, runtime_filters_of_both_kinds) {
  ccf::runtime_filter fixed(ccf::filter_config::for_rate(20000, 0.01));
  ccf::runtime_filter growing(ccf::filter_config::growing_for_rate(1000, 0.01));
  for (int k = 0; k < 15000; ++k) {
    const std::string key = std::to_string(k * 7919);
    ASSERT_TRUE(fixed.insert(key));
    ASSERT_TRUE(growing.insert(key));
  }
  expect_every_part_is_the_file_s(fixed);
  expect_every_part_is_the_file_s(growing);
}

// Parts are snapshots taken while other threads insert: each has the length the file it was cut
// from gives it (a growing filter's doubles meanwhile), and once the writers stop, every part is
// the file's and no item is lost.
template <class F>
void insert_while_taking_parts(F& f, u64 per_thread) {
  std::atomic<int> running{2};
  std::vector<std::thread> writers;
  for (u64 t = 0; t < 2; ++t) {
    writers.emplace_back([&f, &running, t, per_thread] {
      for (u64 k = 0; k < per_thread; ++k)
        f.insert(t << 32 | k);
      running.fetch_sub(1);
    });
  }
  std::vector<std::byte> part;
  for (int round = 0; round < 2000 && running.load() > 0; ++round) {
    const u64 offset = static_cast<u64>(round) * 977 % 20000, len = 4096;
    const u64 size = f.read_bytes(offset, len, part);
    ASSERT_EQ(part.size(), std::min(len, size - std::min(offset, size)));
  }
  for (auto& w : writers)
    w.join();
  expect_every_part_is_the_file_s(f);
  for (u64 t = 0; t < 2; ++t)
    for (u64 k = 0; k < per_thread; ++k)
      ASSERT_TRUE(f.contains(t << 32 | k)) << t << " " << k;
}

TEST(file_parts, parts_taken_while_other_threads_insert) {
  ccf::concurrent_cuckoo_filter<u64, 12, 4> locked(40000);
  insert_while_taking_parts(locked, 18000);
  ccf::lockfree_cuckoo_filter<u64, 12, 4> lockfree(40000);
  insert_while_taking_parts(lockfree, 18000);
  ccf::concurrent_growing_cuckoo_filter<u64> growing(1000, 1e-3);
  insert_while_taking_parts(growing, 18000);
}

}  // namespace
