#!/usr/bin/env bash
# Installs the pinned npm packages of examples/vitest (the official openai SDK and vitest) that the
# `examples.vitest` ctest runs, exactly as examples/vitest/package-lock.json pins them, into the
# repo's cache .cache/examples-vitest/ (gitignored: never commit it). See npm_ci_pinned.sh.
#
# usage: scripts/install_examples.sh      (HICCUP_EXAMPLES_CACHE overrides the directory)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exec "$root/scripts/npm_ci_pinned.sh" "$root/examples/vitest" "${HICCUP_EXAMPLES_CACHE:-$root/.cache/examples-vitest}" \
  install_examples.sh "example packages"
