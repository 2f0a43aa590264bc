#!/usr/bin/python3
"""k3-mini in PyTorch: Kimi K3's forward pass (spec section 6), batched over
positions for training, written from the spec alone (no code shared with the
C++ runtime or scripts/k3_ref.py).

Parameters are named exactly like the snapshot's text tensors without the
`language_model.` prefix (model.layers.{i}.self_attn.q_proj.weight, ...), so
export and import are a name-for-name copy. Routed experts are kept as f32
"shadow" weights; with `qat` on, the forward uses their MXFP4 fake-quantized
values (straight-through gradient), the same values the export stores.

Choices: KDA is computed chunk-wise (exact algebra of the spec's per-token
recurrence, see kda_chunked; `kda_recurrent` is the literal per-token form and
the tests compare them); MLA in the naive form; the router's correction bias
is a buffer moved by load balancing (aux-loss-free), not by gradients.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


# ------------------------------------------------------------------ primitives

def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def situ_glu(g, u, b1, b2):
    return (b1 * torch.tanh(g / b1) * torch.sigmoid(g)) * (b2 * torch.tanh(u / b2))


def mxfp4_codes(w):
    """W[O, I] -> (codes uint8 [O, I] in e2m1 code order, ue8m0 scale uint8 [O, I/32]).

    Scale: the smallest power of two with max|w| / 2^e <= 6 in each 32-group
    (no clipping); values round to the nearest e2m1 magnitude (ties up)."""
    O, I = w.shape
    g = w.detach().float().reshape(O, I // 32, 32)
    amax = g.abs().amax(-1).clamp_min(2.0 ** -100)
    e = torch.ceil(torch.log2(amax / 6.0)).clamp(-126, 127)
    x = g / torch.exp2(e)[..., None]
    grid = E2M1.to(w.device)
    mid = (grid[1:] + grid[:-1]) / 2
    mag = torch.bucketize(x.abs(), mid, right=True)  # index into grid
    codes = (mag + 8 * (x < 0).to(mag.dtype)).to(torch.uint8).reshape(O, I)
    return codes, (e + 127).to(torch.uint8)


def mxfp4_values(codes, scale):
    O, I = codes.shape
    c = codes.long()
    mag = E2M1.to(codes.device)[c & 7]
    val = torch.where((c & 8) != 0, -mag, mag).reshape(O, I // 32, 32)
    return (val * torch.exp2(scale.float() - 127)[..., None]).reshape(O, I)


def fake_mxfp4(w):
    q = mxfp4_values(*mxfp4_codes(w)).to(w.dtype)
    return w + (q - w).detach()


# ------------------------------------------------------------------ config

class Cfg:
    def __init__(self, tc):
        self.D = tc["hidden_size"]
        self.L = tc["num_hidden_layers"]
        self.V = tc["vocab_size"]
        self.first_dense = tc["first_k_dense_replace"]
        self.dense_inter = tc["intermediate_size"]
        self.H = tc["num_attention_heads"]
        self.q_lora, self.kv_lora = tc["q_lora_rank"], tc["kv_lora_rank"]
        self.nope, self.rope, self.vdim = tc["qk_nope_head_dim"], tc["qk_rope_head_dim"], tc["v_head_dim"]
        self.E, self.topk = tc["num_experts"], tc["num_experts_per_token"]
        self.Mi, self.Z = tc["moe_intermediate_size"], tc["routed_expert_hidden_size"]
        self.Ish = self.Mi * tc["num_shared_experts"]
        self.block = tc["attn_res_block_size"]
        self.b1, self.b2 = float(tc["activation_situ_beta"]), float(tc["activation_situ_linear_beta"])
        self.eps = float(tc.get("rms_norm_eps", 1e-5))
        la = tc["linear_attn_config"]
        self.Hk, self.d, self.K = la["num_heads"], la["head_dim"], la["short_conv_kernel_size"]
        self.gmin = float(la.get("gate_lower_bound", -5))
        self.kda = {i - 1 for i in la["kda_layers"]}


def _lin(o, i):
    w = nn.Parameter(torch.empty(o, i))
    nn.init.normal_(w, std=1.0 / math.sqrt(i))
    return w


def _ones(n):
    return nn.Parameter(torch.ones(n))


# ------------------------------------------------------------------ KDA

def kda_recurrent(q, k, v, logdecay, beta):
    """Literal spec 6.3 recurrence. q,k,v,logdecay [B,T,H,d] (normalized q,k), beta [B,T,H]."""
    B, T, H, d = q.shape
    S = q.new_zeros(B, H, d, d)
    outs = []
    for t in range(T):
        S = S * torch.exp(logdecay[:, t])[..., None]
        kS = torch.einsum("bhk,bhkv->bhv", k[:, t], S)
        delta = beta[:, t][..., None] * (v[:, t] - kS)
        S = S + k[:, t][..., None] * delta[..., None, :]
        outs.append(torch.einsum("bhk,bhkv->bhv", q[:, t], S))
    return torch.stack(outs, 1)


def kda_chunked(q, k, v, logdecay, beta, C=8):
    """Same values as kda_recurrent, C tokens at a time.

    With G_t the cumulative log-decay inside a chunk and S0 the state before it,
    S_t = D_t S_{t-1} + k_t u_t^T where u_t = beta_t (v_t - S_{t-1}^T D_t k_t);
    unrolled, (I + diag(beta) A) U = diag(beta) (V - Kbar S0) with
    A[t,s] = sum_j k_t,j k_s,j exp(G_t,j - G_s,j) (s < t), Kbar_t = exp(G_t) * k_t,
    and o_t = S0^T (exp(G_t) q_t) + sum_{s<=t} u_s sum_j q_t,j k_s,j exp(G_t,j - G_s,j).
    exp(G_t - G_s) is factored as exp(G_t) exp(-G_s): with log-decay > -5 per
    token and C = 8 both factors stay inside f32's normal range (|G| < 40)."""
    B, T, H, d = q.shape
    pad = (-T) % C
    if pad:
        z = lambda x: F.pad(x, (0, 0, 0, 0, 0, pad))  # noqa: E731
        q, k, v, logdecay = z(q), z(k), z(v), z(logdecay)
        beta = F.pad(beta, (0, 0, 0, pad))
    n = q.shape[1] // C
    r = lambda x: x.reshape(B, n, C, H, -1).permute(1, 0, 3, 2, 4)  # noqa: E731  [n,B,H,C,d]
    q, k, v, g = r(q), r(k), r(v), r(logdecay)
    beta = beta.reshape(B, n, C, H).permute(1, 0, 3, 2)[..., None]  # [n,B,H,C,1]
    G = g.cumsum(-2)
    eG, enG = torch.exp(G), torch.exp(-G)
    kin = k * enG
    low = torch.tril(torch.ones(C, C, dtype=q.dtype), -1)
    A = ((k * eG) @ kin.transpose(-1, -2)) * low
    Aqk = ((q * eG) @ kin.transpose(-1, -2)) * (low + torch.eye(C, dtype=q.dtype))
    Lmat = torch.eye(C, dtype=q.dtype) + beta * A
    kend = k * torch.exp(G[..., -1:, :] - G)  # decay from s to the chunk end
    S = q.new_zeros(B, H, d, d)
    outs = []
    for c in range(n):
        rhs = beta[c] * (v[c] - (eG[c] * k[c]) @ S)
        U = torch.linalg.solve_triangular(Lmat[c], rhs, upper=False, unitriangular=True)
        outs.append((eG[c] * q[c]) @ S + Aqk[c] @ U)
        S = eG[c][..., -1, :, None] * S + kend[c].transpose(-1, -2) @ U
    o = torch.stack(outs, 0).permute(1, 0, 3, 2, 4).reshape(B, n * C, H, d)
    return o[:, :T]


