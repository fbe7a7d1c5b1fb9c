#!/usr/bin/env bash
# Builds ccf and every tool — the `ccf` command (build/release/tools/ccf), ccf-demo, the Python
# package (build/release/python: PYTHONPATH=build/release/python python3 -c 'import ccf') and
# the Redis module (build/release/redis/ccf_redis.so) — and runs the demo: every filter on the
# embedded default workload, one table. Installs missing Debian packages first. Extra arguments
# go to ccf-demo (see --help).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DCCF_BUILD_TOOLS=ON -DCCF_BUILD_PYTHON=ON \
  -DCCF_BUILD_REDIS=ON -DPython3_EXECUTABLE=/usr/bin/python3 >/dev/null
cmake --build build/release -j"$(nproc)" --target ccf-demo ccf-cli ccf_python ccf_redis
./build/release/tools/ccf-demo "$@"
