#!/usr/bin/python3
"""Repeat rows: the copying task k3-mini needs for tool arguments.

A row is a run of episodes `S S'` where S is a random span and S' the same
span again. The loss is taken on S' only (S is unpredictable by design), so
the only way to lower it is to look back and copy: the induction pattern
(find the earlier occurrence of the current token, emit what followed it)
that a tool call needs to write a city it has never seen from the user's
message. Spans are uniform random BPE ranks (pure copying, nothing to
memorise) or random pronounceable names, as k3_mini_copy_data writes them.
A third kind pairs each name as running text writes it (" Name", after a
space) with the bare form a tool argument holds ("Name", after <|sep|>):
the two tokenise differently at the first piece, so copying a city into an
argument needs that mapping as well as the copy.
"""

import numpy as np

IGNORE = -100


def episode(rng, tok_ranks, names):
    """One span as ids: random ranks, or 2-6 random names joined by spaces."""
    if names is not None and rng.random() < 0.5:
        k = int(rng.integers(2, 7))
        return np.concatenate([names[int(rng.integers(len(names)))] for _ in range(k)])
    return rng.integers(0, tok_ranks, size=int(rng.integers(6, 33)))


def name_pairs(rng, spaced, bare):
    """(ids, scored): 2-5 names, each spaced then bare; only the bare copies are scored."""
    ids, keep = [], []
    for _ in range(int(rng.integers(2, 6))):
        i = int(rng.integers(len(spaced)))
        ids += spaced[i].tolist() + bare[i].tolist()
        keep += [False] * len(spaced[i]) + [True] * len(bare[i])
    return ids, keep


def row(rng, T, tok_ranks, names=None, bare=None):
    """(ids [T+1], targets [T]): targets are ids[1:] on the repeated halves, IGNORE elsewhere."""
    ids, keep = [], []
    while len(ids) < T + 1:
        if bare is not None and rng.random() < 0.4:
            i, k = name_pairs(rng, names, bare)
            ids += i
            keep += k
            continue
        s = episode(rng, tok_ranks, names).tolist()
        ids += s + s
        keep += [False] * len(s) + [True] * len(s)
    ids, keep = np.array(ids[:T + 1], dtype=np.int64), np.array(keep[:T + 1])
    tgt = np.where(keep[1:], ids[1:], IGNORE)
    # The first token of S' follows the last of S: not copyable, not scored.
    starts = np.nonzero(keep[1:] & ~keep[:-1])[0]
    tgt[starts] = IGNORE
    return ids, tgt


def name_pieces(tok, names, space=True):
    """Each name tokenised after a space (running text) or bare (a tool argument's value)."""
    return [np.array(tok.encode_ordinary((" " if space else "") + n), dtype=np.int64) for n in names]
