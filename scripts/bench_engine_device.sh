#!/usr/bin/env bash
# The multicore figures of docs/benchmarks.md in one short run, for a machine lent by the minute:
# builds ccf_engine_targets and ccf_kv_bench (Release, -DCCF_NATIVE=ON), runs the engine targets
# once whole (sections 1, 2 and 5 at one thread), then sections 3 and 4 (2^26 buckets; section 4 on
# every hardware thread) CCF_RUNS times, then the store's gets on every hardware thread, and prints
# the median and range of each repeated figure. Every run has its own time limit, and nothing runs
# past CCF_DEADLINE seconds (default 400) after the start, build included.
#
#   scripts/bench_engine_device.sh [OUT]        OUT defaults to ./out/engine
#
# Knobs (environment): CCF_RUNS (default 8), CCF_DEADLINE, CCF_THREADS (default: every hardware
# thread), CCF_BUILD_DIR (default build-device), CCF_NATIVE (ON/OFF). Packages unpacked by
# scripts/carry_debs.sh into .carry/ are used when present (xxhash.h; LMDB for ccf_kv_bench).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-./out/engine}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
threads="${CCF_THREADS:-$(nproc 2>/dev/null || echo 2)}"
runs="${CCF_RUNS:-8}"
build="${CCF_BUILD_DIR:-$root/build-device}"
carry="$root/.carry"
started=$(date +%s)
deadline=$((started + ${CCF_DEADLINE:-400}))
# shellcheck source=scripts/bench_lib.sh
source "$root/scripts/bench_lib.sh"

if [[ -d "$carry/usr" ]]; then
  export LD_LIBRARY_PATH="$carry/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
say "configure and build $build"
build_benchmarks "$root" "$build" "$out/build.log" "$threads" ccf_engine_targets ccf_kv_bench ||
  { say "the build failed or ran past the deadline"; exit 1; }
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $threads threads"
  echo "compiler: $(${CXX:-c++} --version 2>/dev/null | head -1)"
  echo "revision: $(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)"
  cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || true
} | tee "$out/run_info.txt"

engine="$build/bench/ccf_engine_targets"
say "ccf_engine_targets --sections 125"
run_limited 120 "$out/engine_125.txt" "$engine" --threads "$threads" --sections 125
cat "$out/engine_125.txt" 2>/dev/null || true
for ((r = 1; r <= runs; ++r)); do
  say "ccf_engine_targets --threads $threads --sections 34, run $r of $runs"
  run_limited 60 "$out/engine_34_$r.txt" "$engine" --threads "$threads" --sections 34
done
say "ccf_kv_bench --threads $threads"
run_limited 90 "$out/kv.txt" "$build/bench/ccf_kv_bench" --threads "$threads"
cat "$out/kv.txt" 2>/dev/null || true

# Median and range of each repeated figure over the runs that printed it.
cat "$out"/engine_34_*.txt 2>/dev/null | summarize | tee "$out/summary.txt" || true
say "done"
exit "$status"
