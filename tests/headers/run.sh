#!/usr/bin/env bash
# Every public header compiles and links alone with plain `c++ -std=c++20 -I include`: no define,
# no library to link (ccf is header-only; xxHash is used inline); every detail header compiles
# alone. All of it without a warning under the strict flags a user's build may have (-Wshadow,
# -Wconversion, -Werror): a user who includes ccf with -I, not -isystem, sees ccf's warnings.
# Also: a program of two translation units that both include ccf, and <xxhash.h> included before
# and after ccf; misuse that fails to compile with ccf's message; a C++17 build.
#   tests/headers/run.sh CXX SOURCE_DIR [XXHASH_INCLUDE_DIR]
set -euo pipefail
cxx=$1
src=$2
extra=()
[ -n "${3:-}" ] && [ "$3" != /usr/include ] && extra=(-I "$3")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
strict=(-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Werror)
count=0
for h in "$src"/include/ccf/*.hpp; do
  name=ccf/$(basename "$h")
  printf '#include <%s>\nint main() { return 0; }\n' "$name" > "$work/one.cpp"
  "$cxx" -std=c++20 "${strict[@]}" -I "$src/include" "${extra[@]}" "$work/one.cpp" \
    -o "$work/one" -pthread 2> "$work/err" ||
    { cat "$work/err"; fail "$name does not compile alone"; }
  "$work/one" || fail "$name: the program does not run"
  count=$((count + 1))
done
# Each detail header (one concept a file) includes what it uses, too.
detail=0
for h in "$src"/include/ccf/detail/*.hpp "$src"/include/ccf/kv/detail/*.hpp; do
  name=${h#"$src"/include/}
  printf '#include <%s>\n' "$name" > "$work/detail.cpp"
  "$cxx" -std=c++20 "${strict[@]}" -I "$src/include" "${extra[@]}" -fsyntax-only \
    "$work/detail.cpp" 2> "$work/err" || { cat "$work/err"; fail "$name does not compile alone"; }
  detail=$((detail + 1))
done
cat > "$work/a.cpp" <<'CPP'
#include <xxhash.h>
#include <ccf/ccf.hpp>
std::uint64_t in_a() { ccf::cuckoo_filter<std::string> f(100); f.insert("x"); return f.hash_of("x"); }
CPP
cat > "$work/b.cpp" <<'CPP'
#include <ccf/ccf.hpp>
#include <xxhash.h>
#include <cstdio>
std::uint64_t in_a();
int main() {
  ccf::cuckoo_filter<std::string> f(100);
  if (f.hash_of("x") != in_a()) { std::puts("hash differs between translation units"); return 1; }
  return f.insert("x") && f.contains("x") ? 0 : 1;
}
CPP
"$cxx" -std=c++20 "${strict[@]}" -I "$src/include" "${extra[@]}" "$work/a.cpp" "$work/b.cpp" \
  -o "$work/ab" -pthread 2> "$work/err" ||
  { cat "$work/err"; fail "two translation units with <xxhash.h>"; }
"$work/ab" || fail "two translation units: wrong result"
# ccf::runtime_filter header-only, as installed ccf has it: without ccf_runtime_models (and
# CCF_RUNTIME_FILTER_PREBUILT), the program's own source compiles every filter type.
cat > "$work/runtime.cpp" <<'CPP'
#include <ccf/runtime_filter.hpp>
#include <string>
int main() {
  ccf::runtime_filter f(ccf::filter_config::for_rate(1000, 0.001));
  ccf::runtime_filter g(ccf::filter_config::growing_for_rate(100, 0.001));
  for (int i = 0; i < 1000; ++i)
    if (!f.insert("key" + std::to_string(i)) || !g.insert("key" + std::to_string(i))) return 1;
  const ccf::runtime_filter h = ccf::runtime_filter::load(f.to_bytes());
  const ccf::runtime_filter j = ccf::runtime_filter::load(g.to_bytes());
  if (!j.growing() || h.size() != 1000) return 2;
  for (int i = 0; i < 1000; ++i)
    if (!h.contains("key" + std::to_string(i)) || !j.contains("key" + std::to_string(i))) return 3;
  return 0;
}
CPP
"$cxx" -std=c++20 "${strict[@]}" -I "$src/include" "${extra[@]}" "$work/runtime.cpp" \
  -o "$work/runtime" -pthread 2> "$work/err" ||
  { cat "$work/err"; fail "runtime_filter without ccf_runtime_models"; }
"$work/runtime" || fail "runtime_filter without ccf_runtime_models: wrong result"
# Misuse that compiled, or failed deep inside ccf, fails where it is written, saying why: a key
# type without a hash, and a rate where a static filter takes its seed.
expect_compile_error() {  # NAME TEXT SOURCE
  printf '%s\n' "$3" > "$work/bad.cpp"
  if "$cxx" -std=c++20 -I "$src/include" "${extra[@]}" -fsyntax-only "$work/bad.cpp" \
    2> "$work/err"; then
    fail "$1 compiles"
  fi
  grep -q -- "$2" "$work/err" || { head -5 "$work/err"; fail "$1: no '$2' in the errors"; }
}
expect_compile_error "a filter of a key type without a hash" "ccf: no hash for this key type" \
  '#include <ccf/ccf.hpp>
struct point { int x, y; };
ccf::cuckoo_filter<point> f(10);
ccf::growing_cuckoo_filter<double> g(10, 0.01);'
expect_compile_error "a static filter given a rate" "deleted function" \
  '#include <ccf/ccf.hpp>
#include <string>
ccf::cuckoo_filter<std::string> f(1000000, 0.001);'
# In an older language mode the first error is ccf's one line, not `requires` and concepts.
printf '#include <ccf/ccf.hpp>\nint main() { return 0; }\n' > "$work/old.cpp"
if "$cxx" -std=c++17 -I "$src/include" "${extra[@]}" -fsyntax-only "$work/old.cpp" \
  2> "$work/err"; then
  fail "ccf compiles as C++17"
fi
first=$(grep -m 1 "error" "$work/err" || true)
[[ $first == *"ccf needs C++20"* ]] || fail "C++17: the first error is not ccf's: $first"
echo "headers: $count public and $detail detail headers compile alone; two-unit program with" \
  "<xxhash.h> ok; runtime_filter header-only ok; misuse and C++17 get clear errors"
