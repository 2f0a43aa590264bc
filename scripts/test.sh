#!/usr/bin/env bash
# README's test command (and .ci/run's): install deps, build (Release, warnings
# as errors, the same configured build as scripts/demo.sh), run every test; a
# short libFuzzer run; then the same suite under ASan+UBSan.
# Ends with one line per stage (passed/failed/skipped counts; a stage that did
# not run because an earlier one failed says "not run") and exits non-zero if
# any stage failed. No `set -e`: a failure must not hide the summary.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
jobs=$(nproc)
summary=()
failed=""  # the first stage that failed

note() { summary+=("$(printf '%-26s %s' "$1:" "$2")"); }
fail() { note "$1" "FAILED ($2)"; [ -n "$failed" ] || failed=$1; }

# ctest_stage STAGE BUILD_DIR CTEST_ARGS...: runs the suite, records its counts.
ctest_stage() {
  local stage=$1 dir=$2; shift 2
  local junit="$root/$dir/ctest-junit.xml"
  rm -f "$junit"
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" --output-junit "$junit" "$@"
  local rc=$? counts
  if ! counts=$(/usr/bin/python3 scripts/ctest_junit_counts.py "$junit"); then
    fail "$stage" "ctest exit $rc, no JUnit report"
    return
  fi
  local p f s
  read -r p f s <<<"$counts"
  local line="$((p + f + s)) tests: $p passed, $f failed, $s skipped"
  if [ "$rc" -ne 0 ] || [ "$f" -ne 0 ]; then fail "$stage" "$line; ctest exit $rc"; else note "$stage" "passed ($line)"; fi
}

release_stage() {
  bash scripts/configure_release.sh || { fail "Release suite" "cmake configure failed"; return; }
  cmake --build build/release -j "$jobs" || { fail "Release suite" "build failed"; return; }
  ctest_stage "Release suite" build/release --timeout 1200
}

# Short libFuzzer run of the header/index/config/manifest/chat/request parsers (clang-14).
fuzz_stage() {
  local log=build/fuzz-run.log
  mkdir -p build
  bash scripts/fuzz_run.sh "${K3_FUZZ_SECONDS:-20}" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local ok bad
  ok=$(grep -c '^fuzz .*, exit 0$' "$log")
  bad=$(grep -c '^fuzz .*, exit [1-9][0-9]*$' "$log")
  local line="$((ok + bad)) targets: $ok passed, $bad failed, ${K3_FUZZ_SECONDS:-20} s each"
  if [ "$rc" -ne 0 ]; then
    [ $((ok + bad)) -eq 0 ] && line="fuzz targets did not build"
    fail "fuzz" "$line"
  else
    note "fuzz" "passed ($line)"
  fi
}

asan_stage() {
  # -g1: line tables, all a sanitizer report's stack needs, at ~3/4 of -g's compile time.
  # -O1: ~40 % less compile time than -O2; the kernels stay at -O2 (libs/CMakeLists.txt).
  cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DK3_SANITIZE=ON -DK3_BUILD_BENCH=OFF ||
    { fail "sanitizers (ASan+UBSan)" "cmake configure failed"; return; }
  cmake --build build/asan -j "$jobs" || { fail "sanitizers (ASan+UBSan)" "build failed"; return; }
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest_stage "sanitizers (ASan+UBSan)" build/asan --timeout 2400 -LE slow
}

# stage NAME SKIP_VARIABLE FUNCTION: runs it unless skipped or an earlier stage failed.
stage() {
  local name=$1 skipvar=$2 fn=$3
  if [ -n "$failed" ]; then note "$name" "not run ($failed failed)"
  elif [ -n "$skipvar" ] && [ "${!skipvar:-0}" = 1 ]; then note "$name" "skipped ($skipvar=1)"
  else "$fn"; fi
}

if bash scripts/install_deps.sh; then
  stage "Release suite" "" release_stage
else
  fail "install (scripts/install_deps.sh)" "exit status non-zero"
  note "Release suite" "not run ($failed failed)"
fi
stage "fuzz" K3_SKIP_FUZZ fuzz_stage
stage "sanitizers (ASan+UBSan)" K3_SKIP_ASAN asan_stage

echo
echo "== scripts/test.sh summary"
printf '%s\n' "${summary[@]}"
[ -z "$failed" ]
