"""Continuous batching figures for scripts/bench_serve --batching (issue 31).

Against one `k3-run --serve --parallel 8`, streamed /v1/completions clients in
threads (each only timestamps its lines while streaming, parses afterwards):
  1. aggregate decode tok/s with 1, 4 and 8 concurrent clients, sent at
     once: the tokens all clients receive while every one of them decodes
     (from the last client's first token to the first client's last) over
     that time; the ratios 4:1 (goal >= 2.0) and 8:1 (>= 2.5), each taken
     inside one round of 1, 4 and 8 clients, median over rounds. Beside it
     the whole round: the sum over clients of (completion_tokens - 1) / (the
     last text chunk of any - the first of any), which also counts the time
     the later clients' prompts are fed and the early ones have finished;
  2. time to first token of a short request sent while 3 streams decode
     (goal <= 2 s);
  3. the inter-token time of 3 running streams while a long prompt (2,000
     ids) is ingested, over their inter-token time in the seconds before it
     arrived (goal <= 2x), mean and 90th percentile;
  4. outputs: 8 requests of different prompt lengths sent at once each equal
     their solo run (sent one at a time before), token for token and
     log-probability for log-probability (they come from the logits, so
     equal values mean equal logits), greedy and seeded sampling.
"""
import json
import statistics
import threading
import time
import urllib.request


def _stream(url, body, out):
    req = urllib.request.Request(url + "/v1/completions",
                                 data=json.dumps({**body, "stream": True,
                                                  "stream_options": {"include_usage": True}}).encode(),
                                 headers={"content-type": "application/json"})
    out["sent"] = time.perf_counter()
    lines = out["lines"]
    try:
        with urllib.request.urlopen(req) as r:
            for raw in r:
                lines.append((time.perf_counter(), raw))
    except Exception:  # cut by the server's stop (section 3's endless streams)
        pass
    texts, counts, usage = [], [], None
    for t, raw in lines:
        line = raw.decode(errors="replace").strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        try:
            c = json.loads(line[6:])
        except ValueError:
            continue
        if c.get("usage"):
            usage = c["usage"]
        choice = (c.get("choices") or [{}])[0]
        if choice.get("text"):
            texts.append(t)
            counts.append(len((choice.get("logprobs") or {}).get("tokens") or [None]))
    out["times"], out["counts"], out["usage"] = texts, counts, usage


def start(url, body):
    out = {"lines": []}
    th = threading.Thread(target=_stream, args=(url, body, out))
    th.start()
    return th, out


def wait_decoding(running, lines=6):
    while not all(len(o["lines"]) >= lines for _, o in running):
        time.sleep(0.02)


def aggregate(url, prompts, max_tokens):
    """(steady, whole): tokens/s while every client decodes (from the last
    client's first token to the first client's last), and over the whole
    round (the first token of any to the last of any, which also holds the
    other clients' prompts being fed and the clients that already
    finished). Tokens per text chunk from its logprobs (the server may
    coalesce a step's deltas)."""
    runs = [start(url, {"prompt": p, "max_tokens": max_tokens, "temperature": 0, "logprobs": 0}) for p in prompts]
    for th, _ in runs:
        th.join()
    outs = [o for _, o in runs]
    first = min(o["times"][0] for o in outs)
    last = max(o["times"][-1] for o in outs)
    whole = sum(o["usage"]["completion_tokens"] - 1 for o in outs) / (last - first)
    t0 = max(o["times"][0] for o in outs)
    t1 = min(o["times"][-1] for o in outs)
    inside = sum(n for o in outs for t, n in zip(o["times"], o["counts"]) if t0 < t <= t1)
    if t1 - t0 <= 0 or inside < 4 * len(outs):
        raise SystemExit(f"bench_serve_batching: {len(outs)} clients decoded together for only {inside} tokens; "
                         "raise --decode-tokens")
    return inside / (t1 - t0), whole


def _complete(url, body):
    req = urllib.request.Request(url + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req) as r:
        c = json.loads(r.read())["choices"][0]
    return {"tokens": c["logprobs"]["tokens"], "logprobs": c["logprobs"]["token_logprobs"],
            "finish": c["finish_reason"]}


