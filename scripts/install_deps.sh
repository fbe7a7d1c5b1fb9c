#!/usr/bin/env bash
# Installs the Debian packages ccf's build, tests, benchmarks and tools need, if any are missing.
# Usage: scripts/install_deps.sh            (as root, or with sudo available)
set -euo pipefail
packages=(cmake g++ make libgtest-dev libgmock-dev libbenchmark-dev libxxhash-dev libcuckoo-dev
          libtbb-dev libcli11-dev gnuplot-nox spin git librocksdb-dev liblmdb-dev
          pkg-config dpkg-dev file pybind11-dev python3-dev python3-numpy python3-pytest
          redis-server redis-tools python3-redis)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "ccf: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
