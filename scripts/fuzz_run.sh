#!/usr/bin/env bash
# Builds the libFuzzer targets (clang-14, -DK3_FUZZ=ON, build/fuzz) and runs
# each for SECONDS (default 20) on a working copy of its seed corpus
# (tests/fuzz/corpus/<target>) with the shared JSON dictionary.
# Prints the executions each target reached; exits non-zero on any crash,
# leak, timeout or sanitizer report (the reproducer is left in build/fuzz/),
# K3_FUZZ_MIN_EXECS (default 0): a target still short of it after SECONDS
# runs on by count until it has that many executions.
#   scripts/fuzz_run.sh [SECONDS] [TARGET...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-20}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(safetensors_header_fuzz index_config_fuzz expert_manifest_fuzz chat_output_parser_fuzz serve_request_fuzz grammar_fuzz)
build="$root/build/fuzz"
CXX=clang++-14 cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DK3_FUZZ=ON -DK3_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j "${K3_JOBS:-2}" --target "${targets[@]}"
status=0
for t in "${targets[@]}"; do
  name=${t%_fuzz}
  work="$build/corpus-work/$name"
  mkdir -p "$work" "$build/artifacts/$name"
  cp -n "$root/tests/fuzz/corpus/$name/"* "$work/" 2>/dev/null || true
  log="$build/$name.log"
  min=${K3_FUZZ_MIN_EXECS:-0}
  # One timed run; a target that is still short of $min executions then runs
  # on (same corpus) for the rest, by count, so slow targets reach it too.
  execs=0
  rc=0
  limit=(-max_total_time="$secs")
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
  cov=$(grep -E '^#[0-9]+.*(DONE|pulse|NEW|REDUCE)' "$log" | tail -1 | grep -o 'cov: [0-9]*' || true)
  echo "fuzz $t: ${secs}s+, $execs executions, $cov, corpus $(ls "$work" | wc -l) inputs, exit $rc"
  if [ $rc -ne 0 ]; then
    status=1
    grep -E 'ERROR|SUMMARY|artifact' "$log" | head -20
  elif [ "$execs" -lt "$min" ]; then
    status=1
    echo "fuzz $t: fewer than $min executions"
  fi
done
exit $status
