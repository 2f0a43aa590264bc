#!/usr/bin/python3
"""k3-mini's tool use and define replies hold: repack the committed model at
--bits 8, rerun scripts/k3_mini_tooluse.py (50 held-out cities, 50 held-out
dictionary words, greedy) and compare with models/k3-mini/eval/tooluse.json.
The issue's bar is a valid get_weather call for >= 90 % of the cities; the
recorded counts may move by a few on another CPU's kernels (greedy decoding
of near-ties), so they are asserted with that margin."""
import json
import os
import subprocess
import sys
import unittest

SRC = os.environ.get("K3_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("K3_BIN_DIR") or os.path.join(SRC, "build", "release", "bin")
TMP = os.environ.get("K3_TEST_TMP") or "/tmp"
MODEL = os.path.join(SRC, "models", "k3-mini")
sys.path.insert(0, os.path.join(SRC, "scripts"))
import k3_mini_tooluse as tooluse  # noqa: E402

MARGIN = 3


class K3MiniToolUse(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = os.path.join(TMP, "k3mini_tooluse")
        dst = os.path.join(cls.work, "b8")
        subprocess.run(["rm", "-rf", dst], check=True)
        os.makedirs(cls.work, exist_ok=True)
        subprocess.run([os.path.join(BIN, "k3-repack"), MODEL, dst, "--bits", "8"], check=True,
                       capture_output=True)
        out = os.path.join(cls.work, "tooluse.json")
        tooluse.main([dst, "--k3-run", os.path.join(BIN, "k3-run"), "--k3-tokgen", os.path.join(BIN, "k3-tokgen"),
                      "--work", cls.work, "--json", out])
        with open(out) as f:
            cls.got = json.load(f)
        with open(os.path.join(MODEL, "eval", "tooluse.json")) as f:
            cls.rec = json.load(f)

    def test_valid_calls(self):
        g, r = self.got, self.rec
        self.assertEqual(g["cities"], 50)
        self.assertGreaterEqual(g["valid_calls"], 45, "the issue's bar: >= 90 % valid calls")
        self.assertGreaterEqual(g["valid_calls"], r["valid_calls"] - MARGIN)
        # The C++ parser (k3-tokgen parse --tools) finds a call wherever the id-level check does.
        self.assertGreaterEqual(g["k3_tokgen_parse_calls"], g["valid_calls"])

    def test_city_copied(self):
        self.assertGreaterEqual(self.got["city_argument_exact"], self.rec["city_argument_exact"] - MARGIN)
        # Each exact city is the asked one, not a memorised favourite.
        exact = {row["call"][1]["city"] for row in self.got["rows"] if row.get("call")
                 and row["call"][1].get("city") == row["city"]}
        self.assertEqual(len(exact), self.got["city_argument_exact"])

    def test_define_replies(self):
        g, r = self.got, self.rec
        self.assertEqual(g["words"], 50)
        self.assertGreaterEqual(g["define_in_format"], r["define_in_format"] - MARGIN)
        self.assertGreaterEqual(g["define_word_exact"], r["define_word_exact"] - MARGIN)
        for row in g["define_rows"]:
            if row["word_exact"]:
                self.assertTrue(row["content"].startswith(f'"{row["word"]}"'), row)


if __name__ == "__main__":
    unittest.main()
