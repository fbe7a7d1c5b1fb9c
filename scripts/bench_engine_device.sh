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
say() { printf '[engine %4ds] %s\n' "$(($(date +%s) - started))" "$*"; }

# run_limited SECONDS LOG COMMAND...: COMMAND's output goes to LOG; it is killed after SECONDS or
# at the deadline, whichever comes first, and a run cut short or failed says so.
status=0
run_limited() {
  local limit=$1 log=$2 rc=0
  shift 2
  local left=$((deadline - $(date +%s) - 5))
  if ((left < 5)); then
    say "  skipped, past the deadline: $*"
    status=1
    return
  fi
  if ((limit > left)); then limit=$left; fi
  timeout -k 5 "$limit" "$@" > "$log" 2>&1 || rc=$?
  if ((rc == 124 || rc == 137)); then
    say "  cut short after ${limit}s: $* (see $log)"
    status=1
  elif ((rc != 0)); then
    say "  failed with status $rc: $* (see $log)"
    status=1
  fi
}

cmake_args=(-DCMAKE_BUILD_TYPE=Release "-DCCF_NATIVE=${CCF_NATIVE:-ON}" -DCCF_BUILD_TESTS=OFF
            -DCCF_BUILD_TOOLS=OFF -DCCF_INSTALL=OFF "-DCCF_CARRY_DIR=$carry")
if [[ ! -f /usr/include/xxhash.h && -f "$carry/usr/include/xxhash.h" ]]; then
  cmake_args+=("-DCCF_XXHASH_INCLUDE_DIR=$carry/usr/include")
fi
if [[ -d "$carry/usr" ]]; then
  cmake_args+=("-DCMAKE_PREFIX_PATH=$carry/usr")
  export LD_LIBRARY_PATH="$carry/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
say "configure and build $build"
cmake -S "$root" -B "$build" "${cmake_args[@]}" > "$out/cmake.log" 2>&1 ||
  { tail -30 "$out/cmake.log" >&2; exit 1; }
timeout $((deadline - $(date +%s))) cmake --build "$build" -j "$threads" \
  --target ccf_engine_targets ccf_kv_bench > "$out/build.log" 2>&1 ||
  { tail -30 "$out/build.log" >&2; say "the build failed or ran past the deadline"; exit 1; }
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
cat "$out/engine_125.txt"
for ((r = 1; r <= runs; ++r)); do
  say "ccf_engine_targets --threads $threads --sections 34, run $r of $runs"
  run_limited 60 "$out/engine_34_$r.txt" "$engine" --threads "$threads" --sections 34
done
say "ccf_kv_bench --threads $threads"
run_limited 90 "$out/kv.txt" "$build/bench/ccf_kv_bench" --threads "$threads"
cat "$out/kv.txt"

# Median and range of each repeated figure over the runs that printed it.
cat "$out"/engine_34_*.txt 2>/dev/null | awk '
  /^3\. batched fill/ { v["batched fill, one thread"] = v["batched fill, one thread"] " " $(NF-5) }
  /^   [a-z]/ {
    name = ""
    for (i = 1; i <= NF && $i !~ /^[0-9.]+$/; ++i) name = name (name == "" ? "" : " ") $i
    if (i <= NF) v[name] = v[name] " " $i
  }
  END {
    for (k in v) {
      n = split(substr(v[k], 2), x, " ")
      for (i = 1; i <= n; ++i) for (j = i + 1; j <= n; ++j) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
      med = n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2
      printf "%-28s median %8.2f  range %.2f-%.2f  (%d runs)\n", k, med, x[1], x[n], n
    }
  }' | sort | tee "$out/summary.txt"
say "done"
exit "$status"
