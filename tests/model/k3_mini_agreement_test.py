#!/usr/bin/python3
"""k3-mini, three independent forward passes on held-out text: the PyTorch model
(scripts/k3_mini_model.py, loaded from the committed snapshot), the numpy
reference (scripts/k3_ref.py, from the snapshot) and k3-run (a --bits 16
container made by k3-repack) give the same teacher-forced logits: rel-L2 <= 1e-4
pairwise and 100 % argmax agreement, on plain text and on a chat conversation.
Also: the training encoder (scripts/xtml_ref.py's tokenizer) equals
`k3-tokgen encode` on held-out text, and the torch model's chunked KDA equals
the spec's per-token recurrence."""
import json
import os
import random
import subprocess
import sys
import unittest

import numpy as np
import torch

SRC = os.environ.get("K3_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("K3_BIN_DIR") or os.path.join(SRC, "build", "release", "bin")
TMP = os.environ.get("K3_TEST_TMP") or "/tmp"
MODEL = os.path.join(SRC, "models", "k3-mini")
sys.path.insert(0, os.path.join(SRC, "scripts"))
import k3_mini_chat as chat  # noqa: E402
import xtml_ref  # noqa: E402
from k3_mini_export import load_model  # noqa: E402

N = 160  # positions per sequence


def rel_l2(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


class K3MiniAgreement(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        torch.set_num_threads(1)
        cls.dir = os.path.join(TMP, "k3mini_agreement")
        subprocess.run(["rm", "-rf", cls.dir], check=True)
        os.makedirs(cls.dir)
        cls.c16 = os.path.join(cls.dir, "c16")
        subprocess.run([os.path.join(BIN, "k3-repack"), MODEL, cls.c16, "--bits", "16"], check=True,
                       capture_output=True)
        cls.tok = xtml_ref.Tokenizer.from_files(os.path.join(MODEL, "tiktoken.model"),
                                                os.path.join(MODEL, "tokenizer_config.json"))
        with open(os.path.join(MODEL, "eval", "heldout.jsonl"), encoding="utf-8") as f:
            cls.docs = [json.loads(ln) for ln in f if ln.strip()]
        cls.text = "\n\n".join(cls.docs)
        cls.model = load_model(MODEL)

    def three(self, ids, name):
        arg = ",".join(map(str, ids))
        ref = os.path.join(self.dir, name + ".ref.f32")
        run = os.path.join(self.dir, name + ".run.f32")
        subprocess.run([sys.executable, os.path.join(SRC, "scripts", "k3_ref.py"), MODEL, "--ids", arg, "--out", ref],
                       check=True, capture_output=True)
        subprocess.run([os.path.join(BIN, "k3-run"), self.c16, "--ids", arg, "--logits-out", run], check=True,
                       capture_output=True)
        with torch.no_grad():
            t = self.model(torch.tensor([ids]))[0].numpy()
        r = np.fromfile(ref, np.float32).reshape(len(ids), -1)
        k = np.fromfile(run, np.float32).reshape(len(ids), -1)
        return t, r, k

    def check(self, ids, name):
        t, r, k = self.three(ids, name)
        for a, b, what in ((t, r, "torch vs k3_ref"), (k, r, "k3-run vs k3_ref"), (t, k, "torch vs k3-run")):
            e = rel_l2(a, b)
            print(f"{name}: {what}: rel-L2 {e:.2e}, argmax {np.mean(a.argmax(1) == b.argmax(1)) * 100:.1f} %")
            self.assertLessEqual(e, 1e-4, what)
            self.assertTrue(np.array_equal(a.argmax(1), b.argmax(1)), what)
        # the model is trained: held-out text is far better predicted than uniform (log V = 7.74;
        # the committed model gives 4.96 on this concatenation, a random one about log V)
        r64 = r.astype(np.float64)
        lse = r64.max(1) + np.log(np.exp(r64 - r64.max(1, keepdims=True)).sum(1))
        nll = float(np.mean(lse[:-1] - r64[np.arange(len(ids) - 1), ids[1:]]))
        self.assertLess(nll, 0.7 * np.log(r.shape[1]), name)

    def test_heldout_text(self):
        ids = [self.tok.special("[BOS]")] + self.tok.encode_ordinary(self.text)[:N - 1]
        self.check(ids, "text")

    def test_heldout_chat(self):
        with open(os.path.join(MODEL, "eval", "held_cities.json")) as f:
            city = json.load(f)[7]
        req = chat.request(chat.weather_turns(random.Random(3), city), chat.TOOLS, "max")
        self.check(xtml_ref.render(self.tok, req)[:N], "chat")

    def test_training_encoder_matches_k3_tokgen(self):
        sample = self.text[:12000]
        r = subprocess.run([os.path.join(BIN, "k3-tokgen"), "encode", MODEL, "--json"], input=sample,
                           capture_output=True, text=True, check=True)
        self.assertEqual(self.tok.encode_ordinary(sample), json.loads(r.stdout))

    def test_chunked_kda_equals_recurrence(self):
        import k3_mini_model as m
        g = torch.Generator().manual_seed(5)
        B, T, H, d = 2, 21, 2, 8
        q = torch.nn.functional.normalize(torch.randn(B, T, H, d, generator=g), dim=-1) * d ** -0.5
        k = torch.nn.functional.normalize(torch.randn(B, T, H, d, generator=g), dim=-1)
        v = torch.randn(B, T, H, d, generator=g)
        ld = -5 * torch.rand(B, T, H, d, generator=g)
        beta = torch.rand(B, T, H, generator=g)
        a = m.kda_chunked(q.double(), k.double(), v.double(), ld.double(), beta.double())
        b = m.kda_recurrent(q.double(), k.double(), v.double(), ld.double(), beta.double())
        self.assertLess(rel_l2(a, b), 1e-10)


if __name__ == "__main__":
    unittest.main()
