#!/usr/bin/env bash
# Installs the pytest plugin of clients/python (pytest-hiccup) as a user would, with
# `pip install ./clients/python`, into TARGET/site for the ctest clients.pytest-plugin (which puts
# TARGET/site on PYTHONPATH: pytest finds the plugin through its installed entry point). Debian's
# pip and setuptools only (python3-pip, python3-setuptools; scripts/setup.sh installs them):
# --no-build-isolation --no-index, nothing from PyPI. The package is copied first, since pip
# builds in the source tree (build/, *.egg-info). Idempotent: an install of the same files is
# left alone.
#
# usage: scripts/install_python_client.sh [TARGET]    (default .cache/python-client)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${1:-$root/.cache/python-client}"
src="$root/clients/python"
die() { echo "install_python_client.sh: error: $*" >&2; exit 1; }

want="$(cd "$src" && find . -type f ! -path './tests/*' ! -path './build/*' ! -path '*.egg-info/*' \
  ! -name '*.pyc' -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)"
if [[ -f "$target/installed.sha256" && "$(cat "$target/installed.sha256")" == "$want" &&
      -f "$target/site/pytest_hiccup/plugin.py" ]]; then
  echo "pytest-hiccup already installed at $target/site"
  exit 0
fi
/usr/bin/python3 -m pip --version >/dev/null 2>&1 ||
  die "Debian's pip is missing: apt-get install python3-pip python3-setuptools (scripts/setup.sh does)"
rm -rf "$target"
mkdir -p "$target/src"
(cd "$src" && tar --exclude=./tests --exclude=./build --exclude='*.egg-info' -cf - .) | tar -xf - -C "$target/src"
start=$(date +%s%N)
if ! PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 /usr/bin/python3 -m pip install --quiet \
    --no-build-isolation --no-deps --no-index --target "$target/site" "$target/src" >"$target/install.log" 2>&1; then
  cat "$target/install.log" >&2
  die "pip install $src failed"
fi
echo "$want" >"$target/installed.sha256"
echo "pytest-hiccup installed at $target/site in $(( ($(date +%s%N) - start) / 1000000 )) ms"
