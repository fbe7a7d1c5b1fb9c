// Recovery of ccf::kv::store (include/ccf/kv/store.hpp, detail/log.hpp, detail/snapshot.hpp):
// what open() replays after snapshot() and after writes past the snapshot (read from a copy of
// the directory of a store still open: the state a power loss would leave with everything
// synced), stale snapshots, torn tails (garbage, half a record, a last record cut short), a bad
// record in the middle (kept in a dropped-<offset> file, or refused with strict_recovery), and
// leftovers of a compaction. The sweeps that damage every store file are in
// kv_corruption_test.cpp.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
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
using ccf_test::file_size;
using ccf_test::read_all;
using ccf_test::temp_dir;
using ccf_test::write_all;

using kv_map = std::map<std::string, std::string>;

/// The contents of `s` as a map (through for_each).
kv_map contents(const store& s) {
  kv_map m;
  s.for_each([&](std::string_view k, std::string_view v) { m.emplace(k, v); });
  return m;
}

void put_range(store& s, int from, int to, const std::string& prefix) {
  for (int i = from; i < to; ++i)
    s.put(ccf_test::numbered(prefix, i), std::to_string(i * 7));
}

/// Puts keys k0.. k<n - 1> into the store at `db` (opened, and closed again), removes its index
/// snapshot so that the next open replays (and checks) every record, and returns the log's bytes.
std::string log_after_puts(const std::string& db, int n) {
  auto s = store::open(db);
  put_range(*s, 0, n, "k");
  s->close();
  std::filesystem::remove(db + "/index");
  return read_all(db + "/log");
}

// ---------------------------------------------------------------------------------------------
// Snapshots

TEST(kv_snapshot, replays_only_the_records_after_the_last_snapshot) {
  temp_dir dir;
  const std::string db = dir / "db";
  auto s = store::open(db, {});  // durability::every_write: everything is on disk at each step
  put_range(*s, 0, 300, "a");
  ccf_test::copy_dir(db, dir / "no-snapshot");  // no snapshot yet: a full replay
  s->snapshot();
  ccf_test::copy_dir(db, dir / "at-snapshot");
  put_range(*s, 300, 340, "b");
  EXPECT_TRUE(s->erase("a0"));
  EXPECT_FALSE(s->erase("never"));  // writes no record
  ccf_test::copy_dir(db, dir / "after-snapshot");
  const kv_map all = contents(*s);
  s->close();

  {
    auto img = store::open(dir / "no-snapshot");
    EXPECT_FALSE(img->opened().snapshot_used);
    EXPECT_EQ(img->opened().replayed_records, 300u);
    EXPECT_EQ(img->size(), 300u);
  }
  {
    auto img = store::open(dir / "at-snapshot");
    EXPECT_TRUE(img->opened().snapshot_used);
    EXPECT_EQ(img->opened().replayed_records, 0u);
    EXPECT_EQ(img->size(), 300u);
    EXPECT_EQ(img->get("a299"), std::to_string(299 * 7));
  }
  {
    auto img = store::open(dir / "after-snapshot");
    EXPECT_TRUE(img->opened().snapshot_used);
    EXPECT_EQ(img->opened().replayed_records, 41u);  // 40 puts and one delete
    EXPECT_EQ(img->opened().truncated_bytes, 0u);
    EXPECT_EQ(contents(*img), all);
    EXPECT_EQ(img->stats().records, 341u);
  }
  auto reopened = store::open(db);  // close() wrote a snapshot
  EXPECT_TRUE(reopened->opened().snapshot_used);
  EXPECT_EQ(reopened->opened().replayed_records, 0u);
  EXPECT_EQ(contents(*reopened), all);
}

