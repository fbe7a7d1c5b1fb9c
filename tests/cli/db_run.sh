#!/usr/bin/env bash
# End-to-end test of `ccf db` (tools/ccf_db.cpp): put/get/del with exact bytes and exit codes,
# stats and compact, import and export byte for byte (a 59,959-line source file, 3 MB of random
# bytes, an empty file, a file of one 4 KiB block repeated 500 times that must be stored once, a
# size that is not a multiple of the chunk size, another --chunk-size), several files in one store
# (--name), rm of a file and the chunks no other file lists, export to "-" and refusal to replace a
# directory, a torn tail recovered, and clear errors (exit 1 or 2 and a message, never a crash)
# for a garbage log and a missing store, a value
# file too long, and files past the size limit (ulimit -f); keys no store can hold, a /proc file
# imported whole, a file whose manifest would pass the largest value refused early, and an export
# whose rename is made durable (its directory synced).
# Usage: db_run.sh path/to/ccf
set -euo pipefail
ccf=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
# run CMD...: runs it without stopping on failure; its status goes to $rc.
run() {
  set +e
  "$@"
  rc=$?
  set -e
}
# stat_of DB FIELD: a number from `ccf db stats` ("log bytes", "keys", ...).
stat_of() {
  "$ccf" db stats "$1" | awk -v f="$2" 'index($0, f) == 1 { print $NF; exit }'
}

# ---- put / get / del ----
db="$work/db"
"$ccf" db put "$db" alpha "first value" || fail "put: exit $?"
"$ccf" db get "$db" alpha > "$work/out" || fail "get: exit $?"
printf 'first value' | cmp -s - "$work/out" || fail "get: wrong bytes: $(head -c 80 "$work/out")"
"$ccf" db put "$db" alpha "second" || fail "overwrite: exit $?"
[ "$("$ccf" db get "$db" alpha)" = second ] || fail "get after overwrite"
printf 'a\0b\nc\r\n\377' > "$work/value.bin"
"$ccf" db put "$db" binary --value-file "$work/value.bin" || fail "put --value-file: exit $?"
"$ccf" db get "$db" binary > "$work/out"
cmp -s "$work/value.bin" "$work/out" || fail "binary value not returned byte for byte"
"$ccf" db put "$db" empty "" || fail "put of an empty value: exit $?"
run "$ccf" db get "$db" empty > "$work/out"
[ $rc = 0 ] && [ ! -s "$work/out" ] || fail "get of an empty value: exit $rc"

run "$ccf" db get "$db" nobody > "$work/out" 2> "$work/err"
[ $rc = 1 ] || fail "get of an absent key: exit $rc (want 1)"
[ ! -s "$work/out" ] || fail "get of an absent key printed something"
run "$ccf" db del "$db" alpha
[ $rc = 0 ] || fail "del: exit $rc"
run "$ccf" db get "$db" alpha > "$work/out"
[ $rc = 1 ] || fail "get after del: exit $rc"
run "$ccf" db del "$db" alpha
[ $rc = 1 ] || fail "del of an absent key: exit $rc (want 1)"

# --recover is an option of `ccf db`, given before or after the subcommand: every subcommand's
# help names it.
for cmd in put get del stats compact import export rm; do
  "$ccf" db "$cmd" --help | grep -q -- "--recover" || fail "ccf db $cmd --help does not name --recover"
done

"$ccf" db stats "$db" > "$work/stats" || fail "stats: exit $?"
grep -Eq '^keys +2$' "$work/stats" || fail "stats: keys (want 2): $(cat "$work/stats")"
grep -Eq '^log bytes +[0-9]+$' "$work/stats" || fail "stats: no log bytes line"
# Statistics that cannot be written are an error (they were lost, exit 0).
if [ -c /dev/full ]; then
  run "$ccf" db stats "$db" > /dev/full 2> "$work/err"
  [ $rc = 2 ] && grep -q "cannot write to standard output" "$work/err" ||
    fail "stats > /dev/full: exit $rc: $(cat "$work/err")"
fi
run "$ccf" db stats "$db" >&- 2> "$work/err"
[ $rc = 2 ] && grep -q "cannot write to standard output" "$work/err" ||
  fail "stats with standard output closed: exit $rc: $(cat "$work/err")"

for i in $(seq 1 50); do "$ccf" db put "$db" churn "value $i"; done
before=$(stat_of "$db" "log bytes")
"$ccf" db compact "$db" || fail "compact: exit $?"
after=$(stat_of "$db" "log bytes")
[ "$after" -lt "$before" ] || fail "compact: log bytes $before -> $after"
[ "$("$ccf" db get "$db" churn)" = "value 50" ] || fail "get after compact"
"$ccf" db get "$db" binary | cmp -s "$work/value.bin" - || fail "binary value after compact"
[ "$(stat_of "$db" keys)" = 3 ] || fail "keys after compact"

