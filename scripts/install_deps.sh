#!/usr/bin/env bash
# The one install step (README, .ci/run): Debian packages, then the npm
# packages the tokenizer oracle tests use. Idempotent; skips what is present.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pkgs=(cmake ninja-build g++ pkg-config ccache
      libcli11-dev libsimdjson-dev libzstd-dev libssl-dev libpcre2-dev
      libgtest-dev libgmock-dev libbenchmark-dev libcpp-httplib-dev
      clang-14 libclang-rt-14-dev python3-numpy python3-regex nodejs npm
      # k3-mini: PyTorch for its model/tests; the text packages its --smoke
      # training reads (fortunes, GCIDE, KJV) and tzdata's city names
      python3-torch libopenblas0-pthread fortunes fortunes-min dict-gcide bible-kjv tzdata
      # the web chat browser test (npm puppeteer-core drives it)
      chromium
      # the replica test: two servers sharing --state-cache-dir behind a round-robin proxy
      nginx)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
# nodejs/npm may come from elsewhere on dev boxes: only require the commands.
if command -v node >/dev/null && command -v npm >/dev/null; then
  missing=("${missing[@]/nodejs/}"); missing=("${missing[@]/npm/}")
fi
read -r -a missing <<<"${missing[*]:-}"
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi
# Also when package-lock.json changed since the last install (a new package).
if [ -f "$here/node/package.json" ] && { [ ! -d "$here/node/node_modules" ] ||
     [ "$here/node/package-lock.json" -nt "$here/node/node_modules/.package-lock.json" ]; }; then
  (cd "$here/node" && npm install --no-audit --no-fund)
fi
