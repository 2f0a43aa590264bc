#!/usr/bin/python3
"""Independent numpy reference for k3kit's logit processing and sampler
(libs/k3/model/logit_processors, token_logprobs, sampler), written from the
definitions the docs cite, not from the C++ code:

  logit_bias          l[id] += b                                  (OpenAI)
  repetition_penalty  ids in prompt or output: l > 0 -> l / r, else l * r
                                                                  (vLLM, llama.cpp)
  frequency_penalty   l[id] -= f * count(id in output)            (OpenAI)
  presence_penalty    l[id] -= p * (count(id in output) > 0)      (OpenAI)
  (in that order, as vLLM applies them; float32 arithmetic)
  logprobs            log_softmax(l) of the processed logits, before temperature
  candidates          p ~ exp((l - max) / T) over the top_k best (descending,
                      ties by lower id), the shortest prefix with >= top_p of
                      the mass, then those with p >= min_p * p_max (vLLM)

Usage: sampler_ref.py CASES.json > RESULTS.txt
CASES.json: a list of {"logits": [...], "prompt": [ids], "output": [ids],
"presence", "frequency", "repetition", "bias": [[id, b], ...], "temperature",
"top_k", "top_p", "min_p"}. For each case four lines: the processed logits,
their log-softmax, the candidate ids, the candidates' probabilities.
"""
import json
import sys

import numpy as np

F = np.float32


def process(logits, prompt, output, presence=0.0, frequency=0.0, repetition=1.0, bias=()):
    """Bias, then repetition, frequency and presence penalties (float32)."""
    l = np.array(logits, dtype=F)
    for i, b in bias:
        l[i] = F(l[i] + F(b))
    counts = np.zeros(len(l), dtype=np.int64)
    for i in output:
        counts[i] += 1
    seen = np.zeros(len(l), dtype=bool)
    seen[list(prompt)] = True
    seen[list(output)] = True
    r = F(repetition)
    if r != F(1):
        pos = l > 0
        l = np.where(seen & pos, l / r, np.where(seen & ~pos, l * r, l)).astype(F)
    l = (l - F(frequency) * counts.astype(F)).astype(F)
    l = (l - np.where(counts > 0, F(presence), F(0))).astype(F)
    return l


def log_softmax(l):
    x = np.asarray(l, dtype=np.float64)
    m = np.max(x)
    return x - m - np.log(np.sum(np.exp(x - m)))


def order(l):
    """Ids by descending logit, ties by lower id."""
    return sorted(range(len(l)), key=lambda i: (-float(l[i]), i))


def top_n(l, n):
    lp = log_softmax(l)
    return [(i, float(lp[i])) for i in order(l)[:n]]


def candidates(l, temperature, top_k=0, top_p=1.0, min_p=0.0):
    """The ids a draw chooses among and their normalised probabilities."""
    if temperature <= 0:
        return [order(l)[0]], [1.0]
    ids = order(l)
    if 0 < top_k < len(ids):
        ids = ids[:top_k]
    x = np.array([float(l[i]) for i in ids])
    w = np.exp((x - x[0]) / temperature)
    if top_p < 1.0:
        cum = np.cumsum(w)
        cut = int(np.searchsorted(cum, top_p * cum[-1])) + 1  # shortest prefix holding >= top_p
        ids, w = ids[:cut], w[:cut]
    if min_p > 0.0:
        keep = w >= min_p  # w is p / p_max
        keep[0] = True
        ids = [i for i, k in zip(ids, keep) if k]
        w = w[keep]
    return ids, list(w / w.sum())


def main():
    cases = json.load(open(sys.argv[1]))
    out = []
    for c in cases:
        l = process(c["logits"], c.get("prompt", []), c.get("output", []), c.get("presence", 0.0),
                    c.get("frequency", 0.0), c.get("repetition", 1.0), c.get("bias", []))
        ids, probs = candidates(l, c.get("temperature", 0.0), c.get("top_k", 0), c.get("top_p", 1.0),
                                c.get("min_p", 0.0))
        out.append(" ".join("%.9g" % v for v in l))
        out.append(" ".join("%.12g" % v for v in log_softmax(l)))
        out.append(" ".join(str(i) for i in ids))
        out.append(" ".join("%.12g" % p for p in probs))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
