// ccf_engine_targets: the figures of the engine's speed targets, measured in one run, each with
// its ratio to the baseline it is compared with (docs/benchmarks.md, "Engine targets").
//
//   ccf_engine_targets [--threads T] [--large L] [--room R] [--sections LIST] [--quick]
//
//   1. in cache (2^18 buckets, 16-bit x 4, 95 % load, one thread): contains on hits and on misses,
//      and contains_many, in ns per key; hits / misses and contains_many / contains ratios; and
//      single-key inserts below 50 % and between 90 and 95 % load, in ns per insert (what a path
//      search costs when no cache miss hides its work);
//   2. load bands of a filter with room for 2^R items (default R = 26), one thread: inserts below
//      50 % load and between 90 and 95 %, single-key and batched (insert_many), and their ratio;
//   3. batched fill of 2^L buckets (default L = 26) to 95 %, one thread, in M inserts/s;
//   4. T threads (default: every hardware thread) on 2^L buckets (striped concurrent filter):
//      bulk build (ccf::build), batched fill (insert_many per thread), single-key fill, mixed
//      90/5/5 (lookups / inserts / erases, one key at a time, then the same stream through
//      apply_many in calls of 256 operations) and batched lookups of present keys;
//   5. what an insert near full waits for, one thread: the time of a round of K random loads in
//      one chunk-sized window of a region as large as the band's table, each round's
//      addresses depending on the loads of the round before, for K = 1, 8 (the buckets that the
//      first level of a path search tests) and 32 (a second level); next to it the 90-95 % band's
//      single-key time per insert and relocation hops per insert from section 2.
// --sections runs only the sections listed (digits, e.g. 34; default 12345); section 5 needs 2.
// Every timed region checks its answers (a false negative stops the run with exit status 1).
// --quick shrinks everything to small tables (a smoke test; its figures mean nothing).
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <latch>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <ccf/ccf.hpp>

#include "bench_support.hpp"

namespace {

using u64 = std::uint64_t;
using clock_type = std::chrono::steady_clock;
using seq_filter = ccf::cuckoo_filter<u64, 16, 4>;
using conc_filter = ccf::concurrent_cuckoo_filter<u64, 16, 4>;

struct options {
  unsigned threads = std::max(1U, std::thread::hardware_concurrency());
  int large = 26;
  int room = 26;
  int cache = 18;
  std::string sections = "12345";
  bool quick = false;

  bool runs(char section) const { return sections.find(section) != std::string::npos; }
};

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "ccf_engine_targets: %s\n", what);
  std::exit(1);
}

std::vector<u64> keys_from(u64 first, std::size_t n, u64 seed) {
  std::vector<u64> k(n);
  for (std::size_t i = 0; i < n; ++i)
    k[i] = ccf::bench::key_at(first + i, seed);
  return k;
}

/// A capacity that gives about 2^log2 buckets of 4 slots.
std::size_t capacity_for_buckets(int log2) {
  return static_cast<std::size_t>(static_cast<double>(std::size_t{1} << log2) * 4 * 0.94 / 1.02);
}

/// Runs work(t, lo, hi) on `threads` threads over [0, n) and returns the wall time.
double timed_parallel(unsigned threads, std::size_t n,
                      const std::function<void(unsigned, std::size_t, std::size_t)>& work) {
  std::latch ready(threads + 1);
  std::latch go(1);
  std::vector<std::jthread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ready.count_down();
      go.wait();
      work(t, n * t / threads, n * (t + 1) / threads);
    });
  }
  ready.arrive_and_wait();
  const auto t0 = clock_type::now();
  go.count_down();
  pool.clear();
  return seconds_since(t0);
}

/// Section 1's inserts: ns per single-key insert below 50 % and between 90 and 95 % of a filter of
/// 2^cache buckets, the best of several fresh fills.
void in_cache_inserts(const options& o) {
  const int rounds = o.quick ? 2 : 10;
  double low = 1e9, high = 1e9;
  for (int r = 0; r < rounds; ++r) {
    seq_filter f(capacity_for_buckets(o.cache));
    const double slots = static_cast<double>(f.size_in_tags());
    const std::vector<u64> keys =
        keys_from(0, static_cast<std::size_t>(slots * 0.95), static_cast<u64>(10 + r));
    const auto at = [&](double load) { return static_cast<std::size_t>(slots * load); };
    auto run = [&](std::size_t from, std::size_t to) {
      const auto t0 = clock_type::now();
      for (std::size_t i = from; i < to; ++i) {
        if (!f.insert(keys[i])) fail("an in-cache insert was refused");
      }
      return seconds_since(t0) * 1e9 / static_cast<double>(to - from);
    };
    low = std::min(low, run(0, at(0.5)));
    run(at(0.5), at(0.9));
    high = std::min(high, run(at(0.9), keys.size()));
    for (u64 k : keys) {
      if (!f.contains(k)) fail("false negative (in-cache inserts)");
    }
  }
  std::printf(
      "   single-key inserts below 50 %% %.2f  90-95 %% %.2f ns each, ratio of rates %.3f\n", low,
      high, low / high);
}

