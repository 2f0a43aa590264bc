#!/usr/bin/python3
"""Numeric building blocks of the numpy K3 reference (spec section 6).

Every function takes `dt`, the compute dtype: np.float32 is the reference
(f32 everywhere, double exactly where spec 6.0/6.2.1 say double); np.float64
is a diagnostic "all double" mode used to measure how much f32 rounding moves
the logits. Arrays are [positions, ...]; position is always axis 0.
"""
import numpy as np

# Spec 4: e2m1 values in code order 0..15 (bit 3 = sign, bits 0-2 = magnitude).
E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
                 -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0], dtype=np.float32)
KDA_L2_EPS = 1e-6  # spec 6.0: the one norm that does not use rms_norm_eps


def sigmoid(x, dt=np.float32):
    x = np.asarray(x, dtype=dt)
    with np.errstate(over="ignore"):  # exp(-x) -> inf gives exactly 0, as in C
        return (dt(1) / (dt(1) + np.exp(-x))).astype(dt)


def silu(x, dt=np.float32):
    return (np.asarray(x, dtype=dt) * sigmoid(x, dt)).astype(dt)


def situ_glu(g, u, b1, b2, dt=np.float32):
    """Spec 6.0: [b1*tanh(g/b1)*sigma(g)] * [b2*tanh(u/b2)]."""
    g = np.asarray(g, dtype=dt)
    u = np.asarray(u, dtype=dt)
    b1, b2 = dt(b1), dt(b2)
    gate = (b1 * np.tanh(g / b1)) * sigmoid(g, dt)
    lin = b2 * np.tanh(u / b2)
    return (gate * lin).astype(dt)


def rmsnorm(x, w, eps, dt=np.float32):
    """Spec 6.0 over the last axis: sum of squares in double, the rest in `dt`:
    r = 1/sqrt(float(ms/D) + eps); out = (x*r)*w."""
    x = np.asarray(x, dtype=dt)
    d = x.shape[-1]
    ms = np.sum(np.square(x.astype(np.float64)), axis=-1) / d
    r = dt(1) / np.sqrt(ms.astype(dt) + dt(eps))
    return ((x * r[..., None]) * np.asarray(w, dtype=dt)).astype(dt)


def softmax(x, axis=-1, dt=np.float32):
    """Subtract the max, exp in `dt`, divide by the `dt` sum (spec 6.0)."""
    x = np.asarray(x, dtype=dt)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return (e / np.sum(e, axis=axis, keepdims=True, dtype=dt)).astype(dt)


def linear(x, w, dt=np.float32):
    """y = x W^T for a [O, I] weight; x is [..., I]."""
    return np.matmul(np.asarray(x, dtype=dt), np.asarray(w, dtype=dt).T)


def attnres_mix(prefix, blocks, w, eps, dt=np.float32):
    """Spec 6.2.1. Candidates = blocks (snapshot order) then prefix, each [T, D].
    score_e = (v.w) / sqrt(sum(v^2)/D + eps) with both sums and the division in
    double, rounded to `dt`; p = softmax over candidates; out = sum_e p_e v_e
    accumulated in `dt` in candidate order. Candidates are mixed raw."""
    cands = [np.asarray(b, dtype=dt) for b in blocks] + [np.asarray(prefix, dtype=dt)]
    d = cands[0].shape[-1]
    w64 = np.asarray(w, dtype=np.float32).astype(np.float64)
    scores = []
    for v in cands:
        v64 = v.astype(np.float64)
        num = v64 @ w64
        den = np.sqrt(np.sum(v64 * v64, axis=-1) / d + float(eps))
        scores.append((num / den).astype(dt))
    p = softmax(np.stack(scores, axis=-1), axis=-1, dt=dt)  # [T, n]
    out = p[:, 0:1] * cands[0]
    for e in range(1, len(cands)):
        out = (out + p[:, e:e + 1] * cands[e]).astype(dt)
    return out.astype(dt)


def causal_conv_silu(x, taps, window=None, dt=np.float32):
    """Spec 6.3 short convolution for one stream. x [T, C] pre-conv values,
    taps [C, K] with tap 0 on the oldest input, `window` [K-1, C] the previous
    K-1 pre-conv values (oldest first; zeros at the start of a sequence).
    Returns (SiLU(conv) [T, C], new window [K-1, C])."""
    x = np.asarray(x, dtype=dt)
    taps = np.asarray(taps, dtype=dt)
    t, c = x.shape
    k = taps.shape[1]
    if window is None:
        window = np.zeros((k - 1, c), dtype=dt)
    xp = np.concatenate([np.asarray(window, dtype=dt), x], axis=0)  # [K-1+T, C]
    acc = taps[:, 0] * xp[0:t]
    for j in range(1, k):
        acc = (acc + taps[:, j] * xp[j:j + t]).astype(dt)
    return silu(acc, dt), xp[t:].copy()


def l2norm(x, eps=KDA_L2_EPS, dt=np.float32):
    """x / sqrt(sum(x^2) + eps) over the last axis, sums in `dt` (spec 6.3)."""
    x = np.asarray(x, dtype=dt)
    ss = np.sum(x * x, axis=-1, keepdims=True, dtype=dt)
    return (x / np.sqrt(ss + dt(eps))).astype(dt)


def kda_decay(f, dt_bias, a_log_heads, g_min, dt=np.float32):
    """alpha = exp(g_min * sigma(exp(A_log[h]) * (f + dt_bias))).
    f [T, H, d], dt_bias [H, d], a_log_heads [H]."""
    z = (np.asarray(f, dtype=dt) + np.asarray(dt_bias, dtype=dt)).astype(dt)
    a = np.exp(np.asarray(a_log_heads, dtype=dt))[:, None]
    return np.exp(dt(g_min) * sigmoid(a * z, dt)).astype(dt)


