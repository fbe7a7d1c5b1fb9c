// Tests of ccf::bloom_filter and ccf::blocked_bloom_filter: no false negatives, measured
// false-positive rates against the sizing rules, sizes, batch operations, clear() and errors.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <numbers>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "ccf/bloom_filter.hpp"

namespace {

std::vector<std::uint64_t> int_keys(std::size_t n, std::uint64_t offset) {
  std::vector<std::uint64_t> keys(n);
  for (std::size_t i = 0; i < n; ++i)
    keys[i] = offset + i;
  return keys;
}

std::vector<std::string> string_keys(std::size_t n, const std::string& prefix) {
  std::vector<std::string> keys;
  keys.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    keys.push_back(prefix + std::to_string(i));
  return keys;
}

double plain_bits_per_item(double fpr) {
  return std::numbers::log2e * std::log2(1.0 / fpr);
}

template <class Filter>
std::size_t count_positives(const Filter& filter, const auto& keys) {
  std::size_t hits = 0;
  for (const auto& key : keys)
    hits += filter.contains(key) ? 1 : 0;
  return hits;
}

template <class Filter>
class BloomVariants : public ::testing::Test {};

using Variants =
    ::testing::Types<ccf::bloom_filter<std::uint64_t>, ccf::blocked_bloom_filter<std::uint64_t>>;
TYPED_TEST_SUITE(BloomVariants, Variants);

TYPED_TEST(BloomVariants, NoFalseNegativesForIntegers) {
  const std::size_t n = 300'000;
  TypeParam filter(n, 0.01);
  const auto keys = int_keys(n, 12345);
  for (auto k : keys)
    filter.insert(k);
  EXPECT_EQ(filter.size(), n);
  EXPECT_EQ(count_positives(filter, keys), n);
}

TYPED_TEST(BloomVariants, MeasuredFalsePositiveRateMatchesTarget) {
  // Plain: (1 - e^{-kn/m})^k is within a few per cent of eps; blocked: its model is <= eps and
  // matches measurement. Both must stay below 1.25 eps (the documented bound) and, as a check that
  // the filter is not simply oversized, above 0.6 eps.
  for (const double fpr : {0.01, 0.001}) {
    const std::size_t n = 200'000;
    TypeParam filter(n, fpr);
    filter.insert_many(int_keys(n, 0));
    const auto queries = static_cast<std::size_t>(1500.0 / fpr);  // about 1500 false positives
    const auto others = int_keys(queries, std::uint64_t{1} << 40);
    const double measured =
        static_cast<double>(count_positives(filter, others)) / static_cast<double>(queries);
    EXPECT_LE(measured, 1.25 * fpr) << "target " << fpr;
    EXPECT_GE(measured, 0.6 * fpr) << "target " << fpr;
  }
}

TYPED_TEST(BloomVariants, BatchEqualsSingle) {
  const std::size_t n = 50'000;
  const auto keys = int_keys(n, 7);
  TypeParam single(n, 0.02);
  TypeParam batched(n, 0.02);
  for (auto k : keys)
    single.insert(k);
  batched.insert_many(std::span<const std::uint64_t>(keys));
  EXPECT_EQ(batched.size(), single.size());

  // Members, non-members, and a batch shorter than the lookahead window.
  auto queries = int_keys(n, 0);
  const auto extra = int_keys(2 * n, 1'000'000);
  queries.insert(queries.end(), extra.begin(), extra.end());
  auto out = std::make_unique<bool[]>(queries.size());
  batched.contains_many(queries, std::span<bool>(out.get(), queries.size()));
  std::size_t positives = 0;
  for (std::size_t i = 0; i < queries.size(); ++i) {
    ASSERT_EQ(out[i], single.contains(queries[i])) << "key " << queries[i];
    ASSERT_EQ(out[i], batched.contains(queries[i])) << "key " << queries[i];
    positives += out[i] ? 1 : 0;
  }
  EXPECT_GE(positives, n);
  EXPECT_LT(positives, queries.size());

  const std::vector<std::uint64_t> few{7, 8, 9};
  bool few_out[3] = {false, false, false};
  batched.contains_many(few, few_out);
  EXPECT_TRUE(few_out[0] && few_out[1] && few_out[2]);
  batched.contains_many(std::span<const std::uint64_t>(), std::span<bool>());
}

TYPED_TEST(BloomVariants, ConcurrentLookupsAgree) {
  // Const members may run in several threads at once (no writer): all see the same answers.
  const std::size_t n = 20'000;
  TypeParam filter(n, 0.01);
  filter.insert_many(int_keys(n, 0));
  const auto queries = int_keys(2 * n, n / 2);
  std::vector<std::unique_ptr<bool[]>> outs;
  for (int t = 0; t < 3; ++t)
    outs.push_back(std::make_unique<bool[]>(queries.size()));
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      const std::span<bool> out(outs[static_cast<std::size_t>(t)].get(), queries.size());
      if (t == 0) {
        filter.contains_many(queries, out);
      } else {
        for (std::size_t i = 0; i < queries.size(); ++i)
          out[i] = filter.contains(queries[i]);
      }
    });
  }
  filter.contains_many(queries, std::span<bool>(outs[2].get(), queries.size()));
  for (auto& th : threads)
    th.join();
  for (std::size_t i = 0; i < queries.size(); ++i) {
    ASSERT_EQ(outs[0][i], outs[2][i]);
    ASSERT_EQ(outs[1][i], outs[2][i]);
    if (queries[i] < n) {
      ASSERT_TRUE(outs[2][i]);
    }
  }
}

