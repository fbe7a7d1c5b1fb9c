// ccf::runtime_filter: every layout (fingerprint bits x slots per bucket) and kind it supports,
// its errors for the ones it does not, filter_config::for_rate against smallest_layout_for and the
// measured false-positive rate, files exchanged with the typed filters, read_filter_info, two
// threads on one concurrent runtime filter, and expected_fpr / design_fpr against the model.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <ccf/filter_file.hpp>
#include <ccf/growing_cuckoo_filter.hpp>
#include <ccf/params.hpp>
#include <ccf/runtime_filter.hpp>

#include "filter_types.hpp"
#include "heap_in_use.hpp"
#include "run_threads.hpp"

namespace ccf_test {
namespace {

using ccf::filter_config;
using ccf::filter_kind;
using ccf::runtime_filter;

/// String keys and views of them (the runtime filter takes std::string_view).
struct string_keys {
  std::vector<std::string> storage;
  std::vector<std::string_view> views;
  string_keys(std::size_t n, u64 stream) : storage(n) {
    char buf[32];
    for (std::size_t i = 0; i < n; ++i) {
      std::snprintf(buf, sizeof buf, "key:%llx",
                    static_cast<unsigned long long>(key_of(i, stream)));
      storage[i] = buf;
    }
    views.assign(storage.begin(), storage.end());
  }
  std::span<const std::string_view> span() const { return views; }
  std::size_t size() const { return views.size(); }
};

std::span<const std::byte> bytes_of(const std::vector<std::byte>& v) {
  return v;
}

bool lockfree_supported(unsigned bits, unsigned slots) {
  return bits <= 16 && bits * slots <= 48;
}

struct layout_case {
  unsigned bits;
  unsigned slots;
  filter_kind kind;
};

std::vector<layout_case> supported_cases() {
  std::vector<layout_case> cases;
  for (unsigned bits : {4u, 8u, 12u, 16u, 32u}) {
    for (unsigned slots : {2u, 4u, 8u}) {
      cases.push_back({bits, slots, filter_kind::sequential});
      cases.push_back({bits, slots, filter_kind::concurrent});
      if (lockfree_supported(bits, slots)) cases.push_back({bits, slots, filter_kind::lockfree});
    }
  }
  return cases;
}

class every_runtime_layout : public ::testing::TestWithParam<layout_case> {};
INSTANTIATE_TEST_SUITE_P(runtime, every_runtime_layout, ::testing::ValuesIn(supported_cases()),
                         [](const ::testing::TestParamInfo<layout_case>& info) {
                           return "b" + std::to_string(info.param.bits) + "_s" +
                                  std::to_string(info.param.slots) + "_" +
                                  ccf::to_string(info.param.kind);
                         });

/// Whether two filters answer alike for every key in `keys`.
std::size_t disagreements(const runtime_filter& a, const runtime_filter& b,
                          const string_keys& keys) {
  std::size_t n = 0;
  for (std::string_view k : keys.views)
    n += a.contains(k) != b.contains(k) ? 1 : 0;
  return n;
}

TEST_P(every_runtime_layout, insert_find_erase_save_and_load) {
  const layout_case c = GetParam();
  const filter_config config{.capacity = 20000,
                             .fingerprint_bits = c.bits,
                             .slots_per_bucket = c.slots,
                             .kind = c.kind,
                             .seed = 7};
  runtime_filter f(config);
  EXPECT_EQ(f.fingerprint_bits(), c.bits);
  EXPECT_EQ(f.slots_per_bucket(), c.slots);
  EXPECT_EQ(f.kind(), c.kind);
  EXPECT_EQ(f.seed(), 7u);
  EXPECT_GE(f.capacity(), 20000u);
  EXPECT_TRUE(f.empty());
  const string_keys keys(20000, 1), absent(20000, 2);
  for (std::string_view k : keys.views)
    ASSERT_TRUE(f.insert(k)) << k;
  EXPECT_EQ(f.size(), keys.size());
  std::size_t false_positives = 0;
  for (std::string_view k : keys.views) {
    ASSERT_TRUE(f.contains(k)) << k;
    ASSERT_GE(f.count(k), 1u);
    ASSERT_EQ(f.hash_of(k), ccf::hash<std::string_view>{}(k, ccf::key_seed(7)));
  }
  for (std::string_view k : absent.views)
    false_positives += f.contains(k) ? 1 : 0;
  const double want = f.expected_fpr() * static_cast<double>(absent.size());
  EXPECT_LE(static_cast<double>(false_positives), 1.5 * want + 20) << "expected " << want;
  // Save and load, by stream and by bytes, as the same kind and as the others it supports.
  const std::vector<std::byte> bytes = f.to_bytes();
  std::stringstream file;
  f.save(file);
  EXPECT_EQ(file.str().size(), bytes.size());
  const runtime_filter from_stream = runtime_filter::load(file, c.kind);
  EXPECT_EQ(from_stream.to_bytes(), bytes);
  EXPECT_EQ(from_stream.size(), f.size());
  EXPECT_EQ(from_stream.kind(), c.kind);
  EXPECT_EQ(disagreements(from_stream, f, keys), 0u);
  EXPECT_EQ(disagreements(from_stream, f, absent), 0u);
  for (filter_kind k : {filter_kind::sequential, filter_kind::concurrent, filter_kind::lockfree}) {
    if (k == filter_kind::lockfree && !lockfree_supported(c.bits, c.slots)) continue;
    const runtime_filter g = runtime_filter::load(bytes_of(bytes), k);
    EXPECT_EQ(g.kind(), k);
    EXPECT_EQ(g.fingerprint_bits(), c.bits);
    EXPECT_EQ(g.slots_per_bucket(), c.slots);
    EXPECT_EQ(g.to_bytes(), bytes) << ccf::to_string(k);
    EXPECT_EQ(disagreements(g, f, absent), 0u) << ccf::to_string(k);
  }
  // Erase half; the other half stays.
  for (std::size_t i = 0; i < keys.size(); i += 2)
    ASSERT_TRUE(f.erase(keys.views[i]));
  EXPECT_EQ(f.size(), keys.size() / 2);
  for (std::size_t i = 1; i < keys.size(); i += 2)
    ASSERT_TRUE(f.contains(keys.views[i]));
  f.clear();
  EXPECT_EQ(f.size(), 0u);
  EXPECT_FALSE(f.contains(keys.views[1]));
}

TEST_P(every_runtime_layout, batches_hashes_and_bulk_insert) {
  const layout_case c = GetParam();
  const filter_config config{
      .capacity = 20000, .fingerprint_bits = c.bits, .slots_per_bucket = c.slots, .kind = c.kind};
  const string_keys keys(20000, 3), absent(5000, 4);
  runtime_filter f(config), g(config), h(config);
  EXPECT_EQ(f.insert_many(keys.span()), keys.size());
  std::vector<std::uint64_t> hashes;
  for (std::string_view k : keys.views)
    hashes.push_back(g.hash_of(k));
  EXPECT_EQ(g.insert_many_hashes(hashes), keys.size());
  const ccf::bulk_result r = h.bulk_insert(keys.span(), 2);
  EXPECT_EQ(r.inserted, keys.size());
  EXPECT_EQ(r.refused, 0u);
  for (const runtime_filter* x : {&f, &g, &h}) {
    EXPECT_EQ(x->size(), keys.size());
    auto found = std::make_unique<bool[]>(keys.size());
    EXPECT_EQ(x->contains_many(keys.span(), std::span<bool>(found.get(), keys.size())),
              keys.size());
    EXPECT_EQ(x->contains_many_hashes(hashes, std::span<bool>(found.get(), keys.size())),
              keys.size());
  }
  EXPECT_EQ(disagreements(f, g, absent), 0u);  // same hashes in the same order: same table
  auto found = std::make_unique<bool[]>(absent.size());
  const std::size_t hits =
      f.contains_many(absent.span(), std::span<bool>(found.get(), absent.size()));
  std::size_t direct = 0;
  for (std::size_t i = 0; i < absent.size(); ++i) {
    ASSERT_EQ(found[i], f.contains(absent.views[i]));
    direct += found[i] ? 1 : 0;
  }
  EXPECT_EQ(hits, direct);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    ASSERT_EQ(f.count_hash(hashes[i]), f.count(keys.views[i]));
    ASSERT_TRUE(f.erase_hash(hashes[i]));
  }
  EXPECT_EQ(f.size(), 0u);
}

// ---- unsupported layouts ----

/// The message of the std::invalid_argument that constructing `c` throws ("" if none).
std::string construction_error(const filter_config& c) {
  try {
    runtime_filter f(c);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(runtime_filter_errors, unsupported_layouts_throw_invalid_argument_with_a_message) {
  for (unsigned bits : {4u, 8u, 12u, 16u, 32u}) {
    for (unsigned slots : {2u, 4u, 8u}) {
      if (lockfree_supported(bits, slots)) continue;
      const std::string what = construction_error({.capacity = 1000,
                                                   .fingerprint_bits = bits,
                                                   .slots_per_bucket = slots,
                                                   .kind = filter_kind::lockfree});
      EXPECT_NE(what.find("48"), std::string::npos) << bits << " x " << slots << ": " << what;
    }
  }
  for (unsigned bits : {0u, 5u, 24u, 64u}) {
    const std::string what = construction_error({.capacity = 1000, .fingerprint_bits = bits});
    EXPECT_NE(what.find("fingerprint bits"), std::string::npos) << bits << ": " << what;
    EXPECT_NE(what.find(std::to_string(bits)), std::string::npos) << what;
  }
  for (unsigned slots : {0u, 1u, 3u, 16u}) {
    const std::string what = construction_error({.capacity = 1000, .slots_per_bucket = slots});
    EXPECT_NE(what.find("slots per bucket"), std::string::npos) << slots << ": " << what;
  }
  EXPECT_NE(construction_error({.capacity = 0}), "");
  EXPECT_NE(construction_error({.capacity = 10, .kind = static_cast<filter_kind>(7)}), "");
}

TEST(runtime_filter_errors, a_short_output_span_names_the_member_called) {
  // contains_many_hashes's error named contains_many.
  const auto error_of = [](auto&& call) -> std::string {
    try {
      call();
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  for (const filter_config& c :
       {filter_config::for_rate(1000, 0.01), filter_config::growing_for_rate(100, 0.001)}) {
    const runtime_filter f(c);
    const std::vector<std::string_view> keys{"a", "b", "c"};
    const std::vector<std::uint64_t> hashes{1, 2, 3};
    bool found[2] = {};
    const std::string by_key = error_of([&] { f.contains_many(keys, found); });
    const std::string by_hash = error_of([&] { f.contains_many_hashes(hashes, found); });
    EXPECT_NE(by_key.find("ccf: contains_many needs"), std::string::npos) << by_key;
    EXPECT_NE(by_hash.find("ccf: contains_many_hashes needs"), std::string::npos) << by_hash;
  }
}

TEST(runtime_filter, a_moved_from_filter_is_an_empty_filter_of_its_shape) {
  // size() of a moved-from runtime filter crashed on its null model.
  static_assert(std::is_nothrow_move_constructible_v<runtime_filter> &&
                std::is_nothrow_move_assignable_v<runtime_filter>);
  static_assert(std::is_nothrow_move_constructible_v<ccf::growing_cuckoo_filter<u64>> &&
                std::is_nothrow_move_assignable_v<ccf::concurrent_growing_cuckoo_filter<u64>>);
  for (const filter_config& c :
       {filter_config::for_rate(1000, 0.01), filter_config::growing_for_rate(100, 0.001),
        filter_config::growing_for_rate(100, 0.001, filter_kind::concurrent)}) {
    runtime_filter f(c);
    for (int i = 0; i < 900; ++i)
      ASSERT_TRUE(f.insert(std::to_string(i)));
    runtime_filter g(std::move(f));
    EXPECT_EQ(g.size(), 900u);
    EXPECT_TRUE(g.contains("7"));
    EXPECT_EQ(f.size(), 0u);  // NOLINT(bugprone-use-after-move): the state under test
    EXPECT_FALSE(f.contains("7"));
    EXPECT_EQ(f.growing(), c.growing);
    EXPECT_EQ(f.fingerprint_bits(), g.fingerprint_bits());
    ASSERT_TRUE(f.insert("again"));
    EXPECT_TRUE(f.contains("again"));
    runtime_filter h(filter_config::for_rate(10, 0.1));
    h = std::move(g);
    EXPECT_EQ(h.size(), 900u);
    EXPECT_EQ(g.size(), 0u);  // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(runtime_filter::load(std::span<const std::byte>(g.to_bytes())).size(), 0u);
  }
}

TEST(runtime_filter_errors, a_growing_file_loaded_as_lock_free_is_a_bad_argument) {
  // There is no lock-free growing filter: the file is good, the kind asked for is not.
  runtime_filter g(filter_config::growing_for_rate(100, 0.001));
  ASSERT_TRUE(g.insert("a"));
  const std::vector<std::byte> bytes = g.to_bytes();
  EXPECT_THROW(runtime_filter::load(std::span<const std::byte>(bytes), filter_kind::lockfree),
               std::invalid_argument);
  const runtime_filter h =
      runtime_filter::load(std::span<const std::byte>(bytes), filter_kind::concurrent);
  EXPECT_TRUE(h.growing() && h.contains("a"));
}

TEST(runtime_filter_errors, a_filter_past_this_machines_memory_names_the_capacity_asked_for) {
  const std::size_t huge = std::size_t{1} << 44;  // 2^44 items take more than 16 TiB
  if (ccf::detail::physical_memory_bytes() >= (std::uint64_t{1} << 45)) {
    GTEST_SKIP() << "this machine could hold such a filter";
  }
  for (const auto& c :
       {ccf::filter_config::for_rate(huge, 1e-3), ccf::filter_config::growing_for_rate(huge, 1e-3),
        ccf::filter_config::growing_for_rate(huge, 1e-3, ccf::filter_kind::concurrent)}) {
    try {
      ccf::runtime_filter f(c);
      ADD_FAILURE() << "a filter for 2^44 items was made";
    } catch (const std::length_error& e) {
      // A growing filter named its first table's capacity (for 2^40: 2089072092774 items).
      EXPECT_NE(std::string(e.what()).find("for " + std::to_string(huge) + " items"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(runtime_filter_errors, kind_names_round_trip) {
  for (filter_kind k : {filter_kind::sequential, filter_kind::concurrent, filter_kind::lockfree})
    EXPECT_EQ(ccf::parse_filter_kind(ccf::to_string(k)), k);
  EXPECT_EQ(ccf::parse_filter_kind("lock-free"), std::nullopt);
  EXPECT_EQ(ccf::parse_filter_kind(""), std::nullopt);
  EXPECT_STREQ(ccf::to_string(filter_kind::lockfree), "lockfree");
}

// ---- for_rate ----

/// False positives among `absent` fresh keys of a filter holding n keys.
double measured_fpr(runtime_filter& f, std::size_t n, std::size_t absent) {
  const string_keys keys(n, 5);
  EXPECT_EQ(f.insert_many(keys.span()), n);
  std::size_t hits = 0;
  for (std::size_t done = 0; done < absent; done += 100000) {
    const string_keys batch(std::min<std::size_t>(100000, absent - done), 1000 + done / 100000);
    hits += static_cast<std::size_t>(std::count_if(
        batch.views.begin(), batch.views.end(), [&](std::string_view k) { return f.contains(k); }));
  }
  return static_cast<double>(hits) / static_cast<double>(absent);
}

TEST(for_rate, picks_the_smallest_layout_and_meets_the_rate) {
  const auto n = static_cast<std::size_t>(200000 * std::min(1.0, test_scale()));
  for (double fpr : {0.01, 0.001, 1e-4}) {
    SCOPED_TRACE(testing::Message() << "fpr " << fpr);
    const filter_config c = filter_config::for_rate(n, fpr);
    const ccf::filter_params p = ccf::smallest_layout_for(n, fpr);
    EXPECT_EQ(c.fingerprint_bits, p.fingerprint_bits);
    EXPECT_EQ(c.slots_per_bucket, p.slots_per_bucket);
    EXPECT_EQ(c.capacity, n);
    EXPECT_EQ(c.kind, filter_kind::sequential);
    EXPECT_LE(p.expected_fpr, fpr);
    runtime_filter f(c);
    EXPECT_EQ(f.num_buckets(), p.num_buckets);
    // Enough absent keys for about 100 expected false positives at least.
    const std::size_t absent = std::max<std::size_t>(100000, static_cast<std::size_t>(100 / fpr));
    const double measured = measured_fpr(f, n, absent);
    EXPECT_LE(measured, 1.5 * fpr)
        << "layout " << c.fingerprint_bits << " x " << c.slots_per_bucket;
    EXPECT_LE(f.expected_fpr(), fpr);
    EXPECT_NEAR(f.design_fpr(), fpr, fpr) << "design rate of a filter built for the rate";
  }
}

TEST(for_rate, one_in_ten_thousand_for_a_million_keys_is_16_bit_tags_in_2_slots) {
  const filter_config c = filter_config::for_rate(1000000, 1e-4);
  EXPECT_EQ(c.fingerprint_bits, 16u);
  EXPECT_EQ(c.slots_per_bucket, 2u);
  const ccf::filter_params p = ccf::smallest_layout_for(1000000, 1e-4);
  EXPECT_LT(p.bits_per_item, 32.0);
  EXPECT_LT(p.bits_per_item, ccf::params_for(1000000, 1e-4).bits_per_item);
  EXPECT_EQ(ccf::params_for(1000000, 1e-4).fingerprint_bits, 32u);
  // The lock-free kind supports 16 x 2 too.
  EXPECT_EQ(filter_config::for_rate(1000000, 1e-4, filter_kind::lockfree).slots_per_bucket, 2u);
}

TEST(for_rate, lock_free_configs_are_layouts_the_lock_free_filter_has) {
  const auto n = static_cast<std::size_t>(100000 * std::min(1.0, test_scale()));
  // 5e-4: the smallest layout is 16 x 4, which the lock-free filter cannot have; 16 x 2 reaches
  // it (a fallback that tried 4-slot buckets only refused every rate from 1.2e-4 to 8e-4).
  for (double fpr : {0.05, 0.01, 0.001, 5e-4, 2e-4, 1e-4}) {
    const filter_config c = filter_config::for_rate(n, fpr, filter_kind::lockfree);
    EXPECT_TRUE(lockfree_supported(c.fingerprint_bits, c.slots_per_bucket)) << fpr;
    runtime_filter f(c);
    EXPECT_EQ(f.kind(), filter_kind::lockfree);
    EXPECT_LE(measured_fpr(f, n, 200000), 1.5 * fpr + 1e-4) << fpr;
  }
  EXPECT_THROW(filter_config::for_rate(n, 1e-7, filter_kind::lockfree), std::invalid_argument);
  EXPECT_EQ(filter_config::for_rate(n, 1e-7).fingerprint_bits, 32u);
}

// A lock-free bucket is one 64-bit word whatever its tags fill: for_rate ranked lock-free
// layouts by their tag bits, and chose 4 x 4 for a rate of 0.5 (more words than 12 x 4, and 38 %
// false positives against 0.2 %) and 12 x 2 for 1e-3 (the words of 16 x 2, at 16 times the
// rate).
TEST(for_rate, lock_free_layouts_are_ranked_by_their_words) {
  const std::size_t n = 1000000;
  for (double fpr : {0.5, 0.1, 0.01, 1e-3, 1e-4}) {
    const filter_config c = filter_config::for_rate(n, fpr, filter_kind::lockfree);
    const std::size_t words =
        ccf::detail::buckets_for_capacity(n, c.slots_per_bucket, c.fingerprint_bits);
    const double load = static_cast<double>(n) / static_cast<double>(words * c.slots_per_bucket);
    const double rate = ccf::expected_fpr(c.fingerprint_bits, c.slots_per_bucket, load);
    for (unsigned slots : {2U, 4U, 8U}) {
      for (unsigned bits : ccf::detail::fingerprint_widths) {
        if (!lockfree_supported(bits, slots)) continue;
        const std::size_t w = ccf::detail::buckets_for_capacity(n, slots, bits);
        const double l = static_cast<double>(n) / static_cast<double>(w * slots);
        const double r = ccf::expected_fpr(bits, slots, l);
        if (r > fpr) continue;
        EXPECT_LE(words, w) << fpr << ": " << bits << " x " << slots << " takes fewer words";
        if (w == words) {
          EXPECT_LE(rate, r) << fpr << ": " << bits << " x " << slots;
        }
      }
    }
  }
  const filter_config half = filter_config::for_rate(n, 0.5, filter_kind::lockfree);
  EXPECT_EQ(half.fingerprint_bits, 12u);
  EXPECT_EQ(half.slots_per_bucket, 4u);
  const filter_config milli = filter_config::for_rate(n, 1e-3, filter_kind::lockfree);
  EXPECT_EQ(milli.fingerprint_bits, 16u);
  EXPECT_EQ(milli.slots_per_bucket, 2u);
}

// The Redis module's BUCKETSIZE took a width from a bound that ignores the load
// (detail::params_with_slots): naming for_rate's own bucket size doubled the table.
TEST(for_rate, with_slots_is_for_rate_among_buckets_of_that_size) {
  const std::size_t n = 1000000;
  for (double fpr : {0.99, 0.5, 0.05, 0.01, 1e-3, 1e-4, 1e-6}) {
    const filter_config best = filter_config::for_rate(n, fpr);
    EXPECT_EQ(filter_config::for_rate_with_slots(n, fpr, best.slots_per_bucket).fingerprint_bits,
              best.fingerprint_bits)
        << fpr;
    for (unsigned slots : {2U, 4U, 8U}) {
      const filter_config c = filter_config::for_rate_with_slots(n, fpr, slots);
      EXPECT_EQ(c.slots_per_bucket, slots);
      EXPECT_EQ(c.capacity, n);
      // No width reaches fpr in buckets of this size with fewer bits (short tags may need more
      // buckets: their alternate buckets are fewer).
      const auto bits_of = [&](unsigned bits) {
        return bits * slots * ccf::detail::buckets_for_capacity(n, slots, bits);
      };
      for (unsigned bits : ccf::detail::fingerprint_widths) {
        const std::size_t b = ccf::detail::buckets_for_capacity(n, slots, bits);
        const double load = static_cast<double>(n) / static_cast<double>(b * slots);
        if (ccf::expected_fpr(bits, slots, load) <= fpr) {
          EXPECT_LE(bits_of(c.fingerprint_bits), bits_of(bits)) << fpr << ": " << bits;
        }
      }
      const std::size_t b = ccf::detail::buckets_for_capacity(n, slots, c.fingerprint_bits);
      EXPECT_LE(ccf::expected_fpr(c.fingerprint_bits, slots,
                                  static_cast<double>(n) / static_cast<double>(b * slots)),
                fpr);
    }
  }
  EXPECT_EQ(filter_config::for_rate_with_slots(n, 0.99, 8).fingerprint_bits, 4u);
  EXPECT_THROW(filter_config::for_rate_with_slots(n, 0.01, 3), std::invalid_argument);
  EXPECT_THROW(filter_config::for_rate_with_slots(n, 0.01, 0), std::invalid_argument);
  try {
    filter_config::for_rate_with_slots(n, 1e-12, 2);
    ADD_FAILURE() << "no layout of 2 slots reaches 1e-12";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("no layout of 2 slots a bucket reaches"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(filter_config::for_rate_with_slots(n, 1e-7, 8, filter_kind::lockfree),
               std::invalid_argument);
  const filter_config lockfree =
      filter_config::for_rate_with_slots(n, 0.01, 4, filter_kind::lockfree);
  EXPECT_TRUE(lockfree_supported(lockfree.fingerprint_bits, 4));
}

// ---- files shared with the typed filters ----

TEST(runtime_files, a_typed_string_filter_file_loads_into_a_runtime_filter_and_back) {
  using typed = ccf::cuckoo_filter<std::string, 12, 4>;
  const string_keys keys(10000, 6), absent(20000, 7);
  typed t(20000, 99);
  for (const std::string& k : keys.storage)
    ASSERT_TRUE(t.insert(k));
  const auto bytes = t.to_bytes();
  for (filter_kind kind :
       {filter_kind::sequential, filter_kind::concurrent, filter_kind::lockfree}) {
    const runtime_filter r = runtime_filter::load(bytes_of(bytes), kind);
    EXPECT_EQ(r.fingerprint_bits(), 12u);
    EXPECT_EQ(r.slots_per_bucket(), 4u);
    EXPECT_EQ(r.seed(), 99u);
    EXPECT_EQ(r.size(), t.size());
    EXPECT_EQ(r.to_bytes(), bytes);
    for (std::size_t i = 0; i < keys.size(); ++i)
      ASSERT_TRUE(r.contains(keys.views[i]));
    for (std::size_t i = 0; i < absent.size(); ++i)
      ASSERT_EQ(r.contains(absent.views[i]), t.contains(absent.storage[i])) << i;
  }
  // A runtime filter's file loads into the typed filter.
  runtime_filter r({.capacity = 20000,
                    .fingerprint_bits = 12,
                    .slots_per_bucket = 4,
                    .kind = filter_kind::lockfree,
                    .seed = 5});
  EXPECT_EQ(r.insert_many(keys.span()), keys.size());
  std::stringstream file;
  r.save(file);
  typed u(file);
  EXPECT_EQ(u.size(), r.size());
  EXPECT_EQ(u.seed(), 5u);
  EXPECT_EQ(u.to_bytes(), r.to_bytes());
  for (std::size_t i = 0; i < absent.size(); ++i)
    ASSERT_EQ(u.contains(absent.storage[i]), r.contains(absent.views[i])) << i;
  for (const std::string& k : keys.storage)
    ASSERT_TRUE(u.contains(k));
  // Other layouts and key types are refused.
  const auto runtime_bytes = r.to_bytes();
  EXPECT_THROW((ccf::cuckoo_filter<std::string, 16, 4>{bytes_of(runtime_bytes)}),
               ccf::format_error);
  ccf::cuckoo_filter<u64, 12, 4> ints(1000);
  EXPECT_THROW(runtime_filter::load(bytes_of(ints.to_bytes())), ccf::format_error);
}

TEST(runtime_files, read_filter_info_returns_the_header_fields) {
  runtime_filter f({.capacity = 600000,
                    .fingerprint_bits = 12,
                    .slots_per_bucket = 4,
                    .kind = filter_kind::concurrent,
                    .seed = 1234,
                    .max_kicks = 321});
  const string_keys keys(1000, 8);
  f.insert_many(keys.span());
  const auto bytes = f.to_bytes();
  std::stringstream file;
  f.save(file);
  const ccf::filter_file_info from_bytes = ccf::read_filter_info(bytes_of(bytes));
  const ccf::filter_file_info from_stream = ccf::read_filter_info(file);
  for (const ccf::filter_file_info& info : {from_bytes, from_stream}) {
    EXPECT_EQ(info.fingerprint_bits, 12u);
    EXPECT_EQ(info.slots_per_bucket, 4u);
    EXPECT_EQ(info.alternate, "chunked");
    EXPECT_EQ(info.num_buckets, f.num_buckets());
    EXPECT_EQ(info.chunks, f.chunks());
    EXPECT_EQ(info.chunks, 2u);
    EXPECT_EQ(info.seed, 1234u);
    EXPECT_EQ(info.max_kicks, 321u);
    EXPECT_EQ(info.capacity, f.capacity());
    EXPECT_EQ(info.file_bytes, bytes.size());
  }
  EXPECT_EQ(f.max_kicks(), 321u);
  // Truncated, extended, header-only and non-ccf buffers are refused.
  std::vector<std::byte> longer = bytes;
  longer.push_back(std::byte{0});
  const auto all = bytes_of(bytes);
  for (std::span<const std::byte> bad :
       {all.first(all.size() - 1), bytes_of(longer), all.first(80), all.first(40)}) {
    EXPECT_THROW(ccf::read_filter_info(bad), ccf::format_error) << bad.size() << " bytes";
    EXPECT_THROW(runtime_filter::load(bad), ccf::format_error) << bad.size() << " bytes";
  }
  std::stringstream cut(file.str().substr(0, bytes.size() - 8));
  EXPECT_THROW(ccf::read_filter_info(cut), ccf::format_error);
  // The header alone, from the first bytes of a file (a file still arriving).
  for (std::size_t first : {std::size_t{80}, std::size_t{100}, bytes.size()}) {
    EXPECT_EQ(ccf::read_filter_header(all.first(first)).file_bytes, bytes.size());
    EXPECT_EQ(runtime_filter::read_header(all.first(first)).max_kicks, 321u);
  }
  EXPECT_THROW(ccf::read_filter_header(all.first(79)), ccf::format_error);
  EXPECT_THROW(runtime_filter::read_header(all.first(79)), ccf::format_error);
  // A layout the runtime filter does not build (24-bit tags in buckets of 2: the words of 12 x 4)
  // is a file's header, but not one the runtime filter loads.
  std::vector<std::byte> unbuilt(bytes.begin(), bytes.begin() + 80);
  unbuilt[12] = std::byte{24};
  unbuilt[16] = std::byte{2};
  EXPECT_EQ(ccf::read_filter_header(unbuilt).fingerprint_bits, 24u);
  EXPECT_THROW(runtime_filter::read_header(unbuilt), ccf::format_error);
  std::vector<std::byte> junk = bytes;
  junk[0] = std::byte{'X'};
  EXPECT_THROW(ccf::read_filter_info(bytes_of(junk)), ccf::format_error);
  // A global-alternate filter says so.
  ccf::cuckoo_filter<u64, 16, 2, ccf::hash<u64>, ccf::global_alternate> global(600000, 3);
  const ccf::filter_file_info g = ccf::read_filter_info(bytes_of(global.to_bytes()));
  EXPECT_EQ(g.alternate, "global");
  EXPECT_EQ(g.chunks, 1u);
  EXPECT_EQ(g.slots_per_bucket, 2u);
  EXPECT_EQ(g.num_buckets, global.num_buckets());
  // The runtime filter holds chunked-alternate filters only: a string-key filter's file with the
  // global alternate is refused, and the message names the alternate.
  ccf::cuckoo_filter<std::string, 16, 4, ccf::hash<std::string>, ccf::global_alternate> words(100);
  words.insert("a");
  try {
    (void)runtime_filter::load(bytes_of(words.to_bytes()));
    ADD_FAILURE() << "a global-alternate file loaded into a runtime filter";
  } catch (const ccf::format_error& e) {
    EXPECT_NE(std::string(e.what()).find("alternate"), std::string::npos) << e.what();
  }
}

// ---- threads ----

TEST(runtime_threads, two_threads_inserting_disjoint_keys_lose_nothing) {
  const auto per_thread = static_cast<std::size_t>(50000 * std::min(1.0, test_scale()));
  for (filter_kind kind : {filter_kind::concurrent, filter_kind::lockfree}) {
    SCOPED_TRACE(ccf::to_string(kind));
    runtime_filter f({.capacity = 2 * per_thread, .fingerprint_bits = 12, .kind = kind});
    const string_keys a(per_thread, 20), b(per_thread, 21);
    std::atomic<std::size_t> failures{0};
    run_threads(2, [&](int t) {
      const string_keys& mine = t == 0 ? a : b;
      for (std::size_t i = 0; i < mine.size(); ++i) {
        if (!f.insert(mine.views[i])) failures.fetch_add(1);
        if (!f.contains(mine.views[i / 2])) failures.fetch_add(1);
      }
    });
    EXPECT_EQ(failures.load(), 0u);
    EXPECT_EQ(f.size(), 2 * per_thread);
    for (const string_keys* keys : {&a, &b}) {
      auto found = std::make_unique<bool[]>(per_thread);
      EXPECT_EQ(f.contains_many(keys->span(), std::span<bool>(found.get(), per_thread)),
                per_thread);
    }
  }
}

/// memory_in_bytes() of `f`, made when the heap held `before`, against what the heap holds now.
void expect_memory_is_the_heap_it_took(const runtime_filter& f, std::size_t before,
                                       const std::string& what) {
  const std::size_t heap = *heap_in_use() - before, reported = f.memory_in_bytes();
  std::printf("[ memory ] %s: heap %zu bytes, memory_in_bytes %zu\n", what.c_str(), heap, reported);
  EXPECT_LE(reported, heap) << what;
  EXPECT_LE(heap, reported + reported / 50 + 1024) << what << ": it holds more than it says";
}

TEST(runtime_memory, memory_in_bytes_counts_a_concurrent_filters_locks_and_counters) {
  // A concurrent filter for 1,000 items reported its 1,840-byte table and held 10 KB: its lock
  // words and counter shards were not counted (Python's memory_in_bytes said 6 times too little).
  for (filter_kind kind :
       {filter_kind::sequential, filter_kind::concurrent, filter_kind::lockfree}) {
    const std::string name = ccf::to_string(kind);
    for (const std::size_t capacity : {std::size_t{1000}, std::size_t{1} << 20}) {
      const std::optional<std::size_t> before = heap_in_use();
      const runtime_filter f(ccf::filter_config::for_rate(capacity, 0.001, kind));
      EXPECT_GE(f.memory_in_bytes(), f.size_in_bytes()) << name;
      if (kind == filter_kind::sequential) {
        EXPECT_EQ(f.memory_in_bytes(), f.size_in_bytes());
      }
      if (before) {  // a glibc heap to measure (not in sanitizer builds)
        expect_memory_is_the_heap_it_took(f, *before, name + " " + std::to_string(capacity));
      }
    }
    const std::optional<std::size_t> before = heap_in_use();
    if (kind == filter_kind::lockfree || !before) continue;
    const runtime_filter g(ccf::filter_config::growing_for_rate(1000, 0.001, kind));
    expect_memory_is_the_heap_it_took(g, *before, "growing " + name);
  }
}

// ---- the rate model ----

TEST(runtime_rates, expected_and_design_fpr_follow_the_model) {
  runtime_filter f({.capacity = 20000, .fingerprint_bits = 8, .slots_per_bucket = 4});
  const auto tags = static_cast<double>(f.size_in_tags());
  EXPECT_EQ(f.size_in_tags(), f.num_buckets() * 4);
  EXPECT_EQ(f.expected_fpr(), 0.0);
  const double design = ccf::expected_fpr(8, 4, static_cast<double>(f.capacity()) / tags);
  EXPECT_DOUBLE_EQ(f.design_fpr(), design);
  const string_keys keys(f.capacity(), 9);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(f.insert(keys.views[i]));
    if (i == keys.size() / 2) {
      EXPECT_DOUBLE_EQ(f.load_factor(), static_cast<double>(f.size()) / tags);
      EXPECT_DOUBLE_EQ(f.expected_fpr(), ccf::expected_fpr(8, 4, f.load_factor()));
      EXPECT_LT(f.expected_fpr(), design);
    }
  }
  // Full to capacity: the current rate is the design rate, about 2 b load / 255.
  EXPECT_DOUBLE_EQ(f.expected_fpr(), f.design_fpr());
  EXPECT_NEAR(f.design_fpr(), 8 * f.load_factor() / 255, 0.002);
  EXPECT_DOUBLE_EQ(f.design_fpr(), design);  // does not change with the load
  // The measured rate at that load agrees with the model.
  const string_keys absent(200000, 10);
  const auto hits = static_cast<double>(std::count_if(
      absent.views.begin(), absent.views.end(), [&](std::string_view k) { return f.contains(k); }));
  const double want = f.expected_fpr() * static_cast<double>(absent.size());
  EXPECT_NEAR(hits, want, 5 * std::sqrt(want) + 0.03 * want);
}

}  // namespace
}  // namespace ccf_test
