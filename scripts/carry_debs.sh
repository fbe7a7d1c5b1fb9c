#!/usr/bin/env bash
# Unpacks the Debian packages of ccf's optional benchmark dependencies into a folder (default
# <repo>/.carry, git-ignored) so that they can travel to a machine that lacks them (the benchmark
# device has a compiler, CMake, GoogleTest and Google Benchmark, nothing else):
#   libxxhash-dev   xxhash.h, the one header ccf itself needs
#   libcuckoo-dev   the libcuckoo baseline (header only)
#   libcli11-dev    CLI11 (header only; ccf-bench has a built-in parser without it)
#   libtbb-dev, libtbb12, libtbbmalloc2, libtbbbind-2-5
#                   the TBB baseline (headers, CMake package and the shared libraries its CMake
#                   package names)
#   liblmdb-dev, liblmdb0
#                   LMDB, the baseline of ccf_kv_bench
# bench/CMakeLists.txt and scripts/bench_device.sh pick the folder up by themselves. gnuplot is not
# carried: gnuplot-nox needs about 60 MB of shared libraries (cairo, pango, libgd and its image
# codecs); draw the plots with scripts/plot.sh where gnuplot is installed instead.
#
#   scripts/carry_debs.sh [DEST]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:-$root/.carry}"
packages=(libxxhash-dev libcuckoo-dev libcli11-dev libtbb-dev libtbb12 libtbbmalloc2 libtbbbind-2-5
          liblmdb-dev liblmdb0)

download="$(mktemp -d)"
trap 'rm -rf "$download"' EXIT
(cd "$download" && apt-get download "${packages[@]}")
mkdir -p "$dest"
for deb in "$download"/*.deb; do
  echo "unpacking $(basename "$deb")"
  dpkg -x "$deb" "$dest"
done
rm -rf "$dest/usr/share/doc" "$dest/usr/share/man"
echo "carried into $dest: $(du -sh "$dest" | cut -f1)"
