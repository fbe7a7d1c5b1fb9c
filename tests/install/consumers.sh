#!/usr/bin/env bash
# Builds and runs the two consumers of an installed ccf, as a user would:
#   consumer/        a CMake project: find_package(ccf CONFIG REQUIRED) and ccf::ccf
#   pkgconfig/main.cpp  one file: ${CXX:-g++} -std=c++20 main.cpp $(pkg-config --cflags --libs ccf)
# and checks that each found the ccf meant, and that the programs run and answer right.
# Usage: consumers.sh VERSION WORKDIR PREFIX [ROOT]
#   PREFIX: the prefix ccf was installed to (the one its files name). /usr with no ROOT: the
#   system's ccf, found with no search path set. ROOT: ccf's files lie under ROOT/PREFIX (a
#   package unpacked into ROOT).
set -Eeuo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ccf_test_name="consumers"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"
[ $# -ge 3 ] || { echo "usage: consumers.sh VERSION WORKDIR PREFIX [ROOT]" >&2; exit 2; }
version=$1 work=$2 prefix=$3 root=${4:-}
location=$root$prefix
mkdir -p "$work"

cmake_args=()
unset PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR CMAKE_PREFIX_PATH
if [ -n "$root" ] || [ "$prefix" != /usr ]; then
  cmake_args=(-DCMAKE_PREFIX_PATH="$location")
  export PKG_CONFIG_PATH=$location/share/pkgconfig
fi
if [ -n "$root" ]; then
  export PKG_CONFIG_SYSROOT_DIR=$root  # ccf.pc names PREFIX; its files lie under ROOT
fi

step "CMake consumer: configure (find_package(ccf CONFIG REQUIRED))"
quiet bounded 300 cmake -S "$here/consumer" -B "$work/cmake" "${cmake_args[@]}"
step "CMake consumer: found the ccf in $location"
ccf_dir=$(sed -n 's/^ccf_DIR:PATH=//p' "$work/cmake/CMakeCache.txt")
case "$ccf_dir" in
  "$location"/lib*/cmake/ccf) ;;
  *) echo "ccf_DIR is '$ccf_dir', not under $location" >&2; false ;;
esac
step "CMake consumer: build"
quiet bounded 300 cmake --build "$work/cmake"
step "CMake consumer: run"
bounded 60 "$work/cmake/consumer"

step "pkg-config consumer: pkg-config finds ccf $version in $location/share/pkgconfig"
bounded 30 pkg-config --print-errors --exists ccf
[ "$(pkg-config --modversion ccf)" = "$version" ] || {
  echo "pkg-config --modversion ccf: $(pkg-config --modversion ccf), not $version" >&2; false; }
[ "$(pkg-config --variable=pcfiledir ccf)" = "$location/share/pkgconfig" ] || {
  echo "ccf.pc found in $(pkg-config --variable=pcfiledir ccf)" >&2; false; }
flags=$(pkg-config --cflags --libs ccf)
echo "   pkg-config --cflags --libs ccf: $flags"
step "pkg-config consumer: compile"
# shellcheck disable=SC2086  # the flags are words
quiet bounded 300 "${CXX:-g++}" -std=c++20 -O1 "$here/pkgconfig/main.cpp" $flags -o "$work/pc-consumer"
step "pkg-config consumer: run"
bounded 60 "$work/pc-consumer" "$version"
