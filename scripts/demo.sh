#!/usr/bin/env bash
# README's main job: install, build, then run k3-mini (a small model with K3's
# exact architecture, trained on real text, committed in models/k3-mini in the
# real HF snapshot layout): repack it, verify it, build its tokenizer.json,
# generate text, and answer a chat question (think channel, then response).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/install_deps.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j "$(nproc)" --target k3-repack k3-verify k3-tokgen k3-run
bin=build/release/bin
out=${K3_DEMO_OUT:-out/demo}
model=models/k3-mini
mkdir -p "$out"
echo "== k3-repack"; "$bin/k3-repack" "$model" "$out/k3-mini" --bits 8
echo "== k3-verify --full"; "$bin/k3-verify" "$out/k3-mini" --full
echo "== k3-tokgen"; "$bin/k3-tokgen" "$out/k3-mini" -o "$out/k3-mini/tokenizer.json"
echo "== k3-run -p"; "$bin/k3-run" "$out/k3-mini" -p "And God said unto Moses," -n 40 --temp 0
echo "== k3-run --chat"; "$bin/k3-run" "$out/k3-mini" --chat -p 'What does the word "bread" mean?' -n 80 --temp 0
