// ccf benchmarks — eval_experiments.cpp: ccf-bench --experiment fpr | load | fplen | all.
//
// This translation unit holds the fifteen cuckoo_filter<uint64_t, F, B> instantiations (F in
// {4, 8, 12, 16, 32}, B in {2, 4, 8}) the experiments need, behind one small virtual interface
// (eval_table), so the rest of ccf-bench compiles without them. Nothing here is timed: each table
// is an independent job, and jobs run on all CPUs.
//
//   fpr    for every (F, B) and seed: fill a table of 2^L buckets one key at a time until the
//          first failed insert, then query absent keys; report load, bits per item and the
//          measured FPR next to the bound 2*B*alpha/2^F. Bloom filters built for a range of target
//          FPRs give the comparison line of the space-efficiency plot.
//   load   the same fills without queries: the load reached, per seed.
//   fplen  for tables of 2^k slots, F in {4, 8, 12, 16} and B in {2, 4, 8}: each trial fills a
//          table to its first failed insert; reported are the fraction of trials that failed
//          before 90 % of the slots (80 % for B = 2) and the mean and lowest load reached.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

#include "adapters.hpp"
#include "eval.hpp"
#include "report.hpp"

#include <ccf/bloom_filter.hpp>
#include <ccf/cuckoo_filter.hpp>

namespace ccf::bench {
namespace {

class eval_table {
 public:
  virtual ~eval_table() = default;
  virtual bool insert(key_type k) = 0;
  virtual bool contains(key_type k) const = 0;
  virtual std::size_t slots() const = 0;  // 0 for Bloom filters
  virtual std::size_t buckets() const = 0;
  virtual std::size_t bytes() const = 0;
};

template <class Filter>
bool insert_into(Filter& f, key_type k) {
  if constexpr (std::is_void_v<decltype(f.insert(k))>) {
    f.insert(k);
    return true;
  } else {
    return static_cast<bool>(f.insert(k));
  }
}

using table_factory = std::unique_ptr<eval_table> (*)(std::size_t target_slots, std::uint64_t seed);

struct factory_entry {
  unsigned bits;
  unsigned slots;
  table_factory make;
};

template <unsigned F, unsigned B>
class cuckoo_table final : public eval_table {
 public:
  cuckoo_table(std::size_t target_slots, std::uint64_t seed)
      : f_(make_with_slots<ccf::cuckoo_filter<key_type, F, B>>(target_slots, seed)) {}
  bool insert(key_type k) override { return f_->insert(k); }
  bool contains(key_type k) const override { return f_->contains(k); }
  std::size_t slots() const override { return f_->size_in_tags(); }
  std::size_t buckets() const override { return f_->num_buckets(); }
  std::size_t bytes() const override { return f_->size_in_bytes(); }

 private:
  std::unique_ptr<ccf::cuckoo_filter<key_type, F, B>> f_;
};

template <unsigned F, unsigned B>
std::unique_ptr<eval_table> make_cuckoo(std::size_t target_slots, std::uint64_t seed) {
  return std::make_unique<cuckoo_table<F, B>>(target_slots, seed);
}

const std::vector<factory_entry>& cuckoo_factories() {
  static const std::vector<factory_entry> table = {
      {4, 2, &make_cuckoo<4, 2>},   {4, 4, &make_cuckoo<4, 4>},   {4, 8, &make_cuckoo<4, 8>},
      {8, 2, &make_cuckoo<8, 2>},   {8, 4, &make_cuckoo<8, 4>},   {8, 8, &make_cuckoo<8, 8>},
      {12, 2, &make_cuckoo<12, 2>}, {12, 4, &make_cuckoo<12, 4>}, {12, 8, &make_cuckoo<12, 8>},
      {16, 2, &make_cuckoo<16, 2>}, {16, 4, &make_cuckoo<16, 4>}, {16, 8, &make_cuckoo<16, 8>},
      {32, 2, &make_cuckoo<32, 2>}, {32, 4, &make_cuckoo<32, 4>}, {32, 8, &make_cuckoo<32, 8>},
  };
  return table;
}

table_factory find_factory(unsigned bits, unsigned slots) {
  for (const factory_entry& e : cuckoo_factories()) {
    if (e.bits == bits && e.slots == slots) return e.make;
  }
  return nullptr;
}

template <class Bloom>
class bloom_table final : public eval_table {
 public:
  bloom_table(std::size_t items, double fpr) : f_(items, fpr) {}
  bool insert(key_type k) override { return insert_into(f_, k); }
  bool contains(key_type k) const override { return f_.contains(k); }
  std::size_t slots() const override { return 0; }
  std::size_t buckets() const override { return 0; }
  std::size_t bytes() const override { return f_.size_in_bytes(); }

