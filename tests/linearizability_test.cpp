// Linearizability of ccf's concurrent filters, checked on recorded histories.
//
// Each run starts a fresh filter, gives it a small known content, and lets 5 threads run 3
// operations each (insert, erase, contains, count) on a tiny key space. Every operation records
// its invocation and response times from one global atomic clock. A Wing & Gong style checker
// (depth-first search over "which pending operation takes effect next", with memoization of
// (linearized set, model state) pairs that are known to be dead ends) then decides whether the
// history has a linearization that a sequential multiset would produce:
//   insert(k)   -> true and count + 1 while count < limit(k); false (no change) when the key's
//                  two buckets are full (count == limit) or, in the crowded regime, whenever the
//                  filter may legitimately refuse;
//   erase(k)    -> true iff count > 0, and removes one copy;
//   contains(k) -> count > 0;           count(k) -> the exact count.
// The keys are chosen (via locate()) with pairwise distinct tags, so no key can produce a false
// positive for another and the filter's answers are exact for them.
//
// Two regimes per filter: "separate" (each key has its own two buckets, nothing else in the
// table: limit = 2 * slots, refusals exactly when full) and "crowded" (a tiny table ~88 % full of
// ballast tags, plus a sixth, unrecorded thread that keeps inserting and erasing keys of its own
// whose tags no test key has, so cuckoo paths relocate the test keys' tags while the recorded
// threads look them up). Both run over ccf::lockfree_cuckoo_filter and the lock-based
// ccf::concurrent_cuckoo_filter (striped locking). The checker itself is tested first, on
// hand-made histories and on mutated sequential histories, to show that it rejects what it must.
// CCF_TEST_SCALE scales the number of runs (default 300 per filter and regime).
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "filter_types.hpp"

namespace ccf_test {
namespace {

// ---------------------------------------------------------------------------------------------
// The checker

enum class op_kind : std::uint8_t { insert, erase, contains, count };

struct op_record {
  op_kind kind = op_kind::contains;
  std::uint8_t key = 0;
  std::uint64_t result = 0;  // bool results as 0 / 1, count as the count
  std::uint64_t invoked = 0;
  std::uint64_t responded = 0;
  int thread = 0;
};

constexpr std::size_t max_keys = 8;
constexpr std::size_t max_ops = 64;

/// The sequential specification: a multiset over keys 0..max_keys-1 with per-key limits.
struct multiset_spec {
  std::array<unsigned, max_keys> limit{};
  bool insert_may_fail = false;  // crowded regime: a refused insert is always legal

  /// The state after `op`, or nothing when `op`'s result is impossible in `state` (8 bits per
  /// key count).
  std::optional<std::uint64_t> apply(std::uint64_t state, const op_record& op) const {
    const unsigned shift = 8u * op.key;
    const auto c = static_cast<unsigned>((state >> shift) & 0xff);
    switch (op.kind) {
      case op_kind::insert:
        if (op.result != 0) {
          if (c >= limit[op.key]) return std::nullopt;
          return state + (std::uint64_t{1} << shift);
        }
        if (insert_may_fail || c >= limit[op.key]) return state;
        return std::nullopt;
      case op_kind::erase:
        if (op.result != 0) {
          if (c == 0) return std::nullopt;
          return state - (std::uint64_t{1} << shift);
        }
        if (c == 0) return state;
        return std::nullopt;
      case op_kind::contains:
        if ((op.result != 0) == (c > 0)) return state;
        return std::nullopt;
      case op_kind::count:
        if (op.result == c) return state;
        return std::nullopt;
    }
    return std::nullopt;
  }
};

std::uint64_t pack_counts(const std::vector<unsigned>& counts) {
  std::uint64_t s = 0;
  for (std::size_t k = 0; k < counts.size(); ++k)
    s |= std::uint64_t{counts[k]} << (8 * k);
  return s;
}

class linearizability_checker {
 public:
  linearizability_checker(multiset_spec spec, std::uint64_t initial_state)
      : spec_(spec), initial_(initial_state) {}

