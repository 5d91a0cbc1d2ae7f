#!/usr/bin/env bash
# Builds the Debian package of hiccup (CPack, CMakeLists.txt "Install"): the hiccup binary of the
# plain build in /usr/bin (stripped), its run-time data in /usr/share/hiccup (agent recipes,
# known-failure pins, scenario schemas, bundled scenarios), the README and docs in
# /usr/share/doc/hiccup; Depends from dpkg-shlibdeps. Builds `hiccup` first when BUILD has a
# build.ninja, and prints the package's path and size.
#
# usage: scripts/package.sh [BUILD]      (default build/; install with: apt-get install ./hiccup_*.deb)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
die() { echo "package.sh: error: $*" >&2; exit 1; }
command -v dpkg-shlibdeps >/dev/null || die "dpkg-shlibdeps is missing (Debian: apt-get install dpkg-dev)"
[[ -f "$build/CMakeCache.txt" ]] || die "$build is not a configured build tree (scripts/setup.sh makes build/)"
if [[ -f "$build/build.ninja" ]]; then
  nice ninja -C "$build" -j2 hiccup
fi
(cd "$build" && cpack -G DEB) >"$build/package.log" 2>&1 || { tail -30 "$build/package.log" >&2; die "cpack failed (log: $build/package.log)"; }
deb="$(ls -t "$build"/hiccup_*.deb | head -1)"
echo "$deb: $(du -h "$deb" | cut -f1)"
dpkg-deb --field "$deb" Package Version Depends Recommends