 private:
  Bloom f_;
};

struct bloom_kind {
  const char* name;
  std::function<std::unique_ptr<eval_table>(std::size_t, double)> make;
};

std::vector<bloom_kind> bloom_kinds() {
  std::vector<bloom_kind> kinds;
  kinds.push_back({"bloom", [](std::size_t n, double fpr) -> std::unique_ptr<eval_table> {
                     return std::make_unique<bloom_table<ccf::bloom_filter<key_type>>>(n, fpr);
                   }});
  kinds.push_back({"blocked_bloom", [](std::size_t n, double fpr) -> std::unique_ptr<eval_table> {
                     return std::make_unique<bloom_table<ccf::blocked_bloom_filter<key_type>>>(n,
                                                                                               fpr);
                   }});
  return kinds;
}

// ---- results ----

struct eval_row {
  std::string experiment;
  std::string filter = "cuckoo";
  unsigned bits = 0;
  unsigned slots_per_bucket = 0;
  std::uint64_t seed = 0;
  unsigned log2_n = 0;
  std::uint64_t buckets = 0;
  std::uint64_t table_bytes = 0;
  std::uint64_t items = 0;
  double load = -1;
  double bits_per_item = -1;
  std::uint64_t queries = 0;
  std::uint64_t false_positives = 0;
  double fpr = -1;
  double fpr_bound = -1;     // 2 * b * alpha / 2^f (the thesis's bound at the load reached)
  double fpr_expected = -1;  // 1 - (1 - 1/(2^f - 1))^(2 * b * alpha): ccf's tags are non-zero
  double target_fpr = -1;    // Bloom filters: the FPR they were built for
  unsigned trials = 0;
  unsigned failures = 0;
  double p_fail = -1;
  double fill_target = -1;  // fplen: the load a fill has to reach not to count as failed
  double min_load = -1;     // fplen: lowest load reached over the trials (load is the mean)
  double collision_expectation =
      -1;  // thesis eq. 1.19 with 2^f - 1 tags: C(n, 2b+1) (2/((2^f-1)m))^2b
};

std::string opt(double v, int digits) {
  return v >= 0 ? fixed(v, digits) : std::string();
}
std::string opt_sci(double v) {
  return v >= 0 ? scientific(v) : std::string();
}

class eval_writer {
 public:
  static constexpr const char* header =
      "experiment,host,cpu,compiler,git_revision,filter,bits,slots_per_bucket,seed,log2_n,"
      "buckets,table_bytes,items,load,bits_per_item,queries,false_positives,fpr,fpr_bound,"
      "fpr_expected,target_fpr,trials,failures,p_fail,fill_target,min_load,collision_expectation";

  eval_writer(const machine_info& m, const std::string& path) : m_(m) {
    if (path.empty()) return;
    std::error_code ec;
    const bool fresh =
        !std::filesystem::exists(path, ec) || std::filesystem::file_size(path, ec) == 0;
    out_.open(path, std::ios::app);
    if (!out_) throw std::runtime_error("ccf-bench: cannot open " + path);
    if (fresh) out_ << header << "\n";
  }

  void add(const eval_row& r) {
    if (!out_.is_open()) return;
    out_ << r.experiment << ',' << csv_field(m_.host) << ',' << csv_field(m_.cpu_model) << ','
         << csv_field(m_.compiler) << ',' << csv_field(m_.git_revision) << ',' << r.filter << ','
         << r.bits << ',' << r.slots_per_bucket << ',' << r.seed << ',' << r.log2_n << ','
         << r.buckets << ',' << r.table_bytes << ',' << r.items << ',' << opt(r.load, 5) << ','
         << opt(r.bits_per_item, 4) << ',' << r.queries << ',' << r.false_positives << ','
         << opt_sci(r.fpr) << ',' << opt_sci(r.fpr_bound) << ',' << opt_sci(r.fpr_expected) << ','
         << opt_sci(r.target_fpr) << ',' << r.trials << ',' << r.failures << ',' << opt(r.p_fail, 4)
         << ',' << opt(r.fill_target, 3) << ',' << opt(r.min_load, 5) << ','
         << opt_sci(r.collision_expectation) << "\n";
    out_.flush();
  }

