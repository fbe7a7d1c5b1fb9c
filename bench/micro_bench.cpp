// ccf_micro: single-thread Google Benchmark micro-benchmarks of ccf::cuckoo_filter<uint64_t, 16, 4>
// on a large table, next to ccf's Bloom filters built for the same false-positive rate.
//
// The table has 2^26 buckets (2^28 slots, 512 MiB) unless CCF_MICRO_LOG2_BUCKETS says otherwise;
// it is filled to 95 % of its slots. Measured, each as keys per second:
//   lookup_{hit,miss}_{single,batch}  contains() one key at a time, or contains_many() over
//                                     batches of CCF_MICRO_BATCH keys (default 128), on a stream of
//                                     2^24 present (hit) or never-inserted (miss) keys
//   fill_{single,batch}               an empty table filled to 95 % by insert() one key at a time,
//                                     or by insert_many(); table construction is not timed
// The Bloom filters run the same benchmarks with the same keys (bits chosen for the cuckoo
// filter's FPR bound 2 * 4 * 0.95 / 2^16). All keys are generated before timing.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "adapters.hpp"
#include "bench_support.hpp"

#include <ccf/bloom_filter.hpp>
#include <ccf/cuckoo_filter.hpp>

namespace ccf::bench {
namespace {

std::size_t env_size(const char* name, std::size_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  return static_cast<std::size_t>(std::strtoull(v, nullptr, 0));
}

constexpr double fill_load = 0.95;
constexpr std::uint64_t seed = 2024;
constexpr std::size_t lookup_stream = std::size_t{1} << 24;

/// Keys shared by every benchmark: built on first use.
struct workload {
  std::size_t target_slots;
  std::size_t items;
  std::size_t batch;
  std::vector<key_type> keys;    // present keys, insertion order
  std::vector<key_type> hits;    // lookup stream of present keys
  std::vector<key_type> misses;  // lookup stream of absent keys
  double cuckoo_fpr_bound;

  workload() {
    const std::size_t log2_buckets = env_size("CCF_MICRO_LOG2_BUCKETS", 26);
    target_slots = std::size_t{4} << log2_buckets;
    items = static_cast<std::size_t>(fill_load * static_cast<double>(target_slots));
    batch = std::clamp<std::size_t>(env_size("CCF_MICRO_BATCH", 128), 1, max_batch_size);
    cuckoo_fpr_bound = 2.0 * 4.0 * fill_load / 65536.0;
    keys.resize(items);
    const std::size_t n_stream = std::min(lookup_stream, items);
    hits.resize(n_stream);
    misses.resize(n_stream);
    const unsigned threads = static_cast<unsigned>(allowed_cpus().size());
    run_threads(threads, false, [&](unsigned t) {
      const slice s = slice_of(items, threads, t);
      for (std::size_t i = s.begin; i < s.end; ++i)
        keys[i] = key_at(present_base + i, seed);
      const slice q = slice_of(n_stream, threads, t);
      rng r(seed + t);
      for (std::size_t i = q.begin; i < q.end; ++i) {
        hits[i] = key_at(present_base + r.below(items), seed);
        misses[i] = key_at(absent_base + i, seed);
      }
    });
  }
};

workload& shared_workload() {
  static workload w;
  return w;
}

template <class Filter>
bool insert_one(Filter& f, key_type k) {
  if constexpr (std::is_void_v<decltype(f.insert(k))>) {
    f.insert(k);
    return true;
  } else {
    return static_cast<bool>(f.insert(k));
  }
}

/// Inserts keys one at a time (or by insert_many batches); stops at the first failure.
template <class Filter>
std::size_t fill(Filter& f, std::span<const key_type> keys, bool batched, std::size_t batch) {
  std::size_t done = 0;
  if (batched) {
    if constexpr (has_insert_many<Filter>) {
      while (done < keys.size()) {
        const std::size_t len = std::min(batch * 32, keys.size() - done);
        const std::size_t n = insert_many_count(f, keys.subspan(done, len));
        done += n;
        if (n < len) break;
      }
      return done;
    }
  }
  for (const key_type k : keys) {
    if (!insert_one(f, k)) break;
    ++done;
  }
  return done;
}

/// A filter of kind Filter, built and filled with the shared keys on first use.
template <class Filter>
struct filled_filter {
  std::function<std::unique_ptr<Filter>()> make;
  std::unique_ptr<Filter> filter;
  std::size_t inserted = 0;

