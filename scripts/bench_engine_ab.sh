#!/usr/bin/env bash
# This tree's engine against another version of ccf on one machine, in one short run: builds
# ccf_engine_targets from this tree and from BASE (a ccf source tree, e.g. `git archive REV`
# unpacked into a git-ignored folder such as .carry/base) alike, runs the two alternately
# CCF_RUNS times each (--sections CCF_SECTIONS, default 4, on CCF_THREADS threads), every run
# under its own time limit and nothing past CCF_DEADLINE seconds (default 400) after the start,
# and prints each figure's median and range for both. Alternating keeps a drift of the machine
# (other tenants, memory placement) from passing for a difference between the versions.
#
#   scripts/bench_engine_ab.sh BASE [OUT]        OUT defaults to ./out/ab
#
# Knobs (environment): CCF_RUNS (default 5), CCF_SECTIONS, CCF_THREADS (default: every hardware
# thread), CCF_DEADLINE, CCF_NATIVE (ON/OFF), CCF_ENGINE_ARGS (more arguments for every run,
# e.g. "--large 20" for a quick try). Packages unpacked by scripts/carry_debs.sh into .carry/ are
# used when present.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if (($# < 1)) || [[ ! -f "$1/include/ccf/ccf.hpp" ]]; then
  echo "usage: scripts/bench_engine_ab.sh BASE [OUT]  (BASE: a ccf source tree)" >&2
  exit 2
fi
base="$(cd "$1" && pwd)"
out="${2:-./out/ab}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
rm -f "$out/base.txt" "$out/this.txt"
threads="${CCF_THREADS:-$(nproc 2>/dev/null || echo 2)}"
runs="${CCF_RUNS:-5}"
sections="${CCF_SECTIONS:-4}"
read -r -a extra <<< "${CCF_ENGINE_ARGS:-}"
carry="$root/.carry"
started=$(date +%s)
deadline=$((started + ${CCF_DEADLINE:-400}))
# shellcheck source=scripts/bench_lib.sh
source "$root/scripts/bench_lib.sh"

say "build this tree and $base"
jobs=$(((threads + 1) / 2))
build_benchmarks "$root" "$root/build-ab-this" "$out/build_this.log" "$jobs" ccf_engine_targets &
this_build=$!
build_benchmarks "$base" "$root/build-ab-base" "$out/build_base.log" "$jobs" ccf_engine_targets ||
  { wait "$this_build" || true; say "the base build failed or ran past the deadline"; exit 1; }
wait "$this_build" || { say "this tree's build failed or ran past the deadline"; exit 1; }
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $threads threads"
  echo "compiler: $(${CXX:-c++} --version 2>/dev/null | head -1)"
  echo "this tree: $(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)"
  echo "base: $base"
  cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || true
} | tee "$out/run_info.txt"

for ((r = 1; r <= runs; ++r)); do
  # Odd runs start with the base, even runs with this tree.
  order=(base this)
  if ((r % 2 == 0)); then order=(this base); fi
  for v in "${order[@]}"; do
    say "$v: ccf_engine_targets --threads $threads --sections $sections ${extra[*]}, run $r of $runs"
    # One file per version, every run appended (a machine lent by the minute may bring back
    # only a few files).
    rm -f "$out/run.txt"
    run_limited 90 "$out/run.txt" "$root/build-ab-$v/bench/ccf_engine_targets" \
      --threads "$threads" --sections "$sections" "${extra[@]}"
    { echo "== run $r"; cat "$out/run.txt" 2>/dev/null || true; } >> "$out/$v.txt"
  done
done
rm -f "$out/run.txt"
for v in base this; do
  echo "== $v"
  summarize < "$out/$v.txt" | tee "$out/summary_$v.txt" || true
done
say "done"
exit "$status"
