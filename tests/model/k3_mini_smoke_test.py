#!/usr/bin/python3
"""CI keeps scripts/train_k3_mini.py alive: `--smoke` builds a tiny tokenizer and
data set from the installed Debian text packages, trains k3-mini's architecture
for 32 steps (one thread: robust on a shared box) and must see the training loss fall by > 0.5 nats (the script
asserts it and exits non-zero otherwise). It does not retrain the committed model."""
import os
import subprocess
import sys
import time
import unittest

SRC = os.environ.get("K3_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


class K3MiniSmoke(unittest.TestCase):
    def test_smoke_training_loss_falls(self):
        t0 = time.time()
        r = subprocess.run([sys.executable, os.path.join(SRC, "scripts", "train_k3_mini.py"), "--smoke",
                            "--threads", "1"], capture_output=True, text=True, timeout=170)
        self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-2000:])
        line = [ln for ln in r.stdout.splitlines() if ln.startswith("smoke: loss")]
        self.assertEqual(len(line), 1, r.stdout[-2000:])
        first, last = (float(x.rstrip(",")) for x in line[0].split()[2:5:2])
        self.assertLess(last, first - 0.5)
        print(f"{line[0]} in {time.time() - t0:.0f}s")


if __name__ == "__main__":
    unittest.main()
