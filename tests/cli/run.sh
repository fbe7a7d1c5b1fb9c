#!/usr/bin/env bash
# End-to-end test of the `ccf` command (docs/cli.md is the manual it checks):
#
#   bash tests/cli/run.sh PATH/TO/ccf [SECTION...]
#
# Sections (all by default): basics build change grow concurrent query streaming progress errors.
# Every check that fails is reported (what was expected, what came) and the test goes on; it exits
# 1 at the end if any failed. `ccf db` has its own test (tests/cli/db_run.sh). The checks are in
# tests/cli/checks.sh, the errors section in tests/cli/errors.sh (both sourced).
#
# Environment (tests/cli.cmake sets smaller values for sanitizer builds):
#   CCF_CLI_GROW_KEYS    keys added to the growing filter (default 200000)
#   CCF_CLI_STREAM_KEYS  keys piped through the query whose memory is measured (default 3000000)
#   CCF_CLI_MAX_RSS_KB   the most that query may hold, peak RSS in KiB (default 65536)
#   CCF_CLI_PROC_RSS=1   measure the peak RSS from /proc/PID/status even if GNU time is installed
set -Eeuo pipefail
export LC_ALL=C
unset CCF_PROGRESS

[ $# -ge 1 ] || { echo "usage: $0 PATH/TO/ccf [SECTION...]" >&2; exit 2; }
ccf_bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
[ -x "$ccf_bin" ] || { echo "not an executable: $ccf_bin" >&2; exit 2; }
sections=("$@")
source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

grow_keys=${CCF_CLI_GROW_KEYS:-200000}
stream_keys=${CCF_CLI_STREAM_KEYS:-3000000}
max_rss_kb=${CCF_CLI_MAX_RSS_KB:-65536}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'echo "cli: unexpected failure at line $LINENO: $BASH_COMMAND" >&2' ERR
cd "$work"
exec < /dev/null  # no command may wait for a terminal
started=$SECONDS

# shellcheck source=checks.sh
source "$source_dir/tests/cli/checks.sh"

# Shared inputs: N keys in a filter, keys never added, a static filter of them.
n=50000
keys key- 1 "$n" > keys.txt
keys absent- 1 100000 > absent.txt
ccf build -k keys.txt -o static.ccf -q

# ---------------------------------------------------------------------------------------------
if want basics; then
  version=$(sed -n 's/.*version_string = "\([^"]*\)".*/\1/p' "$source_dir/include/ccf/version.hpp" \
              2> /dev/null || true)
  rc=0
  ccf --version > out 2> err || rc=$?
  check_eq "--version: exit status" 0 "$rc"
  if [ -n "$version" ]; then
    check_eq "--version prints the version of include/ccf/version.hpp" "ccf $version" "$(cat out)"
  else
    grep -qE '^ccf [0-9]+\.[0-9]+\.[0-9]+$' out || fail "--version" "ccf X.Y.Z" "$(cat out)"
  fi
  for args in "--help" "build --help" "add --help" "remove --help" "query --help" "info --help"; do
    rc=0
    # shellcheck disable=SC2086  # the words of $args are the arguments
    ccf $args > out 2> err || rc=$?
    check_eq "ccf $args: exit status" 0 "$rc"
    [ -s out ] || fail "ccf $args: prints the usage" "text on standard output" "nothing"
  done
  expect_status "no subcommand" 1 ccf
  expect_status "unknown subcommand" 1 ccf frobnicate
  # An unknown subcommand is named as such (the message was "A subcommand is required").
  expect_error "unknown subcommand: the message" 1 "unknown subcommand 'frobnicate'" -- \
    ccf frobnicate
  expect_error "unknown db subcommand: the message" 1 "unknown subcommand 'frobnicate'" -- \
    ccf db frobnicate
  # An unknown option is named, even when a required argument is missing too (the message was
  # "--out is required", "filter is required", "db is required").
  expect_error "unknown option and no --out" 1 "not expected: --frob" -- ccf build --frob
  expect_error "unknown option and no filter" 2 "not expected: --frob" -- ccf query --frob
  expect_error "unknown option and no db" 1 "not expected: --frob" -- ccf db get --frob
  expect_error "missing --out alone" 1 "--out is required" -- ccf build -k keys.txt
fi

# ---------------------------------------------------------------------------------------------
if want build; then
  # From -k FILE: every key is present, absent keys mostly are not; info describes the filter.
  ccf build -k keys.txt -o a.ccf 2> err
  check_eq "build -k: one summary line on standard error" 1 "$(lines err)"
  ccf info a.ccf > info.out
  for label in "filter" "fingerprint bits" "slots per bucket" "buckets" "chunks" "items" \
               "capacity" "load factor" "bytes" "bits per item" "expected FPR" "seed"; do
    grep -q "^$label  *[^ ]" info.out || fail "info of a static file: $label" "a '$label' line" "$(cat info.out)"
  done
  check_eq "info of a static file" "static" "$(info_field a.ccf filter)"
  check_eq "build: default layout (bits)" 16 "$(info_field a.ccf 'fingerprint bits')"
  check_eq "build: default layout (slots)" 4 "$(info_field a.ccf 'slots per bucket')"
  check_eq "build -k: items" "$n" "$(info_field a.ccf items)"
  check_eq "build -k: no false negatives (query -v of the built keys)" 0 "$(count_selected a.ccf keys.txt -v)"
  check_eq "build -k: query selects every built key" "$n" "$(count_selected a.ccf keys.txt)"
  rate=$(info_field a.ccf 'expected FPR')
  check_le "build -k: false positives among 100000 absent keys (expected FPR $rate)" \
    "$(count_selected a.ccf absent.txt)" "$(fp_limit "$rate" 100000)"
  check_no_temp_files "build" "$work"
  # An empty filter (--capacity, no keys) has no bits per item to show.
  ccf build -o empty.ccf --capacity 100 -q < /dev/null
  check_eq "info of an empty filter: bits per item" "-" "$(info_field empty.ccf 'bits per item')"

  # From standard input, without -k and with -k -.
  ccf build -o stdin.ccf -q < keys.txt
  check_eq "build from standard input (no -k): items" "$n" "$(info_field stdin.ccf items)"
  check_eq "build from standard input: no false negatives" 0 "$(count_selected stdin.ccf keys.txt -v)"
  ccf build -k - -o dash.ccf -q < keys.txt
  check_eq "build -k -: items" "$n" "$(info_field dash.ccf items)"
  # build takes no keys on its command line (synopsis: [-k FILE|-] only).
  expect_status "build with KEY arguments (a usage error)" 1 ccf build -o args.ccf key-1 key-2
  [ ! -e args.ccf ] || fail "build with KEY arguments" "no file written" "args.ccf exists"

  # CRLF line ends, empty lines, a last key without a newline, repeats stored once.
  printf 'one\r\ntwo\r\n\r\n\n\nthree\r\none\none\r\ntwo\nfour' > crlf.txt
  ccf build -k crlf.txt -o crlf.ccf 2> err
  check_eq "build: CRLF, empty lines and repeats: items (one two three four)" 4 "$(info_field crlf.ccf items)"
  check_file_has "build: summary counts keys and distinct keys" err "7 keys (4 distinct)"
  rc=0
  ccf query crlf.ccf --all one two three four > out || rc=$?
  check_eq "build: CRLF keys are stored without the CR" $'1\tone\n1\ttwo\n1\tthree\n1\tfour' "$(cat out)"
  printf 'one\r\ntwo\r\n' | ccf query crlf.ccf > out || true
  check_eq "query: CRLF input, the CR is not part of the key" $'one\ntwo' "$(cat out)"

  # --fpr picks the layout: 0.0001 -> 16-bit fingerprints in 2-slot buckets (about 19.2 bits/key).
  ccf build -k keys.txt -o fpr.ccf --fpr 0.0001 -q
  check_eq "build --fpr 0.0001: fingerprint bits" 16 "$(info_field fpr.ccf 'fingerprint bits')"
  check_eq "build --fpr 0.0001: slots per bucket" 2 "$(info_field fpr.ccf 'slots per bucket')"
  bpi=$(info_field fpr.ccf 'bits per item')
  awk -v b="$bpi" 'BEGIN { exit !(b > 16 && b < 20) }' || fail "build --fpr 0.0001: bits per item" "about 19.2" "$bpi"
  check_eq "build --fpr: no false negatives" 0 "$(count_selected fpr.ccf keys.txt -v)"
  check_le "build --fpr 0.0001: false positives among 100000 absent keys" \
    "$(count_selected fpr.ccf absent.txt)" "$(fp_limit 0.0001 100000)"

  # --bits/--slots, --seed, --threads.
  ccf build -k keys.txt -o b8.ccf --bits 8 --slots 2 --seed 42 --threads 2 -q
  check_eq "build --bits 8: fingerprint bits" 8 "$(info_field b8.ccf 'fingerprint bits')"
  check_eq "build --slots 2: slots per bucket" 2 "$(info_field b8.ccf 'slots per bucket')"
  check_eq "build --seed 42: seed" 42 "$(info_field b8.ccf seed)"
  check_eq "build --bits 8 --slots 2: no false negatives" 0 "$(count_selected b8.ccf keys.txt -v)"
  rate=$(info_field b8.ccf 'expected FPR')
  check_le "build --bits 8 --slots 2: false positives among 100000 absent keys (expected FPR $rate)" \
    "$(count_selected b8.ccf absent.txt)" "$(fp_limit "$rate" 100000)"
  ccf build -k keys.txt -o t1.ccf --bits 12 --slots 8 --threads 1 -q
  check_eq "build --threads 1 --bits 12 --slots 8: no false negatives" 0 "$(count_selected t1.ccf keys.txt -v)"
  expect_error "build --bits 7" 1 "7" -- ccf build -k keys.txt -o bad.ccf --bits 7
  # A leading 0 is not octal (--bits 010 built 8-bit fingerprints): refused, as for --capacity.
  for option in --bits --slots --threads; do
    expect_error "build $option 010 (not octal)" 1 "$option" "'010'" -- \
      ccf build -k keys.txt -o bad.ccf "$option" 010
  done
  ccf build -k keys.txt -o hex.ccf --bits 0x8 --slots 0x2 -q
  check_eq "build --bits 0x8: fingerprint bits" 8 "$(info_field hex.ccf 'fingerprint bits')"
  expect_status "build --slots 3" 1 ccf build -k keys.txt -o bad.ccf --slots 3
  expect_status "build --fpr with --bits" 1 ccf build -k keys.txt -o bad.ccf --fpr 0.01 --bits 8
  expect_status "build --fpr 2 (not a rate)" 1 ccf build -k keys.txt -o bad.ccf --fpr 2
  # Not a decimal number as a whole, as for the integer options: space around it, junk after it.
  for rate in ' 0.001' '0.001 ' 0.001x 0x1p-10 nan inf ''; do
    expect_status "build --fpr '$rate' (not a decimal rate)" 1 \
      ccf build -k keys.txt -o bad.ccf --fpr "$rate"
  done
  # A rate out of range: the message gives the bounds --help shows (1e-09 to 0.5).
  for rate in 1e-10 0.6; do
    expect_error "build --fpr $rate (out of range)" 1 "--fpr" "$rate" "1e-09" "0.5" -- \
      ccf build -k keys.txt -o bad.ccf --fpr "$rate"
  done
  # A growing filter keeps its rate for 16 doublings, which it cannot below about 3.2e-8.
  expect_error "build --grow --fpr 1e-9" 1 "growing filter" "at best" -- \
    ccf build -k keys.txt -o bad.ccf --grow --fpr 1e-9
  # A capacity past the machine's memory is a bad value, refused before anything is allocated;
  # memory refused while the tool runs is an error, exit 2.
  expect_error "build --capacity 10^13" 1 "more than this machine's" -- \
    ccf build -k keys.txt -o bad.ccf --capacity 10000000000000
  if memory_limit_works; then
    expect_error "build --capacity 10^9 within 64 MiB of memory" 2 "out of memory" -- \
      with_memory_limit 65536 "$ccf_bin" build -k keys.txt -o bad.ccf --capacity 1000000000
  fi
  expect_status "build without -o" 1 ccf build -k keys.txt
  expect_status "build with an unknown option" 1 ccf build -k keys.txt -o bad.ccf --frobnicate
  [ ! -e bad.ccf ] || fail "build usage errors" "no file written" "bad.ccf exists"

  # -o - writes the filter to standard output; it loads.
  ccf build -k keys.txt -o - > stdout.ccf 2> err
  check_eq "build -o -: items of the file written to standard output" "$n" "$(info_field stdout.ccf items)"
  check_eq "build -o -: no false negatives" 0 "$(count_selected stdout.ccf keys.txt -v)"
  [ ! -e ./- ] || fail "build -o -" "no file named '-'" "a file named '-'"
  check_eq "build -o -: the summary on standard error only" 1 "$(lines err)"
  ccf build -k keys.txt -o q.ccf -q 2> err
  check_eq "build -q: nothing on standard error" "" "$(cat err)"

  # --capacity too small: exit 3, no file, no temporary file, an existing target unchanged.
  expect_error "build --capacity too small" 3 "full" -- ccf build -k keys.txt -o small.ccf --capacity 1000
  [ ! -e small.ccf ] || fail "build --capacity too small" "no file written" "small.ccf exists"
  check_no_temp_files "build --capacity too small" "$work"
  cp static.ccf keep.ccf
  expect_error "build --capacity too small over an existing file" 3 "full" -- \
    ccf build -k keys.txt -o keep.ccf --capacity 10
  check_same_file "build --capacity too small: the existing target is unchanged" static.ccf keep.ccf
  check_no_temp_files "build --capacity too small over an existing file" "$work"
  # --capacity with room.
  ccf build -k keys.txt -o room.ccf --capacity 60000 -q
  check_eq "build --capacity 60000: items" "$n" "$(info_field room.ccf items)"
  check_ge "build --capacity 60000: capacity" "$(info_field room.ccf capacity)" 60000
fi

# ---------------------------------------------------------------------------------------------
if want change; then
  # A static filter with room: add in place, then remove.
  ccf build -k keys.txt -o ch.ccf --capacity 60000 -q
  keys new- 1 5000 > new.txt
  ccf add ch.ccf -k new.txt 2> err
  check_eq "add: one summary line" 1 "$(lines err)"
  check_eq "add: items" $((n + 5000)) "$(info_field ch.ccf items)"
  check_eq "add: the added keys are present" 0 "$(count_selected ch.ccf new.txt -v)"
  check_eq "add: the built keys are still present" 0 "$(count_selected ch.ccf keys.txt -v)"
  check_no_temp_files "add" "$work"
  # Keys on the command line, then those of -k; repeats within one add stored once.
  printf 'file-1\nfile-2\nfile-1\n' > more.txt
  ccf add -q ch.ccf arg-1 arg-2 arg-1 -k more.txt
  check_eq "add KEY... -k FILE: command-line keys and file keys, each stored once" \
    $((n + 5004)) "$(info_field ch.ccf items)"
  rc=0
  ccf query ch.ccf arg-1 arg-2 file-1 file-2 > out || rc=$?
  check_eq "add KEY... -k FILE: all present" $'arg-1\narg-2\nfile-1\nfile-2' "$(cat out)"
  printf 'in-1\nin-2\n' | ccf add -q ch.ccf 2> err
  check_eq "add -q: nothing on standard error" "" "$(cat err)"
  printf 'in-3\n' | ccf add -q ch.ccf -k -
  check_eq "add from standard input (no keys, -k -)" $((n + 5007)) "$(info_field ch.ccf items)"

  # Remove the first 5000 built keys: they are mostly absent, all others present.
  keys key- 1 5000 > gone.txt
  keys key- 5001 "$n" > kept.txt
  ccf remove ch.ccf -k gone.txt 2> err
  check_file_has "remove: summary" err "removed 5000 keys (0 not in the filter)"
  check_eq "remove: items" $((n + 7)) "$(info_field ch.ccf items)"
  rate=$(info_field ch.ccf 'expected FPR')
  check_le "remove: removed keys still answered present (expected FPR $rate)" \
    "$(count_selected ch.ccf gone.txt)" "$(fp_limit "$rate" 5000)"
  check_eq "remove: the other built keys are all present" 0 "$(count_selected ch.ccf kept.txt -v)"
  check_eq "remove: the added keys are all present" 0 "$(count_selected ch.ccf new.txt -v)"
  check_no_temp_files "remove" "$work"

  # Adding a key twice (two commands) stores it twice; two removes take it out.
  items=$(info_field ch.ccf items)
  ccf add -q ch.ccf twice
  ccf add -q ch.ccf twice
  check_eq "add twice: items" $((items + 2)) "$(info_field ch.ccf items)"
  ccf remove -q ch.ccf twice
  check_eq "added twice, removed once: items" $((items + 1)) "$(info_field ch.ccf items)"
  expect_status "added twice, removed once: still present" 0 ccf query ch.ccf twice
  ccf remove ch.ccf twice 2> err
  check_file_has "added twice, removed twice" err "removed 1 keys (0 not in the filter)"
  check_eq "added twice, removed twice: items" "$items" "$(info_field ch.ccf items)"

  # remove reports the keys that were not in the filter.
  cp ch.ccf notin.ccf
  keys never- 1 100 > never.txt
  ccf remove notin.ccf -k never.txt new-1 new-2 2> err
  not_in=$(sed -n 's/.*(\([0-9]*\) not in the filter).*/\1/p' err)
  removed=$(sed -n 's/.*removed \([0-9]*\) keys.*/\1/p' err)
  [ -n "$not_in" ] && [ "$not_in" -ge 95 ] && [ "$not_in" -le 100 ] ||
    fail "remove of 100 keys never added and 2 added ones: 'N not in the filter'" "95 to 100" "$(cat err)"
  [ -n "$removed" ] && [ "$removed" -ge 2 ] && [ "$removed" -le 7 ] ||
    fail "remove of 100 keys never added and 2 added ones: 'removed N keys'" "2 to 7" "$(cat err)"

  # A static filter that cannot take the keys: exit 3, file unchanged, no temporary file.
  cp static.ccf full.ccf
  cp static.ccf full.orig
  expect_error "add to a full static filter" 3 "full" -- ccf add full.ccf -k new.txt
  check_same_file "add to a full static filter: file unchanged" full.orig full.ccf
  check_no_temp_files "add to a full static filter" "$work"
  # remove changes nothing when its filter cannot be read; add through a symlink is refused.
  expect_error "add to a missing filter" 2 "missing.ccf" "No such file or directory" -- \
    ccf add missing.ccf k
  [ ! -e missing.ccf ] || fail "add to a missing filter" "no file created" "missing.ccf exists"
  cp static.ccf target.ccf
  ln -s target.ccf link.ccf
  expect_error "add through a symbolic link" 2 "link.ccf" -- ccf add link.ccf new-1
  # ... before any key is read (it read them all, then refused): keys from a FIFO that no one
  # writes would wait.
  mkfifo unwritten.fifo
  expect_error "add through a symbolic link, keys waiting" 2 "link.ccf" -- \
    timeout -k 5 20 "$ccf_bin" add link.ccf -k unwritten.fifo
  if [ "$(id -u)" != 0 ]; then
    cp static.ccf ro.ccf
    chmod 444 ro.ccf
    expect_error "add to a read-only filter, keys waiting" 2 "ro.ccf" "Permission denied" -- \
      timeout -k 5 20 "$ccf_bin" add ro.ccf -k unwritten.fifo
  fi
  # A directory that cannot take the output is found before any key is read as well (it was
  # found when the filter was written, after the whole input).
  expect_error "build -o into a missing directory, keys waiting" 2 \
    "cannot create a file next to 'no-such-dir/x.ccf'" "No such file or directory" -- \
    timeout -k 5 20 "$ccf_bin" build -k unwritten.fifo -o no-such-dir/x.ccf
  if [ "$(id -u)" != 0 ]; then
    mkdir ro-dir
    chmod 555 ro-dir
    expect_error "build -o into a read-only directory, keys waiting" 2 "ro-dir/x.ccf" \
      "Permission denied" -- timeout -k 5 20 "$ccf_bin" build -k unwritten.fifo -o ro-dir/x.ccf
  fi
  [ -L link.ccf ] || fail "add through a symbolic link" "link.ccf still a symbolic link" "$(ls -l link.ccf)"
  check_same_file "add through a symbolic link: the target is unchanged" static.ccf target.ccf
  expect_status "add without a filter (usage error)" 1 ccf add
  expect_status "remove with an unknown option" 1 ccf remove ch.ccf --frobnicate k

  # Copies of one key crowd its two buckets: a static filter far from full refuses the ninth copy,
  # and says why (it advised a larger --capacity, which cannot help).
  keys dup- 1 1000 | ccf build -o dup.ccf --capacity 100000 -q
  for _ in 1 2 3 4 5 6 7 8; do ccf add -q dup.ccf dup; done
  cp dup.ccf dup.orig
  expect_error "add of a ninth copy of a key" 3 "at most 2 x 4 = 8 times" "it is unchanged" -- \
    ccf add dup.ccf dup
  if grep -q -- "--capacity" stderr; then
    fail "add of a ninth copy of a key: no advice to raise --capacity" "no '--capacity'" "$(cat stderr)"
  fi
  check_same_file "add of a ninth copy of a key: the file unchanged" dup.orig dup.ccf
  # In a table of 10 buckets (capacity 1) this key's two buckets are one: its fifth copy is
  # refused, and the message gives that limit too.
  echo samekey | ccf build -q -o same.ccf --capacity 1
  for _ in 1 2 3; do ccf add -q same.ccf samekey; done
  expect_error "add of a fifth copy of a key whose two buckets are one" 3 \
    "at most 2 x 4 = 8 times (4 for the rare key whose two buckets are one)" -- ccf add same.ccf samekey

  # add and remove read the filter from the file once, checked against its header: a filter of
  # S bytes takes about S bytes of memory (it took 2.6 S: the file read whole, then a copy).
  if memory_limit_works; then
    ccf build -k keys.txt -o mem.ccf --capacity 20000000 -q
    size_kb=$(($(stat -c %s mem.ccf) / 1024))
    limit_kb=$((size_kb * 3 / 2 + 24576))
    for cmd in add remove; do
      expect_status "$cmd of one key, a filter of $size_kb KiB, within $limit_kb KiB of memory" 0 \
        with_memory_limit "$limit_kb" "$ccf_bin" "$cmd" -q mem.ccf key-1
    done
    check_eq "add and remove within a memory limit: items" "$n" "$(info_field mem.ccf items)"
    rm -f mem.ccf
  fi

  # A filter changed in place keeps its mode (it became 0644 whatever it was).
  chmod 600 ch.ccf
  ccf add -q ch.ccf mode-key
  check_eq "add keeps the file's mode" 600 "$(stat -c %a ch.ccf)"
  chmod 640 ch.ccf
  ccf remove -q ch.ccf mode-key
  check_eq "remove keeps the file's mode" 640 "$(stat -c %a ch.ccf)"

  # build -o over a filter takes the lock that add and remove take: while one holds it, build
  # waits, and its filter is not then replaced by the one the add read before (a lost build).
  cp static.ccf held.ccf
  echo rebuilt-key > rebuilt.txt
  exec 8< held.ccf
  flock -x 8
  timeout -k 5 60 "$ccf_bin" build -k rebuilt.txt -o held.ccf 8<&- 2> held.err &
  builder=$!
  sleep 1
  check_same_file "build -o a filter being changed: it waits for the lock" static.ccf held.ccf
  kill -0 "$builder" 2> /dev/null ||
    fail "build -o a filter being changed: it waits for the lock" "still running" "it ended"
  exec 8<&-
  rc=0
  wait "$builder" || rc=$?
  check_eq "build -o a filter being changed: exit status" 0 "$rc"
  check_eq "build -o a filter being changed: its filter" rebuilt-key "$(ccf query held.ccf rebuilt-key)"
  check_file_has "build -o a filter being changed: it says it waits" held.err \
    "waiting for the lock on 'held.ccf'"
  # The lock is the build's courtesy: a filter it may write but not read is replaced all the same.
  if [ "$(id -u)" != 0 ]; then
    cp static.ccf wo.ccf
    chmod 200 wo.ccf
    rc=0
    ccf build -k rebuilt.txt -o wo.ccf -q 2> err || rc=$?
    check_rc "build -o a filter it may write but not read" 0 "$rc" err
  fi
  # No temporary file while the keys are read (one that a kill -9 or the OOM killer would leave
  # behind, and that a listing of the directory piped to build would read as a key).
  mkfifo slow.fifo
  { echo slow-1; sleep 1; echo slow-2; } > slow.fifo &
  feeder=$!
  timeout -k 5 60 "$ccf_bin" build -k slow.fifo -o slow.ccf -q &
  builder=$!
  sleep 0.5
  check_no_temp_files "build while its keys are read" "$work"
  rc=0
  wait "$builder" || rc=$?
  wait "$feeder" || true
  check_eq "build from a slow FIFO: exit status" 0 "$rc"

  # SIGTERM while the filter is written removes the temporary file (it stayed, hundreds of MB):
  # the signal is sent as soon as the temporary file appears.
  mkdir sig
  echo key > sig-keys.txt
  "$ccf_bin" build -k sig-keys.txt -o sig/big.ccf --capacity 50000000 -q 2> /dev/null &
  writer=$!
  for _ in $(seq 1 3000); do
    if compgen -G "sig/.ccf-*" > /dev/null; then
      kill -TERM "$writer" 2> /dev/null || true
      break
    fi
    sleep 0.01
  done
  wait "$writer" || true
  check_no_temp_files "build killed by SIGTERM while writing" "$work/sig"
fi

# ---------------------------------------------------------------------------------------------
if want grow; then
  # A growing filter from few keys, then $grow_keys more in four `ccf add` runs.
  keys seed- 1 100 > few.txt
  ccf build -k few.txt -o grow.ccf --grow --capacity 1000 2> err
  check_file_has "build --grow: summary says growing" err "growing"
  ccf info grow.ccf > info.out
  check_eq "info of a growing file" "growing" "$(info_field grow.ccf filter)"
  grep -q '^filter            growing$' info.out || fail "info of a growing file" "filter            growing" "$(head -1 info.out)"
  for label in "doublings" "FPR bound" "capacity" "items"; do
    grep -q "^$label  *[^ ]" info.out || fail "info of a growing file: $label" "a '$label' line" "$(cat info.out)"
  done
  check_eq "build --grow --capacity 1000 from 100 keys: doublings" 0 "$(info_field grow.ccf doublings)"
  check_ge "build --grow --capacity 1000: capacity" "$(info_field grow.ccf capacity)" 1000
  quarter=$((grow_keys / 4))
  for i in 0 1 2 3; do
    keys grown- $((i * quarter + 1)) $(((i + 1) * quarter)) > "grow$i.txt"
    rc=0
    ccf add -q grow.ccf -k "grow$i.txt" 2> err || rc=$?
    check_rc "add $quarter keys to a growing filter (run $((i + 1)) of 4)" 0 "$rc" err
  done
  cat grow0.txt grow1.txt grow2.txt grow3.txt > grown.txt
  check_eq "growing filter: items" $((100 + 4 * quarter)) "$(info_field grow.ccf items)"
  doublings=$(info_field grow.ccf doublings)
  check_ge "growing filter: doublings after $((4 * quarter)) adds" "$doublings" 1
  check_eq "growing filter: info still says growing" "growing" "$(info_field grow.ccf filter)"
  check_eq "growing filter: no false negatives among the added keys" 0 "$(count_selected grow.ccf grown.txt -v)"
  check_eq "growing filter: no false negatives among the first keys" 0 "$(count_selected grow.ccf few.txt -v)"
  bound=$(info_field grow.ccf 'FPR bound')
  fp=$(count_selected grow.ccf absent.txt)
  limit=$(awk -v b="$bound" 'BEGIN { printf "%d\n", 2 * b * 100000 + 5 }')
  check_le "growing filter: false positives among 100000 absent keys (FPR bound $bound)" "$fp" "$limit"
  # --fpr is the growing filter's target (default 0.001): its bound meets it.
  awk -v b="$bound" 'BEGIN { exit !(b > 0 && b <= 0.001) }' || fail "growing filter: FPR bound" "<= 0.001" "$bound"
  ccf build -k few.txt -o grow4.ccf --grow --fpr 0.0001 -q
  bound=$(info_field grow4.ccf 'FPR bound')
  awk -v b="$bound" 'BEGIN { exit !(b > 0 && b <= 0.0001) }' || fail "build --grow --fpr 0.0001: FPR bound" "<= 0.0001" "$bound"
  # Remove from a growing filter.
  ccf remove grow.ccf -k grow0.txt 2> err
  check_file_has "remove from a growing filter" err "removed $quarter keys (0 not in the filter)"
  cat grow1.txt grow2.txt grow3.txt > grow123.txt
  check_eq "remove from a growing filter: the other keys are all present" 0 \
    "$(count_selected grow.ccf grow123.txt -v)"
  # Keys in one run, from a one-key filter: they went in by increasing hash, which fills a
  # growing filter one chunk at a time, and the first full chunk refused keys ("took 126445 of
  # 1000000" at a million).
  printf 'one\n' > one.txt
  ccf build -q -k one.txt -o tiny.ccf --grow
  keys batch- 1 1000000 > batch.txt
  rc=0
  ccf add -q tiny.ccf -k batch.txt 2> err || rc=$?
  check_rc "add 1000000 keys in one run to a one-key growing filter" 0 "$rc" err
  check_eq "one run of adds: no false negatives" 0 "$(count_selected tiny.ccf batch.txt -v)"
  rc=0
  ccf build -q -k batch.txt -o tiny.ccf --grow --capacity 100 --threads 1 2> err || rc=$?
  check_rc "build --grow --capacity 100 from 1000000 keys, one thread" 0 "$rc" err
  check_eq "build --grow from a small capacity: no false negatives" 0 \
    "$(count_selected tiny.ccf batch.txt -v)"
  # Copies of one key: the ninth is refused, and the message says why (copies crowd a key's
  # buckets; a growing filter has no limit on its doublings).
  ccf build -q -k few.txt -o copies.ccf --grow
  for i in 1 2 3 4 5 6 7 8; do
    rc=0
    ccf add -q copies.ccf same-key 2> err || rc=$?
    check_rc "add one key to a growing filter (copy $i)" 0 "$rc" err
  done
  cp copies.ccf copies.orig
  expect_error "add a ninth copy of a key to a growing filter" 3 "full" "ninth copy" -- \
    ccf add copies.ccf same-key
  if grep -q "doubled" stderr; then
    fail "add a ninth copy: the message" "no refusal by doublings" "$(cat stderr)"
  fi
  check_same_file "add a ninth copy: the filter unchanged" copies.orig copies.ccf
  # N keys fit a growing filter built for N (it doubled at the N-th: twice the memory).
  keys cap- 1 5000 > cap.txt
  ccf build -q -k cap.txt -o cap.ccf --grow
  check_eq "build --grow from 5000 keys: doublings" 0 "$(info_field cap.ccf doublings)"
  check_no_temp_files "growing filter" "$work"
fi

# ---------------------------------------------------------------------------------------------
if want concurrent; then
  # Four `ccf add` processes at once on one growing filter, three runs each, distinct keys;
  # meanwhile `ccf info` reads the file again and again and always sees a whole filter.
  keys conc- 1 10 | ccf build -o conc.ccf --grow --capacity 1000 -q
  per_run=5000
  pids=()
  # Meanwhile a fifth process removes the ten first keys.
  ( sleep 0.1; keys conc- 1 10 | ccf remove -q conc.ccf ) &
  pids+=($!)
  for p in 1 2 3 4; do
    (
      for r in 1 2 3; do
        keys "p$p-r$r-" 1 "$per_run" | ccf add -q conc.ccf || exit 1
      done
    ) &
    pids+=($!)
  done
  (
    bad=0
    while [ ! -e conc.done ] && [ "$bad" = 0 ]; do
      ccf info conc.ccf > /dev/null 2> reader.err || bad=1
    done
    exit "$bad"
  ) &
  reader=$!
  for pid in "${pids[@]}"; do
    rc=0
    wait "$pid" || rc=$?
    check_eq "concurrent add process: exit status" 0 "$rc"
  done
  touch conc.done
  rc=0
  wait "$reader" || rc=$?
  check_rc "ccf info while adds run: every read sees a whole filter" 0 "$rc" reader.err
  for p in 1 2 3 4; do for r in 1 2 3; do keys "p$p-r$r-" 1 "$per_run"; done; done > conc.txt
  check_eq "concurrent adds: every key of every process is present" 0 "$(count_selected conc.ccf conc.txt -v)"
  check_eq "concurrent adds and a remove: items" $((12 * per_run)) "$(info_field conc.ccf items)"
  check_no_temp_files "concurrent adds" "$work"

  # 250 single-key adds queued behind a held lock: each commit replaces the file the others
  # wait on, so the last waiter locks up to 250 files in turn. Every add takes effect (past 100
  # tries, some gave up: "keeps being replaced"), and each says once that it waits.
  echo queue-seed | ccf build -o queue.ccf --capacity 10000 -q
  mkdir queue.err
  exec 8< queue.ccf
  flock -x 8
  pids=()
  for i in $(seq 1 250); do
    timeout -k 5 120 "$ccf_bin" add queue.ccf "queue-$i" 8<&- 2> "queue.err/$i" &
    pids+=($!)
  done
  sleep 1
  exec 8<&-
  failed=0
  for pid in "${pids[@]}"; do wait "$pid" || failed=$((failed + 1)); done
  check_eq "250 adds queued on one filter: all succeed" 0 "$failed"
  check_eq "250 adds queued on one filter: items" 251 "$(info_field queue.ccf items)"
  most=$(for i in $(seq 1 250); do grep -c "waiting for the lock" "queue.err/$i"; done | sort -n | tail -1)
  check_eq "250 adds queued on one filter: each says once that it waits" 1 "$most"
  check_no_temp_files "queued adds" "$work"

  # An add reads its keys before it takes the lock: one whose keys are slow to come (a pipe)
  # holds no other writer back (`tail -F log | ccf add` held every add, remove and build).
  echo slow-seed | ccf build -o slowadd.ccf --capacity 1000 -q
  mkfifo slowadd.fifo
  exec 9<> slowadd.fifo  # a writer that stays silent
  timeout -k 5 60 "$ccf_bin" add -q slowadd.ccf -k slowadd.fifo 9>&- &
  slow=$!
  sleep 0.5
  rc=0
  timeout -k 5 10 "$ccf_bin" add -q slowadd.ccf quick-key 9>&- 2> err || rc=$?
  check_rc "an add while another add's keys are slow to come: it does not wait" 0 "$rc" err
  echo slow-key >&9
  exec 9>&-
  rc=0
  wait "$slow" || rc=$?
  check_eq "the add whose keys were slow: exit status" 0 "$rc"
  check_eq "both adds took effect" "quick-key slow-key" "$(ccf query slowadd.ccf quick-key slow-key | xargs)"
  # A filter rebuilt with another seed while an add read its keys (hashed with the old seed) is
  # left as the build made it, and the add says so.
  exec 9<> slowadd.fifo
  timeout -k 5 60 "$ccf_bin" add -q slowadd.ccf -k slowadd.fifo 9>&- 2> slow.err &
  slow=$!
  sleep 0.5
  echo reseeded | timeout -k 5 10 "$ccf_bin" build -q -o slowadd.ccf --seed 7 9>&-
  cp slowadd.ccf reseeded.ccf
  echo late-key >&9
  exec 9>&-
  rc=0
  wait "$slow" || rc=$?
  check_rc "an add whose filter was rebuilt with another seed meanwhile" 2 "$rc" slow.err
  check_file_has "an add whose filter was rebuilt with another seed meanwhile: it says so" \
    slow.err "replaced by a filter of another seed or kind while the keys were read"
  check_same_file "an add whose filter was rebuilt with another seed meanwhile: the build's" \
    reseeded.ccf slowadd.ccf
fi

# ---------------------------------------------------------------------------------------------
if want query; then
  keys k 1 1000 > small.txt
  ccf build -k small.txt -o small.ccf -q
  printf 'k1\nnope-1\nk2\nnope-2\nk3\n' > mixed.txt
  rc=0
  ccf query small.ccf -k mixed.txt > out || rc=$?
  check_eq "query: prints the present keys, one per line" $'k1\nk2\nk3' "$(cat out)"
  check_eq "query: exit status when a key is present" 0 "$rc"
  rc=0
  ccf query small.ccf -v -k mixed.txt > out || rc=$?
  check_eq "query -v: prints the absent keys" $'nope-1\nnope-2' "$(cat out)"
  check_eq "query -v: exit status when a key is absent" 0 "$rc"
  rc=0
  ccf query small.ccf --all -k mixed.txt > out || rc=$?
  check_eq "query --all: every key in input order" $'1\tk1\n0\tnope-1\n1\tk2\n0\tnope-2\n1\tk3' "$(cat out)"
  check_eq "query --all: exit status when a key is present" 0 "$rc"
  rc=0
  ccf query small.ccf k1 k2 nope-1 -k - < mixed.txt > out || rc=$?
  check_eq "query KEY... -k -: command-line keys first, then the file's" \
    $'k1\nk2\nk1\nk2\nk3' "$(cat out)"
  rc=0
  ccf query small.ccf nope-1 nope-2 > out || rc=$?
  check_eq "query: exit status when no key is present" 1 "$rc"
  check_eq "query: no output when no key is present" "" "$(cat out)"
  rc=0
  ccf query small.ccf -v k1 k2 > out || rc=$?
  check_eq "query -v: exit status when every key is present" 1 "$rc"
  check_eq "query -v: no output when every key is present" "" "$(cat out)"
  rc=0
  ccf query small.ccf --all nope-1 > out || rc=$?
  check_eq "query --all: exit status when no key is present" 1 "$rc"
  check_eq "query --all: the absent key is printed" $'0\tnope-1' "$(cat out)"
  rc=0
  ccf query small.ccf < /dev/null > out || rc=$?
  check_eq "query of no keys: exit status" 1 "$rc"
  rc=0
  printf '\n\nk1\n\n\nk2' | ccf query small.ccf --all > out || rc=$?
  check_eq "query: empty lines skipped, last key without a newline" $'1\tk1\n1\tk2' "$(cat out)"
  check_eq "query: no false negatives" 0 "$(count_selected small.ccf small.txt -v)"
  expect_status "query --all -v (they exclude each other)" 2 ccf query small.ccf --all -v k1
  expect_status "query with an unknown option" 2 ccf query small.ccf --frobnicate k1
  expect_status "query without a filter" 2 ccf query

  # -z: keys with tabs, newlines and carriage returns round-trip byte for byte.
  printf 'tab\there\0two\nlines\0cr\r\0plain\0\0' > z.keys
  ccf build -z -k z.keys -o z.ccf -q
  check_eq "build -z: items (empty key skipped)" 4 "$(info_field z.ccf items)"
  printf 'tab\there\0absent\tkey\0two\nlines\0cr\r\0cr\0plain' > z.query
  printf '1\ttab\there\0000\tabsent\tkey\0001\ttwo\nlines\0001\tcr\r\0000\tcr\0001\tplain\0' > z.expected
  rc=0
  ccf query -z --all z.ccf -k z.query > z.out || rc=$?
  check_same_file "query -z --all: NUL-separated output, keys byte for byte" z.expected z.out
  printf 'tab\there\0two\nlines\0cr\r\0plain\0' > z.present
  ccf query -z z.ccf < z.query > z.out || true
  check_same_file "query -z: the present keys, NUL-terminated" z.present z.out
  printf 'absent\tkey\0cr\0' > z.absent
  ccf query -z -v z.ccf < z.query > z.out || true
  check_same_file "query -z -v: the absent keys, NUL-terminated" z.absent z.out
  # With -z a newline is part of the key: "two\nlines" is not "two" and "lines".
  rc=0
  printf 'two\0lines\0' | ccf query -z z.ccf > z.out || rc=$?
  check_eq "query -z: newline-split parts of a key are absent" 1 "$rc"

  # A key longer than 16 MiB is an error, not an allocation without bound.
  head -c $((16 * 1024 * 1024 + 16)) /dev/zero | tr '\0' x > long.txt
  expect_error "query a key longer than 16 MiB" 2 "long.txt" -- ccf query small.ccf -k long.txt
  rm -f long.txt
  # Failed writes of the answers.
  expect_error "query with standard output full" 2 "No space left on device" -- \
    timeout -k 5 60 bash -c 'exec "$@" > /dev/full' _ "$ccf_bin" query small.ccf -k small.txt
  expect_error "info with standard output full" 2 "No space left on device" -- \
    timeout -k 5 60 bash -c 'exec "$@" > /dev/full' _ "$ccf_bin" info small.ccf
  expect_error "build -o - with standard output full" 2 "No space left on device" -- \
    timeout -k 5 60 bash -c 'exec "$@" > /dev/full' _ "$ccf_bin" build -k small.txt -o -
fi

# ---------------------------------------------------------------------------------------------
if want streaming; then
  keys k 1 1000 | ccf build -o stream.ccf -q
  # query answers each key before its input ends: one key in, its answer out, then the next.
  coproc QUERY { exec timeout -k 5 60 "$ccf_bin" query stream.ccf --all 2> stream.err; }
  q_in=${QUERY[1]} q_out=${QUERY[0]} q_pid=$QUERY_PID
  for key in k5 nope-5 k999; do
    printf '%s\n' "$key" >&"$q_in"
    IFS= read -r -t 10 line <&"$q_out" || line="(no answer within 10 s)"
    expected=$'1\t'$key
    [ "$key" = nope-5 ] && expected=$'0\tnope-5'
    check_eq "query streams: the answer to '$key' before the input ends" "$expected" "$line"
  done
  printf 'k7\r\n\n' >&"$q_in"
  IFS= read -r -t 10 line <&"$q_out" || line="(no answer within 10 s)"
  check_eq "query streams: a CRLF key" $'1\tk7' "$line"
  eval "exec $q_in>&-"
  line=
  IFS= read -r -t 10 line <&"$q_out" || true
  check_eq "query streams: nothing more at the end of input" "" "$line"
  eval "exec $q_out<&-"
  rc=0
  wait "$q_pid" || rc=$?
  check_rc "streaming query" 0 "$rc" stream.err

  # The same through a FIFO given with -k, NUL-separated.
  mkfifo stream.fifo
  timeout -k 5 60 "$ccf_bin" query -z stream.ccf -k stream.fifo > stream.out 2> stream.err &
  z_pid=$!
  exec {fifo_fd}<> stream.fifo  # read-write: opening never waits for the reader
  printf 'k10\0nope\0' >&"$fifo_fd"
  got=
  for _ in $(seq 1 100); do
    got=$(tr '\0' '|' < stream.out)
    [ -n "$got" ] && break
    sleep 0.1
  done
  check_eq "query -z -k FIFO streams: the answer before the input ends" "k10|" "$got"
  exec {fifo_fd}>&-
  rc=0
  wait "$z_pid" || rc=$?
  check_rc "query -z -k FIFO" 0 "$rc" stream.err

  # Memory: $stream_keys keys from a pipe against a small filter. The query holds one 64 KiB
  # piece of input and one batch of answers; reading all keys first would take hundreds of MB.
  # Measured peak RSS (Release, x86-64): about 4.8 MB for 3,000,000 keys.
  rss=
  if [ "${CCF_CLI_PROC_RSS:-0}" != 1 ] && /usr/bin/time -f %M -o rss.gnu true 2> /dev/null &&
     grep -qE '^[0-9]+$' rss.gnu; then
    rc=0
    keys k 1 "$stream_keys" | timeout -k 5 120 /usr/bin/time -f %M -o rss.txt \
      "$ccf_bin" query stream.ccf > stream.out || rc=$?
    check_eq "query of $stream_keys keys from a pipe: exit status" 0 "$rc"
    rss=$(tail -1 rss.txt)
    how="GNU time"
  else
    # No GNU time: VmHWM of the running query, read while its input pauses at the end.
    { keys k 1 "$stream_keys"; sleep 1; } | "$ccf_bin" query stream.ccf > stream.out &
    pid=$!
    rss=0
    deadline=$((SECONDS + 120))
    while [ -r "/proc/$pid/status" ] && ! grep -q '^State:.*Z' "/proc/$pid/status" 2> /dev/null &&
          [ "$SECONDS" -lt "$deadline" ]; do
      v=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2> /dev/null || true)
      [ -n "$v" ] && [ "$v" -gt "$rss" ] && rss=$v
      sleep 0.05
    done
    rc=0
    wait "$pid" || rc=$?
    check_eq "query of $stream_keys keys from a pipe: exit status" 0 "$rc"
    how="VmHWM"
  fi
  check_ge "query of $stream_keys keys: present keys printed" "$(lines stream.out)" 1000
  echo "cli: peak RSS of a query of $stream_keys keys from a pipe: ${rss} KiB ($how)"
  check_le "query of $stream_keys keys from a pipe: peak RSS in KiB" "${rss:-999999999}" "$max_rss_kb"
