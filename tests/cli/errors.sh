# The "errors" section of tests/cli/run.sh, sourced by it (with its checks, checks.sh, and the
# shared inputs it makes): missing, unreadable, forged and truncated files, bad arguments, full
# and closed outputs, signals. Each error is one line, "ccf: " and a message, with its exit status.
# shellcheck shell=bash
if want errors; then
  expect_error "info of a missing file" 2 "missing.ccf" "No such file or directory" -- ccf info missing.ccf
  expect_error "query of a missing file" 2 "missing.ccf" "No such file or directory" -- ccf query missing.ccf k
  expect_error "remove from a missing file" 2 "missing.ccf" "No such file or directory" -- ccf remove missing.ccf k

  size=$(stat -c %s static.ccf)
  cp static.ccf corrupt.ccf
  old=$(od -An -tu1 -j $((size / 2)) -N1 corrupt.ccf | tr -d ' ')
  printf "\\$(printf '%03o' $((old ^ 255)))" | dd of=corrupt.ccf bs=1 seek=$((size / 2)) conv=notrunc 2> /dev/null
  cmp -s static.ccf corrupt.ccf && fail "setup: a flipped byte" "a changed file" "the same file"
  cp corrupt.ccf corrupt.orig
  expect_error "info of a corrupt file" 2 "corrupt.ccf" "checksum" -- ccf info corrupt.ccf
  expect_error "query of a corrupt file" 2 "corrupt.ccf" "checksum" -- ccf query corrupt.ccf key-1
  expect_error "add to a corrupt file" 2 "corrupt.ccf" "checksum" -- ccf add corrupt.ccf key-1
  check_same_file "add to a corrupt file: unchanged" corrupt.orig corrupt.ccf
  head -c $((size / 2)) static.ccf > truncated.ccf
  expect_error "info of a truncated file" 2 "truncated.ccf" "truncated" -- ccf info truncated.ccf
  expect_error "query of a truncated file" 2 "truncated.ccf" "truncated" -- ccf query truncated.ccf k
  expect_error "remove from a truncated file" 2 "truncated.ccf" "truncated" -- ccf remove truncated.ccf k
  # A word count one off is a corrupt header, not a truncated file or junk after it.
  for delta in -1 1; do
    cp static.ccf words.ccf
    put_u64 words.ccf 56 $(($(od -An -tu8 -j 56 -N8 static.ccf | tr -d ' ') + delta))
    expect_error "info of a file whose word count is $delta off" 2 "words.ccf" "word count" \
      -- ccf info words.ccf
    grep -qE "junk|truncated" "$work/stderr" && fail "word count $delta off: message" \
      "a corrupt word count" "$(cat "$work/stderr")"
  done
  # An output that is the key file would replace the keys: refused, the keys kept.
  keys own- 1 100 > own.txt
  cp own.txt own.orig
  ln -f own.txt own-link.txt
  expect_error "build -o of its own -k file" 1 "own.txt" "keys are read from" \
    -- ccf build -k own.txt -o own.txt
  expect_error "build -o of a hard link to its -k file" 1 "own-link.txt" -- \
    ccf build -k own.txt -o own-link.txt
  rc=0
  ccf build -o own.txt < own.txt > /dev/null 2> "$work/stderr" || rc=$?
  check_rc "build -o of the file on standard input" 1 "$rc" "$work/stderr"
  check_same_file "build -o of its own key file: the keys kept" own.orig own.txt
  head -c 10 static.ccf > tiny.ccf
  expect_error "info of a 10-byte file" 2 "tiny.ccf" -- ccf info tiny.ccf
  : > empty.ccf
  expect_error "info of an empty file" 2 "empty.ccf" -- ccf info empty.ccf
  keys key- 1 10 > notafilter.ccf
  expect_error "info of a key list" 2 "notafilter.ccf" -- ccf info notafilter.ccf
  # A file of a filter with the global alternate function (header byte 20: 1): the message names
  # the file's alternate function and the tool's.
  cp static.ccf global.ccf
  printf '\001' | dd of=global.ccf bs=1 seek=20 conv=notrunc 2> /dev/null
  for cmd in info query; do
    args=(global.ccf)
    [ "$cmd" = info ] || args+=(key-1)
    expect_error "$cmd of a global-alternate file" 2 "global.ccf" "the global alternate" \
      "the chunked one" -- ccf "$cmd" "${args[@]}"
  done

  # A large file that is not a filter is refused from its header: add read all of it first (a
  # 200 MB file took 266 MB before "bad magic"). Sparse files: they take no room.
  if memory_limit_works && truncate -s 200M zeros.ccf; then
    for cmd in add remove; do
      expect_error "$cmd of a 200 MB file of zeros" 2 "zeros.ccf" "bad magic" -- \
        with_memory_limit 100000 "$ccf_bin" "$cmd" zeros.ccf k
    done
    rm -f zeros.ccf
    # A header that claims 2 GiB, as large as the file: a table that does not fit in the memory the
    # tool may use is an error naming the file (add read the 2 GB first, then "out of memory").
    if forge_filter claims-2g.ccf $((1 << 28)); then
      for cmd in info query add remove; do
        args=(claims-2g.ccf)
        [ "$cmd" = info ] || args+=(k)
        expect_error "$cmd of a file that claims 2 GiB, within 1 GB of memory" 2 "claims-2g.ccf" \
          "memory" -- with_memory_limit 1000000 "$ccf_bin" "$cmd" "${args[@]}"
      done
    fi
    rm -f claims-2g.ccf
  fi
  # A header that claims more memory than any machine has (4 TiB, as large as the sparse file):
  # exit 2 naming the file, as other bad files (info, add and remove exited 1, unnamed).
  if forge_filter claims-4t.ccf $((1 << 39)); then
    limit=unlimited
    memory_limit_works && limit=1000000
    for cmd in info query add remove; do
      args=(claims-4t.ccf)
      [ "$cmd" = info ] || args+=(k)
      expect_error "$cmd of a file that claims 4 TiB" 2 "claims-4t.ccf" "memory" -- \
        with_memory_limit "$limit" "$ccf_bin" "$cmd" "${args[@]}"
    done
  fi
  rm -f claims-4t.ccf

  # A directory given as the filter: the message names it and says why.
  mkdir dir
  for cmd in info query add remove; do
    args=(dir)
    [ "$cmd" = info ] || args+=(k)
    expect_error "$cmd of a directory" 2 "'dir'" -- ccf "$cmd" "${args[@]}"
    grep -qE "Is a directory|not a regular file" stderr ||
      fail "$cmd of a directory: the reason" "'Is a directory' or 'not a regular file'" "$(cat stderr)"
  done

  # Key files that cannot be read.
  expect_error "build -k missing file" 2 "nokeys.txt" "No such file or directory" -- \
    ccf build -k nokeys.txt -o nk.ccf
  expect_error "query -k missing file" 2 "nokeys.txt" "No such file or directory" -- \
    ccf query static.ccf -k nokeys.txt
  expect_error "add -k missing file" 2 "nokeys.txt" "No such file or directory" -- \
    ccf add static.ccf -k nokeys.txt
  expect_error "build -k directory" 2 "'dir'" "Is a directory" -- ccf build -k dir -o nk.ccf
  expect_error "query -k directory" 2 "'dir'" "Is a directory" -- ccf query static.ccf -k dir
  [ ! -e nk.ccf ] || fail "build from an unreadable key file" "no file written" "nk.ccf exists"
  if [ "$(id -u)" != 0 ]; then
    keys k 1 3 > locked.txt
    chmod 000 locked.txt
    expect_error "query -k unreadable file" 2 "locked.txt" "Permission denied" -- \
      ccf query static.ccf -k locked.txt
  fi
  expect_error "build -o in a missing directory" 2 "nodir/x.ccf" "No such file or directory" -- \
    ccf build -k keys.txt -o nodir/x.ccf

  # -o at targets that are not regular files: refused (exit 2), left as they were.
  expect_error "build -o a directory" 2 "'dir'" -- ccf build -k keys.txt -o dir
  [ -d dir ] || fail "build -o a directory" "dir still a directory" "$(ls -ld dir)"
  cp static.ccf target.ccf
  ln -sf target.ccf olink.ccf
  expect_error "build -o a symbolic link" 2 "olink.ccf" -- ccf build -k keys.txt -o olink.ccf
  [ -L olink.ccf ] || fail "build -o a symbolic link" "still a symbolic link" "$(ls -l olink.ccf)"
  check_same_file "build -o a symbolic link: its target unchanged" static.ccf target.ccf
  ln -s nowhere.ccf dangling.ccf
  expect_error "build -o a dangling symbolic link" 2 "dangling.ccf" -- ccf build -k keys.txt -o dangling.ccf
  [ -L dangling.ccf ] || fail "build -o a dangling symbolic link" "still a symbolic link" "$(ls -l dangling.ccf)"
  [ ! -e nowhere.ccf ] || fail "build -o a dangling symbolic link" "nowhere.ccf not created" "it exists"
  check_no_temp_files "-o refused" "$work"

  # A device: first a node of our own (as root: a copy of /dev/full; otherwise a FIFO), then,
  # only if the tool left that one alone, /dev/full itself.
  if [ "$(id -u)" = 0 ]; then
    mknod dev.node c 1 7
    node_test=-c
  else
    mkfifo dev.node
    node_test=-p
  fi
  expect_error "build -o a device node" 2 "dev.node" -- ccf build -k keys.txt -o dev.node
  node_ok=1
  if [ "$node_test" = -c ]; then [ -c dev.node ]; else [ -p dev.node ]; fi ||
    { node_ok=0; fail "build -o a device node" "still a device node" "$(ls -l dev.node)"; }
  if [ "$node_test" = -c ]; then
    expect_error "add to a device node" 2 "dev.node" -- ccf add dev.node k
    [ -c dev.node ] || { node_ok=0; fail "add to a device node" "still a device node" "$(ls -l dev.node)"; }
  fi
  check_no_temp_files "-o a device node" "$work"
  # add and remove of a FIFO: refused (opening it to read waited for a writer, for ever).
  mkfifo filter.fifo
  for cmd in add remove; do
    expect_error "$cmd of a FIFO" 2 "filter.fifo" "not a regular file" -- \
      timeout -k 5 20 "$ccf_bin" "$cmd" filter.fifo k
  done
  if [ "$node_ok" = 1 ] && [ -c /dev/full ]; then
    ls -A /dev | grep '^\.ccf-' > dev.before || true
    rc=0
    timeout -k 5 60 "$ccf_bin" build -k keys.txt -o /dev/full 2> stderr || rc=$?
    if [ ! -c /dev/full ]; then
      if [ "$(id -u)" = 0 ]; then rm -f /dev/full && mknod -m 666 /dev/full c 1 7; fi
      fail "build -o /dev/full: /dev/full still a character device (restored)" "a character device" \
        "$(ls -l /dev/full)"
    fi
    check_rc "build -o /dev/full" 2 "$rc" stderr
    check_one_error "build -o /dev/full" stderr
    check_file_has "build -o /dev/full: the message names it" stderr "/dev/full"
    expect_error "add to /dev/full" 2 "/dev/full" -- ccf add /dev/full k
    [ -c /dev/full ] || fail "add to /dev/full" "/dev/full a character device" "$(ls -l /dev/full)"
    ls -A /dev | grep '^\.ccf-' > dev.after || true
    check_eq "build -o /dev/full: no temporary file left in /dev" "$(cat dev.before)" "$(cat dev.after)"
  fi

  # Usage errors are errors too: docs/cli.md, "Each error is one line on standard error,
  # `ccf: ` and the message".
  expect_error "usage error (unknown option): the message" 1 "frobnicate" -- \
    ccf build -k keys.txt -o u.ccf --frobnicate
  expect_error "usage error (query --all -v): the message" 2 -- ccf query static.ccf --all -v k
  # An empty key path (an unset variable) read standard input; numbers below 0 or past 2^64 - 1
  # were taken as 2^64 - 1.
  expect_error "build -k ''" 1 "empty path" -- ccf build -k '' -o e.ccf
  # An empty output path is refused before any work (build read every key, then failed, exit 2).
  expect_error "build -o ''" 1 "empty path" -- ccf build -k keys.txt -o ''
  # No keys on standard input: the message names it (it said "the keys given").
  expect_error "build from an empty standard input" 2 "no keys on standard input" -- \
    ccf build -o e.ccf
  expect_error "query -k ''" 2 "empty path" -- ccf query static.ccf -k ''
  [ ! -e e.ccf ] || fail "build -k ''" "no file written" "e.ccf exists"
  for seed in -1 18446744073709551616 99999999999999999999999 12x 010; do
    expect_error "build --seed $seed" 1 "--seed" "'$seed'" -- \
      ccf build -k keys.txt -o s.ccf --seed "$seed"
  done
  expect_error "build --capacity -1" 1 "--capacity" -- ccf build -k keys.txt -o s.ccf --capacity -1
  ccf build -k keys.txt -o s.ccf --seed 18446744073709551615 -q 2> err ||
    fail "build --seed 2^64 - 1" "exit status 0" "$(cat err)"
  ccf build -k keys.txt -o s.ccf --seed 0x10 -q 2> err ||
    fail "build --seed 0x10" "exit status 0" "$(cat err)"
  check_eq "build --seed 0x10: the seed" 16 "$(info_field s.ccf seed)"
  # Help and version that cannot be written are errors.
  if [ -c /dev/full ]; then
    for flag in --help --version; do
      rc=0
      ccf "$flag" > /dev/full 2> err || rc=$?
      check_rc "ccf $flag > /dev/full" 2 "$rc" err
      check_one_error "ccf $flag > /dev/full" err
    done
  fi
  # A closed standard input or output: the filter file took descriptor 0 and was read again as
  # the keys ("added 0 keys", exit 0); now reading or writing them fails.
  cp static.ccf closed.ccf
  rc=0
  ccf add closed.ccf <&- 2> err || rc=$?
  check_rc "add with standard input closed" 2 "$rc" err
  check_file_has "add with standard input closed: the reason" err "standard input"
  check_same_file "add with standard input closed: the filter unchanged" static.ccf closed.ccf
  rc=0
  ccf query closed.ccf -k keys.txt >&- 2> err || rc=$?
  check_rc "query with standard output closed" 2 "$rc" err
  check_same_file "query with standard output closed: the filter unchanged" static.ccf closed.ccf
  # A signal the tool was started ignoring (nohup, a background job of a script) stays ignored:
  # SIGHUP sent while it writes its file killed it, with no file written.
  keys hup- 1 1000 > hup.txt
  (
    trap '' HUP
    exec "$ccf_bin" build -q -k hup.txt -o hup.ccf --capacity 40000000
  ) 2> err &
  hup_pid=$!
  # The signals start once the tool runs: one that came before the subshell's trap ended the
  # subshell itself (exit 129), which says nothing of the tool.
  ccf_real=$(readlink -f "$ccf_bin")
  for _ in $(seq 500); do
    [ "$(readlink "/proc/$hup_pid/exe" 2> /dev/null)" = "$ccf_real" ] && break
    sleep 0.01
  done
  for _ in $(seq 400); do
    kill -HUP "$hup_pid" 2> /dev/null || break
    sleep 0.01
  done
  rc=0
  wait "$hup_pid" || rc=$?
  check_rc "build with SIGHUP ignored, sent SIGHUP while it runs" 0 "$rc" err
  [ -s hup.ccf ] || fail "build with SIGHUP ignored: the file" "hup.ccf written" "none"
  check_no_temp_files "build with SIGHUP ignored" "$work"
fi
