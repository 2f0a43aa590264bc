#!/usr/bin/env bash
# The one configured Release build (build/release) that scripts/demo.sh and
# scripts/test.sh share: same directory, same cache options, so running one after
# the other does not recompile (a different -D would rebuild every object).
#   scripts/configure_release.sh [extra cmake args...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cmake -S "$root" -B "$root/build/release" -G Ninja -DCMAKE_BUILD_TYPE=Release -DK3_WERROR=ON "$@"