  /// Whether `history` (at most 64 operations, any order) is linearizable.
  bool check(const std::vector<op_record>& history) {
    if (history.size() > max_ops) throw std::invalid_argument("history too long");
    ops_ = history;
    std::sort(ops_.begin(), ops_.end(),
              [](const op_record& a, const op_record& b) { return a.invoked < b.invoked; });
    dead_.clear();
    explored_ = 0;
    full_ = ops_.size() == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << ops_.size()) - 1;
    return search(0, initial_);
  }
  /// Search nodes visited by the last check (memoization keeps this small).
  std::size_t explored() const noexcept { return explored_; }

 private:
  struct node {
    std::uint64_t done;
    std::uint64_t state;
    bool operator==(const node&) const = default;
  };
  struct node_hash {
    std::size_t operator()(const node& n) const noexcept {
      return static_cast<std::size_t>(ccf::mix64(n.done * 0x9e3779b97f4a7c15ULL ^ n.state));
    }
  };

  bool search(std::uint64_t done, std::uint64_t state) {
    if (done == full_) return true;
    if (dead_.contains(node{done, state})) return false;
    ++explored_;
    // An operation may take effect next iff it was invoked before every pending operation's
    // response (otherwise some pending operation precedes it in real time).
    std::uint64_t first_response = ~std::uint64_t{0};
    for (std::size_t i = 0; i < ops_.size(); ++i) {
      if ((done >> i & 1) == 0) first_response = std::min(first_response, ops_[i].responded);
    }
    for (std::size_t i = 0; i < ops_.size(); ++i) {
      if ((done >> i & 1) != 0) continue;
      if (ops_[i].invoked > first_response) break;  // sorted by invocation
      const std::optional<std::uint64_t> next = spec_.apply(state, ops_[i]);
      if (next && search(done | std::uint64_t{1} << i, *next)) return true;
    }
    dead_.insert(node{done, state});
    return false;
  }

