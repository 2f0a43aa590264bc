#!/usr/bin/python3
"""Generate a synthetic, K3-shaped Hugging Face snapshot (the project's test data).

    k3_synth.py --preset tiny|small|medium|bench --seed N --out DIR [--no-prefix]

Layout mirrors the real Kimi K3 snapshot (spec sections 1-4 and 7.1):
config.json with `text_config`, generation_config.json, tiktoken.model (a
rank-BPE vocabulary trained here on embedded text), tokenizer_config.json
with the 16 named K3 added tokens, model.safetensors.index.json and shards
`model-NNNNN-of-TTTTTT.safetensors`: shard n holds layer n-1, then one
embed/head shard, then two vision shards. Inside a layer shard the tensors
are ordered like HF safetensors writes them (F32 first, then BF16, then U8,
each by name), so routed experts appear in string order of their names
(experts.0, experts.1, experts.10, ...), six tensors back-to-back.

Same preset + seed + prefix flag -> byte-identical output. Tensors are
streamed to disk one at a time, so `medium` never sits in RAM.
"""

import argparse
import json
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import k3_tok_corpus  # noqa: E402
import k3_tok_train  # noqa: E402
from k3_synth_config import root_config, tokenizer_config  # noqa: E402

GENERATOR_VERSION = 1

# Dimensions per preset. Every K3 structural feature is present in each:
# several KDA and MLA layers (MLA = every 4th plus the last, 1-based), dense
# layer 0, >= 2 AttnRes blocks, top-k < experts, latent < hidden, shared experts.
PRESETS = {
    "tiny": dict(
        hidden=128, layers=8, full_attn=[4, 8], block=3, dense_inter=96,  # 96 % 64 != 0: int4 fallback
        experts=16, topk=4, moe_inter=64, latent=64, shared=2,
        kda_heads=2, kda_dim=64, conv=4,
        mla_heads=2, q_lora=64, kv_lora=64, nope=32, rope=32, v_dim=32,
        num_base=512, vision_width=32, vision_blocks=1),
    "small": dict(
        hidden=256, layers=13, full_attn=[4, 8, 12, 13], block=4, dense_inter=512,
        experts=896, topk=8, moe_inter=128, latent=128, shared=2,
        kda_heads=4, kda_dim=64, conv=4,
        mla_heads=4, q_lora=128, kv_lora=128, nope=32, rope=32, v_dim=32,
        num_base=1024, vision_width=64, vision_blocks=2),
    "medium": dict(
        hidden=768, layers=17, full_attn=[4, 8, 12, 16, 17], block=4, dense_inter=1536,
        experts=608, topk=16, moe_inter=512, latent=384, shared=2,
        kda_heads=6, kda_dim=128, conv=4,
        mla_heads=8, q_lora=256, kv_lora=256, nope=64, rope=32, v_dim=64,
        num_base=2048, vision_width=128, vision_blocks=2),
    # K3's real per-tensor sizes for the disk benchmarks (issue 22): hidden
    # 7168, KDA 96 x 128 (q/k/v/g/o 176 MB each), MLA (96 heads, ranks
    # 1536/512, 128+64/128 head dims), latent 3584, expert inner 3072 (each
    # expert 17,547,264 bytes of MXFP4, as K3's), shared 2 x 3072. Shrunk so
    # the snapshot is ~7.5 GB: 4 layers (K3: 93; KDA, KDA, MLA, MLA: two of
    # each, as every preset has), 3 x 64 = 192 routed experts (K3: 92 x 896),
    # the dense layer-0 MLP width 6144 (K3: 33792), the vocabulary (embed /
    # lm_head rows 2304, K3: 163840) and the vision tower (dropped by the
    # repacker). Experts are 45 % of the bytes (K3: ~96 %).
    "bench": dict(
        hidden=7168, layers=4, full_attn=[3, 4], block=2, dense_inter=6144,
        experts=64, topk=16, moe_inter=3072, latent=3584, shared=2,
        kda_heads=96, kda_dim=128, conv=4,
        mla_heads=96, q_lora=1536, kv_lora=512, nope=128, rope=64, v_dim=128,
        num_base=2048, vision_width=128, vision_blocks=2),
}

E2M1_MS = 68.5 / 8.0  # mean square of the e2m1 value table over uniform random codes


# ------------------------------------------------------------- tensor values