TYPED_TEST(BloomVariants, ClearEmptiesTheFilter) {
  const std::size_t n = 20'000;
  TypeParam filter(n, 0.01);
  const auto keys = int_keys(n, 99);
  filter.insert_many(keys);
  const std::size_t bytes = filter.size_in_bytes();
  filter.clear();
  EXPECT_EQ(filter.size(), 0U);
  EXPECT_EQ(filter.size_in_bytes(), bytes);
  EXPECT_EQ(count_positives(filter, keys), 0U);  // an all-zero table answers "no" to every key
  filter.insert(keys[0]);
  EXPECT_TRUE(filter.contains(keys[0]));
  EXPECT_EQ(filter.size(), 1U);
}

TYPED_TEST(BloomVariants, AMovedFromFilterIsAnEmptyOne) {
  // contains() and insert() of a moved-from filter read its empty table (a crash).
  const auto keys = int_keys(1000, 7);
  TypeParam a(1000, 0.01);
  a.insert_many(keys);
  TypeParam b(std::move(a));
  EXPECT_EQ(b.size(), keys.size());
  EXPECT_EQ(count_positives(b, keys), keys.size());
  EXPECT_EQ(a.size(), 0U);  // NOLINT(bugprone-use-after-move): what is tested
  EXPECT_EQ(a.capacity(), 1U);
  EXPECT_FALSE(a.contains(keys[0]));
  a.insert(keys[0]);
  EXPECT_TRUE(a.contains(keys[0]));
  TypeParam c(10, 0.5);
  c = std::move(b);
  EXPECT_EQ(count_positives(c, keys), keys.size());
  EXPECT_FALSE(b.contains(keys[1]));  // NOLINT(bugprone-use-after-move)
  b.insert_many(keys);
  EXPECT_EQ(count_positives(b, keys), keys.size());
  auto& self = c;
  c = std::move(self);
  EXPECT_EQ(count_positives(c, keys), keys.size());
  static_assert(std::is_nothrow_move_constructible_v<TypeParam>);
  static_assert(std::is_nothrow_move_assignable_v<TypeParam>);
}

TYPED_TEST(BloomVariants, SeedChangesTheFalsePositives) {
  const std::size_t n = 20'000;
  TypeParam a(n, 0.05, 1);
  TypeParam b(n, 0.05, 2);
  const auto keys = int_keys(n, 0);
  a.insert_many(keys);
  b.insert_many(keys);
  EXPECT_EQ(a.seed(), 1U);
  std::size_t differ = 0;
  for (std::uint64_t q = 1 << 30; q < (1 << 30) + 100'000; ++q) {
    differ += a.contains(q) != b.contains(q) ? 1 : 0;
  }
  EXPECT_GT(differ, 1000U);  // about 2 * 0.05 * 0.95 * 100000 expected
}

