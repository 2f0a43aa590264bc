#!/usr/bin/python3
"""Test helpers for synth_snapshot_test.py: a minimal safetensors reader and a
small Python repacker that writes fake k3 containers (optionally broken).

Written from the spec independently of scripts/k3_container_check.py: the
quantizers loop per row / per group instead of vectorising, so a shared
mistake in the two is unlikely.
"""

import hashlib
import json
import os
import shutil
import struct

import numpy as np

PRE = "language_model."


def read_st(path):
    """Minimal independent safetensors reader: (n, header list in file order, data bytes)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    hdr = json.loads(raw[8:8 + n].decode("utf-8"))
    return n, raw[8:8 + n], hdr, raw[8 + n:]


def tensor(hdr, data, name, dtype):
    b, e = hdr[name]["data_offsets"]
    return np.frombuffer(data[b:e], dtype=dtype)


def bf16(u16):
    return (u16.astype(np.uint32) << 16).view(np.float32)


def text_cfg(snap):
    with open(os.path.join(snap, "config.json")) as f:
        root = json.load(f)
    return root, root["text_config"]


def classify(name, kda0):
    if name.startswith(("vision_tower", "mm_projector")):
        return "skip"
    n = name[len(PRE):] if name.startswith(PRE) else name
    if ".block_sparse_moe.experts." in n:
        return "expert"
    if n == "lm_head.weight":
        return "head"
    p = n.split(".")
    li = int(p[2]) if len(p) > 3 and p[1] == "layers" else -1
    if ".self_attn." in n and n.endswith(".weight"):
        if p[-2] in ("q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj"):
            return "mla"
        if p[-2] in ("q_proj", "k_proj", "v_proj"):
            return "bits"
        if p[-2] in ("o_proj", "g_proj"):
            return "bits" if li in kda0 else "mla"
        return "pass"
    for suf in ("routed_expert_down_proj.weight", "routed_expert_up_proj.weight", "shared_experts.gate_proj.weight",
                "shared_experts.up_proj.weight", "shared_experts.down_proj.weight", "mlp.gate_proj.weight",
                "mlp.up_proj.weight", "mlp.down_proj.weight"):
        if n.endswith(suf):
            return "bits"
    return "pass"


def q8_rows(w):
    q = np.empty(w.shape, np.int8)
    s = np.empty(w.shape[0], np.float32)
    for r in range(w.shape[0]):
        row = w[r]
        sc = np.float32(np.float32(np.abs(row).max()) / np.float32(127))
        sc = max(sc, np.float32(1e-20))
        inv = np.float32(1) / sc
        q[r] = np.minimum(np.maximum(np.rint(row * inv), -127), 127)
        s[r] = sc
    return q.tobytes(), s.tobytes()


def q4_groups(w):
    O, I = w.shape
    u = np.empty((O, I), np.uint8)
    s = np.empty((O, I // 64), np.float32)
    for r in range(O):
        for g in range(I // 64):
            grp = w[r, g * 64:(g + 1) * 64]
            sc = max(np.float32(np.float32(np.abs(grp).max()) / np.float32(7)), np.float32(1e-20))
            inv = np.float32(1) / sc
            u[r, g * 64:(g + 1) * 64] = np.minimum(np.maximum(np.rint(grp * inv), -8), 7) + 8
            s[r, g] = sc
    lo, hi = u[:, 0::2], u[:, 1::2]
    return (lo + hi * np.uint8(16)).tobytes(), s.tobytes()


def write_st(path, items, hole_after=None, metadata=None):
    """items: [(name, dtype, shape, bytes)] -> holeless spec 3.3 file (optionally broken)."""
    hdr, off = {}, 0
    if metadata:
        hdr["__metadata__"] = metadata
    for name, dt, shape, b in items:
        hdr[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(b)]}
        off += len(b) + (8 if name == hole_after else 0)
    js = json.dumps(hdr, separators=(",", ":")).encode()
    js += b" " * ((-(8 + len(js))) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(js)) + js)
        for name, _, _, b in items:
            f.write(b)
            if name == hole_after:
                f.write(b"\0" * 8)


def fake_repack(src, dst, bits, mla_bits=None, head_bits=None, swap_experts=False, keep_vision=False,
                drop_qs=False, hole=False, metadata=None, manifest=False):
    _, tc = text_cfg(src)
    kda0 = {k - 1 for k in tc["linear_attn_config"]["kda_layers"]}
    width = {"bits": bits, "mla": mla_bits or max(bits, 8), "head": head_bits or max(bits, 8)}
    total = tc["num_hidden_layers"] + 1
    os.makedirs(dst)
    weight_map, size = {}, 0
    for fn in sorted(f for f in os.listdir(src) if f.endswith(".safetensors")):
        num = int(fn[6:11])
        _, _, hdr, data = read_st(os.path.join(src, fn))
        hdr.pop("__metadata__", None)
        names = sorted(hdr, key=lambda n: hdr[n]["data_offsets"][0])
        plain, experts = [], []
        for n in names:
            c = classify(n, kda0)
            if c == "skip" and not keep_vision:
                continue
            b, e = hdr[n]["data_offsets"]
            raw = data[b:e]
            if c == "expert":
                k = n.split(".experts.")[1].split(".")
                experts.append(((int(k[0]), k[1], k[2]), (n, hdr[n]["dtype"], hdr[n]["shape"], raw)))
            elif c in ("pass", "skip") or width[c] >= 16:
                plain.append((n, hdr[n]["dtype"], hdr[n]["shape"], raw))
            else:
                O, I = hdr[n]["shape"]
                w = bf16(np.frombuffer(raw, np.uint16)).reshape(O, I)
                if width[c] <= 4 and I % 64 == 0:
                    q, s = q4_groups(w)
                    plain.append((n, "U8", [O, I // 2], q))
                    if not drop_qs:
                        plain.append((n + ".qs", "F32", [O, I // 64], s))
                else:
                    q, s = q8_rows(w)
                    plain.append((n, "U8", [O, I], q))
                    if not drop_qs:
                        plain.append((n + ".qs", "F32", [O], s))
        if not plain and not experts:
            continue
        exp = [x for _, x in sorted(experts, key=lambda t: t[0])]
        if swap_experts and len(exp) >= 12:
            exp[0:6], exp[6:12] = exp[6:12], exp[0:6]
        items = plain + exp
        out = f"model-{num:05d}-of-{total:06d}.safetensors"
        write_st(os.path.join(dst, out), items, hole_after=items[1][0] if hole else None, metadata=metadata)
        for n, _, _, b in items:
            weight_map[n] = out
            size += len(b)
    with open(os.path.join(dst, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": size}, "weight_map": weight_map}, f)
    for fn in ("config.json", "generation_config.json", "tokenizer_config.json", "tiktoken.model"):
        shutil.copyfile(os.path.join(src, fn), os.path.join(dst, fn))
    if manifest:
        write_manifest(src, dst, tc, width)


def sha(b):
    return hashlib.sha256(b).hexdigest()


def write_manifest(src, dst, tc, width):
    """k3-manifest.json as docs/CONTAINER.md describes it (format_version 1)."""
    with open(os.path.join(src, "config.json"), "rb") as f:
        cfg_sha = sha(f.read())
    src_by_num = {int(f[6:11]): f for f in os.listdir(src) if f.endswith(".safetensors")}
    shards = []
    for fn in sorted(f for f in os.listdir(dst) if f.endswith(".safetensors")):
        with open(os.path.join(dst, fn), "rb") as f:
            raw = f.read()
        n, _, hdr, _ = read_st(os.path.join(dst, fn))
        sfn = src_by_num[int(fn[6:11])]
        with open(os.path.join(src, sfn), "rb") as f:
            sraw = f.read()
        sn, _, shdr, sdata = read_st(os.path.join(src, sfn))
        experts = []
        for name, ent in hdr.items():
            if name.endswith(".w1.weight_packed"):
                p = name[len(PRE):].split(".")
                base = name[:-len("w1.weight_packed")]
                parts = [base + w + "." + k for w in ("w1", "w2", "w3") for k in ("weight_packed", "weight_scale")]
                src_bytes = b"".join(sdata[shdr[x]["data_offsets"][0]:shdr[x]["data_offsets"][1]] for x in parts)
                experts.append({"layer": int(p[2]), "id": int(p[5]), "offset": 8 + n + ent["data_offsets"][0],
                                "length": len(src_bytes), "sha256": sha(src_bytes)})
        experts.sort(key=lambda x: (x["layer"], x["id"]))
        shards.append({"file": fn, "size": len(raw), "sha256": sha(raw), "data_offset": 8 + n,
                       "tensors": len(hdr), "source": {"file": sfn, "size": len(sraw),
                                                       "header_sha256": sha(sraw[:8 + sn])},
                       "experts": experts})
    files = []
    for fn in sorted(("config.json", "generation_config.json", "tokenizer_config.json", "tiktoken.model")):
        with open(os.path.join(dst, fn), "rb") as f:
            b = f.read()
        files.append({"file": fn, "size": len(b), "sha256": sha(b)})
    man = {"format": "k3-container", "format_version": 1, "tool": "fake-repack", "tool_version": "0",
           "settings": {"bits": width["bits"], "mla_bits": width["mla"], "head_bits": width["head"]},
           "source": {"config_sha256": cfg_sha, "prefix": PRE, "num_hidden_layers": tc["num_hidden_layers"],
                      "num_experts": tc["num_experts"]},
           "shards": shards, "files": files}
    with open(os.path.join(dst, "k3-manifest.json"), "w") as f:
        json.dump(man, f)
