// ccf_growing_bench: the growing filter against the static filter of the same false-positive
// rate, in one run (docs/benchmarks.md, "Growing filter").
//
//   ccf_growing_bench [--lg L] [--start S] [--fpr R] [--threads T] [--quick]
//   ccf_growing_bench --doublings D [--fpr R]
//
// A growing filter starts with room for 2^S buckets (default S = 10: 1,024 buckets) and takes
// 0.94 * 4 * 2^L items (default L = 24: just before the table would double again), doubling as it goes; the static filter is the layout of
// least memory for the same rate (ccf::filter_config::for_rate), sized for all the items at once.
// Both are runtime filters (one virtual call per operation each). Printed:
//   1. one thread: amortised insert rate of the growing filter and the static filter's fill rate,
//      and their ratio (target >= 0.6); lookups of present and absent keys afterwards;
//   2. T threads (concurrent kinds): the same, the growing filter's doublings split in parallel;
//   3. memory and rate: bits per item, doublings, measured false-positive rate and the bound;
//   4. keys inserted k times each (k = 1, 3, 5, 6, 8; 400,000 keys, or 40,000 with --quick), one
//      thread, from an initial capacity of 1,000: bits per item (memory_in_bytes), doublings, and
//      the inserts and keys refused (docs/growing.md, "When").
// With --doublings D, only:
//   5. one thread, from an initial capacity of 1,000, distinct keys until the table has doubled D
//      times: just before each doubling, the items held, bits per item and the load (items per
//      slot; below 95 % once entries whose fingerprint is used up fill the table, being in both
//      halves of every later split: docs/growing.md "Memory"). D = 18 inserts 2.5 * 10^8 keys
//      (minutes) and takes about 1.5 GB.
// Every timed region checks its answers (a false negative stops the run with exit status 1).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include <ccf/runtime_filter.hpp>

#include "bench_support.hpp"

namespace {

using u64 = std::uint64_t;
using clock_type = std::chrono::steady_clock;

struct options {
  int lg = 24;
  int start = 10;
  double fpr = 1e-3;
  unsigned threads = std::max(1U, std::thread::hardware_concurrency());
  bool quick = false;
  unsigned doublings = 0;  // section 5 alone, to this many doublings
};

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "ccf_growing_bench: %s\n", what);
  std::exit(1);
}

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// Runs work(lo, hi) on `threads` threads over [0, n); returns the wall time.
double timed_parallel(unsigned threads, std::size_t n,
                      const std::function<void(std::size_t, std::size_t)>& work) {
  std::latch ready(threads + 1), go(1);
  std::vector<std::jthread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ready.count_down();
      go.wait();
      work(n * t / threads, n * (t + 1) / threads);
    });
  }
  ready.arrive_and_wait();
  const auto t0 = clock_type::now();
  go.count_down();
  pool.clear();
  return seconds_since(t0);
}

struct result {
  double insert_mops = 0, hit_ns = 0, miss_ns = 0, bits_per_item = 0, fpr = 0;
};

/// Fills f with `keys` on `threads` threads, then times lookups of present and absent keys.
result measure(ccf::runtime_filter& f, const std::vector<u64>& keys, const std::vector<u64>& absent,
               unsigned threads) {
  result r;
  const double fill = timed_parallel(threads, keys.size(), [&](std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) {
      if (!f.insert_hash(keys[i])) fail("an insert was refused");
    }
  });
  r.insert_mops = static_cast<double>(keys.size()) / fill / 1e6;
  if (f.size() != keys.size()) fail("the item count is wrong");
  std::atomic<std::size_t> found{0}, false_positives{0};
  const double hit = timed_parallel(threads, keys.size(), [&](std::size_t lo, std::size_t hi) {
    std::size_t n = 0;
    for (std::size_t i = lo; i < hi; ++i)
      n += f.contains_hash(keys[i]) ? 1 : 0;
    found.fetch_add(n);
  });
  if (found.load() != keys.size()) fail("false negative");
  const double miss = timed_parallel(threads, absent.size(), [&](std::size_t lo, std::size_t hi) {
    std::size_t n = 0;
    for (std::size_t i = lo; i < hi; ++i)
      n += f.contains_hash(absent[i]) ? 1 : 0;
    false_positives.fetch_add(n);
  });
  r.hit_ns = hit * 1e9 * threads / static_cast<double>(keys.size());
  r.miss_ns = miss * 1e9 * threads / static_cast<double>(absent.size());
  r.bits_per_item = 8.0 * static_cast<double>(f.size_in_bytes()) / static_cast<double>(f.size());
  r.fpr = static_cast<double>(false_positives.load()) / static_cast<double>(absent.size());
  return r;
}