TEST(kv_snapshot, snapshot_every_bytes_bounds_the_replay) {
  temp_dir dir;
  options o;
  o.sync = durability::none;
  o.snapshot_every_bytes = 16 << 10;
  auto s = store::open(dir / "db", o);
  const std::string value(200, 'v');  // records of 232 bytes
  for (int i = 0; i < 1000; ++i)
    s->put("key-" + std::to_string(10000 + i), value);
  s->sync();
  ccf_test::copy_dir(dir / "db", dir / "image");
  auto img = store::open(dir / "image", o);
  EXPECT_TRUE(img->opened().snapshot_used);
  EXPECT_LE(img->opened().replayed_records, (16u << 10) / record_size(9, 200) + 1);
  EXPECT_EQ(img->size(), 1000u);
  EXPECT_EQ(contents(*img), contents(*s));
}

TEST(kv_snapshot, a_stale_snapshot_only_costs_replay) {
  temp_dir dir;
  const std::string db = dir / "db";
  auto s = store::open(db);
  put_range(*s, 0, 200, "k");
  s->close();
  std::filesystem::copy_file(db + "/index", dir / "old-index");
  s = store::open(db);
  put_range(*s, 100, 300, "k");  // overwrites and new keys
  for (int i = 0; i < 50; ++i)
    EXPECT_TRUE(s->erase(ccf_test::numbered("k", i)));
  s->put("k7", "back");
  const kv_map want = contents(*s);
  s->close();
  std::filesystem::copy_file(dir / "old-index", db + "/index",
                             std::filesystem::copy_options::overwrite_existing);
  s = store::open(db);
  EXPECT_TRUE(s->opened().snapshot_used);
  EXPECT_EQ(s->opened().replayed_records, 251u);
  EXPECT_EQ(contents(*s), want);
  EXPECT_EQ(s->size(), want.size());
  EXPECT_EQ(s->get("k7"), std::optional<std::string>("back"));
  EXPECT_FALSE(s->contains("k8"));
  EXPECT_EQ(s->stats().records, 451u);
}

// A snapshot that cannot be opened (a read-only file for a user who is not root; here a symbolic
// link to a directory) made every command fail: it only costs a replay.
TEST(kv_snapshot, a_snapshot_that_cannot_be_opened_only_costs_replay) {
  temp_dir dir;
  const std::string db = dir / "db";
  auto s = store::open(db);
  put_range(*s, 0, 20, "k");
  s->close();
  std::filesystem::remove(db + "/index");
  std::filesystem::create_directory(dir / "elsewhere");
  std::filesystem::create_directory_symlink(dir / "elsewhere", db + "/index");
  options strict;
  strict.strict_recovery = true;
  s = store::open(db, strict);
  EXPECT_FALSE(s->opened().snapshot_used);
  EXPECT_EQ(s->opened().replayed_records, 20u);
  EXPECT_EQ(s->get("k7"), std::optional<std::string>("49"));
  s->close();
  EXPECT_TRUE(std::filesystem::is_directory(dir / "elsewhere"));
  s = store::open(db, strict);
  EXPECT_TRUE(s->opened().snapshot_used) << "close wrote no snapshot in its place";
}

// A recovery that cuts the log below the snapshot's position makes that snapshot stale for good:
// once the log grows past the position again, the snapshot must not be used (it would point into
// the new records, and replay would start in the middle of one).
TEST(kv_snapshot, a_snapshot_past_a_replay_cut_is_never_used_later) {
  temp_dir dir;
  const std::string db = dir / "db";
  auto s = store::open(db);
  put_range(*s, 0, 100, "old");
  s->close();  // snapshot at the end of the log
  const std::uint64_t full = file_size(db + "/log");
  std::filesystem::resize_file(db + "/log", full / 2);  // the log lost its second half
  s = store::open(db);
  EXPECT_FALSE(s->opened().snapshot_used);
  EXPECT_GT(s->opened().truncated_bytes, 0u);
  const std::size_t kept = s->size();
  EXPECT_GT(kept, 10u);
  EXPECT_LT(kept, 100u);
  put_range(*s, 0, 300, "new");  // durable (every_write), and past the old snapshot's position
  ASSERT_GT(s->stats().log_bytes, full);
  ccf_test::copy_dir(db, dir / "image");  // a power loss now
  s->close();

  auto img = store::open(dir / "image");
  std::size_t missing = 0;
  for (int i = 0; i < 300; ++i) {
    try {
      if (img->get(ccf_test::numbered("new", i)) != std::to_string(i * 7)) ++missing;
    } catch (const std::exception&) {
      ++missing;
    }
  }
  EXPECT_EQ(missing, 0u) << "synced writes lost: the stale snapshot was used (snapshot_used="
                         << img->opened().snapshot_used
                         << ", truncated_bytes=" << img->opened().truncated_bytes << ")";
  EXPECT_EQ(img->size(), kept + 300);
}

