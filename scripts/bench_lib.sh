# shellcheck shell=bash disable=SC2034,SC2154
# Shared by scripts/bench_engine_device.sh and scripts/bench_engine_ab.sh (sourced, not run):
# timed steps under one deadline, the Release build of the engine benchmarks, and the median and
# range of repeated figures. The sourcing script sets `started` and `deadline` (seconds since the
# epoch) and `carry` (the folder scripts/carry_debs.sh fills) before it calls these.

say() { printf '[engine %4ds] %s\n' "$(($(date +%s) - started))" "$*"; }

# run_limited SECONDS LOG COMMAND...: COMMAND's output goes to LOG; it is killed after SECONDS or
# at the deadline, whichever comes first, and a run cut short or failed says so (and sets status).
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

# build_benchmarks SOURCE BUILD LOG JOBS TARGET...: a Release build (-DCCF_NATIVE, default ON) of
# the benchmark targets of the ccf tree SOURCE in BUILD, with the carried packages where the
# machine lacks them; returns non-zero (the log's tail on stderr) when it fails or runs past the
# deadline.
build_benchmarks() {
  local source=$1 build=$2 log=$3 jobs=$4
  shift 4
  local args=(-DCMAKE_BUILD_TYPE=Release "-DCCF_NATIVE=${CCF_NATIVE:-ON}" -DCCF_BUILD_TESTS=OFF
              -DCCF_BUILD_TOOLS=OFF -DCCF_INSTALL=OFF "-DCCF_CARRY_DIR=$carry")
  if [[ ! -f /usr/include/xxhash.h && -f "$carry/usr/include/xxhash.h" ]]; then
    args+=("-DCCF_XXHASH_INCLUDE_DIR=$carry/usr/include")
  fi
  if [[ -d "$carry/usr" ]]; then args+=("-DCMAKE_PREFIX_PATH=$carry/usr"); fi
  local targets=()
  for t in "$@"; do targets+=(--target "$t"); done
  { cmake -S "$source" -B "$build" "${args[@]}" &&
      timeout $((deadline - $(date +%s))) cmake --build "$build" -j "$jobs" "${targets[@]}"; } \
    > "$log" 2>&1 || { tail -30 "$log" >&2; return 1; }
}

# summarize: reads ccf_engine_targets outputs on standard input and prints, for every figure of
# sections 3 and 4, its median and range over the runs that printed it.
summarize() {
  awk '
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
    }' | sort
}
