// The key-value store (include/ccf/kv/store.hpp) over a fault-injecting, in-memory file system
// (tests/kv_fault_fs.hpp, tested in kv_fault_fs_test.cpp): random workloads with power losses
// (unsynced writes dropped, applied or torn), process crashes and injected I/O failures at random
// points, checked after each reboot against tests/kv_model.hpp; a failure at every step of a
// compaction and of an index snapshot; holes after the synced end (the dropped-<offset> file,
// strict_recovery); a write queued behind a failed sync; the replayed tail at close(); a forged
// index snapshot. CCF_TEST_SCALE scales the number of rounds; CCF_KV_FAULT_SEED=n gives the
// random workloads other seeds; CCF_KV_TRACE=1 traces their rounds.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "ccf/kv/store.hpp"
#include "filter_types.hpp"
#include "kv_fault_fs.hpp"
#include "kv_model.hpp"

namespace ccf_test {
namespace {

namespace kv = ccf::kv;
using fs_ptr = std::shared_ptr<kv_fault_fs>;
const std::string& dir = fault_dir;
const std::string& log_path = fault_log_path;

int rounds(int n) {
  return std::max(1, static_cast<int>(n * test_scale()));
}

/// A value unique to (tag, i), of 0 to ~1100 bytes (records span several 512-byte sectors).
std::string make_value(std::mt19937_64& rng, const std::string& tag) {
  std::string v = tag + "/";
  v.resize(v.size() + rng() % (rng() % 4 == 0 ? 1100 : 60), static_cast<char>('a' + rng() % 26));
  return v;
}

/// After recovery the store directory holds only the log, the index, LOCK and dropped-* files.
void expect_clean_directory(kv_fault_fs& fs, const std::string& context) {
  for (const std::string& name : fs.list(dir)) {
    EXPECT_TRUE(name == "log" || name == "index" || name == "LOCK" || name.starts_with("dropped-"))
        << context << ": leftover '" << name << "'";
  }
}

// ---- random workloads with crashes and failures -------------------------------------------------

/// One round: open (recover) and check, run a random workload with a fault armed at a random
/// point, end with a power loss, a process crash or a close.
void run_round(fs_ptr& fs, kv_model& m, std::mt19937_64& rng, kv::durability mode, int round,
               bool& power_loss) {
  const std::string ctx = "round " + std::to_string(round);
  kv::options o = fault_options(fs, mode);
  o.snapshot_every_bytes = rng() % 3 == 0 ? 2048 + rng() % 8192 : 0;
  std::unique_ptr<kv::store> s;
  try {
    s = kv::store::open(dir, o);
    m.check(*s, power_loss, ctx + " (after " + (power_loss ? "a power loss)" : "a process crash)"));
  } catch (const std::exception& e) {
    FAIL() << ctx << ": recovery threw: " << e.what();
  }
  expect_clean_directory(*fs, ctx);
  const bool every = mode == kv::durability::every_write;
  const int ops = 10 + static_cast<int>(rng() % 50);
  const int plan = static_cast<int>(rng() % 4);  // 0 no fault, 1 freeze, 2 one fault, 3 sticky
  const unsigned kinds[] = {kv_fault_fs::op_write, kv_fault_fs::op_sync, kv_fault_fs::op_rename,
                            kv_fault_fs::op_sync_directory, kv_fault_fs::op_all};
  if (plan == 1) fs->fail(kv_fault_fs::op_all, 1 + rng() % (3 * ops), true);
  if (plan >= 2) fs->fail(kinds[rng() % 5], 1 + rng() % (2 * ops), plan == 3);
  bool failed = false;
  const std::uint64_t fired_before = fs->fired();
  const bool trace = std::getenv("CCF_KV_TRACE") != nullptr;
  if (trace) std::fprintf(stderr, "%s: plan %d, %d ops\n", ctx.c_str(), plan, ops);
  for (int i = 0; i < ops; ++i) {
    const std::string key = "key-" + std::to_string(rng() % 24);
    const unsigned what = rng() % 100;
    const std::uint64_t fired = fs->fired();
    try {
      if (what < 60) {
        const std::string v = make_value(rng, ctx + "/" + std::to_string(i));
        try {
          s->put(key, v);
        } catch (...) {
          m.write(key, v, false, false);
          throw;
        }
        m.write(key, v, true, every);
      } else if (what < 80) {
        try {
          s->erase(key);
        } catch (...) {
          m.write(key, std::nullopt, false, false);
          throw;
        }
        m.write(key, std::nullopt, true, every);
      } else if (what < 86) {
        s->sync();
        m.durable_point();
      } else if (what < 89) {
        s->compact();
        m.durable_point();
      } else if (what < 92) {
        s->snapshot();
        m.durable_point();
      } else if (!failed && m.exact()) {
        EXPECT_EQ(s->get(key), m.latest(key)) << ctx << ", op " << i;
      }
    } catch (const kv::io_error& e) {
      if (trace) std::fprintf(stderr, "  op %d (%u): %s\n", i, what, e.what());
      EXPECT_GT(fs->fired(), fired_before) << ctx << ": io_error with no injected fault";
      failed = true;
      const auto [op, path] = fs->last_fault();
      if (every && what < 80 && path == log_path && plan == 2 && fs->fired() == fired + 1 &&
          (op == kv_fault_fs::op_write || op == kv_fault_fs::op_sync)) {
        // A put's write or sync of the log failed: the store must refuse writes until reopened.
        // (Failed syncs outside put and erase: refused_after_a_failed_sync_of_the_log.)
        const std::string probe = "probe-" + std::to_string(round);
        try {
          s->put(key, probe);
          ADD_FAILURE() << ctx << ": a write succeeded after a failed " << op << " of the log";
          m.write(key, probe, true, every);
        } catch (const kv::io_error&) {
          m.write(key, probe, false, false);
        }
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << ctx << ", op " << i << ": " << e.what();
      failed = true;
    }
  }
  const int end = static_cast<int>(rng() % 3);
  if (trace) std::fprintf(stderr, "  end %d\n", end);
  if (end == 0) {  // power loss now (the old store then closes on the old file system)
    fs_ptr crashed = fs->crash(rng);
    s.reset();
    fs = crashed;
    power_loss = true;
    return;
  }
  if (end == 1) {  // the process dies: nothing more reaches the file system
    fs->fail(kv_fault_fs::op_all, 1, true);
    s.reset();
  } else {
    try {
      s->close();
      if (!failed) m.durable_point();
    } catch (const kv::io_error&) {
    }
    s.reset();
  }
  fs->heal();
  power_loss = false;
}

void random_rounds(kv::durability mode, int n, std::uint64_t seed) {
  if (const char* more = std::getenv("CCF_KV_FAULT_SEED"))
    seed += 1000 * std::strtoull(more, nullptr, 10);
  std::mt19937_64 rng(seed);
  fs_ptr fs = kv_fault_fs::make();
  kv_model m;
  bool power_loss = true;
  int r = 0, power_losses = 0;
  for (; r < n; ++r) {
    run_round(fs, m, rng, mode, r, power_loss);
    power_losses += power_loss;
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "seed " << seed << ", round " << r;
      return;
    }
  }
  kv::options o = fault_options(fs, mode);
  auto s = kv::store::open(dir, o);
  m.check(*s, power_loss, "final");
  std::printf("[ kv_fault ] seed %llu: %d rounds, %d power losses, %d process crashes or closes\n",
              static_cast<unsigned long long>(seed), r, power_losses, r - power_losses);
}

TEST(kv_fault_store, random_crashes_every_write) {
  for (std::uint64_t seed = 1; seed <= 3; ++seed)
    random_rounds(kv::durability::every_write, rounds(1000), seed);
}
TEST(kv_fault_store, random_crashes_group) {
  random_rounds(kv::durability::group, rounds(1000), 11);
}
TEST(kv_fault_store, random_crashes_none) {
  for (std::uint64_t seed = 21; seed <= 22; ++seed)
    random_rounds(kv::durability::none, rounds(1000), seed);
}

// ---- failures at each step of a compaction and of a snapshot ------------------------------------

struct fixture {
  fs_ptr fs;
  std::unique_ptr<kv::store> s;
  kv_model m;
};

/// A store with live, overwritten and erased keys (the same writes for the same seed).
fixture build(std::uint64_t seed) {
  fixture f;
  f.fs = kv_fault_fs::make();
  f.s = kv::store::open(dir, fault_options(f.fs));
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 150; ++i) {
    const std::string key = "key-" + std::to_string(rng() % 30);
    if (rng() % 4 == 0) {
      f.s->erase(key);
      f.m.write(key, std::nullopt, true, true);
    } else {
      const std::string v = make_value(rng, std::string("b").append(std::to_string(i)));
      f.s->put(key, v);
      f.m.write(key, v, true, true);
    }
  }
  return f;
}

/// For each kind of operation and each k, fails the k-th operation of that kind that `step`
/// performs (once, or freezing the disk from there), then writes on, and checks the store after a
/// power loss and after a clean reopen.
int fail_each_step(const std::function<void(kv::store&)>& step, const std::string& name,
                   std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  int points = 0;
  const unsigned kinds[] = {kv_fault_fs::op_write, kv_fault_fs::op_sync, kv_fault_fs::op_rename,
                            kv_fault_fs::op_sync_directory, kv_fault_fs::op_all};
  for (const unsigned kind : kinds) {
    fixture counting = build(seed);
    const std::uint64_t before = counting.fs->count(kind);
    step(*counting.s);
    const std::uint64_t steps = counting.fs->count(kind) - before;
    for (const bool freeze : {false, true}) {
      if (freeze && kind != kv_fault_fs::op_all) continue;
      for (std::uint64_t k = 1; k <= steps; ++k) {
        const std::string ctx = name + ": failing operation " + std::to_string(k) + " of kind " +
                                std::to_string(kind) + (freeze ? " and all after it" : "");
        fixture f = build(seed);
        ++points;
        f.fs->fail(kind, k, freeze);
        try {
          step(*f.s);
        } catch (const kv::io_error&) {
        }
        // Write on: what returns normally must survive.
        for (int i = 0; i < 5; ++i) {
          const std::string key = "key-" + std::to_string(i), v = "after-" + std::to_string(i);
          try {
            f.s->put(key, v);
            f.m.write(key, v, true, true);
          } catch (const kv::io_error&) {
            f.m.write(key, v, false, false);
          } catch (const std::logic_error&) {  // closed: not written
          }
        }
        fs_ptr crashed = f.fs->crash(rng);
        f.s.reset();
        f.fs->heal();
        for (fs_ptr fs : {crashed, f.fs}) {
          // After a power loss, or (the process died or closed) reopened, written to and then a
          // power loss: what the reopened store acknowledged must survive too.
          const std::string where = ctx + (fs == crashed ? " (power loss)" : " (reopened)");
          try {
            auto s = kv::store::open(dir, fault_options(fs));
            kv_model m = f.m;
            m.check(*s, false, where);
            expect_clean_directory(*fs, where);
            EXPECT_FALSE(fs->exists(dir + "/log.compact")) << where;
            for (int i = 0; i < 3; ++i) {
              const std::string key = "key-" + std::to_string(i + 10);
              s->put(key, "reopened");
              m.write(key, std::string("reopened"), true, true);
            }
            fs_ptr later = fs->crash(rng);
            s.reset();
            s = kv::store::open(dir, fault_options(later));
            m.check(*s, true, where + ", written, then a power loss");
          } catch (const std::exception& e) {
            ADD_FAILURE() << where << ": " << e.what();
          }
        }
        if (::testing::Test::HasFailure()) return points;
      }
    }
  }
  return points;
}

TEST(kv_fault_store, failure_at_each_step_of_compaction) {
  int points = 0;
  for (std::uint64_t seed = 1; seed <= static_cast<std::uint64_t>(rounds(20)); ++seed)
    points += fail_each_step([](kv::store& s) { s.compact(); }, "compact", seed);
  std::printf("[ kv_fault ] compaction: %d failure points checked\n", points);
}
TEST(kv_fault_store, failure_at_each_step_of_a_snapshot) {
  int points = 0;
  for (std::uint64_t seed = 1; seed <= static_cast<std::uint64_t>(rounds(20)); ++seed) {
    points += fail_each_step([](kv::store& s) { s.snapshot(); }, "snapshot", seed);
    points += fail_each_step([](kv::store& s) { s.close(); }, "close", seed);
  }
  std::printf("[ kv_fault ] snapshot and close: %d failure points checked\n", points);
}

// ---- holes after the synced end -----------------------------------------------------------------

/// A store whose log has 5 synced records, then 3 unsynced ones written separately; returns the
/// file system as a crash leaves it when the first unsynced write is lost and the others land.
fs_ptr crash_with_hole(kv_model& m, std::uint64_t& synced_end) {
  fs_ptr fs = kv_fault_fs::make();
  auto s = kv::store::open(dir, fault_options(fs, kv::durability::none));
  for (int i = 0; i < 8; ++i) {
    const std::string key = "k" + std::to_string(i), v = "value-" + std::to_string(i);
    s->put(key, v);
    m.write(key, v, true, false);
    if (i == 4) {
      s->sync();
      m.durable_point();
      synced_end = s->stats().log_bytes;
    }
  }
  std::mt19937_64 rng(7);
  return fs->crash(
      [](const std::string& path, std::size_t i) {
        return path == log_path && i == 0 ? kv_fault_fs::fate::dropped : kv_fault_fs::fate::applied;
      },
      rng);
}

TEST(kv_fault_store, hole_after_the_synced_end_keeps_the_dropped_tail) {
  kv_model m;
  std::uint64_t synced_end = 0;
  fs_ptr fs = crash_with_hole(m, synced_end);
  const std::uint64_t size = fs->read_file(log_path).size();
  auto s = kv::store::open(dir, fault_options(fs, kv::durability::none));
  m.check(*s, true, "hole");
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(s->get("k" + std::to_string(i)), "value-" + std::to_string(i));
  for (int i = 5; i < 8; ++i)
    EXPECT_FALSE(s->contains("k" + std::to_string(i)));
  const kv::open_report& r = s->opened();
  EXPECT_EQ(r.truncated_bytes, size - synced_end);
  EXPECT_EQ(r.dropped_records, 2u);
  EXPECT_EQ(r.dropped_file, dir + "/dropped-" + std::to_string(synced_end));
  const std::string dropped = as_string(fs->read_file(r.dropped_file));
  EXPECT_EQ(dropped.size(), size - synced_end);
  EXPECT_NE(dropped.find("value-6"), std::string::npos);
  EXPECT_NE(dropped.find("value-7"), std::string::npos);
  s->put("k9", "after");
  s.reset();
  s = kv::store::open(dir, fault_options(fs));
  EXPECT_EQ(s->get("k9"), "after");
  EXPECT_EQ(s->opened().truncated_bytes, 0u);
  expect_clean_directory(*fs, "hole");
}

TEST(kv_fault_store, hole_after_the_synced_end_with_strict_recovery_throws) {
  kv_model m;
  std::uint64_t synced_end = 0;
  fs_ptr fs = crash_with_hole(m, synced_end);
  const std::string log_before = as_string(fs->read_file(log_path));
  kv::options o = fault_options(fs, kv::durability::none);
  o.strict_recovery = true;
  EXPECT_THROW(kv::store::open(dir, o), kv::damaged_log_error);
  EXPECT_EQ(as_string(fs->read_file(log_path)), log_before);  // nothing cut
  o.strict_recovery = false;
  auto s = kv::store::open(dir, o);
  m.check(*s, true, "strict, then lenient");
  EXPECT_EQ(s->opened().dropped_records, 2u);
}

TEST(kv_fault_store, dropped_tail_survives_a_crash_during_recovery) {
  // The cut-off records are kept in dropped-<offset>: a power loss at any step of that recovery
  // must leave them either still in the log (reported again) or in a durable dropped-* file.
  for (const unsigned kind : {kv_fault_fs::op_write, kv_fault_fs::op_sync, kv_fault_fs::op_truncate,
                              kv_fault_fs::op_sync_directory}) {
    for (std::uint64_t k = 1; k <= 3; ++k) {
      kv_model m;
      std::uint64_t synced_end = 0;
      fs_ptr fs = crash_with_hole(m, synced_end);
      fs->fail(kind, k, true);
      try {
        kv::store::open(dir, fault_options(fs, kv::durability::none));
      } catch (const kv::io_error&) {
      }
      std::mt19937_64 rng(k);
      fs_ptr crashed = fs->crash(rng);
      auto s = kv::store::open(dir, fault_options(crashed, kv::durability::none));
      const std::string ctx = "kind " + std::to_string(kind) + ", k " + std::to_string(k);
      m.check(*s, true, ctx);
      bool kept = s->opened().dropped_records == 2;
      for (const std::string& name : crashed->list(dir)) {
        const std::string bytes = as_string(crashed->read_file(dir + "/" + name));
        kept |= name.starts_with("dropped-") && bytes.find("value-7") != std::string::npos;
      }
      EXPECT_TRUE(kept) << ctx << ": the dropped records are gone";
    }
  }
}

// ---- writes after a failed sync -----------------------------------------------------------------

TEST(kv_fault_store, failed_put_refuses_further_writes_until_reopened) {
  for (const unsigned kind : {kv_fault_fs::op_write, kv_fault_fs::op_sync}) {
    fs_ptr fs = kv_fault_fs::make();
    auto s = kv::store::open(dir, fault_options(fs));
    s->put("a", "1");
    fs->fail(kind, 1);
    EXPECT_THROW(s->put("a", "2"), kv::io_error);
    EXPECT_THROW(s->put("b", "3"), kv::io_error);  // the file system is fine again: refused
    EXPECT_THROW(s->erase("a"), kv::io_error);
    EXPECT_EQ(s->get("a"), "1");  // a failed write is not visible
    std::mt19937_64 rng(kind);
    for (fs_ptr after : {fs->crash(rng), fs}) {
      s.reset();
      s = kv::store::open(dir, fault_options(after));
      const auto a = s->get("a");
      EXPECT_TRUE(a == "1" || (a == "2" && kind == kv_fault_fs::op_sync)) << *a;
      EXPECT_FALSE(s->contains("b"));
      s->put("b", "4");
      EXPECT_EQ(s->get("b"), "4");
    }
  }
}

TEST(kv_fault_store, creating_a_store_syncs_the_directory_that_holds_it) {
  // The new directory's entry in its parent was never synced: a power loss could take the store
  // and every write acknowledged in it.
  fs_ptr fs = kv_fault_fs::make();
  std::vector<std::string> synced;
  fs->set_hook([&](kv_fault_fs::op o, const std::string& path) {
    if (o == kv_fault_fs::op_sync_directory) synced.push_back(path);
  });
  auto s = kv::store::open(dir, fault_options(fs));
  ASSERT_FALSE(synced.empty());
  EXPECT_EQ(synced.front(), "/") << "the parent is synced first, before the store's files";
  s->close();
  synced.clear();
  s = kv::store::open(dir, fault_options(fs));  // an existing store: nothing new in "/"
  EXPECT_EQ(std::count(synced.begin(), synced.end(), "/"), 0);
  s.reset();
  fs->set_hook(nullptr);
  using kv::detail::parent_directory;
  EXPECT_EQ(parent_directory("db"), ".");
  EXPECT_EQ(parent_directory("data/db/"), "data");
  EXPECT_EQ(parent_directory("/db"), "/");
  EXPECT_EQ(parent_directory("/srv//db"), "/srv/");
}

TEST(kv_fault_store, a_full_disk_leaves_no_temporary_file_and_close_keeps_what_is_synced) {
  // A snapshot or compaction that could not be written left its temporary file (as large as the
  // index) until the next open, taking the space the log then lacked (a compaction that could
  // write its log but not its snapshot goes on without the snapshot); close() on a full disk
  // threw after the log was synced, and `ccf db get` failed after printing the value.
  const std::function<void(kv::store&)> steps[] = {[](kv::store& s) { s.snapshot(); },
                                                   [](kv::store& s) { s.compact(); }};
  for (const auto& step : steps) {
    fixture counting = build(3);
    const std::uint64_t before = counting.fs->count(kv_fault_fs::op_write);
    step(*counting.s);
    const std::uint64_t writes = counting.fs->count(kv_fault_fs::op_write) - before;
    ASSERT_GT(writes, 0u);
    for (std::uint64_t k = 1; k <= writes; ++k) {
      fixture f = build(3);
      f.fs->fail(kv_fault_fs::op_write, k, true);  // the disk is full from the k-th write on
      bool threw = false;
      try {
        step(*f.s);
      } catch (const kv::io_error&) {
        threw = true;
      }
      // A compaction whose log was written goes on without its snapshot, as close() does.
      ASSERT_GE(f.fs->fired(), 1u);
      const std::string failed = f.fs->last_fault().second;
      EXPECT_EQ(threw, failed != dir + "/index.compact.tmp") << "the write failed in " << failed;
      for (const std::string& name : f.fs->list(dir)) {
        EXPECT_TRUE(name == "log" || name == "LOCK" || name == "index") << "leftover " << name;
      }
      f.m.check(*f.s, false, "after the failure");
    }
  }
  fixture f = build(4);  // every write synced
  f.fs->fail(kv_fault_fs::op_write, 1, true);
  EXPECT_NO_THROW(f.s->close());
  EXPECT_FALSE(f.fs->exists(dir + "/index.tmp"));
  f.fs->heal();
  f.s = kv::store::open(dir, fault_options(f.fs));
  f.m.check(*f.s, true, "reopened");
}

TEST(kv_fault_store, refused_after_a_failed_sync_of_the_log) {
  // However the log's sync fails (sync(), snapshot(), close()), its unsynced bytes may be lost
  // while a later sync succeeds: the store must refuse writes until reopened, as after a put's.
  const std::function<void(kv::store&)> steps[] = {[](kv::store& s) { s.sync(); },
                                                   [](kv::store& s) { s.snapshot(); },
                                                   [](kv::store& s) { s.close(); }};
  const char* names[] = {"sync()", "snapshot()", "close()"};
  for (int i = 0; i < 3; ++i) {
    fs_ptr fs = kv_fault_fs::make();
    auto s = kv::store::open(dir, fault_options(fs, kv::durability::none));
    s->put("a", "1");
    fs->fail(kv_fault_fs::op_sync, 1);
    EXPECT_THROW(steps[i](*s), kv::io_error) << names[i];
    EXPECT_EQ(fs->last_fault().second, log_path);
    // Refused: io_error, or logic_error when the store closed anyway (close()).
    auto refused = [&](const std::function<void()>& f) {
      try {
        f();
      } catch (const kv::io_error&) {
        return true;
      } catch (const std::logic_error&) {
        return i == 2;
      }
      return false;
    };
    EXPECT_TRUE(refused([&] { s->put("b", "2"); }))
        << "a write after a failed sync of the log in " << names[i];
    EXPECT_TRUE(refused([&] { s->sync(); }))
        << "sync() after a failed sync of the log in " << names[i];
    s.reset();
    s = kv::store::open(dir, fault_options(fs, kv::durability::none));
    EXPECT_EQ(s->get("a"), "1");
  }
}

// ---- a write queued behind a failed sync --------------------------------------------------------

TEST(kv_fault_store, write_queued_behind_a_failed_sync_is_refused) {
  // Writer 0's sync is held until writers 1 and 2 queue (they commit together, in order); their
  // sync fails and is held until writer 3 queues. Writer 3 must get io_error; if it is written
  // instead, it lands where 1's record was and 2's stale record follows it.
  fs_ptr fs = kv_fault_fs::make();
  auto s = kv::store::open(dir, fault_options(fs));
  std::atomic<int> syncs{0}, holding{0};
  std::atomic<bool> release{false};
  fs->set_hook([&](kv_fault_fs::op o, const std::string& path) {
    if (o != kv_fault_fs::op_sync || path != log_path) return;
    const int n = ++syncs;
    if (n > 2) return;
    holding = n;
    while (!release.exchange(false))
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    holding = 0;
  });
  fs->fail(kv_fault_fs::op_sync, 2);
  const std::string v(40, 'v');
  std::atomic<int> refused{0};
  kv_model m;
  std::vector<std::jthread> writers;
  auto writer = [&](std::string key, std::string value, bool must_succeed) {
    try {
      s->put(key, value);
      EXPECT_TRUE(must_succeed) << key << " was written after a failed sync";
    } catch (const kv::io_error&) {
      ++refused;
    }
  };
  auto wait_holding = [&](int n) {
    while (holding != n)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  writers.emplace_back(writer, "k0", "v0" + v, true);
  wait_holding(1);
  writers.emplace_back(writer, "k1", "v1" + v, false);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  writers.emplace_back(writer, "k2", "v2" + v, false);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  release = true;
  wait_holding(2);
  writers.emplace_back(writer, "k2", "v3" + v, false);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  release = true;
  writers.clear();
  EXPECT_EQ(refused.load(), 3);
  const bool third_written = refused.load() < 3;
  fs->set_hook({});
  s.reset();
  s = kv::store::open(dir, fault_options(fs));
  EXPECT_EQ(s->get("k0"), "v0" + v);
  if (third_written) {  // then it is acknowledged, and k2 must hold it
    EXPECT_EQ(s->get("k2"), "v3" + v)
        << "an acknowledged write was replaced by an older, failed one";
  }
}

// ---- the replayed tail is made durable ----------------------------------------------------------

TEST(kv_fault_store, close_after_recovery_makes_the_replayed_tail_durable) {
  // durability::none: two unsynced writes, then the process dies (the disk keeps them, unsynced).
  // Reopening replays them; close() returns normally, so they must be durable: a power loss then
  // must keep both.
  fs_ptr fs = kv_fault_fs::make();
  auto s = kv::store::open(dir, fault_options(fs, kv::durability::none));
  s->put("a", std::string(600, 'a'));
  s->put("b", std::string(600, 'b'));
  fs->fail(kv_fault_fs::op_all, 1, true);
  s.reset();
  fs->heal();
  s = kv::store::open(dir, fault_options(fs, kv::durability::none));
  EXPECT_EQ(s->get("a"), std::string(600, 'a'));
  EXPECT_EQ(s->get("b"), std::string(600, 'b'));
  s->close();
  s.reset();
  std::mt19937_64 rng(5);
  fs_ptr crashed = fs->crash(
      [](const std::string& path, std::size_t i) {
        return path == log_path && i == 0 ? kv_fault_fs::fate::dropped : kv_fault_fs::fate::applied;
      },
      rng);
  try {
    s = kv::store::open(dir, fault_options(crashed, kv::durability::none));
    EXPECT_EQ(s->get("a"), std::string(600, 'a'));
    EXPECT_EQ(s->get("b"), std::string(600, 'b'));
  } catch (const std::exception& e) {
    ADD_FAILURE() << "after close() and a power loss: " << e.what();
  }
}

// ---- a forged index snapshot --------------------------------------------------------------------

#if defined(__SANITIZE_ADDRESS__)
constexpr bool asan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool asan = true;
#else
constexpr bool asan = false;
#endif
#else
constexpr bool asan = false;
#endif
/// Sanitizers reserve terabytes of shadow address space: no RLIMIT_AS under them.
constexpr bool sanitized = asan || CCF_TSAN;

/// Runs f in a child process (limited to 20 s, and to 1 GiB of address space except under a
/// sanitizer): it must return normally.
void in_child(const std::function<void()>& f, const std::string& what) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const rlimit as{std::uint64_t{1} << 30, std::uint64_t{1} << 30};
    if (!sanitized) ::setrlimit(RLIMIT_AS, &as);
    ::alarm(20);
    int rc = 0;
    try {
      f();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: the child threw: %s\n", what.c_str(), e.what());
      rc = 3;
    }
    ::_exit(rc);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << what << ": the child " << (WIFSIGNALED(status) ? "was killed by signal " : "exited with ")
      << (WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status))
      << " (3: an exception other than corrupt_error; 5: a corrupt_error whose message does not"
      << " name the log)";
}

