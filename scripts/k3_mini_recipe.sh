#!/usr/bin/env bash
# k3-mini from nothing: data, the four training stages, the record, the export.
#
#   scripts/k3_mini_recipe.sh WORK_DIR [OUT_DIR=models/k3-mini]
#
# K3_MINI_THREADS (default 1) torch threads; K3_MINI_NICE (default 0).
# Every step's wall time goes to WORK_DIR/recipe_times.txt, and the total to
# the last line; models/k3-mini/README.md quotes them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:?usage: k3_mini_recipe.sh WORK_DIR [OUT_DIR]}
out=${2:-$root/models/k3-mini}
threads=${K3_MINI_THREADS:-1}
# OpenBLAS keeps its own worker pool beside torch's: left alone, its workers
# spin on the other core even at --threads 1.
export OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads
py=(nice -n "${K3_MINI_NICE:-0}" /usr/bin/python3)
mkdir -p "$work"
times=$work/recipe_times.txt
: > "$times"
t_all=$(date +%s)

step() {  # step NAME CMD...
  local name=$1 t0
  shift
  t0=$(date +%s)
  echo "== $name: $*" >&2
  "$@"
  echo "$name $(( $(date +%s) - t0 )) s" >> "$times"
}

train() {  # train STAGE_DIR FLAGS...
  local dir=$1
  shift
  step "$(basename "$dir")" "${py[@]}" "$root/scripts/train_k3_mini.py" --data "$work/copy" --out "$dir" \
    --threads "$threads" --batch 6 "$@"
}

step data "${py[@]}" "$root/scripts/k3_mini_data.py" --out "$work/base"
step copy_data "${py[@]}" "$root/scripts/k3_mini_copy_data.py" --base "$work/base" --out "$work/copy" \
  --chats 8000 --base-chats 12000
# 1: copy rows only, from an induction-head start.
train "$work/stage1" --steps 300 --seq 256 --repeat-rows 6 --prev-token-keys --warmup 10 --qat-frac 0 \
  --held-batches 1 --save-every 0 --probe-every 25
# 2: the text+chat mix, with repeat rows so copying is kept; QAT in the last 20 %.
train "$work/stage2" --init "$work/stage1/model.pt" --steps 900 --seq 384 --repeat-rows 2 --chat-rows 2 \
  --qat-frac 0.2 --save-every 100 --probe-every 50
# 3 and 4: bare-name episodes (" Name" -> "Name"), QAT throughout.
train "$work/stage3" --init "$work/stage2/model.pt" --steps 300 --seq 384 --repeat-rows 2 --bare-names \
  --chat-rows 2 --qat-frac 1.0 --lr 1.5e-3 --warmup 10 --save-every 100 --probe-every 50
train "$work/stage4" --init "$work/stage3/model.pt" --steps 400 --seq 384 --repeat-rows 2 --bare-names \
  --chat-rows 2 --qat-frac 1.0 --lr 1e-3 --warmup 10 --seed 29 --save-every 100 --probe-every 100
step record /usr/bin/python3 "$root/scripts/k3_mini_stages.py" "$out/training" \
  "$work/stage1" "$work/stage2" "$work/stage3" "$work/stage4"
/usr/bin/python3 - "$work/base/data.json" "$work/copy/data.json" "$out/training/data.json" <<'PY'
import json, sys
info = json.load(open(sys.argv[1]))
info["copy_data"] = json.load(open(sys.argv[2]))
with open(sys.argv[3], "w") as f:
    json.dump(info, f, indent=1)
    f.write("\n")
PY
step export /usr/bin/python3 "$root/scripts/k3_mini_export.py" --ckpt "$work/stage4/model.pt" \
  --data "$work/copy" --out "$out"
step plot /usr/bin/python3 "$root/scripts/k3_mini_plot.py" "$out/training/train_log.csv" "$out/loss.png"
echo "total $(( $(date +%s) - t_all )) s" >> "$times"
cat "$times"
