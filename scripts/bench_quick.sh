#!/usr/bin/env bash
# The benchmark sweep at toy size (2 threads, small tables): checks end to end that building,
# every ccf-bench mode, ccf_micro and the plots work. Under a minute on 2 cores once built.
#
#   scripts/bench_quick.sh [OUT]      OUT defaults to ./out/quick
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exec "$root/scripts/bench_device.sh" --quick "${1:-./out/quick}"
