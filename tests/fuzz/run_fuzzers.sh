#!/usr/bin/env bash
# Builds ccf's libFuzzer targets with clang (-DCCF_FUZZ=ON, ASan + UBSan) and runs each for a while
# on a copy of its seed corpus (docs/fuzzing.md).
#
#   tests/fuzz/run_fuzzers.sh [SECONDS_PER_TARGET] [TARGET...]
#
# SECONDS_PER_TARGET defaults to 60; TARGETs default to all four. The build goes to build/fuzz
# (CCF_FUZZ_BUILD overrides it); each target's corpus grows under build/fuzz/work/<target>/corpus
# and a finding is written there as crash-*, leak-*, timeout-* or oom-*, to replay with
#   ./build/fuzz/tests/<target>_replay FILE
# Exits 1 when a target found something.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${1:-60}
[ $# -gt 0 ] && shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(filter_load_fuzz runtime_ops_fuzz key_reader_fuzz kv_log_fuzz)
build=${CCF_FUZZ_BUILD:-$root/build/fuzz}
cxx=${CXX:-clang++}

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$cxx" \
  -DCCF_FUZZ=ON -DCCF_BUILD_BENCH=OFF -DCCF_BUILD_TOOLS=OFF -DCCF_INSTALL=OFF >/dev/null
for t in "${targets[@]}"; do
  replay=${t}_replay
  [ "$t" = kv_log_fuzz ] && replay=kv_log_fuzz_smoke
  cmake --build "$build" -j"$(nproc)" --target "$t" "$replay"
done

found=0
for t in "${targets[@]}"; do
  work=$build/work/$t
  mkdir -p "$work/corpus"
  if [ "$t" = kv_log_fuzz ]; then
    "$build/tests/kv_log_fuzz_smoke" --write-corpus "$work/corpus" >/dev/null
  else
    cp -n "$root/tests/fuzz/corpus/$t/"* "$work/corpus/"
  fi
  echo "== $t: ${seconds}s on $(ls "$work/corpus" | wc -l) inputs"
  if ! timeout $((seconds + 120)) "$build/tests/$t" -max_total_time="$seconds" -timeout=20 \
    -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$work/" "$work/corpus" \
    >"$work/log" 2>&1; then
    echo "$t: FOUND SOMETHING (log: $work/log)"
    ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* 2>/dev/null || true
    found=1
  fi
  grep -E "^stat::number_of_executed_units|^stat::new_units_added" "$work/log" || true
done
exit $found
