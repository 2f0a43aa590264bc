#!/usr/bin/python3
"""Test cases for the JSON-schema grammar matcher (libs/k3/tok/grammar_*),
judged independently: Python's json module parses, and a validator of the
schema subset written here (not the C++ compiler) decides validity.

Prints JSON lines {"schema": S, "text": T, "valid": bool, "canonical": bool}:
- canonical: a document generated in the form the grammar generates
  (properties in schema order, declared ones only, at most 20 whitespace
  bytes at a place, short numbers); the matcher must accept it whole.
- the rest: prefixes and random edits of those; `valid` is Python's verdict.
  The matcher may refuse a valid one (it generates a subset) but must never
  accept an invalid one, and for the any-object schema (no subset limits
  apply to these edits) it must agree exactly (`exact`).

  grammar_cases.py [--seed N] [--count N]
"""
import argparse
import json
import random
import re

SCHEMAS = [
    {"type": "object"},
    {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}, "age": {"type": "integer"}},
     "required": ["name", "age"], "additionalProperties": False},
    {"type": "object", "properties": {"a": {"type": "boolean"}, "b": {"type": "null"}, "c": {"type": "number"}},
     "required": ["c"]},
    {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3},
    {"type": "string", "minLength": 2, "maxLength": 5},
    {"enum": ["red", "green", 3, None, True, {"k": [1, 2]}]},
    {"const": "fixed"},
    {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "array", "items": {"type": "boolean"}, "maxItems": 2}]},
    {"type": ["number", "null"]},
    {"type": "object", "properties": {
        "items": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer"},
                                                                                "tags": {"type": "array", "items": {"enum": ["x", "y"]}}},
                                              "required": ["id"], "additionalProperties": False}, "maxItems": 4},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}]}}, "required": ["items"], "additionalProperties": False},
    {"type": "object", "additionalProperties": {"type": "integer"}},
    {},
]
ANY_OBJECT = 0  # index of the schema the matcher must agree with exactly


def same(a, b):
    """JSON equality (True is not 1, 1 == 1.0)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def has_type(v, t):
    return {"null": v is None, "boolean": isinstance(v, bool),
            "integer": isinstance(v, int) and not isinstance(v, bool) or (isinstance(v, float) and v.is_integer()),
            "number": isinstance(v, (int, float)) and not isinstance(v, bool),
            "string": isinstance(v, str), "array": isinstance(v, list), "object": isinstance(v, dict)}[t]


def valid(s, v):
    if s is True or s == {}:
        return True
    if "anyOf" in s:
        return any(valid(a, v) for a in s["anyOf"])
    if "const" in s and not same(s["const"], v):
        return False
    if "enum" in s and not any(same(e, v) for e in s["enum"]):
        return False
    if "type" in s:
        types = s["type"] if isinstance(s["type"], list) else [s["type"]]
        if not any(has_type(v, t) for t in types):
            return False
    if isinstance(v, str):
        n = len(v)
        if n < s.get("minLength", 0) or n > s.get("maxLength", 1 << 40):
            return False
    if isinstance(v, list):
        if len(v) < s.get("minItems", 0) or len(v) > s.get("maxItems", 1 << 40):
            return False
        if "items" in s and not all(valid(s["items"], x) for x in v):
            return False
    if isinstance(v, dict):
        props = s.get("properties", {})
        if any(r not in v for r in s.get("required", [])):
            return False
        for k, x in v.items():
            if k in props:
                if not valid(props[k], x):
                    return False
            elif "additionalProperties" in s:
                ap = s["additionalProperties"]
                if ap is False or (isinstance(ap, dict) and not valid(ap, x)):
                    return False
    return True


def no_constant(name):
    raise ValueError(name)


def judge(s, text):
    try:
        v = json.loads(text, parse_constant=no_constant)
    except (ValueError, RecursionError):
        return False
    return valid(s, v)


def rand_string(r, lo=0, hi=8):
    alphabet = 'abc XYZ"\\/\n\t\u00e9\u4e2d\U0001F600'
    return "".join(r.choice(alphabet) for _ in range(r.randint(lo, hi)))


def gen(s, r, depth=0):
    """A value valid under s, in the grammar's generated form."""
    if s is True or s == {}:
        s = {"type": r.choice(["string", "number", "boolean", "null", "object", "array"] if depth < 2 else ["string", "null"])}
    if "anyOf" in s:
        return gen(r.choice(s["anyOf"]), r, depth)
    if "const" in s:
        return Fixed(s["const"])
    if "enum" in s:
        return Fixed(r.choice(s["enum"]))
    t = s.get("type", "object")
    if isinstance(t, list):
        t = r.choice(t)
    if t == "string":
        lo, hi = s.get("minLength", 0), min(s.get("maxLength", 8), 8)
        return rand_string(r, lo, max(lo, hi))
    if t == "integer":
        return r.randint(-10**6, 10**6)
    if t == "number":
        return r.choice([r.randint(-100, 100), round(r.uniform(-1e3, 1e3), 3), 1.5e-7])
    if t == "boolean":
        return r.random() < 0.5
    if t == "null":
        return None
    if t == "array":
        lo, hi = s.get("minItems", 0), min(s.get("maxItems", 3), 3)
        return [gen(s.get("items", True), r, depth + 1) for _ in range(r.randint(lo, max(lo, hi)))]
    props = s.get("properties", {})
    req = s.get("required", [])
    out = {}
    if props:
        for k, ps in props.items():
            if k in req or r.random() < 0.6:
                out[k] = gen(ps, r, depth + 1)
    else:
        ap = s.get("additionalProperties", True)
        for _ in range(r.randint(0, 3) if ap is not False else 0):
            out[rand_string(r, 0, 4)] = gen(True if ap is True else ap, r, depth + 1)
    return out


