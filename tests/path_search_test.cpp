// The path search and what makes it fast: both search modes find the path a plain breadth-first
// search finds, within max_kicks; the chunk of a bucket computed by multiplication equals the
// one computed by division; the striped lock policy's stripes are runs of consecutive buckets.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <random>
#include <vector>

#include <ccf/cuckoo_filter.hpp>
#include <ccf/detail/cuckoo_path.hpp>
#include <ccf/detail/indexer.hpp>
#include <ccf/detail/striped_locking.hpp>

#include "filter_types.hpp"

namespace ccf_test {
namespace {

using ccf::detail::cuckoo_indexer;
using ccf::detail::search_mode;

// ---- chunk_base ----

void expect_chunk_base_divides(std::size_t chunks, std::size_t chunk_size, std::uint64_t seed) {
  const cuckoo_indexer<16> ix(chunks, chunk_size);
  const std::size_t n = chunks * chunk_size;
  auto expect = [&](std::size_t i) {
    ASSERT_EQ(ix.chunk_base(i), i - i % chunk_size)
        << "bucket " << i << " of " << chunks << " chunks of " << chunk_size;
  };
  std::mt19937_64 rng(seed);
  for (int k = 0; k < 20000; ++k) {
    const std::size_t c = rng() % chunks;
    expect(c * chunk_size);                   // the first bucket of a chunk
    expect(c * chunk_size + chunk_size - 1);  // the last
    expect(rng() % n);
  }
  expect(n - 1);
}

TEST(chunk_base, multiplying_by_the_reciprocal_equals_dividing) {
  // Chunk sizes the planner makes (multiples of 64, powers of two or not) and others.
  for (const std::size_t c : {64u, 192u, 4096u, 65472u, 131008u, 131072u, 262144u, 100003u}) {
    for (const std::size_t m : {std::size_t{2}, std::size_t{3}, std::size_t{512},
                                std::size_t{1} << 20, std::size_t{1} << 26}) {
      expect_chunk_base_divides(m, c, m * 31 + c);
    }
  }
}

TEST(chunk_base, the_largest_tables_with_a_reciprocal_and_beyond_it) {
  // i * C < 2^64 for every bucket i: m * C * C < 2^64. At the limit, and past it (where the
  // indexer divides instead).
  const std::size_t c = 131072;                                 // 2^17
  expect_chunk_base_divides((std::size_t{1} << 30) - 1, c, 1);  // m C^2 just below 2^64
  expect_chunk_base_divides(std::size_t{1} << 30, c, 2);        // m C^2 = 2^64: divides
  expect_chunk_base_divides(std::size_t{1} << 40, 4099, 3);
}

// ---- the path search ----

using filter = ccf::cuckoo_filter<u64, 16, 4>;
struct open_filter : filter {
  using filter::engine;
  using filter::filter;
};
using layout = ccf::detail::packed_tag_layout<16, 4>;
using path = ccf::detail::cuckoo_path<std::uint32_t, 4>;

struct step {
  std::size_t bucket;
  std::uint32_t slot;
  std::uint32_t value;
  bool operator==(const step&) const = default;
};

/// The path ending at node `leaf` of q, from the root on (a root's slot and value are 0).
std::vector<step> path_of(const path::queue& q, std::size_t leaf) {
  std::vector<step> steps;
  std::size_t n = leaf;
  for (; n >= path::roots; n = path::parent(n))
    steps.insert(steps.begin(), step{q[n].bucket, path::slot_of(n), q[n].value});
  steps.insert(steps.begin(), step{q[n].bucket, 0, 0});
  return steps;
}

/// A plain breadth-first search, one node at a time, with the same limit: the first queued bucket
/// (in breadth-first order, children in slot order) that has a free slot, skipping items whose
/// two buckets coincide. i1 and i2 are both roots, the same bucket twice when they coincide (as in
/// the engine's search). Returns the path to it, or nothing.
std::vector<step> reference_search(const open_filter& f, std::size_t i1, std::size_t i2,
                                   std::size_t max_kicks) {
  const auto& table = f.engine().table();
  const auto& ix = f.engine().indexer();
  struct node {
    std::size_t bucket, parent;
    std::uint32_t slot, value;
  };
  std::vector<node> q{{i1, SIZE_MAX, 0, 0}, {i2, SIZE_MAX, 0, 0}};
  const std::size_t roots = q.size(), limit = max_kicks + 2;
  for (std::size_t h = 0; h < q.size(); ++h) {
    // A node whose item would stay in its bucket is queued (and expanded) but never taken.
    if (h >= roots && q[h].bucket != q[q[h].parent].bucket &&
        layout::free(table.load(q[h].bucket)).any()) {
      std::vector<step> steps;
      for (std::size_t n = h; n != SIZE_MAX; n = q[n].parent)
        steps.insert(steps.begin(), step{q[n].bucket, q[n].slot, q[n].value});
      return steps;
    }
    if (q.size() + layout::slots > limit) continue;
    const auto b = table.load(q[h].bucket);
    for (unsigned s = 0; s < layout::slots; ++s) {
      const std::uint32_t v = layout::get(b, s);
      q.push_back({ix.alt(q[h].bucket, v), h, s, v});
    }
  }
  return {};
}

void compare_searches(double load, std::size_t max_kicks, std::uint64_t seed) {
  open_filter f(std::size_t{1} << 16);
  const auto n = static_cast<std::size_t>(load * static_cast<double>(f.size_in_tags()));
  std::size_t inserted = 0;
  for (std::size_t i = 0; i < n; ++i)
    inserted += f.insert(key_of(i, seed)) ? 1 : 0;
  ASSERT_GT(inserted, n * 99 / 100);
  const auto& e = f.engine();
  path::queue& q = path::scratch();
  std::size_t searched = 0, found = 0;
  for (std::size_t k = 0; searched < 2000 && k < 1000000; ++k) {
    const ccf::detail::position p = f.locate_hash(ccf::mix64(k ^ (seed << 32) ^ 0x5a5a));
    if (layout::free(e.table().load(p.i1)).any() || layout::free(e.table().load(p.i2)).any()) {
      continue;  // the caller searches only when both buckets are full
    }
    ++searched;
    const std::size_t base = e.indexer().chunk_base(p.i1);
    const std::vector<step> want = reference_search(f, p.i1, p.i2, max_kicks);
    const std::size_t ahead = path::search<layout, search_mode::ahead>(
        q, p.i1, p.i2, base, max_kicks, e.table(), e.indexer());
    const std::vector<step> got_ahead =
        ahead == path::none ? std::vector<step>{} : path_of(q, ahead);
    const std::size_t cached = path::search<layout, search_mode::cached>(
        q, p.i1, p.i2, base, max_kicks, e.table(), e.indexer());
    const std::vector<step> got_cached =
        cached == path::none ? std::vector<step>{} : path_of(q, cached);
    ASSERT_EQ(got_ahead, want) << "load " << load << " key " << k;
    ASSERT_EQ(got_cached, want) << "load " << load << " key " << k;
    if (!want.empty()) {
      ++found;
      ASSERT_LE(cached, max_kicks + 2);
      EXPECT_TRUE(layout::free(e.table().load(want.back().bucket)).any());
    }
  }
  EXPECT_GT(searched, 100u);
  if (max_kicks >= 500) {
    // Up to 95 % every search finds a path within 500 buckets; past it, most do.
    if (load <= 0.95) {
      EXPECT_EQ(found, searched) << "load " << load;
    }
    EXPECT_GE(found * 10, searched * 9) << "load " << load;
  }
}

TEST(path_search, both_modes_find_the_breadth_first_path_near_full) {
  for (const double load : {0.90, 0.95, 0.97})
    compare_searches(load, 500, 7);
}

TEST(path_search, both_modes_stop_at_max_kicks_as_the_plain_search_does) {
  for (const std::size_t kicks : {4u, 6u, 10u, 37u})
    compare_searches(0.97, kicks, kicks);
}

// ---- stripes ----

TEST(striped_locking, stripes_are_runs_of_consecutive_buckets_at_most_2_to_the_14) {
  for (const std::size_t n : {std::size_t{1}, std::size_t{1000}, std::size_t{1} << 14,
                              (std::size_t{1} << 14) + 1, std::size_t{66453504}}) {
    for (const std::size_t group : {1u, 2u, 8u}) {
      const ccf::detail::striped_locking locks(n, group);
      ASSERT_LE(locks.stripes(), ccf::detail::striped_locking::max_stripes);
      ASSERT_EQ(locks.stripe_of(0), 0u);
      ASSERT_EQ(locks.stripe_of(n - 1), locks.stripes() - 1) << n << " " << group;
      std::size_t previous = 0;
      for (std::size_t i = 0; i < n; i += 1 + i / 64) {
        const std::size_t s = locks.stripe_of(i);
        ASSERT_GE(s, previous);  // runs: never back to an earlier stripe
        ASSERT_LE(s, previous + 1 + i / 64);
        ASSERT_EQ(locks.stripe_of(i - i % group), s) << "a word group shares one stripe";
        previous = s;
      }
    }
  }
}

TEST(striped_locking, neighbouring_chunks_of_a_large_table_share_at_most_one_stripe) {
  const filter f(std::size_t{1} << 26);  // 2^26 items: hundreds of chunks
  const std::size_t c = f.num_buckets() / f.chunks();
  const ccf::detail::striped_locking locks(f.num_buckets(), 1);
  for (std::size_t k = 1; k < f.chunks(); ++k) {
    EXPECT_LE(locks.stripe_of(k * c) - locks.stripe_of(k * c - 1), 1u);
    EXPECT_GT(locks.stripe_of(k * c + c - 1), locks.stripe_of(k * c - 1));
  }
}

}  // namespace
}  // namespace ccf_test
