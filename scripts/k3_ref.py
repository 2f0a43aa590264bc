#!/usr/bin/python3
"""Independent numpy reference for Kimi K3: teacher-forced per-position logits
computed straight from the SOURCE Hugging Face snapshot (spec sections 1-4, 6).

  k3_ref.py SNAPSHOT --ids 1,2,3 | --ids-file F  --out logits.f32
            [--hidden-out F] [--json] [--f64] [--expert-top-p P]

--out writes little-endian float32 [positions x vocab], the layout of
k3-run --logits-out. --hidden-out writes the peer trace layout (spec 6.10):
for each position, for each layer, `hidden` (the AttnRes prefix after the
layer), then (when the snapshot has a head) one row holding the final normed
mix (the head's input); i.e. float32 [positions x (layers+1) x hidden_size].

Written from the spec only (no C++ code, no peer code). Requires only Debian's
/usr/bin/python3 and numpy. Modules: k3_ref_io (safetensors/config/index),
k3_ref_ops (math primitives), this file (model and CLI).

Choices where the spec leaves one (PEER choice taken each time):
- Precision: f32 everywhere; double for RMSNorm's sum of squares (6.0) and for
  both AttnRes score sums and their division (6.2.1). `--f64` computes
  everything in double instead (a diagnostic for how much f32 rounding moves
  the logits; it is not the reference).
- MXFP4 ue8m0 scale: the PEER ENGINE convention, f32 bit pattern s<<23, so
  s=0 -> +0.0 and s=255 -> +inf (the peer numpy reference's ldexp would give
  2^-127 for s=0). Real K3 scales contain neither value.
- Prefix: `language_model.` is used iff `model.layers.0.input_layernorm.weight`
  is absent and the prefixed name exists (PEER engine rule).
- Tensor location: model.safetensors.index.json weight_map (PEER reference);
  without an index, every *.safetensors in sorted order, first holder wins.
- No BOS is added: the ids are used exactly as given (the caller decides).
- Routed experts are summed in rank order (descending selection value); the
  peer engine sums in disk order, so the last bits can differ (spec 6.6.5).
- MLA in the naive form (6.4); the absorbed form is the same math
  (tests/model/ref_selftest_test.py checks that).
- Missing `rms_norm_eps` -> 1e-5 and missing `gate_lower_bound` -> -5 (PEER
  defaults); every other key used is required.
- A_log may be longer than the number of KDA heads (K3 pads 96 to 128); only
  the first Hk entries are used.
- --expert-top-p P (< 1) applies the peer's optional TOPP knob (spec 6.6
  note) after the top-k routing: weights ranked descending, ties to the lower
  expert id, kept until their running f32 sum reaches P, renormalised over
  that sum + 1e-20 (k3_ref_ops.expert_top_p); the kept experts are summed in
  that order. P = 1 (the default) leaves the routing as it is.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import k3_ref_ops as ops  # noqa: E402
from k3_ref_io import RefError, Snapshot  # noqa: E402


class K3Config:
    """The hyper-parameters of spec 1.2/1.3, read from the text config."""

    def __init__(self, tc):
        def need(key, obj=tc, where="text config"):
            if key not in obj or obj[key] is None:
                raise RefError(f"config.json: {where} lacks required key '{key}'")
            return obj[key]

        self.hidden = int(need("hidden_size"))
        self.layers = int(need("num_hidden_layers"))
        self.vocab = int(need("vocab_size"))
        self.first_dense = int(need("first_k_dense_replace"))
        self.dense_inter = int(need("intermediate_size")) if self.first_dense > 0 else 0
        self.heads = int(need("num_attention_heads"))
        self.q_lora = int(need("q_lora_rank"))
        self.kv_lora = int(need("kv_lora_rank"))
        self.nope = int(need("qk_nope_head_dim"))
        self.rope = int(need("qk_rope_head_dim"))
        self.vdim = int(need("v_head_dim"))
        self.experts = int(need("num_experts"))
        self.topk = int(need("num_experts_per_token"))
        self.moe_inter = int(need("moe_intermediate_size"))
        self.latent = int(need("routed_expert_hidden_size"))
        self.shared = int(need("num_shared_experts"))
        self.block = int(need("attn_res_block_size"))
        self.b1 = float(need("activation_situ_beta"))
        self.b2 = float(need("activation_situ_linear_beta"))
        eps = tc.get("rms_norm_eps")
        self.eps = 1e-5 if eps is None else float(eps)
        la = need("linear_attn_config")
        if not isinstance(la, dict):
            raise RefError("config.json: linear_attn_config is not an object")
        self.kda_heads = int(need("num_heads", la, "linear_attn_config"))
        self.kda_dim = int(need("head_dim", la, "linear_attn_config"))
        self.conv = int(need("short_conv_kernel_size", la, "linear_attn_config"))
        g = la.get("gate_lower_bound")
        self.g_min = -5.0 if g is None else float(g)
        if la.get("use_full_rank_gate", True) is False:
            raise RefError("config.json: use_full_rank_gate=false is not supported (K3 uses g_proj)")
        kl = need("kda_layers", la, "linear_attn_config")
        if not isinstance(kl, list):
            raise RefError("config.json: linear_attn_config.kda_layers is not a list")
        # Spec 1.3: kda_layers is 1-based.
        self.kda_layers = {int(n) - 1 for n in kl}
        self.kda_width = self.kda_heads * self.kda_dim
        self._check()

    def _check(self):
        c = self
        checks = [
            (1 <= c.hidden <= 65536, "hidden_size"), (1 <= c.layers <= 128, "num_hidden_layers"),
            (1 <= c.experts <= 4096, "num_experts"), (1 <= c.topk <= min(64, c.experts), "num_experts_per_token"),
            (1 <= c.vocab <= 1 << 22, "vocab_size"), (1 <= c.kda_width <= 1 << 20, "KDA width"),
            (1 <= c.conv <= 8, "short_conv_kernel_size"), (c.latent >= 32 and c.latent % 32 == 0, "routed_expert_hidden_size"),
            (c.moe_inter >= 32 and c.moe_inter % 32 == 0, "moe_intermediate_size"), (c.block >= 1, "attn_res_block_size"),
            (1 <= c.kda_dim <= 512, "head_dim"), (1 <= c.kv_lora <= 4096, "kv_lora_rank"),
            (-(-c.layers // c.block) + 1 <= 16, "attn_res_block_size (too many blocks)"),
        ]
        for ok, what in checks:
            if not ok:
                raise RefError(f"config.json: {what} out of range")

    def is_kda(self, i):
        return i in self.kda_layers


class K3Reference:
    """Teacher-forced forward pass of spec 6 over one sequence of ids."""

    def __init__(self, snapshot_dir, dt=np.float32, expert_top_p=1.0):
        self.snap = Snapshot(snapshot_dir)
        self.cfg = K3Config(self.snap.config)
        self.dt = dt
        self.expert_top_p = expert_top_p
        self.experts_kept = []  # per MoE layer: experts kept per position
        self.route_margins = []  # per MoE layer: min over positions of sel[k-1] - sel[k]

    # --- weights -----------------------------------------------------------
    def w(self, name, shape):
        return self.snap.f32(name, shape).astype(self.dt, copy=False)

    def scorer(self, norm_name, proj_name):
        # Spec 2.3: res_norm.w * res_proj.w, computed in f32 at load time.
        d = self.cfg.hidden
        return self.snap.f32(norm_name, (d,)) * self.snap.f32(proj_name, (d,))

    # --- blocks ------------------------------------------------------------
    def kda(self, i, x):
        c, dt = self.cfg, self.dt
        p = f"model.layers.{i}.self_attn."
        d, h, hd, t = c.hidden, c.kda_heads, c.kda_dim, x.shape[0]
        width = c.kda_width
        q = ops.linear(x, self.w(p + "q_proj.weight", (width, d)), dt)
        k = ops.linear(x, self.w(p + "k_proj.weight", (width, d)), dt)
        v = ops.linear(x, self.w(p + "v_proj.weight", (width, d)), dt)
        gt = ops.linear(x, self.w(p + "g_proj.weight", (width, d)), dt)
        rank = self.snap.shape(p + "f_a_proj.weight")[0]
        f = ops.linear(ops.linear(x, self.w(p + "f_a_proj.weight", (rank, d)), dt),
                       self.w(p + "f_b_proj.weight", (width, rank)), dt)
        bl = ops.linear(x, self.w(p + "b_proj.weight", (h, d)), dt)
        q, _ = ops.causal_conv_silu(q, self.w(p + "q_conv1d.weight", (width, c.conv)), dt=dt)
        k, _ = ops.causal_conv_silu(k, self.w(p + "k_conv1d.weight", (width, c.conv)), dt=dt)
        v, _ = ops.causal_conv_silu(v, self.w(p + "v_conv1d.weight", (width, c.conv)), dt=dt)
        q = q.reshape(t, h, hd)
        k = k.reshape(t, h, hd)
        v = v.reshape(t, h, hd)
        qh = (ops.l2norm(q, dt=dt) * dt(1.0 / np.sqrt(hd))).astype(dt)
        kh = ops.l2norm(k, dt=dt)
        a_log = self.snap.f32(p + "A_log").reshape(-1)
        if a_log.size < h:
            raise RefError(f"{self.snap.full(p + 'A_log')}: {a_log.size} entries, need {h}")
        alpha = ops.kda_decay(f.reshape(t, h, hd), self.w(p + "dt_bias", (h, hd)),
                              a_log[:h], c.g_min, dt)
        beta = ops.sigmoid(bl, dt)
        o, _ = ops.kda_recurrence(qh, kh, v, alpha, beta, dt=dt)
        o = ops.rmsnorm(o, self.w(p + "o_norm.weight", (hd,)), c.eps, dt)
        o = (o * ops.sigmoid(gt.reshape(t, h, hd), dt)).astype(dt)
        return ops.linear(o.reshape(t, width), self.w(p + "o_proj.weight", (d, width)), dt)

    def mla(self, i, x):
        c, dt = self.cfg, self.dt
        p = f"model.layers.{i}.self_attn."
        d, h, t = c.hidden, c.heads, x.shape[0]
        qk = c.nope + c.rope
        cq = ops.rmsnorm(ops.linear(x, self.w(p + "q_a_proj.weight", (c.q_lora, d)), dt),
                         self.w(p + "q_a_layernorm.weight", (c.q_lora,)), c.eps, dt)
        qfull = ops.linear(cq, self.w(p + "q_b_proj.weight", (h * qk, c.q_lora)), dt).reshape(t, h, qk)
        ckv = ops.linear(x, self.w(p + "kv_a_proj_with_mqa.weight", (c.kv_lora + c.rope, d)), dt)
        lat = ops.rmsnorm(ckv[:, :c.kv_lora], self.w(p + "kv_a_layernorm.weight", (c.kv_lora,)), c.eps, dt)
        k_r = ckv[:, c.kv_lora:]  # raw: no norm, no rotation
        wkvb = self.w(p + "kv_b_proj.weight", (h * (c.nope + c.vdim), c.kv_lora))
        ctx = ops.mla_naive(qfull[:, :, :c.nope], qfull[:, :, c.nope:], lat, k_r, wkvb, c.nope, c.vdim, dt)
        gate = ops.sigmoid(ops.linear(x, self.w(p + "g_proj.weight", (h * c.vdim, d)), dt), dt)
        ctx = (ctx * gate.reshape(t, h, c.vdim)).astype(dt)
        return ops.linear(ctx.reshape(t, h * c.vdim), self.w(p + "o_proj.weight", (d, h * c.vdim)), dt)

    def glu(self, x, gate_w, up_w, down_w):
        dt = self.dt
        g = ops.linear(x, gate_w, dt)
        u = ops.linear(x, up_w, dt)
        return ops.linear(ops.situ_glu(g, u, self.cfg.b1, self.cfg.b2, dt), down_w, dt)

    def dense_mlp(self, i, x):
        c = self.cfg
        p = f"model.layers.{i}.mlp."
        di, d = c.dense_inter, c.hidden
        return self.glu(x, self.w(p + "gate_proj.weight", (di, d)), self.w(p + "up_proj.weight", (di, d)),
                        self.w(p + "down_proj.weight", (d, di)))

    def expert(self, i, e):
        """(W1, W2, W3) of routed expert e of layer i, dequantised from MXFP4."""
        c = self.cfg
        p = f"model.layers.{i}.block_sparse_moe.experts.{e}."
        out = []
        for name, rows, cols in (("w1", c.moe_inter, c.latent), ("w2", c.latent, c.moe_inter),
                                 ("w3", c.moe_inter, c.latent)):
            packed = self.snap.u8(p + name + ".weight_packed", rows * cols // 2)
            scale = self.snap.u8(p + name + ".weight_scale", rows * cols // 32)
            out.append(ops.mxfp4_dequant(packed, scale, rows, cols, self.dt))
        return out

    def moe(self, i, x):
        c, dt = self.cfg, self.dt
        p = f"model.layers.{i}.block_sparse_moe."
        d, t = c.hidden, x.shape[0]
        router = ops.linear(x, self.w(p + "gate.weight", (c.experts, d)), dt)
        bias = self.w(p + "gate.e_score_correction_bias", (c.experts,))
        ids, wts = ops.route_topk(router, bias, c.topk, dt)
        if c.topk < c.experts:  # diagnostic: how close the k-th pick is to the first one left out
            sel = np.sort(ops.sigmoid(router, dt) + bias, axis=-1)[:, ::-1]
            self.route_margins.append(float(np.min(sel[:, c.topk - 1] - sel[:, c.topk])))
        kept = np.ones(ids.shape, dtype=bool)
        if self.expert_top_p < 1.0:
            ids, wts, kept = ops.expert_top_p(ids, wts, self.expert_top_p, dt)
        self.experts_kept.append(kept.sum(axis=1))
        z = ops.linear(x, self.w(p + "routed_expert_down_proj.weight", (c.latent, d)), dt)
        contrib = np.zeros((t, c.topk, c.latent), dtype=dt)
        for e in np.unique(ids[kept]):
            w1, w2, w3 = self.expert(i, int(e))
            pos, rank = np.nonzero((ids == e) & kept)
            y = self.glu(z[pos], w1, w3, w2)
            contrib[pos, rank] = wts[pos, rank][:, None] * y
        u = contrib[:, 0].copy()
        for r in range(1, c.topk):  # rank order, f32 (a dropped expert adds exact zeros)
            u = (u + contrib[:, r]).astype(dt)
        u = ops.rmsnorm(u, self.w(p + "routed_expert_norm.weight", (c.latent,)), c.eps, dt)
        y = ops.linear(u, self.w(p + "routed_expert_up_proj.weight", (d, c.latent)), dt)
        if c.shared > 0:
            ish = c.moe_inter * c.shared
            s = p + "shared_experts."
            y = (y + self.glu(x, self.w(s + "gate_proj.weight", (ish, d)), self.w(s + "up_proj.weight", (ish, d)),
                              self.w(s + "down_proj.weight", (d, ish)))).astype(dt)
        return y

    # --- whole model -------------------------------------------------------
    def forward(self, ids, want_hidden=False, on_layer=None):
        """Returns (logits [T, V] or None without a head, trace [T, L+1, D] or None).
        on_layer(i, hidden) is called after each layer (for diagnostics)."""
        c, dt = self.cfg, self.dt
        ids = np.asarray(ids, dtype=np.int64)
        if ids.ndim != 1 or ids.size == 0:
            raise RefError("need at least one token id")
        if ids.min() < 0 or ids.max() >= c.vocab:
            raise RefError(f"token id out of range [0, {c.vocab})")
        emb_name = "model.embed_tokens.weight"
        if self.snap.shape(emb_name) != (c.vocab, c.hidden):
            raise RefError(f"{self.snap.full(emb_name)}: shape {list(self.snap.shape(emb_name))},"
                           f" expected [{c.vocab}, {c.hidden}]")
        hidden = self.snap.f32_rows(emb_name, ids).astype(dt)  # spec 6.1: one row per token
        blocks = []
        trace = [] if want_hidden else None
        d = c.hidden
        for i in range(c.layers):
            p = f"model.layers.{i}."
            prefix = hidden
            x_attn = hidden
            if blocks:
                x_attn = ops.attnres_mix(prefix, blocks,
                                         self.scorer(p + "self_attention_res_norm.weight",
                                                     p + "self_attention_res_proj.weight"), c.eps, dt)
            reset = i % c.block == 0
            if reset:
                blocks.append(prefix)
            xn = ops.rmsnorm(x_attn, self.w(p + "input_layernorm.weight", (d,)), c.eps, dt)
            a = self.kda(i, xn) if c.is_kda(i) else self.mla(i, xn)
            prefix = a if reset else (prefix + a).astype(dt)
            x_mlp = ops.attnres_mix(prefix, blocks, self.scorer(p + "mlp_res_norm.weight", p + "mlp_res_proj.weight"),
                                    c.eps, dt)
            xn = ops.rmsnorm(x_mlp, self.w(p + "post_attention_layernorm.weight", (d,)), c.eps, dt)
            m = self.dense_mlp(i, xn) if i < c.first_dense else self.moe(i, xn)
            hidden = (prefix + m).astype(dt)
            if trace is not None:
                trace.append(hidden)
            if on_layer is not None:
                on_layer(i, hidden)
        if not self.snap.has("model.norm.weight"):
            return None, (np.stack(trace, axis=1) if trace is not None else None)  # trace-only model
        x_out = ops.attnres_mix(hidden, blocks, self.scorer("model.output_attn_res_norm.weight",
                                                            "model.output_attn_res_proj.weight"), c.eps, dt)
        xn = ops.rmsnorm(x_out, self.w("model.norm.weight", (d,)), c.eps, dt)
        logits = ops.linear(xn, self.w("lm_head.weight", (c.vocab, d)), dt)
        if trace is not None:
            trace.append(xn)
            trace = np.stack(trace, axis=1)
        return logits, trace


def parse_ids(text):
    parts = text.replace(",", " ").split()
    try:
        return [int(p) for p in parts]
    except ValueError as e:
        raise RefError(f"bad token id list: {e}")


def main(argv=None):
    ap = argparse.ArgumentParser(description="numpy reference logits for a Kimi K3 HF snapshot")
    ap.add_argument("snapshot")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--ids", help="comma-separated token ids")
    g.add_argument("--ids-file", help="file of token ids (comma or whitespace separated)")
    ap.add_argument("--out", help="write float32 LE logits [positions x vocab]")
    ap.add_argument("--hidden-out", help="write float32 LE trace [positions x (layers+1) x hidden]")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    ap.add_argument("--f64", action="store_true", help="diagnostic: compute everything in double")
    ap.add_argument("--norms", action="store_true", help="print per-layer hidden-state RMS (stderr)")
    ap.add_argument("--expert-top-p", type=float, default=1.0,
                    help="keep routed experts up to this cumulative weight (0 < P <= 1; 1 = all)")
    a = ap.parse_args(argv)
    if not 0.0 < a.expert_top_p <= 1.0:  # NaN fails too
        ap.error(f"--expert-top-p must be in (0, 1], got {a.expert_top_p}")
    try:
        if a.ids is not None:
            ids = parse_ids(a.ids)
        else:
            with open(a.ids_file, "r", encoding="utf-8") as f:
                ids = parse_ids(f.read())
        t0 = time.time()
        ref = K3Reference(a.snapshot, np.float64 if a.f64 else np.float32, a.expert_top_p)
        norms = []

        def on_layer(i, h):
            r = np.sqrt(np.mean(np.square(h.astype(np.float64)), axis=-1))
            norms.append([float(r.min()), float(r.max())])
            if a.norms:
                kind = "kda" if ref.cfg.is_kda(i) else "mla"
                print(f"layer {i:3d} {kind}: hidden rms min {r.min():.4g} max {r.max():.4g}", file=sys.stderr)

        logits, trace = ref.forward(ids, want_hidden=a.hidden_out is not None, on_layer=on_layer)
        secs = time.time() - t0
        if a.hidden_out:
            trace.astype("<f4").tofile(a.hidden_out)
        if logits is None:
            if a.out:
                raise RefError(f"{a.snapshot}: no model.norm.weight, so no head: cannot write logits")
            summary = {"positions": len(ids), "logits": None, "seconds": round(secs, 3)}
        else:
            if a.out:
                logits.astype("<f4").tofile(a.out)
            am = [int(x) for x in np.argmax(logits, axis=-1)]
            summary = {"positions": len(ids), "vocab": int(logits.shape[1]), "argmax": am,
                       "finite": bool(np.all(np.isfinite(logits))), "logit_std": float(np.std(logits)),
                       "seconds": round(secs, 3), "layer_rms_minmax": norms,
                       "min_route_margin": min(ref.route_margins) if ref.route_margins else None,
                       "experts_kept_mean": (float(np.mean(np.concatenate(ref.experts_kept)))
                                             if ref.experts_kept else None)}
        if a.json:
            print(json.dumps(summary))
        else:
            print(f"k3_ref: {summary['positions']} positions, {secs:.2f} s")
            if logits is not None:
                print(f"argmax: {','.join(str(x) for x in summary['argmax'])}")
                print(f"finite: {summary['finite']}  logit std: {summary['logit_std']:.6g}"
                      f"  min routing margin: {summary['min_route_margin']}")
            sys.stdout.flush()
        return 0
    except (RefError, OSError) as e:
        print(f"k3_ref: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
