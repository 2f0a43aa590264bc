#!/usr/bin/python3
"""Independent reference renderer of the Kimi K3 XTML chat format (spec 7.6).

Written from the spec for the project's tests and for making training
conversations; it shares no code with the C++ encoder (libs/k3/tok): its own
tiktoken-style tokenizer (the Kimi split pattern through Python `regex`, rank
BPE), its own request reading, and Python's own json.dumps for every JSON
text, which is what Moonshot's encoding_k3.py uses.

API (request = an OpenAI chat-completions body as a dict, as json.loads gives it):
    tok  = Tokenizer.from_files("tiktoken.model", "tokenizer_config.json")
    segs = segments(request)             # [("special", "<|open|>"), ("text", "message"), ...]
    ids  = encode_segments(tok, segs)    # list[int]
    ids  = render(tok, request)          # both steps
    body = assistant_body_segments(message, thinking)  # what the model writes after the generation prompt
    print(segments_text(segs))           # specials as is, text segments as ‹…›

Request options: chat_template_kwargs.thinking (default True) and
.thinking_effort ("low" | "high" | "max" | None; default "max" with thinking,
as HF apply_chat_template), OpenAI reasoning_effort (none -> thinking off,
minimal/low -> low, medium/high -> high, xhigh -> max), top-level
add_generation_prompt; the legacy form with a top-level "thinking" has no
effort turn unless one is given. Run as a script:
    xtml_ref.py TIKTOKEN_MODEL TOKENIZER_CONFIG < request.json   (prints the ids)
"""

import base64
import json
import sys

import regex

# Spec 7.3, with each [X&&[^\p{Han}]] written as regex V1's [[X]--[\p{Han}]].
_S1 = r"[[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]--[\p{Han}]]"
_S2 = r"[[\p{Ll}\p{Lm}\p{Lo}\p{M}]--[\p{Han}]]"
_CONTRACTION = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
KIMI_PATTERN = (
    r"[\p{Han}]+"
    r"|[^\r\n\p{L}\p{N}]?" + _S1 + "*" + _S2 + "+" + _CONTRACTION +
    r"|[^\r\n\p{L}\p{N}]?" + _S1 + "+" + _S2 + "*" + _CONTRACTION +
    r"|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+"
    r"|\s+(?!\S)"
    r"|\s+"
)

STRUCTURE = ("<|open|>", "<|close|>", "<|sep|>", "<|end_of_msg|>")


class Tokenizer:
    """tiktoken encode_ordinary for a tiktoken.model: split, then rank BPE."""

    def __init__(self, ranks, added):
        self.ranks = ranks  # bytes -> rank
        self.added = added  # content -> id
        self.pattern = regex.compile(KIMI_PATTERN, regex.V1)
        self._cache = {}

    @classmethod
    def from_files(cls, model_path, config_path=None):
        ranks = {}
        with open(model_path, "rb") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                b64, rank = line.split()
                ranks[base64.b64decode(b64)] = int(rank)
        num_base = len(ranks)
        named = {}
        if config_path:
            with open(config_path, encoding="utf-8") as f:
                for key, entry in json.load(f).get("added_tokens_decoder", {}).items():
                    named[int(key)] = entry["content"]
        added = {}
        for i in range(num_base, num_base + 256):
            added[named.get(i, "<|reserved_token_%d|>" % i)] = i
        return cls(ranks, added)

    def special(self, content):
        return self.added[content]

    def _bpe(self, piece):
        whole = self.ranks.get(piece)
        if whole is not None:
            return [whole]
        parts = [piece[i:i + 1] for i in range(len(piece))]
        while len(parts) > 1:
            best, at = None, -1
            for i in range(len(parts) - 1):
                r = self.ranks.get(parts[i] + parts[i + 1])
                if r is not None and (best is None or r < best):
                    best, at = r, i
            if best is None:
                break
            parts[at:at + 2] = [parts[at] + parts[at + 1]]
        return [self.ranks[p] for p in parts]

    def encode_ordinary(self, text):
        hit = self._cache.get(text)
        if hit is not None:
            return list(hit)
        ids = []
        for piece in self.pattern.findall(text):
            ids.extend(self._bpe(piece.encode("utf-8")))
        if len(text) < 256:
            self._cache[text] = tuple(ids)
        return ids


