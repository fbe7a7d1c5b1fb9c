// ccf::table_allocator: alignment, zeroed blocks (large ones are mappings of their own that read
// as zero until written), and tables that start empty whatever their allocator hands out.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include <ccf/ccf.hpp>

#include "test_allocator.hpp"

namespace {

using u64 = std::uint64_t;
namespace cd = ccf::detail;

constexpr std::size_t mib = std::size_t{1} << 20;

bool all_zero(const u64* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

std::uintptr_t address(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p);
}

TEST(table_allocator,
     small_blocks_are_cache_line_aligned_and_allocate_zeroed_clears_reused_memory) {
  ccf::table_allocator<u64> a;
  for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{1000}, mib / 8}) {
    // Each block is dirtied and given back before the next is asked for: the C library hands
    // out the same memory again sooner or later.
    std::size_t dirty_seen = 0;
    for (int round = 0; round < 32; ++round) {
      u64* p = a.allocate_zeroed(n);
      EXPECT_EQ(address(p) % ccf::cache_line_size, 0u) << n;
      dirty_seen += all_zero(p, n) ? 0 : 1;
      std::memset(static_cast<void*>(p), 0xAB, n * sizeof(u64));
      a.deallocate(p, n);
    }
    EXPECT_EQ(dirty_seen, 0u) << n;
  }
}

TEST(table_allocator, large_blocks_are_huge_page_aligned_zero_and_fresh_each_time) {
  ccf::table_allocator<u64> a;
  // 16 MiB and an odd size past the 8 MiB threshold; each round dirties every word of its block
  // before giving it back, so a reused block would not read as zero.
  for (std::size_t bytes : {16 * mib, 8 * mib + 24, 40 * mib - 8}) {
    const std::size_t n = bytes / sizeof(u64);
    for (int round = 0; round < 3; ++round) {
      u64* p = a.allocate_zeroed(n);
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(address(p) % (2 * mib), 0u) << bytes;
      EXPECT_TRUE(all_zero(p, n)) << bytes << " round " << round;
      std::memset(static_cast<void*>(p), 0xCD, n * sizeof(u64));
      EXPECT_EQ(p[0], 0xCDCDCDCDCDCDCDCDull);
      EXPECT_EQ(p[n - 1], 0xCDCDCDCDCDCDCDCDull);
      a.deallocate(p, n);
    }
  }
  // allocate() gives the same kind of block; a vector over it works as any other.
  std::vector<u64, ccf::table_allocator<u64>> v(3 * mib, 7);
  EXPECT_EQ(address(v.data()) % (2 * mib), 0u);
  EXPECT_EQ(v.front(), 7u);
  EXPECT_EQ(v.back(), 7u);
}

/// Hands out blocks full of 0xFF bytes: a table over it must zero its words itself.
template <class T>
struct dirty_allocator {
  using value_type = T;
  dirty_allocator() = default;
  template <class U>
  dirty_allocator(const dirty_allocator<U>&) noexcept {}  // NOLINT: rebinding
  T* allocate(std::size_t n) {
    T* p = std::allocator<T>().allocate(n);
    std::memset(static_cast<void*>(p), 0xFF, n * sizeof(T));
    return p;
  }
  void deallocate(T* p, std::size_t n) noexcept { std::allocator<T>().deallocate(p, n); }
  template <class U>
  bool operator==(const dirty_allocator<U>&) const noexcept {
    return true;
  }
};

TEST(table_allocator, copy_assignment_keeps_the_target_s_allocator) {
  // The copy was made with the source's allocator and swapped in: the target's table then lived
  // in the source's memory (an arena or an accounting allocator counted it wrongly).
  using alloc = ccf_test::arena_allocator<u64>;
  using filter = ccf::cuckoo_filter<u64, 16, 4, ccf::hash<u64>, ccf::chunked_alternate, alloc>;
  auto in_a = std::make_shared<ccf_test::test_arena>(),
       in_b = std::make_shared<ccf_test::test_arena>();
  filter a(1000, ccf::default_seed, 500, alloc(in_a));
  filter b(50, 7, 500, alloc(in_b));
  for (u64 k = 0; k < 900; ++k)
    ASSERT_TRUE(a.insert(k));
  const long a_blocks = in_a->live, b_blocks = in_b->live;
  ASSERT_GT(b_blocks, 0);
  b = a;
  EXPECT_EQ(in_a->live, a_blocks) << "the copy's table came from the source's allocator";
  EXPECT_EQ(in_b->live, b_blocks);
  EXPECT_EQ(b.size(), 900u);
  for (u64 k = 0; k < 900; ++k)
    ASSERT_TRUE(b.contains(k)) << k;
}

