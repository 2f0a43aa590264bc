#!/usr/bin/env bash
# README's main job: install, build, then run k3-mini (a small model with K3's
# exact architecture, trained on real text, committed in models/k3-mini in the
# real HF snapshot layout): repack it, verify it, build its tokenizer.json,
# generate text (greedy, then with a repetition penalty), and answer a chat
# question (think channel, then response).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/install_deps.sh
bash scripts/configure_release.sh >/dev/null  # the same build as scripts/test.sh
cmake --build build/release -j "$(nproc)" --target k3-repack k3-verify k3-tokgen k3-run
bin=build/release/bin
out=${K3_DEMO_OUT:-out/demo}
model=models/k3-mini
mkdir -p "$out"
echo "== k3-repack"; "$bin/k3-repack" "$model" "$out/k3-mini" --bits 8
echo "== k3-verify --full"; "$bin/k3-verify" "$out/k3-mini" --full
echo "== k3-tokgen"; "$bin/k3-tokgen" "$out/k3-mini" -o "$out/k3-mini/tokenizer.json"
# Greedy plain text from a 2 M-parameter model soon loops; a repetition
# penalty (llama.cpp's / vLLM's, over the prompt's and the output's tokens) breaks the loop.
echo "== k3-run -p"; "$bin/k3-run" "$out/k3-mini" -p "And God said unto Moses," -n 40 --temp 0
echo "== k3-run -p --repeat-penalty 1.5"
"$bin/k3-run" "$out/k3-mini" -p "And God said unto Moses," -n 40 --temp 0 --repeat-penalty 1.5
echo "== k3-run --chat"; "$bin/k3-run" "$out/k3-mini" --chat -p 'What does the word "bread" mean?' -n 80 --temp 0
