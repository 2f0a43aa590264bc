#!/usr/bin/python3
"""Quantization quality of k3-mini on held-out text: the table users choose from.

    k3_mini_quality.py SNAPSHOT --docs eval/heldout.jsonl [--limit N] --work DIR [--json OUT] [--md]

For each container setting (k3-repack --bits 16/8/4 and --mla-bits/--head-bits
variants) x k3-run --activations f32/int8: perplexity (k3-run --perplexity,
one run per held-out document, which is how the model was trained: documents
of at most a few hundred tokens, each after [BOS]), and against the
--bits 16 / f32 logits of the same positions: argmax agreement and mean
KL(p16 || q) in nats per position.
"""

import argparse
import json
import math
import os
import subprocess
import sys

import numpy as np

SETTINGS = (  # (label, k3-repack flags)
    ("bits 16", ["--bits", "16"]),
    ("bits 8", ["--bits", "8"]),
    ("bits 8, head 16", ["--bits", "8", "--head-bits", "16"]),
    ("bits 4 (mla 8, head 8)", ["--bits", "4"]),
    ("bits 4, mla 4", ["--bits", "4", "--mla-bits", "4"]),
    ("bits 4, head 4", ["--bits", "4", "--head-bits", "4"]),
    ("bits 4, mla 4, head 4", ["--bits", "4", "--mla-bits", "4", "--head-bits", "4"]),
)
ACTS = ("f32", "int8")
CI_DOCS, CI_SETTINGS = 4, [SETTINGS[i] for i in (0, 1, 3, 6)]  # what the CI test re-measures


def log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(1, keepdims=True))


def run_doc(k3_run, container, path, act, logits, extra=()):
    r = subprocess.run([k3_run, container, "--perplexity", path, "--activations", act, "--logits-out", logits,
                        "--json", "--threads", "1", *extra], capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def write_docs(docs, work):
    """The held-out documents as text files under WORK; returns their paths."""
    os.makedirs(work, exist_ok=True)
    paths = []
    for i, d in enumerate(docs):
        p = os.path.join(work, f"doc{i:03d}.txt")
        with open(p, "w", encoding="utf-8") as f:
            f.write(d)
        paths.append(p)
    return paths


def vocab_size(snapshot):
    with open(os.path.join(snapshot, "config.json")) as f:
        return json.load(f)["text_config"]["vocab_size"]


def repacked(snapshot, work, bin_dir, flags):
    """SNAPSHOT repacked with FLAGS under WORK (once); returns the container."""
    cont = os.path.join(work, "c_" + "_".join(flags).replace("--", ""))
    if not os.path.exists(os.path.join(cont, "k3-manifest.json")):
        subprocess.run([os.path.join(bin_dir, "k3-repack"), snapshot, cont] + flags, check=True, capture_output=True)
    return cont


def run_docs(k3_run, cont, paths, act, vocab, work, extra=()):
    """Every document through k3-run --perplexity: (summed NLL, predicted
    positions, per-document log-probabilities [predicted x vocab], the runs' JSON)."""
    nll, n, lps, runs = 0.0, 0, [], []
    for p in paths:
        lg_path = os.path.join(work, "logits.f32")
        r = run_doc(k3_run, cont, p, act, lg_path, extra)
        npos = r["predicted"]
        nll += math.log(r["perplexity"]) * npos
        n += npos
        lg = np.fromfile(lg_path, np.float32).reshape(-1, vocab)
        lps.append(log_softmax(lg[:npos]))  # row t predicts token t+1; the last row has no target
        runs.append(r)
    return nll, n, lps, runs


def agreement(lps, base):
    """(argmax agreements, summed KL(base || lps) in nats) over all positions."""
    agree, kl = 0, 0.0
    for a, b in zip(lps, base):
        agree += int((a.argmax(1) == b.argmax(1)).sum())
        kl += float((np.exp(b) * (b - a)).sum())
    return agree, kl


def measure(snapshot, docs, work, bin_dir, settings=SETTINGS, acts=ACTS, log=print):
    k3_run = os.path.join(bin_dir, "k3-run")
    paths = write_docs(docs, work)
    vocab = vocab_size(snapshot)
    base, rows = None, []
    for label, flags in settings:
        cont = repacked(snapshot, work, bin_dir, flags)
        size = sum(os.path.getsize(os.path.join(cont, f)) for f in os.listdir(cont) if f.endswith(".safetensors"))
        for act in acts:
            nll, n, lps, _ = run_docs(k3_run, cont, paths, act, vocab, work)
            if base is None:
                base = lps
            agree, kl = agreement(lps, base)
            row = {"setting": label, "flags": flags, "activations": act, "ppl": math.exp(nll / n),
                   "argmax_agree": agree / n, "mean_kl": kl / n, "positions": n, "container_bytes": size}
            log(json.dumps(row))
            rows.append(row)
    return rows


def markdown(rows):
    out = ["| container (k3-repack) | activations | weights (bytes) | perplexity | argmax = bits 16 | mean KL vs bits 16 (nats) |",
           "|---|---|---:|---:|---:|---:|"]
    for r in rows:
        out.append(f"| `{' '.join(r['flags'])}` ({r['setting']}) | {r['activations']} | {r['container_bytes']:,} | "
                   f"{r['ppl']:.3f} | {100 * r['argmax_agree']:.2f} % | {r['mean_kl']:.5f} |")
    return "\n".join(out)


def table_args(description, ci_help):
    """The command line every held-out table script takes (SNAPSHOT --docs --work ...)."""
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("snapshot")
    ap.add_argument("--docs", required=True, help="JSON lines, one held-out document per line")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--work", required=True)
    ap.add_argument("--bin", default=os.path.join(here, "..", "build", "release", "bin"))
    ap.add_argument("--json")
    ap.add_argument("--md", action="store_true")
    ap.add_argument("--ci", action="store_true", help=ci_help)
    return ap


def read_docs(a):
    """The held-out documents --docs names, cut to --limit (--ci: the first CI_DOCS)."""
    with open(a.docs, encoding="utf-8") as f:
        docs = [json.loads(ln) for ln in f if ln.strip()]
    limit = CI_DOCS if a.ci else a.limit
    return docs[:limit] if limit else docs


def main(argv=None):
    a = table_args(__doc__.splitlines()[0], "only the CI subset (CI_DOCS documents, CI_SETTINGS)").parse_args(argv)
    docs = read_docs(a)
    rows = measure(a.snapshot, docs, a.work, a.bin, settings=CI_SETTINGS if a.ci else SETTINGS)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"documents": len(docs), "rows": rows}, f, indent=1)
    if a.md:
        print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