TEST(table_allocator, move_assignment_takes_the_source_s_table_and_allocator) {
  // docs/design.md: a move stays noexcept, so it takes the source's table as it is (the
  // arena allocator does not propagate on move assignment); the target's old table goes back to
  // the target's allocator, and the moved-from filter's small table comes from the source's.
  using alloc = ccf_test::arena_allocator<u64>;
  using filter = ccf::cuckoo_filter<u64, 16, 4, ccf::hash<u64>, ccf::chunked_alternate, alloc>;
  static_assert(std::is_nothrow_move_assignable_v<filter>);
  auto in_a = std::make_shared<ccf_test::test_arena>(),
       in_b = std::make_shared<ccf_test::test_arena>();
  filter a(1000, ccf::default_seed, 500, alloc(in_a));
  filter b(50, 7, 500, alloc(in_b));
  for (u64 k = 0; k < 900; ++k)
    ASSERT_TRUE(a.insert(k));
  const long a_blocks = in_a->live;
  ASSERT_GT(in_b->live, 0);
  b = std::move(a);
  EXPECT_EQ(in_b->live, 0) << "the target's old table was not given back to its allocator";
  EXPECT_EQ(in_a->live, 2 * a_blocks) << "the moved table and the moved-from filter's table";
  EXPECT_EQ(b.size(), 900u);
  for (u64 k = 0; k < 900; ++k)
    ASSERT_TRUE(b.contains(k)) << k;
  EXPECT_EQ(a.size(), 0u);
  EXPECT_FALSE(a.contains(1));
  EXPECT_TRUE(a.insert(1));
}

TEST(table_allocator, tables_start_empty_with_any_allocator_small_or_large) {
  using layout = cd::packed_tag_layout<16, 4>;
  for (std::size_t n : {std::size_t{3}, std::size_t{1000}, std::size_t{3} << 20}) {
    cd::bucket_table<layout, cd::plain_words, dirty_allocator<u64>> dirty(n, {});
    cd::bucket_table<layout, cd::plain_words, ccf::table_allocator<u64>> mapped(n, {});
    ASSERT_EQ(dirty.words().size(), mapped.words().size());
    EXPECT_TRUE(all_zero(dirty.words().data(), dirty.words().size())) << n;
    EXPECT_TRUE(all_zero(mapped.words().data(), mapped.words().size())) << n;
    EXPECT_EQ(address(mapped.words().data()) % ccf::cache_line_size, 0u);
  }
}

TEST(table_allocator, a_large_filter_starts_empty_fills_copies_and_clears) {
  // 2^21 buckets of 16-bit x 4: a 16 MiB table, allocated as fresh pages.
  ccf::cuckoo_filter<u64, 16, 4> f(std::size_t{1} << 23);
  ASSERT_GE(f.size_in_bytes(), 8 * mib);
  EXPECT_EQ(f.size(), 0u);
  std::size_t found = 0;
  for (u64 k = 0; k < 100000; ++k)
    found += f.contains(k) ? 1 : 0;
  EXPECT_EQ(found, 0u);  // an empty table answers no to everything
  const std::size_t n = f.size_in_tags() * 9 / 10;
  std::vector<u64> keys(n);
  for (std::size_t i = 0; i < n; ++i)
    keys[i] = i * 0x9E3779B97F4A7C15ull + 1;
  ASSERT_EQ(f.insert_many(keys), n);
  const ccf::cuckoo_filter<u64, 16, 4> copy = f;
  f.clear();
  EXPECT_EQ(f.size(), 0u);
  EXPECT_EQ(copy.size(), n);
  EXPECT_EQ(copy.contains_many(keys), n);
  std::size_t left = 0;
  for (std::size_t i = 0; i < n; i += 97)
    left += f.contains(keys[i]) ? 1 : 0;
  EXPECT_EQ(left, 0u);
}

}  // namespace
