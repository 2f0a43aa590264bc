#!/usr/bin/python3
"""Train k3-mini (Kimi K3's architecture, tiny widths) on the data of k3_mini_data.py.

    train_k3_mini.py --data DIR --out CKPT [--steps N] [--batch B] [--seq T]
                     [--lr X] [--qat-frac F] [--seed S] [--threads 2]
                     [--repeat-rows R] [--prev-token-keys] [--probe-every K]
    train_k3_mini.py --smoke          # ~1 minute on a tiny sample; asserts the loss falls

The model is scripts/k3_mini_model.py. Batches start at a document start
(text or chat, half each) and are filled with further documents of the same
kind. AdamW, warm-up then cosine decay; the router's correction bias moves by
load balancing (aux-loss-free, sign of the load error). For the last
--qat-frac of the steps the routed experts run MXFP4 fake-quantized
(straight-through), so the exported MXFP4 bytes are what was trained.

--repeat-rows R replaces the last R rows of every batch by repeat rows
(k3_mini_repeat: a random span, then the same span, scored on the copy), so
the copying circuit a tool argument needs forms from the first steps rather
than never. --bare-names adds episodes that pair a spaced name with its bare form (the
first piece of a tool argument). --prev-token-keys starts half of each KDA layer's key channels on
the previous token's conv tap (an induction-friendly start; the conv is still
trained). --probe-every K logs the copy loss on fixed repeat rows and the
teacher-forced loss of held-out cities written as a get_weather argument.

CKPT gets model.pt (state dict, f32), train_log.csv (step, loss, lr, seconds)
and train.json (settings, wall time, held-out loss). Deterministic for one
seed and thread count (as far as torch is).
"""

import argparse
import json
import math
import os
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import k3_mini_config  # noqa: E402
import k3_mini_repeat  # noqa: E402
from k3_mini_model import K3Mini  # noqa: E402


class Docs:
    def __init__(self, path):
        z = np.load(path)
        self.ids, self.offs, self.kind = z["ids"], z["offs"], z["kind"]
        self.by_kind = [np.nonzero(self.kind == k)[0] for k in (0, 1)]

    def doc(self, i):
        return self.ids[self.offs[i]:self.offs[i + 1]]

    def sample(self, rng, T, kind):
        pool = self.by_kind[kind] if len(self.by_kind[kind]) else self.by_kind[1 - kind]
        out = []
        n = 0
        while n < T + 1:
            d = self.doc(int(pool[rng.integers(len(pool))]))
            out.append(d)
            n += len(d)
        return np.concatenate(out)[:T + 1]

    def batch(self, rng, B, T, chat_rows=None):
        """B rows: odd rows start at a chat document, even rows at text; or the first chat_rows at chat."""
        kinds = [b % 2 if chat_rows is None else int(b < chat_rows) for b in range(B)]
        return torch.from_numpy(np.stack([self.sample(rng, T, k) for k in kinds]).astype(np.int64))


class Batches:
    """Training batches: document rows (text/chat) and, optionally, repeat rows."""

    def __init__(self, data, a, names, bare=None):
        self.data, self.a, self.names, self.bare = data, a, names, bare

    def __call__(self, rng):
        a = self.a
        R = a.repeat_rows or 0
        x = self.data.batch(rng, a.batch - R, a.seq, a.chat_rows) if a.batch > R else \
            torch.zeros(0, a.seq + 1, dtype=torch.int64)
        y = x[:, 1:].clone()
        if R:
            rows = [k3_mini_repeat.row(rng, a.seq, a.ranks, self.names, self.bare) for _ in range(R)]
            x = torch.cat([x, torch.from_numpy(np.stack([r[0] for r in rows]))], 0)
            y = torch.cat([y, torch.from_numpy(np.stack([r[1] for r in rows]))], 0)
        return x[:, :-1], y


