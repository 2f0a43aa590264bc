#!/usr/bin/python3
"""Expert top-p on k3-mini's held-out text: what `k3-run --expert-top-p P` costs and saves.

    k3_mini_expert_top_p.py SNAPSHOT --docs eval/heldout.jsonl [--limit N] --work DIR [--json OUT] [--md] [--ci]

One container (k3-repack --bits 8, f32 activations), one k3-run --perplexity
run per held-out document and P (as k3_mini_quality.py does, whose helpers
this uses), for P in PS: perplexity; against P = 1 on the same positions,
argmax agreement and mean KL(p1 || pP) in nats per position; the experts
kept per token and MoE layer (k3-run --json experts_kept_mean) and the
routed-expert bytes one token's kept experts hold (expert_bytes_per_token:
what a decode step reads), also relative to P = 1.
"""

import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import k3_mini_quality as q  # noqa: E402

PS = (1.0, 0.9, 0.8, 0.7, 0.5)
FLAGS = ["--bits", "8"]
CI_DOCS = q.CI_DOCS  # what the CI test re-measures: these documents, every P


def measure(snapshot, docs, work, bin_dir, ps=PS, log=print):
    if ps[0] != 1.0:
        raise ValueError("the first P must be 1: the others are compared with it")
    k3_run = os.path.join(bin_dir, "k3-run")
    paths = q.write_docs(docs, work)
    vocab = q.vocab_size(snapshot)
    cont = q.repacked(snapshot, work, bin_dir, FLAGS)
    base, rows = None, []
    for p in ps:
        nll, n, lps, runs = q.run_docs(k3_run, cont, paths, "f32", vocab, work, ["--expert-top-p", repr(p)])
        if base is None:
            base = lps
        agree, kl = q.agreement(lps, base)
        # Each run's means are over its positions (every position's MoE layers run: all logits are asked for).
        weight = sum(r["positions"] for r in runs)
        kept = sum(r["experts_kept_mean"] * r["positions"] for r in runs) / weight
        per_token = sum(r["expert_bytes_per_token"] * r["positions"] for r in runs) / weight
        row = {"expert_top_p": p, "ppl": math.exp(nll / n), "argmax_agree": agree / n, "mean_kl": kl / n,
               "positions": n, "experts_kept_mean": kept, "expert_bytes_per_token": per_token,
               "expert_bytes_rel": per_token / rows[0]["expert_bytes_per_token"] if rows else 1.0}
        log(json.dumps(row))
        rows.append(row)
    return rows


def markdown(rows, top_k):
    out = ["| `--expert-top-p` | perplexity | argmax = P 1 | mean KL vs P 1 (nats) | experts kept "
           f"(of {top_k}) | expert bytes per token | relative |",
           "|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        out.append(f"| {r['expert_top_p']:g} | {r['ppl']:.3f} | {100 * r['argmax_agree']:.2f} % | {r['mean_kl']:.6f} | "
                   f"{r['experts_kept_mean']:.2f} | {r['expert_bytes_per_token']:,.0f} | "
                   f"{r['expert_bytes_rel']:.2f}x |")
    return "\n".join(out)


def main(argv=None):
    a = q.table_args(__doc__.splitlines()[0], "only the CI subset (the first CI_DOCS documents)").parse_args(argv)
    docs = q.read_docs(a)
    rows = measure(a.snapshot, docs, a.work, a.bin)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"documents": len(docs), "container": FLAGS, "activations": "f32", "rows": rows}, f, indent=1)
    if a.md:
        with open(os.path.join(a.snapshot, "config.json")) as f:
            top_k = json.load(f)["text_config"]["num_experts_per_token"]
        print(markdown(rows, top_k))
    return 0


if __name__ == "__main__":
    sys.exit(main())
