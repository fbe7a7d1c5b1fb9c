#!/usr/bin/env bash
# End-to-end test of the `ccf` command: build, query, info, and its errors on bad input.
set -euo pipefail
ccf=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

seq 1 50000 | sed 's/^/key-/' > "$work/keys.txt"
printf 'key-1\r\nkey-2\n\nkey-1\n' > "$work/dups.txt"
"$ccf" build -k "$work/keys.txt" -o "$work/f.ccf" --bits 12 --slots 4 2> "$work/build.log"
[ -s "$work/f.ccf" ] || fail "no filter file written"
[ ! -e "$work/f.ccf.tmp" ] || fail "temporary file left behind"

# Every key is found (no false negatives), absent ones mostly are not.
"$ccf" query "$work/f.ccf" -k "$work/keys.txt" > "$work/present.out" 2>/dev/null
[ "$(grep -c $'\tyes$' "$work/present.out")" = 50000 ] || fail "false negatives in query output"
seq 50001 70000 | sed 's/^/key-/' > "$work/absent.txt"
fp=$("$ccf" query "$work/f.ccf" -k "$work/absent.txt" 2>/dev/null | grep -c $'\tyes$' || true)
[ "$fp" -lt 200 ] || fail "too many false positives: $fp of 20000"

"$ccf" info "$work/f.ccf" > "$work/info.out"
grep -q "fingerprint bits  12" "$work/info.out" || fail "info: bits"
items=$(awk '/^items/ {print $2}' "$work/info.out")
# Keys that already answered yes (false positives at 12 bits: about 0.2 %) are not stored again.
[ "$items" -gt 49700 ] && [ "$items" -le 50000 ] || fail "info: items $items"

# Repeated keys are stored once; CRLF line ends are handled.
"$ccf" build -k "$work/dups.txt" -o "$work/d.ccf" 2>/dev/null
grep -q "items             2$" <("$ccf" info "$work/d.ccf") || fail "repeats stored twice"
[ "$("$ccf" query "$work/d.ccf" key-1 key-2 2>/dev/null | grep -c $'\tyes$')" = 2 ] || fail "crlf"

# Errors: a full filter (exit 3, no file), a missing file, a corrupt file (exit 2).
set +e
"$ccf" build -k "$work/keys.txt" -o "$work/small.ccf" --capacity 1000 2> "$work/err1"; rc=$?
[ $rc = 3 ] || fail "full filter: exit $rc"
[ ! -e "$work/small.ccf" ] || fail "a failed build wrote a file"
grep -q "filter full" "$work/err1" || fail "full filter: message"
cp "$work/f.ccf" "$work/keep.ccf"
"$ccf" build -k "$work/keys.txt" -o "$work/keep.ccf" --capacity 10 2>/dev/null
cmp -s "$work/f.ccf" "$work/keep.ccf" || fail "a failed build clobbered an existing file"
"$ccf" info "$work/missing.ccf" 2> "$work/err2"; rc=$?
[ $rc = 2 ] && grep -q "cannot open" "$work/err2" || fail "missing file: exit $rc"
cp "$work/f.ccf" "$work/bad.ccf"
printf '\xff' | dd of="$work/bad.ccf" bs=1 seek=500 conv=notrunc 2>/dev/null
"$ccf" query "$work/bad.ccf" key-1 > /dev/null 2> "$work/err3"; rc=$?
[ $rc = 2 ] && grep -q "checksum" "$work/err3" || fail "corrupt file: exit $rc"
head -c 50 "$work/f.ccf" > "$work/short.ccf"
"$ccf" info "$work/short.ccf" 2> "$work/err4"; rc=$?
[ $rc = 2 ] && grep -q "truncated" "$work/err4" || fail "truncated file: exit $rc"
"$ccf" build -k "$work/keys.txt" -o "$work/x.ccf" --bits 7 2>/dev/null; rc=$?
[ $rc = 1 ] || fail "bad --bits: exit $rc"
set -e
echo "cli: all checks passed"