class KDA(nn.Module):
    def __init__(self, c):
        super().__init__()
        P = c.Hk * c.d
        self.c = c
        for x in ("q", "k", "v", "g"):
            setattr(self, f"{x}_proj", _lin(P, c.D))
        self.o_proj = _lin(c.D, P)
        self.f_a_proj, self.f_b_proj, self.b_proj = _lin(c.d, c.D), _lin(P, c.d), _lin(c.Hk, c.D)
        self.dt_bias = nn.Parameter(torch.empty(P).uniform_(-3.0, 0.0))
        a = torch.zeros(c.d)
        a[:c.Hk] = torch.linspace(-1.0, 0.5, c.Hk)
        self.A_log = nn.Parameter(a)
        self.o_norm = _ones(c.d)
        for x in ("q", "k", "v"):
            w = torch.randn(P, 1, c.K) * 0.1
            w[:, :, -1] += 1.0
            setattr(self, f"{x}_conv1d", nn.Parameter(w))

    def forward(self, x, recurrent=False):
        c = self.c
        B, T, _ = x.shape
        P = c.Hk * c.d

        def conv(w, y):  # causal depthwise, tap 0 = oldest
            return F.silu(F.conv1d(F.pad(y.transpose(1, 2), (c.K - 1, 0)), w, groups=P).transpose(1, 2))

        q = conv(self.q_conv1d, x @ self.q_proj.T).reshape(B, T, c.Hk, c.d)
        k = conv(self.k_conv1d, x @ self.k_proj.T).reshape(B, T, c.Hk, c.d)
        v = conv(self.v_conv1d, x @ self.v_proj.T).reshape(B, T, c.Hk, c.d)
        q = q / torch.sqrt(q.pow(2).sum(-1, keepdim=True) + 1e-6) * c.d ** -0.5
        k = k / torch.sqrt(k.pow(2).sum(-1, keepdim=True) + 1e-6)
        z = ((x @ self.f_a_proj.T) @ self.f_b_proj.T + self.dt_bias).reshape(B, T, c.Hk, c.d)
        A = torch.exp(self.A_log[:c.Hk])[:, None]
        logdecay = c.gmin * torch.sigmoid(A * z)
        beta = torch.sigmoid(x @ self.b_proj.T)
        o = (kda_recurrent if recurrent else kda_chunked)(q, k, v, logdecay, beta)
        o = rms_norm(o, self.o_norm, c.eps) * torch.sigmoid(x @ self.g_proj.T).reshape(B, T, c.Hk, c.d)
        return o.reshape(B, T, P) @ self.o_proj.T


