# Sourced by the npm install scripts (install_agents.sh, npm_ci_pinned.sh): ensure_node WHO WHAT
# makes sure Node.js >= 20 and npm are on PATH. The machine image ships them; where they are
# missing, Debian's nodejs and npm are installed (Debian 12's nodejs is 18: too old, which then
# fails clearly). WHO prefixes messages, WHAT names what needs Node.js 20. Needs die() defined.
ensure_node() {
  local who="$1" what="$2"
  if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
    echo "$who: node/npm missing: installing Debian's nodejs and npm"
    local sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq && DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq nodejs npm ||
      die "could not install nodejs and npm from Debian's packages"
  fi
  local major
  major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
  [[ "$major" -ge 20 ]] || die "node $(node --version 2>/dev/null) is too old: $what needs Node.js >= 20"
}
