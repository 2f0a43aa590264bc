#!/usr/bin/env bash
# Builds the libFuzzer targets (clang-14, -DK3_FUZZ=ON, build/fuzz) and runs
# each for SECONDS (default 20) on a working copy of its seed corpus
# (tests/fuzz/corpus/<target>) with the shared JSON dictionary.
# Prints the executions each target reached; exits non-zero on any crash,
# leak, timeout or sanitizer report (the reproducer is left in build/fuzz/),
# K3_FUZZ_MIN_EXECS (default 0): a target still short of it after SECONDS
# runs on by count until it has that many executions.
# K3_JOBS (default: the CPU count) targets run at once, each one process: a
# target's SECONDS are its own, so 2 cores halve the wall time.
#   scripts/fuzz_run.sh [SECONDS] [TARGET...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-20}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(safetensors_header_fuzz index_config_fuzz expert_manifest_fuzz chat_output_parser_fuzz serve_request_fuzz grammar_fuzz)
build="$root/build/fuzz"
jobs=${K3_JOBS:-$(nproc)}
CXX=clang++-14 cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DK3_FUZZ=ON -DK3_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target "${targets[@]}"
# fuzz_one TARGET: runs it; prints its one-line result (and the report of a
# failure) at the end, so concurrent targets' lines do not interleave.
fuzz_one() {
  local t=$1 name=${1%_fuzz}
  local work="$build/corpus-work/$name"
  mkdir -p "$work" "$build/artifacts/$name"
  cp -n "$root/tests/fuzz/corpus/$name/"* "$work/" 2>/dev/null || true
  local log="$build/$name.log"
  local min=${K3_FUZZ_MIN_EXECS:-0}
  # One timed run; a target that is still short of $min executions then runs
  # on (same corpus) for the rest, by count, so slow targets reach it too.
  local execs=0 rc=0 ran
  local limit=(-max_total_time="$secs")
  : >"$log"
  while :; do
    set +e
    ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
      "$build/bin/$t" "$work" -dict="$root/tests/fuzz/json.dict" "${limit[@]}" \
      -max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$build/artifacts/$name/" >>"$log" 2>&1
    rc=$?
    set -e
    ran=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || echo 0)
    execs=$((execs + ran))
    [ $rc -ne 0 ] || [ "$ran" -eq 0 ] || [ "$execs" -ge "$min" ] && break
    limit=(-runs=$((min - execs)))
  done
  local cov
  cov=$(grep -E '^#[0-9]+.*(DONE|pulse|NEW|REDUCE)' "$log" | tail -1 | grep -o 'cov: [0-9]*' || true)
  local out
  out="fuzz $t: ${secs}s+, $execs executions, $cov, corpus $(ls "$work" | wc -l) inputs, exit $rc"
  if [ $rc -ne 0 ]; then
    out+=$'\n'$(grep -E 'ERROR|SUMMARY|artifact' "$log" | head -20 || true)
  elif [ "$execs" -lt "$min" ]; then
    out+=$'\n'"fuzz $t: fewer than $min executions"
    rc=1
  fi
  echo "$out"
  [ $rc -eq 0 ]
}

pids=()
status=0
for t in "${targets[@]}"; do
  if [ ${#pids[@]} -ge "$jobs" ]; then  # wait for the oldest before starting another
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
  fuzz_one "$t" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit $status