// The same, with the old snapshot put back after the log grew again (a restored backup of the
// index): snapshot.hpp promises that "a snapshot whose log was cut below its position and has
// grown again (new records where its position points) is never taken for current". Every record
// here has the same size (24 bytes), so a new record ends exactly at the old position.
TEST(kv_snapshot, an_old_snapshot_put_back_after_the_log_was_cut_and_regrown_is_not_used) {
  temp_dir dir;
  const std::string db = dir / "db";
  auto s = store::open(db);
  put_range(*s, 0, 100, "old");  // "old0" .. "old99" = "0" .. "693": 24-byte records
  s->close();
  std::filesystem::copy_file(db + "/index", dir / "old-index");
  const std::uint64_t full = file_size(db + "/log");
  std::filesystem::resize_file(db + "/log", log_header_size + 40 * 24);  // keeps old0 .. old39
  s = store::open(db);
  EXPECT_EQ(s->size(), 40u);
  put_range(*s, 0, 100, "new");  // 24-byte records again: the log grows past the old position
  ASSERT_GT(s->stats().log_bytes, full);
  s->close();
  std::filesystem::copy_file(dir / "old-index", db + "/index",
                             std::filesystem::copy_options::overwrite_existing);

  s = store::open(db);
  std::size_t missing = 0;
  for (int i = 0; i < 100; ++i) {
    try {
      if (s->get(ccf_test::numbered("new", i)) != std::to_string(i * 7)) ++missing;
    } catch (const std::exception&) {
      ++missing;
    }
  }
  EXPECT_EQ(missing, 0u) << "the old snapshot was taken for current (snapshot_used="
                         << s->opened().snapshot_used << ")";
  EXPECT_EQ(s->size(), 140u);
  EXPECT_FALSE(s->contains("old40"));
}

// ---------------------------------------------------------------------------------------------
// Torn tails

TEST(kv_recovery, garbage_after_the_last_record_is_cut_off) {
  temp_dir dir;
  const std::string db = dir / "db";
  auto s = store::open(db);
  put_range(*s, 0, 100, "k");
  const kv_map want = contents(*s);
  s->close();
  const std::uint64_t size = file_size(db + "/log");
  std::mt19937_64 rng(7);
  ccf_test::append_to(db + "/log", ccf_test::random_bytes(rng, 1001));
  s = store::open(db);
  EXPECT_EQ(s->opened().truncated_bytes, 1001u);
  EXPECT_EQ(s->opened().dropped_records, 0u);
  EXPECT_TRUE(s->opened().dropped_file.empty());
  EXPECT_EQ(file_size(db + "/log"), size);
  EXPECT_EQ(contents(*s), want);
  s->put("after", "recovery");
  s->close();
  ccf_test::append_to(db + "/log", std::string(4096, '\0'));  // a zero-filled tail
  s = store::open(db);
  EXPECT_EQ(s->opened().truncated_bytes, 4096u);
  EXPECT_EQ(s->get("after"), std::optional<std::string>("recovery"));
  EXPECT_EQ(s->size(), 101u);
}