  multiset_spec spec_;
  std::uint64_t initial_;
  std::vector<op_record> ops_;
  std::uint64_t full_ = 0;
  std::unordered_set<node, node_hash> dead_;
  std::size_t explored_ = 0;
};

std::string describe(const std::vector<op_record>& h, const std::vector<unsigned>& initial) {
  static const char* names[] = {"insert", "erase", "contains", "count"};
  std::vector<op_record> s = h;
  std::sort(s.begin(), s.end(), [](auto& a, auto& b) { return a.invoked < b.invoked; });
  std::ostringstream out;
  out << "initial counts:";
  for (unsigned c : initial)
    out << ' ' << c;
  out << '\n';
  for (const op_record& o : s) {
    out << "  [" << o.invoked << ", " << o.responded << "] thread " << o.thread << ' '
        << names[static_cast<int>(o.kind)] << '(' << int{o.key} << ") -> " << o.result << '\n';
  }
  return out.str();
}

op_record rec(op_kind k, int key, std::uint64_t result, std::uint64_t inv, std::uint64_t res) {
  return op_record{k, static_cast<std::uint8_t>(key), result, inv, res, 0};
}

multiset_spec strict_spec(unsigned limit) {
  multiset_spec s;
  s.limit.fill(limit);
  return s;
}

TEST(checker, accepts_sequential_and_overlapping_legal_histories) {
  linearizability_checker c(strict_spec(8), 0);
  EXPECT_TRUE(c.check({rec(op_kind::insert, 0, 1, 0, 1), rec(op_kind::contains, 0, 1, 2, 3),
                       rec(op_kind::count, 0, 1, 4, 5), rec(op_kind::erase, 0, 1, 6, 7),
                       rec(op_kind::erase, 0, 0, 8, 9), rec(op_kind::contains, 0, 0, 10, 11)}));
  // A lookup overlapping an insert may see it or not, even both ways in a row.
  EXPECT_TRUE(c.check({rec(op_kind::insert, 1, 1, 0, 10), rec(op_kind::contains, 1, 0, 1, 2),
                       rec(op_kind::contains, 1, 1, 3, 4)}));
  // Overlapping erase and insert of an absent key: erase must come after the insert.
  EXPECT_TRUE(c.check({rec(op_kind::erase, 2, 1, 0, 5), rec(op_kind::insert, 2, 1, 1, 6),
                       rec(op_kind::count, 2, 0, 7, 8)}));
  // A refused insert is legal exactly when the key's buckets are full.
  linearizability_checker full(strict_spec(2), pack_counts({2}));
  EXPECT_TRUE(full.check({rec(op_kind::insert, 0, 0, 0, 1), rec(op_kind::count, 0, 2, 2, 3)}));
}

TEST(checker, rejects_non_linearizable_histories) {
  linearizability_checker c(strict_spec(8), 0);
  // A completed insert, then a lookup that misses it.
  EXPECT_FALSE(c.check({rec(op_kind::insert, 0, 1, 0, 1), rec(op_kind::contains, 0, 0, 2, 3)}));
  // A lookup sees the key, a later one does not, and nothing erased it.
  EXPECT_FALSE(c.check({rec(op_kind::insert, 0, 1, 0, 10), rec(op_kind::contains, 0, 1, 1, 2),
                        rec(op_kind::contains, 0, 0, 3, 4)}));
  // Two successful erases of one copy.
  EXPECT_FALSE(c.check({rec(op_kind::insert, 0, 1, 0, 5), rec(op_kind::erase, 0, 1, 1, 6),
                        rec(op_kind::erase, 0, 1, 2, 7)}));
  // An erase of a key that was never there.
  EXPECT_FALSE(c.check({rec(op_kind::erase, 3, 1, 0, 1)}));
  // count must be exact; keys are independent.
  EXPECT_FALSE(c.check({rec(op_kind::insert, 0, 1, 0, 1), rec(op_kind::count, 0, 2, 2, 3)}));
  EXPECT_FALSE(c.check({rec(op_kind::insert, 0, 1, 0, 1), rec(op_kind::contains, 1, 1, 2, 3)}));
  // A refused insert while there is room.
  EXPECT_FALSE(c.check({rec(op_kind::insert, 0, 0, 0, 1)}));
  // Real-time order across threads: count 1 after count 2 with no erase.
  EXPECT_FALSE(c.check({rec(op_kind::insert, 0, 1, 0, 20), rec(op_kind::insert, 0, 1, 1, 21),
                        rec(op_kind::count, 0, 2, 2, 3), rec(op_kind::count, 0, 1, 4, 5)}));
  linearizability_checker full(strict_spec(2), pack_counts({2}));
  EXPECT_FALSE(full.check({rec(op_kind::insert, 0, 1, 0, 1)}));
}

// Sequential histories recorded from a real filter are accepted; changing any single result
// makes them non-linearizable (a sequential history has exactly one linearization), and the
// checker must notice every such change.
TEST(checker, rejects_every_single_result_mutation_of_recorded_sequential_histories) {
  std::mt19937_64 rng(99);
  std::size_t mutations = 0;
  for (int trial = 0; trial < 30; ++trial) {
    ccf::lockfree_cuckoo_filter<u64> f(1000, 5);
    std::vector<u64> keys;
    std::vector<ccf::lockfree_cuckoo_filter<u64>::position> pos;
    for (u64 i = 0; keys.size() < 3; ++i) {
      const auto p = f.locate(key_of(i, 31));
      bool ok = p.i1 != p.i2;
      for (const auto& q : pos)
        ok = ok && q.tag != p.tag && q.i1 != p.i1 && q.i1 != p.i2 && q.i2 != p.i1 && q.i2 != p.i2;
      if (ok) {
        keys.push_back(key_of(i, 31));
        pos.push_back(p);
      }
    }
    std::vector<op_record> h;
    std::uint64_t clock = 0;
    for (int i = 0; i < 40; ++i) {
      op_record o;
      o.kind = static_cast<op_kind>(rng() % 4);
      o.key = static_cast<std::uint8_t>(rng() % keys.size());
      o.invoked = clock++;
      const u64 k = keys[o.key];
      switch (o.kind) {
        case op_kind::insert:
          o.result = f.insert(k);
          break;
        case op_kind::erase:
          o.result = f.erase(k);
          break;
        case op_kind::contains:
          o.result = f.contains(k);
          break;
        case op_kind::count:
          o.result = f.count(k);
          break;
      }
      o.responded = clock++;
      h.push_back(o);
    }
    linearizability_checker c(strict_spec(8), 0);
    ASSERT_TRUE(c.check(h)) << describe(h, {0, 0, 0});
    for (std::size_t i = 0; i < h.size(); ++i) {
      std::vector<std::uint64_t> wrong;
      if (h[i].kind == op_kind::count) {
        wrong = {h[i].result + 1};
        if (h[i].result > 0) wrong.push_back(h[i].result - 1);
      } else {
        wrong = {h[i].result ^ 1};
      }
      for (std::uint64_t w : wrong) {
        std::vector<op_record> m = h;
        m[i].result = w;
        EXPECT_FALSE(c.check(m)) << "mutation of op " << i << " accepted\n"
                                 << describe(m, {0, 0, 0});
        ++mutations;
      }
    }
  }
  EXPECT_GT(mutations, 1000u);
}

// ---------------------------------------------------------------------------------------------
// Recording histories from real filters

struct planned_op {
  op_kind kind;
  std::uint8_t key;
};

/// The key space of one filter type and regime, and what each run starts from.
template <class F>
struct scenario {
  std::size_t capacity = 0;
  std::uint64_t seed = 0;
  std::vector<u64> keys;
  std::vector<u64> ballast;  // crowded regime: inserted first, never touched again
  std::vector<u64> churn;    // crowded regime: keys an unrecorded thread inserts and erases
  multiset_spec spec;
};

/// Keys with pairwise distinct tags and (if `separate`) pairwise disjoint bucket pairs.
template <class F>
scenario<F> make_scenario(bool separate) {
  scenario<F> s;
  s.capacity = separate ? 256 : 40;
  s.seed = separate ? 11 : 12;
  const std::size_t n_keys = separate ? 4 : 3;
  F probe(s.capacity, s.seed);
  std::vector<typename F::position> pos;
  for (u64 i = 0; s.keys.size() < n_keys; ++i) {
    const u64 k = key_of(i, separate ? 51 : 52);
    const auto p = probe.locate(k);
    bool ok = p.i1 != p.i2;
    for (const auto& q : pos) {
      ok = ok && q.tag != p.tag;
      if (separate) ok = ok && q.i1 != p.i1 && q.i1 != p.i2 && q.i2 != p.i1 && q.i2 != p.i2;
    }
    if (ok) {
      s.keys.push_back(k);
      pos.push_back(p);
    }
  }
  s.spec.limit.fill(0);
  for (std::size_t k = 0; k < n_keys; ++k)
    s.spec.limit[k] = 2 * F::slots_per_bucket;
  s.spec.insert_may_fail = !separate;
  if (!separate) {
    // Ballast up to ~88 % of the slots, with tags no test key has.
    const auto target = static_cast<std::size_t>(0.88 * static_cast<double>(probe.size_in_tags()));
    for (u64 i = 0; s.ballast.size() < target && i < 100000; ++i) {
      const u64 k = key_of(i, 53);
      const auto p = probe.locate(k);
      bool ok = true;
      for (const auto& q : pos)
        ok = ok && q.tag != p.tag;
      if (ok && probe.insert(k)) s.ballast.push_back(k);
    }
    for (u64 i = 0; s.churn.size() < 48; ++i) {
      const u64 k = key_of(i, 54);
      bool ok = true;
      for (const auto& q : pos)
        ok = ok && q.tag != probe.locate(k).tag;
      if (ok) s.churn.push_back(k);
    }
  }
  return s;
}

int run_count() {
  return std::max(30, static_cast<int>(300 * test_scale()));
}

bool has_overlap(const std::vector<op_record>& h) {
  for (const op_record& a : h) {
    for (const op_record& b : h) {
      if (a.thread < b.thread && a.invoked < b.responded && b.invoked < a.responded) return true;
    }
  }
  return false;
}

/// Sets `quit` and joins the threads when it goes out of scope (also on a failed assertion).
struct thread_pool_guard {
  std::atomic<bool>& quit;
  std::vector<std::thread>& threads;
  ~thread_pool_guard() {
    quit = true;
    for (auto& t : threads)
      t.join();
  }
};

/// Runs `runs` recorded runs of 5 threads on fresh filters and checks each history. In the
/// crowded regime a sixth, unrecorded thread inserts and erases its own keys (tags no test key
/// has: invisible to the specification) for as long as the recorded threads run, so cuckoo paths
/// keep relocating the test keys' tags under the recorded lookups. Counts the runs whose history
/// had overlapping operations of different threads, and the relocations (lock-free filter) made
/// while histories were recorded.
template <class F>
void record_and_check(const scenario<F>& sc, int runs, std::size_t& overlapping,
                      std::size_t& relocations) {
  constexpr int threads_n = 5;
  constexpr int ops_per_thread = 3;
  const bool agitate = !sc.churn.empty();
  const int participants = threads_n + (agitate ? 1 : 0);
  const std::size_t n_keys = sc.keys.size();
  std::atomic<std::uint64_t> clock{0};
  std::atomic<int> generation{0};
  std::atomic<int> finished{0};
  std::atomic<int> agitator_done{0};
  std::atomic<std::size_t> agitator_errors{0};
  std::atomic<int> ready{0};
  std::atomic<bool> quit{false};
  std::unique_ptr<F> filter;
  std::vector<std::vector<planned_op>> plans(threads_n);
  std::vector<std::vector<op_record>> logs(threads_n);

  // Waits for the next run; false when the test is over.
  auto next_run = [&](int& seen) {
    int g = generation.load(std::memory_order_acquire);
    while (g == seen && !quit.load(std::memory_order_acquire)) {
      std::this_thread::yield();
      g = generation.load(std::memory_order_acquire);
    }
    if (g == seen) return false;
    seen = g;
    // Start together: the operations of the threads that are on a core at that moment run side
    // by side.
    ready.fetch_add(1, std::memory_order_acq_rel);
    for (unsigned spins = 0; ready.load(std::memory_order_acquire) < participants; ++spins) {
      if (spins % 64 == 63) std::this_thread::yield();
    }
    return true;
  };

  std::vector<std::thread> workers;
  const thread_pool_guard guard{quit, workers};
  if (agitate) {
    workers.emplace_back([&] {
      std::mt19937_64 rng(999);
      std::vector<char> present(sc.churn.size());
      for (int seen = 0; next_run(seen);) {
        F& f = *filter;
        std::fill(present.begin(), present.end(), 0);
        std::size_t live = 0;
        while (finished.load(std::memory_order_acquire) < threads_n) {
          const std::size_t i = rng() % sc.churn.size();
          if (present[i]) {
            if (!f.erase(sc.churn[i])) agitator_errors.fetch_add(1);
            present[i] = 0;
            --live;
          } else if (live < 10 && f.insert(sc.churn[i])) {
            present[i] = 1;
            ++live;
          }
        }
        agitator_done.fetch_add(1, std::memory_order_acq_rel);
      }
    });
  }
  for (int t = 0; t < threads_n; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937_64 rng(1000 + t);
      for (int seen = 0; next_run(seen);) {
        F& f = *filter;
        std::vector<op_record>& log = logs[t];
        log.clear();
        for (const planned_op& po : plans[t]) {
          // A short random pause shuffles the interleavings between runs.
          for (unsigned spin = static_cast<unsigned>(rng() % 256); spin > 0; --spin) {
            std::atomic_signal_fence(std::memory_order_seq_cst);
          }
          if (rng() % 16 == 0) std::this_thread::yield();
          op_record o;
          o.kind = po.kind;
          o.key = po.key;
          o.thread = t;
          const u64 k = sc.keys[po.key];
          o.invoked = clock.fetch_add(1);
          // Now and then give the core away inside the operation's interval, so that histories
          // have overlapping operations even when this process gets only one core.
          if (rng() % 8 == 0) std::this_thread::yield();
          switch (po.kind) {
            case op_kind::insert:
              o.result = f.insert(k) ? 1 : 0;
              break;
            case op_kind::erase:
              o.result = f.erase(k) ? 1 : 0;
              break;
            case op_kind::contains:
              o.result = f.contains(k) ? 1 : 0;
              break;
            case op_kind::count:
              o.result = f.count(k);
              break;
          }
          o.responded = clock.fetch_add(1);
          log.push_back(o);
        }
        finished.fetch_add(1, std::memory_order_acq_rel);
      }
    });
  }

  std::mt19937_64 rng(7);
  for (int run = 0; run < runs; ++run) {
    filter = std::make_unique<F>(sc.capacity, sc.seed);
    for (u64 b : sc.ballast)
      (void)filter->insert(b);
    std::vector<unsigned> initial(n_keys);
    for (std::size_t k = 0; k < n_keys; ++k) {
      initial[k] = static_cast<unsigned>(rng() % (sc.spec.insert_may_fail ? 5 : 9));
      for (unsigned c = 0; c < initial[k]; ++c) {
        if (!filter->insert(sc.keys[k])) {
          initial[k] = c;
          break;
        }
      }
      ASSERT_EQ(filter->count(sc.keys[k]), initial[k]);
    }
    for (auto& plan : plans) {
      plan.clear();
      for (int i = 0; i < ops_per_thread; ++i) {
        const unsigned r = static_cast<unsigned>(rng() % 100);
        const op_kind kind = r < 30   ? op_kind::insert
                             : r < 55 ? op_kind::erase
                             : r < 80 ? op_kind::contains
                                      : op_kind::count;
        plan.push_back({kind, static_cast<std::uint8_t>(rng() % n_keys)});
      }
    }
    std::size_t relocations_before = 0;
    if constexpr (requires(const F& f) { f.relocations(); }) {
      relocations_before = filter->relocations();
    }
    finished.store(0, std::memory_order_relaxed);
    agitator_done.store(0, std::memory_order_relaxed);
    ready.store(0, std::memory_order_relaxed);
    generation.fetch_add(1, std::memory_order_acq_rel);
    while (finished.load(std::memory_order_acquire) != threads_n ||
           agitator_done.load(std::memory_order_acquire) != (agitate ? 1 : 0)) {
      std::this_thread::yield();
    }
    ASSERT_EQ(agitator_errors.load(), 0u) << "the unrecorded thread failed to erase its own key";

    std::vector<op_record> history;
    for (const auto& log : logs)
      history.insert(history.end(), log.begin(), log.end());
    if (has_overlap(history)) ++overlapping;
    linearizability_checker checker(sc.spec, pack_counts(initial));
    const bool ok = checker.check(history);
    if constexpr (requires(const F& f) { f.relocations(); }) {
      relocations += filter->relocations() - relocations_before;
    }
    ASSERT_TRUE(ok) << "run " << run << ": history not linearizable\n"
                    << describe(history, initial);
  }
}

