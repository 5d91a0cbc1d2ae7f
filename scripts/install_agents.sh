#!/usr/bin/env bash
# Installs the pinned external agent CLIs hiccup drives as black boxes into the repo's cache
# (.cache/npm/, gitignored: never commit it). Idempotent: an agent already installed at its pinned
# version is left alone. Fails loudly (non-zero exit, a message on stderr) when an install fails.
#
# usage: scripts/install_agents.sh [AGENT...]     (default: all; known: gemini-cli codex claude-code qwen-code opencode)
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
  ensure_node "install_agents.sh" "$spec"
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

known="gemini-cli codex claude-code qwen-code opencode"

install_agent() {
  case "$1" in
    gemini-cli) install_npm gemini-cli "@google/gemini-cli@0.61.0" 0.61.0 node_modules/.bin/gemini ;;
    codex) install_npm codex "@openai/codex@0.171.0" 0.171.0 node_modules/.bin/codex ;;
    claude-code)
      # npm skips its postinstall (--ignore-scripts); the platform binary is run directly.
      install_npm claude-code "@anthropic-ai/claude-code@2.1.332" 2.1.332 \
        node_modules/@anthropic-ai/claude-code-linux-x64/claude ;;
    qwen-code)
      install_npm qwen-code "@qwen-code/qwen-code@0.24.4" 0.24.4 node_modules/.bin/qwen
      # its vendored ripgrep may lack the exec bit (EACCES on stderr otherwise)
      find "$cache/qwen-code-0.24.4/node_modules/@qwen-code" -path '*ripgrep*' -name rg -type f -exec chmod +x {} + 2>/dev/null || true ;;
    opencode)
      # --ignore-scripts leaves .bin/opencode a stub that only says "postinstall was not run";
      # the platform binary is run directly.
      install_npm opencode "opencode-ai@1.18.33" 1.18.33 node_modules/opencode-linux-x64/bin/opencode ;;
    *) die "unknown agent \"$1\" (known: $known)" ;;
  esac
}

agents=("$@")
[[ ${#agents[@]} -gt 0 ]] || agents=($known)
for a in "${agents[@]}"; do install_agent "$a"; done
