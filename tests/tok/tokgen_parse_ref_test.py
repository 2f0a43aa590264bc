#!/usr/bin/python3
"""`k3-tokgen parse --tools REQUEST --json` (the C++ output parser) on 150
assistant turns rendered by scripts/xtml_ref.py (the independent Python
renderer): every message comes back as written. 25 of them carry a call
whose argument type differs from the tool's declaration (a string where a
number is declared, 2.5 for an integer, an array for a string, ...): the
parser must return that value as the model wrote it, value and JSON type,
not drop the call as malformed (issue 30). The turns are held out: generated
from a seed and a vocabulary of words no C++ test uses."""
import json
import os
import random
import subprocess
import tempfile

from kimi_test_files import BIN, CONFIG, MODEL

import xtml_random_requests  # scripts/, on sys.path by kimi_test_files
import xtml_ref

N = 150
MISTYPED = 25
TYPES = ["string", "number", "integer", "boolean", "object", "array", "null"]


def value_of(rng, t):
    """A value of JSON-schema type t (finite numbers only: JSON has no Infinity)."""
    if t == "string":
        return xtml_random_requests.text(rng, 6)
    if t == "integer":
        return rng.choice([0, -3, 7, 2 ** 40, 123456789])
    if t == "number":
        return rng.choice([0.5, -2.5e3, 3.14, 1e-05, 42, 1.0, 6.02e23])
    if t == "boolean":
        return rng.random() < 0.5
    if t == "null":
        return None
    if t == "object":
        return {"name": xtml_random_requests.text(rng, 3), "n": rng.randint(-9, 9), "ok": rng.random() < 0.5}
    return [xtml_random_requests.text(rng, 2), rng.randint(0, 99), None]


def wrong_value(rng, declared):
    """A value whose JSON type is not what `declared` allows."""
    if declared == "integer" and rng.random() < 0.4:
        return rng.choice([2.5, -0.75])  # a number, but not an integral one
    allowed = {"integer": ("integer", "number"), "number": ("integer", "number")}.get(declared, (declared,))
    t = rng.choice([t for t in TYPES if t not in allowed])
    return value_of(rng, t)


def tools_for(rng, names):
    tools = []
    for name in names:
        props = {}
        for i in range(rng.randint(1, 4)):
            props["%s_%d" % (rng.choice(["city", "query", "limit", "flag", "opts", "路径", "ключ", "a&b"]), i)] = {
                "type": rng.choice(TYPES)}
        tools.append({"type": "function",
                      "function": {"name": name, "parameters": {"type": "object", "properties": props}}})
    return tools


def round_trips(seed):
    rng = random.Random(seed)
    mistyped = set(rng.sample(range(N), MISTYPED))
    cases = []
    for n in range(N):
        tools = tools_for(rng, rng.sample(["get_weather", "search", "run_code", "读取文件", "send-mail"], rng.randint(1, 3)))
        thinking = rng.random() < 0.7
        message = {"role": "assistant", "content": xtml_random_requests.text(rng, 8) if rng.random() < 0.6 else ""}
        if thinking:
            message["reasoning_content"] = xtml_random_requests.text(rng, 8)
        calls = []
        for i in range(rng.randint(1, 3) if n in mistyped or rng.random() < 0.8 else 0):
            fn = rng.choice(tools)["function"]
            props = fn["parameters"]["properties"]
            args = {k: value_of(rng, p["type"]) for k, p in props.items() if rng.random() < 0.8}
            calls.append({"id": "call_%d" % (i + 1), "type": "function",
                          "function": {"name": fn["name"], "arguments": args}})
        if n in mistyped:  # one call gets an argument of another type than declared
            call = rng.choice(calls)
            fn = next(t["function"] for t in tools if t["function"]["name"] == call["function"]["name"])
            key = rng.choice(list(fn["parameters"]["properties"]))
            call["function"]["arguments"][key] = wrong_value(rng, fn["parameters"]["properties"][key]["type"])
        if calls:
            message["tool_calls"] = calls
        cases.append((n in mistyped, thinking, tools, message))
    return cases


