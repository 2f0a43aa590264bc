#!/usr/bin/python3
"""Random OpenAI chat-completions requests covering every element and option of
the K3 chat format (spec 7.6), for comparing encoders (tests/tok/
chat_encoder_ref_test.py) and for making varied training conversations.

    requests(n, seed) -> list of (request dict, its JSON text)

The JSON text is what an encoder under test reads; it is written by hand here
where json.dumps cannot say it (number literals such as 1e400, 1E5, -0 and
big integers inside `arguments`). Every request is valid: each option
combination the encoders accept, none they refuse.
"""

import json
import random

WORDS = [
    "hello", "world", "Kimi", "the", "quick", "brown", "fox", "don't", "we'll", "HTTPServer", "x", "42", "3.14",
    "你好", "世界", "机器学习", "こんにちは", "カタカナ", "안녕하세요", "Привет", "мир", "مرحبا", "Ελληνικά", "café",
    "naïve", "😊", "🚀🚀", "e\u0301", "\u00a0", "&", "&amp;", "&quot;", '"', "'", "<", ">", "<b>", "<|open|>",
    "<|close|>", "<|sep|>", "<|end_of_msg|>", "[BOS]", "```", "{", "}", "\\", "\\n", "$", "%", "#", "@", "…", "—",
]
SEPARATORS = [" ", " ", " ", "", "\n", "\n\n", "\r\n", "\t", "  ", ", ", ". "]


def text(rng, max_words=12):
    if rng.random() < 0.05:
        return ""
    n = rng.randint(1, max_words)
    out = ""
    for i in range(n):
        out += rng.choice(WORDS)
        if i + 1 < n:
            out += rng.choice(SEPARATORS)
    if rng.random() < 0.1:
        out = rng.choice([" ", "\n", "  "]) + out + rng.choice([" ", "\n", ""])
    return out


def key(rng):
    return rng.choice(["path", "query", "n", "flag", "opts", "名前", "ключ", "a\"b", "x&y", "k" + str(rng.randint(0, 9)),
                       "z", "A", "é", "list", "data"])


# (value, literal): the literal is how the value is written inside `arguments`.
def number(rng):
    choices = [
        (0, "0"), (-1, "-1"), (42, "42"), (2 ** 70, str(2 ** 70)), (-(10 ** 25) - 7, str(-(10 ** 25) - 7)),
        (0, "-0"), (1.0, "1.0"), (0.1, "0.1"), (1e16, "1e16"), (1e-05, "0.00001"), (1e-05, "1e-5"),
        (-0.0, "-0.0"), (123.456, "123.456"), (1e300 * 10, "1e301"), (100000.0, "1E5"), (100.0, "1.0e2"),
        (float("inf"), "1e400"), (float("-inf"), "-1e400"), (0.0, "1e-400"), (1 / 3, repr(1 / 3)),
        (2.5e-7, "2.5e-7"), (9007199254740993, "9007199254740993"), (1e15, "1e15"), (123456789.0, "123456789.0"),
        (5e-324, "5e-324"), (1.7976931348623157e308, "1.7976931348623157e308"),
    ]
    if rng.random() < 0.3:
        x = rng.uniform(-1e6, 1e6) * 10 ** rng.randint(-30, 30)
        return x, repr(x)
    return rng.choice(choices)