namespace d = ccf::kv::detail;

/// Replaces the checksum at the end of a snapshot.
void reseal(std::vector<std::byte>& snapshot) {
  d::put_u64(&snapshot[snapshot.size() - 8], XXH3_64bits(snapshot.data(), snapshot.size() - 8));
}

TEST(kv_fault_store, forged_snapshot_of_one_key_in_every_slot_is_refused) {
  // A snapshot (valid checksum) whose every slot points to the record of key "a", and a record
  // after it that needs a slot: replay finds the table full and grows it, but the rebuild meets
  // the same key in every slot and doubles the table without end. It must be corrupt_error (or
  // the snapshot ignored), not a hang and gigabytes of memory.
  fs_ptr fs = kv_fault_fs::make();
  auto s = kv::store::open(dir, fault_options(fs));
  s->put("a", "1");
  s->snapshot();
  s->put("b", "2");
  fs->fail(kv_fault_fs::op_all, 1, true);  // the process dies: no snapshot at close
  s.reset();
  fs->heal();
  std::vector<std::byte> ix = fs->read_file(dir + "/index");
  const std::uint64_t words = d::get_u64(&ix[88]);
  for (std::uint64_t w = 0; w < words; ++w)
    d::put_u64(&ix[d::snapshot_header_size + w * 8],
               d::kv_index::layout::make(1, d::log_header_size / 8));
  d::put_u64(&ix[56], words);  // live keys: every slot
  reseal(ix);
  fs->write_file(dir + "/index", ix);
  in_child(
      [&] {
        try {
          kv::store::open(dir, fault_options(fs));
        } catch (const kv::corrupt_error& e) {
          // The message names the store's files (it said "the file 'index' of the store").
          if (std::string(e.what()).find(log_path) == std::string::npos) ::_exit(5);
        }
      },
      "open with the forged snapshot");
}