# ---- import / export ----
# A C-like source file of 59,959 lines (the seed design's demo), random bytes, an empty file, one
# 4 KiB block 500 times, and sizes that are not a multiple of the chunk size.
seq 1 59959 | awk '{
  if ($1 % 97 == 0) print "";
  else if ($1 % 13 == 0) printf "/* block %d: generated for the ccf db end-to-end test */\n", $1;
  else if ($1 % 5 == 0) printf "static int f%d(int x) { return x * %d + %d; }\n", $1, $1 % 31, $1;
  else printf "  total += table[%d] ^ (seed << %d);  // %x\n", $1 % 4096, $1 % 17, $1 * 40503;
}' > "$work/source.c"
[ "$(wc -l < "$work/source.c")" = 59959 ] || fail "generated source has the wrong line count"
head -c 3000000 /dev/urandom > "$work/random.bin"
: > "$work/empty.txt"
head -c 4096 /dev/urandom > "$work/block"
for i in $(seq 1 500); do cat "$work/block"; done > "$work/repeated.bin"
head -c 10001 /dev/urandom > "$work/odd.bin"

files="$work/files"
for f in source.c random.bin empty.txt odd.bin; do
  "$ccf" db import "$files" "$work/$f" 2> "$work/import.log" || fail "import $f: exit $?"
done
log_before=$(stat_of "$files" "log bytes")
keys_before=$(stat_of "$files" keys)
"$ccf" db import "$files" "$work/repeated.bin" 2> "$work/import.log" || fail "import repeated"
grep -q "500 chunks (1 new)" "$work/import.log" || fail "repeated blocks: $(cat "$work/import.log")"
log_after=$(stat_of "$files" "log bytes")
keys_after=$(stat_of "$files" keys)
grown=$((log_after - log_before))
echo "500 equal 4 KiB blocks grew the log by $grown bytes"
# One 4 KiB chunk and a manifest of 500 chunk keys (35 bytes each): far below 500 chunks (2 MB).
[ "$grown" -ge 4096 ] && [ "$grown" -lt 40000 ] || fail "500 equal blocks grew the log by $grown"
[ $((keys_after - keys_before)) = 2 ] || fail "500 equal blocks: keys $keys_before -> $keys_after"
"$ccf" db import "$files" "$work/odd.bin" --name odd-1000 --chunk-size 1000 2> /dev/null ||
  fail "import --chunk-size"

for f in source.c random.bin empty.txt odd.bin repeated.bin; do
  rm -f "$work/back"
  "$ccf" db export "$files" "$work/back" --name "$f" || fail "export $f: exit $?"
  cmp -s "$work/$f" "$work/back" || fail "export of $f differs from the file imported"
done
"$ccf" db export "$files" "$work/back" --name odd-1000 || fail "export odd-1000"
cmp -s "$work/odd.bin" "$work/back" || fail "export of odd-1000 differs"
"$ccf" db export "$files" - --name random.bin > "$work/stdout.bin" || fail "export to -: exit $?"
cmp -s "$work/random.bin" "$work/stdout.bin" || fail "export to - differs"
for tmp in "$work"/.ccf-*; do
  [ ! -e "$tmp" ] || fail "export left a temporary file behind: $tmp"
done

run "$ccf" db export "$files" "$work/back" 2> "$work/err"
[ $rc = 1 ] || fail "export without --name from a store of several files: exit $rc (want 1)"
for f in source.c random.bin empty.txt repeated.bin odd-1000; do
  grep -q "$f" "$work/err" || fail "the message does not list $f: $(cat "$work/err")"
done
mkdir "$work/outdir"
touch "$work/outdir/keep"
run "$ccf" db export "$files" "$work/outdir" --name source.c 2> "$work/err"
[ $rc = 2 ] || fail "export over a directory: exit $rc (want 2)"
[ -d "$work/outdir" ] && [ -e "$work/outdir/keep" ] || fail "export replaced a directory"
[ -s "$work/err" ] || fail "export over a directory: no message"
run "$ccf" db export "$files" "$work/back" --name nothing-like-it 2> "$work/err"
[ $rc = 1 ] || fail "export of an unknown name: exit $rc (want 1)"
# An export to a file of the store itself (its log, index, lock, or any path in its directory,
# however spelled) is refused before anything is written: it replaced the live log, losing all.
ln -s "$files" "$work/files-link"
cp -a "$files" "$work/files-before"
for out in "$files/log" "$files/index" "$files/LOCK" "$files/./new" "$work/files-link/log"; do
  run "$ccf" db export "$files" "$out" --name source.c 2> "$work/err"
  [ $rc = 2 ] && grep -q "^ccf: .*of the store" "$work/err" ||
    fail "export to $out: exit $rc (want 2): $(cat "$work/err")"
