#!/usr/bin/env bash
# README's main job on an embedded default: install, build, generate the tiny
# synthetic K3 snapshot, repack it, verify it, build its tokenizer.json, run it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/install_deps.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j "$(nproc)" --target k3-repack k3-verify k3-tokgen k3-run
bin=build/release/bin
out=${K3_DEMO_OUT:-out/demo}
mkdir -p "$out"
[ -f "$out/tiny-hf/model.safetensors.index.json" ] ||
  /usr/bin/python3 scripts/k3_synth.py --preset tiny --seed 1 --out "$out/tiny-hf"
echo "== k3-repack"; "$bin/k3-repack" "$out/tiny-hf" "$out/tiny-k3" --bits 8
echo "== k3-verify --full"; "$bin/k3-verify" "$out/tiny-k3" --full
echo "== k3-tokgen"; "$bin/k3-tokgen" "$out/tiny-k3" -o "$out/tiny-k3/tokenizer.json"
echo "== k3-run"; "$bin/k3-run" "$out/tiny-k3" -p "The quick brown fox" -n 24
