#!/usr/bin/python3
"""Tool use end to end on k3-mini: for each held-out city (never in training),
ask for its weather with the tools declared, let `k3-run` generate greedily
from the XTML prompt (rendered by scripts/xtml_ref.py), and check that the
reply parses into a valid call of the declared tool. Then, for each held-out
dictionary word, ask what it means (no tools): the reply must come in the
format and its answer should quote the asked word.

    k3_mini_tooluse.py CONTAINER [--cities models/k3-mini/eval/held_cities.json]
                       [--effort max|none] [--json OUT] [--k3-run PATH]

The check works on token ids, independently of the C++ parser: the reply must
be `reasoning CLOSE(think) OPEN(response) content CLOSE(response) OPEN(tools)
OPEN(call tool=T index=1) {OPEN(argument key=K type=Y) value CLOSE(argument)}
CLOSE(call) CLOSE(tools) CLOSE(message) <|end_of_msg|>` (spec 7.6, what the
model writes), T a declared tool, every key a declared parameter whose type
matches (string raw; number/integer a JSON number), required keys present.
"""

import argparse
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import k3_mini_chat as chat  # noqa: E402
import xtml_ref  # noqa: E402


class Malformed(Exception):
    pass


def items(tok, ids):
    """ids -> [("open"|"close", text) | ("text", text) | ("eom", None)]."""
    inv = {r: b for b, r in tok.ranks.items()}
    o, c, s, e = (tok.special(x) for x in xtml_ref.STRUCTURE)
    out, i = [], 0
    while i < len(ids):
        t = ids[i]
        if t in (o, c):
            j = i + 1
            while j < len(ids) and ids[j] in inv:
                j += 1
            if j >= len(ids) or ids[j] != s:
                raise Malformed(f"marker at {i} not closed by <|sep|>")
            out.append(("open" if t == o else "close", b"".join(inv[x] for x in ids[i + 1:j]).decode()))
            i = j + 1
        elif t == e:
            out.append(("eom", None))
            i += 1
        elif t in inv:
            j = i
            while j < len(ids) and ids[j] in inv:
                j += 1
            out.append(("text", b"".join(inv[x] for x in ids[i:j]).decode()))
            i = j
        else:
            raise Malformed(f"unexpected token {t} at {i}")
    return out


_ATTR = re.compile(r' (\w+)="([^"]*)"')


def open_tag(text):
    tag = text.split(" ", 1)[0]
    attrs = dict((k, v.replace("&quot;", '"').replace("&amp;", "&")) for k, v in _ATTR.findall(text[len(tag):]))
    return tag, attrs


def parse_reply(tok, ids):
    """The assistant reply after OPEN(think): (reasoning, content, [(tool, {key: (type, text)})])."""
    it = items(tok, ids)
    pos = 0

    def take(kind, text=None):
        nonlocal pos
        if pos >= len(it) or it[pos][0] != kind or (text is not None and it[pos][1] != text):
            raise Malformed(f"expected {kind} {text or ''} at item {pos}, got {it[pos] if pos < len(it) else 'end'}")
        pos += 1
        return it[pos - 1][1]

    def text():
        nonlocal pos
        if pos < len(it) and it[pos][0] == "text":
            pos += 1
            return it[pos - 1][1]
        return ""

    reasoning = text()
    take("close", "think")
    take("open", "response")
    content = text()
    take("close", "response")
    calls = []
    if pos < len(it) and it[pos] == ("open", "tools"):
        pos += 1
        while pos < len(it) and it[pos][0] == "open":
            tag, attrs = open_tag(take("open"))
            if tag != "call" or set(attrs) != {"tool", "index"} or attrs["index"] != str(len(calls) + 1):
                raise Malformed(f"bad call marker {tag} {attrs}")
            args = {}
            while pos < len(it) and it[pos][0] == "open":
                atag, aat = open_tag(take("open"))
                if atag != "argument" or set(aat) != {"key", "type"}:
                    raise Malformed(f"bad argument marker {atag} {aat}")
                args[aat["key"]] = (aat["type"], text())
                take("close", "argument")
            take("close", "call")
            calls.append((attrs["tool"], args))
        take("close", "tools")
    take("close", "message")
    take("eom")
    return reasoning, content, calls


def valid_call(call, tools):
    """Why the call is not a valid call of a declared tool, or None."""
    name, args = call
    decl = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    if name not in decl:
        return f"undeclared tool {name}"
    props, required = decl[name]["properties"], decl[name].get("required", [])
    for k, (typ, text) in args.items():
        if k not in props:
            return f"undeclared argument {k}"
        want = props[k]["type"]
        if want == "string" and typ != "string":
            return f"{k}: type {typ}, declared string"
        if want in ("integer", "number"):
            try:
                v = json.loads(text)
            except ValueError:
                return f"{k}: not JSON: {text!r}"
            if typ != "number" or isinstance(v, bool) or not isinstance(v, (int, float)) or \
                    (want == "integer" and not isinstance(v, int)):
                return f"{k}: {text!r} is not a declared {want}"
    missing = [k for k in required if k not in args]
    return f"missing {missing}" if missing else None


