#!/usr/bin/env bash
# ccf benchmark sweep: build (Release, -DCCF_NATIVE=ON), run ccf-bench (throughput of every filter
# and baseline over a thread sweep, with the memory ceiling), ccf_micro (Google Benchmark, large
# table) and the evaluation experiments, then draw the plots. Everything lands in one folder.
#
#   scripts/bench_device.sh [--quick] [OUT]      OUT defaults to ./out
#
# The full run is sized for a 16-core machine and must finish within 8 minutes there: every run
# has its own time limit (timeout(1); a run cut short is reported and the script goes on), the
# limits add up to under 7 minutes, and nothing runs past a deadline 7 minutes 40 seconds after the
# start (CCF_DEADLINE seconds), however long the build took: a run that would is cut short or
# skipped, and says so. --quick (what scripts/bench_quick.sh runs) uses 2 threads and small
# tables and takes well under a minute once built. At the end the script prints every figure
# docs/benchmarks.md quotes from it. Missing optional dependencies (libcuckoo, TBB, CLI11,
# gnuplot) are detected and skipped; packages unpacked by scripts/carry_debs.sh into .carry/ are
# used when present (xxhash.h is the one header ccf itself needs).
#
# Knobs (environment): CCF_BUILD_DIR, CCF_JOBS, CCF_THREADS (sweep list), CCF_LOG2_BUCKETS,
# CCF_QUERIES, CCF_BITS, CCF_SWEEP_BUDGET (seconds), CCF_MICRO_LOG2_BUCKETS, CCF_MICRO_FILTER
# (a --benchmark_filter regex; empty: all), CCF_EVAL_ARGS, CCF_NATIVE (ON/OFF), CCF_LARGE (0 skips
# the 2^26-bucket runs), CCF_LARGE_LOG2_BUCKETS, CCF_LARGE_QUERIES, CCF_LARGE_BUDGET, CCF_DEADLINE.
set -euo pipefail

quick=0
if [[ "${1:-}" == "--quick" ]]; then
  quick=1
  shift
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-./out}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cores="$(nproc 2>/dev/null || echo 2)"
jobs="${CCF_JOBS:-$cores}"
carry="$root/.carry"
started=$(date +%s)
# The full run's deadline; a quick run (whose build may include the tests) has none by default.
deadline=$((started + ${CCF_DEADLINE:-$((quick ? 86400 : 460))}))

say() { printf '[bench %4ds] %s\n' "$(($(date +%s) - started))" "$*"; }

# ---- configure and build ----
cmake_args=(-DCMAKE_BUILD_TYPE=Release "-DCCF_CARRY_DIR=$carry")
if (( quick )); then
  # A quick run reuses the developer's build folder as it is configured (tests included).
  if [[ -n "${CCF_NATIVE:-}" ]]; then cmake_args+=("-DCCF_NATIVE=$CCF_NATIVE"); fi
else
  cmake_args+=("-DCCF_NATIVE=${CCF_NATIVE:-ON}" -DCCF_BUILD_TESTS=OFF -DCCF_BUILD_TOOLS=OFF
               -DCCF_INSTALL=OFF)
fi
if [[ ! -f /usr/include/xxhash.h && ! -f /usr/local/include/xxhash.h ]]; then
  if [[ -f "$carry/usr/include/xxhash.h" ]]; then
    cmake_args+=("-DCCF_XXHASH_INCLUDE_DIR=$carry/usr/include")
  else
    echo "bench_device.sh: xxhash.h not found; install libxxhash-dev or run scripts/carry_debs.sh" >&2
    exit 1
  fi
fi
if [[ -d "$carry/usr" ]]; then
  cmake_args+=("-DCMAKE_PREFIX_PATH=$carry/usr")
fi
if (( quick )); then
  build="${CCF_BUILD_DIR:-$root/build-bench}"
else
  build="${CCF_BUILD_DIR:-$root/build-device}"
fi
say "configure $build"
cmake -S "$root" -B "$build" "${cmake_args[@]}" > "$out/cmake.log" 2>&1 ||
  { cat "$out/cmake.log" >&2; exit 1; }
