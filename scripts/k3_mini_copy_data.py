#!/usr/bin/python3
"""Fine-tuning data that forces k3-mini to copy arguments from the prompt.

    k3_mini_copy_data.py --base /tmp/k3mini_data --out DIR [--chats 8000] [--random-frac 0.75]

The base model writes one fixed city whatever is asked: with 405 training
cities, a memorised favourite is cheaper than copying. Here most city and word
values are random pronounceable names (random syllables), so no value repeats
often enough to be memorised and copying from the user's message is the only
way to lower the loss. The rest are the real training cities and words; the 50
held-out cities stay held out (a random name equal to one is redrawn).
DIR gets the base tokenizer, the base held.npz, and a train.npz holding the
base's text documents plus the new chat conversations (same families and
templates as scripts/k3_mini_chat.py, rendered by scripts/xtml_ref.py).
"""

import argparse
import json
import os
import random
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import k3_mini_chat as chat  # noqa: E402
import xtml_ref  # noqa: E402
from k3_mini_data import pack, write_info  # noqa: E402

ONSETS = ("b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z",
          "br", "ch", "dr", "gr", "kh", "pl", "sh", "st", "tr", "")
VOWELS = ("a", "e", "i", "o", "u", "ai", "ou", "ia", "y")
CODAS = ("", "", "", "n", "r", "l", "s", "k", "m", "t", "sh")


def random_name(rng, held):
    """A pronounceable non-word of 1-4 syllables (sometimes two words), never a held-out city."""
    while True:
        words = []
        for _ in range(2 if rng.random() < 0.12 else 1):
            n = rng.choice((1, 2, 2, 3, 3, 4))
            words.append("".join(rng.choice(ONSETS) + rng.choice(VOWELS) + rng.choice(CODAS)
                                 for _ in range(n)).capitalize())
        name = " ".join(words)
        if name not in held and len(name) >= 3:
            return name


def weather(rng, cities, held, random_frac):
    """A get_weather conversation (one or two exchanges), the city mostly a random name."""
    turns = []
    for _ in range(1 if rng.random() < 0.75 else 2):
        turns += chat.weather_turns(rng, random_name(rng, held) if rng.random() < random_frac else rng.choice(cities))
    return chat.request(turns, chat.TOOLS, rng.choice(chat.EFFORTS))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="k3_mini_data.py output (tokenizer, text docs, held-out)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--chats", type=int, default=8000)
    ap.add_argument("--random-frac", type=float, default=0.75)
    ap.add_argument("--base-chats", type=int, default=4000, help="base conversations kept in the pool")
    ap.add_argument("--seed", type=int, default=23)
    a = ap.parse_args(argv)
    rng = random.Random(a.seed)
    os.makedirs(a.out, exist_ok=True)
    for f in ("tiktoken.model", "tokenizer_config.json", "held.npz", "held_cities.json", "train_cities.json"):
        shutil.copy(os.path.join(a.base, f), os.path.join(a.out, f))
    tok = xtml_ref.Tokenizer.from_files(os.path.join(a.out, "tiktoken.model"),
                                        os.path.join(a.out, "tokenizer_config.json"))
    with open(os.path.join(a.base, "held_cities.json")) as f:
        held = set(json.load(f))
    with open(os.path.join(a.base, "train_cities.json")) as f:
        cities = json.load(f)
    base = np.load(os.path.join(a.base, "train.npz"))
    ids, offs, kind = base["ids"], base["offs"], base["kind"]  # each npz access re-reads the array
    docs = [ids[offs[i]:offs[i + 1]] for i in range(len(offs) - 1)]
    text = [d for d, k in zip(docs, kind) if k == 0]
    # The base conversations (define/lookup/weather over real words and cities)
    # stay in the pool; the new ones are weather requests, mostly random names.
    old = [d for d, k in zip(docs, kind) if k == 1][:a.base_chats]
    convs = [xtml_ref.render(tok, weather(rng, cities, held, a.random_frac)) for _ in range(a.chats)]
    chats = old + convs
    np.savez(os.path.join(a.out, "train.npz"), **pack(text + chats, [0] * len(text) + [1] * len(chats)))
    info = {"base": a.base, "chats": a.chats, "random_frac": a.random_frac, "seed": a.seed,
            "base_chats": len(old), "text_docs": len(text), "chat_tokens": int(sum(len(c) for c in convs))}
    write_info(a.out, info)
    return 0


if __name__ == "__main__":
    sys.exit(main())
