// Damage sweeps over ccf::kv::store's files (include/ccf/kv/store.hpp, detail/log.hpp,
// detail/snapshot.hpp): bytes flipped in and files truncated at many positions of the log, the
// index snapshot and LOCK. Each damaged store must give a clear error (corrupt_error or io_error)
// or a clean recovery, checked against an exact oracle computed from the records written: never
// a crash or a wrong value.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <ccf/kv/store.hpp>

#include "kv_test_util.hpp"

namespace {

using ccf::kv::corrupt_error;
using ccf::kv::durability;
using ccf::kv::options;
using ccf::kv::store;
using ccf::kv::detail::log_header_size;
using ccf::kv::detail::record_size;
using ccf_test::read_all;
using ccf_test::temp_dir;
using ccf_test::write_all;

using kv_map = std::map<std::string, std::string>;

/// A small store's files and what was written to it: every record in log order.
struct small_store {
  struct record {
    std::uint64_t offset, size;
    std::string key, value;
    bool erased;
  };
  std::string log, index, lock;
  std::vector<record> records;

  /// The record holding byte `p` of the log, or records.size().
  std::size_t record_at(std::uint64_t p) const {
    for (std::size_t r = 0; r < records.size(); ++r) {
      if (p >= records[r].offset && p < records[r].offset + records[r].size) return r;
    }
    return records.size();
  }
  /// Whether byte `p` is a padding byte of a record (not covered by its checksum).
  bool padding(std::uint64_t p) const {
    const std::size_t r = record_at(p);
    return r < records.size() &&
           p >= records[r].offset + 16 + records[r].key.size() + records[r].value.size();
  }
  /// The contents after the first n records.
  kv_map after(std::size_t n) const {
    kv_map m;
    for (std::size_t r = 0; r < n; ++r) {
      if (records[r].erased) {
        m.erase(records[r].key);
      } else {
        m[records[r].key] = records[r].value;
      }
    }
    return m;
  }
  /// The live record of each key.
  std::map<std::string, std::size_t> live() const {
    std::map<std::string, std::size_t> m;
    for (std::size_t r = 0; r < records.size(); ++r) {
      if (records[r].erased) {
        m.erase(records[r].key);
      } else {
        m[records[r].key] = r;
      }
    }
    return m;
  }
};

small_store build_small_store(const std::string& db) {
  small_store out;
  std::mt19937_64 rng(99);
  kv_map now;
  std::vector<std::string> keys;
  options o;
  o.sync = durability::none;
  auto s = store::open(db, o);
  std::uint64_t at = log_header_size;
  auto put = [&](const std::string& k, const std::string& v) {
    s->put(k, v);
    out.records.push_back({at, record_size(k.size(), v.size()), k, v, false});
    at += out.records.back().size;
    now[k] = v;
  };
  for (int i = 0; i < 200; ++i) {
    keys.push_back("key" + std::to_string(i) + ccf_test::random_bytes(rng, rng() % 20));
    put(keys.back(), ccf_test::random_bytes(rng, rng() % 40));
  }
  for (int i = 0; i < 80; ++i)
    put(keys[rng() % keys.size()], ccf_test::random_bytes(rng, rng() % 40));
  for (int i = 0; i < 40; ++i) {
    const std::string& k = keys[rng() % keys.size()];
    if (now.erase(k) == 0) continue;
    EXPECT_TRUE(s->erase(k));
    out.records.push_back({at, record_size(k.size(), 0), k, "", true});
    at += out.records.back().size;
  }
  s->close();
  out.log = read_all(db + "/log");
  out.index = read_all(db + "/index");
  out.lock = read_all(db + "/LOCK");
  EXPECT_EQ(at, out.log.size());
  EXPECT_EQ(out.after(out.records.size()), now);
  return out;
}

/// Positions to damage in a file of `size` bytes: every byte of its header, then every
/// `stride`-th byte (scaled down by CCF_TEST_SCALE), and its last byte.
std::vector<std::uint64_t> positions(std::uint64_t size, std::uint64_t header,
                                     std::uint64_t stride) {
  stride = std::max<std::uint64_t>(
      stride, static_cast<std::uint64_t>(static_cast<double>(stride) / ccf_test::test_scale()));
  std::vector<std::uint64_t> out;
  for (std::uint64_t p = 0; p < size; p += p < header ? 1 : stride)
    out.push_back(p);
  if (size != 0 && out.back() != size - 1) out.push_back(size - 1);
  return out;
}

/// Opens a store made of `files` in a fresh directory and calls check(store); an error from
/// open() goes to on_error (which must accept or fail it).
class damage_trial {
 public:
  explicit damage_trial(const temp_dir& root) : dir_(root / "trial") {}

