#!/usr/bin/python3
"""scripts/bench_run's byte accounting and kernel bound, on a hand-made
container header (no build, no model run): every tensor lands in exactly one
weight format, the formats add up to the bytes per token, and the kernel
bound is the sum of each format's bytes over min(memory, its kernel's rate),
worked out here by hand."""
import importlib.machinery
import importlib.util
import os

SOURCE = os.environ.get("K3_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "../.."))


def load_bench_run():
    path = os.path.join(SOURCE, "scripts", "bench_run")
    loader = importlib.machinery.SourceFileLoader("bench_run", path)
    spec = importlib.util.spec_from_loader("bench_run", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def entry(dtype, shape, nbytes, at=[0]):
    e = {"dtype": dtype, "shape": shape, "data_offsets": [at[0], at[0] + nbytes]}
    at[0] += nbytes
    return e


P = "language_model.model."
TC = {"vocab_size": 100, "num_experts_per_token": 2, "num_hidden_layers": 2, "first_k_dense_replace": 1,
      "linear_attn_config": {"kda_layers": [1], "num_heads": 2, "head_dim": 4}}
TENSORS = {
    P + "embed_tokens.weight": entry("BF16", [100, 64], 100 * 64 * 2),  # one row a token: 128 bytes
    P + "norm.weight": entry("BF16", [64], 128),
    P + "layers.0.mlp.up_proj.weight": entry("U8", [256, 64], 256 * 64),  # int8 rows
    P + "layers.0.mlp.up_proj.weight.qs": entry("F32", [256], 1024),
    P + "layers.0.mlp.down_proj.weight": entry("U8", [64, 128], 64 * 128),  # int4-g64: 256 columns
    P + "layers.0.mlp.down_proj.weight.qs": entry("F32", [64, 4], 1024),
    P + "layers.0.self_attn_res_proj.weight": entry("BF16", [1, 64], 128),  # one row: memory speed
    P + "layers.1.self_attn.q_conv1d.weight": entry("F32", [64, 1, 4], 1024),
    P + "layers.1.block_sparse_moe.gate.weight": entry("BF16", [8, 64], 1024),  # the router, a BF16 matrix
}
for e in range(4):  # 4 experts of 3 matrices, 544 bytes each with scales
    for m in ("w1", "w2", "w3"):
        n = P + "layers.1.block_sparse_moe.experts.%d.%s." % (e, m)
        TENSORS[n + "weight_packed"] = entry("U8", [16, 32], 512)
        TENSORS[n + "weight_scale"] = entry("U8", [16, 2], 32)


def main():
    br = load_bench_run()
    dense, experts, _, per_expert = br.weight_bytes_per_token(TC, TENSORS)
    assert per_expert == 3 * 544, per_expert
    assert experts == 2 * 3 * 544, experts  # top-2 in the one MoE layer
    fmt = br.weight_bytes_per_format(TC, TENSORS, per_expert)
    want = {"MXFP4": 3264, "I8Row": 256 * 64 + 1024, "I4G64": 64 * 128 + 1024, "BF16": 1024,
            "other": 128 + 128 + 128 + 1024}
    assert fmt == want, fmt
    assert sum(fmt.values()) == dense + experts, (fmt, dense, experts)

    gb = 1e9
    rates = {"MXFP4": 10 * gb, "I8Row": 50 * gb, "I4G64": 20 * gb, "BF16": 40 * gb}
    bw = 30 * gb
    seconds = (3264 / (10 * gb) + 17408 / (30 * gb) + 9216 / (20 * gb) + 1024 / (30 * gb) + 1408 / (30 * gb))
    got = br.kernel_bound(fmt, rates, bw)
    assert abs(got - 1 / seconds) < 1e-6 * got, (got, 1 / seconds)
    # Kernels faster than memory everywhere: the bound is the roofline.
    fast = {k: 1000 * gb for k in rates}
    assert abs(br.kernel_bound(fmt, fast, bw) - bw / (dense + experts)) < 1e-6 * bw / (dense + experts)
    # A format without a measured kernel: no bound rather than a wrong one.
    assert br.kernel_bound(fmt, {"MXFP4": 10 * gb}, bw) is None
    print("bench_run bounds: ok")


if __name__ == "__main__":
    main()