TEST(kv_recovery, half_a_record_after_the_last_one_is_cut_off) {
  temp_dir dir;
  const std::string a = dir / "a", b = dir / "b";
  auto s = store::open(a);
  put_range(*s, 0, 50, "k");
  s->close();
  const std::uint64_t s1 = file_size(a + "/log");
  ccf_test::copy_dir(a, b);
  s = store::open(b);  // the same log, one record longer: the record that would come next
  s->put("k3", std::string(500, 'x'));
  s->close();
  const std::string next = read_all(b + "/log").substr(s1);
  ASSERT_EQ(next.size(), record_size(2, 500));

  ccf_test::append_to(a + "/log", next.substr(0, next.size() / 2));
  s = store::open(a);  // the snapshot is used; the torn record after it is cut off
  EXPECT_TRUE(s->opened().snapshot_used);
  EXPECT_EQ(s->opened().truncated_bytes, next.size() / 2);
  EXPECT_EQ(s->get("k3"), std::optional<std::string>("21"));
  EXPECT_EQ(s->size(), 50u);
  s->put("k3", "new");
  s->close();
  s = store::open(a);
  EXPECT_EQ(s->get("k3"), std::optional<std::string>("new"));
  EXPECT_EQ(s->get("k49"), std::optional<std::string>(std::to_string(49 * 7)));
}

TEST(kv_recovery, a_last_record_cut_in_the_middle_is_gone) {
  temp_dir dir;
  const std::string db = dir / "db";
  auto s = store::open(db);
  put_range(*s, 0, 50, "k");
  s->put("k3", std::string(500, 'x'));  // the last record overwrites k3
  s->close();
  const std::uint64_t size = file_size(db + "/log");
  const std::uint64_t cut = size - record_size(2, 500) / 2;
  std::filesystem::resize_file(db + "/log", cut);
  s = store::open(db);
  EXPECT_FALSE(s->opened().snapshot_used);  // it was past the end of the log
  EXPECT_EQ(s->opened().truncated_bytes, cut - (size - record_size(2, 500)));
  EXPECT_EQ(s->opened().replayed_records, 50u);
  EXPECT_EQ(s->get("k3"), std::optional<std::string>("21"));  // the value before
  EXPECT_EQ(s->size(), 50u);
  EXPECT_EQ(s->get("k49"), std::optional<std::string>(std::to_string(49 * 7)));
  // The snapshot was written after the log was synced up to its end: the cut lost synced bytes.
  EXPECT_EQ(s->opened().lost_synced_bytes, size - cut);
  EXPECT_FALSE(s->opened().dropped_file.empty()) << "the synced half record was not kept";
}