  Filter& get() {
    if (!filter) {
      workload& w = shared_workload();
      filter = make();
      inserted = fill(*filter, w.keys, true, w.batch);
    }
    return *filter;
  }
};

template <class Filter>
void lookup_benchmark(benchmark::State& state, filled_filter<Filter>& source, bool hits,
                      bool batched) {
  workload& w = shared_workload();
  const Filter& f = source.get();
  const std::vector<key_type>& stream = hits ? w.hits : w.misses;
  std::array<bool, max_batch_size> found{};
  std::size_t pos = 0;
  std::uint64_t positives = 0;
  std::uint64_t done = 0;
  for (auto _ : state) {
    // One batch of keys per iteration, single-key or batched.
    if (pos + w.batch > stream.size()) pos = 0;
    const std::span<const key_type> keys(stream.data() + pos, w.batch);
    pos += w.batch;
    if constexpr (has_contains_many<Filter>) {
      if (batched) {
        positives += contains_many_count(f, keys, std::span<bool>(found.data(), keys.size()));
        done += keys.size();
        continue;
      }
    }
    for (const key_type k : keys)
      positives += f.contains(k) ? 1 : 0;
    done += keys.size();
  }
  keep(positives);
  state.SetItemsProcessed(static_cast<std::int64_t>(done));
  state.counters["positive_rate"] =
      done != 0 ? static_cast<double>(positives) / static_cast<double>(done) : 0.0;
  state.counters["inserted"] = static_cast<double>(source.inserted);
  if (hits && positives != done) {
    state.SkipWithError(
        "false negatives in the hit stream (or the fill stopped early: see inserted)");
  }
}

/// Fills a new table per iteration; the first filled table is handed to `source` (when it has
/// none yet) so that the lookup benchmarks need no extra fill of their own.
template <class Filter>
void fill_benchmark(benchmark::State& state, filled_filter<Filter>& source, bool batched) {
  workload& w = shared_workload();
  std::size_t inserted = 0;
  std::uint64_t total = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::unique_ptr<Filter> f = source.make();
    state.ResumeTiming();
    inserted = fill(*f, w.keys, batched, w.batch);
    state.PauseTiming();
    total += inserted;
    if (!source.filter) {
      source.filter = std::move(f);
      source.inserted = inserted;
    }
    f.reset();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(total));
  state.counters["inserted"] = static_cast<double>(inserted);
  state.counters["target"] = static_cast<double>(w.items);
}

template <class Filter>
void register_family(const std::string& name, std::function<std::unique_ptr<Filter>()> make) {
  static std::vector<std::unique_ptr<filled_filter<Filter>>> holders;
  holders.push_back(std::make_unique<filled_filter<Filter>>());
  filled_filter<Filter>* holder = holders.back().get();
  holder->make = std::move(make);
  for (const bool batched : {true, false}) {
    if (batched && !has_contains_many<Filter>) continue;
    const std::string mode = batched ? "batch" : "single";
    benchmark::RegisterBenchmark(
        (name + "/fill_" + mode).c_str(),
        [holder, batched](benchmark::State& s) { fill_benchmark<Filter>(s, *holder, batched); })
        ->Iterations(1)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    for (const bool hits : {true, false}) {
      benchmark::RegisterBenchmark((name + "/lookup_" + (hits ? "hit_" : "miss_") + mode).c_str(),
                                   [holder, hits, batched](benchmark::State& s) {
                                     lookup_benchmark(s, *holder, hits, batched);
                                   })
          ->UseRealTime();
    }
  }
}

void register_all() {
  using cuckoo = ccf::cuckoo_filter<key_type, 16, 4>;
  register_family<cuckoo>(
      "cuckoo16", [] { return make_with_slots<cuckoo>(shared_workload().target_slots, seed); });
  register_family<ccf::bloom_filter<key_type>>("bloom", [] {
    const workload& w = shared_workload();
    return std::make_unique<ccf::bloom_filter<key_type>>(w.items, w.cuckoo_fpr_bound);
  });
  register_family<ccf::blocked_bloom_filter<key_type>>("blocked_bloom", [] {
    const workload& w = shared_workload();
    return std::make_unique<ccf::blocked_bloom_filter<key_type>>(w.items, w.cuckoo_fpr_bound);
  });
}

}  // namespace
}  // namespace ccf::bench

int main(int argc, char** argv) {
  ccf::bench::register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
