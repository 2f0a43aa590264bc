#!/usr/bin/env bash
# The long fuzz campaign: every target for SECONDS each (default 900), corpus
# kept in build/fuzz/corpus-work between runs; a target short of 1 M
# executions by then runs on until it has them (K3_FUZZ_MIN_EXECS). See
# scripts/fuzz_run.sh.
set -euo pipefail
K3_FUZZ_MIN_EXECS=${K3_FUZZ_MIN_EXECS:-1000000} exec "$(dirname "$0")/fuzz_run.sh" "${1:-900}"