class Probe:
    """Copy loss on fixed repeat rows; teacher-forced loss of held-out cities as a call argument."""

    def __init__(self, a, names, n_cities=16):
        import random
        import k3_mini_chat as chat
        import xtml_ref
        rng = np.random.default_rng(777)
        rows = [k3_mini_repeat.row(rng, 256, a.ranks, names) for _ in range(8)]
        self.rx = torch.from_numpy(np.stack([r[0] for r in rows]))
        self.ry = torch.from_numpy(np.stack([r[1] for r in rows]))
        tok = xtml_ref.Tokenizer.from_files(os.path.join(a.data, "tiktoken.model"),
                                            os.path.join(a.data, "tokenizer_config.json"))
        with open(os.path.join(a.data, "held_cities.json")) as f:
            cities = json.load(f)[:n_cities]
        self.cases = []
        for i, city in enumerate(cities):
            r = random.Random(i)
            ids = xtml_ref.render(tok, chat.request(chat.weather_turns(r, city)[:2], chat.TOOLS, "max"))
            piece = tok.encode_ordinary(city)
            at = max(j for j in range(len(ids) - len(piece) + 1) if ids[j:j + len(piece)] == piece)
            self.cases.append((torch.tensor(ids, dtype=torch.int64), at, len(piece)))

    def __call__(self, model):
        with torch.no_grad():
            lg = model(self.rx[:, :-1])
            copy = F.cross_entropy(lg.reshape(-1, lg.shape[-1]), self.ry.reshape(-1), ignore_index=-100).item()
            tot, n = 0.0, 0
            for ids, at, k in self.cases:
                lg = model(ids[None, :at + k - 1])[0]
                tot += F.cross_entropy(lg[at - 1:at + k - 1], ids[at:at + k], reduction="sum").item()
                n += k
        return copy, tot / n


def held_loss(model, held, T, n_batches=8, B=8):
    rng = np.random.default_rng(12345)
    tot, cnt = 0.0, 0
    with torch.no_grad():
        for _ in range(n_batches):
            x = held.batch(rng, B, T)
            lg = model(x[:, :-1])
            tot += F.cross_entropy(lg.reshape(-1, lg.shape[-1]), x[:, 1:].reshape(-1), reduction="sum").item()
            cnt += x[:, 1:].numel()
    return tot / cnt


def balance(model, rate):
    for m in model.moe_layers():
        if m.load is not None:
            err = m.load.mean() - m.load
            m.gate.e_score_correction_bias += rate * torch.sign(err)


def train(a, log=print):
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    torch.set_flush_denormal(True)
    rng = np.random.default_rng(a.seed)
    data = Docs(os.path.join(a.data, "train.npz"))
    held = Docs(os.path.join(a.data, "held.npz"))
    model = K3Mini(k3_mini_config.text_config())
    if a.prev_token_keys:
        prev_token_keys(model)
    names = bare = None
    if a.repeat_rows or a.probe_every:
        import random
        import xtml_ref
        from k3_mini_copy_data import random_name
        tok = xtml_ref.Tokenizer.from_files(os.path.join(a.data, "tiktoken.model"),
                                            os.path.join(a.data, "tokenizer_config.json"))
        a.ranks = len(tok.ranks)
        with open(os.path.join(a.data, "held_cities.json")) as f:
            held_cities = set(json.load(f))
        r = random.Random(a.seed + 1)
        drawn = [random_name(r, held_cities) for _ in range(4000)]
        names = k3_mini_repeat.name_pieces(tok, drawn)
        bare = k3_mini_repeat.name_pieces(tok, drawn, space=False) if a.bare_names else None
    batches = Batches(data, a, names, bare if a.repeat_rows else None)
    probe = Probe(a, names) if a.probe_every else None
    if a.init:  # continue from a checkpoint (fine-tuning stage)
        model.load_state_dict(torch.load(a.init, map_location="cpu"))
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    other = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": other, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95))
    qat_from = int(a.steps * (1 - a.qat_frac))
    os.makedirs(a.out, exist_ok=True)
    rows, probes = [], []
    t0 = time.time()
    for step in range(a.steps):
        lr = a.lr * min(1.0, (step + 1) / a.warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / a.steps)))
        for g in opt.param_groups:
            g["lr"] = lr
        model.set_qat(step >= qat_from)
        x, y = batches(rng)
        lg = model(x)
        loss = F.cross_entropy(lg.reshape(-1, lg.shape[-1]), y.reshape(-1), ignore_index=-100)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        with torch.no_grad():
            balance(model, a.bias_rate)
        rows.append((step, loss.item(), lr, time.time() - t0))
        if step % a.log_every == 0 or step == a.steps - 1:
            log(f"step {step} loss {loss.item():.4f} lr {lr:.2e} qat {int(step >= qat_from)} "
                f"{time.time() - t0:.0f}s")
        if probe and (step % a.probe_every == 0 or step == a.steps - 1):
            copy, city = probe(model)
            probes.append((step, copy, city))
            log(f"probe step {step}: copy loss {copy:.3f}, held-out city as argument {city:.3f} nats/token")
        if a.save_every and step and step % a.save_every == 0:
            save(model, a, rows, t0, None, probes)
    model.set_qat(True)
    hl = held_loss(model, held, a.seq, n_batches=a.held_batches)
    save(model, a, rows, t0, hl, probes)
    log(f"done: {a.steps} steps in {time.time() - t0:.0f}s, held-out loss {hl:.4f} (ppl {math.exp(hl):.2f})")
    return rows, hl


