// ccf — concurrent cuckoo filters.
// params.hpp: choosing a cuckoo filter's shape for n items and a target false-positive rate eps,
// next to what a Bloom filter would need for the same target.
//
// The rules (docs/params.md derives them and tabulates the result):
//   slots per bucket b:  eps > 0.002 -> b = 2;  1e-5 < eps <= 0.002 -> b = 4;
//                        eps <= 1e-5 -> b = 4 or b = 8, whichever costs fewer bits per item for
//                        this n (ties go to b = 4: fewer slots to compare per lookup). With ccf's
//                        fingerprint widths both need 32-bit fingerprints there, and b = 8's higher
//                        design load makes it the smaller one for every n above about 1,200.
//   fingerprint bits:    min_fingerprint_bits f0 = max(4, ceil(log2(2b / eps))), the smallest f
//                        with 2b / 2^f <= eps (a lookup compares its fingerprint with at most 2b
//                        others); fingerprint_bits = f0 rounded up to a width ccf stores: 4, 8, 12,
//                        16 or 32, or a wider one where that costs fewer bits per item (4-bit
//                        tables get more buckets as n grows, see sizing.hpp). eps < 2b / 2^32
//                        cannot be met: std::invalid_argument.
//   num_buckets:         ccf::detail::buckets_for_capacity(n, b, f), exactly what a ccf cuckoo
//                        filter of capacity n allocates with ccf::global_alternate, or with the
//                        default ccf::chunked_alternate while its table is one chunk (2^19
//                        slots); a table of several chunks rounds each chunk up to a multiple of
//                        64 buckets (at most 63 buckets a chunk, under 0.2 % more).
//   load_factor:         alpha = n / (num_buckets * b), the load once the filter holds n items.
//   expected_fpr:        1 - (1 - 1/(2^f - 1))^(2 b alpha), about 2 b alpha / (2^f - 1): a lookup
//                        meets 2 b alpha stored fingerprints on average, each a false match with
//                        probability 1/(2^f - 1) (fingerprint 0 marks an empty slot). It is at most
//                        eps by the choice of f.
//   bits_per_item:       f * b * num_buckets / n, i.e. f / alpha.
//   bloom_bits_per_item: log2(e) * log2(1/eps) (the classical 1.44 log2(1/eps)), or
//                        1 / -ln(1 - eps) above eps = 1/2 (where k = 1), and
//   bloom_hashes:        k = max(1, round(ln 2 * bloom_bits_per_item)), the optimal k.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <numbers>
#include <optional>
#include <stdexcept>
#include <string>

#include "ccf/detail/sizing.hpp"

