// ccf benchmarks — eval.hpp: the evaluation experiments of ccf-bench (--experiment), which measure
// properties that do not depend on timing: false-positive rate and bits per item against
// fingerprint length and bucket size (fpr), the load a table reaches before its first failed
// insert (load), and, as a function of table size and fingerprint length, the probability that
// filling a table to 90 % fails and the load it reaches (fplen).
#pragma once

#include "bench_support.hpp"
#include "options.hpp"

namespace ccf::bench {

/// Runs o.experiment ("fpr", "load", "fplen" or "all"); returns the process exit code.
int run_experiment(const bench_options& o, const machine_info& machine);

}  // namespace ccf::bench