# ---------------------------------------------------------------- request options

REASONING_EFFORT = {"minimal": "low", "low": "low", "medium": "high", "high": "high", "xhigh": "max"}


def options(request):
    """(thinking, effort or None, add_generation_prompt) of a request dict."""
    kwargs = request.get("chat_template_kwargs") or {}
    legacy = request.get("thinking") is not None
    thinking = kwargs.get("thinking")
    if thinking is None:
        thinking = request.get("thinking")
    effort_given = "thinking_effort" in kwargs
    effort = kwargs.get("thinking_effort")
    re_effort = request.get("reasoning_effort")
    if re_effort is not None:
        if re_effort == "none":
            thinking, effort = False, None
        else:
            effort = REASONING_EFFORT[re_effort]
        effort_given = True
    if thinking is None:
        thinking = True
    if effort is not None and effort not in ("low", "high", "max"):
        raise ValueError("thinking_effort %r" % effort)
    if not effort_given and thinking and not legacy:
        effort = "max"
    if not thinking:
        effort = None
    agp = request.get("add_generation_prompt")
    return thinking, effort, True if agp is None else agp


# ---------------------------------------------------------------- segments

def _esc(v):
    return v.replace("&", "&amp;").replace('"', "&quot;")


def OPEN(tag, *attrs):
    out = [("special", "<|open|>"), ("text", tag)]
    for k, v in attrs:
        out += [("text", " " + k), ("text", '="'), ("text", _esc(v)), ("text", '"')]
    return out + [("special", "<|sep|>")]


def CLOSE(tag):
    return [("special", "<|close|>"), ("text", tag), ("special", "<|sep|>")]


def END():
    return CLOSE("message") + [("special", "<|end_of_msg|>")]


FENCE = "```"


def _tools_text(tools):
    return json.dumps(tools, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _fenced(text):
    return FENCE + "json\n" + text + "\n" + FENCE


def _parts(content):
    if content is None:
        return []
    if isinstance(content, str):
        return [content]
    return [p["text"] for p in content]


def _no_constants(name):
    raise ValueError("not JSON: " + name)


def _arguments(call):
    """(kind, value): ("none", None) | ("object", dict) | ("raw", text)."""
    args = call["function"].get("arguments")
    if args is None or args == "":
        return "none", None
    if isinstance(args, dict):
        return "object", args
    try:
        value = json.loads(args, parse_constant=_no_constants)
    except ValueError:
        return "raw", args
    if not isinstance(value, dict):
        raise ValueError("arguments: JSON but not an object")
    return "object", value


def _arg_type(v):
    if isinstance(v, bool):  # before number: bool is an int in Python
        return "boolean"
    if v is None:
        return "null"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, dict):
        return "object"
    return "array"


def _call(call, index):
    out = OPEN("call", ("tool", call["function"]["name"]), ("index", str(index)))
    kind, value = _arguments(call)
    if kind == "raw":
        out += OPEN("json", ("type", "object")) + [("text", value)] + CLOSE("json")
    elif kind == "object":
        for k, v in value.items():
            text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
            out += OPEN("argument", ("key", k), ("type", _arg_type(v))) + [("text", text)] + CLOSE("argument")
    return out + CLOSE("call")


def _reasoning(m):
    return m.get("reasoning_content") or m.get("reasoning") or ""


def _channels(m, thinking, opened):
    out = []
    if thinking:
        if not opened:
            out += OPEN("think")
        out += [("text", _reasoning(m))] + CLOSE("think")
    if thinking or not opened:
        out += OPEN("response")
    out += [("text", p) for p in _parts(m.get("content"))] + CLOSE("response")
    calls = m.get("tool_calls") or []
    if calls:
        out += OPEN("tools")
        for i, c in enumerate(calls, 1):
            out += _call(c, i)
        out += CLOSE("tools")
    return out + END()


def assistant_body_segments(message, thinking):
    """The segments a model writes after the generation prompt for `message`."""
    return _drop_empty(_channels(message, thinking, True))


def _role(m, role):
    attrs = [("role", role)]
    if m.get("name"):
        attrs.append(("name", m["name"]))
    return attrs


def _system(kind, body):
    return OPEN("message", ("role", "system"), ("type", kind)) + [("text", body.strip())] + END()


def _drop_empty(segs):
    return [s for s in segs if not (s[0] == "text" and s[1] == "")]


