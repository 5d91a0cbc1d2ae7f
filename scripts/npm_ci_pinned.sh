#!/usr/bin/env bash
# Installs the npm packages pinned by SRC/package.json and SRC/package-lock.json into CACHE with
# `npm ci` (versions and integrity hashes from the lock file, nothing resolved anew). Idempotent:
# an install made from the same lock file is left alone. Fails loudly (non-zero exit, a message on
# stderr) when the install fails. Used by install_sdks.sh and install_examples.sh.
#
# usage: scripts/npm_ci_pinned.sh SRC CACHE WHO WHAT    (WHO names the caller in messages, WHAT
#        what it installs, e.g. "SDKs")
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="$1"
cache="$2"
who="$3"
what="$4"
stamp="$cache/installed.sha256"
log="$cache/install.log"

die() { echo "$who: error: $*" >&2; exit 1; }

[[ -f "$src/package.json" && -f "$src/package-lock.json" ]] ||
  die "$src/package.json or package-lock.json is missing"

# shellcheck source=scripts/node_env.sh
source "$root/scripts/node_env.sh"

# The pinned name@version pairs, read from package.json's dependencies.
pinned() {
  node -e 'const d = require(process.argv[1]).dependencies;
           for (const [n, v] of Object.entries(d)) console.log(n + " " + v);' "$src/package.json"
}

# Every pinned package is in node_modules at its pinned version (a local `file:` package, e.g.
# examples/vitest's @hiccup/test-helper, is linked: present is enough).
versions_ok() {
  local name version manifest
  while read -r name version; do
    manifest="$cache/node_modules/$name/package.json"
    [[ -f "$manifest" ]] || return 1
    [[ "$version" == file:* ]] && continue
    [[ "$(node -p 'require(process.argv[1]).version' "$manifest")" == "$version" ]] || return 1
  done < <(pinned)
}

want="$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -d' ' -f1)"
ensure_node "$who" "the pinned $what"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] && versions_ok; then
  echo "$what already installed at $cache: $(pinned | tr ' \n' '@ ')"
  exit 0
fi

echo "installing the pinned $what into $cache: $(pinned | tr ' \n' '@ ')"
mkdir -p "$cache" || die "cannot create $cache"
rm -f "$stamp"
cp "$src/package.json" "$src/package-lock.json" "$cache/"
# A `file:` dependency's path is relative to SRC: rewritten relative to CACHE in both copies.
node -e 'const fs = require("fs"), path = require("path");
  const [src, cache] = process.argv.slice(1);
  const pkg = JSON.parse(fs.readFileSync(cache + "/package.json")), lock = JSON.parse(fs.readFileSync(cache + "/package-lock.json"));
  let changed = false;
  for (const [name, spec] of Object.entries(pkg.dependencies || {})) {
    if (!spec.startsWith("file:")) continue;
    const from = spec.slice(5), to = path.relative(cache, path.resolve(src, from));
    if (from === to) continue;
    pkg.dependencies[name] = lock.packages[""].dependencies[name] = "file:" + to;
    lock.packages[to] = lock.packages[from];
    delete lock.packages[from];
    lock.packages["node_modules/" + name].resolved = to;
    changed = true;
  }
  if (changed) {
    fs.writeFileSync(cache + "/package.json", JSON.stringify(pkg, null, 2));
    fs.writeFileSync(cache + "/package-lock.json", JSON.stringify(lock, null, 2));
  }' "$src" "$cache"
# npm ci: exactly the lock file (fails when package.json and the lock disagree), node_modules
# removed first. --ignore-scripts: the pinned packages need no install script (e.g. genai's
# preinstall is a no-op, protobufjs's postinstall only prints a hint).
if ! (cd "$cache" && npm ci --ignore-scripts --no-audit --no-fund) >"$log" 2>&1; then
  tail -20 "$log" >&2
  die "npm ci in $cache failed (full log: $log)"
fi
versions_ok || die "npm ci succeeded, but $cache/node_modules does not hold the pinned versions (log: $log)"
echo "$want" >"$stamp"
echo "$what installed at $cache/node_modules"
