#!/usr/bin/python3
"""Long-run corruption replay (issue 23): random damage to copies of a tiny
snapshot and its container, each run against k3-verify, k3-repack, k3-tokgen
and k3-run read paths, classified as clean (exit 0/1/2, at most a one-line
error), crash (signal) or hang (timeout). Prints a summary.

    corrupt_long.py --bin build/release/bin --minutes 3 [--seed 1]
"""
import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from special_file import replace_file  # noqa: E402


def damage(rng, d):
    """One random corruption in directory d; returns a description."""
    files = sorted(f for f in os.listdir(d) if os.path.isfile(os.path.join(d, f)))
    f = os.path.join(d, rng.choice(files))
    kind = rng.choice(["flip", "flip_header", "truncate", "swap", "fifo", "devzero", "dir", "sparse", "empty"])
    if kind in ("flip", "flip_header"):
        size = os.path.getsize(f)
        if size == 0:
            return "empty file left"
        at = rng.randrange(min(size, 4096) if kind == "flip_header" else size)
        with open(f, "r+b") as h:
            h.seek(at)
            b = h.read(1)
            h.seek(at)
            h.write(bytes([b[0] ^ (1 << rng.randrange(8))]))
        return f"{kind} {os.path.basename(f)}@{at}"
    if kind == "truncate":
        with open(f, "r+b") as h:
            h.truncate(rng.randrange(os.path.getsize(f) + 1))
        return f"truncate {os.path.basename(f)}"
    if kind == "swap":
        g = os.path.join(d, rng.choice([x for x in files if os.path.join(d, x) != f]))
        t = f + ".swap"
        os.rename(f, t), os.rename(g, f), os.rename(t, g)
        return f"swap {os.path.basename(f)} {os.path.basename(g)}"
    replace_file(f, f"sparse:{rng.choice([17 << 20, 70 << 20, 1100 << 20])}" if kind == "sparse" else kind)
    return f"{kind} {os.path.basename(f)}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--minutes", type=float, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=30)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    work = tempfile.mkdtemp(prefix="k3-corrupt-")
    src0, c0 = os.path.join(work, "src0"), os.path.join(work, "c0")
    subprocess.run([sys.executable, os.path.join(HERE, "k3_synth.py"), "--preset", "tiny", "--seed", "1", "--out", src0],
                   check=True, capture_output=True)
    subprocess.run([os.path.join(a.bin, "k3-repack"), src0, c0, "--bits", "4", "--threads", "2"], check=True)
    stats = {"cases": 0, "clean": 0, "crashes": 0, "hangs": 0, "multi_line_errors": 0}
    bad = []
    end = time.time() + a.minutes * 60
    while time.time() < end:
        case = os.path.join(work, "case")
        shutil.rmtree(case, ignore_errors=True)
        os.makedirs(case)
        src, c = os.path.join(case, "src"), os.path.join(case, "c")
        shutil.copytree(src0, src, symlinks=True)
        shutil.copytree(c0, c, symlinks=True)
        target = rng.choice(["src", "c"])
        what = damage(rng, src if target == "src" else c)
        if target == "src":
            runs = [["k3-repack", src, os.path.join(case, "out"), "--bits", "4", "--threads", "2"],
                    ["k3-tokgen", src, "-o", os.path.join(case, "t.json")]]
        else:
            runs = [["k3-verify", c, "--full", "--threads", "2"], ["k3-verify", c, "--source", src, "--threads", "2"],
                    ["k3-run", c, "--ids", "1,2,3", "--threads", "2"], ["k3-run", c, "-p", "hi", "-n", "4", "--threads", "2"],
                    ["k3-tokgen", c, "-o", os.path.join(case, "t.json")]]
        for argv in runs:
            stats["cases"] += 1
            argv = [os.path.join(a.bin, argv[0])] + argv[1:]
            try:
                r = subprocess.run(argv, capture_output=True, timeout=a.timeout, stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                stats["hangs"] += 1
                bad.append(f"HANG {os.path.basename(argv[0])} after {what}")
                continue
            if r.returncode < 0 or r.returncode > 2:
                stats["crashes"] += 1
                bad.append(f"CRASH ({r.returncode}) {os.path.basename(argv[0])} after {what}: {r.stderr[-300:]!r}")
                continue
            stats["clean"] += 1
            if r.returncode != 0 and r.stderr.count(b"\n") > 1 and "k3-verify" not in argv[0]:
                stats["multi_line_errors"] += 1
                bad.append(f"MULTILINE {os.path.basename(argv[0])} after {what}: {r.stderr[:300]!r}")
    shutil.rmtree(work, ignore_errors=True)
    for line in bad[:50]:
        print(line)
    print("corrupt_long: " + ", ".join(f"{k} {v}" for k, v in stats.items()))
    return 1 if stats["crashes"] or stats["hangs"] else 0


if __name__ == "__main__":
    sys.exit(main())
