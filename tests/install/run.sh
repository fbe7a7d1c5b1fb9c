#!/usr/bin/env bash
# Installs ccf into a temporary prefix, then configures, builds and runs a consumer project that
# uses find_package(ccf) and the ccf::ccf target.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake -S "$src" -B "$work/build" -DCCF_BUILD_TESTS=OFF -DCCF_BUILD_BENCH=OFF -DCCF_BUILD_TOOLS=OFF \
  -DCCF_INSTALL=ON -DCMAKE_INSTALL_PREFIX="$work/prefix" >/dev/null
cmake --install "$work/build" >/dev/null
cmake -S "$src/tests/install/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
"$work/consumer/consumer"