TEST(kv_fault_store, forged_snapshot_with_a_wrapping_table_size_is_refused) {
  // A 104-byte snapshot (valid checksum) claiming 2^31 chunks of 2^31 buckets: 2^62 buckets, whose
  // word count 2^64 wraps to 0, so the size check passes. It must be ignored (or corrupt_error).
  fs_ptr fs = kv_fault_fs::make();
  kv::store::open(dir, fault_options(fs))->put("a", "1");
  const std::vector<std::byte> log = fs->read_file(log_path);
  std::vector<std::byte> h(d::snapshot_header_size);
  std::memcpy(h.data(), d::snapshot_magic, 8);
  d::put_u32(&h[8], 1);
  d::put_u32(&h[12], d::kv_index::layout::slots);
  std::memcpy(&h[16], &log[16], 16);  // the log's id
  d::put_u64(&h[32], d::log_header_size);
  d::put_u64(&h[40], std::uint64_t{1} << 31);
  d::put_u64(&h[48], std::uint64_t{1} << 31);
  d::put_u64(&h[88], d::kv_index::layout::words_for(std::uint64_t{1} << 62));
  h.resize(h.size() + 8);
  reseal(h);
  fs->write_file(dir + "/index", h);
  in_child(
      [&] {
        try {
          auto s = kv::store::open(dir, fault_options(fs));
          if (s->get("a") != "1") ::_exit(4);
        } catch (const kv::corrupt_error&) {
        }
      },
      "open with the forged snapshot");
}

}  // namespace
}  // namespace ccf_test