def to_bf16(a):
    """float32 array -> bf16 bit patterns (uint16), round to nearest even."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    r = (u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    return r.astype(np.uint16)


def normal(rng, shape, std, mean=0.0):
    x = rng.standard_normal(math.prod(shape), dtype=np.float32)
    x *= np.float32(std)
    if mean:
        x += np.float32(mean)
    return x


class T:
    """One planned tensor: name, dtype, shape and a value recipe."""
    __slots__ = ("name", "dtype", "shape", "kind", "arg", "numel", "size")

    def __init__(self, name, dtype, shape, kind, arg=None):
        self.name, self.dtype, self.shape, self.kind, self.arg = name, dtype, list(shape), kind, arg
        self.numel = math.prod(self.shape)
        self.size = self.numel * {"BF16": 2, "F32": 4, "U8": 1}[dtype]

    def nbytes(self):
        return self.size


def expert_scale_base(fan_in):
    # Dequantised std = sqrt(E2M1_MS * E[4^j]) * 2^(s-127) with j in {-1,0,0,1}.
    target = 1.0 / math.sqrt(fan_in)
    jitter_ms = (0.25 + 1.0 + 1.0 + 4.0) / 4.0
    return 127 + int(round(math.log2(target / math.sqrt(E2M1_MS * jitter_ms))))


def produce(t, rng):
    """Bytes of tensor t, drawn from rng (consumed in shard data order)."""
    n = t.numel
    k = t.kind
    if k == "packed":  # random e2m1 codes, both nibbles uniform
        raw = rng.bit_generator.random_raw((n + 7) // 8)
        return raw.view(np.uint8)[:n].tobytes()
    if k == "scale":  # valid ue8m0 around the base exponent, never 0 or 255
        table = np.array([t.arg - 1, t.arg, t.arg, t.arg + 1], np.int32).clip(1, 254).astype(np.uint8)
        return table[rng.integers(0, 4, n, dtype=np.uint8)].tobytes()
    if k == "linear":
        x = normal(rng, t.shape, 1.0 / math.sqrt(t.shape[-1]))
    elif k == "norm":
        x = normal(rng, t.shape, 0.05, 1.0)
    elif k == "embed":
        x = normal(rng, t.shape, 1.0)
    elif k == "res_proj":  # AttnRes scores ~ N(0, 0.5^2): mixes stay soft
        x = normal(rng, t.shape, 0.5 / math.sqrt(t.shape[-1]))
    elif k == "router":  # logits ~ N(0, 1.5^2) -> varied sigmoid scores
        x = normal(rng, t.shape, 1.5 / math.sqrt(t.shape[-1]))
    elif k == "score_bias":
        x = normal(rng, t.shape, 0.1)
    elif k == "a_log":  # first Hk entries small, padding exactly 0 (spec 2.4)
        x = np.zeros(n, np.float32)
        x[:t.arg] = rng.uniform(-1.0, 0.5, t.arg).astype(np.float32)
    elif k == "dt_bias":  # decay mostly between 0.3 and 0.95 per token
        x = rng.uniform(-3.0, 0.0, n).astype(np.float32)
    elif k == "conv":  # taps ~ N(0, 1/K) plus a stronger newest tap
        x = normal(rng, t.shape, 1.0 / math.sqrt(t.shape[-1])).reshape(-1, t.shape[-1])
        x[:, -1] += np.float32(1.0)
        x = x.reshape(-1)
    elif k == "conv_weight":
        x = normal(rng, t.shape, 0.02)
    else:
        raise ValueError(f"unknown tensor kind {k} for {t.name}")
    if t.dtype == "F32":
        return x.astype(np.float32).tobytes()
    return to_bf16(x).tobytes()


# --------------------------------------------------------------- tensor plan

_DTYPE_RANK = {"F32": 0, "BF16": 1, "U8": 2}  # HF writer: larger dtypes first


def layer_tensors(p, i, pre):
    D = p["hidden"]
    L = f"{pre}model.layers.{i}."
    ts = [
        T(L + "input_layernorm.weight", "BF16", [D], "norm"),
        T(L + "post_attention_layernorm.weight", "BF16", [D], "norm"),
        T(L + "self_attention_res_norm.weight", "BF16", [D], "norm"),
        T(L + "self_attention_res_proj.weight", "BF16", [1, D], "res_proj"),
        T(L + "mlp_res_norm.weight", "BF16", [D], "norm"),
        T(L + "mlp_res_proj.weight", "BF16", [1, D], "res_proj"),
    ]
    a = L + "self_attn."
    if (i + 1) in p["full_attn"]:  # MLA
        H, qk, vd = p["mla_heads"], p["nope"] + p["rope"], p["v_dim"]
        ts += [
            T(a + "q_a_proj.weight", "BF16", [p["q_lora"], D], "linear"),
            T(a + "q_a_layernorm.weight", "BF16", [p["q_lora"]], "norm"),
            T(a + "q_b_proj.weight", "BF16", [H * qk, p["q_lora"]], "linear"),
            T(a + "kv_a_proj_with_mqa.weight", "BF16", [p["kv_lora"] + p["rope"], D], "linear"),
            T(a + "kv_a_layernorm.weight", "BF16", [p["kv_lora"]], "norm"),
            T(a + "kv_b_proj.weight", "BF16", [H * (p["nope"] + vd), p["kv_lora"]], "linear"),
            T(a + "o_proj.weight", "BF16", [D, H * vd], "linear"),
            T(a + "g_proj.weight", "BF16", [H * vd, D], "linear"),
        ]
    else:  # KDA
        Hk, d, K = p["kda_heads"], p["kda_dim"], p["conv"]
        P = Hk * d
        ts += [T(a + f"{x}_proj.weight", "BF16", [P, D], "linear") for x in ("q", "k", "v", "g")]
        ts += [
            T(a + "o_proj.weight", "BF16", [D, P], "linear"),
            T(a + "f_a_proj.weight", "BF16", [d, D], "linear"),
            T(a + "f_b_proj.weight", "BF16", [P, d], "linear"),
            T(a + "b_proj.weight", "BF16", [Hk, D], "linear"),
            T(a + "dt_bias", "F32", [P], "dt_bias"),
            T(a + "A_log", "F32", [d], "a_log", Hk),
            T(a + "o_norm.weight", "F32", [d], "norm"),
        ]
        ts += [T(a + f"{x}_conv1d.weight", "F32", [P, 1, K], "conv") for x in ("q", "k", "v")]
    if i < 1:  # first_k_dense_replace = 1
        I = p["dense_inter"]
        ts += [
            T(L + "mlp.gate_proj.weight", "BF16", [I, D], "linear"),
            T(L + "mlp.up_proj.weight", "BF16", [I, D], "linear"),
            T(L + "mlp.down_proj.weight", "BF16", [D, I], "linear"),
        ]
    else:
        m = L + "block_sparse_moe."
        E, Z, Mi = p["experts"], p["latent"], p["moe_inter"]
        Ish = Mi * p["shared"]
        ts += [
            T(m + "gate.weight", "BF16", [E, D], "router"),
            T(m + "gate.e_score_correction_bias", "F32", [E], "score_bias"),
            T(m + "routed_expert_down_proj.weight", "BF16", [Z, D], "linear"),
            T(m + "routed_expert_up_proj.weight", "BF16", [D, Z], "linear"),
            T(m + "routed_expert_norm.weight", "BF16", [Z], "norm"),
            T(m + "shared_experts.gate_proj.weight", "BF16", [Ish, D], "linear"),
            T(m + "shared_experts.up_proj.weight", "BF16", [Ish, D], "linear"),
            T(m + "shared_experts.down_proj.weight", "BF16", [D, Ish], "linear"),
        ]
        s13, s2 = expert_scale_base(Z), expert_scale_base(Mi)
        for e in range(E):
            x = f"{m}experts.{e}."
            ts += [
                T(x + "w1.weight_packed", "U8", [Mi, Z // 2], "packed"),
                T(x + "w1.weight_scale", "U8", [Mi, Z // 32], "scale", s13),
                T(x + "w2.weight_packed", "U8", [Z, Mi // 2], "packed"),
                T(x + "w2.weight_scale", "U8", [Z, Mi // 32], "scale", s2),
                T(x + "w3.weight_packed", "U8", [Mi, Z // 2], "packed"),
                T(x + "w3.weight_scale", "U8", [Mi, Z // 32], "scale", s13),
            ]
    return ts


def global_tensors(p, pre):
    D, V = p["hidden"], p["num_base"] + 256
    return [
        T(pre + "model.embed_tokens.weight", "BF16", [V, D], "embed"),
        T(pre + "model.norm.weight", "BF16", [D], "norm"),
        T(pre + "model.output_attn_res_norm.weight", "BF16", [D], "norm"),
        T(pre + "model.output_attn_res_proj.weight", "BF16", [1, D], "res_proj"),
        T(pre + "lm_head.weight", "BF16", [V, D], "linear"),
    ]


def vision_tensors(p):
    D, W = p["hidden"], p["vision_width"]
    proj = [
        T("mm_projector.post_norm.weight", "BF16", [D], "norm"),
        T("mm_projector.proj.0.weight", "BF16", [4 * W, 4 * W], "linear"),
        T("mm_projector.proj.2.weight", "BF16", [D, 4 * W], "linear"),
    ]
    v = "vision_tower."
    tower = [
        T(v + "patch_embed.proj.weight", "BF16", [W, 3, 14, 14], "conv_weight"),
        T(v + "patch_embed.pos_emb.weight", "BF16", [8, 8, W], "conv_weight"),
        T(v + "encoder.final_layernorm.weight", "BF16", [W], "norm"),
    ]
    for b in range(p["vision_blocks"]):
        blk = f"{v}encoder.blocks.{b}."
        tower += [
            T(blk + "wqkv.weight", "BF16", [3 * W, W], "linear"),
            T(blk + "wo.weight", "BF16", [W, W], "linear"),
            T(blk + "mlp.fc0.weight", "BF16", [4 * W, W], "linear"),
            T(blk + "mlp.fc1.weight", "BF16", [W, 4 * W], "linear"),
            T(blk + "norm0.weight", "BF16", [W], "norm"),
            T(blk + "norm1.weight", "BF16", [W], "norm"),
        ]
    return proj, tower


def plan_shards(p, prefix):
    pre = "language_model." if prefix else ""
    groups = [layer_tensors(p, i, pre) for i in range(p["layers"])]
    groups.append(global_tensors(p, pre))
    groups.extend(vision_tensors(p))
    total = len(groups)
    shards = []
    for n, ts in enumerate(groups, start=1):
        ts = sorted(ts, key=lambda t: (_DTYPE_RANK[t.dtype], t.name))
        shards.append((f"model-{n:05d}-of-{total:06d}.safetensors", ts))
    return shards


# ------------------------------------------------------------------- writing

def header_bytes(ts):
    hdr = {"__metadata__": {"format": "pt"}}
    off = 0
    for t in ts:
        hdr[t.name] = {"dtype": t.dtype, "shape": t.shape, "data_offsets": [off, off + t.nbytes()]}
        off += t.nbytes()
    js = json.dumps(hdr, separators=(",", ":")).encode("ascii")
    js += b" " * ((-(8 + len(js))) % 8)
    return len(js).to_bytes(8, "little") + js, off


def write_shard(path, ts, seed, shard_no):
    head, size = header_bytes(ts)
    rng = np.random.Generator(np.random.SFC64(np.random.SeedSequence([seed, shard_no, 0x4B33])))
    tmp = path + ".tmp"
    written = 0
    with open(tmp, "wb", buffering=0) as f:
        f.write(head)
        for t in ts:
            b = produce(t, rng)
            if len(b) != t.nbytes():
                raise AssertionError(f"{t.name}: produced {len(b)} bytes, planned {t.nbytes()}")
            f.write(b)
            written += len(b)
    if written != size or os.path.getsize(tmp) != len(head) + size:
        raise AssertionError(f"{path}: size mismatch after writing")
    os.replace(tmp, path)
    return size


def dump_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, ensure_ascii=False)
        f.write("\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", required=True, choices=sorted(PRESETS))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    ap.add_argument("--prefix", dest="prefix", action="store_true", default=True,
                    help="names carry 'language_model.' like the real model (default)")
    ap.add_argument("--no-prefix", dest="prefix", action="store_false")
    ap.add_argument("--dry-run", action="store_true", help="print the size split and exit")
    args = ap.parse_args(argv)
    if args.seed < 0:
        ap.error("--seed must be >= 0")

    t0 = time.time()
    p = PRESETS[args.preset]
    shards = plan_shards(p, args.prefix)
    expert_bytes = sum(t.nbytes() for _, ts in shards for t in ts if ".experts." in t.name)
    total_bytes = sum(t.nbytes() for _, ts in shards for t in ts)
    if args.dry_run:
        print(f"{args.preset}: {len(shards)} shards, {total_bytes} tensor bytes, "
              f"experts {100.0 * expert_bytes / total_bytes:.1f}%")
        return 0

    os.makedirs(args.out, exist_ok=False)
    dump_json(os.path.join(args.out, "config.json"), root_config(p, args.preset, args.seed, GENERATOR_VERSION))
    dump_json(os.path.join(args.out, "generation_config.json"), {"temperature": 1.0, "top_p": 1.0})
    dump_json(os.path.join(args.out, "tokenizer_config.json"), tokenizer_config(p))
    tokens = k3_tok_train.train(k3_tok_corpus.CORPUS, p["num_base"])
    if len(tokens) != p["num_base"]:
        raise AssertionError("tokenizer training produced the wrong number of ranks")
    with open(os.path.join(args.out, "tiktoken.model"), "w", encoding="ascii") as f:
        f.write(k3_tok_train.tiktoken_text(tokens))

    weight_map = {}
    for n, (fname, ts) in enumerate(shards, start=1):
        write_shard(os.path.join(args.out, fname), ts, args.seed, n)
        for t in ts:
            weight_map[t.name] = fname
    index = {"metadata": {"total_size": total_bytes},
             "weight_map": {k: weight_map[k] for k in sorted(weight_map)}}
    dump_json(os.path.join(args.out, "model.safetensors.index.json"), index)
    print(f"k3_synth: {args.preset} seed {args.seed} -> {args.out}: {len(shards)} shards, "
          f"{total_bytes} tensor bytes (experts {100.0 * expert_bytes / total_bytes:.1f}%), "
          f"{time.time() - t0:.1f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