def prev_token_keys(model):
    """An induction-friendly start for each KDA layer's last head: its keys read
    the previous token (conv tap -2) through the same projection as its queries
    (so the current token's query meets the key of the position after that
    token's last occurrence, whose value is the token to copy), and its decay
    starts near zero so the state keeps a span seen a few dozen tokens back.
    Everything stays trainable."""
    with torch.no_grad():
        for ly in model.model.layers:
            kda = ly.self_attn
            w = getattr(kda, "k_conv1d", None)
            if w is None:
                continue
            d = kda.c.d
            h = slice(w.shape[0] - d, w.shape[0])
            w[h, :, -1] -= 1.0
            w[h, :, -2] += 1.0
            kda.k_proj[h] = kda.q_proj[h]
            kda.dt_bias[h] = -8.0


def save(model, a, rows, t0, hl, probes=()):
    torch.save(model.state_dict(), os.path.join(a.out, "model.pt.tmp"))
    os.replace(os.path.join(a.out, "model.pt.tmp"), os.path.join(a.out, "model.pt"))
    with open(os.path.join(a.out, "train_log.csv"), "w") as f:
        f.write("step,loss,lr,seconds\n")
        f.writelines(f"{s},{lo:.5f},{lr:.6g},{t:.1f}\n" for s, lo, lr, t in rows)
    info = {k: v for k, v in vars(a).items()}
    info.update(wall_seconds=round(time.time() - t0, 1), steps_done=len(rows),
                final_train_loss=float(np.mean([r[1] for r in rows[-20:]])), held_loss=hl,
                probes=[{"step": s, "copy_loss": round(c, 4), "held_city_loss": round(h, 4)} for s, c, h in probes],
                torch=torch.__version__)
    with open(os.path.join(a.out, "train.json"), "w") as f:
        json.dump(info, f, indent=1)


def smoke(a):
    """Tiny data from installed Debian text, ~1 minute of training; the loss must fall."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import k3_mini_data
    with tempfile.TemporaryDirectory() as tmp:
        k3_mini_data.main(["--out", tmp, "--text-mb", "0.02", "--chats", "60", "--ranks", "600",
                           "--bpe-sample-mb", "0.03", "--no-man"])
        a.data, a.out = tmp, os.path.join(tmp, "ckpt")
        a.steps, a.batch, a.seq, a.warmup, a.lr, a.log_every, a.save_every = 32, 4, 64, 4, 3e-3, 8, 0
        a.qat_frac, a.held_batches = 0.25, 2
        rows, hl = train(a)
    first, last = np.mean([r[1] for r in rows[:5]]), np.mean([r[1] for r in rows[-5:]])
    print(f"smoke: loss {first:.3f} -> {last:.3f}, held-out {hl:.3f}")
    if not last < first - 0.5:
        raise SystemExit(f"smoke: loss did not fall enough ({first:.3f} -> {last:.3f})")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data")
    ap.add_argument("--out")
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--qat-frac", type=float, default=0.25)
    ap.add_argument("--bias-rate", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=19)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--log-every", type=int, default=25)
    ap.add_argument("--save-every", type=int, default=200)
    ap.add_argument("--init", help="start from this model.pt instead of a fresh initialisation")
    ap.add_argument("--chat-rows", type=int, help="batch rows starting at a chat document (default half)")
    ap.add_argument("--held-batches", type=int, default=8, help="held-out batches for the final loss")
    ap.add_argument("--repeat-rows", type=int, default=0, help="batch rows that are repeat (copy) rows")
    ap.add_argument("--bare-names", action="store_true",
                    help="repeat rows also pair ' Name' with the bare 'Name' a tool argument holds")
    ap.add_argument("--prev-token-keys", action="store_true", help="induction-friendly KDA key conv start")
    ap.add_argument("--probe-every", type=int, default=0, help="log the copy and held-out city probes")
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args(argv)
    if a.smoke:
        return smoke(a)
    if not a.data or not a.out:
        ap.error("--data and --out are required (or --smoke)")
    train(a, log=lambda s: print(s, flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