  void run(const std::map<std::string, std::string>& files, const options& o,
           const std::function<void(store&)>& check,
           const std::function<void(const std::exception&)>& on_error) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directory(dir_);
    for (const auto& [name, bytes] : files)
      write_all(dir_ + "/" + name, bytes);
    std::unique_ptr<store> s;
    try {
      s = store::open(dir_, o);
    } catch (const corrupt_error& e) {
      on_error(e);
      return;
    } catch (const ccf::kv::io_error& e) {
      on_error(e);
      return;
    }
    check(*s);
    try {
      s->close();
    } catch (const corrupt_error&) {
    } catch (const ccf::kv::io_error&) {
    }
  }

 private:
  std::string dir_;
};

std::string describe(const char* file, const char* what, std::uint64_t p) {
  return std::string(what) + " " + file + " at " + std::to_string(p);
}

/// Every key's value (or absence) matches `want`; keys in `unreadable` must throw corrupt_error.
void expect_exactly(const store& s, const small_store& st, const kv_map& want,
                    const std::set<std::string>& unreadable, const std::string& what) {
  std::size_t wrong = 0;
  for (const auto& r : st.records) {
    const auto it = want.find(r.key);
    try {
      const std::optional<std::string> got = s.get(r.key);
      if (unreadable.count(r.key) != 0 ||
          (it == want.end() ? got.has_value() : got != it->second)) {
        ++wrong;
      }
    } catch (const corrupt_error&) {
      if (unreadable.count(r.key) == 0) ++wrong;
    }
  }
  EXPECT_EQ(wrong, 0u) << what;
  EXPECT_EQ(s.size(), want.size() + unreadable.size()) << what;
}

TEST(kv_corruption, flipped_bytes_in_every_file_give_an_error_or_a_clean_recovery) {
  temp_dir root;
  const small_store st = build_small_store(root / "db");
  damage_trial trial(root);
  const kv_map final_state = st.after(st.records.size());
  const auto live = st.live();
  std::size_t trials = 0, refused = 0, unreadable_keys = 0;

  // The index (any flipped byte voids its checksum: a full replay) and LOCK (rewritten at open).
  struct target {
    const char* name;
    const std::string* bytes;
    std::uint64_t header;
  };
  for (const target& t : {target{"index", &st.index, ccf::kv::detail::snapshot_header_size},
                          target{"LOCK", &st.lock, 64}}) {
    const char* name = t.name;
    for (const std::uint64_t p : positions(t.bytes->size(), t.header, 7)) {
      std::map<std::string, std::string> files = {
          {"log", st.log}, {"index", st.index}, {"LOCK", st.lock}};
      files[name][p] ^= static_cast<char>(p % 2 ? 0xff : 1u << (p % 8));
      ++trials;
      const std::string what = describe(name, "flipped", p);
      trial.run(
          files, {},
          [&](store& s) {
            EXPECT_EQ(s.opened().snapshot_used, std::string(name) != "index") << what;
            EXPECT_EQ(s.opened().truncated_bytes, 0u) << what;
            expect_exactly(s, st, final_state, {}, what);
          },
          [&](const std::exception& e) { ADD_FAILURE() << what << ": " << e.what(); });
    }
  }

  // The log, with its snapshot (no replay: a damaged record is found when read, except the last
  // one, which the snapshot checks) and without (a replay up to the damaged record, which drops
  // the rest).
  for (const bool with_index : {true, false}) {
    for (const std::uint64_t p : positions(st.log.size(), log_header_size, 7)) {
      std::map<std::string, std::string> files = {{"log", st.log}, {"LOCK", st.lock}};
      if (with_index) files["index"] = st.index;
      files["log"][p] ^= static_cast<char>(p % 2 ? 0xff : 1u << (p % 8));
      ++trials;
      const std::string what =
          describe("log", with_index ? "flipped (snapshot)" : "flipped (replay)", p);
      const std::size_t r = st.record_at(p);
      const bool harmless = p >= log_header_size && st.padding(p);
      trial.run(
          files, {},
          [&](store& s) {
            ASSERT_GE(p, log_header_size) << what << ": a damaged log header was accepted";
            if (harmless) {
              expect_exactly(s, st, final_state, {}, what);
            } else if (with_index && r + 1 < st.records.size()) {
              std::set<std::string> unreadable;
              kv_map want = final_state;
              if (live.count(st.records[r].key) != 0 && live.at(st.records[r].key) == r) {
                unreadable.insert(st.records[r].key);
                want.erase(st.records[r].key);
              }
              unreadable_keys += unreadable.size();
              expect_exactly(s, st, want, unreadable, what);
              EXPECT_THROW(s.for_each([](std::string_view, std::string_view) {}), corrupt_error)
                  << what;
            } else {  // a replay (the snapshot names the last record: a damaged one voids it)
              EXPECT_FALSE(s.opened().snapshot_used) << what;
              EXPECT_EQ(s.opened().truncated_bytes, st.log.size() - st.records[r].offset) << what;
              EXPECT_EQ(s.opened().dropped_records, st.records.size() - r - 1) << what;
              expect_exactly(s, st, st.after(r), {}, what);
            }
          },
          [&](const std::exception& e) {
            ++refused;
            EXPECT_LT(p, log_header_size) << what << ": " << e.what();
            EXPECT_NE(dynamic_cast<const corrupt_error*>(&e), nullptr) << what;
          });
    }
  }
  EXPECT_GT(unreadable_keys, 0u);  // some flips hit live records
  EXPECT_GT(refused, 0u);          // the log header flips
  std::printf("[ info ] %zu damaged stores, %zu refused at open\n", trials, refused);
}

