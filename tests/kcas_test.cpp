// Tests of ccf's lock-free multi-word compare-and-swap (include/ccf/detail/kcas.hpp).
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <latch>
#include <numeric>
#include <random>
#include <span>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "ccf/config.hpp"
#include "ccf/detail/kcas.hpp"

#include "run_threads.hpp"

namespace {

namespace cd = ccf::detail;
namespace enc = ccf::detail::kcas_encoding;

#if CCF_TSAN
constexpr int iterations = 1500;
#else
constexpr int iterations = 20000;
#endif
constexpr int thread_count = 4;

using ccf_test::run_threads;

TEST(KcasEncoding, ReservedBitsAndTags) {
  EXPECT_EQ(cd::kcas_word::value_mask, (std::uint64_t{1} << 62) - 1);
  EXPECT_EQ(cd::kcas_value_mask & enc::reserved_bits, 0u);
  const std::uint64_t k = enc::make_tag(enc::kcas_bit, 511, 12345);
  EXPECT_TRUE(enc::is_kcas_tag(k));
  EXPECT_FALSE(enc::is_dcss_tag(k));
  EXPECT_FALSE(enc::is_value(k));
  EXPECT_EQ(enc::tag_slot(k), 511u);
  EXPECT_EQ(enc::tag_seq(k), 12345u);
  const std::uint64_t d = enc::make_tag(enc::dcss_bit, 3, enc::seq_mask);
  EXPECT_TRUE(enc::is_dcss_tag(d));
  EXPECT_FALSE(enc::is_kcas_tag(d));
  EXPECT_EQ(enc::tag_seq(d), enc::seq_mask);
  EXPECT_TRUE(enc::is_value(cd::kcas_value_mask));
  const std::uint64_t st = enc::make_state(enc::seq_mask, enc::status_failed);
  EXPECT_EQ(enc::state_seq(st), enc::seq_mask);
  EXPECT_EQ(enc::state_status(st), enc::status_failed);
}

TEST(KcasSingleThread, LoadReadAndCas) {
  cd::kcas_word w{42};
  EXPECT_EQ(cd::kcas_load(w), 42u);
  EXPECT_EQ(cd::kcas_read(w), 42u);
  EXPECT_FALSE(cd::cas(w, 41, 7));
  EXPECT_EQ(cd::kcas_load(w), 42u);
  EXPECT_TRUE(cd::cas(w, 42, cd::kcas_value_mask));
  EXPECT_EQ(cd::kcas_load(w), cd::kcas_value_mask);
  EXPECT_EQ(w.quiescent_load(), cd::kcas_value_mask);
  w.quiescent_store(5);
  EXPECT_EQ(cd::kcas_read(w), 5u);
}

// K = 1..8 through the fixed-size overload: success writes everything, any single mismatch
// writes nothing.
template <std::size_t K>
void check_fixed_size() {
  std::array<cd::kcas_word, K> words;
  for (std::size_t i = 0; i < K; ++i)
    words[i].quiescent_store(100 * i + 1);
  auto entries = [&](std::uint64_t add, std::size_t wrong) {
    std::array<cd::kcas_entry, K> e{};
    for (std::size_t i = 0; i < K; ++i) {
      const std::uint64_t cur = cd::kcas_load(words[i]);
      e[i] = {&words[i], i == wrong ? cur + 1 : cur, cur + add};
    }
    return e;
  };
  for (std::size_t wrong = 0; wrong < K; ++wrong) {
    EXPECT_FALSE(cd::kcas(entries(7, wrong))) << "K=" << K << " mismatch at " << wrong;
    for (std::size_t i = 0; i < K; ++i) {
      EXPECT_EQ(cd::kcas_load(words[i]), 100 * i + 1) << "K=" << K << " word " << i;
    }
  }
  EXPECT_TRUE(cd::kcas(entries(7, K)));
  for (std::size_t i = 0; i < K; ++i) {
    EXPECT_EQ(cd::kcas_load(words[i]), 100 * i + 8);
    EXPECT_EQ(cd::kcas_read(words[i]), 100 * i + 8);
    EXPECT_EQ(words[i].quiescent_load(), 100 * i + 8);  // no tag left behind
  }
  // A stale expectation now fails and leaves the new values alone.
  std::array<cd::kcas_entry, K> stale{};
  for (std::size_t i = 0; i < K; ++i)
    stale[i] = {&words[i], 100 * i + 1, 0};
  EXPECT_FALSE(cd::kcas(stale));
  for (std::size_t i = 0; i < K; ++i)
    EXPECT_EQ(cd::kcas_load(words[i]), 100 * i + 8);
}

template <std::size_t... K>
void check_all_sizes(std::index_sequence<K...>) {
  (check_fixed_size<K + 1>(), ...);
}

TEST(KcasSingleThread, AllSizesOneToEight) {
  check_all_sizes(std::make_index_sequence<cd::kcas_max_words>{});
}

TEST(KcasSingleThread, SpanInAnyOrderAndValueEdges) {
  std::array<cd::kcas_word, 8> words;
  for (std::size_t n = 2; n <= 8; ++n) {
    std::vector<cd::kcas_entry> e;
    for (std::size_t i = n; i-- > 0;) {  // descending addresses: kcas sorts internally
      e.push_back({&words[i], cd::kcas_load(words[i]), cd::kcas_value_mask - i});
    }
    EXPECT_TRUE(cd::kcas(std::span<const cd::kcas_entry>(e)));
    for (std::size_t i = 0; i < n; ++i)
      EXPECT_EQ(cd::kcas_load(words[i]), cd::kcas_value_mask - i);
    for (std::size_t i = 0; i < n; ++i)
      words[i].quiescent_store(0);
  }
  EXPECT_TRUE(cd::kcas(std::span<const cd::kcas_entry>{}));  // nothing to compare: vacuous
}

TEST(KcasSingleThread, RejectsBadArguments) {
  std::array<cd::kcas_word, 9> w;
  const std::uint64_t bad = std::uint64_t{1} << 62;
  EXPECT_THROW((void)cd::cas(w[0], 0, bad), std::invalid_argument);
  EXPECT_THROW((void)cd::cas(w[0], std::uint64_t{1} << 63, 1), std::invalid_argument);
  EXPECT_THROW((void)cd::kcas(std::array<cd::kcas_entry, 2>{{{&w[0], 0, 1}, {&w[1], 0, bad}}}),
               std::invalid_argument);
  EXPECT_THROW(
      (void)cd::kcas(std::array<cd::kcas_entry, 3>{{{&w[2], 0, 1}, {&w[1], 0, 1}, {&w[2], 0, 2}}}),
      std::invalid_argument);
  EXPECT_THROW((void)cd::kcas(std::array<cd::kcas_entry, 2>{{{&w[0], 0, 1}, {nullptr, 0, 1}}}),
               std::invalid_argument);
  std::vector<cd::kcas_entry> nine;
  for (auto& x : w)
    nine.push_back({&x, 0, 1});
  EXPECT_THROW((void)cd::kcas(std::span<const cd::kcas_entry>(nine)), std::length_error);
  for (auto& x : w)
    EXPECT_EQ(x.quiescent_load(), 0u);  // nothing written by a rejected call
}

// --- White-box helping tests: a word left holding a descriptor tag, as if its owner stalled. ---

// A thread that runs `setup` (which leaves its descriptors mid-operation) and then stays blocked,
// like an owner descheduled forever, until the object is destroyed. Its slot stays held
// meanwhile, as it would for a real stalled owner.
class stalled_owner {
 public:
  template <typename Setup>
  explicit stalled_owner(Setup setup)
      : thread_([this, setup] {
          setup();
          ready_.count_down();
          resume_.wait();
        }) {
    ready_.wait();
  }
  ~stalled_owner() {
    resume_.count_down();
    thread_.join();
  }
  stalled_owner(const stalled_owner&) = delete;
  stalled_owner& operator=(const stalled_owner&) = delete;

