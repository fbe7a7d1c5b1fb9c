// The key-value store after a failure, on the fault-injecting file system of kv_fault_fs.hpp:
// close() reports a failure that came before it (also one of group mode's background sync, which
// nothing else reports) after syncing what the log holds; the failure keeps its first cause;
// a write over an older record that fails its checksum is refused before it is written; a replay
// that meets such a record (the snapshot's index names it) is a log damaged in the middle; options
// no store runs with are refused before anything is created; a group_interval too long for the
// clock does not make the background syncer spin; close() while a compaction or another close()
// runs; a failed store refuses to compact, also a compaction that a failed write overlaps; an
// index slot that names a delete record is an error; periodic snapshots resume after a
// compaction; and a check (it rarely meets the race it guards against) that every write reaching
// group_writes is synced soon.
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "ccf/detail/sizing.hpp"
#include "ccf/kv/store.hpp"
#include "kv_fault_fs.hpp"

namespace ccf_test {
namespace {

namespace kv = ccf::kv;
using fs_ptr = std::shared_ptr<kv_fault_fs>;
const std::string& dir = fault_dir;
const std::string& log_path = fault_log_path;

/// "k" and the number n: built by appending (GCC 12 warns, wrongly, of overlapping copies in
/// "k" + std::to_string(n), GCC bug 105651).
std::string key_k(int n) {
  std::string k = "k";
  k += std::to_string(n);
  return k;
}

/// The file system as a power loss leaves it when every change not yet synced is lost.
fs_ptr power_loss(const kv_fault_fs& fs) {
  std::mt19937_64 rng(1);
  return fs.crash([](const std::string&, std::size_t) { return kv_fault_fs::fate::dropped; }, rng);
}

/// The message of the io_error that f throws ("" when it throws none).
template <class F>
std::string io_error_of(F&& f) {
  try {
    f();
  } catch (const kv::io_error& e) {
    return e.what();
  }
  return {};
}

TEST(kv_failure, close_syncs_the_writes_before_a_failed_write_and_reports_it) {
  // close() of a store whose write had failed skipped its sync and returned normally: the writes
  // acknowledged before the failure (durability none or group) were lost to a power loss.
  for (const kv::durability d : {kv::durability::none, kv::durability::group}) {
    fs_ptr fs = kv_fault_fs::make();
    auto s = kv::store::open(dir, fault_options(fs, d));
    s->sync();
    s->put("k1", "acknowledged");
    fs->fail(kv_fault_fs::op_write, 1);
    EXPECT_THROW(s->put("k2", "refused"), kv::io_error);
    const std::string failure = io_error_of([&] { s->close(); });
    EXPECT_NE(failure.find("failed"), std::string::npos) << "close() reported nothing";
    s.reset();
    s = kv::store::open(dir, fault_options(power_loss(*fs), d));
    EXPECT_EQ(s->get("k1"), "acknowledged") << "durability " << static_cast<int>(d);
    EXPECT_FALSE(s->contains("k2"));
  }
}

TEST(kv_failure, close_reports_a_failed_background_sync) {
  // group mode: the background syncer's failure was recorded, and close() then neither synced
  // nor threw, so a caller that only puts and closes never learned that its writes may be lost.
  fs_ptr fs = kv_fault_fs::make();
  auto s = kv::store::open(dir, fault_options(fs, kv::durability::group));
  fs->fail(kv_fault_fs::op_sync, 1);
  s->put("a", "1");  // acknowledged at once; the syncer's next sync fails
  // Writes go on until the store knows of the failure (puts sync nothing in group mode).
  std::string first;
  for (int i = 0; i < 400 && first.empty(); ++i) {
    first = io_error_of([&] { s->put("b", "2"); });
    if (first.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_FALSE(first.empty()) << "the background sync never failed";
  EXPECT_EQ(fs->last_fault().second, log_path);
  // Every later write reports the same first cause: the message does not grow (it gained a
  // prefix at each of the syncer's ticks, 100 times a second).
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(io_error_of([&] { s->put("c", "3"); }), first);
  EXPECT_EQ(io_error_of([&] { s->close(); }), first);
}

TEST(kv_failure, a_write_over_a_corrupt_record_is_refused_before_it_is_written) {
  // A put whose key had to be compared with an older record that fails its checksum was written
  // first and refused after: the store took no more writes, and every reopen replayed that
  // record into the same comparison and failed, whatever strict_recovery said.
  fs_ptr fs = kv_fault_fs::make();
  auto s = kv::store::open(dir, fault_options(fs, kv::durability::every_write));
  s->put("a", "old value of a");
  s->put("b", "b");
  s->close();  // the snapshot covers both records
  {
    auto log = fs->open(log_path, kv::file_system::open_mode::existing);
    const std::uint64_t in_a = kv::detail::log_header_size + 20;
    std::byte x{};
    ASSERT_EQ(log->read_at(in_a, std::span<std::byte>(&x, 1)), 1u);
    x ^= std::byte{0x40};
    log->write_at(in_a, std::span<const std::byte>(&x, 1));
    log->sync();
  }
  for (int round = 0; round < 2; ++round) {
    s = kv::store::open(dir, fault_options(fs, kv::durability::every_write));
    const std::uint64_t size = s->stats().log_bytes;
    EXPECT_THROW(s->put("a", "new value of a"), kv::corrupt_error);
    EXPECT_THROW(s->erase("a"), kv::corrupt_error);
    EXPECT_THROW(s->get("a"), kv::corrupt_error);
    EXPECT_EQ(s->stats().log_bytes, size) << "a refused write reached the log";
    EXPECT_EQ(s->get("b"), "b");
    s->put("c" + std::to_string(round), "written after the refusal");
    s->close();
  }
  s = kv::store::open(dir, fault_options(fs, kv::durability::every_write));
  EXPECT_EQ(s->get("c0"), "written after the refusal");
  EXPECT_EQ(s->get("c1"), "written after the refusal");
}

TEST(kv_failure, a_replay_meeting_a_rotten_record_before_the_snapshot_cuts_the_log_there) {
  // The replay compares each record's key with the record the snapshot's index names for it. One
  // of those that had rotted made every open throw corrupt_error, with or without
  // strict_recovery: only removing the snapshot by hand opened the store again.
  fs_ptr fs = kv_fault_fs::make();
  auto s = kv::store::open(dir, fault_options(fs));
  s->put("z", "z");
  s->put("a", "old value of a");
  const std::uint64_t a_at = s->stats().log_bytes - kv::detail::record_size(1, 14);
  s->put("b", "b");
  s->close();  // the snapshot covers the three records and pins the record of "b"
  s = kv::store::open(dir, fault_options(fs));
  s->put("a", "new value of a");  // acknowledged, durable; the process dies before any snapshot
  s->put("c", "c");
  fs = power_loss(*fs);
  s.reset();
  {
    auto log = fs->open(log_path, kv::file_system::open_mode::existing);
    std::byte x{};
    ASSERT_EQ(log->read_at(a_at + 20, std::span<std::byte>(&x, 1)), 1u);
    x ^= std::byte{0x40};
    log->write_at(a_at + 20, std::span<const std::byte>(&x, 1));
    log->sync();
  }
  const std::string log_before = as_string(fs->read_file(log_path));
  kv::options o = fault_options(fs);
  o.strict_recovery = true;
  try {
    kv::store::open(dir, o);
    ADD_FAILURE() << "a strict open of a log with a rotten record opened";
  } catch (const kv::damaged_log_error& e) {  // it says what a recovery would do
    EXPECT_NE(std::string(e.what()).find("replays the log without the snapshot"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(as_string(fs->read_file(log_path)), log_before);  // nothing cut
  o.strict_recovery = false;
  s = kv::store::open(dir, o);
  // The log is cut at the rotten record; the records after it are kept aside.
  EXPECT_FALSE(s->opened().snapshot_used);
  EXPECT_TRUE(s->opened().snapshot_discarded);
  EXPECT_EQ(s->opened().dropped_records, 3u);
  EXPECT_EQ(s->opened().truncated_bytes, log_before.size() - a_at);
  EXPECT_EQ(s->get("z"), "z");
  EXPECT_EQ(s->get("a"), std::nullopt);
  EXPECT_EQ(s->get("b"), std::nullopt);
  EXPECT_EQ(s->get("c"), std::nullopt);
  const std::string kept = as_string(fs->read_file(s->opened().dropped_file));
  EXPECT_EQ(kept, log_before.substr(a_at));
  EXPECT_NE(kept.find("new value of a"), std::string::npos);
  s->put("a", "again");
  s->close();
  s = kv::store::open(dir, fault_options(fs));
  EXPECT_EQ(s->get("a"), "again");
  EXPECT_EQ(s->get("z"), "z");
}

TEST(kv_failure, options_no_store_runs_with_are_refused_before_anything_is_created) {
  kv::options zero_writes = fault_options(kv_fault_fs::make(), kv::durability::group);
  zero_writes.group_writes = 0;  // the syncer spun: its wait was always over
  kv::options zero_interval = fault_options(kv_fault_fs::make(), kv::durability::group);
  zero_interval.group_interval = std::chrono::milliseconds(0);
  kv::options huge = fault_options(kv_fault_fs::make(), kv::durability::every_write);
  huge.expected_keys = std::numeric_limits<std::size_t>::max() / 2;  // threw after the log existed
  kv::options no_durability = fault_options(kv_fault_fs::make(), kv::durability::every_write);
  no_durability.sync = static_cast<kv::durability>(7);  // ran as durability::none: no syncs
  for (const kv::options& o : {zero_writes, zero_interval, huge, no_durability}) {
    EXPECT_THROW(kv::store::open(dir, o), std::invalid_argument);
    EXPECT_FALSE(o.fs->exists(dir)) << "a refused open created the store's directory";
  }
  // The most keys a log can hold, more than this machine's memory can index: std::length_error,
  // which came once the directory, LOCK and log existed (and the next open found a store).
  kv::options beyond_memory = fault_options(kv_fault_fs::make(), kv::durability::every_write);
  beyond_memory.expected_keys = kv::detail::kv_index::max_offset / kv::detail::record_size(1, 0);
  if (ccf::detail::physical_memory_bytes() / 8 < beyond_memory.expected_keys) {
    EXPECT_THROW(kv::store::open(dir, beyond_memory), std::length_error);
    EXPECT_FALSE(beyond_memory.fs->exists(dir)) << "a refused open created the store's directory";
  }
  kv::options fine = fault_options(kv_fault_fs::make(), kv::durability::none);
  fine.group_writes = 0;  // only group mode uses it
  EXPECT_NO_THROW(kv::store::open(dir, fine)->close());
}

TEST(kv_failure, a_group_interval_past_the_clocks_range_does_not_make_the_syncer_spin) {
  // milliseconds::max() (or any interval of some 290 years or more) put the syncer's deadline,
  // now + interval in nanoseconds, in the past: it never slept, and synced each write at once
  // however few of them there were.
  fs_ptr fs = kv_fault_fs::make();
  kv::options o = fault_options(fs, kv::durability::group);
  o.group_interval = std::chrono::milliseconds::max();
  o.group_writes = 1000;
  auto s = kv::store::open(dir, o);
  s->put("a", "1");  // neither the interval nor group_writes is reached: nothing to sync yet
  for (int i = 0; i < 50 && s->stats().syncs == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(s->stats().syncs, 0u) << "the background syncer did not wait";
  s->close();  // stops the syncer without waiting for the interval, and syncs
  s = kv::store::open(dir, fault_options(power_loss(*fs)));
  EXPECT_EQ(s->get("a"), "1");
}

// ---- close() while another thread compacts or closes --------------------------------------------

/// Blocks the first operation of kind `o` on `path` (made after it is set) until release() is
/// called; wait() is true once an operation is blocked, false if none is within 10 s.
struct blocker {
  std::atomic<bool> armed{true}, blocked{false}, released{false};
  void install(kv_fault_fs& fs, kv_fault_fs::op o, std::string path) {
    fs.set_hook([this, o, path](kv_fault_fs::op op, const std::string& p) {
      if (op != o || p != path || !armed.exchange(false)) return;
      blocked = true;
      blocked.notify_all();
      released.wait(false);
    });
  }
  bool wait() const {
    for (int ms = 0; ms < 10000 && !blocked; ++ms)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return blocked;
  }
  void release() {
    released = true;
    released.notify_all();
  }
};

/// A store of 20 writes to keys k0 to k4 (k4 last set to "19"), whose compaction runs in a thread
/// and is held where it creates log.compact (phase 1 has begun) until finish().
struct held_compaction {
  fs_ptr fs = kv_fault_fs::make();
  std::unique_ptr<kv::store> s = kv::store::open(dir, fault_options(fs));
  blocker b;
  std::exception_ptr error;
  std::thread compacting;

  held_compaction() {
    for (int i = 0; i < 20; ++i)
      s->put(key_k(i % 5), std::to_string(i));
    b.install(*fs, kv_fault_fs::op_create, dir + "/log.compact");
    compacting = std::thread([this] {
      try {
        s->compact();
      } catch (...) {
        error = std::current_exception();
      }
    });
  }
  held_compaction(const held_compaction&) = delete;
  held_compaction& operator=(const held_compaction&) = delete;
  ~held_compaction() { finish(); }
  /// Whether the compaction reached log.compact (within 10 s).
  bool held() const { return b.wait(); }
  /// Lets the compaction go and waits for it.
  void finish() {
    b.release();
    if (compacting.joinable()) compacting.join();
    fs->set_hook(nullptr);
  }
};

TEST(kv_failure, close_waits_for_a_running_compaction) {
  // close() from another thread while a compaction runs waits for it: were the LOCK released
  // first, the compaction would go on creating and writing log.compact, then throw
  // std::logic_error at its switch and remove its files, which may be those of the store's next
  // owner by then.
  held_compaction c;
  ASSERT_TRUE(c.held()) << "the compaction did not create log.compact";
  auto& s = c.s;
  fs_ptr fs = c.fs;
  std::thread closing([&] { s->close(); });
  // The compaction is let go once close() had time to finish if it does not wait (it takes
  // microseconds on this file system); either way a close that waits passes.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  c.finish();
  closing.join();
  EXPECT_FALSE(c.error) << "the compaction was cut short by close()";
  s = kv::store::open(dir, fault_options(fs));
  EXPECT_EQ(s->stats().records, 5u) << "the log is the compacted one";
  for (int i = 15; i < 20; ++i)
    EXPECT_EQ(s->get(key_k(i % 5)), std::to_string(i));
}

TEST(kv_failure, two_concurrent_closes_return) {
  // group mode: two close() calls at once join the syncer thread once (were both to see it
  // joinable and join it, the second would throw std::system_error, or hang).
  fs_ptr fs = kv_fault_fs::make();
  auto s = kv::store::open(dir, fault_options(fs, kv::durability::group));
  blocker b;
  b.install(*fs, kv_fault_fs::op_sync, log_path);
  s->put("a", "1");  // the syncer's sync of it blocks
  if (!b.wait()) {
    b.release();
    FAIL() << "the background syncer did not sync";
  }
  std::atomic<int> threw{0};
  auto close = [&] {
    try {
      s->close();
    } catch (...) {
      ++threw;
    }
  };
  std::thread first(close), second(close);
  // Both closes are let reach the join of the blocked syncer before it is let go.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  b.release();
  first.join();
  second.join();
  fs->set_hook(nullptr);
  EXPECT_EQ(threw, 0);
  s = kv::store::open(dir, fault_options(fs));
  EXPECT_EQ(s->get("a"), "1");
}

// ---- a failed store, a forged index, the background syncer's wake-up ------------------------------

TEST(kv_failure, a_failed_store_refuses_to_compact) {
  // compact() ran on a store whose write had failed, rewriting a log that the index may no
  // longer describe, and switching to it.
  fs_ptr fs = kv_fault_fs::make();
  auto s = kv::store::open(dir, fault_options(fs));
  s->put("a", "1");
  fs->fail(kv_fault_fs::op_write, 1);
  EXPECT_THROW(s->put("b", "2"), kv::io_error);
  const std::uint64_t compactions = s->stats().compactions;
  const std::string failure = io_error_of([&] { s->compact(); });
  EXPECT_NE(failure.find("failed"), std::string::npos) << "compact() ran on a failed store";
  EXPECT_EQ(s->stats().compactions, compactions);
  EXPECT_FALSE(fs->exists(dir + "/log.compact"));
  EXPECT_THROW(s->close(), kv::io_error);
  s = kv::store::open(dir, fault_options(fs));
  EXPECT_EQ(s->get("a"), "1");
  EXPECT_FALSE(s->contains("b"));
}

TEST(kv_failure, a_write_failing_during_a_compaction_stops_it) {
  // A compaction that began before a write failed went on to its switch: it rewrote a log the
  // index may no longer describe, and made it the store's log.
  held_compaction c;
  ASSERT_TRUE(c.held()) << "the compaction did not create log.compact";
  auto& s = c.s;
  fs_ptr fs = c.fs;
  fs->fail(kv_fault_fs::op_write, 1);
  EXPECT_THROW(s->put("late", "refused"), kv::io_error);  // the store has failed
  c.finish();
  const std::string compact_error =
      c.error ? io_error_of([&] { std::rethrow_exception(c.error); }) : "compact() returned";
  EXPECT_NE(compact_error.find("failed"), std::string::npos) << compact_error;
  EXPECT_EQ(s->stats().compactions, 0u);
  EXPECT_FALSE(fs->exists(dir + "/log.compact"));
  EXPECT_THROW(s->close(), kv::io_error);
  s = kv::store::open(dir, fault_options(fs));
  EXPECT_EQ(s->stats().records, 20u) << "the log is still the one before the compaction";
  EXPECT_EQ(s->get("k4"), "19");
  EXPECT_FALSE(s->contains("late"));
}

TEST(kv_failure, an_index_slot_naming_a_delete_record_is_corrupt) {
  // A snapshot whose slot for "a" names a delete record of "a" (here the put it named is
  // replaced by a delete record of the same size with a valid checksum; the snapshot's own
  // checksum and its pinned last record stay valid): get("a") returned the delete record's
  // empty value.
  fs_ptr fs = kv_fault_fs::make();
  auto s = kv::store::open(dir, fault_options(fs));
  s->put("a", "");  // at log_header_size, as large as a delete record of "a"
  s->put("b", "2");
  s->close();  // the snapshot covers both records and pins the record of "b"
  {
    auto log = fs->open(log_path, kv::file_system::open_mode::existing);
    std::array<std::byte, 8> id_low{};
    ASSERT_EQ(log->read_at(16, id_low), id_low.size());  // the low half of the log's id
    std::vector<std::byte> record;
    kv::detail::encode_record(record, kv::detail::log_header_size, "a", "", true,
                              kv::detail::get_u64(id_low.data()));
    log->write_at(kv::detail::log_header_size, record);
    log->sync();
  }
  s = kv::store::open(dir, fault_options(fs));
  ASSERT_TRUE(s->opened().snapshot_used);
  try {
    const std::optional<std::string> v = s->get("a");
    ADD_FAILURE() << "get(\"a\") gave " << (v ? "\"" + *v + "\"" : "nothing");
  } catch (const kv::corrupt_error& e) {
    EXPECT_NE(std::string(e.what()).find("delete record"), std::string::npos) << e.what();
  }
  EXPECT_THROW(s->put("a", "3"), kv::corrupt_error);
  EXPECT_EQ(s->get("b"), "2");
}

TEST(kv_failure, periodic_snapshots_resume_after_failed_ones_and_a_compaction) {
  // A failed periodic snapshot put the next try at the log's end + snapshot_every_bytes; a
  // compaction then made the log shorter, and no periodic snapshot was written until the new
  // log grew past the old one's end (replay after a crash grew with it).
  fs_ptr fs = kv_fault_fs::make();
  kv::options o = fault_options(fs);
  o.snapshot_every_bytes = 4096;
  auto s = kv::store::open(dir, o);
  const std::string value(200, 'v');  // records of 232 bytes
  fs->set_hook([](kv_fault_fs::op op, const std::string& path) {
    if (op == kv_fault_fs::op_create && path == dir + "/index.tmp") {
      throw kv::io_error("ccf_test: no room for the snapshot");
    }
  });
  for (int i = 0; i < 200; ++i)  // about 46 KB of log, every snapshot of it refused
    s->put(key_k(i % 10), value);
  fs->set_hook(nullptr);
  s->compact();
  const std::uint64_t compacted = s->stats().log_bytes;  // 10 records
  for (int i = 0; i < 40; ++i)  // about 9 KB more: at least one periodic snapshot is due
    s->put(key_k(i % 10), value);
  const std::vector<std::byte> ix = fs->read_file(dir + "/index");
  ASSERT_GE(ix.size(), kv::detail::snapshot_header_size);
  EXPECT_GE(kv::detail::get_u64(&ix[32]), compacted + o.snapshot_every_bytes)
      << "no periodic snapshot since the compaction";
}

TEST(kv_failure, a_compaction_whose_snapshot_cannot_be_written_goes_on_without_it) {
  // The snapshot is optional (close() skips one it cannot write); a compaction that could not
  // write its own failed as a whole: on a nearly full disk the command that gives space back
  // could not run.
  fs_ptr fs = kv_fault_fs::make();
  kv::options o = fault_options(fs);
  auto s = kv::store::open(dir, o);
  for (int i = 0; i < 200; ++i)
    s->put(key_k(i % 10), std::to_string(i));
  s->snapshot();
  const std::uint64_t before = s->stats().log_bytes;
  fs->set_hook([](kv_fault_fs::op op, const std::string& path) {
    if (op == kv_fault_fs::op_write && path == dir + "/index.compact.tmp") {
      throw kv::io_error("ccf_test: no room for the snapshot");
    }
  });
  ASSERT_NO_THROW(s->compact());
  fs->set_hook(nullptr);
  EXPECT_LT(s->stats().log_bytes, before);
  EXPECT_EQ(s->stats().compactions, 1u);
  EXPECT_FALSE(fs->exists(dir + "/index.compact.tmp"));
  EXPECT_FALSE(fs->exists(dir + "/index")) << "the old log's snapshot was kept";
  s->put(key_k(3), "after");
  s->close();
  s = kv::store::open(dir, o);
  EXPECT_EQ(s->size(), 10u);
  EXPECT_EQ(s->get(key_k(3)), std::optional<std::string>("after"));
  EXPECT_EQ(s->get(key_k(4)), std::optional<std::string>("194"));
}

TEST(kv_failure, each_write_reaching_group_writes_wakes_the_syncer) {
  // group mode, group_writes = 1 and an interval of a day: every write must be synced soon. The
  // committer's notify came without the syncer's mutex, so one that fell between the syncer's
  // test of the count and its wait was lost, and that write waited for the interval. That window
  // is a few instructions wide: this checks the promise, and catches the race only rarely.
  fs_ptr fs = kv_fault_fs::make();
  kv::options o = fault_options(fs, kv::durability::group);
  o.group_writes = 1;
  o.group_interval = std::chrono::hours(24);
  auto s = kv::store::open(dir, o);
  for (int i = 0; i < 3000; ++i) {
    const std::uint64_t before = s->stats().syncs;
    s->put("k", std::to_string(i));
    bool synced = false;
    for (auto t0 = std::chrono::steady_clock::now();
         !synced && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5);) {
      synced = s->stats().syncs > before;
      if (!synced) std::this_thread::yield();
    }
    ASSERT_TRUE(synced) << "write " << i << " was not synced within 5 s";
  }
}

}  // namespace
}  // namespace ccf_test
