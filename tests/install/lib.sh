# shellcheck shell=bash
# Shared by the install tests (run.sh, deb.sh, consumers.sh); sourced, not run.
# step NAME: names what runs next; a failure then prints "<test>: FAILED at step: NAME".
# quiet CMD...: runs CMD with its output kept in a log, shown (its end) only if CMD fails.
# bounded SECS CMD...: runs CMD under `timeout`, for at most SECS and never past
#   CCF_TEST_DEADLINE (seconds since the epoch; set by the test script and passed on to the scripts
#   it runs), so that a test stops, and cleans up, before CTest's TIMEOUT kills it outright.
# ccf_version SRC: the version in SRC/include/ccf/version.hpp (where CMake reads it too).
ccf_test_name=${ccf_test_name:-$(basename "$0" .sh)}
ccf_step="start"
step() {
  ccf_step="$*"
  echo "-- ${ccf_test_name}: $*"
}
trap 'echo "${ccf_test_name}: FAILED at step: ${ccf_step}" >&2' ERR

quiet() {
  local log
  log=$(mktemp)
  if "$@" >"$log" 2>&1; then
    rm -f "$log"
    return 0
  else
    local rc=$?
    tail -n 60 "$log" >&2
    rm -f "$log"
    return "$rc"
  fi
}

bounded() {
  local secs=$1
  shift
  if [ -n "${CCF_TEST_DEADLINE:-}" ]; then
    local left=$((CCF_TEST_DEADLINE - $(date +%s)))
    if [ "$left" -le 0 ]; then
      echo "${ccf_test_name}: out of time (CCF_TEST_DEADLINE) before: $*" >&2
      return 124
    fi
    [ "$left" -lt "$secs" ] && secs=$left
  fi
  timeout "$secs" "$@"
}

ccf_version() {
  local v
  v=$(sed -n 's/.*version_string = "\([0-9][0-9.]*\)".*/\1/p' "$1/include/ccf/version.hpp")
  [ -n "$v" ] || { echo "no version_string in $1/include/ccf/version.hpp" >&2; return 1; }
  echo "$v"
}
