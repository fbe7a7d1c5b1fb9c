// Stress tests of ccf's K-CAS (include/ccf/detail/kcas.hpp): oversubscribed threads, random
// word sets of 2..8 words, single-word cas mixed in, helping readers and auditors.
// CCF_STRESS_SCALE (env, default 1) multiplies the operation counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "ccf/config.hpp"
#include "ccf/detail/kcas.hpp"

#include "run_threads.hpp"

namespace {

namespace cd = ccf::detail;

#if CCF_TSAN
constexpr int base_ops = 3000;
#else
constexpr int base_ops = 40000;
#endif

int scaled_ops() {
  const char* env = std::getenv("CCF_STRESS_SCALE");
  const int scale = env != nullptr ? std::max(1, std::atoi(env)) : 1;
  return base_ops * scale;
}

using ccf_test::run_threads;

// Words come in pairs (2p, 2p+1) that every operation updates together, plus `solo` words that
// kcas operations and single-word cas both increment. Checks: every word ends at the number of
// increments applied to it, and no consistent snapshot ever shows a pair unequal.
struct pair_world {
  explicit pair_world(std::size_t pairs, std::size_t solos)
      : pair_words(2 * pairs), solo_words(solos), pair_counts(pairs), solo_counts(solos) {}

  std::vector<cd::kcas_word> pair_words;
  std::vector<cd::kcas_word> solo_words;
  std::vector<std::atomic<std::uint64_t>> pair_counts;  // successful increments per pair
  std::vector<std::atomic<std::uint64_t>> solo_counts;
  std::atomic<std::uint64_t> torn{0};
  std::atomic<std::uint64_t> audits{0};
};

// One updater step: 1..3 random pairs plus 0..2 random solos, all + 1 in one kcas (K = 2..8);
// or, one time in four, a single-word cas on a solo word.
void update_step(pair_world& w, std::mt19937_64& rng, bool helping_reads) {
  auto read = [&](cd::kcas_word& x) { return helping_reads ? cd::kcas_read(x) : cd::kcas_load(x); };
  const std::size_t pairs = w.pair_counts.size();
  const std::size_t solos = w.solo_counts.size();
  if (solos > 0 && rng() % 4 == 0) {
    const std::size_t s = rng() % solos;
    const std::uint64_t v = read(w.solo_words[s]);
    if (cd::cas(w.solo_words[s], v, v + 1)) w.solo_counts[s].fetch_add(1);
    return;
  }
  // Distinct random pairs and solos (rejection sampling: the sets are tiny).
  auto pick_distinct = [&rng](std::size_t* out, std::size_t count, std::size_t range) {
    for (std::size_t i = 0; i < count; ++i) {
      do {
        out[i] = rng() % range;
      } while (std::find(out, out + i, out[i]) != out + i);
    }
  };
  std::array<std::size_t, 3> chosen_pairs{};
  const std::size_t np = 1 + rng() % std::min<std::size_t>(3, pairs);
  pick_distinct(chosen_pairs.data(), np, pairs);
  std::array<std::size_t, 2> chosen_solos{};
  const std::size_t ns = rng() % (std::min<std::size_t>(2, solos) + 1);
  pick_distinct(chosen_solos.data(), ns, solos);
  std::array<cd::kcas_entry, cd::kcas_max_words> e{};
  std::size_t n = 0;
  for (std::size_t i = 0; i < np; ++i) {
    for (std::size_t half = 0; half < 2; ++half) {
      cd::kcas_word& x = w.pair_words[2 * chosen_pairs[i] + half];
      const std::uint64_t v = read(x);
      e[n++] = {&x, v, v + 1};
    }
  }
  for (std::size_t i = 0; i < ns; ++i) {
    cd::kcas_word& x = w.solo_words[chosen_solos[i]];
    const std::uint64_t v = read(x);
    e[n++] = {&x, v, v + 1};
  }
  if (cd::kcas(std::span<const cd::kcas_entry>(e.data(), n))) {
    for (std::size_t i = 0; i < np; ++i)
      w.pair_counts[chosen_pairs[i]].fetch_add(1);
    for (std::size_t i = 0; i < ns; ++i)
      w.solo_counts[chosen_solos[i]].fetch_add(1);
  }
}

// An auditor step: re-assert up to 4 pairs (8 words) at once; a success is a consistent
// snapshot in which each pair must be equal.
void audit_step(pair_world& w, std::mt19937_64& rng) {
  const std::size_t pairs = w.pair_counts.size();
  const std::size_t first = rng() % pairs;
  const std::size_t np = std::min<std::size_t>(4, pairs);
  std::array<cd::kcas_entry, cd::kcas_max_words> e{};
  for (std::size_t i = 0; i < np; ++i) {
    for (std::size_t half = 0; half < 2; ++half) {
      cd::kcas_word& x = w.pair_words[2 * ((first + i) % pairs) + half];
      const std::uint64_t v = cd::kcas_load(x);
      e[2 * i + half] = {&x, v, v};
    }
  }
  if (!cd::kcas(std::span<const cd::kcas_entry>(e.data(), 2 * np))) return;
  w.audits.fetch_add(1);
  for (std::size_t i = 0; i < np; ++i) {
    if (e[2 * i].expected != e[2 * i + 1].expected) w.torn.fetch_add(1);
  }
}

void check_final(pair_world& w) {
  EXPECT_EQ(w.torn.load(), 0u);
  std::uint64_t total = 0;
  for (std::size_t p = 0; p < w.pair_counts.size(); ++p) {
    const std::uint64_t c = w.pair_counts[p].load();
    total += c;
    EXPECT_EQ(w.pair_words[2 * p].quiescent_load(), c) << "pair " << p;
    EXPECT_EQ(w.pair_words[2 * p + 1].quiescent_load(), c) << "pair " << p;
  }
  for (std::size_t s = 0; s < w.solo_counts.size(); ++s) {
    EXPECT_EQ(w.solo_words[s].quiescent_load(), w.solo_counts[s].load()) << "solo " << s;
  }
  EXPECT_GT(total, 0u);
}

void run_world(std::size_t pairs, std::size_t solos, int updaters, int auditors) {
  pair_world w(pairs, solos);
  const int ops = scaled_ops();
  std::atomic<int> updaters_left{updaters};
  run_threads(updaters + auditors, [&](int t) {
    std::mt19937_64 rng(0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(t + 1));
    if (t < updaters) {
      for (int i = 0; i < ops; ++i)
        update_step(w, rng, t % 3 == 2);
      updaters_left.fetch_sub(1);
    } else {
      while (updaters_left.load() > 0)
        audit_step(w, rng);
      audit_step(w, rng);
    }
  });
  check_final(w);
}

// Many words: mostly disjoint operations, helping when they overlap.
TEST(StressKcas, WideOversubscribed) {
  run_world(16, 4, 10, 2);
}

// Few words, many threads: every operation conflicts; helping dominates.
TEST(StressKcas, HotSpotOversubscribed) {
  run_world(4, 2, 12, 4);
}

// Pure 8-word operations on the same 8 words by 16 threads.
TEST(StressKcas, EightWordsSixteenThreads) {
  std::array<cd::kcas_word, 8> words;
  std::atomic<std::uint64_t> successes{0};
  const int ops = scaled_ops() / 4;
  run_threads(16, [&](int t) {
    std::uint64_t mine = 0;
    for (int i = 0; i < ops; ++i) {
      std::array<cd::kcas_entry, 8> e{};
      for (std::size_t j = 0; j < 8; ++j) {
        // Half of the threads list the words backwards: order must not matter.
        const std::size_t idx = t % 2 == 0 ? j : 7 - j;
        const std::uint64_t v = cd::kcas_load(words[idx]);
        e[j] = {&words[idx], v, v + 1};
      }
      if (cd::kcas(e)) ++mine;
    }
    successes.fetch_add(mine);
  });
  for (auto& x : words)
    EXPECT_EQ(x.quiescent_load(), successes.load());
}

}  // namespace