def generate(k3_run, container, ids, n=96):
    r = subprocess.run([k3_run, container, "--prompt-ids", ",".join(map(str, ids)), "-n", str(n), "--temp", "0",
                        "--json"], capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])["tokens"]


def tokgen_parse(k3_tokgen, container, ids, request, work):
    """The C++ output parser's verdict (`k3-tokgen parse --tools`): the OpenAI
    message with its tool calls, or None when it reports the reply malformed."""
    req_path = os.path.join(work, "k3mini_tooluse_request.json")
    with open(req_path, "w") as f:
        json.dump(request, f)
    r = subprocess.run([k3_tokgen, "parse", container, ",".join(map(str, ids)), "--tools", req_path, "--json"],
                       capture_output=True, text=True)
    return json.loads(r.stdout)["message"] if r.returncode == 0 else None


def define_check(tok, a, eom, n, word):
    """A held-out word asked about without tools: does the reply come in the
    format (think, response, no call) and does the answer open with the word
    quoted as asked (the template's `"word" is a noun: ...`)?"""
    ask = chat.DEFINE_ASK[n % len(chat.DEFINE_ASK)].format(w=word)
    req = chat.request([("user", ask)], None, None if a.effort == "none" else a.effort, True)
    out = generate(a.k3_run, a.container, xtml_ref.render(tok, req))
    row = {"word": word, "ask": ask, "ids": out, "in_format": False, "word_exact": False}
    try:
        reasoning, content, calls = parse_reply(tok, out[:out.index(eom) + 1] if eom in out else out)
        row.update(reasoning=reasoning, content=content, in_format=bool(reasoning and content and not calls),
                   word_exact=content.startswith(f'"{word}"'))
    except Malformed as e:
        row["error"] = f"malformed: {e}"
    return row


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("container")
    ap.add_argument("--cities", default=os.path.join(here, "..", "models", "k3-mini", "eval", "held_cities.json"))
    ap.add_argument("--words", default=os.path.join(here, "..", "models", "k3-mini", "eval", "held_words.json"),
                    help="held-out dictionary words for the define check")
    ap.add_argument("--effort", default="max", choices=["max", "none"])
    ap.add_argument("--k3-run", default=os.path.join(here, "..", "build", "release", "bin", "k3-run"))
    ap.add_argument("--k3-tokgen", default=os.path.join(here, "..", "build", "release", "bin", "k3-tokgen"))
    ap.add_argument("--work", default="/tmp")
    ap.add_argument("--json", help="write per-city results here")
    a = ap.parse_args(argv)
    tok = xtml_ref.Tokenizer.from_files(os.path.join(a.container, "tiktoken.model"),
                                        os.path.join(a.container, "tokenizer_config.json"))
    with open(a.cities) as f:
        cities = json.load(f)
    eom = tok.special("<|end_of_msg|>")
    rows, ok, exact, cpp_ok = [], 0, 0, 0
    for n, city in enumerate(cities):
        ask = chat.WEATHER_ASK[n % len(chat.WEATHER_ASK)].format(c=city)
        req = chat.request([("user", ask)], chat.TOOLS, None if a.effort == "none" else a.effort, True)
        out = generate(a.k3_run, a.container, xtml_ref.render(tok, req))
        row = {"city": city, "ask": ask, "ids": out}
        msg = tokgen_parse(a.k3_tokgen, a.container, out, req, a.work)
        calls = (msg or {}).get("tool_calls") or []
        row["k3_tokgen_parse"] = calls
        cpp_ok += bool(calls) and calls[0]["function"]["name"] in ("get_weather", "lookup")
        try:
            _, _, calls = parse_reply(tok, out[:out.index(eom) + 1] if eom in out else out)
            why = "no tool call" if not calls else valid_call(calls[0], chat.TOOLS)
            if why is None:
                ok += 1
                row["call"] = [calls[0][0], {k: v[1] for k, v in calls[0][1].items()}]
                exact += calls[0][1].get("city", ("", ""))[1] == city
            row["error"] = why
        except Malformed as e:
            row["error"] = f"malformed: {e}"
        rows.append(row)
    res = {"cities": len(cities), "valid_calls": ok, "rate": ok / len(cities),
           "city_argument_exact": exact, "k3_tokgen_parse_calls": cpp_ok, "effort": a.effort}
    with open(a.words) as f:
        words = json.load(f)
    define_rows = [define_check(tok, a, eom, n, word) for n, (word, _) in enumerate(words)]
    res.update({"words": len(words), "define_in_format": sum(r["in_format"] for r in define_rows),
                "define_word_exact": sum(r["word_exact"] for r in define_rows)})
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(res, rows=rows, define_rows=define_rows), f, indent=1)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