grep "ccf bench:" "$out/cmake.log" | sed 's/^-- /    /' || true
say "build with $jobs jobs"
targets=(ccf-bench ccf_engine_targets)
if grep -q "building ccf_micro" "$out/cmake.log"; then targets+=(ccf_micro); fi
build_left=$((deadline - $(date +%s)))
if (( build_left < 1 )); then build_left=1; fi  # timeout 0 would mean no limit
timeout "$build_left" cmake --build "$build" --target "${targets[@]}" -j "$jobs" \
  > "$out/build.log" 2>&1 || {
  tail -50 "$out/build.log" >&2
  say "the build failed or ran past the deadline"
  exit 1
}
say "built"
bench="$build/bench/ccf-bench"
micro="$build/bench/ccf_micro"
engine_targets="$build/bench/ccf_engine_targets"

# run_limited SECONDS LOG COMMAND...: runs COMMAND with its output appended to LOG, killed after
# SECONDS (and KILLed 10 s later); a run cut short sets status and says so.
status=0
run_limited() {
  local limit=$1 log=$2
  shift 2
  local rc=0 left=$((deadline - $(date +%s) - 10))
  if (( left < 5 )); then
    say "  skipped, past the deadline: $(basename "$1") (for $log)"
    status=1
    return
  fi
  if (( limit > left )); then limit=$left; fi
  timeout -k 10 "$limit" "$@" >> "$log" 2>&1 || rc=$?
  if (( rc == 124 || rc == 137 )); then
    say "  cut short after ${limit}s: $(basename "$1") (see $log)"
    status=1
  elif (( rc != 0 )); then
    say "  failed with status $rc: $(basename "$1") (see $log)"
    status=1
  fi
}

# ---- where and what ----
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname)"
  echo "cores: $cores"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  echo "kernel: $(uname -r)"
  echo "compiler: $(${CXX:-c++} --version 2>/dev/null | head -1)"
  echo "revision: $(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)"
  echo "mode: $([[ $quick == 1 ]] && echo quick || echo full)"
  grep -E 'MemTotal|Hugepagesize' /proc/meminfo || true
  cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || true
} > "$out/run_info.txt"
"$bench" --list > "$out/filters.txt"

# ---- thread list: powers of two up to the core count, and the core count itself ----
if [[ -z "${CCF_THREADS:-}" ]]; then
  if (( quick )); then
    CCF_THREADS="1,2"
  else
    list=""
    for t in 1 2 4 8 16 32 64 128; do
      if (( t <= cores )); then list="$list${list:+,}$t"; fi
    done
    if [[ ",$list," != *",$cores,"* ]]; then list="$list,$cores"; fi
    CCF_THREADS="$list"
  fi
fi

rm -f "$out/throughput.csv" "$out/eval.csv"
if (( quick )); then
  sweep_args=(--quick --threads "$CCF_THREADS" --log2-buckets "${CCF_LOG2_BUCKETS:-12}"
              --queries "${CCF_QUERIES:-16384}")
  eval_args=(--quick)
  micro_env=(CCF_MICRO_LOG2_BUCKETS="${CCF_MICRO_LOG2_BUCKETS:-12}")
  micro_args=(--benchmark_min_time=0.01)
else
  # 16-bit tags (the lock-free filter, which has no 16-bit layout, runs with 12); the time budget
  # keeps the sweep within its share of the 8 minutes whatever the machine.
  # shellcheck disable=SC2054  # the commas are ccf-bench's list syntax
  sweep_args=(--threads "$CCF_THREADS" --log2-buckets "${CCF_LOG2_BUCKETS:-22}"
              --queries "${CCF_QUERIES:-4194304}" --bits "${CCF_BITS:-16}" --batch 0,1
              --dist uniform,zipf --time-budget "${CCF_SWEEP_BUDGET:-55}")
  # shellcheck disable=SC2206
  eval_args=(${CCF_EVAL_ARGS:---eval-log2-buckets 18 --eval-seeds 5 --eval-max-log2-n 24})
  micro_env=(CCF_MICRO_LOG2_BUCKETS="${CCF_MICRO_LOG2_BUCKETS:-26}")
  micro_args=(--benchmark_min_time=0.3)
  # One-key-at-a-time fills of the 2^26-bucket Bloom filters take most of a minute and are not
  # among the targets: left out unless CCF_MICRO_FILTER says otherwise.
  CCF_MICRO_FILTER="${CCF_MICRO_FILTER-^(cuckoo16/|bloom/(fill_batch|lookup)|blocked_bloom/(fill_batch|lookup))}"
fi
if [[ -n "${CCF_MICRO_FILTER:-}" ]]; then micro_args+=("--benchmark_filter=$CCF_MICRO_FILTER"); fi

