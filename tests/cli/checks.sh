# Checks and helpers of tests/cli/run.sh, sourced by it: reporting a failed check and going on,
# running the tool with a time limit, expected errors and exit statuses, memory limits, forged
# filter files. Uses run.sh's globals: work, sections, ccf_bin.
# shellcheck shell=bash disable=SC2154
failures=0
section=setup
# fail WHAT EXPECTED GOT: reports a failed check; the test goes on.
fail() {
  failures=$((failures + 1))
  printf 'FAIL [%s] %s\n  expected: %s\n  got:      %s\n' "$section" "$1" "$2" "$3"
}
check_eq() {  # check_eq WHAT EXPECTED GOT
  [ "$2" = "$3" ] || fail "$1" "$2" "$3"
}
# check_rc WHAT EXPECTED_STATUS STATUS ERRFILE: the exit status (the error shown when it is wrong).
check_rc() {
  [ "$2" = "$3" ] || fail "$1" "exit status $2" "exit status $3: $(head -c 300 "$4" | tr '\n' '|')"
}
check_le() {  # check_le WHAT VALUE LIMIT (integers)
  [ "$2" -le "$3" ] || fail "$1" "<= $3" "$2"
}
check_ge() {  # check_ge WHAT VALUE LIMIT (integers)
  [ "$2" -ge "$3" ] || fail "$1" ">= $3" "$2"
}
check_file_has() {  # check_file_has WHAT FILE TEXT: FILE holds TEXT (a fixed string)
  grep -qF -- "$3" "$2" || fail "$1" "a line holding '$3'" "$(head -c 400 "$2")"
}
check_same_file() {  # check_same_file WHAT EXPECTED_FILE FILE
  cmp -s "$2" "$3" || fail "$1" "byte-identical to $(basename "$2")" "$(cmp "$2" "$3" 2>&1 | head -1)"
}
check_no_temp_files() {  # check_no_temp_files WHAT DIR: no .ccf-* temporary file left in DIR
  local left
  left=$(find "$2" -maxdepth 1 -name '.ccf-*' | head -3)
  [ -z "$left" ] || fail "$1: no temporary file left" "no .ccf-* in $2" "$left"
}
want() {  # want SECTION: whether the section runs
  section=$1
  [ ${#sections[@]} -eq 0 ] && return 0
  local s
  for s in "${sections[@]}"; do [ "$s" = "$1" ] && return 0; done
  return 1
}

# ccf ARGS...: the tool, never allowed to hang.
ccf() { timeout -k 5 120 "$ccf_bin" "$@"; }
lines() { wc -l < "$1" | tr -d ' '; }
# info_field FILE LABEL: the value `ccf info FILE` prints for LABEL.
info_field() { ccf info "$1" | sed -n "s/^$2  *//p"; }
# keys PREFIX FIRST LAST: keys PREFIXFIRST..PREFIXLAST, one per line.
keys() { seq "$2" "$3" | sed "s/^/$1/"; }
# count_selected FILTER KEYFILE [OPTION]: how many keys of KEYFILE the query selects.
count_selected() {
  local rc=0
  ccf query "$1" -k "$2" ${3:+"$3"} > "$work/selected" 2> "$work/selected.err" || rc=$?
  if [ "$rc" -gt 1 ]; then
    fail "query $1 -k $(basename "$2") ${3:-}: exit status" "0 or 1" "$rc: $(cat "$work/selected.err")"
  fi
  lines "$work/selected"
}
# fp_limit RATE N: a generous limit on false positives among N absent keys at RATE:
# three times the expected count, plus 5.
fp_limit() { awk -v r="$1" -v n="$2" 'BEGIN { printf "%d\n", 3 * r * n + 5 }'; }

# expect_error WHAT STATUS [TEXT...] -- COMMAND...: COMMAND (standard input /dev/null, standard
# output to $work/stdout) exits STATUS and writes one error, once, on one line: "ccf: " and a
# message holding every TEXT.
expect_error() {
  local what=$1 status=$2
  shift 2
  local texts=()
  while [ "$1" != "--" ]; do texts+=("$1"); shift; done
  shift
  local rc=0
  "$@" < /dev/null > "$work/stdout" 2> "$work/stderr" || rc=$?
  check_rc "$what" "$status" "$rc" "$work/stderr"
  check_one_error "$what" "$work/stderr"
  local t
  for t in "${texts[@]}"; do
    grep -qF -- "$t" "$work/stderr" || fail "$what: message" "holding '$t'" "$(cat "$work/stderr")"
  done
}
# check_one_error WHAT FILE: FILE is one line, "ccf: " and a message, the prefix not repeated.
check_one_error() {
  local got
  got=$(cat "$2")
  if [ "$(lines "$2")" != 1 ] || [ "$(tail -c 1 "$2" | od -An -c | tr -d ' ')" != '\n' ] ||
     [[ $got != "ccf: "* ]] || grep -q '^ccf: ccf:' "$2"; then
    fail "$1: the error is one line, 'ccf: ' and the message" "ccf: MESSAGE" "$got"
  fi
}
# expect_status WHAT STATUS COMMAND...: COMMAND (output discarded) exits STATUS.
expect_status() {
  local what=$1 status=$2 rc=0
  shift 2
  "$@" < /dev/null > "$work/stdout" 2> "$work/stderr" || rc=$?
  check_rc "$what" "$status" "$rc" "$work/stderr"
}

# with_memory_limit KB COMMAND...: COMMAND with at most KB KiB of address space (ulimit -v; KB
# "unlimited": no limit set), so that a tool that reads a whole large file into memory fails fast
# instead of taking it all.
with_memory_limit() {
  local kb=$1
  shift
  if [ "$kb" = unlimited ]; then "$@"; else (ulimit -v "$kb" && exec "$@"); fi
}
# memory_limit_works: whether the tool runs at all under a limit of 64 MiB of address space (a
# build with a sanitizer reserves far more).
memory_limit_works() { with_memory_limit 65536 "$ccf_bin" --version > /dev/null 2>&1; }
# put_u64 FILE OFFSET VALUE: writes VALUE as 8 little-endian bytes at OFFSET of FILE.
put_u64() {
  local hex bytes="" i
  hex=$(printf '%016x' "$3")
  for ((i = 14; i >= 0; i -= 2)); do bytes+="\\x${hex:i:2}"; done
  printf "$bytes" | dd of="$1" bs=1 seek="$2" conv=notrunc 2> /dev/null
}
# forge_filter OUT BUCKETS: a file whose header (that of a filter of 16-bit fingerprints x 4 slots
# in one chunk) claims BUCKETS buckets, of the size the header claims: sparse, all zeros past the
# header. Fails where the file system cannot hold a file that large.
forge_filter() {
  [ -e forge.src.ccf ] || keys forge- 1 1000 | ccf build -o forge.src.ccf --bits 16 --slots 4 -q
  head -c 80 forge.src.ccf > "$1"
  put_u64 "$1" 24 "$2"
  put_u64 "$1" 56 $(($2 + 1))  # one word per bucket, and a spare one
  truncate -s $((80 + 8 * ($2 + 1) + 16)) "$1" 2> /dev/null
}