def solo_equality(url, ids, max_tokens=12):
    """{kind: requests of 8 equal to their solo run} for greedy and seeded."""
    res = {}
    for kind, extra in (("greedy", {"temperature": 0}), ("seeded", {"temperature": 0.9, "top_p": 0.95})):
        bodies = [{"prompt": ids(1200 + i, 4 + 9 * i), "max_tokens": max_tokens, "logprobs": 1, **extra,
                   **({"seed": 300 + i} if kind == "seeded" else {})} for i in range(8)]
        solo = [_complete(url, b) for b in bodies]
        together = [None] * 8

        def run(i):
            together[i] = _complete(url, bodies[i])
        threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        res[f"solo_equal_{kind}"] = sum(a == b and len(a["tokens"]) == max_tokens for a, b in zip(solo, together))
        res[f"solo_distinct_{kind}"] = len({tuple(s["tokens"]) for s in solo})
    return res


def gaps(times, t0, t1):
    return [b - a for a, b in zip(times, times[1:]) if a >= t0 and b <= t1]


def p90(v):
    return sorted(v)[int(0.9 * (len(v) - 1))]


def measure(url, vocab, stop_server, repeat=1, decode_tokens=48, long_prompt=2000):
    """Runs the three sections; stop_server() is called at the end (it cuts
    section 3's endless streams)."""
    def ids(seed, n):
        return [(seed * 7919 + i * 104729 + 11) % min(vocab, 4000) for i in range(n)]

    res = {}
    start(url, {"prompt": ids(99, 8), "max_tokens": 4, "temperature": 0})[0].join()  # warm-up
    # Rounds of 1, 4 and 8 clients, each ratio taken inside its round: the
    # host's memory bandwidth drifts by tens of percent within minutes, and a
    # ratio of figures from different minutes would measure the drift.
    # The goal figures are the steady ones (every client decoding); the
    # whole-round ones, ramps included, are reported beside them.
    both = [{k: aggregate(url, [ids(100 * r + i, 16) for i in range(k)], decode_tokens) for k in (1, 4, 8)}
            for r in range(repeat)]
    for name, pick in (("", 0), ("whole_", 1)):
        rounds = [{k: x[k][pick] for k in x} for x in both]
        for k in (1, 4, 8):
            res[f"{name}aggregate_tok_s_{k}"] = statistics.median(x[k] for x in rounds)
        res[f"{name}ratio_4"] = statistics.median(x[4] / x[1] for x in rounds)
        res[f"{name}ratio_8"] = statistics.median(x[8] / x[1] for x in rounds)
        res[f"{name}ratios_4"] = [round(x[4] / x[1], 3) for x in rounds]
        res[f"{name}ratios_8"] = [round(x[8] / x[1], 3) for x in rounds]

    ttfts = []
    for r in range(repeat):
        running = [start(url, {"prompt": ids(500 + 10 * r + i, 16), "max_tokens": 2 * decode_tokens,
                               "temperature": 0}) for i in range(3)]
        wait_decoding(running)
        th, o = start(url, {"prompt": ids(700 + r, 24), "max_tokens": 4, "temperature": 0})
        th.join()
        ttfts.append(o["times"][0] - o["sent"])
        for t, _ in running:
            t.join()
    res["ttft_short_beside_3_s"] = statistics.median(ttfts)

    res.update(solo_equality(url, ids))

    running = [start(url, {"prompt": ids(900 + i, 16), "max_tokens": 100000, "temperature": 0}) for i in range(3)]
    wait_decoding(running)
    time.sleep(6.0)  # they decode without the long prompt for a while
    th, o = start(url, {"prompt": ids(950, long_prompt), "max_tokens": 2, "temperature": 0})
    th.join()
    ingest0, ingest1 = o["sent"], o["times"][0]
    time.sleep(0.5)
    stop_server()
    for t, _ in running:
        t.join()
    before, during = [], []
    for _, o in running:
        before += gaps(o["times"], ingest0 - 5.0, ingest0)
        during += gaps(o["times"], ingest0, ingest1)
    res["long_prompt_ingest_s"] = ingest1 - ingest0
    res["itl_before_mean_s"], res["itl_ingest_mean_s"] = statistics.mean(before), statistics.mean(during)
    res["itl_before_p90_s"], res["itl_ingest_p90_s"] = p90(before), p90(during)
    res["itl_ratio_mean"] = res["itl_ingest_mean_s"] / res["itl_before_mean_s"]
    res["itl_ratio_p90"] = res["itl_ingest_p90_s"] / res["itl_before_p90_s"]
    return res
