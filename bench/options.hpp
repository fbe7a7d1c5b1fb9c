// ccf benchmarks — options.hpp: ccf-bench's command line.
//
// The options are declared once, as a table of (name, help, setter); the table is handed to CLI11
// when <CLI/CLI.hpp> is available and otherwise to a small built-in parser that accepts the same
// spellings (--name value, --name=value, flags), so scripts work the same on machines without
// CLI11. Lists are comma-separated strings parsed here, not by CLI11, for the same reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#if __has_include(<CLI/CLI.hpp>)
#include <CLI/CLI.hpp>
#endif

namespace ccf::bench {

struct bench_options {
  // throughput sweep
  std::vector<std::string> filters{"all"};
  std::vector<unsigned> threads{1, 2};
  unsigned log2_buckets = 20;
  std::uint64_t items = 0;  // 0: from log2_buckets and load
  double load = 0.95;
  std::vector<std::string> ops{"all"};
  std::vector<std::string> dists{"uniform", "zipf"};
  double zipf_theta = 0.99;
  std::vector<unsigned> batch{0, 1};
  std::size_t batch_size = 128;
  std::vector<unsigned> bits{16};
  std::uint64_t queries = 0;  // operations per read/mixed phase over all threads; 0: = items
  std::uint64_t seed = 42;
  std::string csv;
  unsigned repeat = 1;
  double time_budget = 0;  // seconds; 0: none
  bool pin = true;
  bool ceiling = true;
  bool quick = false;
  bool list = false;
  // evaluation experiments
  std::string experiment;
  unsigned eval_log2_buckets = 16;
  unsigned eval_seeds = 5;
  unsigned eval_min_log2_n = 10;
  unsigned eval_max_log2_n = 22;
  unsigned eval_max_trials = 64;
  std::uint64_t eval_queries = std::uint64_t{1} << 22;
  unsigned eval_threads = 0;  // 0: every allowed CPU
  // names of the options given on the command line
  std::vector<std::string> given;

