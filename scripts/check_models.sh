#!/usr/bin/env bash
# ccf — concurrent cuckoo filters.
# check_models.sh: exhaustive Spin verification of the models in models/:
#   lockfree_filter.pml  the lock-free filter's counter-checked lookup (no false negative);
#   read_epochs.pml      the growing filter's read epochs (no lookup reads a freed table);
#   group_sync.pml       the store's group commit (no writer's notify of the syncer is lost).
# Each check generates the verifier (spin -a), compiles it (cc -DSAFETY) and runs a full
# state-space search, then compares the error count with what the check expects:
#   pass  the correct protocol:           must report 0 errors;
#   fail  broken or over-budget variants: must report >= 1 error (proves the model can see the
#         failure it guards against).
# Exit status 0 only when every check behaved as expected.
#
# Usage: scripts/check_models.sh [--full] [--keep]
#   --full  also run the 3-bit-counter checks with foreign relocations, read epochs with 3
#           readers and 3 doublings, and group commit with 3 writers of 3 (~50 s, ~500 MB).
#   --keep  keep the work directory (pan sources, trails) and print its path.
# Environment: SPIN (default: spin), CC (default: cc). Works from any directory.
set -euo pipefail

full=0
keep=0
for arg in "$@"; do
  case "$arg" in
    --full) full=1 ;;
    --keep) keep=1 ;;
    -h | --help)
      sed -n '2,17p' "$0"
      exit 0
      ;;
    *)
      echo "check_models.sh: unknown argument '$arg'" >&2
      exit 2
      ;;
  esac
done

script_dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
models="$script_dir/../models"
spin_bin=${SPIN:-spin}
cc_bin=${CC:-cc}

if ! command -v "$spin_bin" >/dev/null 2>&1; then
  echo "check_models.sh: FAILED: spin not installed (install the 'spin' package or set SPIN)" >&2
  exit 1
fi
if ! command -v "$cc_bin" >/dev/null 2>&1; then
  echo "check_models.sh: FAILED: no C compiler '$cc_bin' (set CC)" >&2
  exit 1
fi
for model in lockfree_filter.pml read_epochs.pml group_sync.pml; do
  if [[ ! -f "$models/$model" ]]; then
    echo "check_models.sh: FAILED: model not found: $models/$model" >&2
    exit 1
  fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/ccf-models.XXXXXX")
if [[ $keep -eq 0 ]]; then
  trap 'rm -rf -- "$work"' EXIT
fi

echo "Spin: $("$spin_bin" -V 2>&1 | head -n1)"
printf '%-24s %-42s %-6s %6s %10s %6s %8s  %s\n' \
  check defines expect errors states depth time verdict

failures=0
checks=0

# run_check MODEL NAME EXPECT(pass|fail) PAN_CFLAGS DEFINES...
run_check() {
  local model=$1 name=$2 expect=$3 cflags=$4
  shift 4
  local dir="$work/$name"
  mkdir -p "$dir"
  cp "$models/$model" "$dir/"
  checks=$((checks + 1))
  local verdict errors states depth secs
  if ! (cd "$dir" && "$spin_bin" -a "$@" "$model" >spin.log 2>&1); then
    verdict="ERROR (spin -a failed, see below)"
    cat "$dir/spin.log"
    printf '%-24s %-42s %-6s %6s %10s %6s %8s  %s\n' "$name" "$*" "$expect" - - - - "$verdict"
    failures=$((failures + 1))
    return
  fi
  # shellcheck disable=SC2086
  if ! (cd "$dir" && "$cc_bin" -O1 -DSAFETY $cflags -o pan pan.c >cc.log 2>&1); then
    verdict="ERROR (pan did not compile)"
    cat "$dir/cc.log"
    printf '%-24s %-42s %-6s %6s %10s %6s %8s  %s\n' "$name" "$*" "$expect" - - - - "$verdict"
    failures=$((failures + 1))
    return
  fi
  local start end
  start=$(date +%s.%N)
  (cd "$dir" && ./pan -m1000000 >pan.log 2>&1) || true
  end=$(date +%s.%N)
  secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2fs", b - a }')
  errors=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' "$dir/pan.log" | tail -n1)
  states=$(sed -n 's/^ *\([0-9][0-9]*\) states, stored.*/\1/p' "$dir/pan.log" | tail -n1)
  depth=$(sed -n 's/.*depth reached \([0-9][0-9]*\).*/\1/p' "$dir/pan.log" | tail -n1)
  if [[ -z "$errors" ]]; then
    verdict="ERROR (no result from pan)"
    tail -n 20 "$dir/pan.log"
    failures=$((failures + 1))
  elif grep -q "search not completed\|max search depth too small" "$dir/pan.log" &&
    [[ "$errors" -eq 0 ]]; then
    verdict="ERROR (search incomplete)"
    failures=$((failures + 1))
  elif [[ "$expect" == pass && "$errors" -eq 0 ]]; then
    verdict="ok (no error)"
  elif [[ "$expect" == fail && "$errors" -ge 1 ]]; then
    verdict="ok (error found, as expected)"
  else
    verdict="UNEXPECTED"
    failures=$((failures + 1))
  fi
  printf '%-24s %-42s %-6s %6s %10s %6s %8s  %s\n' \
    "$name" "$*" "$expect" "${errors:--}" "${states:--}" "${depth:--}" "$secs" "$verdict"
}

