// ccf-demo: every ccf filter on one embedded workload, side by side with the Bloom baselines.
//
// The workload: N distinct random 64-bit keys are inserted (the filters are built for exactly N
// items, so they end up nearly full), then all N are looked up (each must be found: a miss is a
// false negative and makes the demo fail), then N keys never inserted are looked up (the hits are
// the false positives). The concurrent filters do every phase with T threads over disjoint slices.
// Reported: throughput of each phase, measured and theoretical false-positive rate, bits per item.
#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <latch>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <ccf/ccf.hpp>

namespace {

using u64 = std::uint64_t;

struct row {
  std::string name;
  unsigned threads = 1;
  double insert_mops = 0, hit_mops = 0, miss_mops = 0;
  double fpr = 0, fpr_theory = 0, bits_per_item = 0;
  std::size_t false_negatives = 0;
  bool inserted_all = true;
};

/// Runs `work(lo, hi)` on `threads` threads over [0, n) and returns the wall time in seconds.
double timed_parallel(unsigned threads, std::size_t n,
                      const std::function<void(std::size_t, std::size_t)>& work) {
  std::latch start(threads + 1);
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      const std::size_t lo = n * t / threads, hi = n * (t + 1) / threads;
      start.arrive_and_wait();
      work(lo, hi);
    });
  }
  const auto t0 = std::chrono::steady_clock::now();
  start.arrive_and_wait();
  for (auto& th : pool)
    th.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

template <class Filter>
row run_filter(const std::string& name, Filter& f, unsigned threads, const std::vector<u64>& keys,
               const std::vector<u64>& absent, double fpr_theory) {
  row r;
  r.name = name;
  r.threads = threads;
  const std::size_t n = keys.size();
  std::atomic<std::size_t> inserted{0}, hits{0}, false_hits{0};
  const double ti = timed_parallel(threads, n, [&](std::size_t lo, std::size_t hi) {
    inserted += f.insert_many(std::span<const u64>(keys.data() + lo, hi - lo));
  });
  const double th = timed_parallel(threads, n, [&](std::size_t lo, std::size_t hi) {
    hits += f.contains_many(std::span<const u64>(keys.data() + lo, hi - lo));
  });
  const double tm = timed_parallel(threads, n, [&](std::size_t lo, std::size_t hi) {
    false_hits += f.contains_many(std::span<const u64>(absent.data() + lo, hi - lo));
  });
  r.inserted_all = inserted == n;
  r.insert_mops = static_cast<double>(inserted) / ti / 1e6;
  r.hit_mops = static_cast<double>(n) / th / 1e6;
  r.miss_mops = static_cast<double>(n) / tm / 1e6;
  r.false_negatives = inserted - std::min<std::size_t>(hits, inserted);
  r.fpr = static_cast<double>(false_hits) / static_cast<double>(n);
  r.fpr_theory = fpr_theory;
  r.bits_per_item = static_cast<double>(f.size_in_bytes()) * 8.0 / static_cast<double>(n);
  return r;
}

template <class Filter>
row run_cuckoo(const std::string& name, unsigned threads, const std::vector<u64>& keys,
               const std::vector<u64>& absent) {
  Filter f(keys.size());
  row r = run_filter(name, f, threads, keys, absent, 0.0);
  const double tags = std::ldexp(1.0, static_cast<int>(Filter::fingerprint_bits)) - 1.0;
  r.fpr_theory = 1.0 - std::pow(1.0 - 1.0 / tags, 2.0 * Filter::slots_per_bucket * f.load_factor());
  return r;
}

template <class Filter>
row run_bloom(const std::string& name, const std::vector<u64>& keys, const std::vector<u64>& absent,
              double fpr) {
  Filter f(keys.size(), fpr);
  struct adapter {
    Filter& f;
    std::size_t insert_many(std::span<const u64> k) {
      f.insert_many(k);
      return k.size();
    }
    std::size_t contains_many(std::span<const u64> k) const {
      auto out = std::make_unique<bool[]>(k.size());
      f.contains_many(k, std::span<bool>(out.get(), k.size()));
      std::size_t hits = 0;
      for (std::size_t i = 0; i < k.size(); ++i)
        hits += out[i] ? 1 : 0;
      return hits;
    }
    std::size_t size_in_bytes() const { return f.size_in_bytes(); }
  } a{f};
  return run_filter(name, a, 1, keys, absent, fpr);
}