template <class F>
class linearizability : public ::testing::Test {};
using checked_filters =
    ::testing::Types<ccf::lockfree_cuckoo_filter<u64>, ccf::concurrent_cuckoo_filter<u64>>;
TYPED_TEST_SUITE(linearizability, checked_filters);

TYPED_TEST(linearizability, separate_buckets_histories_are_linearizable) {
  const auto sc = make_scenario<TypeParam>(true);
  ASSERT_EQ(sc.keys.size(), 4u);
  std::size_t overlapping = 0, relocations = 0;
  const int runs = run_count();
  record_and_check(sc, runs, overlapping, relocations);
  if (::testing::Test::HasFatalFailure()) return;
  EXPECT_GT(overlapping, 0u) << "no run had concurrent operations: the test checks nothing";
  std::cout << "  " << runs << " runs, " << overlapping << " with overlapping operations\n";
}

TYPED_TEST(linearizability, crowded_table_histories_with_relocations_are_linearizable) {
  const auto sc = make_scenario<TypeParam>(false);
  ASSERT_EQ(sc.keys.size(), 3u);
  ASSERT_GT(sc.ballast.size(), 40u);
  std::size_t overlapping = 0, relocations = 0;
  const int runs = run_count();
  record_and_check(sc, runs, overlapping, relocations);
  if (::testing::Test::HasFatalFailure()) return;
  EXPECT_GT(overlapping, 0u);
  if constexpr (requires(const TypeParam& f) { f.relocations(); }) {
    EXPECT_GT(relocations, 0u) << "the crowded regime should relocate tags";
  }
  std::cout << "  " << runs << " runs, " << overlapping << " with overlapping operations, "
            << relocations << " relocations\n";
}

}  // namespace
}  // namespace ccf_test
