#!/usr/bin/env bash
# Builds ccf and its tools (the `ccf` command in build/release/tools/ccf, ccf-demo) and runs the
# demo: every filter on the embedded default workload, one table. Installs missing Debian packages
# first. Extra arguments go to ccf-demo (see --help).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DCCF_BUILD_TOOLS=ON >/dev/null
cmake --build build/release -j"$(nproc)" --target ccf-demo ccf-cli
./build/release/tools/ccf-demo "$@"