void print(const std::vector<row>& rows, std::size_t n) {
  std::printf("\n%-44s %3s %11s %11s %11s %11s %11s %9s %6s\n", "filter", "thr", "insert M/s",
              "hit M/s", "miss M/s", "FPR", "FPR theory", "bits/item", "FN");
  std::printf("%s\n", std::string(124, '-').c_str());
  for (const row& r : rows) {
    std::printf("%-44s %3u %11.2f %11.2f %11.2f %11.6f %11.6f %9.2f %6zu%s\n", r.name.c_str(),
                r.threads, r.insert_mops, r.hit_mops, r.miss_mops, r.fpr, r.fpr_theory,
                r.bits_per_item, r.false_negatives, r.inserted_all ? "" : "  (insert refused!)");
  }
  std::printf(
      "\n%zu keys per filter. FN = false negatives (must be 0). Cuckoo FPR theory: "
      "1 - (1 - 1/(2^f - 1))^(2 b load).\n",
      n);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ccf-demo: every ccf filter on one workload, with the Bloom baselines"};
  std::size_t n = 4'000'000;
  unsigned threads = std::max(2u, std::thread::hardware_concurrency());
  u64 seed = 42;
  bool quick = false;
  app.add_option("-n,--items", n, "keys inserted into each filter")
      ->check(CLI::Range(1000, 1 << 30));
  app.add_option("-t,--threads", threads, "threads for the concurrent filters")
      ->check(CLI::Range(1, 1024));
  app.add_option("--seed", seed, "workload seed");
  app.add_flag("--quick", quick, "a small workload (200,000 keys)");
  CLI11_PARSE(app, argc, argv);
  if (quick) n = 200'000;

  std::vector<u64> keys(n), absent(n);
  for (std::size_t i = 0; i < n; ++i) {
    keys[i] = ccf::mix64(i ^ (seed << 40));
    absent[i] = ccf::mix64((i + n) ^ (seed << 40));
  }
  std::printf("ccf-demo: %zu random 64-bit keys, %u threads for the concurrent filters\n", n,
              threads);

  using ccf::concurrent_cuckoo_filter;
  using ccf::cuckoo_filter;
  using H = ccf::hash<u64>;
  std::vector<row> rows;
  rows.push_back(
      run_cuckoo<cuckoo_filter<u64, 16, 4>>("cuckoo_filter<16-bit, 4 slots>", 1, keys, absent));
  rows.push_back(
      run_cuckoo<cuckoo_filter<u64, 12, 4>>("cuckoo_filter<12-bit, 4 slots>", 1, keys, absent));
  rows.push_back(
      run_cuckoo<cuckoo_filter<u64, 8, 4>>("cuckoo_filter<8-bit, 4 slots>", 1, keys, absent));
  rows.push_back(
      run_cuckoo<cuckoo_filter<u64, 16, 2>>("cuckoo_filter<16-bit, 2 slots>", 1, keys, absent));
  rows.push_back(run_cuckoo<concurrent_cuckoo_filter<u64, 16, 4>>(
      "concurrent<16,4> striped (default)", threads, keys, absent));
  rows.push_back(run_cuckoo<concurrent_cuckoo_filter<u64, 16, 4, H, ccf::elided_mcs_locking>>(
      "concurrent<16,4> elided MCS (thesis)", threads, keys, absent));
  rows.push_back(run_cuckoo<concurrent_cuckoo_filter<u64, 16, 4, H, ccf::global_locking>>(
      "concurrent<16,4> global mutex", threads, keys, absent));
  rows.push_back(run_cuckoo<ccf::lockfree_cuckoo_filter<u64, 12, 4>>("lockfree<12,4> (K-CAS)",
                                                                     threads, keys, absent));
  const double fpr16 = rows[0].fpr_theory, fpr12 = rows[1].fpr_theory;
  rows.push_back(run_bloom<ccf::bloom_filter<u64>>("bloom_filter (FPR of cuckoo 16-bit)", keys,
                                                   absent, fpr16));
  rows.push_back(run_bloom<ccf::blocked_bloom_filter<u64>>(
      "blocked_bloom_filter (FPR of cuckoo 16-bit)", keys, absent, fpr16));
  rows.push_back(run_bloom<ccf::bloom_filter<u64>>("bloom_filter (FPR of cuckoo 12-bit)", keys,
                                                   absent, fpr12));
  print(rows, n);

  for (const row& r : rows) {
    if (r.false_negatives != 0 || !r.inserted_all) {
      std::printf("FAILED: %s lost items\n", r.name.c_str());
      return 1;
    }
  }
  return 0;
}