void in_cache(const options& o) {
  seq_filter f(capacity_for_buckets(o.cache));
  const auto n = static_cast<std::size_t>(0.95 * static_cast<double>(f.size_in_tags()));
  const std::vector<u64> present = keys_from(0, n, 1), absent = keys_from(u64{1} << 40, n, 1);
  if (f.insert_many(present) != n) fail("in-cache fill refused a key");
  const int rounds = o.quick ? 2 : 40;
  double hit = 1e9, miss = 1e9, many_hit = 1e9, many_miss = 1e9;
  std::vector<bool> sink;
  for (int r = 0; r < rounds; ++r) {
    auto t0 = clock_type::now();
    std::size_t found = 0;
    for (u64 k : present)
      found += f.contains(k) ? 1 : 0;
    hit = std::min(hit, seconds_since(t0));
    if (found != n) fail("false negative (in cache)");
    t0 = clock_type::now();
    found = 0;
    for (u64 k : absent)
      found += f.contains(k) ? 1 : 0;
    miss = std::min(miss, seconds_since(t0));
    t0 = clock_type::now();
    if (f.contains_many(present) != n) fail("false negative (contains_many)");
    many_hit = std::min(many_hit, seconds_since(t0));
    t0 = clock_type::now();
    found += f.contains_many(absent);
    many_miss = std::min(many_miss, seconds_since(t0));
    if (found > n / 100) fail("implausible false-positive count");
  }
  const double ns = 1e9 / static_cast<double>(n);
  std::printf("1. in cache: 2^%d buckets, 95 %% load, one thread (ns per key, lower is better)\n",
              o.cache);
  std::printf("   contains hit %.2f  miss %.2f  hit/miss %.2f (target <= 1)\n", hit * ns, miss * ns,
              hit / miss);
  std::printf(
      "   contains_many hit %.2f  miss %.2f  contains_many/contains hit %.2f miss %.2f "
      "(target <= 1)\n",
      many_hit * ns, many_miss * ns, many_hit / hit, many_miss / miss);
  in_cache_inserts(o);
}

/// Writes every word of a new filter's table once, outside the timed regions. A large table
/// comes from ccf::table_allocator as fresh pages that read as zero and are faulted in, and
/// zeroed by the kernel, where they are first written; without this the first inserts timed
/// would pay for that, and the rates below 50 % load would measure page faults as well as
/// inserts. (The bulk build's time includes its table's page faults: it builds the filter.)
template <class Filter>
void fault_in(Filter& f) {
  f.clear();
}

/// What band_rates measured: rates (M/s) below 50 % and between 90 and 95 % of a filter, the
/// relocation hops per insert of the 90-95 % band, and the sizes of the filter's table and chunks.
struct band_figures {
  double low = 0;
  double high = 0;
  double high_hops = 0;
  std::size_t table_bytes = 0;
  std::size_t chunk_bytes = 0;
};

/// Insert rates below 50 % and between 90 and 95 % of a filter of `capacity` items.
band_figures band_rates(std::size_t capacity, bool batched) {
  seq_filter f(capacity);
  fault_in(f);
  const double slots = static_cast<double>(f.size_in_tags());
  const std::vector<u64> keys = keys_from(0, static_cast<std::size_t>(slots * 0.95), 2);
  auto run = [&](std::size_t from, std::size_t to) {
    const auto t0 = clock_type::now();
    std::size_t done = 0;
    if (batched) {
      done = f.insert_many(std::span<const u64>(keys.data() + from, to - from));
    } else {
      for (std::size_t i = from; i < to; ++i)
        done += f.insert(keys[i]) ? 1 : 0;
    }
    if (done != to - from) fail("a band insert was refused");
    return static_cast<double>(to - from) / seconds_since(t0) / 1e6;
  };
  const auto at = [&](double load) { return static_cast<std::size_t>(slots * load); };
  band_figures r;
  r.low = run(0, at(0.5));
  run(at(0.5), at(0.9));
  const std::size_t hops = f.relocations();
  r.high = run(at(0.9), keys.size());
  r.high_hops =
      static_cast<double>(f.relocations() - hops) / static_cast<double>(keys.size() - at(0.9));
  r.table_bytes = f.size_in_bytes();
  r.chunk_bytes = f.size_in_bytes() / f.chunks();
  return r;
}