def segments(request, developer_as_system=False):
    """The prompt of an OpenAI request dict as [(kind, value)], kind special|text."""
    thinking, effort, agp = options(request)
    out = []
    tools = request.get("tools")
    if tools:
        out += OPEN("message", ("role", "system"), ("type", "tool-declare"))
        out += [("text", "# Tools\nHere are the available tools, described in JSONSchema.\n\n" + _fenced(_tools_text(tools)))]
        out += END()
    if thinking and effort:
        out += _system("thinking-effort",
                       "`thinking_effort` guides on how much to think in your thinking channel (not including the "
                       "response channel), supported values include `low`, `medium`, `high`, and `max`.\n"
                       "Now the system is invoked with `thinking_effort=%s`." % effort)
    messages = list(request["messages"])
    last_calls = []
    since_assistant = 0
    i = 0
    while i < len(messages):
        m = messages[i]
        role = m["role"]
        if role == "developer" and developer_as_system:
            role = "system"
        if role == "tool":
            run = []
            while i < len(messages) and messages[i]["role"] == "tool":
                run.append(messages[i])
                i += 1
            order = {c.get("id"): n for n, c in enumerate(last_calls) if c.get("id")}

            def position(t):
                return order.get(t.get("tool_call_id"), len(last_calls) + 1)
            for t in sorted(run, key=position):  # sorted() is stable
                n = order.get(t.get("tool_call_id"))
                name = last_calls[n]["function"]["name"] if n is not None else t.get("name")
                if not name:
                    raise ValueError("tool result with no matching call and no name")
                since_assistant += 1
                out += OPEN("message", ("role", "tool"), ("tool", name), ("index", str(since_assistant)))
                out += [("text", p) for p in _parts(t.get("content"))] + END()
            continue
        if role == "system" and m.get("tools"):
            attrs = _role(m, "system") + [("type", "tool-declare")]
            out += OPEN("message", *attrs)
            out += [("text", "## New Tools Available\nThe system dynamically extends the toolset via lazy-loading.\n"
                             "You have access to all existing and extended tools.\n"
                             "Here are the specs for the extended tools.\n\n" + _fenced(_tools_text(m["tools"])))]
            out += END()
        elif role in ("system", "user"):
            out += OPEN("message", *_role(m, role)) + [("text", p) for p in _parts(m.get("content"))] + END()
        elif role == "assistant":
            out += OPEN("message", *_role(m, "assistant")) + _channels(m, thinking, False)
            last_calls = m.get("tool_calls") or []
            since_assistant = 0
        else:
            raise ValueError("unknown role %r" % role)
        i += 1
    choice = request.get("tool_choice")
    if choice == "required":
        out += _system("tool-choice", "The system is invoked with `tool_choice=required`.\n"
                                      "You MUST call tools in the next message.")
    elif choice == "none":
        out += _system("tool-choice", "The system is invoked with `tool_choice=none`.\n"
                                      "You MUST NOT call any tools in the next message.")
    fmt = (request.get("response_format") or {}).get("type", "text")
    if fmt in ("json_object", "json_schema"):
        body = ("The system is invoked with `response_format=%s`.\nYour response must be raw JSON data without "
                "markdown code blocks (```json) or any additional formatting." % fmt)
        if fmt == "json_schema":
            body += "\nThe JSON data must match the following schema:\n" + _fenced(
                _tools_text(request["response_format"]["json_schema"]["schema"]))
        out += _system("response-format", body)
    if agp:
        out += OPEN("message", ("role", "assistant")) + OPEN("think" if thinking else "response")
    return _drop_empty(out)


def encode_segments(tok, segs):
    ids = []
    for kind, value in segs:
        if kind == "special":
            ids.append(tok.special(value))
        else:
            ids.extend(tok.encode_ordinary(value))
    return ids


def render(tok, request, developer_as_system=False):
    return encode_segments(tok, segments(request, developer_as_system))


def segments_text(segs):
    return "".join(v if k == "special" else "\u2039" + v + "\u203a" for k, v in segs)


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: xtml_ref.py TIKTOKEN_MODEL [TOKENIZER_CONFIG] < request.json")
    t = Tokenizer.from_files(sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else None)
    print(" ".join(map(str, render(t, json.load(sys.stdin)))))
