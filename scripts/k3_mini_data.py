#!/usr/bin/python3
"""Build k3-mini's tokenizer and token data from installed Debian packages.

    k3_mini_data.py --out DIR [--seed 19] [--text-mb 1.5] [--chats 12000] [--ranks 2048]

DIR gets tiktoken.model + tokenizer_config.json (the snapshot's tokenizer),
train.npz / held.npz (token docs: `ids` concatenated, `offs` boundaries,
`kind` 0 = text, 1 = chat), held_text.txt / held_docs.jsonl (held-out
plain text), eval_heldout.jsonl (the evaluation subset committed with the model), held_cities.json / train_cities.json / held_words.json and data.json (counts and
provenance). Text documents start with [BOS] (k3-run prepends it to raw
prompts and perplexity text); chat conversations do not (spec 7.6).
"""

import argparse
import json
import os
import random
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import k3_mini_chat as chat  # noqa: E402
import k3_mini_corpus as corpus  # noqa: E402
import k3_tok_train  # noqa: E402
import xtml_ref  # noqa: E402
from k3_synth_config import tokenizer_config  # noqa: E402


def held_words(held_entries, seed, n=50):
    """The define evaluation's words: n held-out GCIDE entries (never in
    training), letters only, as [word, part of speech]."""
    pool = sorted((w, pos) for w, pos, *_ in held_entries if w.isalpha())
    return [list(e) for e in random.Random(seed + 2).sample(pool, min(n, len(pool)))]


def cap(docs, limit, rng):
    docs = list(docs)
    rng.shuffle(docs)
    out, n = [], 0
    for d in docs:
        if n >= limit:
            break
        out.append(d)
        n += len(d.text)
    return out


def pack(seqs, kinds):
    offs = np.cumsum([0] + [len(s) for s in seqs]).astype(np.int64)
    ids = np.concatenate([np.asarray(s, np.int32) for s in seqs]) if seqs else np.zeros(0, np.int32)
    return dict(ids=ids, offs=offs, kind=np.asarray(kinds, np.int8))


def chat_text_sample(convs):
    """The text segments of some conversations, for the BPE trainer."""
    return "\n".join(v for req in convs for k, v in xtml_ref.segments(req) if k == "text")


def eval_docs(held_jsonl, out_jsonl, per_source=8, min_chars=150, max_chars=1200):
    """The committed held-out evaluation set: per_source documents of each
    source (at least min_chars, cut at a word before max_chars), interleaved."""
    by = {}
    with open(held_jsonl, encoding="utf-8") as f:
        for ln in f:
            d = json.loads(ln)
            if len(d["text"]) >= min_chars and len(by.setdefault(d["source"], [])) < per_source:
                t = d["text"]
                by[d["source"]].append(t if len(t) <= max_chars else t[:max_chars].rsplit(" ", 1)[0])
    with open(out_jsonl, "w", encoding="utf-8") as f:
        for i in range(per_source):
            for src in sorted(by):
                if i < len(by[src]):
                    f.write(json.dumps(by[src][i]) + "\n")