 private:
  machine_info m_;
  std::ofstream out_;
};

/// Runs every job on `threads` threads (jobs are independent tables) and returns the rows in job
/// order.
std::vector<eval_row> run_jobs(const std::vector<std::function<eval_row()>>& jobs,
                               unsigned threads) {
  std::vector<eval_row> rows(jobs.size());
  std::atomic<std::size_t> next{0};
  run_threads(std::max(1u, threads), false, [&](unsigned) {
    for (std::size_t i = next.fetch_add(1); i < jobs.size(); i = next.fetch_add(1)) {
      rows[i] = jobs[i]();
    }
  });
  return rows;
}

/// Inserts present keys of `seed` one at a time until `limit` are in or one fails.
std::uint64_t fill(eval_table& t, std::uint64_t seed, std::uint64_t limit) {
  std::uint64_t n = 0;
  while (n < limit && t.insert(key_at(present_base + n, seed)))
    ++n;
  return n;
}

std::uint64_t count_false_positives(const eval_table& t, std::uint64_t seed,
                                    std::uint64_t queries) {
  std::uint64_t fp = 0;
  for (std::uint64_t q = 0; q < queries; ++q) {
    fp += t.contains(key_at(absent_base + q, seed)) ? 1 : 0;
  }
  return fp;
}

std::uint64_t seed_of(const bench_options& o, unsigned i) {
  return ccf::mix64(o.seed + 0x1000 + i);
}

double theory_bound(unsigned f, unsigned b, double load) {
  return 2.0 * b * load / std::ldexp(1.0, static_cast<int>(f));
}
double theory_expected(unsigned f, unsigned b, double load) {
  const double p = 1.0 / (std::ldexp(1.0, static_cast<int>(f)) - 1.0);
  return -std::expm1(2.0 * b * load * std::log1p(-p));
}

const std::vector<unsigned> all_bits = {4, 8, 12, 16, 32};
const std::vector<unsigned> all_slots = {2, 4, 8};

std::vector<eval_row> fpr_experiment(const bench_options& o, bool with_queries) {
  std::vector<std::function<eval_row()>> jobs;
  const std::string name = with_queries ? "fpr" : "load";
  const unsigned seeds = with_queries ? o.eval_seeds : 2 * o.eval_seeds;
  for (const unsigned b : all_slots) {
    for (const unsigned f : all_bits) {
      const table_factory make = find_factory(f, b);
      if (make == nullptr) continue;
      for (unsigned s = 0; s < seeds; ++s) {
        jobs.push_back([&o, make, f, b, s, name, with_queries] {
          const std::uint64_t seed = seed_of(o, s);
          auto t = make(std::size_t{b} << o.eval_log2_buckets, seed);
          eval_row r;
          r.experiment = name;
          r.bits = f;
          r.slots_per_bucket = b;
          r.seed = s;
          r.buckets = t->buckets();
          r.table_bytes = t->bytes();
          r.items = fill(*t, seed, t->slots() + 1);
          r.load = static_cast<double>(r.items) / static_cast<double>(t->slots());
          r.bits_per_item = 8.0 * static_cast<double>(r.table_bytes) / static_cast<double>(r.items);
          if (with_queries) {
            r.queries = o.eval_queries;
            r.false_positives = count_false_positives(*t, seed, r.queries);
            r.fpr = static_cast<double>(r.false_positives) / static_cast<double>(r.queries);
            r.fpr_bound = theory_bound(f, b, r.load);
            r.fpr_expected = theory_expected(f, b, r.load);
          }
          return r;
        });
      }
    }
  }
  if (with_queries) {
    // Bloom filters holding as many keys as a 4-slot table at 95 %, for a range of target FPRs.
    const std::uint64_t n = static_cast<std::uint64_t>(0.95 * (4u << o.eval_log2_buckets));
    for (const bloom_kind& kind : bloom_kinds()) {
      for (const double eps : {1e-1, 3e-2, 1e-2, 3e-3, 1e-3, 3e-4, 1e-4, 3e-5, 1e-5, 3e-6, 1e-6}) {
        jobs.push_back([&o, kind, eps, n] {
          const std::uint64_t seed = seed_of(o, 0);
          auto t = kind.make(n, eps);
          eval_row r;
          r.experiment = "fpr";
          r.filter = kind.name;
          r.target_fpr = eps;
          r.table_bytes = t->bytes();
          r.items = fill(*t, seed, n);
          r.bits_per_item = 8.0 * static_cast<double>(r.table_bytes) / static_cast<double>(r.items);
          r.queries = o.eval_queries;
          r.false_positives = count_false_positives(*t, seed, r.queries);
          r.fpr = static_cast<double>(r.false_positives) / static_cast<double>(r.queries);
          return r;
        });
      }
    }
  }
  const unsigned threads =
      o.eval_threads != 0 ? o.eval_threads : static_cast<unsigned>(allowed_cpus().size());
  return run_jobs(jobs, threads);
}

/// log of C(n, k) * (2 / ((2^f - 1) m))^(k - 1) with k = 2b + 1 (thesis eq. 1.19).
double collision_expectation(double n, unsigned b, unsigned f, double m) {
  const double k = 2.0 * b + 1.0;
  if (n < k) return 0.0;
  const double log_binom = std::lgamma(n + 1) - std::lgamma(k + 1) - std::lgamma(n - k + 1);
  const double log_p = (k - 1) * std::log(2.0 / ((std::ldexp(1.0, static_cast<int>(f)) - 1) * m));
  return std::exp(log_binom + log_p);
}

/// The load a fill must reach in the fplen experiment: 90 % for 4- and 8-slot buckets, 80 % for
/// 2-slot buckets (whose tables top out below 90 %).
double fplen_target(unsigned slots) {
  return slots <= 2 ? 0.8 : 0.9;
}

std::vector<eval_row> fplen_experiment(const bench_options& o) {
  struct trial_result {
    bool failed = false;
    double load = 0;
    std::uint64_t buckets = 0;
    std::uint64_t slots = 0;
    std::uint64_t bytes = 0;
  };
  struct point {
    unsigned f;
    unsigned b;
    unsigned k;
    unsigned trials;
    table_factory make;
  };
  std::vector<point> points;
  for (const unsigned b : {2u, 4u, 8u}) {
    for (const unsigned f : {4u, 8u, 12u, 16u}) {
      const table_factory make = find_factory(f, b);
      if (make == nullptr) continue;
      for (unsigned k = o.eval_min_log2_n; k <= o.eval_max_log2_n; ++k) {
        const unsigned by_size = k >= 24 ? 1u : (1u << (24 - k));
        const unsigned trials =
            std::clamp(by_size, std::min(4u, o.eval_max_trials), std::max(1u, o.eval_max_trials));
        points.push_back({f, b, k, trials, make});
      }
    }
  }
  // One job per trial, the largest tables first so that the threads finish together.
  std::vector<std::pair<std::size_t, unsigned>> order;
  for (std::size_t p = 0; p < points.size(); ++p) {
    for (unsigned t = 0; t < points[p].trials; ++t)
      order.emplace_back(p, t);
  }
  std::stable_sort(order.begin(), order.end(), [&](const auto& x, const auto& y) {
    return points[x.first].k > points[y.first].k;
  });
  std::vector<trial_result> results(order.size());
  std::atomic<std::size_t> next{0};
  const unsigned threads =
      o.eval_threads != 0 ? o.eval_threads : static_cast<unsigned>(allowed_cpus().size());
  run_threads(std::max(1u, threads), false, [&](unsigned) {
    for (std::size_t i = next.fetch_add(1); i < order.size(); i = next.fetch_add(1)) {
      const point& p = points[order[i].first];
      const std::uint64_t seed = seed_of(o, 1000 + order[i].second) ^ (std::uint64_t{p.k} << 56);
      auto t = p.make(std::size_t{1} << p.k, seed);
      // Fill to the first failure: the load reached says more than the pass / fail bit alone.
      const std::uint64_t n = fill(*t, seed, t->slots() + 1);
      const double target = fplen_target(p.b) * static_cast<double>(t->slots());
      results[i] = {static_cast<double>(n) < target,
                    static_cast<double>(n) / static_cast<double>(t->slots()), t->buckets(),
                    t->slots(), t->bytes()};
    }
  });
  std::vector<eval_row> rows;
  for (std::size_t p = 0; p < points.size(); ++p) {
    eval_row r;
    r.experiment = "fplen";
    r.bits = points[p].f;
    r.slots_per_bucket = points[p].b;
    r.log2_n = points[p].k;
    r.trials = points[p].trials;
    r.fill_target = fplen_target(points[p].b);
    double load_sum = 0;
    for (std::size_t i = 0; i < order.size(); ++i) {
      if (order[i].first != p) continue;
      r.buckets = results[i].buckets;
      r.table_bytes = results[i].bytes;
      r.items = static_cast<std::uint64_t>(r.fill_target * static_cast<double>(results[i].slots));
      if (results[i].failed) ++r.failures;
      load_sum += results[i].load;
      if (r.min_load < 0 || results[i].load < r.min_load) r.min_load = results[i].load;
    }
    r.load = load_sum / r.trials;
    r.p_fail = static_cast<double>(r.failures) / r.trials;
    r.collision_expectation = collision_expectation(
        static_cast<double>(r.items), r.slots_per_bucket, r.bits, static_cast<double>(r.buckets));
    rows.push_back(r);
  }
  return rows;
}

void print_rows(const std::string& experiment, const std::vector<eval_row>& rows) {
  if (experiment == "fplen") {
    std::printf("%-6s %4s %2s %6s %6s %7s %8s %8s %8s %10s\n", "exp", "bits", "b", "log2n",
                "trials", "target", "p_fail", "load", "min_load", "E[coll]");
    for (const eval_row& r : rows) {
      std::printf("%-6s %4u %2u %6u %6u %7.2f %8.3f %8.4f %8.4f %10s\n", r.experiment.c_str(),
                  r.bits, r.slots_per_bucket, r.log2_n, r.trials, r.fill_target, r.p_fail, r.load,
                  r.min_load, scientific(r.collision_expectation).c_str());
    }
    return;
  }
  std::printf("%-6s %-14s %4s %2s %4s %10s %7s %8s %10s %10s %10s\n", "exp", "filter", "bits", "b",
              "seed", "items", "load", "bits/it", "FPR", "2ba/2^f", "target");
  for (const eval_row& r : rows) {
    std::printf("%-6s %-14s %4u %2u %4llu %10llu %7s %8.3f %10s %10s %10s\n", r.experiment.c_str(),
                r.filter.c_str(), r.bits, r.slots_per_bucket,
                static_cast<unsigned long long>(r.seed), static_cast<unsigned long long>(r.items),
                opt(r.load, 4).c_str(), r.bits_per_item, opt_sci(r.fpr).c_str(),
                opt_sci(r.fpr_bound).c_str(), opt_sci(r.target_fpr).c_str());
  }
}

}  // namespace

int run_experiment(const bench_options& o, const machine_info& machine) {
  if (cuckoo_factories().empty()) {
    std::printf("# the experiments need <ccf/cuckoo_filter.hpp>, which this build lacks\n");
    return 0;
  }
  std::vector<std::string> names;
  if (o.experiment == "all") {
    names = {"fpr", "load", "fplen"};
  } else if (o.experiment == "fpr" || o.experiment == "load" || o.experiment == "fplen") {
    names = {o.experiment};
  } else {
    std::cerr << "ccf-bench: unknown experiment '" << o.experiment << "'\n";
    return 2;
  }
  eval_writer writer(machine, o.csv);
  for (const std::string& name : names) {
    std::vector<eval_row> rows = name == "fpr"    ? fpr_experiment(o, true)
                                 : name == "load" ? fpr_experiment(o, false)
                                                  : fplen_experiment(o);
    print_rows(name, rows);
    for (const eval_row& r : rows)
      writer.add(r);
  }
  return 0;
}

}  // namespace ccf::bench
