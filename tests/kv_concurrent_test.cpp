// Concurrent use of ccf::kv::store (include/ccf/kv/store.hpp): reader threads doing gets while
// writer threads put and erase their own keys (every durability mode), while compact() switches
// logs, and while the index doubles several times. Readers must never see a wrong value: keys
// nobody writes always have their value, keys being written have one of the values written for
// them (or are absent, when erased) and never go back to an older value, and a key whose put()
// returned is found. Every test ends with an exact check of the contents. Runs under TSan.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <ccf/kv/store.hpp>

#include "kv_test_util.hpp"
#include "run_threads.hpp"

namespace {

using ccf::kv::durability;
using ccf::kv::options;
using ccf::kv::store;
using ccf_test::numbered;
using ccf_test::temp_dir;
using clock_type = std::chrono::steady_clock;

/// What reader threads saw go wrong: a count and the first few messages.
class problems {
 public:
  void add(const std::string& what) {
    std::lock_guard<std::mutex> lk(m_);
    if (++count_ <= 5) text_ += what + "\n";
  }
  std::size_t count() const {
    std::lock_guard<std::mutex> lk(m_);
    return count_;
  }
  std::string text() const {
    std::lock_guard<std::mutex> lk(m_);
    return text_;
  }

 private:
  mutable std::mutex m_;
  std::size_t count_ = 0;
  std::string text_;
};

std::chrono::milliseconds scaled_ms(double ms) {
  return std::chrono::milliseconds(
      static_cast<long long>(std::max(150.0, ms * ccf_test::test_scale())));
}

std::string stable_key(std::size_t i) {
  return numbered("stable-", static_cast<long long>(i));
}
std::string stable_value(std::size_t i) {
  return numbered("sv-", static_cast<long long>(i)) + std::string(i % 50, 's');
}

void put_stable(store& s, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    s.put(stable_key(i), stable_value(i));
}

/// Keys of writer w: "w<w>-<j>", values "w<w>-<j>:<generation>#<padding>".
std::string writer_key(int w, std::size_t j) {
  return numbered("w", w) + numbered("-", static_cast<long long>(j));
}
std::string writer_value(const std::string& key, std::uint64_t gen, std::size_t pad) {
  return key + ":" + std::to_string(gen) + "#" + std::string(pad, 'p');
}
/// The generation in a value written for `key`, or nullopt when it is not such a value.
std::optional<std::uint64_t> generation_of(const std::string& key, const std::string& value) {
  if (value.size() <= key.size() + 1 || value.compare(0, key.size(), key) != 0 ||
      value[key.size()] != ':') {
    return std::nullopt;
  }
  const std::size_t hash = value.find('#', key.size() + 1);
  if (hash == std::string::npos || hash == key.size() + 1) return std::nullopt;
  std::uint64_t g = 0;
  for (std::size_t i = key.size() + 1; i < hash; ++i) {
    if (value[i] < '0' || value[i] > '9') return std::nullopt;
    g = g * 10 + static_cast<std::uint64_t>(value[i] - '0');
  }
  for (std::size_t i = hash + 1; i < value.size(); ++i) {
    if (value[i] != 'p') return std::nullopt;
  }
  return g;
}

/// A reader's check of one stable key.
void read_stable(const store& s, std::size_t n, std::mt19937_64& rng, std::string& buffer,
                 problems& bad) {
  const std::size_t i = rng() % n;
  if (!s.get(stable_key(i), buffer)) {
    bad.add("stable key " + stable_key(i) + " not found");
  } else if (buffer != stable_value(i)) {
    bad.add("stable key " + stable_key(i) + " has a wrong value");
  }
}

/// The writers' side of the readers-and-writers tests: the last generation of each key written,
/// and whether its last write was an erase.
struct writer_state {
  std::vector<std::uint64_t> gen;
  std::vector<bool> erased;
  std::vector<std::size_t> pad;
  std::size_t writes = 0;
};

void check_writer_keys(const store& s, const std::vector<writer_state>& writers,
                       std::size_t& live) {
  std::size_t wrong = 0;
  for (int w = 0; w < static_cast<int>(writers.size()); ++w) {
    const writer_state& ws = writers[static_cast<std::size_t>(w)];
    for (std::size_t j = 0; j < ws.gen.size(); ++j) {
      const std::string k = writer_key(w, j);
      const std::optional<std::string> got = s.get(k);
      if (ws.gen[j] == 0 || ws.erased[j]) {
        wrong += got.has_value();
      } else {
        ++live;
        wrong += got != writer_value(k, ws.gen[j], ws.pad[j]);
      }
    }
  }
  EXPECT_EQ(wrong, 0u);
}

class kv_concurrent_readers_writers : public ::testing::TestWithParam<durability> {};

TEST_P(kv_concurrent_readers_writers, readers_never_see_a_wrong_value) {
  constexpr int writers = 2, readers = 4;
  constexpr std::size_t stable = 2000, hot = 128;
  temp_dir dir;
  options o;
  o.sync = durability::none;
  auto s = store::open(dir / "db", o);
  put_stable(*s, stable);  // quickly, then reopened in the mode under test
  s->close();
  o.sync = GetParam();
  o.group_interval = std::chrono::milliseconds(1);
  s = store::open(dir / "db", o);
  std::vector<writer_state> state(writers);
  for (writer_state& ws : state) {
    ws.gen.assign(hot, 0);
    ws.erased.assign(hot, false);
    ws.pad.assign(hot, 0);
  }
  problems bad;
  std::atomic<std::size_t> reads{0};
  const auto deadline = clock_type::now() + scaled_ms(2000);

  ccf_test::run_threads(writers + readers, [&](int t) {
    std::mt19937_64 rng(static_cast<std::uint64_t>(t) * 7919 + 1);
    try {
      if (t < writers) {
        writer_state& ws = state[static_cast<std::size_t>(t)];
        while (clock_type::now() < deadline) {
          const std::size_t j = rng() % hot;
          const std::string k = writer_key(t, j);
          if (rng() % 5 == 0) {
            const bool was = ws.gen[j] != 0 && !ws.erased[j];
            if (s->erase(k) != was) bad.add("erase of " + k + " returned the wrong answer");
            ws.erased[j] = true;
          } else {
            ws.pad[j] = rng() % 64;
            s->put(k, writer_value(k, ++ws.gen[j], ws.pad[j]));
            ws.erased[j] = false;
          }
          ++ws.writes;
        }
        return;
      }
    } catch (const std::exception& e) {
      bad.add(std::string("writer threw: ") + e.what());
      return;
    }
    std::vector<std::uint64_t> seen(writers * hot, 0);  // newest generation seen per key
    std::string buffer;
    std::size_t n = 0;
    for (; clock_type::now() < deadline; ++n) {
      try {
        if (n % 2 == 0) {
          read_stable(*s, stable, rng, buffer, bad);
          continue;
        }
        const int w = static_cast<int>(rng() % writers);
        const std::size_t j = rng() % hot;
        const std::string k = writer_key(w, j);
        if (!s->get(k, buffer)) continue;  // never written yet, or erased
        const std::optional<std::uint64_t> g = generation_of(k, buffer);
        std::uint64_t& newest = seen[static_cast<std::size_t>(w) * hot + j];
        if (!g) {
          bad.add("key " + k + " has a value nobody wrote for it: " + buffer.substr(0, 40));
        } else if (*g < newest) {
          bad.add("key " + k + " went back from generation " + std::to_string(newest) + " to " +
                  std::to_string(*g));
        } else {
          newest = *g;
        }
      } catch (const std::exception& e) {
        bad.add(std::string("a get threw: ") + e.what());
      }
    }
    reads += n;
  });

  EXPECT_EQ(bad.count(), 0u) << bad.text() << "(in " << reads.load() << " reads)";
  EXPECT_GT(reads.load(), 1000u);
  for (const writer_state& ws : state)
    EXPECT_GT(ws.writes, 10u);
  std::size_t live = 0;
  check_writer_keys(*s, state, live);
  EXPECT_EQ(s->size(), stable + live);
  s->close();
  s = store::open(dir / "db", o);
  std::size_t live_again = 0;
  check_writer_keys(*s, state, live_again);
  EXPECT_EQ(s->size(), stable + live);
  std::string buffer;
  std::mt19937_64 rng(5);
  problems after;
  for (int i = 0; i < 1000; ++i)
    read_stable(*s, stable, rng, buffer, after);
  EXPECT_EQ(after.count(), 0u) << after.text();
}

INSTANTIATE_TEST_SUITE_P(durability, kv_concurrent_readers_writers,
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

TEST(kv_concurrent, readers_and_a_writer_during_compaction) {
  constexpr std::size_t stable = 2000, hot = 256;
  const std::size_t compactions = ccf_test::scaled(6, 2);
  temp_dir dir;
  options o;
  o.sync = durability::none;
  auto s = store::open(dir / "db", o);
  put_stable(*s, stable);
  for (int round = 0; round < 10; ++round) {  // garbage for compaction to drop
    for (std::size_t i = 0; i < stable; i += 3)
      s->put(stable_key(i), round == 9 ? stable_value(i) : std::string(100, 'x'));
  }
  std::vector<writer_state> state(1);
  state[0].gen.assign(hot, 0);
  state[0].erased.assign(hot, false);
  state[0].pad.assign(hot, 0);
  problems bad;
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> reads{0};

  ccf_test::run_threads(5, [&](int t) {
    std::mt19937_64 rng(static_cast<std::uint64_t>(t) + 11);
    try {
      if (t == 0) {  // compacts, then stops the others
        for (std::size_t c = 0; c < compactions; ++c) {
          s->compact();
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        stop = true;
      } else if (t == 1) {  // writes its keys meanwhile
        writer_state& ws = state[0];
        while (!stop) {
          const std::size_t j = rng() % hot;
          const std::string k = writer_key(0, j);
          if (rng() % 4 == 0) {
            s->erase(k);
            ws.erased[j] = true;
          } else {
            ws.pad[j] = rng() % 200;
            s->put(k, writer_value(k, ++ws.gen[j], ws.pad[j]));
            ws.erased[j] = false;
          }
          ++ws.writes;
        }
      } else {
        std::string buffer;
        std::size_t n = 0;
        for (; !stop; ++n) {
          try {
            read_stable(*s, stable, rng, buffer, bad);
            const std::string k = writer_key(0, rng() % hot);
            if (s->get(k, buffer) && !generation_of(k, buffer)) {
              bad.add("key " + k + " has a value nobody wrote for it");
            }
          } catch (const std::exception& e) {
            bad.add(std::string("a get threw: ") + e.what());
          }
        }
        reads += n;
      }
    } catch (const std::exception& e) {
      stop = true;
      bad.add("thread " + std::to_string(t) + " threw: " + e.what());
    }
  });

  EXPECT_EQ(bad.count(), 0u) << bad.text();
  EXPECT_GT(reads.load(), 100u);
  EXPECT_EQ(s->stats().compactions, compactions);
  std::size_t live = 0;
  check_writer_keys(*s, state, live);
  EXPECT_EQ(s->size(), stable + live);
  std::string buffer;
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < stable; ++i)
    wrong += !s->get(stable_key(i), buffer) || buffer != stable_value(i);
  EXPECT_EQ(wrong, 0u);
  // The live bytes counted write by write (overwrites and erases in concurrent batches) are
  // those of the live records, which a compaction copies, and no more.
  const std::uint64_t counted = s->stats().live_bytes;
  s->compact();  // quiet now: the log holds exactly the live records
  EXPECT_EQ(s->stats().log_bytes, s->stats().live_bytes + ccf::kv::detail::log_header_size);
  EXPECT_EQ(s->stats().log_bytes, counted + ccf::kv::detail::log_header_size);
}

TEST(kv_concurrent, readers_while_the_index_doubles) {
  constexpr std::size_t stable = 500;
  const std::size_t grown = ccf_test::scaled(60000, 12000);
  temp_dir dir;
  options o;
  o.sync = durability::none;
  o.expected_keys = 0;  // 1024 keys: the writer's keys make it double several times
  auto s = store::open(dir / "db", o);
  put_stable(*s, stable);
  problems bad;
  std::atomic<std::size_t> published{0};  // g-0 .. g-(published-1) were put
  std::atomic<std::size_t> reads{0};
  auto grow_key = [](std::size_t i) { return numbered("g-", static_cast<long long>(i)); };

  ccf_test::run_threads(4, [&](int t) {
    std::mt19937_64 rng(static_cast<std::uint64_t>(t) + 101);
    try {
      if (t == 0) {
        for (std::size_t i = 0; i < grown; ++i) {
          s->put(grow_key(i), std::to_string(i));
          published.store(i + 1, std::memory_order_release);
        }
        return;
      }
      std::string buffer;
      std::size_t n = 0;
      for (; published.load(std::memory_order_acquire) < grown; ++n) {
        try {
          read_stable(*s, stable, rng, buffer, bad);
          const std::size_t p = published.load(std::memory_order_acquire);
          if (p == 0) continue;
          const std::size_t i = rng() % p;
          if (!s->get(grow_key(i), buffer)) {
            bad.add(grow_key(i) + " not found after its put returned");
          } else if (buffer != std::to_string(i)) {
            bad.add(grow_key(i) + " has a wrong value");
          }
        } catch (const std::exception& e) {
          bad.add(std::string("a get threw: ") + e.what());
        }
      }
      reads += n;
    } catch (const std::exception& e) {
      published = grown;
      bad.add("thread " + std::to_string(t) + " threw: " + e.what());
    }
  });

  EXPECT_EQ(bad.count(), 0u) << bad.text();
  EXPECT_GT(reads.load(), 100u);
  EXPECT_GE(s->stats().rehashes, 3u);
  EXPECT_EQ(s->size(), stable + grown);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < grown; ++i)
    wrong += s->get(grow_key(i)) != std::to_string(i);
  EXPECT_EQ(wrong, 0u);
}

}  // namespace
