// ccf::kv::store (include/ccf/kv/store.hpp) through the POSIX file system: the API (put, get,
// contains, erase, size, limits, open options, the directory lock, close), a randomized
// differential test against std::map across reopen (with and without the index snapshot) and
// compaction for every durability mode, index growth from a tiny start and sizing by
// expected_keys, duplicate keys, stats(), and for_each. Recovery, snapshots and corruption are in
// kv_recovery_test.cpp, concurrent readers and writers in kv_concurrent_test.cpp.
#include <gtest/gtest.h>

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <ccf/kv/store.hpp>

#include "kv_test_util.hpp"

namespace {

using ccf::kv::durability;
using ccf::kv::options;
using ccf::kv::store;
using ccf_test::scaled;
using ccf_test::temp_dir;

options with_sync(durability d) {
  options o;
  o.sync = d;
  return o;
}

// ---------------------------------------------------------------------------------------------
// The API

TEST(kv_store, put_get_contains_erase_size) {
  temp_dir dir;
  auto s = store::open(dir / "db");
  EXPECT_TRUE(s->opened().created);
  EXPECT_EQ(s->path(), dir / "db");
  EXPECT_EQ(s->size(), 0u);
  EXPECT_FALSE(s->get("a").has_value());
  EXPECT_FALSE(s->contains("a"));
  EXPECT_FALSE(s->erase("a"));  // absent
  s->put("a", "1");
  s->put("b", "2");
  EXPECT_EQ(s->size(), 2u);
  EXPECT_EQ(s->get("a"), std::optional<std::string>("1"));
  EXPECT_TRUE(s->contains("b"));
  std::string buffer = "previous contents that must be replaced";
  ASSERT_TRUE(s->get("b", buffer));
  EXPECT_EQ(buffer, "2");
  EXPECT_FALSE(s->get("zz", buffer));

  s->put("a", "replaced");  // overwrite: same size
  EXPECT_EQ(s->size(), 2u);
  EXPECT_EQ(s->get("a"), std::optional<std::string>("replaced"));

  EXPECT_TRUE(s->erase("a"));
  EXPECT_FALSE(s->erase("a"));
  EXPECT_FALSE(s->contains("a"));
  EXPECT_EQ(s->size(), 1u);
  s->put("a", "back");
  EXPECT_EQ(s->get("a"), std::optional<std::string>("back"));
  EXPECT_EQ(s->size(), 2u);
}

TEST(kv_store, empty_value_is_a_value) {
  temp_dir dir;
  auto s = store::open(dir / "db");
  s->put("k", "");
  EXPECT_TRUE(s->contains("k"));
  EXPECT_EQ(s->get("k"), std::optional<std::string>(""));
  s->close();
  s = store::open(dir / "db");
  EXPECT_EQ(s->get("k"), std::optional<std::string>(""));
  EXPECT_EQ(s->size(), 1u);
}

TEST(kv_store, binary_keys_and_values) {
  temp_dir dir;
  std::string all_bytes;
  for (int b = 0; b < 256; ++b)
    all_bytes.push_back(static_cast<char>(b));
  const std::string nul_key("\0k\0", 3), nul_key2("\0k\0\0", 4), nul_value("a\0b\0\0", 5);
  std::map<std::string, std::string> want = {{all_bytes, nul_value},
                                             {nul_key, all_bytes},
                                             {nul_key2, "other"},
                                             {std::string(1, '\0'), std::string(300, '\0')},
                                             {std::string(1, '\xff'), "ff"}};
  {
    auto s = store::open(dir / "db");
    for (const auto& [k, v] : want)
      s->put(k, v);
    for (const auto& [k, v] : want)
      EXPECT_EQ(s->get(k), std::optional<std::string>(v));
    EXPECT_FALSE(s->contains(std::string("\0k", 2)));  // a prefix of a key is another key
  }
  std::filesystem::remove(dir / "db/index");  // replay every record
  auto s = store::open(dir / "db");
  EXPECT_EQ(s->size(), want.size());
  for (const auto& [k, v] : want)
    EXPECT_EQ(s->get(k), std::optional<std::string>(v));
}

TEST(kv_store, key_and_value_limits) {
  temp_dir dir;
  auto s = store::open(dir / "db");
  EXPECT_THROW(s->put("", "v"), std::length_error);
  EXPECT_THROW(s->erase(""), std::length_error);
  const std::string longest(ccf::kv::max_key_size, 'k');
  const std::string too_long(ccf::kv::max_key_size + 1, 'k');
  EXPECT_THROW(s->put(too_long, "v"), std::length_error);
  EXPECT_THROW(s->erase(too_long), std::length_error);
  // Reads of a key no store can hold are the same error (they answered "absent").
  std::string buffer;
  for (const std::string& bad : {std::string(), too_long}) {
    EXPECT_THROW(s->get(bad), std::length_error);
    EXPECT_THROW(s->get(bad, buffer), std::length_error);
    EXPECT_THROW(s->contains(bad), std::length_error);
  }
  s->put(longest, "longest key");
  EXPECT_EQ(s->get(longest), std::optional<std::string>("longest key"));
  const std::string big_value(3 << 20, 'v');  // a few MiB work
  s->put("big", big_value);
  EXPECT_EQ(s->get("big"), std::optional<std::string>(big_value));

  // A value of max_value_size + 1 bytes: a reserved, never-touched 1 GiB anonymous mapping
  // (MAP_NORESERVE) gives the bytes without using memory; put must refuse it before reading.
  const std::size_t n = ccf::kv::max_value_size + 1;
  void* p = ::mmap(nullptr, n, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  EXPECT_THROW(s->put("k", std::string_view(static_cast<const char*>(p), n)), std::length_error);
  ::munmap(p, n);
  EXPECT_EQ(s->size(), 2u);  // nothing was written by the refused calls
  EXPECT_EQ(s->stats().records, 2u);
}

TEST(kv_store, open_options) {
  temp_dir dir;
  options no_create;
  no_create.create_if_missing = false;
  EXPECT_THROW(store::open(dir / "missing", no_create), std::invalid_argument);
  EXPECT_FALSE(std::filesystem::exists(dir / "missing"));

  {
    auto s = store::open(dir / "db");
    s->put("k", "v");
  }
  options exclusive;
  exclusive.error_if_exists = true;
  EXPECT_THROW(store::open(dir / "db", exclusive), std::invalid_argument);
  auto s = store::open(dir / "db", no_create);  // an existing store opens without creating
  EXPECT_FALSE(s->opened().created);
  EXPECT_EQ(s->get("k"), std::optional<std::string>("v"));
  s.reset();
  auto fresh = store::open(dir / "fresh", exclusive);  // error_if_exists creates a new one
  EXPECT_TRUE(fresh->opened().created);
}

TEST(kv_store, open_without_create_refuses_a_directory_holding_no_store) {
  // "std::invalid_argument for a missing store without create_if_missing": an existing empty
  // directory holds no store, so it must be refused, and nothing may be created in it.
  temp_dir dir;
  std::filesystem::create_directory(dir / "empty");
  options no_create;
  no_create.create_if_missing = false;
  EXPECT_THROW(store::open(dir / "empty", no_create), std::invalid_argument);
  EXPECT_FALSE(std::filesystem::exists(dir / "empty/log"));
  EXPECT_FALSE(std::filesystem::exists(dir / "empty/LOCK")) << "a LOCK left where no store is";
}

TEST(kv_store, creating_a_store_over_another_ones_files_is_refused) {
  // Every state of a store has its log: an index or a compaction file with no log belongs to
  // something else, and creating a store there overwrote or deleted it.
  for (const char* name : {"index", "index.tmp", "log.compact", "index.compact"}) {
    temp_dir dir;
    std::filesystem::create_directory(dir / "db");
    ccf_test::write_all(dir / "db/" + name, "not ccf's");
    EXPECT_THROW(store::open(dir / "db"), std::invalid_argument) << name;
    EXPECT_EQ(ccf_test::read_all(dir / "db/" + name), "not ccf's") << name;
    EXPECT_FALSE(std::filesystem::exists(dir / "db/log")) << name;
  }
  // A log.tmp alone is what a creation cut short leaves: the store is created.
  temp_dir dir;
  std::filesystem::create_directory(dir / "db");
  ccf_test::write_all(dir / "db/log.tmp", "half a header");
  auto s = store::open(dir / "db");
  EXPECT_TRUE(s->opened().created);
  EXPECT_FALSE(std::filesystem::exists(dir / "db/log.tmp"));
}

TEST(kv_store, a_log_that_is_not_a_stores_is_refused_before_anything_is_touched) {
  // A directory whose file named log is not a ccf::kv log (an application's log): the open took
  // the lock and deleted the files named as a compaction's leftovers before it read the log's
  // header, and left a LOCK file behind.
  const std::vector<std::string> others = {"log.tmp", "log.compact", "index.tmp", "index.compact",
                                           "index.compact.tmp"};
  for (const std::string& log : {std::string(100, 'x'), std::string("short")}) {
    temp_dir dir;
    std::filesystem::create_directory(dir / "app");
    ccf_test::write_all(dir / "app/log", log);
    for (const std::string& name : others)
      ccf_test::write_all(dir / "app/" + name, "precious " + name);
    for (const bool create : {true, false}) {
      options o;
      o.create_if_missing = create;
      EXPECT_THROW(store::open(dir / "app", o), ccf::kv::corrupt_error) << log.size();
    }
    EXPECT_EQ(ccf_test::read_all(dir / "app/log"), log);
    for (const std::string& name : others)
      EXPECT_EQ(ccf_test::read_all(dir / "app/" + name), "precious " + name) << name;
    EXPECT_FALSE(std::filesystem::exists(dir / "app/LOCK")) << "a LOCK left where no store is";
  }
}

TEST(kv_store, an_empty_path_is_a_wrong_argument) {
  // It was an io_error: "cannot create directory '': No such file or directory".
  EXPECT_THROW(store::open(""), std::invalid_argument);
  options no_create;
  no_create.create_if_missing = false;
  EXPECT_THROW(store::open("", no_create), std::invalid_argument);
}

TEST(kv_store, open_on_a_file_is_an_error) {
  temp_dir dir;
  ccf_test::write_all(dir / "plain", "not a directory");
  EXPECT_THROW(store::open(dir / "plain"), ccf::kv::io_error);
}

TEST(kv_store, second_open_of_the_same_directory_is_refused) {
  temp_dir dir;
  auto first = store::open(dir / "db");
  first->put("k", "v");
  try {
    auto second = store::open(dir / "db");
    FAIL() << "a second open of a store that is open succeeded";
  } catch (const ccf::kv::store_locked_error& e) {
    EXPECT_NE(std::string(e.what()).find(dir / "db/LOCK"), std::string::npos) << e.what();
  }
  first->close();
  auto again = store::open(dir / "db");  // released by close()
  EXPECT_EQ(again->get("k"), std::optional<std::string>("v"));
  again.reset();
  first.reset();
  auto third = store::open(dir / "db");  // and by destruction
  EXPECT_EQ(third->size(), 1u);
}

TEST(kv_store, calls_after_close_throw) {
  temp_dir dir;
  auto s = store::open(dir / "db");
  s->put("k", "v");
  s->close();
  EXPECT_NO_THROW(s->close());  // twice is fine
  std::string buffer;
  EXPECT_THROW(s->put("k", "w"), std::logic_error);
  EXPECT_THROW(s->erase("k"), std::logic_error);
  EXPECT_THROW(s->get("k"), std::logic_error);
  EXPECT_THROW(s->get("k", buffer), std::logic_error);
  EXPECT_THROW(s->contains("k"), std::logic_error);
  EXPECT_THROW(s->sync(), std::logic_error);
  EXPECT_THROW(s->snapshot(), std::logic_error);
  EXPECT_THROW(s->compact(), std::logic_error);
  EXPECT_THROW(s->for_each([](std::string_view, std::string_view) {}), std::logic_error);
  s.reset();  // the destructor after close() is fine too
  auto again = store::open(dir / "db");
  EXPECT_EQ(again->get("k"), std::optional<std::string>("v"));  // the refused put wrote nothing
}

TEST(kv_store, a_store_opened_by_a_relative_path_outlives_a_change_of_directory) {
  // The store kept the path as given: after the process changed its working directory, a
  // compaction wrote and renamed files in another directory, and a snapshot went there too.
  temp_dir dir, elsewhere;
  const std::filesystem::path cwd = std::filesystem::current_path();
  struct restore_cwd {
    std::filesystem::path to;
    ~restore_cwd() { std::filesystem::current_path(to); }
  } restore{cwd};
  std::filesystem::current_path(dir.path());
  auto s = store::open("db");
  EXPECT_TRUE(s->path().starts_with('/')) << s->path();
  EXPECT_TRUE(std::filesystem::equivalent(s->path(), dir / "db")) << s->path();
  s->put("a", "1");
  s->put("a", "2");
  std::filesystem::current_path(elsewhere.path());
  s->compact();
  s->put("b", "3");
  s->snapshot();
  s->close();
  EXPECT_FALSE(std::filesystem::exists(elsewhere / "db"));
  s = store::open(dir / "db");
  EXPECT_TRUE(s->opened().snapshot_used);
  EXPECT_EQ(s->get("a"), std::optional<std::string>("2"));
  EXPECT_EQ(s->get("b"), std::optional<std::string>("3"));
  EXPECT_EQ(s->stats().records, 2u) << "the compacted log is the store's";
}

// ---------------------------------------------------------------------------------------------
// Differential test against std::map

class kv_store_differential : public ::testing::TestWithParam<durability> {};

TEST_P(kv_store_differential, matches_a_map_across_reopen_and_compaction) {
  const durability mode = GetParam();
  options o = with_sync(mode);
  o.group_interval = std::chrono::milliseconds(2);
  o.group_writes = 64;
  temp_dir dir;
  const std::string path = dir / "db";
  std::mt19937_64 rng(1234 + static_cast<int>(mode));

  // A pool of keys (lengths 1..64, any bytes; short ones repeat) that writes pick from.
  std::vector<std::string> pool;
  std::set<std::string> distinct;
  while (pool.size() < 1500) {
    std::string k = ccf_test::random_bytes(rng, 1 + rng() % 64);
    if (distinct.insert(k).second) pool.push_back(std::move(k));
  }
  // every_write syncs each write (~0.2 ms): fewer operations per phase there.
  const std::size_t ops = scaled(mode == durability::every_write ? 700 : 4000, 200);
  ccf_test::store_model model;
  auto s = store::open(path, o);
  std::uint64_t records = 0;

  auto run_ops = [&](const std::string& phase) {
    SCOPED_TRACE(phase);
    std::size_t wrong_gets = 0, wrong_erases = 0;
    for (std::size_t i = 0; i < ops; ++i) {
      const std::string& k = pool[rng() % pool.size()];
      const unsigned what = rng() % 10;
      if (what < 6) {
        const std::string v = ccf_test::random_bytes(rng, rng() % 301);
        s->put(k, v);
        model.put(k, v);
        ++records;
      } else if (what < 8) {
        const bool was = model.erase(k);
        if (s->erase(k) != was) ++wrong_erases;
        if (was) ++records;
      } else {
        const auto it = model.data().find(k);
        const std::optional<std::string> got = s->get(k);
        if (it == model.data().end() ? got.has_value() : got != it->second.first) ++wrong_gets;
      }
    }
    EXPECT_EQ(wrong_gets, 0u);
    EXPECT_EQ(wrong_erases, 0u);
    EXPECT_EQ(s->stats().records, records);
    ccf_test::expect_matches(*s, model, pool, phase);
  };

  run_ops("first writes");
  const ccf::kv::store_stats before = s->stats();
  s->close();
  s = store::open(path, o);  // from the snapshot written by close()
  EXPECT_TRUE(s->opened().snapshot_used);
  EXPECT_EQ(s->opened().replayed_records, 0u);
  EXPECT_EQ(s->stats().live_bytes, before.live_bytes);
  EXPECT_EQ(s->stats().records, before.records);
  ccf_test::expect_matches(*s, model, pool, "reopened from the snapshot");

  run_ops("writes after reopen");
  const ccf::kv::store_stats before2 = s->stats();
  s->close();
  ASSERT_TRUE(std::filesystem::remove(path + "/index"));
  s = store::open(path, o);  // a full replay of the log
  EXPECT_FALSE(s->opened().snapshot_used);
  EXPECT_EQ(s->opened().replayed_records, records);
  EXPECT_EQ(s->opened().truncated_bytes, 0u);
  EXPECT_EQ(s->stats().live_bytes, before2.live_bytes);
  EXPECT_EQ(s->stats().log_bytes, before2.log_bytes);
  ccf_test::expect_matches(*s, model, pool, "reopened by replaying the log");

  run_ops("writes after the replay");
  s->compact();
  records = model.size();  // the compacted log holds one record per live key
  EXPECT_EQ(s->stats().records, records);
  EXPECT_EQ(s->stats().log_bytes, s->stats().live_bytes + ccf::kv::detail::log_header_size);
  ccf_test::expect_matches(*s, model, pool, "compacted");

  run_ops("writes after compaction");
  s->close();
  s = store::open(path, o);
  ccf_test::expect_matches(*s, model, pool, "reopened after compaction");
  s->close();
  ASSERT_TRUE(std::filesystem::remove(path + "/index"));
  s = store::open(path, o);
  EXPECT_EQ(s->opened().replayed_records, records);
  ccf_test::expect_matches(*s, model, pool, "replayed after compaction");
  s->close();
  EXPECT_FALSE(std::filesystem::exists(path + "/log.compact"));
  EXPECT_FALSE(std::filesystem::exists(path + "/index.compact"));
}

INSTANTIATE_TEST_SUITE_P(durability, kv_store_differential,
                         ::testing::Values(durability::none, durability::group,
                                           durability::every_write),
                         [](const ::testing::TestParamInfo<durability>& info) {
                           switch (info.param) {
                             case durability::none:
                               return std::string("none");
                             case durability::group:
                               return std::string("group");
                             default:
                               return std::string("every_write");
                           }
                         });

// ---------------------------------------------------------------------------------------------
// Index growth and sizing

std::string growth_key(std::size_t i) {
  return "key-" + std::to_string(i * 2654435761u % 1000003);
}
std::string growth_value(std::size_t i) {
  return "value-" + std::to_string(i);
}

std::size_t count_wrong(const store& s, std::size_t n) {
  std::size_t wrong = 0;
  std::string v;
  for (std::size_t i = 0; i < n; ++i) {
    if (!s.get(growth_key(i), v) || v != growth_value(i)) ++wrong;
  }
  return wrong;
}

TEST(kv_store_growth, grows_from_a_tiny_index_and_loses_nothing) {
  const std::size_t n = scaled(200000, 20000);
  temp_dir dir;
  options o = with_sync(durability::none);
  o.expected_keys = 0;  // starts at 1024 keys
  auto s = store::open(dir / "db", o);
  const std::size_t start_buckets = s->stats().index_buckets;
  for (std::size_t i = 0; i < n; ++i)
    s->put(growth_key(i), growth_value(i));
  ccf::kv::store_stats st = s->stats();
  EXPECT_GE(st.rehashes, 4u) << "the index doubled too few times";
  EXPECT_GE(st.index_buckets, start_buckets * 16);
  EXPECT_EQ(st.keys, n);
  EXPECT_EQ(s->size(), n);
  EXPECT_EQ(count_wrong(*s, n), 0u);
  EXPECT_LT(st.index_bytes_per_key, 20.0);
  EXPECT_FALSE(s->contains("key-absent"));

  s->close();
  s = store::open(dir / "db", o);  // the grown index comes back from its snapshot
  EXPECT_TRUE(s->opened().snapshot_used);
  EXPECT_EQ(s->stats().rehashes, st.rehashes);
  EXPECT_EQ(count_wrong(*s, n), 0u);
  // A compaction's snapshot keeps the count too (reopened from it, the store said 0).
  s->compact();
  EXPECT_EQ(s->stats().rehashes, st.rehashes);
  s->close();
  s = store::open(dir / "db", o);
  EXPECT_TRUE(s->opened().snapshot_used);
  EXPECT_EQ(s->stats().rehashes, st.rehashes);

  // Replayed into an index sized for the key count: dense (about 8 bytes a slot at 90 %+ load).
  s->close();
  ASSERT_TRUE(std::filesystem::remove(dir / "db/index"));
  o.expected_keys = n;
  s = store::open(dir / "db", o);
  st = s->stats();
  EXPECT_EQ(st.rehashes, 0u);
  EXPECT_LT(st.index_bytes_per_key, 9.0);
  EXPECT_GT(st.index_load, 0.88);
  EXPECT_EQ(count_wrong(*s, n), 0u);
}

TEST(kv_store_growth, expected_keys_sizes_a_fresh_store) {
  const std::size_t n = scaled(100000, 10000);
  temp_dir dir;
  options o = with_sync(durability::none);
  o.expected_keys = n;
  auto s = store::open(dir / "db", o);
  for (std::size_t i = 0; i < n; ++i)
    s->put(growth_key(i), growth_value(i));
  const ccf::kv::store_stats st = s->stats();
  EXPECT_EQ(st.rehashes, 0u) << "a store opened for n keys grew before holding n";
  EXPECT_LT(st.index_bytes_per_key, 9.0);
  EXPECT_GT(st.index_load, 0.88);
  EXPECT_EQ(count_wrong(*s, n), 0u);
}

TEST(kv_store_growth, expected_keys_outlives_a_compaction) {
  // A compaction sized its new index for twice the live keys only: the store opened for n keys
  // then doubled its index again on the way to n.
  const std::size_t n = scaled(100000, 10000);
  temp_dir dir;
  options o = with_sync(durability::none);
  o.expected_keys = n;
  auto s = store::open(dir / "db", o);
  for (std::size_t i = 0; i < n / 10; ++i)
    s->put(growth_key(i), growth_value(i));
  s->compact();
  const std::size_t before = s->stats().rehashes;
  for (std::size_t i = n / 10; i < n; ++i)
    s->put(growth_key(i), growth_value(i));
  EXPECT_EQ(s->stats().rehashes, before) << "the index doubled after the compaction";
  EXPECT_EQ(count_wrong(*s, n), 0u);
}

TEST(kv_store_growth, duplicate_keys_never_take_two_slots) {
  const std::size_t rounds = 20, keys = 1000;
  temp_dir dir;
  options o = with_sync(durability::none);
  auto s = store::open(dir / "db", o);
  auto value = [](std::size_t k, std::size_t r) {
    std::string v = std::to_string(k);
    v += '/';
    v += std::to_string(r);
    return v;
  };
  for (std::size_t r = 0; r < rounds; ++r) {
    for (std::size_t k = 0; k < keys; ++k)
      s->put("dup-" + std::to_string(k), value(k, r));
  }
  auto check = [&](const std::string& phase) {
    SCOPED_TRACE(phase);
    EXPECT_EQ(s->size(), keys);
    EXPECT_EQ(s->stats().keys, keys);
    std::size_t wrong = 0;
    for (std::size_t k = 0; k < keys; ++k) {
      if (s->get("dup-" + std::to_string(k)) != value(k, rounds - 1)) ++wrong;
    }
    EXPECT_EQ(wrong, 0u);
    EXPECT_EQ(ccf_test::visit_all(*s).size(), keys);
  };
  check("written");
  EXPECT_EQ(s->stats().records, rounds * keys);
  s->close();
  ASSERT_TRUE(std::filesystem::remove(dir / "db/index"));
  s = store::open(dir / "db", o);
  check("replayed");
  for (std::size_t k = 0; k < keys; k += 2)
    EXPECT_TRUE(s->erase("dup-" + std::to_string(k)));
  EXPECT_EQ(s->size(), keys / 2);
  EXPECT_FALSE(s->contains("dup-0"));
  EXPECT_TRUE(s->contains("dup-1"));
}

// ---------------------------------------------------------------------------------------------
// stats()

TEST(kv_store_stats, counts_records_and_live_bytes) {
  using ccf::kv::detail::log_header_size;
  using ccf::kv::detail::record_size;
  temp_dir dir;
  auto s = store::open(dir / "db", with_sync(durability::none));
  ccf::kv::store_stats st = s->stats();
  EXPECT_EQ(st.keys, 0u);
  EXPECT_EQ(st.records, 0u);
  EXPECT_EQ(st.live_bytes, 0u);
  EXPECT_EQ(st.log_bytes, log_header_size);
  EXPECT_EQ(st.compactions, 0u);

  auto key = [](int i) { return "stat-key-" + std::to_string(1000 + i); };  // 13 bytes
  for (int i = 0; i < 100; ++i)
    s->put(key(i), std::string(100, 'a'));
  st = s->stats();
  const std::uint64_t big = record_size(13, 100), small = record_size(13, 10);
  EXPECT_EQ(st.keys, 100u);
  EXPECT_EQ(st.records, 100u);
  EXPECT_EQ(st.live_bytes, 100 * big);
  EXPECT_EQ(st.log_bytes, log_header_size + 100 * big);
  EXPECT_GT(st.index_bytes, 0u);
  EXPECT_GT(st.index_load, 0.0);

  for (int i = 0; i < 50; ++i)  // overwrite with smaller values: live bytes shrink
    s->put(key(i), std::string(10, 'b'));
  st = s->stats();
  EXPECT_EQ(st.records, 150u);
  EXPECT_EQ(st.live_bytes, 50 * big + 50 * small);
  EXPECT_EQ(st.log_bytes, log_header_size + 100 * big + 50 * small);

  for (int i = 0; i < 25; ++i)  // erase 25 of the small ones
    EXPECT_TRUE(s->erase(key(i)));
  EXPECT_FALSE(s->erase("never-written"));  // writes nothing
  st = s->stats();
  EXPECT_EQ(st.keys, 75u);
  EXPECT_EQ(st.records, 175u);
  EXPECT_EQ(st.live_bytes, 50 * big + 25 * small);
  const std::uint64_t before_compaction = st.log_bytes;
  EXPECT_EQ(before_compaction, log_header_size + 100 * big + 50 * small + 25 * record_size(13, 0));

  s->compact();
  st = s->stats();
  EXPECT_EQ(st.compactions, 1u);
  EXPECT_EQ(st.keys, 75u);
  EXPECT_EQ(st.records, 75u);
  EXPECT_EQ(st.live_bytes, 50 * big + 25 * small);
  EXPECT_EQ(st.log_bytes, st.live_bytes + log_header_size);
  EXPECT_LT(st.log_bytes, before_compaction);
  EXPECT_EQ(ccf_test::file_size(dir / "db/log"), st.log_bytes);
  s->compact();
  EXPECT_EQ(s->stats().compactions, 2u);
  EXPECT_EQ(s->stats().log_bytes, st.log_bytes);  // nothing left to drop
  for (int i = 25; i < 100; ++i)
    EXPECT_EQ(s->get(key(i)), std::string(i < 50 ? 10 : 100, i < 50 ? 'b' : 'a'));

  s->close();
  s = store::open(dir / "db");
  EXPECT_EQ(s->stats().live_bytes, st.live_bytes);
  EXPECT_EQ(s->stats().records, 75u);
  EXPECT_EQ(s->stats().log_bytes, st.log_bytes);
}

TEST(kv_store_stats, syncs_follow_the_durability_mode) {
  temp_dir dir;
  auto s = store::open(dir / "every", with_sync(durability::every_write));
  for (int i = 0; i < 10; ++i)
    s->put(std::to_string(i), "v");
  EXPECT_GE(s->stats().syncs, 10u);
  auto n = store::open(dir / "none", with_sync(durability::none));
  for (int i = 0; i < 10; ++i)
    n->put(std::to_string(i), "v");
  EXPECT_EQ(n->stats().syncs, 0u);
  n->sync();
  EXPECT_EQ(n->stats().syncs, 1u);
}

// ---------------------------------------------------------------------------------------------
// for_each

TEST(kv_store_for_each, empty_store_visits_nothing) {
  temp_dir dir;
  auto s = store::open(dir / "db");
  int calls = 0;
  s->for_each([&](std::string_view, std::string_view) { ++calls; });
  EXPECT_EQ(calls, 0);
  s->put("k", "v");
  EXPECT_TRUE(s->erase("k"));
  s->for_each([&](std::string_view, std::string_view) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(kv_store_for_each, a_write_from_the_callback_is_an_error_not_a_hang) {
  temp_dir dir;
  auto s = store::open(dir / "db");
  s->put("a", "1");
  // These waited for for_each, which waited for them.
  auto from_callback = [&](const std::function<void()>& call) {
    s->for_each([&](std::string_view, std::string_view) { call(); });
  };
  EXPECT_THROW(from_callback([&] { s->put("b", "2"); }), std::logic_error);
  EXPECT_THROW(from_callback([&] { s->erase("a"); }), std::logic_error);
  EXPECT_THROW(from_callback([&] { s->snapshot(); }), std::logic_error);
  EXPECT_THROW(from_callback([&] { s->compact(); }), std::logic_error);
  EXPECT_THROW(from_callback([&] { s->close(); }), std::logic_error);
  // Reads are fine, and the store is as it was.
  std::optional<std::string> seen;
  s->for_each([&](std::string_view, std::string_view) { seen = s->get("a"); });
  EXPECT_EQ(seen, std::optional<std::string>("1"));
  s->put("b", "2");
  EXPECT_EQ(s->size(), 2u);
  s->close();
}

TEST(kv_store, records_past_the_reach_of_the_logs_view_are_read_with_read_at) {
  // A file's view reserves address space once (1 TiB, or down to 4 GiB where the system refuses
  // more); records past the reservation were read through it anyway, outside the mapping.
  // Here the reservation is 64 KiB and the log grows to about 300 KiB.
  temp_dir dir;
  options o;
  o.fs = ccf::kv::posix_file_system(std::uint64_t{64} << 10);
  const std::string value(200, 'v');
  auto s = store::open(dir / "db", o);
  for (int i = 0; i < 1500; ++i)
    s->put(ccf_test::numbered("k", i), value + std::to_string(i));
  auto check = [&] {
    for (int i = 0; i < 1500; ++i)
      ASSERT_EQ(s->get(ccf_test::numbered("k", i)), value + std::to_string(i)) << i;
  };
  check();
  s->close();
  std::filesystem::remove(dir / "db/index");  // the reopen replays the whole log
  s = store::open(dir / "db", o);
  EXPECT_EQ(s->opened().replayed_records, 1500u);
  check();
  s->compact();
  check();
  EXPECT_EQ(ccf_test::visit_all(*s).size(), 1500u);
}

TEST(kv_store_for_each, sees_earlier_writes_in_log_order) {
  temp_dir dir;
  auto s = store::open(dir / "db");
  s->put("a", "1");
  s->put("b", "2");
  s->put("c", "3");
  EXPECT_TRUE(s->erase("b"));
  s->put("a", "4");  // a's last write is now after c's
  s->put("d", std::string("\0", 1));
  using kv = std::vector<std::pair<std::string, std::string>>;
  const kv want = {{"c", "3"}, {"a", "4"}, {"d", std::string("\0", 1)}};
  EXPECT_EQ(ccf_test::visit_all(*s), want);
  s->compact();  // compaction keeps the order
  EXPECT_EQ(ccf_test::visit_all(*s), want);
  s->put("b", "5");
  s->close();
  s = store::open(dir / "db");
  const kv after = {{"c", "3"}, {"a", "4"}, {"d", std::string("\0", 1)}, {"b", "5"}};
  EXPECT_EQ(ccf_test::visit_all(*s), after);
}

}  // namespace