/// Section 2; returns the single-key band's figures for section 5.
band_figures load_bands(const options& o) {
  const std::size_t capacity = std::size_t{1} << o.room;
  std::printf("2. load bands: a filter with room for 2^%d items, one thread (M inserts/s)\n",
              o.room);
  band_figures single;
  for (const bool batched : {false, true}) {
    const band_figures r = band_rates(capacity, batched);
    std::printf("   %-10s below 50 %% %7.2f  90-95 %% %7.2f  ratio %.3f (target >= 0.333)\n",
                batched ? "batched" : "single-key", r.low, r.high, r.high / r.low);
    if (!batched) single = r;
  }
  return single;
}

/// ns per round of k random loads in one random window of `window` words of `region`, each
/// round's window and offsets drawn from the sum of the previous round's loads, so rounds cannot
/// overlap.
double load_round_ns(const std::vector<u64, ccf::table_allocator<u64>>& region, std::size_t window,
                     unsigned k, std::size_t rounds) {
  const std::size_t windows = region.size() / window;
  u64 carried = 0;
  const auto t0 = clock_type::now();
  for (std::size_t r = 0; r < rounds; ++r) {
    u64 draw = ccf::bench::scramble(carried + r);
    const std::size_t base = static_cast<std::size_t>(draw % windows) * window;
    u64 sum = 0;
    for (unsigned j = 0; j < k; ++j) {
      draw = ccf::bench::scramble(draw);
      sum += region[base + static_cast<std::size_t>(draw % window)];
    }
    carried = sum;
  }
  const double s = seconds_since(t0);
  ccf::bench::keep(carried);
  return s * 1e9 / static_cast<double>(rounds);
}

void memory_rounds(const options& o, const band_figures& single) {
  const std::size_t words = single.table_bytes / sizeof(u64);
  const std::size_t window = single.chunk_bytes / sizeof(u64);
  std::vector<u64, ccf::table_allocator<u64>> region(words);
  for (std::size_t i = 0; i < words; ++i)
    region[i] = ccf::bench::scramble(i);
  const std::size_t rounds = o.quick ? 1000 : 400000;
  std::printf("5. what an insert near full waits for, one thread, a %.1f MiB region:\n",
              static_cast<double>(single.table_bytes) / (1 << 20));
  const double one = load_round_ns(region, window, 1, rounds);
  const double eight = load_round_ns(region, window, 8, rounds);
  const double many = load_round_ns(region, window, 32, rounds);
  std::printf(
      "   a round of K random loads in one chunk (%zu KiB): K=1 %.1f ns, K=8 %.1f ns (%.2f x), "
      "K=32 %.1f ns (%.2f x)\n",
      single.chunk_bytes >> 10, one, eight, eight / one, many, many / one);
  std::printf(
      "   single-key inserts at 90-95 %%: %.1f ns each = %.2f rounds of 8, "
      "%.2f relocation hops each\n",
      1e3 / single.high, 1e3 / single.high / eight, single.high_hops);
}

void large_fill(const options& o) {
  seq_filter f(capacity_for_buckets(o.large));
  fault_in(f);
  const auto n = static_cast<std::size_t>(0.95 * static_cast<double>(f.size_in_tags()));
  const std::vector<u64> keys = keys_from(0, n, 3);
  const auto t0 = clock_type::now();
  if (f.insert_many(keys) != n) fail("the batched fill was refused a key");
  const double s = seconds_since(t0);
  std::printf(
      "3. batched fill of 2^%d buckets (%zu) to 95 %%, one thread: %.2f M inserts/s "
      "(target >= 30)\n",
      o.large, f.num_buckets(), static_cast<double>(n) / s / 1e6);
}

