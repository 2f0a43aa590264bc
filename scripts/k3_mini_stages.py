#!/usr/bin/python3
"""One training record from a staged k3-mini run (each stage --init from the last).

    k3_mini_stages.py OUT_DIR STAGE_DIR...

Writes OUT_DIR/train_log.csv (steps numbered across the stages, seconds
accumulated) and OUT_DIR/train.json: every stage's own train.json under
"stages", plus the totals k3_mini_plot.py reads (steps, wall_seconds,
held_loss of the last stage, and qat_frac: the share of all steps from the
first QAT step on, so the plot's band covers them when they are contiguous).
"""

import csv
import json
import os
import sys


def main(argv):
    out, stages = argv[0], argv[1:]
    rows, infos, qat_from, step0, t0 = [], [], None, 0, 0.0
    for d in stages:
        with open(os.path.join(d, "train.json")) as f:
            info = json.load(f)
        infos.append(info)
        n = info["steps_done"]
        if qat_from is None and info["qat_frac"] > 0:
            qat_from = step0 + int(info["steps"] * (1 - info["qat_frac"]))
        with open(os.path.join(d, "train_log.csv")) as f:
            for r in csv.DictReader(f):
                rows.append((step0 + int(r["step"]), r["loss"], r["lr"], t0 + float(r["seconds"])))
        step0 += n
        t0 += info["wall_seconds"]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "train_log.csv"), "w") as f:
        f.write("step,loss,lr,seconds\n")
        f.writelines(f"{s},{lo},{lr},{t:.1f}\n" for s, lo, lr, t in rows)
    total = {"steps": step0, "steps_done": step0, "wall_seconds": round(t0, 1),
             "qat_frac": (step0 - qat_from) / step0 if qat_from is not None else 0.0,
             "held_loss": infos[-1]["held_loss"], "final_train_loss": infos[-1]["final_train_loss"],
             "stages": infos}
    with open(os.path.join(out, "train.json"), "w") as f:
        json.dump(total, f, indent=1)
    print(f"{out}: {step0} steps in {len(stages)} stages, {t0:.0f} s, held-out loss {total['held_loss']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