// A snapshot is written once the log is synced up to its position: a log whose records end
// below it lost synced records, which no crash of an append can do. A cut at a record boundary
// looks like a clean log; a damaged last record like a torn tail. Strict recovery refuses both
// (they were cut, or replayed as such, and not reported); a lenient one reports them and keeps
// the damaged bytes.
TEST(kv_recovery, a_log_that_lost_records_below_its_snapshot_is_refused_or_reported) {
  temp_dir dir;
  const std::string db = dir / "db";
  auto s = store::open(db);
  put_range(*s, 0, 50, "k");
  s->put("last", "record");
  s->close();
  const std::string log = read_all(db + "/log"), index = read_all(db + "/index");
  const std::uint64_t last = record_size(4, 6);
  options strict;
  strict.strict_recovery = true;

  // Cut at the last record's start.
  std::filesystem::resize_file(db + "/log", log.size() - last);
  try {
    store::open(db, strict);
    ADD_FAILURE() << "a log that lost its last synced record was opened";
  } catch (const ccf::kv::damaged_log_error& e) {
    EXPECT_NE(std::string(e.what()).find("synced up to offset " + std::to_string(log.size())),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(read_all(db + "/index"), index) << "a refused open removed the evidence";
  EXPECT_EQ(file_size(db + "/log"), log.size() - last);
  s = store::open(db);
  EXPECT_EQ(s->opened().lost_synced_bytes, last);
  EXPECT_EQ(s->opened().truncated_bytes, 0u);
  EXPECT_FALSE(s->contains("last"));
  EXPECT_EQ(s->size(), 50u);
  s->close();

  // A byte of the last record's value rotted.
  std::string bad = log;
  bad[log.size() - 9] ^= 0x01;
  write_all(db + "/log", bad);
  write_all(db + "/index", index);
  EXPECT_THROW(store::open(db, strict), ccf::kv::damaged_log_error);
  EXPECT_EQ(read_all(db + "/log"), bad) << "a refused open changed the log";
  s = store::open(db);
  EXPECT_EQ(s->opened().truncated_bytes, last);
  EXPECT_EQ(s->opened().lost_synced_bytes, 0u);
  EXPECT_EQ(s->opened().dropped_records, 0u);
  ASSERT_FALSE(s->opened().dropped_file.empty()) << "synced bytes were cut and not kept";
  EXPECT_EQ(read_all(s->opened().dropped_file), bad.substr(log.size() - last));
  EXPECT_FALSE(s->contains("last"));
  EXPECT_EQ(s->get("k49"), std::optional<std::string>(std::to_string(49 * 7)));
  s->close();
  // The recovery removed the snapshot with the cut: the log is now consistent as it is.
  s = store::open(db, strict);
  EXPECT_EQ(s->size(), 50u);
}

TEST(kv_recovery, a_bad_record_in_the_middle_is_kept_aside_or_refused) {
  temp_dir dir;
  const std::string db = dir / "db";
  std::string log = log_after_puts(db, 100);
  // Every record of put_range(0, 100) takes 24 bytes ("k0".."k99", values "0".."693"): k40's
  // starts at 64 + 40 * 24; flip a byte of its key.
  ASSERT_EQ(record_size(2, 1), 24u);
  ASSERT_EQ(record_size(3, 3), 24u);
  const std::uint64_t bad = log_header_size + 40 * 24;
  log[bad + 18] ^= 0x20;
  write_all(db + "/log", log);

  options strict;
  strict.strict_recovery = true;
  EXPECT_THROW(store::open(db, strict), ccf::kv::damaged_log_error);
  EXPECT_EQ(file_size(db + "/log"), log.size()) << "a refused open changed the log";

  auto s = store::open(db);
  EXPECT_EQ(s->opened().truncated_bytes, log.size() - bad);
  EXPECT_EQ(s->opened().dropped_records, 59u);
  EXPECT_EQ(s->opened().dropped_file, db + "/dropped-" + std::to_string(bad));
  EXPECT_EQ(read_all(s->opened().dropped_file), log.substr(bad));
  EXPECT_EQ(s->size(), 40u);
  EXPECT_EQ(s->get("k39"), std::optional<std::string>(std::to_string(39 * 7)));
  EXPECT_FALSE(s->contains("k40"));
  EXPECT_FALSE(s->contains("k41"));
  s->close();

  // A damaged last record is a torn tail, not corruption: strict recovery accepts it.
  s = store::open(db);
  s->put("last", "record");
  s->close();
  std::filesystem::remove(db + "/index");
  log = read_all(db + "/log");
  log[log.size() - 9] ^= 0x01;
  write_all(db + "/log", log);
  s = store::open(db, strict);
  EXPECT_EQ(s->opened().truncated_bytes, record_size(4, 6));
  EXPECT_EQ(s->opened().dropped_records, 0u);
  EXPECT_FALSE(s->contains("last"));
}

TEST(kv_recovery, a_second_cut_at_the_same_offset_keeps_the_first_copy) {
  temp_dir dir;
  const std::string db = dir / "db";
  auto damage_fourth = [&](int records) {
    std::string log = log_after_puts(db, records);
    log[log_header_size + 3 * 24 + 18] ^= 0x20;  // the fourth record: 24 bytes each, as above
    write_all(db + "/log", log);
    return log.substr(log_header_size + 3 * 24);
  };
  const std::string first = damage_fourth(10);
  auto s = store::open(db);
  const std::string first_file = s->opened().dropped_file;
  EXPECT_EQ(first_file, db + "/dropped-" + std::to_string(log_header_size + 3 * 24));
  s->close();
  // The log is cut at its fourth record: writing more and damaging the fourth record again cuts
  // it at the same offset. The second copy goes beside the first (it was written over it, and
  // the first's records lost).
  const std::string second = damage_fourth(6);
  s = store::open(db);
  EXPECT_EQ(s->opened().dropped_file, first_file + ".1");
  EXPECT_EQ(read_all(first_file), first);
  EXPECT_EQ(read_all(first_file + ".1"), second);
}

TEST(kv_recovery, a_tail_crafted_to_make_the_search_quadratic_is_searched_in_bounded_time) {
  // After the first bad position every 8-byte position is tried as a record; one whose header
  // claims a long record costs a checksum of that length. A tail of 16 MiB where every position
  // claims half of it cost about 2 M * 8 MiB of hashing (hours); the search stops at its bound
  // (64 MiB here) and the tail is kept aside, or refused with strict recovery.
  temp_dir dir;
  const std::string db = dir / "db";
  std::string log = log_after_puts(db, 10);
  const std::size_t end = log.size(), tail = std::size_t{16} << 20;
  log.resize(end + tail);
  for (std::size_t at = end; at + 8 <= log.size(); at += 8) {
    const std::uint32_t key = 1, value = static_cast<std::uint32_t>(tail / 2);
    std::memcpy(&log[at], &key, 4);
    std::memcpy(&log[at + 4], &value, 4);
  }
  write_all(db + "/log", log);
  options o;
  o.tail_search_bytes = std::uint64_t{64} << 20;
  options strict = o;
  strict.strict_recovery = true;
  try {
    store::open(db, strict);
    ADD_FAILURE() << "a strict open accepted a tail it could not search through";
  } catch (const corrupt_error& e) {
    EXPECT_NE(std::string(e.what()).find("may follow"), std::string::npos) << e.what();
  }
  auto s = store::open(db, o);
  EXPECT_EQ(s->size(), 10u);
  EXPECT_EQ(s->opened().truncated_bytes, tail);
  EXPECT_EQ(s->opened().dropped_records, 0u);  // none found before the search stopped
  EXPECT_EQ(read_all(s->opened().dropped_file), log.substr(end));
}

TEST(kv_recovery, a_torn_binary_value_is_a_torn_tail_under_the_default_bound) {
  // Small little-endian integers make every 8-byte position of a torn value claim a record of up
  // to 64 KiB: the default bound searches through it, and strict recovery opens.
  temp_dir dir;
  const std::string db = dir / "db";
  auto s = store::open(db);
  put_range(*s, 0, 10, "k");
  std::string value(256 << 10, '\0');
  for (std::size_t i = 0; i < value.size() / 8; ++i) {
    const std::uint64_t n = 600 + i * 60000 / (value.size() / 8);
    std::memcpy(&value[8 * i], &n, 8);
  }
  s->put("binary", value);
  s->close();
  std::filesystem::remove(db + "/index");
  const std::string log = read_all(db + "/log");
  write_all(db + "/log", log.substr(0, log.size() - value.size() / 2));  // torn halfway
  options strict;
  strict.strict_recovery = true;
  s = store::open(db, strict);
  EXPECT_EQ(s->size(), 10u);
  EXPECT_EQ(s->opened().dropped_records, 0u);
  EXPECT_EQ(s->opened().dropped_file, "");
  EXPECT_FALSE(s->contains("binary"));
}

TEST(kv_recovery, a_damaged_record_found_by_a_get_names_the_log) {
  temp_dir dir;
  const std::string db = dir / "db";
  auto s = store::open(db);
  s->put("a", "aaaa");  // the first record: its value starts at byte 64 + 16 + 1
  s->put("b", "bbbb");
  s->put("b", "cccc");
  auto message_of_get = [&](const std::string& key) -> std::string {
    try {
      s->get(key);
    } catch (const corrupt_error& e) {
      return e.what();
    }
    return "no corrupt_error";
  };
  const std::string log_name = "'" + db + "/log'";
  ccf_test::flip_byte(db + "/log", log_header_size + 17, 0x04);  // seen through the mapping
  EXPECT_NE(message_of_get("a").find(log_name), std::string::npos) << message_of_get("a");
  EXPECT_EQ(s->get("b"), std::optional<std::string>("cccc"));
  ccf_test::flip_byte(db + "/log", log_header_size + 17, 0x04);  // repaired
  EXPECT_EQ(s->get("a"), std::optional<std::string>("aaaa"));

  s->compact();  // "a" is again the first record, now of the log written by compaction
  ccf_test::flip_byte(db + "/log", log_header_size + 17, 0x04);
  const std::string after = message_of_get("a");
  EXPECT_NE(after.find(log_name), std::string::npos)
      << "the error names a file that is not the store's log: " << after;
  EXPECT_EQ(s->get("b"), std::optional<std::string>("cccc"));
}

// A record below the snapshot's position that no replay reads (a superseded one here) rotted:
// get, compact and for_each meet it, and only options::verify_log finds it at open, where a
// recovery cuts the log there (keeping what follows) and a strict one refuses.
TEST(kv_recovery, verify_log_finds_a_rotten_record_below_the_snapshot) {
  temp_dir dir;
  const std::string db = dir / "db";
  auto s = store::open(db);
  s->put("a", "aaaa");  // the first record, superseded: its value starts at byte 64 + 16 + 1
  s->put("b", "bbbb");
  s->put("a", "AAAA");
  s->put("c", "cccc");
  s->close();
  const std::string index = read_all(db + "/index");
  ccf_test::flip_byte(db + "/log", log_header_size + 17, 0x04);
  const std::string log = read_all(db + "/log");

  s = store::open(db);
  EXPECT_TRUE(s->opened().snapshot_used);
  EXPECT_EQ(s->get("a"), std::optional<std::string>("AAAA"));
  EXPECT_THROW(s->compact(), corrupt_error);
  EXPECT_THROW(contents(*s), corrupt_error);
  s->close();
  EXPECT_EQ(read_all(db + "/log"), log);

  options verify;
  verify.verify_log = true;
  verify.strict_recovery = true;
  EXPECT_THROW(store::open(db, verify), ccf::kv::damaged_log_error);
  EXPECT_EQ(read_all(db + "/log"), log) << "a refused open changed the log";
  EXPECT_EQ(read_all(db + "/index"), index) << "a refused open removed the snapshot";

  verify.strict_recovery = false;
  s = store::open(db, verify);
  EXPECT_FALSE(s->opened().snapshot_used);
  EXPECT_EQ(s->opened().truncated_bytes, log.size() - log_header_size);
  EXPECT_EQ(s->opened().dropped_records, 3u);
  EXPECT_EQ(read_all(s->opened().dropped_file), log.substr(log_header_size));
  EXPECT_EQ(s->size(), 0u);
  s->put("d", "dddd");
  s->compact();
  EXPECT_EQ(contents(*s), (kv_map{{"d", "dddd"}}));
  s->close();

  // An intact log: verify_log replays all of it and changes nothing.
  s = store::open(db, verify);
  EXPECT_FALSE(s->opened().snapshot_used);
  EXPECT_EQ(s->opened().replayed_records, 1u);
  EXPECT_EQ(s->opened().truncated_bytes, 0u);
  EXPECT_EQ(s->get("d"), std::optional<std::string>("dddd"));
}

TEST(kv_recovery, not_a_store_log_is_an_error) {
  temp_dir dir;
  const std::string db = dir / "db";
  store::open(db)->put("k", "v");
  const std::string good = read_all(db + "/log");
  for (const std::string& bad : {std::string(), std::string(63, 'x'), std::string(4096, 'x'),
                                 "CCFKVLOG" + good.substr(8, 50)}) {
    write_all(db + "/log", bad);
    EXPECT_THROW(store::open(db), corrupt_error) << bad.size() << " bytes";
  }
}

TEST(kv_recovery, leftovers_of_an_interrupted_compaction_are_removed) {
  temp_dir dir;
  const std::string db = dir / "db";
  store::open(db)->put("k", "v");
  for (const char* name : {"log.compact", "index.compact", "log.tmp", "index.tmp"})
    write_all(db + "/" + name, "half-written junk");
  auto s = store::open(db);
  EXPECT_EQ(s->get("k"), std::optional<std::string>("v"));
  for (const char* name : {"log.compact", "index.compact", "log.tmp", "index.tmp"})
    EXPECT_FALSE(std::filesystem::exists(db + "/" + name)) << name;
}

}  // namespace