void compare(const options& o, unsigned threads, const std::vector<u64>& keys,
             const std::vector<u64>& absent) {
  const ccf::filter_kind kind =
      threads == 1 ? ccf::filter_kind::sequential : ccf::filter_kind::concurrent;
  const std::size_t start_capacity =
      static_cast<std::size_t>(static_cast<double>(std::size_t{1} << o.start) * 4 * 0.95);
  ccf::runtime_filter growing(ccf::filter_config::growing_for_rate(start_capacity, o.fpr, kind));
  ccf::runtime_filter fixed(ccf::filter_config::for_rate(keys.size(), o.fpr, kind));
  // Static first (its table is allocated up front), then growing; the better of two rounds each.
  result s, g;
  for (int round = 0; round < (o.quick ? 1 : 2); ++round) {
    fixed.clear();
    const result sr = measure(fixed, keys, absent, threads);
    ccf::runtime_filter fresh(ccf::filter_config::growing_for_rate(start_capacity, o.fpr, kind));
    const result gr = measure(fresh, keys, absent, threads);
    if (round == 0 || sr.insert_mops > s.insert_mops) s = sr;
    if (round == 0 || gr.insert_mops > g.insert_mops) {
      g = gr;
      growing = std::move(fresh);
    }
  }
  std::printf("%u thread%s (%s):\n", threads, threads == 1 ? "" : "s", ccf::to_string(kind));
  std::printf("   insert M/s   growing %.2f  static %.2f  growing/static %.2f (target >= 0.6)\n",
              g.insert_mops, s.insert_mops, g.insert_mops / s.insert_mops);
  std::printf("   contains ns  hit: growing %.1f static %.1f   miss: growing %.1f static %.1f\n",
              g.hit_ns, s.hit_ns, g.miss_ns, s.miss_ns);
  std::printf(
      "   growing: %u doublings to %zu buckets of %u-bit slots, %.2f bits/item, "
      "FPR %.2e (bound %.2e, target %.0e)\n",
      growing.doublings(), growing.num_buckets(), growing.fingerprint_bits(), g.bits_per_item,
      g.fpr, growing.expected_fpr(), o.fpr);
  std::printf(
      "   static:  %u-bit x %u, %.2f bits/item, FPR %.2e;  bits/item growing - static "
      "%.2f (target <= 5)\n",
      fixed.fingerprint_bits(), fixed.slots_per_bucket(), s.bits_per_item, s.fpr,
      g.bits_per_item - s.bits_per_item);
}

/// Section 4: keys inserted `copies` times each.
void repeated_keys(const options& o) {
  const std::size_t keys = o.quick ? 40000 : 400000;
  std::printf("%zu keys inserted k times each, one thread, initial capacity 1000:\n", keys);
  for (const unsigned copies : {1U, 3U, 5U, 6U, 8U}) {
    ccf::runtime_filter f(
        ccf::filter_config::growing_for_rate(1000, o.fpr, ccf::filter_kind::sequential));
    std::size_t refused = 0, outright = 0;
    try {
      for (std::size_t i = 0; i < keys; ++i) {
        const u64 h = ccf::bench::key_at(i, 12);
        unsigned in = 0;
        for (unsigned c = 0; c < copies; ++c)
          in += f.insert_hash(h) ? 1 : 0;
        refused += copies - in;
        outright += in == 0 ? 1 : 0;
        if (in != 0 && !f.contains_hash(h)) fail("false negative");
      }
    } catch (const std::exception& e) {  // growth beyond memory
      std::printf("   k=%u  stopped after %u doublings: %s\n", copies, f.doublings(), e.what());
      continue;
    }
    std::printf(
        "   k=%u  %.1f bits/item, %u doublings, %zu of %zu inserts refused, %zu keys refused "
        "outright\n",
        copies, 8.0 * static_cast<double>(f.memory_in_bytes()) / static_cast<double>(f.size()),
        f.doublings(), refused, keys * copies, outright);
  }
}

