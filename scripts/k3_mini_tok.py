#!/usr/bin/python3
"""tiktoken-exact encoder for a K3 snapshot's tokenizer (spec 7.3-7.5), in Python.

Reads `tiktoken.model` and `tokenizer_config.json`; encodes one text segment
with special tokens disallowed (a literal `<|open|>` is text, spec 7.5/7.6):
the Kimi split regex (Python `regex`, V1 set difference for `&&[^\\p{Han}]`),
then rank-BPE per piece (lowest-rank adjacent merge, leftmost on ties).
k3-mini's training ids come from here; tests/model/k3_mini_tok_test.py checks
it against `k3-tokgen encode` (the C++ encoder) on held-out text.
"""

import base64
import json
import os

import regex

_S1 = r"[[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]--[\p{Han}]]"
_S2 = r"[[\p{Ll}\p{Lm}\p{Lo}\p{M}]--[\p{Han}]]"
_CONTR = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
SPLIT = regex.compile(
    r"[\p{Han}]+"
    rf"|[^\r\n\p{{L}}\p{{N}}]?{_S1}*{_S2}+{_CONTR}"
    rf"|[^\r\n\p{{L}}\p{{N}}]?{_S1}+{_S2}*{_CONTR}"
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    regex.V1)


class Tokenizer:
    def __init__(self, snapshot):
        self.ranks = {}
        with open(os.path.join(snapshot, "tiktoken.model"), encoding="ascii") as f:
            for line in f:
                if line.strip():
                    b64, r = line.split()
                    self.ranks[base64.b64decode(b64)] = int(r)
        self.num_base = len(self.ranks)
        with open(os.path.join(snapshot, "tokenizer_config.json"), encoding="utf-8") as f:
            dec = json.load(f)["added_tokens_decoder"]
        self.added = {v["content"]: int(k) for k, v in dec.items()}
        self.bytes_of = {r: b for b, r in self.ranks.items()}
        self.bytes_of.update({i: c.encode("utf-8") for c, i in self.added.items()})
        self._cache = {}  # piece bytes -> ids

    def special(self, name):
        return self.added[name]

    def _bpe(self, piece):
        hit = self._cache.get(piece)
        if hit is not None:
            return hit
        ids = self._merge(piece)
        self._cache[piece] = ids
        return ids

    def _merge(self, piece):
        if piece in self.ranks:
            return [self.ranks[piece]]
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

    def encode(self, text):
        """Ids of one segment, special tokens disallowed."""
        ids = []
        for piece in SPLIT.findall(text):
            ids += self._bpe(piece.encode("utf-8"))
        return ids

    def decode(self, ids):
        return b"".join(self.bytes_of[i] for i in ids).decode("utf-8", errors="replace")
