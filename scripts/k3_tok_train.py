#!/usr/bin/python3
"""Tiny byte-level rank-BPE trainer for the synthetic K3 tokenizer.

Produces a tiktoken-style vocabulary: ranks 0..255 are the single bytes in
GPT-2 byte order, every later rank is the concatenation of two earlier
tokens. Pre-splitting is a simplified cousin of the Kimi pattern (spec 7.3):
Han runs, letter runs with an optional leading non-letter and an English
contraction, 1-3 digit runs, punctuation runs, whitespace runs. Exactness is
not needed here, only a valid and deterministic vocabulary.
"""

import base64
import heapq
import unicodedata
from collections import Counter

_HAN_RANGES = (
    (0x2E80, 0x2E99), (0x2E9B, 0x2EF3), (0x2F00, 0x2FD5), (0x3005, 0x3005),
    (0x3007, 0x3007), (0x3021, 0x3029), (0x3038, 0x303B), (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF), (0xF900, 0xFA6D), (0xFA70, 0xFAD9), (0x20000, 0x323AF),
)
_CONTRACTIONS = ("'s", "'t", "'re", "'ve", "'m", "'ll", "'d")


def gpt2_byte_order():
    """The 256 byte values in GPT-2 bytes_to_unicode order (= ranks 0..255)."""
    first = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    rest = [b for b in range(256) if b not in set(first)]
    return first + rest


def _kind(ch):
    cp = ord(ch)
    for lo, hi in _HAN_RANGES:
        if lo <= cp <= hi:
            return "H"
    if ch.isspace():
        return "S"
    cat = unicodedata.category(ch)
    if cat[0] in "LM":
        return "U" if cat in ("Lu", "Lt") else "L"
    if cat[0] == "N":
        return "N"
    return "O"


def pre_split(text):
    """Split text into pre-token pieces (simplified Kimi-like rules)."""
    kinds = [_kind(c) for c in text]
    n, i, out = len(text), 0, []
    while i < n:
        k = kinds[i]
        j = i
        if k == "H":
            while j < n and kinds[j] == "H":
                j += 1
        elif k in "UL" or (k in "OS" and text[i] not in "\r\n" and i + 1 < n
                           and kinds[i + 1] in "UL"):
            if k in "OS":
                j += 1
            while j < n and kinds[j] == "U":  # upper-case head
                j += 1
            while j < n and kinds[j] == "L":  # lower-case tail
                j += 1
            low = text[j:j + 3].lower()
            for c in sorted(_CONTRACTIONS, key=len, reverse=True):
                if low.startswith(c):
                    j += len(c)
                    break
        elif k == "N":
            while j < n and kinds[j] == "N" and j - i < 3:
                j += 1
        elif k == "O" or (text[i] == " " and i + 1 < n and kinds[i + 1] == "O"):
            j += 1
            while j < n and kinds[j] == "O":
                j += 1
            while j < n and text[j] in "\r\n":
                j += 1
        else:  # whitespace run
            r = i
            while r < n and kinds[r] == "S":
                r += 1
            last_nl = max(text.rfind("\n", i, r), text.rfind("\r", i, r))
            if last_nl >= 0:
                j = last_nl + 1
            elif r < n and r - 1 > i:
                j = r - 1
            else:
                j = r if r == n else max(r - 1, i + 1)
        out.append(text[i:j])
        i = j
    return out


def _merge(word, a, b, merged):
    out, i, n = [], 0, len(word)
    while i < n:
        if i + 1 < n and word[i] == a and word[i + 1] == b:
            out.append(merged)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)


def _pairs(word):
    return Counter(zip(word, word[1:]))


def train(corpus, num_ranks):
    """Return a list of token byte strings; index = rank.

    Greedy BPE: repeatedly merge the most frequent adjacent pair (ties: the
    smallest pair by bytes), updating pair counts only for affected words.
    """
    order = gpt2_byte_order()
    tokens = [bytes([b]) for b in order]
    known = set(tokens)
    counts = Counter(tuple(bytes([b]) for b in p.encode("utf-8")) for p in pre_split(corpus))
    words = [list(x) for x in counts.items()]  # [symbols, frequency]
    pair_count, where = Counter(), {}
    for wi, (w, f) in enumerate(words):
        for pr, c in _pairs(w).items():
            pair_count[pr] += c * f
            where.setdefault(pr, set()).add(wi)
    heap = [(-c, pr) for pr, c in pair_count.items()]
    heapq.heapify(heap)
    while len(tokens) < num_ranks and heap:
        negc, best = heapq.heappop(heap)
        if pair_count.get(best, 0) != -negc or negc == 0:
            continue  # stale heap entry
        merged = best[0] + best[1]
        if merged not in known:
            known.add(merged)
            tokens.append(merged)
        changed = set()
        for wi in sorted(where.pop(best, ())):
            w, f = words[wi]
            old, nw = _pairs(w), _merge(w, best[0], best[1], merged)
            new = _pairs(nw)
            words[wi][0] = nw
            for pr in old.keys() | new.keys():
                d = (new.get(pr, 0) - old.get(pr, 0)) * f
                if d:
                    pair_count[pr] += d
                    changed.add(pr)
                if pr in new:
                    where.setdefault(pr, set()).add(wi)
                elif pr in where:
                    where[pr].discard(wi)
        for pr in changed:
            if pair_count[pr] > 0:
                heapq.heappush(heap, (-pair_count[pr], pr))
            else:
                del pair_count[pr]
    # Corpus exhausted: extend deterministically with concatenations of
    # existing tokens and printable ASCII bytes (still valid rank-BPE).
    base = 256
    while len(tokens) < num_ranks:
        for b in range(0x61, 0x7B):
            if len(tokens) >= num_ranks:
                break
            cand = tokens[base] + bytes([b])
            if cand not in known:
                known.add(cand)
                tokens.append(cand)
        base += 1
    return tokens


def tiktoken_text(tokens):
    return "".join(f"{base64.b64encode(t).decode('ascii')} {r}\n" for r, t in enumerate(tokens))