 private:
  std::latch ready_{1};
  std::latch resume_{1};
  std::thread thread_;
};

// Makes the calling thread's K-CAS descriptor look like an operation stalled after phase 1 with
// the given status; returns its tag. The words must then be given the tag by the caller.
std::uint64_t fake_stalled_kcas(std::span<const cd::kcas_entry> ops, std::uint64_t status) {
  const std::uint32_t self = cd::kcas_this_thread_slot();
  cd::kcas_descriptor& d = cd::kcas_global_registry.record(self).kcas;
  const std::uint64_t seq = enc::state_seq(d.state.load()) + 1;
  d.state.store(enc::make_state(seq, status));
  d.count.store(static_cast<std::uint32_t>(ops.size()));
  for (std::size_t i = 0; i < ops.size(); ++i) {
    d.entries[i].word.store(ops[i].word);
    d.entries[i].expected.store(ops[i].expected);
    d.entries[i].desired.store(ops[i].desired);
  }
  return enc::make_tag(enc::kcas_bit, self, seq);
}

TEST(KcasHelping, StalledUndecidedOperationIsCompletedByOthers) {
  std::array<cd::kcas_word, 3> w;
  const std::array<cd::kcas_entry, 3> ops{{{&w[0], 1, 11}, {&w[1], 2, 12}, {&w[2], 3, 13}}};
  std::uint64_t tag = 0;
  stalled_owner owner([&] { tag = fake_stalled_kcas(ops, enc::status_undecided); });
  for (auto& x : w)
    x.quiescent_store(tag);
  // Undecided: the logical values are still the expected ones, and kcas_load does not write.
  EXPECT_EQ(cd::kcas_load(w[0]), 1u);
  EXPECT_EQ(cd::kcas_load(w[2]), 3u);
  EXPECT_EQ(w[1].quiescent_load(), tag);
  // A cas that cannot succeed whatever the outcome returns false without helping.
  EXPECT_FALSE(cd::cas(w[1], 99, 5));
  EXPECT_EQ(w[1].quiescent_load(), tag);
  // A cas expecting the current logical value must help: the operation completes (all words
  // hold its tag, so it succeeds), after which the expected value is gone.
  EXPECT_FALSE(cd::cas(w[1], 2, 5));
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_EQ(w[i].quiescent_load(), 11 + i);
}

TEST(KcasHelping, PartiallyInstalledOperationIsFinishedByKcasRead) {
  std::array<cd::kcas_word, 3> w;
  w[2].quiescent_store(3);
  const std::array<cd::kcas_entry, 3> ops{{{&w[0], 1, 11}, {&w[1], 2, 12}, {&w[2], 3, 13}}};
  std::uint64_t tag = 0;
  stalled_owner owner([&] { tag = fake_stalled_kcas(ops, enc::status_undecided); });
  w[0].quiescent_store(tag);  // stalled after installing two of its three words
  w[1].quiescent_store(tag);
  EXPECT_EQ(cd::kcas_read(w[0]), 11u);  // helps phase 1 on w[2], decides, runs phase 2
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_EQ(w[i].quiescent_load(), 11 + i);
}

TEST(KcasHelping, HelperFailsOperationOnMismatch) {
  std::array<cd::kcas_word, 2> w;
  w[1].quiescent_store(77);  // not the expected 2
  const std::array<cd::kcas_entry, 2> ops{{{&w[0], 1, 11}, {&w[1], 2, 12}}};
  std::uint64_t tag = 0;
  stalled_owner owner([&] { tag = fake_stalled_kcas(ops, enc::status_undecided); });
  w[0].quiescent_store(tag);
  EXPECT_TRUE(cd::cas(w[0], 1, 5));  // helps: the operation fails, w[0] returns to 1, then 1 -> 5
  EXPECT_EQ(w[0].quiescent_load(), 5u);
  EXPECT_EQ(w[1].quiescent_load(), 77u);
}

TEST(KcasHelping, DecidedOperationsResolveWithoutPhaseOne) {
  for (const std::uint64_t status : {enc::status_succeeded, enc::status_failed}) {
    std::array<cd::kcas_word, 2> w;
    const std::array<cd::kcas_entry, 2> ops{{{&w[0], 1, 11}, {&w[1], 2, 12}}};
    std::uint64_t tag = 0;
    stalled_owner owner([&] { tag = fake_stalled_kcas(ops, status); });
    w[0].quiescent_store(tag);
    w[1].quiescent_store(tag);
    const bool ok = status == enc::status_succeeded;
    EXPECT_EQ(cd::kcas_load(w[1]), ok ? 12u : 2u);
    EXPECT_EQ(cd::kcas_read(w[1]), ok ? 12u : 2u);
    EXPECT_EQ(w[0].quiescent_load(), ok ? 11u : 1u);  // phase 2 covered every word
  }
}

TEST(KcasHelping, StaleTagOfFinishedOperationIsNeverTrusted) {
  // A descriptor that moved on (seq advanced) must not be used to interpret an older tag; a
  // reader that keeps meeting it would spin, so only check the validation itself.
  std::array<cd::kcas_word, 2> w;
  const std::array<cd::kcas_entry, 2> ops{{{&w[0], 1, 11}, {&w[1], 2, 12}}};
  std::uint64_t tag = 0;
  stalled_owner owner([&] {
    tag = fake_stalled_kcas(ops, enc::status_succeeded);
    (void)fake_stalled_kcas(ops, enc::status_undecided);  // the next operation of that slot
  });
  cd::kcas_impl::kcas_view view{};
  EXPECT_FALSE(cd::kcas_impl::read_kcas(tag, view));
  std::uint64_t value = 0;
  EXPECT_FALSE(cd::kcas_impl::kcas_logical_value(tag, &w[0], value));
}

// Makes the calling thread's DCSS descriptor look like a DCSS stalled between its two CASes
// (its tag installed in `word` in place of `expected`, aimed at K-CAS `ktag`); returns its tag.
std::uint64_t fake_stalled_dcss(cd::kcas_word& word, std::uint64_t expected, std::uint64_t ktag) {
  const std::uint32_t self = cd::kcas_this_thread_slot();
  cd::dcss_descriptor& d = cd::kcas_global_registry.record(self).dcss;
  const std::uint64_t seq = d.seq.load() + 1;
  d.seq.store(seq);
  d.word.store(&word);
  d.expected.store(expected);
  d.kcas_tag.store(ktag);
  return enc::make_tag(enc::dcss_bit, self, seq);
}

TEST(KcasHelping, PendingDcssIsCompletedOrRolledBack) {
  // A DCSS tag left in a word by a stalled helper: readers see its expected value; a writer
  // completes it (installing the K-CAS tag while that K-CAS is undecided, else rolling back).
  for (const std::uint64_t status : {enc::status_undecided, enc::status_failed}) {
    std::array<cd::kcas_word, 2> w;
    w[1].quiescent_store(2);
    const std::array<cd::kcas_entry, 2> ops{{{&w[0], 1, 11}, {&w[1], 2, 12}}};
    std::uint64_t ktag = 0;
    std::uint64_t dtag = 0;
    stalled_owner stalled([&] {
      ktag = fake_stalled_kcas(ops, status);
      dtag = fake_stalled_dcss(w[0], 1, ktag);
    });
    w[0].quiescent_store(dtag);
    EXPECT_EQ(cd::kcas_load(w[0]), 1u);
    EXPECT_EQ(w[0].quiescent_load(), dtag);  // kcas_load never writes
    // kcas_read helps the DCSS, then (undecided case) the whole K-CAS, which succeeds.
    const bool undecided = status == enc::status_undecided;
    EXPECT_EQ(cd::kcas_read(w[0]), undecided ? 11u : 1u);
    EXPECT_EQ(w[1].quiescent_load(), undecided ? 12u : 2u);
  }
}

TEST(KcasHelping, DcssInstallsTheKcasTagOnlyWhileUndecided) {
  for (const std::uint64_t status :
       {enc::status_undecided, enc::status_succeeded, enc::status_failed}) {
    std::array<cd::kcas_word, 2> w;
    const std::array<cd::kcas_entry, 2> ops{{{&w[0], 1, 11}, {&w[1], 2, 12}}};
    std::uint64_t ktag = 0;
    std::uint64_t dtag = 0;
    stalled_owner stalled([&] {
      ktag = fake_stalled_kcas(ops, status);
      dtag = fake_stalled_dcss(w[0], 1, ktag);
    });
    w[0].quiescent_store(dtag);
    cd::kcas_impl::help_dcss(dtag);
    EXPECT_EQ(w[0].quiescent_load(), status == enc::status_undecided ? ktag : 1u);
    cd::kcas_impl::help_dcss(dtag);  // idempotent: the DCSS tag is gone, nothing happens
    EXPECT_EQ(w[0].quiescent_load(), status == enc::status_undecided ? ktag : 1u);
  }
}

TEST(KcasHelping, PhaseTwoRollsBackALateDcss) {
  // The race of the essay: the operation failed at its last word while a stalled helper's DCSS
  // (which saw "undecided") still sits in w[1]. Phase 2 must roll that DCSS back, or the K-CAS
  // tag would enter w[1] after the operation finished. A DCSS of another operation is left alone.
  std::array<cd::kcas_word, 4> w;
  w[2].quiescent_store(99);  // mismatch: the operation fails
  const std::array<cd::kcas_entry, 3> ops{{{&w[0], 1, 11}, {&w[1], 2, 12}, {&w[2], 3, 13}}};
  const std::array<cd::kcas_entry, 2> other_ops{{{&w[3], 5, 15}, {&w[1], 2, 7}}};
  std::uint64_t ktag = 0;
  std::uint64_t dtag = 0;
  std::uint64_t other_dtag = 0;
  stalled_owner helper([&] {
    ktag = fake_stalled_kcas(ops, enc::status_failed);
    dtag = fake_stalled_dcss(w[1], 2, ktag);
  });
  w[0].quiescent_store(ktag);
  w[1].quiescent_store(dtag);
  cd::kcas_impl::help_kcas(cd::kcas_this_thread_slot(), ktag);  // phase 2 only: it is decided
  EXPECT_EQ(w[0].quiescent_load(), 1u);
  EXPECT_EQ(w[1].quiescent_load(), 2u);
  EXPECT_EQ(w[2].quiescent_load(), 99u);
  cd::kcas_impl::help_dcss(dtag);  // the stalled helper wakes up: its CAS finds nothing
  EXPECT_EQ(w[1].quiescent_load(), 2u);

  stalled_owner other([&] {
    const std::uint64_t other_ktag = fake_stalled_kcas(other_ops, enc::status_undecided);
    other_dtag = fake_stalled_dcss(w[1], 2, other_ktag);
  });
  w[0].quiescent_store(ktag);
  w[1].quiescent_store(other_dtag);
  cd::kcas_impl::help_kcas(cd::kcas_this_thread_slot(), ktag);
  EXPECT_EQ(w[0].quiescent_load(), 1u);
  EXPECT_EQ(w[1].quiescent_load(), other_dtag);  // not ours: untouched by our phase 2
}

// --- Concurrency ---

class KcasIncrement : public ::testing::TestWithParam<std::size_t> {};

// Threads read all K words and kcas them to value + 1. Every word ends equal to the number of
// successful operations.
TEST_P(KcasIncrement, EveryWordCountsEverySuccess) {
  const std::size_t k = GetParam();
  std::vector<cd::kcas_word> words(k);
  std::atomic<std::uint64_t> successes{0};
  run_threads(thread_count, [&](int) {
    std::uint64_t mine = 0;
    std::vector<cd::kcas_entry> e(k);
    for (int it = 0; it < iterations; ++it) {
      for (std::size_t i = 0; i < k; ++i) {
        const std::uint64_t v = cd::kcas_load(words[i]);
        e[i] = {&words[i], v, v + 1};
      }
      if (cd::kcas(std::span<const cd::kcas_entry>(e))) ++mine;
    }
    successes.fetch_add(mine, std::memory_order_relaxed);
  });
  EXPECT_GT(successes.load(), 0u);
  for (std::size_t i = 0; i < k; ++i) {
    EXPECT_EQ(words[i].quiescent_load(), successes.load()) << "word " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, KcasIncrement, ::testing::Values(2, 3, 5, 8));

// Writers keep K words equal (each operation adds 1 to all of them). Readers take snapshots two
// ways and must never see them differ: (1) read every word, then re-assert the snapshot with a
// kcas whose expected == desired == what was read (it succeeds only on a consistent snapshot);
// (2) double collect with kcas_load (words only grow, so two equal collects are a snapshot).
TEST(KcasConcurrent, NoTornSnapshots) {
  constexpr std::size_t k = 4;
  std::array<cd::kcas_word, k> words;
  std::atomic<int> writers_left{2};
  std::atomic<std::uint64_t> torn{0};
  std::atomic<std::uint64_t> snapshots{0};
  run_threads(4, [&](int t) {
    if (t < 2) {
      for (int it = 0; it < iterations; ++it) {
        std::array<cd::kcas_entry, k> e{};
        for (std::size_t i = 0; i < k; ++i) {
          const std::uint64_t v = t == 0 ? cd::kcas_load(words[i]) : cd::kcas_read(words[i]);
          e[i] = {&words[i], v, v + 1};
        }
        (void)cd::kcas(e);
      }
      writers_left.fetch_sub(1);
      return;
    }
    bool last = false;
    while (!last) {
      last = writers_left.load() == 0;  // one more round after the writers are done
      std::array<std::uint64_t, k> a{};
      std::array<std::uint64_t, k> b{};
      if (t == 2) {
        std::array<cd::kcas_entry, k> e{};
        for (std::size_t i = 0; i < k; ++i) {
          a[i] = cd::kcas_load(words[i]);
          e[i] = {&words[i], a[i], a[i]};
        }
        if (!cd::kcas(e)) continue;
      } else {
        for (std::size_t i = 0; i < k; ++i)
          a[i] = cd::kcas_load(words[i]);
        for (std::size_t i = 0; i < k; ++i)
          b[i] = cd::kcas_load(words[i]);
        if (a != b) continue;
      }
      snapshots.fetch_add(1);
      for (std::size_t i = 1; i < k; ++i) {
        if (a[i] != a[0]) torn.fetch_add(1);
      }
    }
  });
  EXPECT_EQ(torn.load(), 0u);
  EXPECT_GE(snapshots.load(), 2u);  // at least the final rounds, taken with no writer left
  EXPECT_EQ(words[0].quiescent_load(), words[k - 1].quiescent_load());
}

// Single-word cas and kcas on overlapping words: a is bumped by both, b only by the kcas.
TEST(KcasConcurrent, MixedWithSingleWordCas) {
  cd::kcas_word a;
  cd::kcas_word b;
  std::atomic<std::uint64_t> pair_ops{0};
  std::atomic<std::uint64_t> single_ops{0};
  run_threads(thread_count, [&](int t) {
    std::uint64_t mine = 0;
    for (int it = 0; it < iterations; ++it) {
      const std::uint64_t va = cd::kcas_load(a);
      if (t % 2 == 0) {
        const std::uint64_t vb = cd::kcas_load(b);
        if (cd::kcas(std::array<cd::kcas_entry, 2>{{{&a, va, va + 1}, {&b, vb, vb + 1}}})) ++mine;
      } else if (cd::cas(a, va, va + 1)) {
        ++mine;
      }
    }
    (t % 2 == 0 ? pair_ops : single_ops).fetch_add(mine);
  });
  EXPECT_EQ(a.quiescent_load(), pair_ops.load() + single_ops.load());
  EXPECT_EQ(b.quiescent_load(), pair_ops.load());
}

// Transfers between accounts (2-word kcas) keep the total; auditors re-assert all 8 accounts at
// once and check the total of every consistent snapshot.
TEST(KcasConcurrent, TransfersKeepTheSum) {
  constexpr std::size_t accounts = 8;
  constexpr std::uint64_t initial = 1000;
  std::array<cd::kcas_word, accounts> acct;
  for (auto& x : acct)
    x.quiescent_store(initial);
  std::atomic<std::uint64_t> bad_audits{0};
  std::atomic<bool> done{false};
  std::atomic<int> movers_left{3};
  run_threads(4, [&](int t) {
    if (t == 3) {
      do {
        std::array<cd::kcas_entry, accounts> e{};
        std::uint64_t sum = 0;
        for (std::size_t i = 0; i < accounts; ++i) {
          const std::uint64_t v = cd::kcas_load(acct[i]);
          e[i] = {&acct[i], v, v};
          sum += v;
        }
        if (cd::kcas(e) && sum != accounts * initial) bad_audits.fetch_add(1);
      } while (!done.load());
      return;
    }
    std::mt19937_64 rng(static_cast<std::uint64_t>(t) * 7919 + 1);
    for (int it = 0; it < iterations; ++it) {
      const std::size_t from = rng() % accounts;
      const std::size_t to = (from + 1 + rng() % (accounts - 1)) % accounts;
      const std::uint64_t vf = cd::kcas_load(acct[from]);
      const std::uint64_t vt = cd::kcas_load(acct[to]);
      if (vf == 0) continue;
      const std::uint64_t amount = 1 + rng() % vf;
      (void)cd::kcas(std::array<cd::kcas_entry, 2>{
          {{&acct[from], vf, vf - amount}, {&acct[to], vt, vt + amount}}});
    }
    if (movers_left.fetch_sub(1) == 1) done.store(true);
  });
  EXPECT_EQ(bad_audits.load(), 0u);
  std::uint64_t sum = 0;
  for (auto& x : acct)
    sum += x.quiescent_load();
  EXPECT_EQ(sum, accounts * initial);
}

// --- Thread registry ---

TEST(KcasRegistry, SlotsAreReusedAcrossManyShortLivedThreads) {
  (void)cd::kcas_this_thread_slot();
  const std::size_t baseline = cd::kcas_threads_in_use();
  std::array<cd::kcas_word, 2> w;
  const std::size_t threads = cd::kcas_max_threads + 100;
  for (std::size_t i = 0; i < threads; ++i) {
    std::thread th([&] {
      const std::uint64_t v0 = cd::kcas_load(w[0]);
      const std::uint64_t v1 = cd::kcas_load(w[1]);
      EXPECT_TRUE(
          cd::kcas(std::array<cd::kcas_entry, 2>{{{&w[0], v0, v0 + 1}, {&w[1], v1, v1 + 2}}}));
    });
    th.join();
    ASSERT_EQ(cd::kcas_threads_in_use(), baseline) << "slot not released by thread " << i;
  }
  EXPECT_EQ(w[0].quiescent_load(), threads);
  EXPECT_EQ(w[1].quiescent_load(), 2 * threads);
}

TEST(KcasRegistry, ExhaustionThrowsAndLeavesWordsAlone) {
  (void)cd::kcas_this_thread_slot();  // the main thread holds a slot, so one thread must fail
  const std::size_t baseline = cd::kcas_threads_in_use();
  ASSERT_GE(baseline, 1u);
  const std::size_t threads = cd::kcas_max_threads;
  std::vector<cd::kcas_word> words(2 * threads);
  std::atomic<std::size_t> ok{0};
  std::atomic<std::size_t> refused{0};
  std::latch all_tried(static_cast<std::ptrdiff_t>(threads));
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) {
    pool.emplace_back([&, i] {
      try {
        if (cd::kcas(std::array<cd::kcas_entry, 2>{
                {{&words[2 * i], 0, 1}, {&words[2 * i + 1], 0, 1}}})) {
          ok.fetch_add(1);
        }
      } catch (const ccf::kcas_thread_limit_error&) {
        refused.fetch_add(1);
      }
      all_tried.arrive_and_wait();  // keep every slot held until all threads have tried
    });
  }
  for (auto& th : pool)
    th.join();
  EXPECT_EQ(ok.load(), cd::kcas_max_threads - baseline);
  EXPECT_EQ(refused.load(), baseline);
  std::size_t written = 0;
  for (const auto& w : words)
    written += w.quiescent_load();
  EXPECT_EQ(written, 2 * ok.load());  // refused threads wrote nothing
  EXPECT_EQ(cd::kcas_threads_in_use(), baseline);
}

}  // namespace
