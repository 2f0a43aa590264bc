#!/usr/bin/python3
"""docs/QUALITY.md's expert top-p figures hold: re-measure k3-mini's held-out
perplexity, argmax agreement and mean KL against P = 1, experts kept and
expert bytes per token for every P of scripts/k3_mini_expert_top_p.py on the
first CI_DOCS held-out documents (the full table is
models/k3-mini/eval/expert_top_p.json) and compare with the figures recorded
for that subset in models/k3-mini/eval/expert_top_p_ci.json, with the margins
of k3_mini_quality_test.py for other CPUs' kernels."""
import json
import os
import sys
import unittest

SRC = os.environ.get("K3_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("K3_BIN_DIR") or os.path.join(SRC, "build", "release", "bin")
TMP = os.environ.get("K3_TEST_TMP") or "/tmp"
MODEL = os.path.join(SRC, "models", "k3-mini")
sys.path.insert(0, os.path.join(SRC, "scripts"))
import k3_mini_expert_top_p as etp  # noqa: E402


def load_docs(n):
    with open(os.path.join(MODEL, "eval", "heldout.jsonl"), encoding="utf-8") as f:
        return [json.loads(ln) for ln in f if ln.strip()][:n]


class K3MiniExpertTopP(unittest.TestCase):
    def test_recorded_figures(self):
        with open(os.path.join(MODEL, "eval", "expert_top_p_ci.json")) as f:
            rec = {r["expert_top_p"]: r for r in json.load(f)["rows"]}
        with open(os.path.join(MODEL, "config.json")) as f:
            top_k = json.load(f)["text_config"]["num_experts_per_token"]
        rows = etp.measure(MODEL, load_docs(etp.CI_DOCS), os.path.join(TMP, "k3mini_expert_top_p"), BIN,
                           log=lambda s: None)
        self.assertEqual([r["expert_top_p"] for r in rows], list(etp.PS))
        self.assertEqual(len(rows), len(rec))
        for r in rows:
            e = rec[r["expert_top_p"]]
            what = f"P {r['expert_top_p']}: {r} vs recorded {e}"
            self.assertEqual(r["positions"], e["positions"], what)
            self.assertAlmostEqual(r["ppl"], e["ppl"], delta=0.02 * e["ppl"], msg=what)
            self.assertGreaterEqual(r["argmax_agree"], e["argmax_agree"] - 0.02, what)
            self.assertLessEqual(r["mean_kl"], 1.3 * e["mean_kl"] + 2e-4, what)
            self.assertAlmostEqual(r["experts_kept_mean"], e["experts_kept_mean"], delta=0.05, msg=what)
            self.assertAlmostEqual(r["expert_bytes_rel"], e["expert_bytes_rel"], delta=0.02, msg=what)
            # Bytes per token are the kept experts' bytes: relative = kept / top-k.
            self.assertAlmostEqual(r["expert_bytes_rel"], r["experts_kept_mean"] / top_k, delta=1e-5, msg=what)  # --json: 6 digits
        one = rows[0]
        self.assertEqual(one["experts_kept_mean"], top_k)  # P = 1: every routed expert
        self.assertEqual(one["argmax_agree"], 1.0)
        self.assertLess(one["mean_kl"], 1e-12)
        # Smaller P, fewer experts; and at 0.5 about half the bytes for a real but bounded cost.
        kept = [r["experts_kept_mean"] for r in rows]
        self.assertEqual(kept, sorted(kept, reverse=True))
        half = rows[-1]
        self.assertLess(half["expert_bytes_rel"], 0.6)
        self.assertGreater(half["ppl"], one["ppl"])
        self.assertLess(half["ppl"], 1.2 * one["ppl"])


if __name__ == "__main__":
    unittest.main()
