#!/usr/bin/env bash
# Installs the pinned external agent CLIs hiccup drives as black boxes into the repo's cache
# (.cache/npm/, gitignored: never commit it). Idempotent: an agent already installed at its pinned
# version is left alone. Fails loudly (non-zero exit, a message on stderr) when an install fails.
#
# usage: scripts/install_agents.sh [AGENT...]     (default: all; known: gemini-cli)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${HICCUP_AGENT_CACHE:-$root/.cache/npm}"

die() { echo "install_agents.sh: error: $*" >&2; exit 1; }

# shellcheck source=scripts/node_env.sh
source "$root/scripts/node_env.sh"

# name → npm package spec, install prefix, binary inside the prefix
install_npm() {
  local name="$1" spec="$2" version="$3" prefix="$cache/$1-$3" bin="$4"
  local pkg="${spec%@*}"
  local installed="$prefix/node_modules/$pkg/package.json"
  if [[ -x "$prefix/$bin" && -f "$installed" ]] &&
     grep -q "\"version\": *\"$version\"" "$installed"; then
    echo "$name $version: already installed at $prefix"
    return 0
  fi
  ensure_node "install_agents.sh" "gemini-cli"
  echo "$name $version: installing $spec into $prefix"
  mkdir -p "$prefix"
  # --ignore-scripts: the optional native add-ons (keytar, node-pty) are not needed headless.
  if ! npm install --prefix "$prefix" --no-audit --no-fund --no-save --ignore-scripts "$spec" >"$prefix/install.log" 2>&1; then
    tail -20 "$prefix/install.log" >&2
    die "npm install $spec failed (full log: $prefix/install.log)"
  fi
  [[ -x "$prefix/$bin" ]] || die "$spec installed, but $prefix/$bin is missing"
  grep -q "\"version\": *\"$version\"" "$installed" || die "$spec installed, but $installed is not version $version"
  echo "$name $version: installed ($prefix/$bin)"
}

install_agent() {
  case "$1" in
    gemini-cli) install_npm gemini-cli "@google/gemini-cli@0.61.0" 0.61.0 node_modules/.bin/gemini ;;
    *) die "unknown agent \"$1\" (known: gemini-cli)" ;;
  esac
}

agents=("$@")
[[ ${#agents[@]} -gt 0 ]] || agents=(gemini-cli)
for a in "${agents[@]}"; do install_agent "$a"; done
