#!/usr/bin/env bash
# Installs the pinned official provider SDKs (openai, @anthropic-ai/sdk, @google/genai) that the
# `sdk` ctests stream from the mock server with, exactly as tests/sdk/package-lock.json pins them,
# into the repo's cache .cache/sdk/ (gitignored: never commit it). See npm_ci_pinned.sh.
#
# usage: scripts/install_sdks.sh          (HICCUP_SDK_CACHE overrides the directory)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exec "$root/scripts/npm_ci_pinned.sh" "$root/tests/sdk" "${HICCUP_SDK_CACHE:-$root/.cache/sdk}" install_sdks.sh SDKs