class Pairs(list):
    """A JSON object as json.loads(object_pairs_hook=Pairs) reads it: members in order."""


def typed(v):
    """v with every value tagged by its JSON type (so 1 != 1.0 != True)."""
    if isinstance(v, Pairs):
        return ("object", [(k, typed(x)) for k, x in v])
    if isinstance(v, dict):
        return ("object", [(k, typed(x)) for k, x in v.items()])
    if isinstance(v, list):
        return ("array", [typed(x) for x in v])
    if isinstance(v, bool):
        return ("boolean", v)
    if isinstance(v, int):
        return ("int", v)
    if isinstance(v, float):
        return ("float", v)
    return (type(v).__name__, v)


def declared_mismatch(tools, calls):
    """How many argument values differ in JSON type from their declaration."""
    n = 0
    for c in calls:
        props = next(t["function"] for t in tools if t["function"]["name"] == c["function"]["name"])["parameters"][
            "properties"]
        for k, v in c["function"]["arguments"].items():
            d = props[k]["type"]
            ok = {"string": isinstance(v, str), "boolean": isinstance(v, bool), "null": v is None,
                  "object": isinstance(v, dict), "array": isinstance(v, list),
                  "number": isinstance(v, (int, float)) and not isinstance(v, bool),
                  "integer": isinstance(v, (int, float)) and not isinstance(v, bool) and float(v).is_integer()}[d]
            n += not ok
    return n


def main():
    tok = xtml_ref.Tokenizer.from_files(MODEL, CONFIG)
    work = tempfile.mkdtemp(prefix="tokgen_parse_ref.")
    checked = mistyped_checked = 0
    for n, (mistyped, thinking, tools, message) in enumerate(round_trips(seed=30150)):
        ids = xtml_ref.encode_segments(tok, xtml_ref.assistant_body_segments(message, thinking))
        request = os.path.join(work, "request.json")
        with open(request, "w", encoding="utf-8") as f:
            json.dump({"messages": [{"role": "user", "content": "hi"}], "tools": tools}, f, ensure_ascii=False)
        cmd = [os.path.join(BIN, "k3-tokgen"), "parse", MODEL, CONFIG, "-", "--tools", request, "--json"]
        if not thinking:
            cmd.append("--no-thinking")
        r = subprocess.run(cmd, input=",".join(map(str, ids)).encode(), capture_output=True)
        where = "round trip %d (%s)" % (n, json.dumps(message, ensure_ascii=False))
        assert r.returncode == 0, "%s: exit %d: %s" % (where, r.returncode, r.stderr.decode())
        got = json.loads(r.stdout)
        m = got["message"]
        calls = message.get("tool_calls") or []
        assert got["finish_reason"] == ("tool_calls" if calls else "stop"), where
        assert (m["content"] or "") == message["content"], (where, m["content"])
        assert (m.get("reasoning_content") or "") == message.get("reasoning_content", ""), where
        assert len(m.get("tool_calls") or []) == len(calls), (where, m.get("tool_calls"))
        for want, have in zip(calls, m.get("tool_calls") or []):
            assert have["id"] == want["id"] and have["function"]["name"] == want["function"]["name"], (where, have)
            args = json.loads(have["function"]["arguments"], object_pairs_hook=Pairs)
            assert typed(args) == typed(want["function"]["arguments"]), (where, have["function"]["arguments"])
        wrong = declared_mismatch(tools, calls)
        assert (wrong > 0) == mistyped, (where, wrong)  # the generator made what it says it made
        checked += 1
        mistyped_checked += mistyped
    print("%d round trips through k3-tokgen parse, %d with mistyped arguments: all as written"
          % (checked, mistyped_checked))
    assert checked == N and mistyped_checked == MISTYPED


if __name__ == "__main__":
    main()