def write_info(out_dir, info):
    """DIR/data.json (counts and provenance), echoed to stdout."""
    with open(os.path.join(out_dir, "data.json"), "w") as f:
        json.dump(info, f, indent=1)
    print(json.dumps(info))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=19)
    ap.add_argument("--text-mb", type=float, default=1.5, help="training text per source (MB)")
    ap.add_argument("--chats", type=int, default=12000)
    ap.add_argument("--ranks", type=int, default=2048)
    ap.add_argument("--bpe-sample-mb", type=float, default=0.6)
    ap.add_argument("--no-man", action="store_true", help="skip the manual pages (slow to render)")
    a = ap.parse_args(argv)
    t0 = time.time()
    rng = random.Random(a.seed)
    os.makedirs(a.out, exist_ok=True)

    entries = corpus.gcide_entries(int(a.text_mb * 2.2e6))
    sources = {"fortunes": corpus.fortunes(), "gcide": corpus.gcide_docs(entries),
               "kjv": corpus.bible(), "man": [] if a.no_man else corpus.man_pages()}
    train_docs, held_docs, stats = [], [], {}
    for name, docs in sources.items():
        tr, he = corpus.split(docs)
        tr = cap(tr, int(a.text_mb * 1e6), rng)
        he = cap(he, 60000, rng)
        train_docs += tr
        held_docs += he
        stats[name] = {"train_docs": len(tr), "train_chars": sum(len(d.text) for d in tr),
                       "held_docs": len(he), "held_chars": sum(len(d.text) for d in he)}
    rng.shuffle(train_docs)
    held_entries = [e for e in entries if corpus.held_out(f"gcide/{e[0]}")]
    train_entries = [e for e in entries if not corpus.held_out(f"gcide/{e[0]}")]
    train_cities, held_cities = chat.split_cities(corpus.cities())
    convs = chat.conversations(rng, a.chats, train_entries, train_cities)
    held_convs = chat.conversations(random.Random(a.seed + 1), 200, held_entries, held_cities)

    # Tokenizer: the project's BPE trainer on a sample of text + chat pieces.
    sample = "\n".join(d.text for d in train_docs[:4000])[: int(a.bpe_sample_mb * 1e6)]
    sample += "\n" + chat_text_sample(convs[:1500])
    tokens = k3_tok_train.train(sample, a.ranks)
    with open(os.path.join(a.out, "tiktoken.model"), "w", encoding="ascii") as f:
        f.write(k3_tok_train.tiktoken_text(tokens))
    with open(os.path.join(a.out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_config({"num_base": a.ranks}), f, indent=2)
        f.write("\n")
    tok = xtml_ref.Tokenizer.from_files(os.path.join(a.out, "tiktoken.model"),
                                        os.path.join(a.out, "tokenizer_config.json"))
    bos = tok.special("[BOS]")
    t1 = time.time()

    def encode_all(docs, cv):
        seqs = [[bos] + tok.encode_ordinary(d.text) for d in docs] + [xtml_ref.render(tok, r) for r in cv]
        return seqs, [0] * len(docs) + [1] * len(cv)

    tr_seqs, tr_kinds = encode_all(train_docs, convs)
    he_seqs, he_kinds = encode_all(held_docs, held_convs)
    np.savez(os.path.join(a.out, "train.npz"), **pack(tr_seqs, tr_kinds))
    np.savez(os.path.join(a.out, "held.npz"), **pack(he_seqs, he_kinds))
    with open(os.path.join(a.out, "held_text.txt"), "w", encoding="utf-8") as f:
        f.write("\n\n".join(d.text for d in held_docs))
    with open(os.path.join(a.out, "held_docs.jsonl"), "w", encoding="utf-8") as f:
        f.writelines(json.dumps({"source": d.source, "key": d.key, "text": d.text}) + "\n" for d in held_docs)
    eval_docs(os.path.join(a.out, "held_docs.jsonl"), os.path.join(a.out, "eval_heldout.jsonl"))
    for name, val in (("held_cities", held_cities), ("train_cities", train_cities),
                      ("held_words", held_words(held_entries, a.seed))):
        with open(os.path.join(a.out, name + ".json"), "w") as f:
            json.dump(val, f, indent=1)
    n_text = sum(len(s) for s, k in zip(tr_seqs, tr_kinds) if k == 0)
    n_chat = sum(len(s) for s, k in zip(tr_seqs, tr_kinds) if k == 1)
    info = {"seed": a.seed, "ranks": a.ranks, "sources": stats, "chats": a.chats,
            "train_tokens_text": n_text, "train_tokens_chat": n_chat,
            "held_tokens": int(sum(len(s) for s in he_seqs)),
            "train_cities": len(train_cities), "held_cities": len(held_cities),
            "bpe_seconds": round(t1 - t0, 1), "seconds": round(time.time() - t0, 1)}
    write_info(a.out, info)
    return 0


if __name__ == "__main__":
    sys.exit(main())