namespace ccf {

struct filter_params {
  unsigned fingerprint_bits;      // f: a width ccf stores (4, 8, 12, 16 or 32); params_for: at
                                  // least min_fingerprint_bits (smallest_layout_for counts the load
                                  // instead, and may take fewer)
  unsigned slots_per_bucket;      // b
  std::size_t num_buckets;        // buckets a ccf cuckoo filter of this capacity allocates (a
                                  // chunked one of several chunks: up to 63 a chunk more)
  double load_factor;             // n / (num_buckets * b)
  double expected_fpr;            // 1 - (1 - 1/(2^f - 1))^(2 b load_factor), <= target_fpr
  double bits_per_item;           // f * b * num_buckets / n
  double bloom_bits_per_item;     // for a Bloom filter with the same target (see above)
  unsigned bloom_hashes;          // its optimal number of hash functions
  unsigned min_fingerprint_bits;  // max(4, ceil(log2(2b/eps))), the thesis's bound at full load
  std::size_t capacity;           // n
  double target_fpr;              // eps
};

/// The false-positive rate of a cuckoo filter with `fingerprint_bits`-bit tags in buckets of
/// `slots` slots at load factor `load`: 1 - (1 - 1/(2^f - 1))^(2 b load). A lookup meets
/// 2 b load stored tags on average, each a false match with probability 1/(2^f - 1) (tag 0 marks
/// an empty slot).
inline double expected_fpr(unsigned fingerprint_bits, unsigned slots, double load) {
  const double tags = std::ldexp(1.0, static_cast<int>(fingerprint_bits)) - 1.0;
  return -std::expm1(2.0 * slots * load * std::log1p(-1.0 / tags));
}

namespace detail {

inline constexpr std::array<unsigned, 5> fingerprint_widths{4, 8, 12, 16, 32};

inline std::string params_format_double(double v) {
  std::array<char, 32> buf{};
  std::snprintf(buf.data(), buf.size(), "%.6g", v);
  return std::string(buf.data());
}

/// max(4, ceil(log2(2b / eps))): the smallest f >= 4 with 2b / 2^f <= eps.
inline unsigned min_fingerprint_bits_for(double fpr, unsigned slots) {
  const double ratio = 2.0 * slots / fpr;
  if (!(ratio < 0x1p1000)) return 1001;  // far beyond any stored width
  auto f = static_cast<unsigned>(std::max(4.0, std::ceil(std::log2(ratio))));
  while (std::ldexp(1.0, static_cast<int>(f)) < ratio)
    ++f;  // guard against log2 rounding down
  while (f > 4 && std::ldexp(1.0, static_cast<int>(f) - 1) >= ratio)
    --f;  // and rounding up
  return f;
}

/// The narrowest width in fingerprint_widths that holds `bits` bits, or 0 when none does.
constexpr unsigned round_up_fingerprint_bits(unsigned bits) noexcept {
  for (unsigned w : fingerprint_widths) {
    if (w >= bits) return w;
  }
  return 0;
}

/// The full shape for a given b, or fingerprint_bits == 0 when no stored width reaches eps.
inline filter_params params_with_slots(std::size_t n, double fpr, unsigned slots) {
  filter_params p{};
  p.capacity = n;
  p.target_fpr = fpr;
  p.slots_per_bucket = slots;
  p.min_fingerprint_bits = min_fingerprint_bits_for(fpr, slots);
  p.fingerprint_bits = round_up_fingerprint_bits(p.min_fingerprint_bits);
  if (p.fingerprint_bits == 0) return p;
  // The narrowest width, or a wider one that costs fewer bits per item (its table is smaller).
  // A width whose table would be too large (short fingerprints need more buckets at huge n) is
  // skipped; std::length_error only when every one is.
  const unsigned narrowest = p.fingerprint_bits;
  p.fingerprint_bits = 0;
  for (unsigned w : fingerprint_widths) {
    if (w < narrowest) continue;
    std::size_t buckets = 0;
    try {
      buckets = buckets_for_capacity(n, slots, w);
    } catch (const std::length_error&) {
      if (w == fingerprint_widths.back() && p.fingerprint_bits == 0) throw;
      continue;
    }
    const double bits =
        static_cast<double>(w) * slots * static_cast<double>(buckets) / static_cast<double>(n);
    if (p.fingerprint_bits == 0 || bits < p.bits_per_item) {
      p.fingerprint_bits = w;
      p.num_buckets = buckets;
      p.bits_per_item = bits;
    }
  }
  const double slots_total = static_cast<double>(p.num_buckets) * slots;
  p.load_factor = static_cast<double>(n) / slots_total;
  p.expected_fpr = expected_fpr(p.fingerprint_bits, slots, p.load_factor);
  p.bloom_bits_per_item = detail::bloom_bits_per_item(fpr);
  p.bloom_hashes =
      static_cast<unsigned>(std::max(1.0, std::round(std::numbers::ln2 * p.bloom_bits_per_item)));
  return p;
}

}  // namespace detail

/// The cuckoo filter shape ccf recommends for n items at false-positive rate `fpr` (see the rules
/// above). Throws std::invalid_argument for n == 0, for fpr outside (0, 1) or NaN, and for an fpr
/// below what 32-bit fingerprints reach (2b / 2^32, about 1.9e-9); std::length_error when n is too
/// large for a table.
inline filter_params params_for(std::size_t n, double fpr) {
  if (n == 0) throw std::invalid_argument("ccf::params_for: n must be at least 1, got 0");
  if (!(fpr > 0.0 && fpr < 1.0)) {
    throw std::invalid_argument("ccf::params_for: fpr must be in (0, 1), got " +
                                detail::params_format_double(fpr));
  }
  if (fpr > 0.002) return detail::params_with_slots(n, fpr, 2);
  if (fpr > 1e-5) return detail::params_with_slots(n, fpr, 4);
  const filter_params four = detail::params_with_slots(n, fpr, 4);
  const filter_params eight = detail::params_with_slots(n, fpr, 8);
  if (eight.fingerprint_bits != 0 &&
      (four.fingerprint_bits == 0 || eight.bits_per_item < four.bits_per_item)) {
    return eight;
  }
  if (four.fingerprint_bits != 0) return four;
  throw std::invalid_argument("ccf::params_for: fpr " + detail::params_format_double(fpr) +
                              " is below what 32-bit fingerprints reach (8 / 2^32 = " +
                              detail::params_format_double(std::ldexp(8.0, -32)) + ")");
}

namespace detail {

/// The memory of a bucket of `slots` tags of `bits` bits in the bit-packed tables: what they
/// hold.
struct packed_bucket_bits {
  constexpr double operator()(unsigned bits, unsigned slots) const noexcept {
    return static_cast<double>(bits) * slots;
  }
};

/// smallest_layout_for among the layouts (bits, slots) for which allowed(bits, slots) holds,
/// with bucket_bits(bits, slots) the memory of a bucket (the lock-free filter's buckets are one
/// 64-bit word whatever they hold); of layouts of equal memory, the one of the lowest
/// expected_fpr. fingerprint_bits == 0 when none reaches fpr. A layout whose table would be too
/// large is skipped (std::length_error when no other reaches fpr).
template <class Allowed, class BucketBits = packed_bucket_bits>
filter_params smallest_layout_among(std::size_t n, double fpr, Allowed&& allowed,
                                    BucketBits bucket_bits = {}) {
  if (n == 0) throw std::invalid_argument("ccf::smallest_layout_for: n must be at least 1, got 0");
  if (!(fpr > 0.0 && fpr < 1.0)) {
    throw std::invalid_argument("ccf::smallest_layout_for: fpr must be in (0, 1), got " +
                                detail::params_format_double(fpr));
  }
  filter_params best{};
  std::optional<std::length_error> too_large;
  for (unsigned slots : {2U, 4U, 8U}) {
    for (unsigned bits : detail::fingerprint_widths) {
      if (!allowed(bits, slots)) continue;
      filter_params p{};
      p.capacity = n;
      p.target_fpr = fpr;
      p.slots_per_bucket = slots;
      p.min_fingerprint_bits = detail::min_fingerprint_bits_for(fpr, slots);
      p.bloom_bits_per_item = detail::bloom_bits_per_item(fpr);
      p.bloom_hashes = static_cast<unsigned>(
          std::max(1.0, std::round(std::numbers::ln2 * p.bloom_bits_per_item)));
      p.fingerprint_bits = bits;
      try {
        p.num_buckets = detail::buckets_for_capacity(n, slots, bits);
      } catch (const std::length_error& e) {
        too_large = e;
        continue;
      }
      const double slots_total = static_cast<double>(p.num_buckets) * slots;
      p.load_factor = static_cast<double>(n) / slots_total;
      p.expected_fpr = expected_fpr(bits, slots, p.load_factor);
      p.bits_per_item =
          bucket_bits(bits, slots) * static_cast<double>(p.num_buckets) / static_cast<double>(n);
      if (p.expected_fpr > fpr) continue;
      if (best.fingerprint_bits == 0 || p.bits_per_item < best.bits_per_item ||
          (p.bits_per_item == best.bits_per_item && p.expected_fpr < best.expected_fpr)) {
        best = p;
      }
    }
  }
  if (best.fingerprint_bits == 0 && too_large) throw *too_large;
  return best;
}

}  // namespace detail

/// The layout of least memory for n items at false-positive rate `fpr`: of every fingerprint width
/// ccf stores (4, 8, 12, 16, 32 bits) and bucket size (2, 4, 8 slots), the one with the fewest bits
/// per item whose expected_fpr once the filter holds n items is at most fpr (of equal memory, the
/// lower expected_fpr, then fewer slots: fewer compares per lookup). Unlike params_for, which
/// follows the thesis's rules, this counts every combination: for fpr = 1e-4, 16-bit tags in 2-slot
/// buckets (about 19 bits per item) rather than 32-bit tags (about 34). Throws
/// std::invalid_argument like params_for.
inline filter_params smallest_layout_for(std::size_t n, double fpr) {
  const filter_params best =
      detail::smallest_layout_among(n, fpr, [](unsigned, unsigned) { return true; });
  if (best.fingerprint_bits == 0) {
    throw std::invalid_argument("ccf::smallest_layout_for: fpr " +
                                detail::params_format_double(fpr) +
                                " is below what 32-bit fingerprints reach");
  }
  return best;
}

/// One line of key=value fields, e.g. for tables and logs:
/// "n=1000000 eps=0.002 b=4 f=12 (min 12) buckets=268626 load=0.930662 fpr=0.00181671
///  bits/item=12.894 bloom_bits/item=12.9349 bloom_k=9".
inline std::string to_string(const filter_params& p) {
  using detail::params_format_double;
  return "n=" + std::to_string(p.capacity) + " eps=" + params_format_double(p.target_fpr) +
         " b=" + std::to_string(p.slots_per_bucket) + " f=" + std::to_string(p.fingerprint_bits) +
         " (min " + std::to_string(p.min_fingerprint_bits) + ")" +
         " buckets=" + std::to_string(p.num_buckets) +
         " load=" + params_format_double(p.load_factor) +
         " fpr=" + params_format_double(p.expected_fpr) +
         " bits/item=" + params_format_double(p.bits_per_item) +
         " bloom_bits/item=" + params_format_double(p.bloom_bits_per_item) +
         " bloom_k=" + std::to_string(p.bloom_hashes);
}

}  // namespace ccf
