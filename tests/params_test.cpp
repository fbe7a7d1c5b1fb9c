// Tests of ccf::params_for: the bucket-size rule, the fingerprint formula and its rounding, the
// derived quantities, the Bloom comparison fields and the argument checks.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "ccf/cuckoo_filter.hpp"
#include "ccf/detail/sizing.hpp"
#include "ccf/params.hpp"

namespace {

const double fprs[] = {
    0.9,      0.5,    0.3,  0.25, 0.1,  0.05, 0.02, 0.01, 0.005, 0.0021, 0.002,
    1e-3,     3.3e-4, 1e-4, 2e-5, 1e-5, 1e-6, 1e-7, 1e-8, 3e-9,  2e-9,   0.00390625 /* 4 / 2^10 */,
    0.0019531 /* just below 8 / 2^12 */};
const std::size_t sizes[] = {1, 10, 1000, 65'537, 1'000'000, 1'000'000'000};

// Smallest f >= 4 with 2b / 2^f <= eps, by counting rather than by logarithms.
unsigned smallest_f(double fpr, unsigned b) {
  unsigned f = 4;
  while (2.0 * b / std::ldexp(1.0, static_cast<int>(f)) > fpr)
    ++f;
  return f;
}

TEST(Params, SlotsSwitchAtTwoPerMille) {
  EXPECT_EQ(ccf::params_for(1'000'000, 0.5).slots_per_bucket, 2U);
  EXPECT_EQ(ccf::params_for(1'000'000, 0.01).slots_per_bucket, 2U);
  EXPECT_EQ(ccf::params_for(1'000'000, 0.0020001).slots_per_bucket, 2U);
  EXPECT_EQ(ccf::params_for(1'000'000, 0.002).slots_per_bucket, 4U);
  EXPECT_EQ(ccf::params_for(1'000'000, 0.0019999).slots_per_bucket, 4U);
  EXPECT_EQ(ccf::params_for(1'000'000, 1e-4).slots_per_bucket, 4U);
  EXPECT_EQ(ccf::params_for(1'000'000, 1.0001e-5).slots_per_bucket, 4U);
  EXPECT_EQ(ccf::params_for(10, 0.0021).slots_per_bucket, 2U);
  EXPECT_EQ(ccf::params_for(10, 0.002).slots_per_bucket, 4U);
}

TEST(Params, VerySmallFprPicksTheCheaperOfFourAndEight) {
  for (const std::size_t n : sizes) {
    for (const double fpr : {1e-5, 1e-6, 1e-8, 4e-9}) {
      const auto p = ccf::params_for(n, fpr);
      const auto four = ccf::detail::params_with_slots(n, fpr, 4);
      const auto eight = ccf::detail::params_with_slots(n, fpr, 8);
      ASSERT_NE(four.fingerprint_bits, 0U);
      ASSERT_NE(eight.fingerprint_bits, 0U);
      EXPECT_EQ(p.slots_per_bucket, eight.bits_per_item < four.bits_per_item ? 8U : 4U)
          << "n " << n << " fpr " << fpr;
      EXPECT_LE(p.bits_per_item, four.bits_per_item);
      EXPECT_LE(p.bits_per_item, eight.bits_per_item);
    }
  }
  // Large tables: the higher design load of 8 slots wins; tiny ones: 4 slots (less slack).
  EXPECT_EQ(ccf::params_for(1'000'000, 1e-6).slots_per_bucket, 8U);
  EXPECT_EQ(ccf::params_for(10, 1e-6).slots_per_bucket, 4U);
  // 8 / 2^32 <= eps < 16 / 2^32: only 4 slots reach it with 32-bit fingerprints.
  const auto p = ccf::params_for(1'000'000, 2.5e-9);
  EXPECT_EQ(p.slots_per_bucket, 4U);
  EXPECT_EQ(p.fingerprint_bits, 32U);
}

TEST(Params, FingerprintFormulaAndRounding) {
  for (const double fpr : fprs) {
    const auto p = ccf::params_for(1'000'000, fpr);
    const unsigned b = p.slots_per_bucket;
    EXPECT_EQ(p.min_fingerprint_bits, smallest_f(fpr, b)) << fpr;
    EXPECT_EQ(p.min_fingerprint_bits,
              static_cast<unsigned>(std::max(4.0, std::ceil(std::log2(2.0 * b / fpr)))))
        << fpr;
    // Rounded up to the narrowest stored width, or a wider one whose table costs fewer bits per
    // item (4-bit tables grow with n).
    unsigned expected = 0;
    double cheapest = 0;
    for (const unsigned w : {4U, 8U, 12U, 16U, 32U}) {
      if (w < p.min_fingerprint_bits) continue;
      const double bits = static_cast<double>(w) * b *
                          static_cast<double>(ccf::detail::buckets_for_capacity(1'000'000, b, w));
      if (expected == 0 || bits < cheapest) {
        expected = w;
        cheapest = bits;
      }
    }
    EXPECT_EQ(p.fingerprint_bits, expected) << fpr;
  }
  // Hand-checked values.
  EXPECT_EQ(ccf::params_for(1000, 0.9).min_fingerprint_bits, 4U);  // log2(4.4) -> 3 -> 4
  EXPECT_EQ(ccf::params_for(1000, 0.3).fingerprint_bits, 4U);      // log2(13.3) -> 4
  EXPECT_EQ(ccf::params_for(1000, 0.1).min_fingerprint_bits, 6U);  // log2(40)
  EXPECT_EQ(ccf::params_for(1000, 0.1).fingerprint_bits, 8U);
  EXPECT_EQ(ccf::params_for(1000, 0.01).min_fingerprint_bits, 9U);  // log2(400)
  EXPECT_EQ(ccf::params_for(1000, 0.01).fingerprint_bits, 12U);
  EXPECT_EQ(ccf::params_for(1000, 0.002).min_fingerprint_bits, 12U);  // log2(4000)
  EXPECT_EQ(ccf::params_for(1000, 0.002).fingerprint_bits, 12U);
  EXPECT_EQ(ccf::params_for(1000, 0.001).min_fingerprint_bits, 13U);  // log2(8000)
  EXPECT_EQ(ccf::params_for(1000, 0.001).fingerprint_bits, 16U);
  EXPECT_EQ(ccf::params_for(1000, 1e-4).fingerprint_bits, 32U);
  // Exactly 2b / 2^f: f itself suffices; a hair below needs one more bit.
  EXPECT_EQ(ccf::params_for(1000, 4.0 / 1024).min_fingerprint_bits, 10U);
  EXPECT_EQ(ccf::params_for(1000, 4.0 / 1024 * 0.9999).min_fingerprint_bits, 11U);
  EXPECT_EQ(ccf::detail::round_up_fingerprint_bits(17), 32U);
  EXPECT_EQ(ccf::detail::round_up_fingerprint_bits(33), 0U);
}

TEST(Params, DerivedQuantities) {
  for (const std::size_t n : sizes) {
    for (const double fpr : fprs) {
      const auto p = ccf::params_for(n, fpr);
      const unsigned b = p.slots_per_bucket;
      const double f = p.fingerprint_bits;
      EXPECT_EQ(p.capacity, n);
      EXPECT_EQ(p.target_fpr, fpr);
      EXPECT_EQ(p.num_buckets, ccf::detail::buckets_for_capacity(n, b, p.fingerprint_bits));
      const double slots = static_cast<double>(p.num_buckets) * b;
      EXPECT_DOUBLE_EQ(p.load_factor, static_cast<double>(n) / slots);
      EXPECT_LT(p.load_factor, ccf::detail::design_load(b, p.fingerprint_bits));
      EXPECT_DOUBLE_EQ(p.bits_per_item, f * slots / static_cast<double>(n));
      EXPECT_NEAR(p.bits_per_item, f / p.load_factor, 1e-9 * p.bits_per_item);
      const double per_tag = 1.0 / (std::ldexp(1.0, p.fingerprint_bits) - 1.0);
      const double fpr_formula = 1.0 - std::pow(1.0 - per_tag, 2.0 * b * p.load_factor);
      EXPECT_NEAR(p.expected_fpr, fpr_formula, 1e-6 * fpr_formula + 1e-15);
      const double probes = 2.0 * b * p.load_factor;  // fingerprints a lookup meets on average
      if (probes >= 1.0) {                            // Bernoulli: 1 - (1 - x)^r <= r x for r >= 1
        EXPECT_LE(p.expected_fpr, probes * per_tag * (1 + 1e-12));
      }
      EXPECT_LE(p.expected_fpr, fpr) << "n " << n << " fpr " << fpr;
      EXPECT_GT(p.expected_fpr, 0.0);
    }
  }
}

TEST(Params, FourBitTablesAreSizedAsTheFilterSizesThem) {
  // 4-bit tables get more buckets as n grows; params_for sized them by the 16-bit rule: 60,128
  // buckets and 4.8 bits per item for n = 10^5 at 0.3, where the filter allocated 227,597 (18.2).
  // An 8-bit table is the smaller one there; at n = 100, 4 bits still are.
  const ccf::filter_params large = ccf::params_for(100'000, 0.3);
  EXPECT_EQ(large.slots_per_bucket, 2U);
  EXPECT_EQ(large.fingerprint_bits, 8U);
  using f8x2 = ccf::cuckoo_filter<std::uint64_t, 8, 2>;
  EXPECT_EQ(large.num_buckets, f8x2(100'000).num_buckets());
  EXPECT_LT(large.bits_per_item, 10.0);
  const ccf::filter_params small = ccf::params_for(100, 0.3);
  EXPECT_EQ(small.fingerprint_bits, 4U);
  using f4x2 = ccf::cuckoo_filter<std::uint64_t, 4, 2>;
  EXPECT_EQ(small.num_buckets, f4x2(100).num_buckets());
}

TEST(Params, BucketsAreWhatTheFilterAllocates) {
  // Exactly with the global alternate; a chunked table of several chunks rounds each chunk up to
  // a multiple of 64 buckets (n = 10^6 at 1e-3: 268,800 buckets in 3 chunks for 268,626).
  const ccf::filter_params p = ccf::params_for(1'000'000, 0.001);
  ASSERT_EQ(p.fingerprint_bits, 16U);
  ASSERT_EQ(p.slots_per_bucket, 4U);
  using global =
      ccf::cuckoo_filter<std::uint64_t, 16, 4, ccf::hash<std::uint64_t>, ccf::global_alternate>;
  EXPECT_EQ(p.num_buckets, global(1'000'000).num_buckets());
  using chunked_filter = ccf::cuckoo_filter<std::uint64_t, 16, 4>;
  const chunked_filter chunked(1'000'000);
  EXPECT_GT(chunked.chunks(), 1U);
  EXPECT_GE(chunked.num_buckets(), p.num_buckets);
  EXPECT_LE(chunked.num_buckets(), p.num_buckets + 63 * chunked.chunks());
  const ccf::filter_params one_chunk = ccf::params_for(100'000, 0.001);
  EXPECT_EQ(one_chunk.num_buckets, chunked_filter(100'000).num_buckets());
}

TEST(Params, BloomComparison) {
  for (const double fpr : fprs) {
    const auto p = ccf::params_for(1'000'000, fpr);
    // Above 1/2 the optimal k is 1, whose rate 1 - e^(-1/bits) needs 1 / -ln(1 - eps) bits.
    const double bits = fpr > 0.5 ? -1.0 / std::log1p(-fpr) : 1.4427 * std::log2(1.0 / fpr);
    EXPECT_NEAR(p.bloom_bits_per_item, bits, 1e-4 * p.bloom_bits_per_item) << fpr;
    const double k = std::max(1.0, std::round(std::numbers::ln2 * p.bloom_bits_per_item));
    EXPECT_EQ(p.bloom_hashes, static_cast<unsigned>(k));
  }
  EXPECT_NEAR(ccf::params_for(1000, 0.01).bloom_bits_per_item, 9.585, 0.001);
  EXPECT_EQ(ccf::params_for(1000, 0.01).bloom_hashes, 7U);
  EXPECT_EQ(ccf::params_for(1000, 0.001).bloom_hashes, 10U);
  EXPECT_EQ(ccf::params_for(1000, 0.5).bloom_hashes, 1U);
  // Where fingerprint widths round little, the cuckoo filter beats the Bloom filter: at 2 per
  // mille 12-bit fingerprints with b = 4 cost f / alpha < 1.44 log2(1/eps).
  const auto p = ccf::params_for(1'000'000, 0.002);
  EXPECT_LT(p.bits_per_item, p.bloom_bits_per_item);
}

TEST(Params, BadArgumentsThrowWithClearMessages) {
  auto message = [](std::size_t n, double fpr) -> std::string {
    try {
      (void)ccf::params_for(n, fpr);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "no exception";
  };
  const std::string zero = message(0, 0.01);
  EXPECT_NE(zero.find("n must be"), std::string::npos) << zero;
  EXPECT_NE(zero.find("got 0"), std::string::npos) << zero;
  for (const double fpr :
       {0.0, 1.0, -0.25, 1.5, std::numeric_limits<double>::quiet_NaN(),
        std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()}) {
    const std::string m = message(1000, fpr);
    EXPECT_NE(m.find("fpr must be in (0, 1)"), std::string::npos) << m;
  }
  EXPECT_NE(message(1000, 1.5).find("got 1.5"), std::string::npos);
  EXPECT_NE(message(1000, -0.25).find("got -0.25"), std::string::npos);
  EXPECT_NE(message(1000, std::numeric_limits<double>::quiet_NaN()).find("nan"), std::string::npos);
  // Below 8 / 2^32 no stored width is wide enough.
  const std::string tiny = message(1000, 1e-10);
  EXPECT_NE(tiny.find("32-bit"), std::string::npos) << tiny;
  EXPECT_NE(message(1000, 1e-300).find("32-bit"), std::string::npos);
  EXPECT_NE(message(1000, std::numeric_limits<double>::denorm_min()).find("32-bit"),
            std::string::npos);
  EXPECT_THROW((void)ccf::params_for(std::numeric_limits<std::size_t>::max(), 0.01),
               std::length_error);
  EXPECT_THROW((void)ccf::smallest_layout_for(std::numeric_limits<std::size_t>::max(), 0.01),
               std::length_error);
}

TEST(Params, HugeCapacitiesSkipTheLayoutsTooLargeForThem) {
  // At 2^43 items 4-bit fingerprints need more buckets than a table may have (their tag groups
  // overflow): both functions threw "too large" although wider layouts fit.
  const std::size_t n = std::size_t{1} << 43;
  const ccf::filter_params smallest = ccf::smallest_layout_for(n, 0.01);
  EXPECT_GT(smallest.fingerprint_bits, 4u);
  EXPECT_LE(smallest.expected_fpr, 0.01);
  for (double fpr : {0.5, 0.01}) {
    const ccf::filter_params p = ccf::params_for(n, fpr);
    EXPECT_GT(p.fingerprint_bits, 4u) << fpr;
    EXPECT_GT(p.num_buckets, 0u) << fpr;
  }
}

TEST(Params, ToStringListsTheFields) {
  const std::string s = ccf::to_string(ccf::params_for(1'000'000, 0.001));
  for (const char* field :
       {"n=1000000", "eps=0.001", "b=4", "f=16", "(min 13)", "buckets=", "load=0.93",
        "fpr=", "bits/item=17.19", "bloom_bits/item=14.37", "bloom_k=10"}) {
    EXPECT_NE(s.find(field), std::string::npos) << field << " in " << s;
  }
}

}  // namespace