void threads_on_large(const options& o) {
  const std::size_t capacity = capacity_for_buckets(o.large);
  const unsigned T = o.threads;
  std::printf("4. %u threads, 2^%d buckets, 16-bit x 4, 95 %% load (M ops/s)\n", T, o.large);
  conc_filter probe(capacity);
  const auto n = static_cast<std::size_t>(0.95 * static_cast<double>(probe.size_in_tags()));
  const std::vector<u64> keys = keys_from(0, n, 4);

  ccf::build_options bo;
  bo.threads = T;
  auto t0 = clock_type::now();
  conc_filter built = ccf::build<conc_filter>(keys, capacity, bo);
  std::printf("   bulk build           %8.2f (target >= 250 on 16 cores)\n",
              static_cast<double>(n) / seconds_since(t0) / 1e6);

  for (const bool batched : {true, false}) {
    conc_filter f(capacity);
    fault_in(f);
    const double s = timed_parallel(T, n, [&](unsigned, std::size_t lo, std::size_t hi) {
      if (batched) {
        if (f.insert_many(std::span<const u64>(keys.data() + lo, hi - lo)) != hi - lo) {
          fail("a concurrent batched insert was refused");
        }
      } else {
        for (std::size_t i = lo; i < hi; ++i) {
          if (!f.insert(keys[i])) fail("a concurrent insert was refused");
        }
      }
    });
    std::printf("   %-20s %8.2f (target >= %d on 16 cores)\n",
                batched ? "batched fill" : "single-key fill", static_cast<double>(n) / s / 1e6,
                batched ? 150 : 80);
  }

  // Mixed 90/5/5 on the built filter: each thread looks up present keys, inserts fresh keys of
  // its own and erases them again, one key at a time. The operations are drawn before the timed
  // region and read in order, so that the time is the filter's, not that of fetching a random
  // key from a 2 GB array. An erase names the insert it undoes (operand: that operation's
  // index) and runs only if that insert went in: erasing a key that is not there could take
  // another key's tag. An erase comes at least mixed_batch operations after its insert, so that
  // the batched form below knows whether the insert went in when it hands the erase over.
  const std::size_t ops = std::min<std::size_t>(n, o.quick ? 100000 : 32u << 20);
  constexpr std::size_t mixed_batch = 256;
  enum : unsigned char { lookup, add, remove };
  std::vector<unsigned char> kind(ops), went_in(ops, 0), went_in_batched(ops, 0);
  std::vector<u64> operand(ops);
  std::size_t adds = 0;
  for (unsigned t = 0; t < T; ++t) {
    std::vector<std::size_t> added_at;
    std::size_t erased = 0;
    for (std::size_t i = ops * t / T; i < ops * (t + 1) / T; ++i) {
      const unsigned draw = static_cast<unsigned>(ccf::bench::scramble(i) % 20);
      const bool can_erase = erased < added_at.size() && added_at[erased] + mixed_batch <= i;
      kind[i] = draw == 0 ? add : draw == 1 && can_erase ? remove : lookup;
      if (kind[i] == add) added_at.push_back(i);
      erased += kind[i] == remove ? 1 : 0;
    }
    adds += added_at.size();
  }
  {
    const std::vector<u64> fresh = keys_from(u64{2} << 40, adds, 4);
    std::size_t next_fresh = 0;
    for (unsigned t = 0; t < T; ++t) {
      std::vector<std::size_t> added_at;  // this thread's inserts, in order
      std::size_t erased = 0;
      for (std::size_t i = ops * t / T; i < ops * (t + 1) / T; ++i) {
        if (kind[i] == add) {
          operand[i] = fresh[next_fresh++];
          added_at.push_back(i);
        } else if (kind[i] == remove) {
          operand[i] = added_at[erased++];
        } else {
          operand[i] = keys[ccf::bench::scramble(i ^ 0x5555) % n];
        }
      }
    }
  }
  double s = timed_parallel(T, ops, [&](unsigned, std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) {
      if (kind[i] == add) {
        went_in[i] = built.insert(operand[i]) ? 1 : 0;
      } else if (kind[i] == remove) {
        const std::size_t a = static_cast<std::size_t>(operand[i]);
        if (went_in[a] != 0 && !built.erase(operand[a])) fail("an erase of a present key failed");
      } else if (!built.contains(operand[i])) {
        fail("false negative under the mixed workload");
      }
    }
  });
  const std::size_t refused =
      adds - static_cast<std::size_t>(std::count(went_in.begin(), went_in.end(), 1));
  const double one_at_a_time = static_cast<double>(ops) / s / 1e6;
  std::printf(
      "   mixed 90/5/5         %8.2f (target >= 200 on 16 cores; %zu of %zu inserts "
      "refused)\n",
      one_at_a_time, refused, adds);

  // The same stream through apply_many, mixed_batch operations a call (the burst a packet
  // pipeline hands over), with other fresh keys (the top bit flipped): the inserts the run above
  // left in place stay.
  constexpr u64 other_fresh = u64{1} << 63;
  s = timed_parallel(T, ops, [&](unsigned, std::size_t lo, std::size_t hi) {
    std::array<ccf::operation<u64>, mixed_batch> batch;
    std::array<bool, mixed_batch> result;
    for (std::size_t from = lo; from < hi; from += mixed_batch) {
      const std::size_t len = std::min(mixed_batch, hi - from);
      for (std::size_t i = from; i < from + len; ++i) {
        ccf::operation<u64>& op = batch[i - from];
        if (kind[i] == add) {
          op = {ccf::operation_kind::insert, operand[i] ^ other_fresh};
        } else if (kind[i] == remove) {
          const std::size_t a = static_cast<std::size_t>(operand[i]);
          // An insert refused: look its key up instead (the answer is not checked).
          op = {
              went_in_batched[a] != 0 ? ccf::operation_kind::erase : ccf::operation_kind::contains,
              operand[a] ^ other_fresh};
        } else {
          op = {ccf::operation_kind::contains, operand[i]};
        }
      }
      built.apply_many(std::span(batch.data(), len), std::span(result.data(), len));
      for (std::size_t i = from; i < from + len; ++i) {
        const bool r = result[i - from];
        if (kind[i] == add) {
          went_in_batched[i] = r ? 1 : 0;
        } else if (kind[i] == remove) {
          if (batch[i - from].kind == ccf::operation_kind::erase && !r) {
            fail("an erase of a present key failed in a mixed batch");
          }
        } else if (!r) {
          fail("false negative in a mixed batch");
        }
      }
    }
  });
  const std::size_t refused_batched =
      adds -
      static_cast<std::size_t>(std::count(went_in_batched.begin(), went_in_batched.end(), 1));
  const double in_batches = static_cast<double>(ops) / s / 1e6;
  std::printf(
      "   mixed 90/5/5 batched %8.2f (apply_many, %zu a call; %.2f x one at a time; %zu of %zu "
      "inserts refused)\n",
      in_batches, mixed_batch, in_batches / one_at_a_time, refused_batched, adds);

  s = timed_parallel(T, n, [&](unsigned, std::size_t lo, std::size_t hi) {
    if (built.contains_many(std::span<const u64>(keys.data() + lo, hi - lo)) != hi - lo) {
      fail("false negative in the batched lookups");
    }
  });
  std::printf("   batched lookups hit  %8.2f (339-453 on 16 cores before the engine)\n",
              static_cast<double>(n) / s / 1e6);
}

}  // namespace

