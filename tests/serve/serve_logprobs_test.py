#!/usr/bin/python3
"""Log-probabilities and penalties of `k3-run --serve`, against independent
expectations: the server's logprobs equal log-softmax of `k3-run --logits-out`
(teacher-forced on the same ids) within 1e-4 — bare, and with logit_bias and
the three penalties applied by scripts/sampler_ref.py to those logits; every
greedy token is the argmax of the reference-processed logits; `k3-run` with the
same flags generates the same ids; the stream carries the same entries as the
non-stream answer; chat logprobs have OpenAI's shape (token, logprob, bytes,
top_logprobs). Runs on the tiny synthetic container the node server tests use."""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
import urllib.request

import numpy as np

SRC = os.environ.get("K3_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("K3_BIN_DIR") or os.path.join(SRC, "build", "release", "bin")
TMP = os.environ.get("K3_TEST_TMP") or "/tmp/k3-serve-tests"
sys.path.insert(0, os.path.join(SRC, "scripts"))
import sampler_ref  # noqa: E402


def tiny_container():
    """TMP/serve/tiny-b8, built as tests/serve/serve_fixture.mjs builds it."""
    dst = os.path.join(TMP, "serve", "tiny-b8")
    if os.path.exists(os.path.join(dst, "k3-manifest.json")):
        return dst
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    work = f"{dst}.tmp-{os.getpid()}"
    subprocess.run(["/usr/bin/python3", os.path.join(SRC, "scripts", "k3_synth.py"), "--preset", "tiny", "--seed", "1",
                    "--out", f"{work}/src"], check=True)
    subprocess.run([os.path.join(BIN, "k3-repack"), f"{work}/src", f"{work}/c", "--bits", "8"], check=True)
    try:
        os.rename(f"{work}/c", dst)
    except OSError:
        pass
    subprocess.run(["rm", "-rf", work], check=True)
    return dst


class Server:
    def __init__(self, model):
        self.proc = subprocess.Popen([os.path.join(BIN, "k3-run"), model, "--serve", "--port", "0", "--threads", "1",
                                      "--ctx", "512"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"listening on (http://\S+)", line)
        if not m:
            raise RuntimeError("k3-run --serve did not start: " + line + self.proc.stderr.read())
        self.url = m.group(1)

    def post(self, path, body):
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read())

    def stream(self, path, body):
        req = urllib.request.Request(self.url + path, data=json.dumps({**body, "stream": True}).encode(),
                                     headers={"content-type": "application/json"})
        events = []
        with urllib.request.urlopen(req, timeout=60) as r:
            for raw in r:
                line = raw.decode().strip()
                if line.startswith("data: ") and line != "data: [DONE]":
                    events.append(json.loads(line[6:]))
        return events

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


PROMPT = [5, 17, 42, 99, 300, 7, 42, 17, 5, 256, 11, 12]
N = 24  # long enough that the bare greedy output repeats a token (step 20) and one of the prompt (17)


class ServeLogprobs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = tiny_container()
        cls.tmp = tempfile.mkdtemp(dir=TMP)
        cls.srv = Server(cls.model)

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        subprocess.run(["rm", "-rf", cls.tmp])

    def cli_generate(self, prompt, flags):
        r = subprocess.run([os.path.join(BIN, "k3-run"), self.model, "--prompt-ids", ",".join(map(str, prompt)),
                            "-n", str(N), "--threads", "1", "--json", "--temp", "0", *flags], capture_output=True, text=True,
                           check=True)
        return json.loads(r.stdout)["tokens"]

    def teacher_forced(self, ids):
        out = os.path.join(self.tmp, "logits.f32")
        subprocess.run([os.path.join(BIN, "k3-run"), self.model, "--ids", ",".join(map(str, ids)), "--logits-out", out,
                        "--threads", "1", "--json"], capture_output=True, check=True)
        return np.fromfile(out, dtype=np.float32).reshape(len(ids), -1)

    def check_completion(self, options, flags):
        """Server (stream and not) vs the reference on teacher-forced logits."""
        body = {"prompt": PROMPT, "max_tokens": N, "temperature": 0, "logprobs": 5, **options}
        whole = self.srv.post("/v1/completions", body)
        lp = whole["choices"][0]["logprobs"]
        self.assertEqual(len(lp["tokens"]), whole["usage"]["completion_tokens"])
        gen = self.cli_generate(PROMPT, flags)  # the CLI with the same options
        self.assertEqual(len(gen), N)
        logits = self.teacher_forced(PROMPT + gen[:-1])
        for i in range(N):
            row = sampler_ref.process(logits[len(PROMPT) - 1 + i], PROMPT, gen[:i],
                                      options.get("presence_penalty", 0.0), options.get("frequency_penalty", 0.0),
                                      options.get("repetition_penalty", 1.0),
                                      [(int(k), v) for k, v in options.get("logit_bias", {}).items()])
            want = sampler_ref.log_softmax(row)
            # Greedy follows the processed logits (the penalty's definition).
            self.assertAlmostEqual(float(row[gen[i]]), float(np.max(row)), delta=1e-4, msg=f"step {i}")
            self.assertAlmostEqual(lp["token_logprobs"][i], want[gen[i]], delta=1e-4, msg=f"step {i}")
            # A token -> logprob object: the 5 best and the sampled one (tokens
            # with the same text, e.g. partial characters, share one key).
            best = np.sort(want)[::-1]
            tops = lp["top_logprobs"][i]
            self.assertAlmostEqual(max(tops.values()), best[0], delta=1e-4, msg=f"step {i}")
            for v in tops.values():
                self.assertTrue(np.min(np.abs(best[:5] - v)) < 1e-4 or abs(v - want[gen[i]]) < 1e-4, f"step {i}: {v}")
        # The server generated the ids the CLI did (partial characters aside,
        # which the two writers may replace differently).
        detok = self.srv.post("/detokenize", {"tokens": gen})["content"]
        if "\ufffd" not in detok:
            self.assertEqual(whole["choices"][0]["text"], detok)
        self.assertEqual(lp["tokens"], [self.srv.post("/detokenize", {"tokens": [t]})["content"] if "\ufffd" not in
                                        self.srv.post("/detokenize", {"tokens": [t]})["content"] else tok
                                        for t, tok in zip(gen, lp["tokens"])])
        self.assertEqual(lp["text_offset"][0], 0)
        # The stream carries the same entries, spread over its chunks.
        events = self.srv.stream("/v1/completions", body)
        streamed = {"tokens": [], "token_logprobs": [], "text_offset": []}
        for e in events:
            for c in e.get("choices", []):
                if c["logprobs"]:
                    for k in streamed:
                        streamed[k] += c["logprobs"][k]
        self.assertEqual(streamed["tokens"], lp["tokens"])
        self.assertEqual(streamed["text_offset"], lp["text_offset"])
        np.testing.assert_allclose(streamed["token_logprobs"], lp["token_logprobs"], atol=0)
        return gen

    def test_bare_logprobs_are_log_softmax_of_the_logits(self):
        self.check_completion({}, [])

    def test_penalties_and_bias_follow_their_definitions(self):
        bare = self.cli_generate(PROMPT, [])
        cases = [
            ({"presence_penalty": 1.5}, ["--presence-penalty", "1.5"]),
            ({"frequency_penalty": 1.2}, ["--frequency-penalty", "1.2"]),
            ({"repetition_penalty": 1.8}, ["--repeat-penalty", "1.8"]),
            ({"logit_bias": {str(bare[2]): -100, "33": 4.5}}, ["--logit-bias", f"{bare[2]}=-100,33=4.5"]),
            ({"presence_penalty": -0.5, "frequency_penalty": 0.3, "repetition_penalty": 1.3,
              "logit_bias": {"300": 2}},
             ["--presence-penalty", "-0.5", "--frequency-penalty", "0.3", "--repeat-penalty", "1.3",
              "--logit-bias", "300=2"]),
        ]
        changed = 0
        for options, flags in cases:
            with self.subTest(options=options):
                gen = self.check_completion(options, flags)
                changed += gen != bare
        self.assertEqual(changed, len(cases), "each option changed the greedy output")

    def test_chat_logprobs_shape_and_values(self):
        messages = [{"role": "user", "content": "Hello there"}]
        body = {"messages": messages, "max_tokens": 3, "temperature": 0, "logprobs": True, "top_logprobs": 3,
                "chat_template_kwargs": {"thinking": False}}
        r = self.srv.post("/v1/chat/completions", body)
        content = r["choices"][0]["logprobs"]["content"]
        n = r["usage"]["completion_tokens"]
        self.assertEqual(len(content), n)
        prompt = self.srv.post("/tokenize", {"messages": messages, "chat_template_kwargs": {"thinking": False}})["tokens"]
        gen = self.cli_generate(prompt, [])[:n]
        logits = self.teacher_forced(prompt + gen[:-1])
        for i, e in enumerate(content):
            self.assertEqual(set(e), {"token", "logprob", "bytes", "top_logprobs"})
            raw = bytes(e["bytes"])
            self.assertEqual(raw.decode("utf-8", errors="replace"), e["token"])
            want = sampler_ref.log_softmax(logits[len(prompt) - 1 + i])
            self.assertAlmostEqual(e["logprob"], want[gen[i]], delta=1e-4)
            self.assertEqual(len(e["top_logprobs"]), 3)
            order = sampler_ref.order(logits[len(prompt) - 1 + i])[:3]
            for t, want_id in zip(e["top_logprobs"], order):
                self.assertAlmostEqual(t["logprob"], want[want_id], delta=1e-4)
                detok = self.srv.post("/detokenize", {"tokens": [want_id]})["content"]
                if "\ufffd" not in detok:
                    self.assertEqual(bytes(t["bytes"]).decode(), detok)
        # Stream: the entries of all chunks, in order, are the same.
        events = self.srv.stream("/v1/chat/completions", body)
        streamed = [x for e in events for c in e.get("choices", []) if c.get("logprobs") for x in c["logprobs"]["content"]]
        self.assertEqual([x["token"] for x in streamed], [x["token"] for x in content])
        self.assertEqual([x["logprob"] for x in streamed], [x["logprob"] for x in content])


if __name__ == "__main__":
    unittest.main()
