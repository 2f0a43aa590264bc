#!/usr/bin/python3
"""`k3-tokgen chat --jsonl` (the C++ encoder) against scripts/xtml_ref.py (an
independent Python renderer using Python's own json.dumps) on 2,400 random
requests covering every element and option of spec 7.6, with the real Kimi
vocabulary: ids identical on all. Also checks that the requests really cover
each element (a generator that stopped producing tool calls would otherwise
pass vacuously)."""
import collections
import json
import os
import subprocess
import sys
import tempfile

from kimi_test_files import BIN, CONFIG, MODEL

import xtml_random_requests  # scripts/, on sys.path by kimi_test_files
import xtml_ref

N = 2400


def features(req, segs):
    """Names of the elements a rendered request exercises."""
    f = set()
    texts = [v for k, v in segs if k == "text"]
    joined = "".join(texts)
    for t in ("tool-declare", "thinking-effort", "tool-choice", "response-format"):
        if t in texts:
            f.add(t)
    if "## New Tools Available" in joined:
        f.add("dynamic tools")
    for t in ("think", "tools", "call", "argument", "json"):
        if t in texts:
            f.add("tag " + t)
    for t in ("boolean", "null", "number", "string", "object", "array"):
        if t in texts:
            f.add("argument type " + t)
    if " name" in texts:
        f.add("name attribute")
    for prev, cur in zip(texts, texts[1:]):
        if prev == '="' and ("&amp;" in cur or "&quot;" in cur):
            f.add("attribute escaping")
    if "<|open|>" in joined:
        f.add("literal <|open|> in text")
    for needle, name in (("Infinity", "Infinity"), ("e+", "float exponent"), ("e-0", "small float"),
                         (str(2 ** 70), "big int"), ("-0.0", "-0.0")):
        if needle in joined:
            f.add(name)
    msgs = req["messages"]
    if any(m["role"] == "developer" for m in msgs):
        f.add("developer role")
    if any(isinstance(m.get("content"), list) for m in msgs):
        f.add("list content")
    if any(m.get("content") is None for m in msgs):
        f.add("null content")
    if any(isinstance(c["function"]["arguments"], dict) for m in msgs for c in m.get("tool_calls") or []):
        f.add("arguments as object")
    for i in range(1, len(msgs)):
        a, b = msgs[i - 1], msgs[i]
        if a["role"] == "tool" and b["role"] == "tool" and a.get("tool_call_id", "") > b.get("tool_call_id", ""):
            f.add("tool results out of order")
    if sum(len(m.get("tool_calls") or []) > 1 for m in msgs):
        f.add("several calls")
    for k in ("reasoning_effort", "thinking", "chat_template_kwargs", "add_generation_prompt"):
        if k in req:
            f.add("option " + k)
    tc = req.get("tool_choice")
    if isinstance(tc, dict):
        f.add("tool_choice named")
    rf = (req.get("response_format") or {}).get("type")
    if rf:
        f.add("response_format " + rf)
    thinking, effort, agp = xtml_ref.options(req)
    f.add("thinking %s" % ("on" if thinking else "off"))
    f.add("effort %s" % effort)
    if not agp:
        f.add("no generation prompt")
    return f


def check_assistant_bodies(reqs):
    """The reference's assistant body (what k3-mini trains the model to write)
    continues the generation prompt: prompt(history) + body(turn) == the
    history with that turn rendered and no generation prompt."""
    checked = 0
    for req, _ in reqs:
        msgs = req["messages"]
        if not msgs or msgs[-1]["role"] != "assistant" or msgs[-1].get("name"):
            continue
        thinking, _, _ = xtml_ref.options(req)
        head = dict(req, messages=msgs[:-1], add_generation_prompt=True)
        whole = dict(req, add_generation_prompt=False)
        for k in ("tool_choice", "response_format"):  # one-shot turns come after the history
            head.pop(k, None)
            whole.pop(k, None)
        got = xtml_ref.segments(head, True) + xtml_ref.assistant_body_segments(msgs[-1], thinking)
        assert got == xtml_ref.segments(whole, True), xtml_ref.segments_text(got)
        checked += 1
    assert checked >= 200, checked
    print("assistant bodies checked: %d" % checked)


def main():
    tok = xtml_ref.Tokenizer.from_files(MODEL, CONFIG)
    reqs = xtml_random_requests.requests(N, seed=17)
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", encoding="utf-8", delete=False) as f:
        for _, line in reqs:
            f.write(line + "\n")
        path = f.name
    try:
        out = subprocess.run([os.path.join(BIN, "k3-tokgen"), "chat", MODEL, CONFIG, "--jsonl", "-f", path],
                             capture_output=True, check=True).stdout.decode("utf-8").splitlines()
    finally:
        os.unlink(path)
    assert len(out) == N, (len(out), N)
    seen = collections.Counter()
    bad = 0
    for n, ((req, line), got) in enumerate(zip(reqs, out)):
        segs = xtml_ref.segments(req, developer_as_system=True)
        want = xtml_ref.encode_segments(tok, segs)
        seen.update(features(req, segs))
        got = json.loads(got)
        if got != want:
            bad += 1
            if bad <= 3:
                print("request %d differs:\n  %s\n  ours: %s\n  ref:  %s\n  ref segments: %s"
                      % (n, line, got, want, xtml_ref.segments_text(segs)), file=sys.stderr)
    print("%d requests, %d differ; element counts: %s" % (N, bad, dict(sorted(seen.items()))))
    check_assistant_bodies(reqs)
    assert bad == 0, "%d of %d requests differ" % (bad, N)
    required = [
        "tool-declare", "dynamic tools", "thinking-effort", "tool-choice", "response-format", "tag think",
        "tag tools", "tag call", "tag argument", "tag json", "argument type boolean", "argument type null",
        "argument type number", "argument type string", "argument type object", "argument type array",
        "name attribute", "attribute escaping", "literal <|open|> in text", "Infinity", "float exponent",
        "small float", "big int", "-0.0", "developer role", "list content", "null content", "arguments as object",
        "tool results out of order", "several calls", "option reasoning_effort", "option thinking",
        "option chat_template_kwargs", "option add_generation_prompt", "tool_choice named",
        "response_format json_object", "response_format json_schema", "response_format text", "thinking on",
        "thinking off", "effort low", "effort high", "effort max", "effort None", "no generation prompt",
    ]
    thin = [r for r in required if seen[r] < 20]
    assert not thin, "elements covered by fewer than 20 requests: %s" % thin


if __name__ == "__main__":
    main()
