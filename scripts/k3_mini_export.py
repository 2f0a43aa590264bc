#!/usr/bin/python3
"""Export a trained k3-mini as a Hugging Face snapshot in the real K3 layout,
and load such a snapshot back into the PyTorch model.

    k3_mini_export.py --ckpt CKPT/model.pt --data DATA --out models/k3-mini [--seed 19]

Layout (config keys, tensor names with `language_model.`, dtypes, shard split,
HF tensor order with experts in name-string order, index, generation config)
comes from k3_synth's plan and writers, so k3-mini is laid out exactly like
the synthetic presets and the real checkpoint (spec 1-4). Values are the
trained ones: BF16 (round to nearest even) for the dense tensors, F32 where
the spec says (KDA A_log/dt_bias/conv/o_norm, router correction bias), MXFP4
codes + ue8m0 scales for the routed experts (the QAT grid, so dequantising
gives exactly the values trained with). Vision tensors are not part of the
text model: they are k3_synth's seeded random values, as in every preset.
"""

import argparse
import json
import os
import shutil
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import k3_mini_config  # noqa: E402
import k3_synth  # noqa: E402
import k3_synth_config  # noqa: E402
from k3_mini_model import K3Mini, mxfp4_codes, mxfp4_values  # noqa: E402

PREFIX = "language_model."
_EXPERT_PART = {"weight_packed", "weight_scale"}


def state_key(name, sd):
    """Snapshot tensor name -> (state-dict key, expert part or None)."""
    n = name[len(PREFIX):] if name.startswith(PREFIX) else name
    head, _, last = n.rpartition(".")
    if last in _EXPERT_PART:
        return head, last
    if n in sd:
        return n, None
    if n.endswith(".weight") and n[:-7] in sd:
        return n[:-7], None
    raise KeyError(f"no trained value for snapshot tensor {name}")


def pack_nibbles(codes):
    c = codes.numpy().astype(np.uint8)
    return (c[:, 0::2] | (c[:, 1::2] << 4)).astype(np.uint8)


def unpack_nibbles(packed):
    p = np.asarray(packed, np.uint8)
    out = np.empty((p.shape[0], p.shape[1] * 2), np.uint8)
    out[:, 0::2], out[:, 1::2] = p & 0xF, p >> 4
    return torch.from_numpy(out)


def tensor_bytes(t, sd, cache):
    key, part = state_key(t.name, sd)
    w = sd[key].detach().float()
    if part is not None:
        if key not in cache:
            cache.clear()
            cache[key] = mxfp4_codes(w)
        codes, scale = cache[key]
        b = pack_nibbles(codes).tobytes() if part == "weight_packed" else scale.numpy().tobytes()
    elif t.dtype == "F32":
        b = w.numpy().astype(np.float32).tobytes()
    else:
        b = k3_synth.to_bf16(w.numpy()).tobytes()
    if len(b) != t.nbytes():
        raise AssertionError(f"{t.name}: {len(b)} bytes for planned {t.shape} {t.dtype}")
    return b


def write_shard(path, ts, sd, seed, shard_no):
    head, size = k3_synth.header_bytes(ts)
    rng = np.random.Generator(np.random.SFC64(np.random.SeedSequence([seed, shard_no, 0x4B33])))
    tmp = path + ".tmp"
    cache = {}
    with open(tmp, "wb") as f:
        f.write(head)
        for t in ts:
            f.write(k3_synth.produce(t, rng) if t.name.startswith(("vision_tower", "mm_projector"))
                    else tensor_bytes(t, sd, cache))
    if os.path.getsize(tmp) != len(head) + size:
        raise AssertionError(f"{path}: size mismatch")
    os.replace(tmp, path)


def root_config(seed):
    cfg = k3_synth_config.root_config(k3_mini_config.PRESET, "k3-mini", seed, 1)
    del cfg["k3_synth"]  # the real config has no generator record
    return cfg


def export(sd, data_dir, out, seed):
    p = k3_mini_config.PRESET
    os.makedirs(out, exist_ok=True)
    k3_synth.dump_json(os.path.join(out, "config.json"), root_config(seed))
    k3_synth.dump_json(os.path.join(out, "generation_config.json"), {"temperature": 1.0, "top_p": 1.0})
    for f in ("tiktoken.model", "tokenizer_config.json"):
        shutil.copyfile(os.path.join(data_dir, f), os.path.join(out, f))
    shards = k3_synth.plan_shards(p, True)
    weight_map, total = {}, 0
    for n, (fname, ts) in enumerate(shards, start=1):
        write_shard(os.path.join(out, fname), ts, sd, seed, n)
        for t in ts:
            weight_map[t.name] = fname
            total += t.nbytes()
    k3_synth.dump_json(os.path.join(out, "model.safetensors.index.json"),
                       {"metadata": {"total_size": total},
                        "weight_map": {k: weight_map[k] for k in sorted(weight_map)}})


# ------------------------------------------------------------------ loading back

def read_safetensors(path):
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        hdr = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, e in hdr.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        raw = np.frombuffer(data[b:end], np.uint8)
        if e["dtype"] == "BF16":
            a = (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
        elif e["dtype"] == "F32":
            a = raw.view(np.float32)
        else:
            a = raw
        out[name] = a.reshape(e["shape"])
    return out


def load_model(snapshot):
    """K3Mini holding exactly the snapshot's values (BF16 -> f32, MXFP4 dequantised)."""
    with open(os.path.join(snapshot, "config.json")) as f:
        model = K3Mini(json.load(f)["text_config"])
    sd = model.state_dict()
    tensors = {}
    for fn in sorted(os.listdir(snapshot)):
        if fn.endswith(".safetensors"):
            tensors.update(read_safetensors(os.path.join(snapshot, fn)))
    new = {}
    for name, a in tensors.items():
        if name.startswith(("vision_tower", "mm_projector")) or name.endswith("weight_scale"):
            continue
        key, part = state_key(name, sd)
        if part == "weight_packed":
            scale = torch.from_numpy(tensors[name[:-len("packed")] + "scale"].copy())
            new[key] = mxfp4_values(unpack_nibbles(a), scale)
        else:
            new[key] = torch.from_numpy(a.astype(np.float32).copy()).reshape(sd[key].shape)
    missing = set(sd) - set(new)
    if missing:
        raise KeyError(f"{snapshot}: snapshot lacks {sorted(missing)[:3]}")
    model.load_state_dict(new)
    model.set_qat(False)
    return model.eval()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=19)
    a = ap.parse_args(argv)
    sd = torch.load(a.ckpt, map_location="cpu")
    export(sd, a.data, a.out, a.seed)
    total = sum(os.path.getsize(os.path.join(a.out, f)) for f in os.listdir(a.out))
    print(f"k3_mini_export: {a.out}: {total} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
