#!/usr/bin/env bash
# The long fuzz campaign: every target for SECONDS each (default 900), corpus
# kept in build/fuzz/corpus-work between runs. See scripts/fuzz_run.sh.
set -euo pipefail
exec "$(dirname "$0")/fuzz_run.sh" "${1:-900}"