class Fixed:
    """An enum/const value: the grammar writes it compact, as the schema gives it."""
    def __init__(self, v):
        self.v = v


def ws(r):
    return "".join(r.choice(" \n\t\r") for _ in range(r.choice([0, 0, 1, 2, 4])))


def dump(v, r):
    """JSON text with random (short) whitespace where the grammar allows it."""
    if isinstance(v, Fixed):
        return json.dumps(v.v, separators=(",", ":"), ensure_ascii=False)
    if isinstance(v, dict):
        if not v:
            return "{" + ws(r) + "}"
        return "{" + ws(r) + ("," + ws(r)).join(
            json.dumps(k, ensure_ascii=r.random() < 0.3) + ws(r) + ":" + ws(r) + dump(x, r) + ws(r) for k, x in v.items()) + "}"
    if isinstance(v, list):
        if not v:
            return "[" + ws(r) + "]"
        return "[" + ws(r) + ("," + ws(r)).join(dump(x, r) + ws(r) for x in v) + "]"
    return json.dumps(v, ensure_ascii=r.random() < 0.3)


EDIT_ALPHABET = list('{}[]",:0123456789.eE+- \ntruefalsn\\/abu') + ["\u00e9", "\x01"]
LIMITS = re.compile(r"\d{16}|[eE][+-]?\d{3}|[ \t\n\r]{21}|\\u[dD][89a-fA-F]")


def edit(text, r):
    t = list(text)
    for _ in range(r.randint(1, 3)):
        k = r.randrange(len(t) + 1)
        op = r.random()
        if op < 0.35 and t:
            del t[min(k, len(t) - 1)]
        elif op < 0.7:
            t.insert(k, r.choice(EDIT_ALPHABET))
        elif t:
            t[min(k, len(t) - 1)] = r.choice(EDIT_ALPHABET)
    return "".join(t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=60)
    a = ap.parse_args()
    r = random.Random(a.seed)
    for i, s in enumerate(SCHEMAS):
        for _ in range(a.count):
            text = dump(gen(s, r), r)
            assert judge(s, text), (s, text)
            print(json.dumps({"schema": s, "text": text, "valid": True, "canonical": True}))
            cut = text[: r.randrange(len(text))]
            print(json.dumps({"schema": s, "text": cut, "valid": judge(s, cut), "prefix": True}))
            for _ in range(3):
                e = edit(text, r)
                exact = i == ANY_OBJECT and not LIMITS.search(e) and e == e.strip()
                print(json.dumps({"schema": s, "text": e, "valid": judge(s, e), "exact": exact}))


if __name__ == "__main__":
    main()