def value(rng, depth=0):
    """(python value, JSON literal with random but valid spacing)."""
    r = rng.random()
    if depth > 2:
        r = r * 0.6
    if r < 0.12:
        b = rng.random() < 0.5
        return b, "true" if b else "false"
    if r < 0.18:
        return None, "null"
    if r < 0.38:
        return number(rng)
    if r < 0.6:
        s = text(rng, 6)
        return s, json.dumps(s, ensure_ascii=rng.random() < 0.5)
    sp = rng.choice(["", " ", "\n  "])
    if r < 0.8:
        items = [value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
        return [v for v, _ in items], "[" + ("," + sp).join(lit for _, lit in items) + "]"
    return obj(rng, depth + 1, sp)


def obj(rng, depth=0, sp=" "):
    d, lits = {}, []
    for _ in range(rng.randint(0, 4)):
        k = key(rng)
        v, lit = value(rng, depth + 1)
        if k in d:  # keep keys unique: dict and JSON text then agree on order
            continue
        d[k] = v
        lits.append(json.dumps(k, ensure_ascii=rng.random() < 0.5) + ":" + sp + lit)
    return d, "{" + ("," + sp).join(lits) + "}"


def tool(rng, name):
    props = {}
    for _ in range(rng.randint(0, 4)):
        t = rng.choice(["string", "number", "integer", "boolean", "object", "array", ["string", "null"]])
        p = {"type": t, "description": text(rng, 5)}
        if rng.random() < 0.3:
            p["default"] = number(rng)[0] if rng.random() < 0.5 else text(rng, 2)
            if not finite(p["default"]):  # json.dumps would write Infinity, which is not JSON
                p["default"] = 0
        if t == "object":
            p["properties"] = {"inner": {"type": "string", "enum": ["a", "b", "ü"]}}
        props[key(rng)] = p
    fn = {"name": name, "description": text(rng, 8), "parameters": {"type": "object", "properties": props}}
    if rng.random() < 0.3:
        fn["parameters"]["required"] = list(props)[:1]
    if rng.random() < 0.2:
        fn["strict"] = True
    return {"type": "function", "function": fn}


def finite(x):
    return not isinstance(x, float) or x - x == 0


TOOL_NAMES = ["get_weather", "search", "run_code", "读取文件", "send-mail", "a.b", "tool_x", "calc"]


def arguments(rng):
    """(arguments for the request dict, their JSON member text)."""
    r = rng.random()
    if r < 0.08:
        return "", '""'
    if r < 0.16:
        raw = rng.choice(["not json", "{broken", "[1, 2", "tru", "{'single': 1}", text(rng, 4) or "x", "NaN",
                          '{"a": NaN}'])
        try:
            json.loads(raw)
            raw = "not json: " + raw  # valid JSON that is not an object is an error, not raw text
        except ValueError:
            pass
        return raw, json.dumps(raw, ensure_ascii=False)
    d, lit = obj(rng)
    if r < 0.24 and all(finite(v) for v in d.values()):
        return d, lit.replace("\n", " ")  # an object given directly (one line: the request is JSONL)
    return lit, json.dumps(lit, ensure_ascii=rng.random() < 0.5)


def content(rng, allow_null=True):
    """(content value, JSON text)."""
    r = rng.random()
    if r < 0.1 and allow_null:
        return None, "null"
    if r < 0.3:
        parts = [{"type": "text", "text": text(rng)} for _ in range(rng.randint(1, 3))]
        return parts, json.dumps(parts, ensure_ascii=False)
    s = text(rng)
    return s, json.dumps(s, ensure_ascii=False)


class Builder:
    """A request as (key, JSON text) members, so literals survive as written."""

    def __init__(self):
        self.members = []

    def add(self, k, lit):
        self.members.append(json.dumps(k) + ": " + lit)

    def text(self):
        return "{" + ", ".join(self.members) + "}"


def random_request(rng):
    declared = rng.sample(TOOL_NAMES, rng.randint(0, 3))
    msgs_lit = []
    call_no = [0]

    def msg(fields):
        return "{" + ", ".join(json.dumps(k) + ": " + v for k, v in fields) + "}"

    if rng.random() < 0.5:
        f = [("role", json.dumps(rng.choice(["system", "system", "developer"])))]
        c, lit = content(rng)
        f.append(("content", lit))
        if rng.random() < 0.2:
            f.append(("name", json.dumps(rng.choice(["ops", "a&b", 'say "hi"', "名前"]), ensure_ascii=False)))
        msgs_lit.append(msg(f))
    dynamic = []
    for turn in range(rng.randint(1, 4)):
        if rng.random() < 0.12:
            names = [n for n in TOOL_NAMES if n not in declared and n not in dynamic][:rng.randint(1, 2)]
            if names:
                dynamic += names
                tools = [tool(rng, n) for n in names]
                f = [("role", '"system"'), ("tools", json.dumps(tools, ensure_ascii=False))]
                if rng.random() < 0.5:
                    f.append(("content", json.dumps(text(rng), ensure_ascii=False)))
                if rng.random() < 0.2:
                    f.append(("name", '"loader"'))
                msgs_lit.append(msg(f))
        f = [("role", '"user"'), ("content", content(rng, allow_null=False)[1])]
        if rng.random() < 0.15:
            f.append(("name", json.dumps(rng.choice(["alice", "Bob & Co", 'the "user"', "ユーザー"]), ensure_ascii=False)))
        msgs_lit.append(msg(f))
        if turn == 0 and rng.random() < 0.15:
            continue  # ends on a user turn
        f = [("role", '"assistant"'), ("content", content(rng)[1])]
        r = rng.random()
        if r < 0.4:
            f.append(("reasoning_content", json.dumps(text(rng), ensure_ascii=False)))
        elif r < 0.55:
            f.append(("reasoning", json.dumps(text(rng), ensure_ascii=False)))
        if rng.random() < 0.15:
            f.append(("name", '"kimi"'))
        names = declared + dynamic
        calls = []
        if names and rng.random() < 0.6:
            for _ in range(rng.randint(1, 3)):
                call_no[0] += 1
                args, lit = arguments(rng)
                calls.append(("call_%d" % call_no[0], rng.choice(names), lit))
            f.append(("tool_calls", "[" + ", ".join(
                '{"id": "%s", "type": "function", "function": {"name": %s, "arguments": %s}}'
                % (cid, json.dumps(n, ensure_ascii=False), lit) for cid, n, lit in calls) + "]"))
        msgs_lit.append(msg(f))
        if calls:
            results = []
            for cid, n, _ in calls:
                if rng.random() < 0.9:
                    tf = [("role", '"tool"'), ("tool_call_id", json.dumps(cid)), ("content", content(rng)[1])]
                    if rng.random() < 0.2:
                        tf.append(("name", json.dumps(n, ensure_ascii=False)))
                    results.append(msg(tf))
            if rng.random() < 0.1:  # a result for no call of this turn: named
                results.append(msg([("role", '"tool"'), ("tool_call_id", '"call_unknown"'), ("name", '"extra"'),
                                    ("content", '"late"')]))
            if rng.random() < 0.5:
                rng.shuffle(results)
            msgs_lit += results
    b = Builder()
    b.add("model", '"kimi-k3"')
    b.add("messages", "[" + ", ".join(msgs_lit) + "]")
    if declared:
        b.add("tools", json.dumps([tool(rng, n) for n in declared], ensure_ascii=rng.random() < 0.5))
    all_tools = declared + dynamic
    r = rng.random()
    if r < 0.15:
        b.add("tool_choice", '"required"')
    elif r < 0.3:
        b.add("tool_choice", '"none"')
    elif r < 0.4:
        b.add("tool_choice", '"auto"')
    elif r < 0.5 and all_tools:
        b.add("tool_choice", json.dumps({"type": "function", "function": {"name": rng.choice(all_tools)}},
                                        ensure_ascii=False))
    r = rng.random()
    if r < 0.12:
        b.add("response_format", '{"type": "json_object"}')
    elif r < 0.24:
        schema = {"type": "object", "properties": {"answer": {"type": "string"}, "score": {"type": "number",
                  "maximum": number(rng)[0] if rng.random() < 0.5 else 10}}, "required": ["answer"],
                  "title": text(rng, 3)}
        if not finite(schema["properties"]["score"]["maximum"]):
            schema["properties"]["score"]["maximum"] = 1
        b.add("response_format", json.dumps({"type": "json_schema", "json_schema": {"name": "out", "schema": schema}},
                                            ensure_ascii=False))
    elif r < 0.3:
        b.add("response_format", '{"type": "text"}')
    # Thinking options: legacy top-level, chat_template_kwargs, reasoning_effort.
    r = rng.random()
    if r < 0.15:
        b.add("thinking", rng.choice(["true", "false"]))
    elif r < 0.7:
        kw = []
        thinking = rng.choice([None, True, True, False])
        if thinking is not None:
            kw.append('"thinking": ' + ("true" if thinking else "false"))
        if thinking is not False and rng.random() < 0.6:
            kw.append('"thinking_effort": ' + rng.choice(['"low"', '"high"', '"max"', "null"]))
        b.add("chat_template_kwargs", "{" + ", ".join(kw) + "}")
    elif r < 0.9:
        b.add("reasoning_effort", json.dumps(rng.choice(["none", "minimal", "low", "medium", "high", "xhigh"])))
    r = rng.random()
    if r < 0.2:
        b.add("add_generation_prompt", "false")
    elif r < 0.3:
        b.add("add_generation_prompt", "true")
    if rng.random() < 0.2:
        b.add("temperature", "0.7")
    line = b.text()
    return json.loads(line), line


def requests(n, seed=17):
    rng = random.Random(seed)
    return [random_request(rng) for _ in range(n)]


if __name__ == "__main__":
    import sys
    for _, line in requests(int(sys.argv[1]) if len(sys.argv) > 1 else 10):
        print(line)