/// Section 5: bits per item just before each doubling, up to o.doublings doublings.
void memory_by_doublings(const options& o) {
  ccf::runtime_filter f(
      ccf::filter_config::growing_for_rate(1000, o.fpr, ccf::filter_kind::sequential));
  std::printf("distinct keys, one thread, initial capacity 1000, %u-bit slots; before doubling:\n",
              f.fingerprint_bits());
  std::printf("   %9s %12s %10s %6s %10s\n", "doubling", "items", "bits/item", "load", "buckets");
  std::size_t refused = 0;
  for (std::size_t i = 0; f.doublings() < o.doublings; ++i) {
    const std::size_t items = f.size(), bytes = f.size_in_bytes(), slots = f.num_buckets() * 4;
    const unsigned before = f.doublings();
    const u64 h = ccf::bench::key_at(i, 13);
    if (!f.insert_hash(h)) {
      ++refused;
    } else if (!f.contains_hash(h)) {
      fail("false negative");
    }
    if (f.doublings() == before) continue;
    std::printf("   %9u %12zu %10.3f %6.3f %10zu\n", before + 1, items,
                8.0 * static_cast<double>(bytes) / static_cast<double>(items),
                static_cast<double>(items) / static_cast<double>(slots), slots / 4);
    std::fflush(stdout);
  }
  std::printf("   %zu inserts refused\n", refused);
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) fail(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "--lg") {
      o.lg = std::atoi(value());
    } else if (a == "--start") {
      o.start = std::atoi(value());
    } else if (a == "--fpr") {
      o.fpr = std::atof(value());
    } else if (a == "--threads") {
      o.threads = static_cast<unsigned>(std::max(1, std::atoi(value())));
    } else if (a == "--quick") {
      o.quick = true;
    } else if (a == "--doublings") {
      o.doublings = static_cast<unsigned>(std::clamp(std::atoi(value()), 1, 30));
    } else {
      fail(("unknown option " + a +
            " (--lg L, --start S, --fpr R, --threads T, --quick, --doublings D)")
               .c_str());
    }
  }
  if (o.quick) o.lg = std::min(o.lg, 16);
  if (o.lg < 8 || o.lg > 30 || o.start < 6 || o.start > o.lg) fail("need 6 <= S <= L <= 30");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const options o = parse(argc, argv);
  if (o.doublings != 0) {
    std::printf("ccf_growing_bench: %s; target FPR %.0e\n",
                ccf::bench::describe_machine().git_revision.c_str(), o.fpr);
    memory_by_doublings(o);
    return 0;
  }
  const std::size_t n =
      static_cast<std::size_t>(0.94 * 4 * static_cast<double>(std::size_t{1} << o.lg));
  const ccf::bench::machine_info m = ccf::bench::describe_machine();
  std::printf(
      "ccf_growing_bench: %s, %u cores, %s; %zu items from 2^%d to 2^%d buckets, "
      "target FPR %.0e\n",
      m.cpu_model.c_str(), m.cores, m.git_revision.c_str(), n, o.start, o.lg, o.fpr);
  std::vector<u64> keys(n), absent(std::min<std::size_t>(n, 4000000));
  for (std::size_t i = 0; i < n; ++i)
    keys[i] = ccf::bench::key_at(i, 11);
  for (std::size_t i = 0; i < absent.size(); ++i)
    absent[i] = ccf::bench::key_at(i + (u64{1} << 40), 11);
  compare(o, 1, keys, absent);
  if (o.threads > 1) compare(o, o.threads, keys, absent);
  repeated_keys(o);
  return 0;
}