TEST(kv_corruption, truncating_any_file_gives_an_error_or_a_clean_recovery) {
  temp_dir root;
  const small_store st = build_small_store(root / "db");
  damage_trial trial(root);
  const kv_map final_state = st.after(st.records.size());
  std::size_t trials = 0;

  for (const std::uint64_t length : positions(st.log.size(), 80, 13)) {
    std::map<std::string, std::string> files = {
        {"log", st.log.substr(0, length)}, {"index", st.index}, {"LOCK", st.lock}};
    std::size_t whole = 0;  // records that survive the cut
    while (whole < st.records.size() &&
           st.records[whole].offset + st.records[whole].size <= length) {
      ++whole;
    }
    const std::uint64_t boundary =
        whole == 0 ? log_header_size : st.records[whole - 1].offset + st.records[whole - 1].size;
    const std::string what = describe("log", "truncated", length);
    ++trials;
    trial.run(
        files, {},
        [&](store& s) {
          ASSERT_GE(length, log_header_size) << what << ": a log without a header was accepted";
          EXPECT_FALSE(s.opened().snapshot_used) << what;
          EXPECT_EQ(s.opened().truncated_bytes, length - boundary) << what;
          EXPECT_EQ(s.opened().dropped_records, 0u) << what;
          expect_exactly(s, st, st.after(whole), {}, what);
        },
        [&](const std::exception& e) {
          EXPECT_LT(length, log_header_size) << what << ": " << e.what();
          EXPECT_NE(dynamic_cast<const corrupt_error*>(&e), nullptr) << what;
        });
  }
  for (const std::uint64_t length :
       positions(st.index.size(), ccf::kv::detail::snapshot_header_size + 8, 11)) {
    const std::string what = describe("index", "truncated", length);
    ++trials;
    trial.run(
        {{"log", st.log}, {"index", st.index.substr(0, length)}, {"LOCK", st.lock}}, {},
        [&](store& s) {
          EXPECT_FALSE(s.opened().snapshot_used) << what;
          expect_exactly(s, st, final_state, {}, what);
        },
        [&](const std::exception& e) { ADD_FAILURE() << what << ": " << e.what(); });
  }
  trial.run(
      {{"log", st.log}, {"index", st.index}, {"LOCK", ""}}, {},
      [&](store& s) { expect_exactly(s, st, final_state, {}, "empty LOCK"); },
      [&](const std::exception& e) { ADD_FAILURE() << "empty LOCK: " << e.what(); });
  trial.run(
      {{"log", st.log}, {"LOCK", st.lock}}, {},
      [&](store& s) { expect_exactly(s, st, final_state, {}, "no index"); },
      [&](const std::exception& e) { ADD_FAILURE() << "no index: " << e.what(); });
  std::printf("[ info ] %zu truncated stores\n", trials);
}

}  // namespace
