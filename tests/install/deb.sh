#!/usr/bin/env bash
# Builds ccf's Debian package with `cpack -G DEB`, checks its control fields and contents, then
# installs it and uses it as a user would: the `ccf` command, a find_package(ccf) consumer and a
# pkg-config consumer (consumers.sh).
#   As root: `dpkg -i` into the system, use it from /usr, then `dpkg --purge` it (also on failure).
#     Refuses to run if a package named ccf, or files it would overwrite, are already there.
#   Otherwise (or with CCF_DEB_TEST_UNPACK=1): unpacks it with `dpkg -x` into a temporary root,
#     checks its dependencies are installed, and uses it from there.
# Env: CCF_DEB_TEST_JOBS (build jobs, default 2), CCF_DEB_TEST_BUDGET (seconds the steps may take
# in all, default 780: CTest's TIMEOUT for this test is 900 and the purge needs the rest), CXX (the
# pkg-config consumer's compiler, default g++).
set -Eeuo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
ccf_test_name="deb"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"
version=$(ccf_version "$src")
jobs=${CCF_DEB_TEST_JOBS:-2}
export CCF_TEST_DEADLINE=${CCF_TEST_DEADLINE:-$(($(date +%s) + ${CCF_DEB_TEST_BUDGET:-780}))}
package=ccf
mode=unpack
if [ "$(id -u)" -eq 0 ] && [ "${CCF_DEB_TEST_UNPACK:-0}" != 1 ]; then mode=system; fi