fi

# ---------------------------------------------------------------------------------------------
if want progress; then
  # Keys in two bursts 0.4 s apart: the progress line (redrawn at most every 200 ms) gets drawn.
  slow_keys() {
    keys p 1 75000
    sleep 0.4
    keys p 75001 150000
  }
  slow_keys | CCF_PROGRESS=1 ccf build -o prog.ccf 2> prog.err
  check_file_has "build with CCF_PROGRESS=1: a progress line" prog.err "keys/s"
  check_file_has "build with CCF_PROGRESS=1: the progress line names the command" prog.err "ccf build"
  last=$(tr '\r' '\n' < prog.err | tail -1)
  [[ $last == $'\e[K'"ccf: 150000 keys"* ]] ||
    fail "build with CCF_PROGRESS=1: the line erased, then the summary" '\r\e[Kccf: 150000 keys ...' \
      "$(printf '%s' "$last" | od -c | head -2)"
  slow_keys | CCF_PROGRESS=1 ccf query prog.ccf > /dev/null 2> prog.err
  check_file_has "query with CCF_PROGRESS=1: a progress line" prog.err "keys/s"
  check_eq "query with CCF_PROGRESS=1: the line erased at the end" $'\r\e[K' "$(tail -c 4 prog.err)"
  keys g 1 10 | ccf build -o prog.grow.ccf --grow --capacity 1000 -q
  slow_keys | CCF_PROGRESS=1 ccf add prog.grow.ccf 2> prog.err
  check_file_has "add with CCF_PROGRESS=1: a progress line" prog.err "keys/s"
  slow_keys | CCF_PROGRESS=1 ccf remove prog.grow.ccf 2> prog.err
  check_file_has "remove with CCF_PROGRESS=1: a progress line" prog.err "keys/s"
  # A regular input file: the share done and the time left. The answers go to a slow reader.
  slow_keys > prog.txt
  CCF_PROGRESS=1 ccf query prog.ccf -k prog.txt --all 2> prog.err |
    { sleep 0.5; head -c 200000 > /dev/null; sleep 0.5; cat > /dev/null; }
  check_file_has "query -k FILE with CCF_PROGRESS=1: the share done" prog.err "% of"
  check_file_has "query -k FILE with CCF_PROGRESS=1: the time left" prog.err "left"
  # Standard error not a terminal: the summary line and nothing else.
  for setting in unset 0; do
    if [ "$setting" = unset ]; then
      slow_keys | ccf build -o prog.ccf 2> prog.err
      slow_keys | ccf query prog.ccf > /dev/null 2> prog.q.err
    else
      slow_keys | CCF_PROGRESS=0 ccf build -o prog.ccf 2> prog.err
      slow_keys | CCF_PROGRESS=0 ccf query prog.ccf > /dev/null 2> prog.q.err
    fi
    check_eq "build, CCF_PROGRESS $setting, standard error a file: one line" 1 "$(lines prog.err)"
    if grep -q $'\r' prog.err || ! grep -q '^ccf: 150000 keys' prog.err; then
      fail "build, CCF_PROGRESS $setting, standard error a file: the summary only" \
        "ccf: 150000 keys ..." "$(od -c prog.err | head -3)"
    fi
    check_eq "query, CCF_PROGRESS $setting, standard error a file: nothing" "" "$(cat prog.q.err)"
  done
  # Standard error a terminal (script(1) gives one): the line is drawn; CCF_PROGRESS=0 stops it.
  if command -v script > /dev/null && script -qec true /dev/null > /dev/null 2>&1; then
    slow_keys > tty.keys
    cat > tty.sh << EOF
{ cat tty.keys; sleep 0.4; cat tty.keys; } | "$ccf_bin" query prog.ccf > /dev/null
EOF
    timeout -k 5 60 script -qec "bash tty.sh" /dev/null > tty.out 2>&1 || true
    check_file_has "query, standard error a terminal: a progress line" tty.out "keys/s"
    timeout -k 5 60 script -qec "CCF_PROGRESS=0 bash tty.sh" /dev/null > tty.out 2>&1 || true
    if grep -q "keys/s" tty.out; then
      fail "query, standard error a terminal, CCF_PROGRESS=0: no progress line" "no 'keys/s'" "$(head -c 300 tty.out)"
    fi
    # The answers printed to that terminal too: the line is erased before them (they were glued
    # to its end). What the screen shows: the text after a line's last carriage return.
    cat > tty.sh << EOF
{ cat tty.keys; sleep 0.4; cat tty.keys; } | "$ccf_bin" query prog.ccf
EOF
    timeout -k 5 60 script -qec "bash tty.sh" /dev/null > tty.out 2>&1 || true
    check_file_has "query, answers to the terminal: a progress line" tty.out "keys/s"
    sed 's/\r$//; s/.*\r//; s/\x1b\[K//g' tty.out | grep -v '^$' > tty.screen || true
    check_eq "query, answers to the terminal: every line on the screen an answer" 300000 \
      "$(grep -c '^p[0-9]*$' tty.screen || true)"
    if grep -q "keys/s" tty.screen; then
      fail "query, answers to the terminal: no answer on the progress line" "no 'keys/s'" \
        "$(grep -m 1 "keys/s" tty.screen | od -c | head -3)"
    fi
  fi
fi

# ---------------------------------------------------------------------------------------------
# shellcheck source=errors.sh
source "$source_dir/tests/cli/errors.sh"

elapsed=$((SECONDS - started))
if [ "$failures" -ne 0 ]; then
  echo "cli: $failures checks failed (${elapsed} s)"
  exit 1
fi
echo "cli: all checks passed (${elapsed} s)"
