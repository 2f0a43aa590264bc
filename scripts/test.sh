#!/usr/bin/env bash
# README's test command: install deps, build (Release, warnings as errors), run
# every test; then the same suite under ASan+UBSan.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/install_deps.sh
jobs=$(nproc)
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DK3_WERROR=ON
cmake --build build/release -j "$jobs"
ctest --test-dir build/release --output-on-failure -j "$jobs" --timeout 1200
# Short libFuzzer run of the header/index/config/manifest parsers (clang-14).
if [ "${K3_SKIP_FUZZ:-0}" != 1 ]; then
  bash scripts/fuzz_run.sh "${K3_FUZZ_SECONDS:-20}"
fi
if [ "${K3_SKIP_ASAN:-0}" != 1 ]; then
  cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DK3_SANITIZE=ON -DK3_BUILD_BENCH=OFF
  cmake --build build/asan -j "$jobs"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build/asan --output-on-failure -j "$jobs" --timeout 2400 -LE slow
fi