work=$(mktemp -d)
installed=0
cleanup() {
  local rc=$?
  if [ "$installed" = 1 ]; then
    echo "-- deb: removing the package (dpkg --purge $package)"
    timeout 120 dpkg --purge "$package" >/dev/null || { echo "deb: dpkg --purge $package failed" >&2; rc=1; }
  fi
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# Files the package holds that must not be on the system before it is installed (dpkg would
# overwrite them and the purge remove them).
system_paths=(/usr/bin/ccf /usr/include/ccf /usr/share/pkgconfig/ccf.pc /usr/lib/cmake/ccf)

step "tools present"
for tool in cmake cpack dpkg dpkg-deb dpkg-shlibdeps file pkg-config "${CXX:-g++}"; do
  command -v "$tool" >/dev/null || { echo "deb: '$tool' is not installed (scripts/install_deps.sh)" >&2; false; }
done

if [ "$mode" = system ]; then
  step "no $package installed yet"
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$package" 2>/dev/null || true)
  if [ -n "$status" ] && [ "${status:1:1}" != n ]; then
    echo "deb: a package named $package is installed (dpkg status '$status'); remove it first," \
         "this test installs and purges its own" >&2
    false
  fi
  for p in "${system_paths[@]}" /usr/lib/*/cmake/ccf; do
    if [ -e "$p" ]; then
      echo "deb: $p exists; this test installs ccf into /usr and removes it after, so it refuses" \
           "to run over an existing ccf" >&2
      false
    fi
  done
fi

step "configure (Release, the tool only)"
quiet bounded 300 cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DCCF_BUILD_TESTS=OFF -DCCF_BUILD_BENCH=OFF -DCCF_BUILD_TOOLS=ON -DCCF_INSTALL=ON \
  -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON
step "build the ccf tool (ccf-cli, -j$jobs)"
quiet bounded 900 cmake --build "$work/build" --target ccf-cli -j"$jobs"
step "cpack -G DEB"
(cd "$work/build" && quiet bounded 300 cpack -G DEB -B "$work/package")
debs=("$work"/package/*.deb)
if [ ${#debs[@]} -ne 1 ] || [ ! -f "${debs[0]}" ]; then
  echo "expected one .deb, got: ${debs[*]}" >&2; false
fi
deb=${debs[0]}
echo "   $(basename "$deb")"

step "dpkg-deb --info: control fields"
dpkg-deb --info "$deb" >/dev/null
dpkg-deb --field "$deb" | sed 's/^/   /'
field() { dpkg-deb --field "$deb" "$1"; }
expect_field() {
  [ "$(field "$1")" = "$2" ] || { echo "$1 is '$(field "$1")', expected '$2'" >&2; false; }
}
expect_field Package "$package"
expect_field Version "$version"
expect_field Architecture "$(dpkg --print-architecture)"
expect_field Section libdevel
[ -n "$(field Maintainer)" ] || { echo "no Maintainer" >&2; false; }
[ -n "$(field Description)" ] || { echo "no Description" >&2; false; }
depends=$(field Depends)
# Each dependency's package name (alternatives and version constraints dropped).
dep_names=$(tr ',' '\n' <<<"$depends" | sed 's/|.*//; s/(.*//; s/:.*//; s/[[:space:]]//g' | sed '/^$/d')
for needed in libxxhash-dev libc6 libstdc++6; do  # headers; the tool's libraries (dpkg-shlibdeps)
  grep -qx "$needed" <<<"$dep_names" || { echo "Depends ($depends) lacks $needed" >&2; false; }
done

step "dpkg-deb --contents: headers, CMake config, ccf.pc, usr/bin/ccf"
dpkg-deb --contents "$deb" | awk '{print $NF}' | sed 's|^\./|/|' >"$work/contents"
for f in /usr/bin/ccf /usr/include/ccf/ccf.hpp /usr/include/ccf/version.hpp \
         /usr/include/ccf/kv/store.hpp /usr/share/pkgconfig/ccf.pc; do
  grep -qx "$f" "$work/contents" || { echo "the package lacks $f" >&2; false; }
done
for f in ccfConfig.cmake ccfConfigVersion.cmake ccfTargets.cmake; do
  grep -qE "^/usr/lib/([^/]+/)?cmake/ccf/$f\$" "$work/contents" || {
    echo "the package lacks /usr/lib/.../cmake/ccf/$f" >&2; false; }
done
outside=$(grep -v -e '^/usr/' -e '^/$' "$work/contents" || true)
[ -z "$outside" ] || { echo "the package has files outside /usr: $outside" >&2; false; }
step "ccf.pc in the package names prefix /usr"
dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./usr/share/pkgconfig/ccf.pc >"$work/ccf.pc"
grep -qx "prefix=/usr" "$work/ccf.pc" || { cat "$work/ccf.pc" >&2; false; }

if [ "$mode" = system ]; then
  step "dpkg -i"
  installed=1  # from here on, the exit trap purges it (also if dpkg -i fails half-way)
  quiet bounded 300 dpkg -i "$deb"
  status=$(dpkg-query -W -f='${db:Status-Abbrev}${Version}' "$package")
  [ "$status" = "ii $version" ] || { echo "dpkg-query says '$status' for $package" >&2; false; }
  step "ccf --version (/usr/bin/ccf, found on PATH)"
  [ "$(command -v ccf)" = /usr/bin/ccf ] || { echo "ccf on PATH is '$(command -v ccf)'" >&2; false; }
  out=$(bounded 30 ccf --version)
  [ "$out" = "ccf $version" ] || { echo "ccf --version printed '$out', expected 'ccf $version'" >&2; false; }
  step "consumers of the system's ccf"
  bash "$here/consumers.sh" "$version" "$work/consumers" /usr
  step "dpkg --purge"
  quiet bounded 300 dpkg --purge "$package"
  installed=0
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$package" 2>/dev/null || true)
  [ -z "$status" ] || [ "${status:1:1}" = n ] || { echo "after the purge: dpkg status '$status'" >&2; false; }
  for p in "${system_paths[@]}" /usr/lib/*/cmake/ccf; do
    [ ! -e "$p" ] || { echo "after the purge, $p is still there" >&2; false; }
  done
else
  step "the package's dependencies are installed"
  while read -r name; do
    s=$(dpkg-query -W -f='${db:Status-Abbrev}' "$name" 2>/dev/null || true)
    [ "${s:0:2}" = ii ] || { echo "dependency $name is not installed (status '$s')" >&2; false; }
  done <<<"$dep_names"
  root=$work/root
  step "dpkg -x into $root"
  quiet bounded 120 dpkg -x "$deb" "$root"
  step "ccf --version ($root/usr/bin/ccf)"
  out=$(bounded 30 "$root/usr/bin/ccf" --version)
  [ "$out" = "ccf $version" ] || { echo "ccf --version printed '$out', expected 'ccf $version'" >&2; false; }
  step "consumers of the unpacked ccf"
  bash "$here/consumers.sh" "$version" "$work/consumers" /usr "$root"
fi
echo "deb: ok ($mode)"
