// ccf-bench: throughput of ccf's filters and of the exact sets a user could take instead, with a
// memory ceiling measured in the same run; and (--experiment) the evaluation experiments.
//
// One cycle = one freshly built table for (filter, fingerprint bits, threads, batch mode):
//   fill        the present keys, one slice per thread, until done or the first failed insert;
//               then every inserted key is looked up (false negatives must be 0)
//   lookup_*    read-only streams over present keys (hit), never-inserted keys (miss) or both
//   ycsb_c/b/a  100 / 95 / 50 % lookups of present keys, the rest updates (erase + re-insert of
//               the same key where erase is usable, plain re-insert otherwise)
//   mix_90_5_5  90 % lookups, 5 % inserts of fresh keys, 5 % erases of the thread's own keys;
//               afterwards every key that should be there is looked up
//   erase       every key still in the table, one list per thread
// Batch mode (insert_many / contains_many) runs only fill and the lookup_* phases. Streams are
// built before each timed phase; threads start together from a std::latch; throughput is all
// operations divided by the time of the slowest thread.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <iostream>
#include <map>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "adapters.hpp"
#include "bench_support.hpp"
#include "eval.hpp"
#include "memory_ceiling.hpp"
#include "options.hpp"
#include "report.hpp"

namespace ccf::bench {
namespace {

const std::vector<std::string> all_ops = {"fill",         "lookup_hit", "lookup_miss",
                                          "lookup_mixed", "ycsb_c",     "ycsb_b",
                                          "ycsb_a",       "mix_90_5_5", "erase"};

bool contains(const std::vector<std::string>& list, const std::string& s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

struct stream {
  std::vector<key_type> keys;
  std::vector<op_kind> kinds;
};

class sweep {
 public:
  sweep(const bench_options& o, reporter& rep)
      : o_(o), rep_(rep), ceilings_(o.pin, o.seed ^ 0xc3111e9ULL) {
    const std::uint64_t slots =
        o.items != 0 ? static_cast<std::uint64_t>(static_cast<double>(o.items) / o.load + 0.5)
                     : (std::uint64_t{4} << o.log2_buckets);
    target_slots_ = static_cast<std::size_t>(slots);
    items_ =
        o.items != 0 ? o.items : static_cast<std::uint64_t>(o.load * static_cast<double>(slots));
    queries_ = o.queries != 0 ? o.queries : items_;
    keys_.resize(items_);
    const unsigned gen_threads = std::max(1u, static_cast<unsigned>(allowed_cpus().size()));
    run_threads(gen_threads, false, [&](unsigned t) {
      const slice s = slice_of(items_, gen_threads, t);
      for (std::size_t i = s.begin; i < s.end; ++i)
        keys_[i] = key_at(present_base + i, o_.seed);
    });
  }

  int run() {
    std::vector<std::string> ops = o_.ops;
    if (contains(ops, "all")) ops = all_ops;
    for (const std::string& op : ops) {
      if (!contains(all_ops, op)) {
        std::cerr << "ccf-bench: unknown op '" << op << "'\n";
        return 2;
      }
    }
    for (const std::string& d : o_.dists) {
      if (d != "uniform" && d != "zipf") {
        std::cerr << "ccf-bench: unknown dist '" << d << "'\n";
        return 2;
      }
    }
    ops_ = ops;
    std::vector<const filter_entry*> chosen;
    for (const filter_entry& e : filter_registry()) {
      if (contains(o_.filters, "all") || contains(o_.filters, e.name)) chosen.push_back(&e);
    }
    for (const std::string& name : o_.filters) {
      const bool known = std::any_of(filter_registry().begin(), filter_registry().end(),
                                     [&](const filter_entry& e) { return e.name == name; });
      if (name != "all" && !known) {
        std::cerr << "ccf-bench: filter '" << name << "' is not in this build (see --list)\n";
      }
    }
    std::printf("# %zu target slots, %llu keys (load %.3f), %llu operations per phase\n",
                target_slots_, static_cast<unsigned long long>(items_), o_.load,
                static_cast<unsigned long long>(queries_));
    for (unsigned rep = 0; rep < o_.repeat; ++rep) {
      for (std::size_t bi = 0; bi < o_.bits.size(); ++bi) {
        const unsigned bits = o_.bits[bi];
        for (const filter_entry* e : chosen) {
          // Entries that ignore --bits run once per sweep; an entry that supports none of the
          // listed widths runs once with its fallback width.
          unsigned run_bits = bits;
          if (e->bits_independent) {
            if (bi != 0) continue;
          } else if (!supports(*e, bits)) {
            const bool any = std::any_of(o_.bits.begin(), o_.bits.end(),
                                         [&](unsigned b) { return supports(*e, b); });
            if (any || bi != 0 || e->fallback_bits == 0) continue;
            run_bits = e->fallback_bits;
          }
          for (const unsigned threads : o_.threads) {
            for (const unsigned batch : o_.batch) {
              if (!e->concurrent && threads > 1) continue;  // sequential targets: 1 thread
              if (over_budget()) {
                ++skipped_;
                continue;
              }
              run_cycle(*e, run_bits, threads, batch != 0, rep);
            }
          }
        }
      }
    }
    if (skipped_ != 0) {
      std::printf("# time budget of %g s reached: %llu tables (filter x threads x batch) not run\n",
                  o_.time_budget, static_cast<unsigned long long>(skipped_));
    }
    if (errors_ != 0) {
      std::printf(
          "# FAILED: %llu wrong answers (false negatives, failed erases or false "
          "positives of exact sets)\n",
          static_cast<unsigned long long>(errors_));
      return 1;
    }
    std::printf("# all answers correct (no false negatives)\n");
    return 0;
  }

 private:
  static bool supports(const filter_entry& e, unsigned b) {
    return e.supported_bits.empty() ||
           std::find(e.supported_bits.begin(), e.supported_bits.end(), b) != e.supported_bits.end();
  }
  bool wants(const std::string& op) const { return contains(ops_, op); }
  bool over_budget() const {
    if (o_.time_budget <= 0) return false;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    return elapsed > o_.time_budget;
  }

  const zipf_sampler& zipf_for(std::uint64_t n) {
    auto it = zipf_.find(n);
    if (it == zipf_.end()) it = zipf_.emplace(n, zipf_sampler(n, o_.zipf_theta)).first;
    return it->second;
  }

  /// Per-thread streams of queries_ / threads operations each; gen(t, rng&, stream&) appends one
  /// operation. The seeds depend on the phase number only, so every target gets the same streams.
  template <class Gen>
  std::vector<stream> make_streams(unsigned threads, std::uint64_t phase, bool with_kinds,
                                   Gen&& gen) {
    std::vector<stream> streams(threads);
    const std::uint64_t per_thread = std::max<std::uint64_t>(1, queries_ / threads);
    run_threads(threads, false, [&](unsigned t) {
      rng r(o_.seed ^ (phase * 0x100000001b3ULL) ^ (std::uint64_t{t} << 48));
      stream& s = streams[t];
      s.keys.reserve(per_thread);
      if (with_kinds) s.kinds.reserve(per_thread);
      for (std::uint64_t i = 0; i < per_thread; ++i)
        gen(t, r, s);
    });
    return streams;
  }

  /// Whether the entry's targets have insert_many / contains_many, asked of a tiny instance so
  /// that no full-size table is built only to be skipped.
  bool entry_has_batch(const filter_entry& e, unsigned bits) {
    const auto key = e.name + "/" + std::to_string(bits);
    if (auto it = has_batch_.find(key); it != has_batch_.end()) return it->second;
    build_request tiny;
    tiny.target_slots = 256;
    tiny.items = 64;
    tiny.bits = bits;
    tiny.bloom_fpr = 0.01;
    tiny.seed = o_.seed;
    bool has = false;
    try {
      if (auto probe = e.make(tiny)) has = probe->traits().has_batch;
    } catch (const std::exception&) {
      has = false;
    }
    has_batch_.emplace(key, has);
    return has;
  }

  void run_cycle(const filter_entry& e, unsigned bits, unsigned threads, bool batch, unsigned rep) {
    if (!e.concurrent && threads > 1) return;
    if (batch && !entry_has_batch(e, bits)) return;
    build_request req;
    req.target_slots = target_slots_;
    req.items = items_;
    req.bits = bits;
    req.bloom_fpr = 2.0 * 4.0 * o_.load / static_cast<double>(std::uint64_t{1} << bits);
    req.seed = o_.seed;
    req.batch_size = o_.batch_size;
    std::unique_ptr<bench_target> target;
    try {
      target = e.make(req);
    } catch (const std::exception& ex) {
      std::printf("# %s: cannot build (%s)\n", e.name.c_str(), ex.what());
      return;
    }
    if (!target) return;
    const target_traits tr = target->traits();
    if (!tr.concurrent && threads > 1) return;
    if (batch && !tr.has_batch) return;
    const bool erase_ok = tr.has_erase && (tr.concurrent_erase || threads == 1);

    result_row base;
    base.filter = e.name;
    base.bits = e.bits_independent ? 0 : bits;
    base.threads = threads;
    base.batch = batch;
    base.repeat = rep;
    const auto report = [&](result_row r) {
      r.table_bytes = target->table_bytes();
      if (o_.ceiling) {
        const auto c = ceilings_.get(r.table_bytes, threads,
                                     std::max<std::uint64_t>(queries_, std::uint64_t{1} << 21));
        if (c.fresh) report_ceiling(c, threads, rep);
        r.ceiling_mops = c.two_lines.mops();
      }
      rep_.add(r);
    };

    // ---- fill, then check that every inserted key is found ----
    std::vector<std::size_t> inserted(threads, 0);
    const double fill_s = run_threads(threads, o_.pin, [&](unsigned t) {
      const slice s = slice_of(items_, threads, t);
      inserted[t] = target->insert_range(std::span(keys_).subspan(s.begin, s.size()), batch);
    });
    // current[t]: the keys thread t knows to be in the table.
    std::vector<std::vector<key_type>> current(threads);
    for (unsigned t = 0; t < threads; ++t) {
      const slice s = slice_of(items_, threads, t);
      current[t].assign(keys_.begin() + static_cast<std::ptrdiff_t>(s.begin),
                        keys_.begin() + static_cast<std::ptrdiff_t>(s.begin + inserted[t]));
    }
    // present: every key known to be in the table (rebuilt after phases that change the set).
    std::vector<key_type> present;
    const auto gather_present = [&] {
      present.clear();
      for (const auto& c : current)
        present.insert(present.end(), c.begin(), c.end());
    };
    gather_present();
    const std::uint64_t n_filled = present.size();
    const std::size_t slots = target->table_slots();
    const double load =
        slots != 0 ? static_cast<double>(n_filled) / static_cast<double>(slots) : -1.0;
    {
      result_row r = base;
      r.op = "fill";
      r.items = n_filled;
      r.load = load;
      r.ops = n_filled;
      r.seconds = fill_s;
      r.false_negatives = count_missing(*target, current, threads, batch);
      r.failed = static_cast<std::int64_t>(items_ - n_filled);
      errors_ += static_cast<std::uint64_t>(r.false_negatives);
      if (wants("fill")) report(r);
    }
    if (n_filled == 0) return;

    std::uint64_t phase = 1;
    for (const std::string& dist : o_.dists) {
      gather_present();
      const std::uint64_t n_present = present.size();
      if (n_present == 0) break;
      // Samplers are looked up here, before the generator threads start.
      const zipf_sampler* zp = dist == "zipf" ? &zipf_for(n_present) : nullptr;
      const zipf_sampler* za = dist == "zipf" ? &zipf_for(items_) : nullptr;
      const auto pick_present = [&present, n_present, zp](rng& r) -> key_type {
        return present[zp != nullptr ? zp->item(r.unit()) : r.below(n_present)];
      };
      const auto pick_absent = [this, za](rng& r) -> key_type {
        const std::uint64_t i = za != nullptr ? za->item(r.unit()) : r.below(items_);
        return key_at(absent_base + i, o_.seed);
      };
      result_row common = base;
      common.dist = dist;
      common.items = n_present;
      common.load = slots != 0 ? static_cast<double>(n_present) / static_cast<double>(slots) : -1.0;

      // ---- read-only lookups ----
      if (wants("lookup_hit")) {
        auto streams = make_streams(threads, phase++, false, [&](unsigned, rng& r, stream& s) {
          s.keys.push_back(pick_present(r));
        });
        const auto [ops, found, secs] = timed_lookups(*target, streams, threads, batch);
        result_row r = common;
        r.op = "lookup_hit";
        r.ops = ops;
        r.seconds = secs;
        r.false_negatives = static_cast<std::int64_t>(ops - found);
        errors_ += ops - found;
        report(r);
      }
      if (wants("lookup_miss")) {
        auto streams = make_streams(threads, phase++, false, [&](unsigned, rng& r, stream& s) {
          s.keys.push_back(pick_absent(r));
        });
        const auto [ops, found, secs] = timed_lookups(*target, streams, threads, batch);
        result_row r = common;
        r.op = "lookup_miss";
        r.ops = ops;
        r.seconds = secs;
        r.fpr = static_cast<double>(found) / static_cast<double>(ops);
        if (tr.exact) errors_ += found;
        report(r);
      }
      if (wants("lookup_mixed")) {
        auto streams = make_streams(threads, phase++, true, [&](unsigned, rng& r, stream& s) {
          const bool hit = (r.next() & 1) != 0;
          s.keys.push_back(hit ? pick_present(r) : pick_absent(r));
          s.kinds.push_back(hit ? op_kind::lookup_present : op_kind::lookup_absent);
        });
        result_row r = common;
        r.op = "lookup_mixed";
        if (batch) {
          // contains_many gives a count only: the hits and misses cannot be told apart here.
          const auto [ops, found, secs] = timed_lookups(*target, streams, threads, batch);
          r.ops = ops;
          r.seconds = secs;
        } else {
          const auto m = timed_mixed(*target, streams, threads, current, r);
          r.false_negatives = static_cast<std::int64_t>(m.present_queries - m.present_found);
          r.fpr = static_cast<double>(m.absent_found) /
                  static_cast<double>(std::max<std::uint64_t>(1, m.absent_queries));
          errors_ += m.present_queries - m.present_found;
          if (tr.exact) errors_ += m.absent_found;
        }
        report(r);
      }
      if (batch) continue;

      // ---- YCSB-style read/update mixes over the present keys ----
      const op_kind update_kind = erase_ok ? op_kind::update : op_kind::reinsert;
      for (const auto& [name, read_percent] :
           {std::pair<const char*, unsigned>{"ycsb_c", 100}, {"ycsb_b", 95}, {"ycsb_a", 50}}) {
        if (!wants(name)) continue;
        const unsigned reads = read_percent;
        auto streams = make_streams(threads, phase++, true, [&](unsigned, rng& r, stream& s) {
          const bool read = r.below(100) < reads;
          s.keys.push_back(pick_present(r));
          s.kinds.push_back(read ? op_kind::lookup_present : update_kind);
        });
        result_row r = common;
        r.op = name;
        const auto m = timed_mixed(*target, streams, threads, current, r);
        if (reads == 100) {
          // Nothing changes the table: every lookup must find its key.
          r.false_negatives = static_cast<std::int64_t>(m.present_queries - m.present_found);
          errors_ += m.present_queries - m.present_found;
        }
        // With one thread nobody else can have erased the key an update erases.
        if (threads == 1) errors_ += m.erases_failed;
        report(r);
      }

      // ---- 90 % lookups, 5 % inserts of fresh keys, 5 % erases of the thread's own keys ----
      if (wants("mix_90_5_5") && erase_ok) {
        std::vector<std::size_t> erased(threads, 0);
        std::vector<std::vector<key_type>> fresh(threads);
        // Fresh keys are distinct across phases and threads: index (phase, thread, counter).
        const std::uint64_t mix_phase = phase++;
        const std::uint64_t fresh_first = fresh_base + (mix_phase << 34);
        auto streams = make_streams(threads, mix_phase, true, [&](unsigned t, rng& r, stream& s) {
          const std::uint64_t u = r.below(100);
          if (u < 5 && erased[t] < current[t].size()) {
            s.keys.push_back(current[t][erased[t]++]);
            s.kinds.push_back(op_kind::erase);
          } else if (u < 10) {
            const key_type k =
                key_at(fresh_first + (std::uint64_t{t} << 28) + fresh[t].size(), o_.seed);
            fresh[t].push_back(k);
            s.keys.push_back(k);
            s.kinds.push_back(op_kind::insert);
          } else {
            s.keys.push_back(pick_present(r));
            s.kinds.push_back(op_kind::lookup_present);
          }
        });
        result_row r = common;
        r.op = "mix_90_5_5";
        std::vector<std::vector<std::size_t>> failed(threads);
        const auto m = timed_mixed(*target, streams, threads, current, r, &failed);
        // The table now holds each thread's keys past the erased prefix and its fresh keys
        // whose insert succeeded.
        for (unsigned t = 0; t < threads; ++t) {
          std::vector<key_type> now(current[t].begin() + static_cast<std::ptrdiff_t>(erased[t]),
                                    current[t].end());
          std::vector<bool> bad(streams[t].keys.size(), false);
          for (const std::size_t i : failed[t])
            bad[i] = true;
          for (std::size_t i = 0; i < streams[t].keys.size(); ++i) {
            if (streams[t].kinds[i] == op_kind::insert && !bad[i])
              now.push_back(streams[t].keys[i]);
          }
          current[t] = std::move(now);
        }
        r.false_negatives = count_missing(*target, current, threads, false);
        r.failed = static_cast<std::int64_t>(m.inserts_failed);
        errors_ += static_cast<std::uint64_t>(r.false_negatives) + m.erases_failed;
        report(r);
      }
    }

    // ---- erase everything that is still in the table ----
    if (wants("erase") && erase_ok && !batch) {
      std::vector<std::size_t> erased(threads, 0);
      const double secs = run_threads(
          threads, o_.pin, [&](unsigned t) { erased[t] = target->erase_range(current[t]); });
      std::uint64_t total = 0;
      for (const auto& c : current)
        total += c.size();
      const std::uint64_t ok = std::accumulate(erased.begin(), erased.end(), std::uint64_t{0});
      result_row r = base;
      r.op = "erase";
      r.items = total;
      r.load = slots != 0 ? static_cast<double>(total) / static_cast<double>(slots) : -1.0;
      r.ops = total;
      r.seconds = secs;
      r.failed = static_cast<std::int64_t>(total - ok);
      errors_ += total - ok;
      report(r);
    }
  }

  struct lookup_result {
    std::uint64_t ops;
    std::uint64_t found;
    double seconds;
  };

  lookup_result timed_lookups(bench_target& target, const std::vector<stream>& streams,
                              unsigned threads, bool batch) {
    std::vector<std::size_t> found(threads, 0);
    const double secs = run_threads(threads, o_.pin, [&](unsigned t) {
      found[t] = target.lookup_range(streams[t].keys, batch);
    });
    lookup_result res{0, 0, secs};
    for (unsigned t = 0; t < threads; ++t) {
      res.ops += streams[t].keys.size();
      res.found += found[t];
    }
    return res;
  }

  /// Runs mixed streams; keys whose update failed to re-insert are dropped from `current`.
  mixed_counts timed_mixed(bench_target& target, const std::vector<stream>& streams,
                           unsigned threads, std::vector<std::vector<key_type>>& current,
                           result_row& r,
                           std::vector<std::vector<std::size_t>>* failed_out = nullptr) {
    std::vector<mixed_counts> counts(threads);
    std::vector<std::vector<std::size_t>> failed(threads);
    r.seconds = run_threads(threads, o_.pin, [&](unsigned t) {
      counts[t] = target.run_mixed(streams[t].keys, streams[t].kinds, failed[t]);
    });
    mixed_counts total;
    r.ops = 0;
    for (unsigned t = 0; t < threads; ++t) {
      total += counts[t];
      r.ops += streams[t].keys.size();
    }
    std::vector<key_type> lost;
    for (unsigned t = 0; t < threads; ++t) {
      for (const std::size_t i : failed[t]) {
        if (streams[t].kinds[i] == op_kind::update) lost.push_back(streams[t].keys[i]);
      }
    }
    if (!lost.empty()) {
      std::sort(lost.begin(), lost.end());
      for (auto& c : current) {
        std::erase_if(c,
                      [&](key_type k) { return std::binary_search(lost.begin(), lost.end(), k); });
      }
    }
    r.failed = static_cast<std::int64_t>(total.inserts_failed);
    if (failed_out != nullptr) *failed_out = std::move(failed);
    return total;
  }

  std::int64_t count_missing(const bench_target& target,
                             const std::vector<std::vector<key_type>>& lists, unsigned threads,
                             bool batch) const {
    std::vector<std::size_t> found(threads, 0);
    run_threads(threads, false,
                [&](unsigned t) { found[t] = target.lookup_range(lists[t], batch); });
    std::int64_t missing = 0;
    for (unsigned t = 0; t < threads; ++t) {
      missing += static_cast<std::int64_t>(lists[t].size() - found[t]);
    }
    return missing;
  }

  void report_ceiling(const ceiling_cache::entry& c, unsigned threads, unsigned rep) {
    for (const auto& [name, res] :
         {std::pair<const char*, const ceiling_result&>{"memory_1line", c.one_line},
          {"memory_2line", c.two_lines}}) {
      result_row r;
      r.filter = name;
      r.threads = threads;
      r.op = "random_read";
      r.table_bytes = res.bytes;
      r.ops = res.ops;
      r.seconds = res.seconds;
      r.repeat = rep;
      rep_.add(r);
    }
  }

  const bench_options& o_;
  reporter& rep_;
  ceiling_cache ceilings_;
  std::size_t target_slots_ = 0;
  std::uint64_t items_ = 0;
  std::uint64_t queries_ = 0;
  std::vector<key_type> keys_;
  std::vector<std::string> ops_;
  std::map<std::uint64_t, zipf_sampler> zipf_;
  std::map<std::string, bool> has_batch_;
  std::uint64_t errors_ = 0;
  std::uint64_t skipped_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

void apply_quick_preset(bench_options& o) {
  if (!o.quick) return;
  if (!o.was_given("--threads")) o.threads = {1, 2};
  if (!o.was_given("--log2-buckets")) o.log2_buckets = 12;
  if (!o.was_given("--queries")) o.queries = std::uint64_t{1} << 14;
  if (!o.was_given("--bits")) o.bits = {16, 12};
  if (!o.was_given("--eval-log2-buckets")) o.eval_log2_buckets = 10;
  if (!o.was_given("--eval-seeds")) o.eval_seeds = 2;
  if (!o.was_given("--eval-max-log2-n")) o.eval_max_log2_n = 14;
  if (!o.was_given("--eval-max-trials")) o.eval_max_trials = 4;
  if (!o.was_given("--eval-queries")) o.eval_queries = std::uint64_t{1} << 16;
}

int run_main(int argc, char** argv) {
  bench_options o;
  if (const int rc = parse_options(argc, argv, o); rc >= 0) return rc;
  apply_quick_preset(o);
  if (o.list) {
    for (const filter_entry& e : filter_registry()) {
      std::printf("%-14s %s%s\n", e.name.c_str(), e.description.c_str(),
                  e.concurrent ? "" : " [single thread only]");
    }
    return 0;
  }
  if (o.threads.empty() || o.repeat == 0 || o.load <= 0 || o.load > 1 || o.log2_buckets > 36 ||
      !(o.zipf_theta > 0 && o.zipf_theta < 1) ||
      std::find(o.threads.begin(), o.threads.end(), 0u) != o.threads.end()) {
    std::cerr << "ccf-bench: bad --threads, --repeat, --load, --log2-buckets or --zipf-theta\n";
    return 2;
  }
  const machine_info machine = describe_machine();
  std::printf("# ccf-bench on %s (%s, %u CPUs), %s, revision %s\n", machine.host.c_str(),
              machine.cpu_model.c_str(), machine.cores, machine.compiler.c_str(),
              machine.git_revision.c_str());
  if (!o.experiment.empty()) return run_experiment(o, machine);
  if (filter_registry().empty()) {
    std::printf("# no filters in this build\n");
    return 0;
  }
  reporter rep(machine, o.csv);
  sweep s(o, rep);
  return s.run();
}

}  // namespace
}  // namespace ccf::bench

int main(int argc, char** argv) {
  // A line at a time: a run cut short by a time limit keeps the rows it printed.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  try {
    return ccf::bench::run_main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "ccf-bench: " << e.what() << "\n";
    return 1;
  }
}
