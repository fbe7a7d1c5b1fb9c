#!/usr/bin/env bash
# Installs ccf into a temporary prefix with `cmake --install`, checks what was installed, then
# builds and runs a find_package(ccf) consumer and a pkg-config consumer against it
# (consumers.sh), and checks how the CMake package config finds xxHash's header.
set -Eeuo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
ccf_test_name="install"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'exit 143' TERM INT
version=$(ccf_version "$src")
# Every step stops by then (CTest's TIMEOUT for this test is 600 s).
export CCF_TEST_DEADLINE=${CCF_TEST_DEADLINE:-$(($(date +%s) + 540))}
prefix=$work/prefix

step "configure ccf (version $version)"
quiet bounded 300 cmake -S "$src" -B "$work/build" -DCCF_BUILD_TESTS=OFF -DCCF_BUILD_BENCH=OFF \
  -DCCF_BUILD_TOOLS=OFF -DCCF_INSTALL=ON -DCMAKE_INSTALL_PREFIX="$prefix"
step "cmake --install"
quiet bounded 300 cmake --install "$work/build"

step "installed files"
for f in include/ccf/ccf.hpp include/ccf/version.hpp share/pkgconfig/ccf.pc; do
  [ -f "$prefix/$f" ] || { echo "missing: $prefix/$f" >&2; false; }
done
for f in ccfConfig.cmake ccfConfigVersion.cmake ccfTargets.cmake; do
  compgen -G "$prefix/lib*/cmake/ccf/$f" >/dev/null || { echo "missing: $prefix/lib*/cmake/ccf/$f" >&2; false; }
done
step "ccf.pc names the install prefix"
grep -qx "prefix=$prefix" "$prefix/share/pkgconfig/ccf.pc" || {
  cat "$prefix/share/pkgconfig/ccf.pc" >&2; false; }

step "consumers"
bash "$here/consumers.sh" "$version" "$work/consumers" "$prefix"

# xxHash's include directory reaches the consumer through ccf::ccf: with xxhash.h alone in a
# directory of its own, named by CCF_XXHASH_INCLUDE_DIR, the consumer compiles with it.
step "xxHash include directory passed on by ccf::ccf"
xxhash_dir=$(sed -n 's/^CCF_XXHASH_INCLUDE_DIR:PATH=//p' "$work/build/CMakeCache.txt")
mkdir -p "$work/xxhash-only" "$work/empty"
cp "$xxhash_dir/xxhash.h" "$work/xxhash-only/"
quiet bounded 300 cmake -S "$here/consumer" -B "$work/consumer-xxhash" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCCF_XXHASH_INCLUDE_DIR="$work/xxhash-only" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
grep -q -- "$work/xxhash-only" "$work/consumer-xxhash/compile_commands.json" || {
  echo "the consumer's compile command does not name $work/xxhash-only:" >&2
  cat "$work/consumer-xxhash/compile_commands.json" >&2; false; }
quiet bounded 300 cmake --build "$work/consumer-xxhash"
bounded 60 "$work/consumer-xxhash/consumer"

step "find_package(ccf) fails, saying why, when xxhash.h is not where CCF_XXHASH_INCLUDE_DIR says"
if bounded 300 cmake -S "$here/consumer" -B "$work/consumer-noxxhash" -DCMAKE_PREFIX_PATH="$prefix" \
     -DCCF_XXHASH_INCLUDE_DIR="$work/empty" >"$work/noxxhash.log" 2>&1; then
  echo "configured although xxhash.h is missing" >&2; false
fi
grep -q "libxxhash-dev" "$work/noxxhash.log" || { cat "$work/noxxhash.log" >&2; false; }
# CMake 4 refuses policy versions below 3.5: there, no consumer below 3.3 exists.
cmake_major=$(cmake --version | sed -n 's/^cmake version \([0-9]*\)\..*/\1/p')
if [ "${cmake_major:-4}" -lt 4 ]; then
step "find_package(ccf) from a consumer whose cmake_minimum_required is 3.1 (IN_LIST off)"
mkdir -p "$work/old-policy"
cat > "$work/old-policy/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.1)
project(old_policy LANGUAGES CXX)
find_package(ccf CONFIG REQUIRED)
add_executable(consumer "${CONSUMER_MAIN}")
set_property(TARGET consumer PROPERTY CXX_STANDARD 20)
target_link_libraries(consumer PRIVATE ccf::ccf)
EOF
quiet bounded 300 cmake -S "$work/old-policy" -B "$work/old-policy/build" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCONSUMER_MAIN="$here/consumer/main.cpp"
quiet bounded 300 cmake --build "$work/old-policy/build"
bounded 60 "$work/old-policy/build/consumer"
fi

step "a relative --prefix: ccf.pc names it as an absolute path"
mkdir -p "$work/cwd"
(cd "$work/cwd" && quiet bounded 300 cmake --install "$work/build" --prefix relative)
grep -qx "prefix=$work/cwd/relative" "$work/cwd/relative/share/pkgconfig/ccf.pc" || {
  cat "$work/cwd/relative/share/pkgconfig/ccf.pc" >&2; false; }

step "add_subdirectory(ccf) leaves the parent's build type alone"
mkdir -p "$work/parent"
cat > "$work/parent/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.20)
project(parent LANGUAGES CXX)
add_subdirectory("$src" ccf)
EOF
quiet bounded 300 cmake -S "$work/parent" -B "$work/parent/build"
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$work/parent/build/CMakeCache.txt")
[ -z "$build_type" ] || { echo "CMAKE_BUILD_TYPE became '$build_type'" >&2; false; }
echo "install: ok"