TYPED_TEST(BloomVariants, TinyAndLooseFilters) {
  for (const double fpr : {1.0 - 1e-12, 0.99999, 0.9, 0.5, 1e-6}) {
    TypeParam one(1, fpr);
    one.insert(42);
    EXPECT_TRUE(one.contains(42));
    EXPECT_GE(one.num_bits(), 64U);
    EXPECT_GE(one.num_hashes(), 1U);
    const TypeParam many(1000, fpr);  // a rate near 1 is sized, not a runaway model
    EXPECT_LE(many.num_bits(), std::max<std::size_t>(1000 * 64, 64 * 1024)) << fpr;
  }
}

TYPED_TEST(BloomVariants, BadArgumentsThrow) {
  EXPECT_THROW(TypeParam(0, 0.01), std::invalid_argument);
  for (const double fpr : {0.0, 1.0, -0.5, 1.5, std::numeric_limits<double>::quiet_NaN(),
                           std::numeric_limits<double>::infinity()}) {
    EXPECT_THROW(TypeParam(100, fpr), std::invalid_argument) << fpr;
  }
  try {
    TypeParam(100, 2.5);
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("fpr"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("2.5"), std::string::npos) << e.what();
  }
  // Overflow of the table size, then a size beyond this machine's memory.
  EXPECT_THROW(TypeParam(std::numeric_limits<std::size_t>::max(), 0.01), std::length_error);
  const std::size_t huge = std::size_t{1} << 44;  // 2^44 items * 9.6 bits = 21 TB
  if (ccf::detail::physical_memory_bytes() < (std::uint64_t{1} << 44)) {
    EXPECT_THROW(TypeParam(huge, 0.01), std::length_error);
  }
  TypeParam ok(10, 0.01);
  std::vector<std::uint64_t> keys{1, 2, 3};
  bool out[2] = {false, false};
  EXPECT_THROW(ok.contains_many(keys, out), std::invalid_argument);
}