done
for f in "$work/files-before"/*; do
  cmp -s "$f" "$files/$(basename "$f")" || fail "an export refused changed $(basename "$f")"
done
[ ! -e "$files/new" ] || fail "an export refused wrote $files/new"
"$ccf" db export "$files" - --name source.c | cmp -s "$work/source.c" - ||
  fail "export after refused exports into the store differs"
# An empty output path is a usage error, refused before the store is read.
run "$ccf" db export "$files" '' --name source.c 2> "$work/err"
[ $rc = 1 ] && grep -q "empty path" "$work/err" || fail "export to '': exit $rc: $(cat "$work/err")"
# A manifest whose size does not fit in 64 bits is damaged, and the message says so.
printf 'ccf-manifest 1\n12345678901234567890123\n0\n' > "$work/manifest"
"$ccf" db put "$files" m:huge --value-file "$work/manifest"
run "$ccf" db export "$files" - --name huge > /dev/null 2> "$work/err"
[ $rc = 2 ] && grep -q "manifest of 'huge' is damaged" "$work/err" ||
  fail "export of a manifest with a 23-digit size: exit $rc: $(cat "$work/err")"
"$ccf" db del "$files" m:huge
# --chunk-size is decimal as typed, or 0x hexadecimal: a leading 0 was read as octal.
run "$ccf" db import "$work/octal" "$work/odd.bin" --chunk-size 010 2> "$work/err"
[ $rc = 1 ] && grep -q -- "--chunk-size" "$work/err" ||
  fail "import --chunk-size 010: exit $rc: $(cat "$work/err")"
run "$ccf" db import "$work/zero" "$work/odd.bin" --chunk-size 0 2> "$work/err"
[ $rc = 1 ] && grep -q "from 1 to" "$work/err" ||
  fail "import --chunk-size 0: exit $rc: $(cat "$work/err")"
# An empty --name (an unset variable) is a usage error: it was taken as no name.
run "$ccf" db import "$files" "$work/odd.bin" --name '' 2> "$work/err"
[ $rc = 1 ] && grep -q "empty name" "$work/err" || fail "import --name '': exit $rc: $(cat "$work/err")"
run "$ccf" db export "$files" - --name '' > /dev/null 2> "$work/err"
[ $rc = 1 ] && grep -q "empty name" "$work/err" || fail "export --name '': exit $rc: $(cat "$work/err")"
# The largest --chunk-size costs no more memory than the file needs (a 3-byte file took 1 GiB).
printf 'abc' > "$work/three"
run bash -c "ulimit -v 300000; exec \"\$0\" db import \"\$1\" \"\$2\" --chunk-size 1073741823" \
  "$ccf" "$work/big-chunks" "$work/three" 2> "$work/err"
[ $rc = 0 ] || fail "import of 3 bytes with --chunk-size 1073741823: exit $rc: $(cat "$work/err")"
"$ccf" db export "$work/big-chunks" - | cmp -s "$work/three" - || fail "export of the 3 bytes differs"

single="$work/single"
"$ccf" db import "$single" "$work/source.c" 2> /dev/null
"$ccf" db export "$single" "$work/back" || fail "export of the only file without --name"
cmp -s "$work/source.c" "$work/back" || fail "export of the only file differs"
"$ccf" db compact "$single" || fail "compact of an imported store"
"$ccf" db export "$single" - | cmp -s "$work/source.c" - || fail "export after compact differs"

# ---- rm: a file, and the chunks no other file lists ----
shared="$work/shared"
head -c 100000 /dev/urandom > "$work/a.bin"
{ cat "$work/a.bin"; head -c 50000 /dev/urandom; } > "$work/b.bin"  # a.bin's 24 full chunks, then others
"$ccf" db import "$shared" "$work/a.bin" 2> /dev/null
"$ccf" db import "$shared" "$work/b.bin" 2> /dev/null
orphan=c:0123456789abcdef0123456789abcdef
"$ccf" db put "$shared" "$orphan" "a chunk a killed import left"
"$ccf" db put "$shared" "$orphan:1" "a chunk with a collision suffix"
for k in c:not-a-chunk "$orphan:x" c:0123456789ABCDEF0123456789ABCDEF; do
  "$ccf" db put "$shared" "$k" "a key of the user's"
done
# A key under m: that is no manifest: rm stops before it changes anything (its chunks unknown).
"$ccf" db put "$shared" m:notes "hello"
keys_before=$(stat_of "$shared" keys)
run "$ccf" db rm "$shared" a.bin 2> "$work/err"
[ $rc = 2 ] && grep -q "'notes'.*nothing was removed" "$work/err" ||
  fail "rm beside a key m:notes that is no manifest: exit $rc: $(cat "$work/err")"
[ "$(stat_of "$shared" keys)" = "$keys_before" ] || fail "a refused rm changed the store"
"$ccf" db del "$shared" m:notes
keys_before=$(stat_of "$shared" keys)
run "$ccf" db rm "$shared" a.bin 2> "$work/err"
[ $rc = 0 ] && grep -q "removed 'a.bin' and 3 chunks" "$work/err" ||
  fail "rm a.bin: exit $rc: $(cat "$work/err")"
# Its manifest, its last chunk (the only one b.bin does not share) and the two unlisted chunks
# went; the keys that only look like chunk keys stayed.
[ "$(stat_of "$shared" keys)" = $((keys_before - 4)) ] ||
  fail "rm a.bin: keys $keys_before -> $(stat_of "$shared" keys), want 4 fewer"
"$ccf" db export "$shared" - --name b.bin | cmp -s "$work/b.bin" - || fail "export after rm differs"
run "$ccf" db get "$shared" "$orphan" > /dev/null
[ $rc = 1 ] || fail "rm left the unlisted chunk $orphan"
[ "$("$ccf" db get "$shared" c:not-a-chunk)" = "a key of the user's" ] ||
  fail "rm removed a key that is no chunk key"
run "$ccf" db rm "$shared" a.bin 2> "$work/err"
[ $rc = 1 ] && grep -q "no file 'a.bin'" "$work/err" || fail "rm of a removed file: exit $rc"
run "$ccf" db rm "$shared" 2> /dev/null
[ $rc = 1 ] || fail "rm without a name: exit $rc (want 1)"
"$ccf" db rm "$shared" b.bin 2> /dev/null || fail "rm b.bin: exit $?"
[ "$(stat_of "$shared" keys)" = 3 ] || fail "rm of every file: $(stat_of "$shared" keys) keys left, want 3"
# With no file left, --unlisted frees what a failed import left.
"$ccf" db put "$shared" "$orphan" "another chunk a killed import left"
run "$ccf" db rm "$shared" --unlisted 2> "$work/err"
[ $rc = 0 ] && grep -q "removed 1 chunks" "$work/err" && [ "$(stat_of "$shared" keys)" = 3 ] ||
  fail "rm --unlisted: exit $rc: $(cat "$work/err")"
run "$ccf" db rm "$shared" --unlisted b.bin 2> /dev/null
[ $rc = 1 ] || fail "rm --unlisted NAME: exit $rc (want 1)"

# ---- recovery and errors ----
printf '\0\0\0\0\0\0\0\0garbage tail' >> "$db/log"
"$ccf" db stats "$db" > "$work/stats" || fail "stats after a torn tail: exit $?"
grep -q "recovered *20 bytes" "$work/stats" || fail "torn tail not reported: $(cat "$work/stats")"
[ "$("$ccf" db get "$db" churn)" = "value 50" ] || fail "get after recovering a torn tail"

bad="$work/bad"
"$ccf" db put "$bad" k v
head -c 5000 /dev/urandom > "$bad/log"
for cmd in "get $bad k" "stats $bad" "put $bad k2 v2" "export $bad $work/x" "compact $bad"; do
  # shellcheck disable=SC2086
  run "$ccf" db $cmd > /dev/null 2> "$work/err"
  [ $rc = 2 ] || fail "ccf db $cmd on a garbage log: exit $rc (want 2; >= 128 is a crash)"
  grep -q "log" "$work/err" || fail "ccf db $cmd on a garbage log: message: $(cat "$work/err")"
done

run "$ccf" db get "$work/no-such-store" k > "$work/out" 2> "$work/err"
[ $rc = 1 ] || [ $rc = 2 ] || fail "get on a missing store: exit $rc (want 1 or 2)"
grep -q "no store" "$work/err" || fail "get on a missing store: message: $(cat "$work/err")"
# One "ccf: " prefix, not the library's too ("ccf: ccf::kv: there is no store at ...").
[ "$(cat "$work/err")" = "ccf: there is no store at '$work/no-such-store'" ] ||
  fail "get on a missing store: the message: $(cat "$work/err")"
[ ! -e "$work/no-such-store" ] || fail "get on a missing store created it"
run "$ccf" db export "$work/no-such-store" "$work/x" 2> "$work/err"
[ $rc = 1 ] || [ $rc = 2 ] || fail "export from a missing store: exit $rc"
[ ! -e "$work/x" ] || fail "export from a missing store wrote a file"
run "$ccf" db import "$work/db2" "$work/no-such-file" 2> "$work/err"
[ $rc = 2 ] && grep -q "cannot open" "$work/err" || fail "import of a missing file: exit $rc"
run "$ccf" db put "$db" "" v 2> "$work/err"
[ $rc = 1 ] || fail "put of an empty key: exit $rc (want 1)"
# A put with no value at all is a usage error (it stored an empty value), and changes nothing.
run "$ccf" db put "$db" novalue 2> "$work/err"
[ $rc = 1 ] && grep -q "needs a VALUE" "$work/err" ||
  fail "put with no value: exit $rc: $(cat "$work/err")"
run "$ccf" db get "$db" novalue > /dev/null 2>&1
[ $rc = 1 ] || fail "put with no value stored the key (get: exit $rc)"
# Reading from an existing directory that holds no store must not turn it into one (checked
# last: it fails while ccf::kv::store creates a store there despite create_if_missing = false).
mkdir "$work/plain-dir"
run "$ccf" db get "$work/plain-dir" k > /dev/null 2> "$work/err"
[ ! -e "$work/plain-dir/log" ] || fail "ccf db get made a store in a directory that held none"
[ $rc = 1 ] || [ $rc = 2 ] || fail "get on a directory that holds no store: exit $rc"
grep -q "no store" "$work/err" || fail "get on a directory that holds no store: no message"
[ $rc = 2 ] || fail "get on a directory that holds no store: exit $rc (want 2: 1 means absent)"
[ ! -e "$work/plain-dir/LOCK" ] || fail "ccf db get left a LOCK in a directory that held no store"
# Creating a store where another one's files lie (an index, no log) would overwrite them.
mkdir "$work/foreign"
echo mine > "$work/foreign/index"
run "$ccf" db put "$work/foreign" k v 2> "$work/err"
[ $rc = 2 ] && grep -q "no log" "$work/err" || fail "put over a foreign index: exit $rc: $(cat "$work/err")"
[ "$(cat "$work/foreign/index")" = mine ] || fail "put over a foreign index changed it"
# A directory whose file named log is an application's: a read removed the files named as a
# compaction's leftovers (log.tmp, index.compact ...) before it read the log's header.
mkdir "$work/applog"
head -c 200 /dev/urandom > "$work/applog/log"
for f in log.tmp log.compact index.tmp index.compact index.compact.tmp; do
  echo "mine $f" > "$work/applog/$f"
done
for cmd in get put stats; do
  case $cmd in
    get) run "$ccf" db get "$work/applog" k > /dev/null 2> "$work/err" ;;
    put) run "$ccf" db put "$work/applog" k v 2> "$work/err" ;;
    stats) run "$ccf" db stats "$work/applog" > /dev/null 2> "$work/err" ;;
  esac
  [ $rc = 2 ] && grep -q "not a ccf::kv log" "$work/err" ||
    fail "$cmd on a directory with another program's log: exit $rc: $(cat "$work/err")"
done
for f in log.tmp log.compact index.tmp index.compact index.compact.tmp; do
  [ "$(cat "$work/applog/$f")" = "mine $f" ] || fail "ccf db on another program's log removed $f"
done
[ ! -e "$work/applog/LOCK" ] || fail "ccf db left a LOCK beside another program's log"

# A log damaged in the middle (intact records after a bad one) is refused without --recover, and
# cut with it, saying how many records went to which file; the store then opens as usual.
mid="$work/mid"
for i in $(seq 1 20); do "$ccf" db put "$mid" "key$i" "value$i"; done
rm "$mid/index"
printf '\001' | dd of="$mid/log" bs=1 seek=84 conv=notrunc status=none  # the first record's key
run "$ccf" db get "$mid" key20 > /dev/null 2> "$work/err"
[ $rc = 2 ] && grep -q -- "--recover" "$work/err" ||
  fail "get from a log damaged in the middle: exit $rc: $(cat "$work/err")"
run "$ccf" db get "$mid" key20 --recover > /dev/null 2> "$work/err"
[ $rc = 1 ] && grep -q "dropping 19 intact records" "$work/err" ||
  fail "get --recover: exit $rc: $(cat "$work/err")"
ls "$mid"/dropped-* > /dev/null 2>&1 || fail "--recover kept no copy of the records it cut"
"$ccf" db put "$mid" again v || fail "put after --recover: exit $?"
# A log cut below the position its index snapshot was written at lost synced records: refused
# without --recover (no torn tail was ever synced), reported with it.
cut="$work/cut"
for i in 1 2 3; do "$ccf" db put "$cut" "k$i" "v$i"; done
truncate -s -24 "$cut/log"  # k3's record: 16 bytes of header, "k3v3", padding
run "$ccf" db get "$cut" k1 > /dev/null 2> "$work/err"
[ $rc = 2 ] && grep -q "synced up to offset" "$work/err" && grep -q -- "--recover" "$work/err" ||
  fail "get from a log that lost a synced record: exit $rc: $(cat "$work/err")"
run "$ccf" db stats "$cut" --recover > "$work/stats" 2> "$work/err"
[ $rc = 0 ] && grep -q "^lost *24 synced bytes" "$work/stats" &&
  grep -q "lost its last 24 synced bytes" "$work/err" ||
  fail "stats --recover of a log that lost a synced record: exit $rc: $(cat "$work/stats" "$work/err")"
[ "$("$ccf" db get "$cut" k2)" = v2 ] || fail "get k2 after the recovery"
# A put that passes the file size limit fails (exit 2) and leaves no part of its record: the
# next command has no torn tail to recover.
limited="$work/limited"
"$ccf" db put "$limited" small value
run bash -c "ulimit -f 8; exec \"\$0\" db put \"\$1\" big \"\$(head -c 20000 /dev/zero | tr '\\0' v)\"" \
  "$ccf" "$limited" 2> "$work/err"
[ $rc = 2 ] && grep -q "File too large" "$work/err" || fail "a put past ulimit -f: exit $rc: $(cat "$work/err")"
run "$ccf" db get "$limited" small > "$work/out" 2> "$work/err"
[ $rc = 0 ] && [ "$(cat "$work/out")" = value ] && [ ! -s "$work/err" ] ||
  fail "get after a put past ulimit -f: exit $rc: $(cat "$work/err")"
# A name whose manifest key no store can hold is refused before anything is stored.
long_name=$(head -c 65535 /dev/zero | tr '\0' n)
named="$work/named"
for args in "import $named $work/stats --name $long_name" \
  "export $named $work/out.bin --name $long_name" "rm $named $long_name"; do
  # shellcheck disable=SC2086  # the words of $args are the arguments
  run "$ccf" db $args > /dev/null 2> "$work/err"
  [ $rc = 1 ] && grep -q "a name must have at most 65534 bytes" "$work/err" ||
    fail "db ${args%% *} with a name of 65535 bytes: exit $rc: $(cat "$work/err")"
done
[ ! -e "$named" ] || fail "a refused command created the store"
# A key of the user's under m: is no imported file: export without --name passes it over, and
# names it as no manifest when asked for it.
mixed="$work/mixed"
printf 'hello\n' > "$work/h.txt"
"$ccf" db import "$mixed" "$work/h.txt" 2> /dev/null
"$ccf" db put "$mixed" m:junk "not a manifest"
"$ccf" db export "$mixed" "$work/h.out" || fail "export beside a user's m: key: exit $?"
cmp -s "$work/h.txt" "$work/h.out" || fail "export beside a user's m: key: wrong bytes"
run "$ccf" db export "$mixed" "$work/j.out" --name junk 2> "$work/err"
[ $rc = 2 ] && grep -q "'junk' is not a manifest" "$work/err" ||
  fail "export --name of a user's m: key: exit $rc: $(cat "$work/err")"
# A superseded record below the snapshot's position rotted: a get of its key still works, a
# compaction meets it and points to --recover, which replays the whole log and cuts it there.
rot="$work/rot"
"$ccf" db put "$rot" a aaaa
"$ccf" db put "$rot" b bbbb
"$ccf" db put "$rot" a AAAA
printf '\001' | dd of="$rot/log" bs=1 seek=81 conv=notrunc status=none  # a's first value
[ "$("$ccf" db get "$rot" a)" = AAAA ] || fail "get of a key whose old record rotted"
run "$ccf" db compact "$rot" 2> "$work/err"
[ $rc = 2 ] && grep -q "corrupt at offset 64" "$work/err" && grep -q -- "--recover" "$work/err" ||
  fail "compact over a rotten record: exit $rc: $(cat "$work/err")"
run "$ccf" db compact "$rot" --recover 2> "$work/err"
[ $rc = 0 ] && grep -q "dropping 2 intact records" "$work/err" ||
  fail "compact --recover over a rotten record: exit $rc: $(cat "$work/err")"
run "$ccf" db get "$rot" a > /dev/null 2>&1
[ $rc = 1 ] || fail "get after the recovery cut the log at its first record: exit $rc"
# A log whose header is corrupt is an error that --recover cannot repair: no advice to use it.
printf 'X' | dd of="$mid/log" bs=1 seek=20 conv=notrunc status=none
run "$ccf" db get "$mid" again > /dev/null 2> "$work/err"
[ $rc = 2 ] && grep -q "header fails its checksum" "$work/err" &&
  ! grep -q -- "--recover" "$work/err" || fail "a corrupt log header: exit $rc: $(cat "$work/err")"

# Importing the store's own log reads what the log held when it began, not its own writes.
"$ccf" db put "$work/self" k v
timeout 60 "$ccf" db import "$work/self" "$work/self/log" --name self 2> /dev/null ||
  fail "import of the store's own log: exit $? (124: it never ended)"
"$ccf" db export "$work/self" "$work/self-out" --name self || fail "export of the imported log"
# A value file longer than the largest value is refused once that many bytes are read (the tool
# read /dev/zero until memory ran out), and a put whose value cannot be read creates no store.
run bash -c "ulimit -v 4000000; exec timeout 60 \"\$0\" db put \"\$1\" k --value-file /dev/zero" \
  "$ccf" "$work/zero" 2> "$work/err"
[ $rc = 2 ] && grep -q "more than 1073741823 bytes" "$work/err" ||
  fail "put --value-file /dev/zero: exit $rc: $(cat "$work/err")"
run "$ccf" db put "$work/unread" k --value-file "$work/no-such-value" 2> "$work/err"
[ $rc = 2 ] && [ ! -e "$work/unread" ] ||
  fail "a put whose value is missing: exit $rc, or it made a store"
# An empty --value-file path (an unset variable) names no file: it stored an empty value.
run "$ccf" db put "$db" binary --value-file '' 2> "$work/err"
[ $rc != 0 ] && grep -q "empty path" "$work/err" ||
  fail "put --value-file '': exit $rc: $(cat "$work/err")"
"$ccf" db get "$db" binary > "$work/out"
cmp -s "$work/value.bin" "$work/out" || fail "put --value-file '' changed the value"

# Past the file-size limit (ulimit -f) a put is a write error, exit 2 with a message (SIGXFSZ
# killed the tool, exit 153), and the store keeps what it had.
"$ccf" db put "$work/limited" small v
head -c 3000000 /dev/urandom > "$work/big-value"
run bash -c "ulimit -f 1024; exec \"\$0\" db put \"\$1\" big --value-file \"\$2\"" \
  "$ccf" "$work/limited" "$work/big-value" 2> "$work/err"
[ $rc = 2 ] && grep -q "File too large" "$work/err" ||
  fail "put past the file-size limit: exit $rc: $(cat "$work/err")"
[ "$("$ccf" db get "$work/limited" small 2> /dev/null)" = v ] ||
  fail "the store lost a value after a put past the file-size limit"
run bash -c "ulimit -f 8; exec \"\$0\" build -k \"\$1\" -o \"\$2\" --fpr 0.01" \
  "$ccf" "$work/big-value" "$work/limited.ccf" 2> "$work/err"
[ $rc = 2 ] || fail "build past the file-size limit: exit $rc: $(cat "$work/err")"
! ls "$work"/.ccf-* > /dev/null 2>&1 ||
  fail "build past the file-size limit left its temporary file"

# A key no store can hold (empty, or longer than 65,536 bytes) is a usage error with a message
# for every command, before the store is opened: a put of one created the store, and a get of one
# exited 1 with no message, as for an absent key.
long_key=$(head -c 65537 /dev/zero | tr '\0' k)
for cmd in put get del; do
  for key in "" "$long_key"; do
    args=("$work/bad-key" "$key")
    [ $cmd = put ] && args+=(v)
    run "$ccf" db $cmd "${args[@]}" > /dev/null 2> "$work/err"
    [ $rc = 1 ] && grep -q "a key must have 1 to 65536 bytes, not ${#key}" "$work/err" ||
      fail "db $cmd of a ${#key}-byte key: exit $rc: $(cat "$work/err")"
  done
done
[ ! -e "$work/bad-key" ] || fail "a put of a key no store can hold created the store"
# A file that says it holds 0 bytes and holds more (/proc, /sys) is imported whole: it was
# imported as an empty file.
if [ -r /proc/self/status ]; then
  "$ccf" db import "$work/proc" /proc/self/status --name status 2> /dev/null ||
    fail "import of /proc/self/status: exit $?"
  "$ccf" db export "$work/proc" - --name status > "$work/out"
  grep -q "^Name:" "$work/out" || fail "import of /proc/self/status stored $(wc -c < "$work/out") bytes"
fi
# A file whose manifest would pass the largest value (35 bytes a chunk: 30,678,335 chunks) is
# refused before a chunk is stored, naming --chunk-size: it was read whole, taking gigabytes,
# before its manifest failed as a value too long.
truncate -s 30678336 "$work/sparse"  # one chunk more than a manifest lists
run bash -c "ulimit -v 1000000; exec timeout 60 \"\$0\" db import \"\$1\" \"\$2\" --chunk-size 1" \
  "$ccf" "$work/too-many-chunks" "$work/sparse" 2> "$work/err"
[ $rc = 1 ] && grep -q -- "--chunk-size" "$work/err" ||
  fail "import of 30,678,336 chunks: exit $rc: $(cat "$work/err")"
[ ! -e "$work/too-many-chunks" ] || fail "an import refused for its manifest created the store"
# From a pipe the size is unknown: the import stops when the manifest would pass the largest
# value (it read /dev/zero until memory ran out). A minute and 1 GB of memory: long tests only
# (CCF_LONG_TESTS=ON sets CCF_CLI_LONG=1).
if [ "${CCF_CLI_LONG:-0}" = 1 ]; then
  run bash -c "ulimit -v 3000000; exec timeout 300 \"\$0\" db import \"\$1\" /dev/zero --chunk-size 1" \
    "$ccf" "$work/zero-chunks" 2> "$work/err"
  [ $rc = 1 ] && grep -q -- "--chunk-size" "$work/err" ||
    fail "import of /dev/zero: exit $rc: $(cat "$work/err")"
  run "$ccf" db export "$work/zero-chunks" - > /dev/null 2> "$work/err"
  [ $rc = 1 ] && grep -q "no imported file" "$work/err" ||
    fail "an import refused for its manifest stored one: exit $rc: $(cat "$work/err")"
fi
# stats after a cut in the middle of the log names the intact records dropped, not a torn tail.
mid2="$work/mid2"
for i in $(seq 1 5); do "$ccf" db put "$mid2" "key$i" "value$i"; done
rm "$mid2/index"
printf '\001' | dd of="$mid2/log" bs=1 seek=84 conv=notrunc status=none
"$ccf" db stats "$mid2" --recover > "$work/stats" 2> /dev/null || fail "stats --recover: exit $?"
grep -q "^recovered .* with 4 intact records after a bad one" "$work/stats" &&
  ! grep -q "torn tail" "$work/stats" || fail "stats --recover: $(grep recovered "$work/stats")"
# A failed write to standard output names it, not '-'.
if [ -c /dev/full ]; then
  run "$ccf" db export "$files" - --name source.c > /dev/full 2> "$work/err"
  [ $rc = 2 ] && grep -q "cannot write to standard output" "$work/err" ||
    fail "export - > /dev/full: exit $rc: $(cat "$work/err")"
fi
# An export syncs the directory after its rename (else a crash after exit 0 could lose the file).
if command -v strace > /dev/null && strace -f -o /dev/null true 2> /dev/null; then
  strace -f -e trace=openat,rename,renameat,renameat2,fsync,fdatasync -o "$work/trace" \
    "$ccf" db export "$files" "$work/synced" --name odd.bin
  awk -v dir="\"$work\"," '/rename/ { renamed = 1 }
       renamed && index($0, dir) && /O_DIRECTORY/ && / = [0-9]+$/ { fd = $NF }
       renamed && fd != "" && $0 ~ "fsync\\(" fd "\\)" { ok = 1 } END { exit !ok }' "$work/trace" ||
    fail "export did not sync the directory after its rename: $(grep -E 'rename|fsync|DIRECTORY' "$work/trace" | tail -5)"
fi
# A manifest whose chunk line is empty or no chunk key is damaged (exit 2): an empty one was
# looked up as a key and reported as a usage error (exit 1).
for bad_line in "" "m:f"; do
  printf 'ccf-manifest 1\n0\n%032d\n%s\n' 0 "$bad_line" |
    "$ccf" db put "$work/bad-manifest" m:f --value-file -
  run "$ccf" db export "$work/bad-manifest" - --name f > /dev/null 2> "$work/err"
  [ $rc = 2 ] && grep -q "damaged" "$work/err" ||
    fail "export of a manifest with a chunk line '$bad_line': exit $rc: $(cat "$work/err")"
done
# "-" is standard input for import (with --name) and for put --value-file.
printf 'from a pipe\n' | "$ccf" db import "$work/stdin" - --name piped 2> "$work/err" ||
  fail "import from standard input: exit $?: $(cat "$work/err")"
grep -q "standard input -> " "$work/err" || fail "import from standard input said: $(cat "$work/err")"
[ "$("$ccf" db export "$work/stdin" - --name piped)" = "from a pipe" ] ||
  fail "an import from standard input did not come back"
run "$ccf" db import "$work/stdin" - < /dev/null 2> "$work/err"
[ $rc = 1 ] && grep -q "needs --name" "$work/err" ||
  fail "an import from standard input without --name: exit $rc: $(cat "$work/err")"
# A closed standard input is an error, not an empty file (the tool holds descriptor 0 open on
# /dev/null, which reopening /dev/stdin read as empty).
run "$ccf" db import "$work/stdin" - --name closed <&- 2> "$work/err"
[ $rc = 2 ] && grep -q "standard input" "$work/err" ||
  fail "import from a closed standard input: exit $rc: $(cat "$work/err")"
run "$ccf" db put "$work/stdin" closed --value-file - <&- 2> "$work/err"
[ $rc = 2 ] && grep -q "standard input" "$work/err" ||
  fail "put --value-file - from a closed standard input: exit $rc: $(cat "$work/err")"
printf 'piped value' | "$ccf" db put "$work/stdin" key --value-file - ||
  fail "put --value-file -: exit $?"
[ "$("$ccf" db get "$work/stdin" key)" = "piped value" ] || fail "put --value-file - stored another value"
echo "cli db: all checks passed"