def kda_recurrence(qh, kh, v, alpha, beta, state=None, dt=np.float32):
    """Spec 6.3 delta rule, token by token, all heads at once.
    qh, kh, v, alpha: [T, H, d]; beta [T, H]; state S[h][key][value] ([H, d, d]).
    Per token: S <- alpha_k * S[k,:]; kS = k^T S; delta = beta (v - kS);
    S <- S + k delta^T; o = q^T S. Returns (o [T, H, d], final state)."""
    t_len, h, d = qh.shape
    s = np.zeros((h, d, v.shape[-1]), dtype=dt) if state is None else np.array(state, dtype=dt)
    out = np.empty((t_len, h, v.shape[-1]), dtype=dt)
    for t in range(t_len):
        s = s * alpha[t][:, :, None]
        ks = np.einsum("hk,hkv->hv", kh[t], s)
        delta = beta[t][:, None] * (v[t] - ks)
        s = (s + kh[t][:, :, None] * delta[:, None, :]).astype(dt)
        out[t] = np.einsum("hk,hkv->hv", qh[t], s)
    return out, s


def mla_naive(q_nope, q_rope, latent, k_rope, w_kvb, nope, vdim, dt=np.float32):
    """Spec 6.4 naive form, causal over positions 0..t.
    q_nope [T, H, nope], q_rope [T, H, rope], latent L [T, kv], k_rope R [T, rope],
    w_kvb [H*(nope+vdim), kv]. Returns ctx [T, H, vdim]."""
    t_len, h, _ = q_nope.shape
    wk = np.asarray(w_kvb, dtype=dt).reshape(h, nope + vdim, -1)
    k_nope = np.einsum("hdc,sc->shd", wk[:, :nope], latent).astype(dt)   # [S, H, nope]
    vals = np.einsum("hdc,sc->shd", wk[:, nope:], latent).astype(dt)     # [S, H, vdim]
    root = dt(np.sqrt(float(q_nope.shape[-1] + q_rope.shape[-1])))
    sc = (np.einsum("thd,shd->hts", q_nope, k_nope)
          + np.einsum("thr,sr->hts", q_rope, k_rope)).astype(dt) / root
    mask = np.triu(np.ones((t_len, t_len), dtype=bool), 1)
    sc = np.where(mask[None], dt(-np.inf), sc)
    p = softmax(sc, axis=-1, dt=dt)                                      # [H, T, S]
    return np.einsum("hts,shd->thd", p, vals).astype(dt)


def mxfp4_dequant(packed, scale, rows, cols, dt=np.float32):
    """Spec 4: W[o,i] = E2M1[code] * 2^(s-127). packed [rows, cols/2] (low nibble
    = even column), scale [rows, cols/32] ue8m0. The scale is built as the
    engine does, by placing s in the f32 exponent field (bits s<<23): exact for
    1..254, s=0 -> +0.0 and s=255 -> +inf (so a 0 code times s=255 is NaN)."""
    p = np.asarray(packed, dtype=np.uint8).reshape(rows, cols // 2)
    codes = np.empty((rows, cols), dtype=np.uint8)
    codes[:, 0::2] = p & 0x0F
    codes[:, 1::2] = p >> 4
    sbits = np.asarray(scale, dtype=np.uint8).reshape(rows, cols // 32).astype(np.uint32) << 23
    sf = sbits.view(np.float32)
    with np.errstate(invalid="ignore"):
        w = E2M1[codes] * np.repeat(sf, 32, axis=1)
    return w.astype(dt)


def route_topk(router_logits, bias, k, dt=np.float32):
    """Spec 6.6 steps 1-3. Scores s = sigma(r); pick the top-k by s + bias
    (ties -> lower expert id, like the peer's greedy strict '>'); weights are
    the chosen raw scores over (their sum, in rank order, + 1e-20).
    Returns (ids [T, k] in rank order, weights [T, k])."""
    s = sigmoid(router_logits, dt)
    sel = (s + np.asarray(bias, dtype=dt)).astype(dt)
    ids = np.argsort(-sel, axis=-1, kind="stable")[:, :k]
    chosen = np.take_along_axis(s, ids, axis=-1)
    total = chosen[:, 0].copy()
    for j in range(1, k):
        total = (total + chosen[:, j]).astype(dt)
    return ids, (chosen / (total + dt(1e-20))[:, None]).astype(dt)


def expert_top_p(ids, wts, p, dt=np.float32):
    """Expert top-p (the peer's optional TOPP knob, spec 6.6 note), per token:
    rank its k routed experts by weight, descending (equal weights -> lower
    expert id first), keep the shortest prefix whose running sum (dt, in that
    order) reaches p (at least one; all k if it never does), and divide the
    kept weights by that sum + 1e-20. Returns (ids, weights, kept [T, k] bool)
    in the new order; dropped entries have weight 0."""
    t, k = ids.shape
    out_ids, out_w = np.empty_like(ids), np.zeros_like(wts)
    kept = np.zeros((t, k), dtype=bool)
    for r in range(t):
        order = np.lexsort((ids[r], -wts[r]))  # last key primary: weight descending, then id
        w = wts[r, order].astype(dt)
        cum = np.cumsum(w, dtype=dt)  # sequential in dt
        reached = np.nonzero(cum >= dt(p))[0]
        n = int(reached[0]) + 1 if reached.size else k
        out_ids[r] = ids[r, order]
        out_w[r, :n] = (w[:n] / (cum[n - 1] + dt(1e-20))).astype(dt)
        kept[r, :n] = True
    return out_ids, out_w, kept