TEST(BloomFilter, NoFalseNegativesForStrings) {
  const std::size_t n = 100'000;
  const auto keys = string_keys(n, "user:");
  ccf::bloom_filter<std::string> plain(n, 0.001);
  ccf::blocked_bloom_filter<std::string> blocked(n, 0.001);
  plain.insert_many(keys);
  for (const auto& k : keys)
    blocked.insert(k);
  EXPECT_EQ(count_positives(plain, keys), n);
  EXPECT_EQ(count_positives(blocked, keys), n);

  const auto others = string_keys(400'000, "other:");
  const double fp_plain = static_cast<double>(count_positives(plain, others)) / 400'000.0;
  const double fp_blocked = static_cast<double>(count_positives(blocked, others)) / 400'000.0;
  EXPECT_LE(fp_plain, 1.5 * 0.001);  // 400 expected false positives: a looser bound
  EXPECT_LE(fp_blocked, 1.5 * 0.001);
}

TEST(BloomFilter, SizeFollowsTheClassicalBound) {
  for (const double fpr : {0.1, 0.01, 0.001, 1e-4, 1e-6}) {
    const std::size_t n = 100'000;
    const ccf::bloom_filter<std::uint64_t> f(n, fpr);
    const double bound = plain_bits_per_item(fpr) * static_cast<double>(n);  // 1.44 n log2(1/eps)
    EXPECT_GE(static_cast<double>(f.num_bits()), bound);
    EXPECT_LT(static_cast<double>(f.num_bits()), bound + 65.0);
    EXPECT_EQ(f.num_bits() % 64, 0U);
    EXPECT_EQ(f.size_in_bytes(), f.num_bits() / 8);
    const double k = std::round(std::numbers::ln2 * static_cast<double>(f.num_bits()) / n);
    EXPECT_EQ(f.num_hashes(), static_cast<std::size_t>(k));
  }
  EXPECT_EQ(ccf::bloom_filter<std::uint64_t>(1'000'000, 0.01).num_hashes(), 7U);
  EXPECT_EQ(ccf::bloom_filter<std::uint64_t>(1'000'000, 0.001).num_hashes(), 10U);
  // 9.6 bits per item at 1 %, 4.8 more for every factor of ten.
  const ccf::bloom_filter<std::uint64_t> one(1'000'000, 0.01);
  const ccf::bloom_filter<std::uint64_t> tenth(1'000'000, 0.001);
  EXPECT_NEAR(static_cast<double>(one.num_bits()) / 1e6, 9.585, 0.01);
  EXPECT_NEAR(static_cast<double>(tenth.num_bits() - one.num_bits()) / 1e6, 4.79, 0.01);
}

TEST(BloomFilter, TargetsAboveOneHalfAreMet) {
  // The classical bound 1.44 n log2(1/eps) asks for fewer bits than one hash function needs above
  // eps = 1/2: a filter sized by it answers yes for 99 % of other keys at 0.9, 81 % at 0.75.
  const std::size_t n = 20'000;
  const auto others = int_keys(20'000, std::uint64_t{1} << 40);
  for (const double fpr : {0.55, 0.6, 0.75, 0.9, 0.99}) {
    ccf::bloom_filter<std::uint64_t> f(n, fpr);
    f.insert_many(int_keys(n, 0));
    EXPECT_EQ(f.num_hashes(), 1U) << fpr;
    EXPECT_LE(f.expected_fpr(), fpr) << fpr;
    const double measured =
        static_cast<double>(count_positives(f, others)) / static_cast<double>(others.size());
    EXPECT_LE(measured, fpr + 0.02) << fpr;  // the binomial deviation is below 0.004
    EXPECT_GE(measured, fpr - 0.05) << fpr;  // and not oversized
  }
}

TEST(BloomFilter, ExpectedFprTracksInserts) {
  ccf::bloom_filter<std::uint64_t> f(100'000, 0.01);
  EXPECT_EQ(f.expected_fpr(), 0.0);
  f.insert_many(int_keys(100'000, 0));
  EXPECT_NEAR(f.expected_fpr(), 0.01, 0.001);
}

TEST(BlockedBloomFilter, SizeAndModel) {
  // Bits per item relative to the plain filter, as documented in bloom_filter.hpp.
  struct row {
    double fpr;
    double min_ratio;
    double max_ratio;
  };
  for (const row r : {row{0.1, 1.0, 1.03}, row{0.01, 1.02, 1.05}, row{0.001, 1.06, 1.10},
                      row{1e-4, 1.13, 1.17}, row{1e-6, 1.32, 1.38}}) {
    const std::size_t n = 100'000;
    const ccf::blocked_bloom_filter<std::uint64_t> f(n, r.fpr);
    const double ratio =
        static_cast<double>(f.num_bits()) / static_cast<double>(n) / plain_bits_per_item(r.fpr);
    EXPECT_GE(ratio, r.min_ratio) << r.fpr;
    EXPECT_LE(ratio, r.max_ratio) << r.fpr;
    EXPECT_EQ(f.num_bits() % 512, 0U);
    EXPECT_EQ(f.size_in_bytes(), f.num_blocks() * 64);
    EXPECT_LE(f.design_fpr(), r.fpr);
    EXPECT_GT(f.design_fpr(), 0.9 * r.fpr);  // no more bits than needed (n large: little rounding)
  }
}

TEST(BlockedBloomFilter, ModelAgreesWithClosedForms) {
  // k = 1: a key sets one bit, so FPR = E[1 - (511/512)^J] with J ~ Pois(512/c) = 1 - e^{-1/c}.
  for (const double c : {2.0, 5.0, 10.0, 30.0}) {
    EXPECT_NEAR(ccf::detail::blocked_bloom_model_fpr(c, 1), -std::expm1(-1.0 / c), 1e-12) << c;
  }
  // E[X^k] >= E[X]^k: the exact model is never below the mean-field one, and a blocked filter is
  // never better than a plain one with the same bits and k.
  for (const unsigned k : {3U, 7U, 12U}) {
    const double c = 12.0;
    const double lambda = 512.0 / c;
    double mean_field = 0.0;
    for (int j = 0; j < 400; ++j) {
      const double pois = std::exp(-lambda + j * std::log(lambda) - std::lgamma(j + 1.0));
      mean_field += pois * std::pow(1.0 - std::pow(1.0 - 1.0 / 512.0, double(k) * j), double(k));
    }
    const double exact = ccf::detail::blocked_bloom_model_fpr(c, k);
    const double plain = std::pow(-std::expm1(-double(k) / c), double(k));
    EXPECT_GE(exact, mean_field) << k;
    EXPECT_LT(exact, 1.15 * mean_field) << k;
    EXPECT_GE(exact, plain) << k;
  }
}

TEST(BlockedBloomFilter, UnreachableFprThrows) {
  EXPECT_THROW(ccf::blocked_bloom_filter<std::uint64_t>(10, 1e-300), std::invalid_argument);
}

}  // namespace
