// Mixed batches (apply_many): a stream of contains, insert and erase gives the answers and the
// table that the same calls made one at a time give, in tables that stay in the caches and in
// larger ones (whose batches fetch buckets ahead); bad arguments change nothing; and concurrent
// mixed batches lose no key.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <ccf/detail/cuckoo_engine.hpp>
#include <ccf/growing_cuckoo_filter.hpp>
#include <ccf/runtime_filter.hpp>

#include "filter_types.hpp"
#include "run_threads.hpp"

namespace ccf_test {
namespace {

using ccf::operation;
using ccf::operation_kind;

/// The smallest power-of-two capacity from `from` whose table is larger than the engine's
/// in-cache limit (batches of such tables take the prefetching path).
template <class F>
std::size_t capacity_past_cache(std::size_t from) {
  std::size_t c = from;
  while (F(c).size_in_bytes() <= F::engine_type::cached_table_bytes)
    c *= 2;
  return c;
}

/// A mixed stream: inserts of fresh keys until about `live` more were inserted than erased
/// (more than the table holds, so that inserts near the end are refused), lookups of inserted
/// and of absent keys, and erases of inserted keys (some of them refused or erased already).
std::vector<operation<u64>> mixed_stream(std::size_t live, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<operation<u64>> ops;
  std::vector<u64> inserted;
  std::size_t erased = 0;
  while (inserted.size() < live + erased) {
    const unsigned draw = static_cast<unsigned>(rng() % 10);
    if (draw < 6 || inserted.empty()) {
      inserted.push_back(key_of(inserted.size(), 11));
      ops.push_back({operation_kind::insert, inserted.back()});
    } else if (draw < 8) {
      ops.push_back({operation_kind::contains, inserted[rng() % inserted.size()]});
    } else if (draw < 9) {
      ops.push_back({operation_kind::contains, key_of(rng() % (inserted.size() + 1), 12)});
    } else {
      ops.push_back({operation_kind::erase, inserted[rng() % inserted.size()]});
      ++erased;
    }
  }
  return ops;
}

/// The stream's answers one call at a time must include a refused insert followed by a true
/// answer: the batch went on after the refusal.
template <class K>
void expect_refusal_then_more(const std::vector<operation<K>>& ops,
                              const std::vector<char>& expected) {
  std::size_t i = 0;
  while (i < ops.size() && !(ops[i].kind == operation_kind::insert && expected[i] == 0))
    ++i;
  ASSERT_LT(i, ops.size()) << "no insert of the stream was refused";
  EXPECT_NE(std::find(expected.begin() + static_cast<std::ptrdiff_t>(i), expected.end(), 1),
            expected.end());
}

/// apply_many of ops[at, at + len) into got[at, at + len); the results are preset to the
/// opposite of the expected ones, so that a result never written shows.
template <class F, class K>
void apply_into(F& f, std::span<const operation<K>> ops, const std::vector<char>& expected,
                std::vector<char>& got) {
  std::unique_ptr<bool[]> r(new bool[ops.size()]);
  const std::size_t at = static_cast<std::size_t>(got.size());
  for (std::size_t i = 0; i < ops.size(); ++i)
    r[i] = expected[at + i] == 0;
  const std::size_t yes = f.apply_many(ops, std::span<bool>(r.get(), ops.size()));
  ASSERT_EQ(yes, static_cast<std::size_t>(std::count(r.get(), r.get() + ops.size(), true)));
  for (std::size_t i = 0; i < ops.size(); ++i)
    got.push_back(r[i] ? 1 : 0);
}

template <class F, class K>
bool one_call(F& f, const operation<K>& op) {
  switch (op.kind) {
    case operation_kind::insert:
      return f.insert(op.key);
    case operation_kind::erase:
      return f.erase(op.key);
    default:
      return f.contains(op.key);
  }
}

template <class F>
class apply_many : public ::testing::Test {};
TYPED_TEST_SUITE(apply_many, all_filters);

template <class F>
void expect_as_one_at_a_time(std::size_t capacity, double scale) {
  F batched(capacity, 5), single(capacity, 5);
  const auto ops = mixed_stream(
      static_cast<std::size_t>(scale * static_cast<double>(single.size_in_tags())), 21);
  std::vector<char> expected;
  for (const auto& op : ops)
    expected.push_back(one_call(single, op) ? 1 : 0);
  expect_refusal_then_more(ops, expected);
  // Batches of sizes around the prefetch block's, then the rest at once.
  std::vector<char> got;
  for (std::size_t len : {1, 7, 16, 17, 33, 1000})
    apply_into(batched, std::span(ops).subspan(got.size(), len), expected, got);
  apply_into(batched, std::span(ops).subspan(got.size()), expected, got);
  for (std::size_t i = 0; i < ops.size(); ++i)
    ASSERT_EQ(got[i], expected[i]) << "operation " << i << " of " << ops.size();
  EXPECT_EQ(batched.size(), single.size());
  if constexpr (F::has_file_format) {
    EXPECT_EQ(batched.to_bytes(), single.to_bytes());
  }
}

TYPED_TEST(apply_many, a_table_in_the_caches_answers_as_the_calls_one_at_a_time) {
  using F = TypeParam;
  ASSERT_LE(F(3000).size_in_bytes(), F::engine_type::cached_table_bytes);
  expect_as_one_at_a_time<F>(3000, 1.05);
}

TYPED_TEST(apply_many, a_table_in_memory_answers_as_the_calls_one_at_a_time) {
  using F = TypeParam;
  const std::size_t c = capacity_past_cache<F>(std::size_t{1} << 16);
  ASSERT_GT(F(c).size_in_bytes(), F::engine_type::cached_table_bytes);
  expect_as_one_at_a_time<F>(c, 1.02);
}

TYPED_TEST(apply_many, by_hash_answers_as_by_key) {
  using F = TypeParam;
  const std::size_t c = capacity_past_cache<F>(std::size_t{1} << 16);
  F by_key(c, 9), by_hash(c, 9);
  const auto ops = mixed_stream(by_key.size_in_tags() / 2, 3);
  std::vector<operation<std::uint64_t>> hashed;
  for (const auto& op : ops)
    hashed.push_back({op.kind, by_hash.hash_of(op.key)});
  std::unique_ptr<bool[]> a(new bool[ops.size()]), b(new bool[ops.size()]);
  const std::size_t ya = by_key.apply_many(ops, std::span<bool>(a.get(), ops.size()));
  const std::size_t yb = by_hash.apply_many_hashes(hashed, std::span<bool>(b.get(), ops.size()));
  EXPECT_EQ(ya, yb);
  EXPECT_TRUE(std::equal(a.get(), a.get() + ops.size(), b.get()));
  EXPECT_EQ(by_key.size(), by_hash.size());
}

TYPED_TEST(apply_many, bad_arguments_run_no_operation) {
  using F = TypeParam;
  F f(1000);
  const ccf::operation deduced{operation_kind::insert, u64{1}};  // the deduction guide
  static_assert(std::is_same_v<decltype(deduced), const operation<u64>>);
  std::vector<operation<u64>> ops;
  for (u64 i = 0; i < 8; ++i)
    ops.push_back({operation_kind::insert, key_of(i, 4)});
  bool r[8] = {};
  EXPECT_THROW(f.apply_many(ops, std::span<bool>(r, 7)), std::invalid_argument);
  EXPECT_EQ(f.size(), 0U);
  ops[5].kind = static_cast<operation_kind>(3);
  try {
    f.apply_many(ops, r);
    ADD_FAILURE() << "an operation of kind 3 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("operation 5 has kind 3"), std::string::npos) << e.what();
  }
  EXPECT_EQ(f.size(), 0U);
  EXPECT_FALSE(f.contains(key_of(0, 4)));
  ops[5].kind = operation_kind::erase;
  EXPECT_EQ(f.apply_many(ops, r), 7U);  // the erase of a key never inserted is false
  EXPECT_FALSE(r[5]);
  EXPECT_EQ(f.size(), 7U);
  EXPECT_EQ(f.apply_many({}, {}), 0U);
}

/// Runs `ops` through apply_many on one filter and one call at a time on its twin; both give
/// the same answers and end up as the same bytes.
template <class F, class K>
void expect_twins_agree(F& batched, F& single, const std::vector<operation<K>>& ops,
                        bool refusals) {
  std::vector<char> expected;
  for (const auto& op : ops)
    expected.push_back(one_call(single, op) ? 1 : 0);
  if (refusals) expect_refusal_then_more(ops, expected);
  std::vector<char> got;
  apply_into(batched, std::span(ops).subspan(0, 100), expected, got);
  apply_into(batched, std::span(ops).subspan(100), expected, got);
  for (std::size_t i = 0; i < ops.size(); ++i)
    ASSERT_EQ(got[i], expected[i]) << "operation " << i << " of " << ops.size();
  EXPECT_EQ(batched.size(), single.size());
  EXPECT_EQ(batched.to_bytes(), single.to_bytes());
}

/// A results span one short, or a bad kind at operation 5 of 8 inserts, given to `member`
/// (apply(ops, results) calls it): invalid_argument naming it, and no operation ran.
template <class F, class K, class Apply>
void expect_bad_arguments_refused(F& f, std::vector<operation<K>> ops, const std::string& member,
                                  Apply&& apply) {
  ASSERT_EQ(ops.size(), 8U);
  const std::size_t before = f.size();
  bool r[8] = {};
  EXPECT_THROW(apply(ops, std::span<bool>(r, 7)), std::invalid_argument);
  ops[5].kind = static_cast<operation_kind>(7);
  try {
    apply(ops, r);
    ADD_FAILURE() << "an operation of kind 7 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(member + ": operation 5 has kind 7"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(f.size(), before);
}
template <class F, class K>
void expect_bad_arguments_refused(F& f, std::vector<operation<K>> ops) {
  expect_bad_arguments_refused(f, std::move(ops), "apply_many",
                               [&f](const auto& o, std::span<bool> r) { f.apply_many(o, r); });
}

TEST(apply_many_growing, answers_as_the_calls_one_at_a_time_across_doublings) {
  ccf::growing_cuckoo_filter<u64> batched(1000, 1e-4), single(1000, 1e-4);
  const auto ops = mixed_stream(20000, 8);
  expect_twins_agree(batched, single, ops, false);
  EXPECT_GE(batched.doublings(), 4U);
  std::vector<operation<u64>> keys;
  std::vector<operation<std::uint64_t>> hashed;
  for (std::size_t i = 0; i < 8; ++i) {
    keys.push_back({operation_kind::insert, key_of(i, 99)});
    hashed.push_back({operation_kind::insert, batched.hash_of(key_of(i, 99))});
  }
  expect_bad_arguments_refused(batched, keys);
  expect_bad_arguments_refused(
      batched, hashed, "apply_many_hashes",
      [&](const auto& o, std::span<bool> r) { batched.apply_many_hashes(o, r); });
  EXPECT_FALSE(batched.contains(key_of(0, 99)));
}

TEST(apply_many_runtime, every_kind_answers_as_the_calls_one_at_a_time) {
  using ccf::filter_config;
  using ccf::filter_kind;
  // The static ones: tables of more than 1 MiB (prefetching batches) and one in the caches.
  for (const filter_config& c :
       {filter_config{.capacity = 600000}, filter_config{.capacity = 3000},
        filter_config{.capacity = 1200000,
        .fingerprint_bits = 12,
        .slots_per_bucket = 2,
        .kind = filter_kind::concurrent},
        filter_config{.capacity = 600000, .fingerprint_bits = 12, .kind = filter_kind::lockfree},
        filter_config::growing_for_rate(1000, 1e-4),
        filter_config::growing_for_rate(1000, 1e-4, filter_kind::concurrent)}) {
    SCOPED_TRACE("capacity " + std::to_string(c.capacity) + ", kind " +
                 std::to_string(static_cast<int>(c.kind)) + (c.growing ? ", growing" : ""));
    ccf::runtime_filter batched(c), single(c);
    if (c.capacity > 3000) {
      EXPECT_GT(batched.size_in_bytes(), std::size_t{1} << 20);
    }
    const auto numbers = mixed_stream(c.growing ? 20000 : batched.size_in_tags() * 21 / 20, 6);
    std::vector<std::string> keys;
    for (const auto& op : numbers)
      keys.push_back("key-" + std::to_string(op.key));
    std::vector<operation<std::string_view>> ops;
    for (std::size_t i = 0; i < numbers.size(); ++i)
      ops.push_back({numbers[i].kind, keys[i]});
    expect_twins_agree(batched, single, ops, !c.growing);
    const std::vector<std::string> never = {"n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7"};
    std::vector<operation<std::string_view>> bad;
    for (const std::string& k : never)
      bad.push_back({operation_kind::insert, k});
    expect_bad_arguments_refused(batched, bad);
    EXPECT_FALSE(batched.contains("n0"));
  }
}

template <class F>
class apply_many_concurrent : public ::testing::Test {};
TYPED_TEST_SUITE(apply_many_concurrent, concurrent_filters);

// Threads run mixed batches of their own keys on one table filled to about 90 %: each looks up
// the keys it holds (a miss is a false negative), inserts fresh ones and erases some it holds.
// In the end the table holds exactly the keys still held.
TYPED_TEST(apply_many_concurrent, no_key_is_lost) {
  using F = TypeParam;
  const int threads = 4;
  const std::size_t c = capacity_past_cache<F>(std::size_t{1} << 16);
  F f(c);
  const std::size_t per_thread = static_cast<std::size_t>(
      0.9 * static_cast<double>(f.size_in_tags()) * std::min(1.0, test_scale()) / threads);
  std::vector<std::size_t> held_at_end(threads), refused(threads);
  run_threads(threads, [&](int t) {
    std::mt19937_64 rng(static_cast<std::uint64_t>(t) + 100);
    std::deque<u64> held;
    std::vector<u64> batch_inserts;
    std::size_t next = 0;
    const std::size_t batch = 64;
    std::unique_ptr<bool[]> r(new bool[batch]);
    while (next < per_thread) {
      std::vector<operation<u64>> ops;
      batch_inserts.clear();
      std::size_t erases = 0;
      while (ops.size() < batch) {
        const unsigned draw = static_cast<unsigned>(rng() % 10);
        if (draw < 5 || held.size() < 2 * batch) {
          ops.push_back({operation_kind::insert, key_of(next++, 50 + t)});
        } else if (draw < 9) {
          // Not one of the first `batch`, which this batch's erases may take first.
          ops.push_back({operation_kind::contains, held[batch + rng() % (held.size() - batch)]});
        } else {
          ops.push_back({operation_kind::erase, held[erases++]});  // each held key once
        }
      }
      f.apply_many(ops, std::span<bool>(r.get(), batch));
      for (std::size_t i = 0; i < batch; ++i) {
        if (ops[i].kind == operation_kind::contains) {
          ASSERT_TRUE(r[i]) << "false negative in a mixed batch, thread " << t;
        } else if (ops[i].kind == operation_kind::erase) {
          ASSERT_TRUE(r[i]) << "the erase of a held key failed, thread " << t;
        } else if (r[i]) {
          held.push_back(ops[i].key);
        } else {
          ++refused[t];
        }
      }
      held.erase(held.begin(), held.begin() + static_cast<std::ptrdiff_t>(erases));
    }
    for (u64 k : held)
      ASSERT_TRUE(f.contains(k)) << "false negative after the batches, thread " << t;
    held_at_end[t] = held.size();
  });
  std::size_t held = 0;
  for (int t = 0; t < threads; ++t)
    held += held_at_end[t];
  EXPECT_EQ(f.size(), held);
  EXPECT_EQ(refused, std::vector<std::size_t>(threads, 0));
}

}  // namespace
}  // namespace ccf_test