int main(int argc, char** argv) {
  // A line at a time: a run cut short by a time limit keeps the figures it printed.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() {
      if (i + 1 >= argc) fail(("missing value after " + a).c_str());
      return std::atoi(argv[++i]);
    };
    if (a == "--threads") {
      o.threads = static_cast<unsigned>(std::max(1, value()));
    } else if (a == "--large") {
      o.large = value();
    } else if (a == "--room") {
      o.room = value();
    } else if (a == "--sections" && i + 1 < argc) {
      o.sections = argv[++i];
    } else if (a == "--quick") {
      o.quick = true;
    } else {
      std::fprintf(stderr,
                   "usage: ccf_engine_targets [--threads T] [--large L] [--room R] "
                   "[--sections LIST] [--quick]\n");
      return a == "--help" ? 0 : 1;
    }
  }
  if (o.sections.empty() || o.sections.find_first_not_of("12345") != std::string::npos) {
    fail("--sections takes digits 1 to 5, e.g. 34");
  }
  if (o.runs('5') && !o.runs('2')) fail("section 5 needs section 2's figures: add 2");
  if (o.quick) {
    o.large = std::min(o.large, 16);
    o.room = std::min(o.room, 16);
    o.cache = 12;
  }
  std::printf("ccf_engine_targets: %s, %u hardware threads\n",
              ccf::bench::describe_machine().cpu_model.c_str(),
              std::thread::hardware_concurrency());
  if (o.runs('1')) in_cache(o);
  const band_figures single = o.runs('2') ? load_bands(o) : band_figures{};
  if (o.runs('3')) large_fill(o);
  if (o.runs('4')) threads_on_large(o);
  if (o.runs('5')) memory_rounds(o, single);
  return 0;
}