# ---- runs ----
: > "$out/throughput.txt"
say "ccf-bench sweep (threads $CCF_THREADS)"
run_limited 70 "$out/throughput.txt" "$bench" "${sweep_args[@]}" --csv "$out/throughput.csv"
tail -3 "$out/throughput.txt"

: > "$out/engine_targets.txt"
if (( quick )); then
  say "ccf_engine_targets --quick"
  run_limited 60 "$out/engine_targets.txt" "$engine_targets" --quick --threads "$cores"
else
  say "ccf_engine_targets (threads $cores, 2^26 buckets)"
  run_limited 80 "$out/engine_targets.txt" "$engine_targets" --threads "$cores"
fi

if (( ! quick )) && [[ "${CCF_LARGE:-1}" == 1 ]]; then
  # The issue targets are stated for tables past the last-level cache: 2^26 four-slot buckets
  # (512 MiB at 16 bits). Only the contenders, at 1 and 16 threads (the scaling ratio), and the
  # lock-based baselines and libcuckoo at the full thread count.
  # shellcheck disable=SC2054  # the commas are ccf-bench's list syntax
  large=(--log2-buckets "${CCF_LARGE_LOG2_BUCKETS:-26}" --queries "${CCF_LARGE_QUERIES:-33554432}"
         --bits 16 --ops fill,lookup_mixed,mix_90_5_5 --dist uniform)
  : > "$out/throughput_large.txt"
  # The full thread count first (a one-thread fill of 2^28 slots takes most of a minute), then
  # one thread, batched first, for the scaling ratio: each with its own limit.
  say "ccf-bench large tables: striped and lockfree at $cores threads"
  run_limited 45 "$out/throughput_large.txt" "$bench" "${large[@]}" --filter striped,lockfree \
    --threads "$cores" --batch 0,1 --time-budget "${CCF_LARGE_BUDGET:-35}" \
    --csv "$out/throughput_large.csv"
  say "ccf-bench large tables: striped at 1 thread"
  run_limited 40 "$out/throughput_large.txt" "$bench" "${large[@]}" --filter striped \
    --threads 1 --batch 1,0 --time-budget 15 --csv "$out/throughput_large.csv"
  # libcuckoo and the lock-based baselines on a quarter of the table (2^24 buckets, still far
  # past the caches): a global lock inserts a few M keys/s, so a 2^26-bucket fill would take
  # minutes. libcuckoo first and alone, so that the slow baselines cannot crowd it out.
  # shellcheck disable=SC2054  # the commas are ccf-bench's list syntax
  quarter=(--log2-buckets 24 --queries 8388608 --bits 16 --ops fill,lookup_mixed,mix_90_5_5
           --dist uniform --threads "$cores" --batch 0 --csv "$out/throughput_large.csv")
  say "ccf-bench 2^24 buckets, $cores threads: libcuckoo, then global and elided_mcs"
  run_limited 25 "$out/throughput_large.txt" "$bench" "${quarter[@]}" --filter libcuckoo \
    --time-budget 15
  run_limited 45 "$out/throughput_large.txt" "$bench" "${quarter[@]}" --filter global,elided_mcs \
    --time-budget 35
  tail -3 "$out/throughput_large.txt"
fi

say "evaluation experiments"
: > "$out/eval.txt"
run_limited 30 "$out/eval.txt" "$bench" --experiment all "${eval_args[@]}" --csv "$out/eval.csv"

if [[ -x "$micro" ]]; then
  say "ccf_micro (${micro_env[*]})"
  : > "$out/micro.txt"
  run_limited 40 "$out/micro.txt" env "${micro_env[@]}" "$micro" "${micro_args[@]}" \
    --benchmark_out="$out/micro.json" --benchmark_out_format=json
  grep -E "items_per_second|ERROR" "$out/micro.txt" | sed 's/^/    /' | cut -c1-150 || true
else
  say "ccf_micro not built (no Google Benchmark): skipped"
fi

say "plots"
if command -v gnuplot > /dev/null; then
  run_limited 30 "$out/plot.log" "$root/scripts/plot.sh" "$out"  # the CSV files are complete
else
  say "no gnuplot here: draw the plots elsewhere with scripts/plot.sh $out"
fi

# ---- the figures docs/benchmarks.md quotes ----
say "figures"
cat "$out/run_info.txt"
cat "$out/engine_targets.txt"
[[ -s "$out/throughput_large.txt" ]] && cat "$out/throughput_large.txt"
say "done: results in $out (status $status)"
exit "$status"