echo "Model: models/lockfree_filter.pml (2 buckets x 2 slots, counters of CBITS bits)"
m=lockfree_filter.pml
# The protocol with 2-bit counters and fewer than 2^2 relocations: correct.
run_check $m correct pass "" -DCBITS=2 -DMAX_HOPS=3
# Without the counter check a single relocation between the two reads hides T.
run_check $m broken_no_counter_check fail "" -DNO_COUNTER_CHECK -DCBITS=2 -DMAX_HOPS=3
# Wrap-around: 2^CBITS increments of one bucket's counter between its two reads fool the check.
run_check $m wrap_2bit fail "" -DCBITS=2 -DMAX_HOPS=4
# Moves of T only: they alternate buckets, so it takes 2^CBITS + 1 of them.
run_check $m t_only_2bit_4hops pass "" -DNO_FOREIGN -DCBITS=2 -DMAX_HOPS=4
run_check $m t_only_2bit_5hops fail "" -DNO_FOREIGN -DCBITS=2 -DMAX_HOPS=5
run_check $m t_only_3bit_8hops pass "" -DNO_FOREIGN -DCBITS=3 -DMAX_HOPS=8
run_check $m t_only_3bit_9hops fail "" -DNO_FOREIGN -DCBITS=3 -DMAX_HOPS=9
if [[ $full -eq 1 ]]; then
  run_check $m correct_3bit pass "-DCOLLAPSE" -DCBITS=3 -DMAX_HOPS=7
  run_check $m wrap_3bit fail "-DCOLLAPSE" -DCBITS=3 -DMAX_HOPS=8
fi

echo "Model: models/read_epochs.pml (2 shards; READERS readers of READS lookups, GROWTHS doublings)"
m=read_epochs.pml
# The protocol: no lookup reads a table a doubling freed.
run_check $m epochs pass "" -DREADERS=2 -DREADS=2 -DGROWTHS=2
# Without enter()'s second read of the parity, a reader stalled across one synchronize() counts
# in the old parity, which the next one does not wait on: two doublings free what it reads.
run_check $m epochs_no_recheck fail "" -DNO_RECHECK -DGROWTHS=2
run_check $m epochs_no_recheck_1 pass "" -DNO_RECHECK -DGROWTHS=1
# A synchronize() that does not wait frees a table a lookup reads.
run_check $m epochs_no_wait fail "" -DNO_WAIT
if [[ $full -eq 1 ]]; then
  run_check $m epochs_3x3 pass "" -DREADERS=3 -DREADS=2 -DGROWTHS=3
fi

echo "Model: models/group_sync.pml (WRITERS writers of WRITES records, a sync every N)"
m=group_sync.pml
# The writer that reaches N takes the syncer's mutex before it notifies: no notify is lost.
run_check $m group pass "" -DWRITERS=3 -DWRITES=2 -DN=2
# Without the mutex a notify between the syncer's test and its wait is lost.
run_check $m group_no_mutex fail "" -DNO_MUTEX -DWRITERS=2 -DWRITES=2 -DN=2
if [[ $full -eq 1 ]]; then
  run_check $m group_3x3 pass "" -DWRITERS=3 -DWRITES=3 -DN=3
fi

if [[ $keep -eq 1 ]]; then
  echo "work directory kept: $work"
fi
if [[ $failures -ne 0 ]]; then
  echo "check_models.sh: FAILED: $failures of $checks checks did not behave as expected" >&2
  exit 1
fi
echo "check_models.sh: all $checks checks behaved as expected"
