// ccf — concurrent cuckoo filters.
// detail/sizing.hpp: how many buckets a filter of a given capacity gets, and the checks on it.
//
// A filter built for `capacity` items gets ceil(capacity / (slots * design_load)) buckets plus 1 %
// and 8 buckets of slack (the slack matters only for small tables, where the load a cuckoo table
// reaches varies more). design_load sits below the load that partial-key cuckoo hashing with ccf's
// breadth-first kick search reaches (about 87 / 96 / 99 % for 2 / 4 / 8 slots), so `capacity`
// distinct items fit — for 4-bit fingerprints, whose 15 tags let 2 * slots + 1 items share one
// bucket pair and tag, in about 99 tables in 100 (the overflow rule below). With 4 or 8 slots the
// table costs at most f / 0.94 * 1.02 bits per item of capacity for capacities from 10,000 up
// (8-bit and wider fingerprints). The bucket count is not rounded to a power of two. Short
// fingerprints get more buckets as the capacity grows (below).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

namespace ccf::detail {

/// The load a table is sized for. 4-bit fingerprints have only 15 tags, hence only 15 alternate
/// buckets per bucket, and reach lower loads: they get more room (with 2 slots, sized for 70 %,
/// one table in 20 to 40 refused an insert before its capacity, some below 50 %).
constexpr double design_load(unsigned slots, unsigned bits = 16) noexcept {
  if (bits <= 4) return slots <= 2 ? 0.50 : (slots <= 4 ? 0.90 : 0.95);
  return slots <= 2 ? 0.84 : (slots <= 4 ? 0.94 : 0.97);
}

/// Physical memory of this machine in bytes, or the largest size_t when unknown.
inline std::uint64_t physical_memory_bytes() noexcept {
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGE_SIZE)
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0) {
    return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
  }
#endif
  return std::numeric_limits<std::uint64_t>::max();
}

/// Every table has fewer buckets than this: every later product (buckets * slots * 32 bits, plus
/// chunk rounding) stays far from overflowing 64 bits.
inline constexpr std::size_t max_buckets = std::size_t{1} << 50;

/// Throws std::length_error unless a table of `buckets` buckets (a count computed in floating
/// point, before any cast) stays below max_buckets.
inline void check_bucket_count(double buckets, std::size_t capacity) {
  if (!(buckets < static_cast<double>(max_buckets))) {
    throw std::length_error("ccf: capacity " + std::to_string(capacity) +
                            " is too large for a cuckoo filter");
  }
}

/// Expected number of (bucket pair, tag) groups that receive more than 2 * slots items when
/// `items` items with random first buckets and random tags from 2^bits - 1 values go into
/// `buckets` buckets. All items of such a group can only live in the same two buckets, so one
/// such group makes an insert fail however empty the rest of the table is: this is what makes
/// short fingerprints (the thesis's lower bound f = Omega(log(n / b))) fail early as n grows.
inline double expected_overflowing_groups(double items, double buckets, unsigned slots,
                                          unsigned bits) noexcept {
  const double tags = std::ldexp(1.0, static_cast<int>(bits)) - 1.0;
  const double groups = buckets * tags / 2.0;
  const double lambda = items / groups;
  // Poisson tail P(X > 2 * slots), summed term by term from k = 2 * slots + 1.
  const unsigned k0 = 2 * slots + 1;
  double term = std::exp(-lambda);
  for (unsigned i = 1; i <= k0; ++i)
    term *= lambda / i;
  double tail = 0;
  for (unsigned i = k0; i < k0 + 64 && term > tail * 1e-17; ++i) {
    tail += term;
    term *= lambda / (i + 1);
  }
  return groups * tail;
}

/// Buckets for `capacity` items with `slots` slots per bucket and `bits`-bit fingerprints.
/// Throws std::invalid_argument for a zero capacity and std::length_error when the count would
/// overflow. The count is the load-factor rule above, grown (for short fingerprints and large
/// capacities only) until fewer than 0.01 tag groups are expected to overflow their two buckets.
inline std::size_t buckets_for_capacity(std::size_t capacity, unsigned slots, unsigned bits = 16) {
  if (capacity == 0) throw std::invalid_argument("ccf: capacity must be at least 1");
  const double n = static_cast<double>(capacity);
  double buckets = std::ceil(std::ceil(n / (slots * design_load(slots, bits))) * 1.01) + 8.0;
  for (int step = 0; step < 400 && expected_overflowing_groups(n, buckets, slots, bits) > 0.01;
       ++step) {
    buckets = std::ceil(buckets * 1.02);
  }
  check_bucket_count(buckets, capacity);
  return static_cast<std::size_t>(buckets);
}

/// Throws std::length_error when a table of `bytes` cannot fit in this machine's memory.
inline void check_fits_in_memory(std::uint64_t bytes, std::size_t capacity) {
  const std::uint64_t phys = physical_memory_bytes();
  if (bytes > phys) {
    throw std::length_error("ccf: a filter for " + std::to_string(capacity) + " items needs " +
                            std::to_string(bytes) + " bytes, more than this machine's " +
                            std::to_string(phys) + " bytes of memory");
  }
}

/// The bits per item of a Bloom filter of false-positive rate eps with k at its optimum:
/// log2(e) log2(1/eps) (the classical 1.44 log2(1/eps)) up to eps = 1/2, where the optimal k is
/// 1; above it k is 1 and the rate 1 - e^{-n/m} needs 1 / -ln(1 - eps) bits an item (the
/// classical bound would give too few: 0.22 at eps = 0.9, a rate of 0.99). Both agree at 1/2.
inline double bloom_bits_per_item(double eps) noexcept {
  constexpr double log2e = 1.4426950408889634;
  return eps > 0.5 ? -1.0 / std::log1p(-eps) : log2e * std::log2(1.0 / eps);
}

}  // namespace ccf::detail
