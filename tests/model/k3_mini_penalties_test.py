#!/usr/bin/python3
"""k3-mini's greedy plain text loops ("and the LORD, and the LORD, ..."); each
penalty of `k3-run` changes that loop as its definition says. For every option
the generated ids are checked step by step against scripts/sampler_ref.py, an
independent numpy reference: each token is the argmax of the teacher-forced
logits (`k3-run --ids --logits-out`) after the reference's bias/penalties over
the run's prompt ids and the tokens generated before it. And the loop is
broken: more distinct tokens than the bare run; a -100 bias bans its token.
`k3-run --logprobs 3` gives the reference's log-softmax of those logits."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

SRC = os.environ.get("K3_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("K3_BIN_DIR") or os.path.join(SRC, "build", "release", "bin")
TMP = os.environ.get("K3_TEST_TMP") or "/tmp/k3-model-tests"
sys.path.insert(0, os.path.join(SRC, "scripts"))
import sampler_ref  # noqa: E402

PROMPT = "And God said unto Moses,"
N = 40


def k3_mini():
    dst = os.path.join(TMP, "model", "k3-mini-b8")
    if os.path.exists(os.path.join(dst, "k3-manifest.json")):
        return dst
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    work = f"{dst}.tmp-{os.getpid()}"
    subprocess.run([os.path.join(BIN, "k3-repack"), os.path.join(SRC, "models", "k3-mini"), work, "--bits", "8"],
                   check=True, capture_output=True)
    try:
        os.rename(work, dst)
    except OSError:
        subprocess.run(["rm", "-rf", work])
    return dst


class K3MiniPenalties(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = k3_mini()
        cls.tmp = tempfile.mkdtemp(dir=TMP)

    @classmethod
    def tearDownClass(cls):
        subprocess.run(["rm", "-rf", cls.tmp])

    def run_k3(self, flags):
        r = subprocess.run([os.path.join(BIN, "k3-run"), self.model, "-p", PROMPT, "-n", str(N), "--threads", "1",
                            "--json", "--temp", "0", "--logprobs", "3", *flags], capture_output=True, text=True, check=True)
        j = json.loads(r.stdout)
        self.logprobs = j["logprobs"]
        return j["prompt_ids"], j["tokens"]

    def check_steps(self, prompt, gen, opts):
        """Every generated id is the argmax of the reference-processed logits."""
        out = os.path.join(self.tmp, "logits.f32")
        ids = prompt + gen[:-1]
        subprocess.run([os.path.join(BIN, "k3-run"), self.model, "--ids", ",".join(map(str, ids)), "--logits-out", out,
                        "--threads", "1", "--json"], capture_output=True, check=True)
        logits = np.fromfile(out, dtype=np.float32).reshape(len(ids), -1)
        for i, tok in enumerate(gen):
            row = sampler_ref.process(logits[len(prompt) - 1 + i], prompt, gen[:i], opts.get("presence", 0.0),
                                      opts.get("frequency", 0.0), opts.get("repetition", 1.0), opts.get("bias", []))
            self.assertLess(float(np.max(row) - row[tok]), 1e-4, f"step {i}: {tok} is not the processed argmax")
            # k3-run --logprobs: log-softmax of the processed logits, the 3 best.
            want = sampler_ref.log_softmax(row)
            got = self.logprobs[i]
            self.assertEqual(got["id"], tok)
            self.assertAlmostEqual(got["logprob"], want[tok], delta=1e-4, msg=f"step {i}")
            np.testing.assert_allclose([v for _, v in got["top"]], np.sort(want)[::-1][:3], atol=1e-4)

    def test_each_penalty_breaks_the_greedy_loop_as_defined(self):
        prompt, bare = self.run_k3([])
        self.check_steps(prompt, bare, {})
        tail = bare[N // 2:]
        self.assertLess(len(set(tail)), 8, f"the bare greedy text loops: {tail}")
        loop_token = max(set(tail), key=tail.count)
        cases = [
            (["--presence-penalty", "2"], {"presence": 2.0}),
            (["--frequency-penalty", "1"], {"frequency": 1.0}),
            (["--repeat-penalty", "1.5"], {"repetition": 1.5}),
            (["--logit-bias", f"{loop_token}=-100"], {"bias": [(loop_token, -100.0)]}),
        ]
        for flags, opts in cases:
            with self.subTest(flags=flags):
                p, gen = self.run_k3(flags)
                self.assertEqual(p, prompt)
                self.check_steps(prompt, gen, opts)
                self.assertNotEqual(gen, bare)
                self.assertGreater(len(set(gen[N // 2:])), len(set(tail)), f"{flags}: the loop is broken")
                if "bias" in opts:
                    self.assertNotIn(loop_token, gen)


if __name__ == "__main__":
    unittest.main()