# ------------------------------------------------------------------ MLA

class MLA(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        qk = c.nope + c.rope
        self.q_a_proj, self.q_a_layernorm = _lin(c.q_lora, c.D), _ones(c.q_lora)
        self.q_b_proj = _lin(c.H * qk, c.q_lora)
        self.kv_a_proj_with_mqa, self.kv_a_layernorm = _lin(c.kv_lora + c.rope, c.D), _ones(c.kv_lora)
        self.kv_b_proj = _lin(c.H * (c.nope + c.vdim), c.kv_lora)
        self.o_proj, self.g_proj = _lin(c.D, c.H * c.vdim), _lin(c.H * c.vdim, c.D)

    def forward(self, x, recurrent=False):
        c = self.c
        B, T, _ = x.shape
        Q = (rms_norm(x @ self.q_a_proj.T, self.q_a_layernorm, c.eps) @ self.q_b_proj.T)
        Q = Q.reshape(B, T, c.H, c.nope + c.rope)
        ckv = x @ self.kv_a_proj_with_mqa.T
        lat = rms_norm(ckv[..., :c.kv_lora], self.kv_a_layernorm, c.eps)
        kr = ckv[..., c.kv_lora:]
        kv = (lat @ self.kv_b_proj.T).reshape(B, T, c.H, c.nope + c.vdim)
        kn, v = kv[..., :c.nope], kv[..., c.nope:]
        s = torch.einsum("bthd,bshd->bhts", Q[..., :c.nope], kn) + \
            torch.einsum("bthd,bsd->bhts", Q[..., c.nope:], kr)
        s = s / math.sqrt(c.nope + c.rope)
        s = s.masked_fill(~torch.tril(torch.ones(T, T, dtype=torch.bool)), -math.inf)
        ctx = torch.einsum("bhts,bshd->bthd", torch.softmax(s, -1), v).reshape(B, T, c.H * c.vdim)
        return (ctx * torch.sigmoid(x @ self.g_proj.T)) @ self.o_proj.T


# ------------------------------------------------------------------ MLPs

class DenseMLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.gate_proj, self.up_proj = _lin(c.dense_inter, c.D), _lin(c.dense_inter, c.D)
        self.down_proj = _lin(c.D, c.dense_inter)

    def forward(self, x):
        return situ_glu(x @ self.gate_proj.T, x @ self.up_proj.T, self.c.b1, self.c.b2) @ self.down_proj.T


class Expert(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.w1, self.w3, self.w2 = _lin(c.Mi, c.Z), _lin(c.Mi, c.Z), _lin(c.Z, c.Mi)


class Shared(DenseMLP):
    def __init__(self, c):
        nn.Module.__init__(self)
        self.c = c
        self.gate_proj, self.up_proj = _lin(c.Ish, c.D), _lin(c.Ish, c.D)
        self.down_proj = _lin(c.D, c.Ish)


class Gate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(c.E, c.D) * (1.0 / math.sqrt(c.D)))
        self.register_buffer("e_score_correction_bias", torch.zeros(c.E))


class LatentMoE(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.qat = False
        self.gate = Gate(c)
        self.routed_expert_down_proj, self.routed_expert_up_proj = _lin(c.Z, c.D), _lin(c.D, c.Z)
        self.routed_expert_norm = _ones(c.Z)
        self.shared_experts = Shared(c)
        self.experts = nn.ModuleList(Expert(c) for _ in range(c.E))
        self.load = None  # tokens per expert in the last forward (for bias balancing)

    def expert_weights(self, e):
        ex = self.experts[e]
        f = fake_mxfp4 if self.qat else (lambda w: w)
        return f(ex.w1), f(ex.w2), f(ex.w3)

    def forward(self, x):
        c = self.c
        shp = x.shape
        xf = x.reshape(-1, c.D)
        s = torch.sigmoid(xf @ self.gate.weight.T)
        sel = torch.topk(s.detach() + self.gate.e_score_correction_bias, c.topk, dim=-1, sorted=True).indices
        ws = s.gather(1, sel)
        ws = ws / (ws.sum(-1, keepdim=True) + 1e-20)
        z = xf @ self.routed_expert_down_proj.T
        u = torch.zeros(xf.shape[0], c.Z, dtype=x.dtype)
        load = torch.zeros(c.E)
        for e in range(c.E):
            tok, slot = torch.nonzero(sel == e, as_tuple=True)
            load[e] = tok.numel()
            if tok.numel() == 0:
                continue
            w1, w2, w3 = self.expert_weights(e)
            ze = z[tok]
            h = situ_glu(ze @ w1.T, ze @ w3.T, c.b1, c.b2) @ w2.T
            u = u.index_add(0, tok, h * ws[tok, slot][:, None])
        self.load = load
        y = rms_norm(u, self.routed_expert_norm, c.eps) @ self.routed_expert_up_proj.T
        return (y + self.shared_experts(xf)).reshape(shp)


# ------------------------------------------------------------------ model

class AttnResScorer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.norm, self.proj = _ones(c.D), nn.Parameter(torch.zeros(1, c.D))


def attn_res_mix(prefix, snaps, norm_w, proj_w, eps):
    """Spec 6.2.1: softmax over candidates (snapshots, then prefix) of
    res_proj . RMSNorm(v; res_norm); the raw candidates are mixed."""
    V = torch.stack(list(snaps) + [prefix], 0)
    w = (norm_w * proj_w[0])
    score = (V * w).sum(-1) / torch.sqrt(V.pow(2).mean(-1) + eps)
    p = torch.softmax(score, 0)
    return (p[..., None] * V).sum(0)


class Layer(nn.Module):
    def __init__(self, c, i):
        super().__init__()
        self.i = i
        self.input_layernorm, self.post_attention_layernorm = _ones(c.D), _ones(c.D)
        self.self_attention_res_norm, self.mlp_res_norm = _ones(c.D), _ones(c.D)
        self.self_attention_res_proj = nn.Parameter(torch.zeros(1, c.D))
        self.mlp_res_proj = nn.Parameter(torch.zeros(1, c.D))
        self.self_attn = KDA(c) if i in c.kda else MLA(c)
        if i < c.first_dense:
            self.mlp = DenseMLP(c)
        else:
            self.block_sparse_moe = LatentMoE(c)


class Inner(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c.V, c.D)
        nn.init.normal_(self.embed_tokens.weight, std=1.0)
        self.layers = nn.ModuleList(Layer(c, i) for i in range(c.L))
        self.norm = _ones(c.D)
        self.output_attn_res_norm = _ones(c.D)
        self.output_attn_res_proj = nn.Parameter(torch.zeros(1, c.D))


class K3Mini(nn.Module):
    def __init__(self, tc):
        super().__init__()
        self.c = c = Cfg(tc)
        self.model = Inner(c)
        self.lm_head = _lin(c.V, c.D)
        with torch.no_grad():
            self.lm_head.mul_(0.5)

    def moe_layers(self):
        return [ly.block_sparse_moe for ly in self.model.layers if hasattr(ly, "block_sparse_moe")]

    def set_qat(self, on):
        for m in self.moe_layers():
            m.qat = on

    def forward(self, ids, recurrent=False):
        """ids [B, T] -> logits [B, T, V] (spec 6.1-6.7, AttnRes per position)."""
        c = self.c
        hidden = self.model.embed_tokens(ids)
        snaps = []
        for ly in self.model.layers:
            prefix = hidden
            x_attn = attn_res_mix(prefix, snaps, ly.self_attention_res_norm, ly.self_attention_res_proj,
                                  c.eps) if snaps else hidden
            reset = ly.i % c.block == 0
            if reset:
                snaps.append(prefix)
            a = ly.self_attn(rms_norm(x_attn, ly.input_layernorm, c.eps), recurrent=recurrent)
            prefix = a if reset else prefix + a
            x_mlp = attn_res_mix(prefix, snaps, ly.mlp_res_norm, ly.mlp_res_proj, c.eps)
            mlp = ly.mlp if ly.i < c.first_dense else ly.block_sparse_moe
            prefix = prefix + mlp(rms_norm(x_mlp, ly.post_attention_layernorm, c.eps))
            hidden = prefix
        x_out = attn_res_mix(hidden, snaps, self.model.output_attn_res_norm, self.model.output_attn_res_proj,
                             c.eps)
        return rms_norm(x_out, self.model.norm, c.eps) @ self.lm_head.T