  bool was_given(const std::string& name) const {
    for (const std::string& g : given) {
      if (g == name) return true;
    }
    return false;
  }
};

inline std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

inline std::vector<unsigned> split_unsigned(const std::string& text) {
  std::vector<unsigned> out;
  for (const std::string& item : split_list(text)) {
    out.push_back(static_cast<unsigned>(std::stoul(item)));
  }
  return out;
}

/// One command-line option: `flag` options take no value.
struct option_spec {
  std::string name;
  std::string help;
  bool flag = false;
  std::function<void(const std::string&)> set;
};

inline std::vector<option_spec> option_table(bench_options& o) {
  const auto u64 = [](std::uint64_t& field) {
    return [&field](const std::string& v) { field = std::stoull(v, nullptr, 0); };
  };
  const auto u32 = [](unsigned& field) {
    return [&field](const std::string& v) { field = static_cast<unsigned>(std::stoul(v)); };
  };
  return {
      {"--filter", "filters to run, comma-separated, or 'all' (see --list)", false,
       [&o](const std::string& v) { o.filters = split_list(v); }},
      {"--threads", "thread counts to sweep, e.g. 1,2,4,8,16", false,
       [&o](const std::string& v) { o.threads = split_unsigned(v); }},
      {"--log2-buckets", "table of 2^N four-slot buckets (default 20)", false, u32(o.log2_buckets)},
      {"--items", "size the table for this many keys at --load instead of --log2-buckets", false,
       u64(o.items)},
      {"--load", "fill target as a fraction of the table's slots (default 0.95)", false,
       [&o](const std::string& v) { o.load = std::stod(v); }},
      {"--ops",
       "operations: fill,lookup_hit,lookup_miss,lookup_mixed,ycsb_c,ycsb_b,ycsb_a,"
       "mix_90_5_5,erase or 'all'",
       false, [&o](const std::string& v) { o.ops = split_list(v); }},
      {"--dist", "key distributions of the read/mixed phases: uniform,zipf", false,
       [&o](const std::string& v) { o.dists = split_list(v); }},
      {"--zipf-theta", "Zipf exponent (default 0.99)", false,
       [&o](const std::string& v) { o.zipf_theta = std::stod(v); }},
      {"--batch", "0 (single-key calls), 1 (insert_many / contains_many) or 0,1", false,
       [&o](const std::string& v) { o.batch = split_unsigned(v); }},
      {"--batch-size", "keys per insert_many / contains_many call (default 128)", false,
       [&o](const std::string& v) { o.batch_size = std::stoull(v); }},
      {"--bits", "fingerprint bits of the cuckoo filters: 8,12,16 (default 16)", false,
       [&o](const std::string& v) { o.bits = split_unsigned(v); }},
      {"--queries", "operations per read or mixed phase, all threads together (default: items)",
       false, u64(o.queries)},
      {"--seed", "seed of keys and streams", false, u64(o.seed)},
      {"--csv", "append the results to this CSV file", false,
       [&o](const std::string& v) { o.csv = v; }},
      {"--repeat", "repeat every measurement N times", false, u32(o.repeat)},
      {"--time-budget", "start no new table after this many seconds (default 0: no limit)", false,
       [&o](const std::string& v) { o.time_budget = std::stod(v); }},
      {"--no-pin", "do not pin threads to CPUs", true, [&o](const std::string&) { o.pin = false; }},
      {"--no-ceiling", "skip the memory-ceiling measurement", true,
       [&o](const std::string&) { o.ceiling = false; }},
      {"--quick", "small smoke run: threads 1,2, 2^12 buckets, 2^14 queries, every filter and op",
       true, [&o](const std::string&) { o.quick = true; }},
      {"--list", "list the filters this build knows and exit", true,
       [&o](const std::string&) { o.list = true; }},
      {"--experiment",
       "evaluation experiment instead of the throughput sweep: fpr, load, fplen "
       "or all",
       false, [&o](const std::string& v) { o.experiment = v; }},
      {"--eval-log2-buckets", "table size of the fpr and load experiments (default 16)", false,
       u32(o.eval_log2_buckets)},
      {"--eval-seeds", "seeds (tables) per point of the fpr and load experiments (default 5)",
       false, u32(o.eval_seeds)},
      {"--eval-min-log2-n", "smallest table (slots) of the fplen experiment (default 10)", false,
       u32(o.eval_min_log2_n)},
      {"--eval-max-log2-n", "largest table (slots) of the fplen experiment (default 22)", false,
       u32(o.eval_max_log2_n)},
      {"--eval-max-trials", "most fills per point of the fplen experiment (default 64)", false,
       u32(o.eval_max_trials)},
      {"--eval-queries", "absent keys queried per table in the fpr experiment (default 2^22)",
       false, u64(o.eval_queries)},
      {"--eval-threads", "threads running independent experiment tables (default: all CPUs)", false,
       u32(o.eval_threads)},
  };
}

/// Parses argv into `o`. Returns -1 to go on, or the exit code to stop with (after --help or an
/// error).
inline int parse_options(int argc, char** argv, bench_options& o) {
  std::vector<option_spec> table = option_table(o);
  for (option_spec& spec : table) {
    spec.set = [&o, name = spec.name, set = std::move(spec.set)](const std::string& v) {
      set(v);
      o.given.push_back(name);
    };
  }
#if __has_include(<CLI/CLI.hpp>)
  CLI::App app{"ccf-bench: throughput of ccf's filters and baselines, and evaluation experiments"};
  for (option_spec& spec : table) {
    if (spec.flag) {
      app.add_flag_callback(
          spec.name, [&spec] { spec.set(""); }, spec.help);
    } else {
      app.add_option_function<std::string>(spec.name, spec.set, spec.help);
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cerr << "ccf-bench: bad option value: " << e.what() << "\n";
    return 2;
  }
  return -1;
#else
  const auto usage = [&table] {
    std::cout << "ccf-bench: throughput of ccf's filters and baselines, and evaluation "
                 "experiments\n\nOptions:\n  --help\n";
    for (const option_spec& spec : table) {
      std::cout << "  " << spec.name << (spec.flag ? "" : " VALUE") << "\n      " << spec.help
                << "\n";
    }
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      usage();
      return 0;
    }
    std::string value;
    bool has_value = false;
    if (const auto eq = arg.find('='); eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    option_spec* spec = nullptr;
    for (option_spec& s : table) {
      if (s.name == arg) spec = &s;
    }
    if (spec == nullptr) {
      std::cerr << "ccf-bench: unknown option " << arg << " (see --help)\n";
      return 2;
    }
    if (!spec->flag && !has_value) {
      if (i + 1 >= argc) {
        std::cerr << "ccf-bench: " << arg << " needs a value\n";
        return 2;
      }
      value = argv[++i];
    }
    try {
      spec->set(value);
    } catch (const std::exception& e) {
      std::cerr << "ccf-bench: bad value for " << arg << ": " << e.what() << "\n";
      return 2;
    }
  }
  return -1;
#endif
}

}  // namespace ccf::bench
