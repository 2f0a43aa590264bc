#!/usr/bin/python3
"""Independent checker of a k3-repack container against its source snapshot.

    k3_container_check.py SRC_SNAPSHOT DST_CONTAINER --bits 4|8|16
                          [--mla-bits N] [--head-bits N] [--require-manifest] [--json]

Shares no code with the C++ tools. It re-derives everything from the spec
(K3_FORMAT_AND_MODEL.md sections 3, 5) and docs/CONTAINER.md and asserts:
  * every output shard is spec-valid and holeless (8-byte padded header of
    compact ASCII JSON, offsets contiguous from 0 in header order, exact file
    size, float byte spans = numel * itemsize);
  * output shard names are model-NNNNN-of-TTTTTT with TTTTTT = layers + 1 and
    NNNNN the source shard holding the tensors; no shard missing or extra;
  * tensor order per shard: non-expert tensors by ascending source offset,
    each quantized tensor followed by its `.qs`, then experts by id, six
    tensors back-to-back (w1p w1s w2p w2s w3p w3s); vision tensors dropped;
  * expert and pass-through bytes identical to the source;
  * quantized payloads and scales bit-exact against a numpy re-quantization
    of the source BF16 (int8 per row, int4-g64; f32 arithmetic);
  * index weight_map <-> headers and total_size; copied extra files identical;
  * k3-manifest.json (if present) consistent with the files and the source.
Exit status 0 when everything holds, 1 otherwise (each failure on stderr).
"""

import argparse
import json
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from k3_container_check_io import (  # noqa: E402
    EXTRA_FILES, CheckFailed, Report, Shard, strip_prefix, validate_holeless)
from k3_container_check_manifest import check_manifest  # noqa: E402

SHARD_RE = re.compile(r"^model-(\d{5})-of-(\d{6})\.safetensors$")
EXPERT_RE = re.compile(r"\.block_sparse_moe\.experts\.(\d+)\.(w[123])\.(weight_packed|weight_scale)$")
QUANT_SUFFIXES = (
    "routed_expert_down_proj.weight", "routed_expert_up_proj.weight",
    "shared_experts.gate_proj.weight", "shared_experts.up_proj.weight",
    "shared_experts.down_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight",
    "mlp.down_proj.weight")

# ------------------------------------------------------------ model / rules

def load_config(src):
    with open(os.path.join(src, "config.json"), encoding="utf-8") as f:
        root = json.load(f)
    tc = root.get("text_config")
    cfg = tc if isinstance(tc, dict) else root
    layers = int(cfg["num_hidden_layers"])
    lac = cfg.get("linear_attn_config") or {}
    kda = {int(x) - 1 for x in lac.get("kda_layers", [])}
    return layers, kda


def classify(name, kda):
    """Spec 5.1: skip | expert | pass | head | mla | bits."""
    if name.startswith("vision_tower") or name.startswith("mm_projector"):
        return "skip"
    n = strip_prefix(name)
    if ".block_sparse_moe.experts." in n:
        return "expert"
    if n == "lm_head.weight":
        return "head"
    parts = n.split(".")
    li = int(parts[2]) if len(parts) > 3 and parts[1] == "layers" and parts[2].isdigit() else -1
    if ".self_attn." in n and n.endswith(".weight"):
        leaf = parts[-2]
        if leaf in ("q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj"):
            return "mla"
        if leaf in ("q_proj", "k_proj", "v_proj"):
            return "bits"
        if leaf in ("o_proj", "g_proj"):
            return "bits" if li in kda else "mla"
        return "pass"
    if any(n.endswith(s) for s in QUANT_SUFFIXES):
        return "bits"
    return "pass"


def expert_key(name):
    m = EXPERT_RE.search(name)
    if not m:
        raise CheckFailed(f"expert tensor with unexpected name {name}")
    return (int(m.group(1)), m.group(2), 0 if m.group(3) == "weight_packed" else 1)


# -------------------------------------------------------------- quantizers

def bf16_to_f32(raw_u16):
    return (raw_u16.astype(np.uint32) << np.uint32(16)).view(np.float32)


def quant_int8(w):
    """Spec 5.3, f32 arithmetic. w: float32 [O, I] -> (int8 [O, I], f32 [O])."""
    am = np.max(np.abs(w), axis=1)
    s = am / np.float32(127.0)
    s = np.where(s < np.float32(1e-20), np.float32(1e-20), s).astype(np.float32)
    inv = (np.float32(1.0) / s).astype(np.float32)
    q = np.clip(np.rint(w * inv[:, None]), -127, 127).astype(np.int8)
    return q, s


def quant_int4(w):
    """Spec 5.4. w: float32 [O, I], I % 64 == 0 -> (uint8 [O, I/2], f32 [O, I/64])."""
    O, I = w.shape
    g = w.reshape(O, I // 64, 64)
    am = np.max(np.abs(g), axis=2)
    s = am / np.float32(7.0)
    s = np.where(s < np.float32(1e-20), np.float32(1e-20), s).astype(np.float32)
    inv = (np.float32(1.0) / s).astype(np.float32)
    v = np.clip(np.rint(g * inv[:, :, None]), -8, 7).astype(np.int16) + 8
    u = v.astype(np.uint8).reshape(O, I)
    packed = u[:, 0::2] | (u[:, 1::2] << np.uint8(4))
    return packed, s


def quant_form(bits, I):
    if bits >= 16:
        return "bf16"
    if bits <= 4 and I % 64 == 0:
        return "int4"
    return "int8"


# ------------------------------------------------------------------- checks

class Checker:
    def __init__(self, src, dst, bits, mla_bits, head_bits, require_manifest, rep):
        self.src, self.dst, self.rep = src, dst, rep
        self.bits = {"bits": bits,
                     "mla": mla_bits if mla_bits is not None else max(bits, 8),
                     "head": head_bits if head_bits is not None else max(bits, 8)}
        self.require_manifest = require_manifest
        self.layers, self.kda = load_config(src)
        self.total = self.layers + 1
        self.stats = {"shards": 0, "tensors": 0, "experts": 0, "expert_bytes": 0, "int8": 0,
                      "int4": 0, "bf16_kept": 0, "pass": 0, "dropped_vision": 0, "bytes": 0}
        self.src_shards, self.dst_shards = {}, {}

    def open_all(self):
        for fn in sorted(os.listdir(self.src)):
            m = SHARD_RE.match(fn)
            if m:
                self.src_shards[int(m.group(1))] = Shard(os.path.join(self.src, fn))
        if not self.src_shards:
            raise CheckFailed(f"{self.src}: no model-NNNNN-of-TTTTTT.safetensors shards")
        for fn in sorted(os.listdir(self.dst)):
            if fn.endswith(".safetensors"):
                m = SHARD_RE.match(fn)
                if not self.rep.check(m is not None and int(m.group(2)) == self.total,
                                      f"{fn}: output shard name is not model-NNNNN-of-{self.total:06d}.safetensors"):
                    continue
                self.dst_shards[int(m.group(1))] = Shard(os.path.join(self.dst, fn))
            elif fn.endswith(".tmp"):
                self.rep.fail(f"{fn}: leftover temporary file in the container")

    def expected_layout(self, s):
        """Expected output [(name, kind, source_name, form)] for source shard s."""
        plain, experts = [], []
        for name in s.names:
            cls = classify(name, self.kda)
            if cls == "skip":
                self.stats["dropped_vision"] += 1
                continue
            if cls == "expert":
                experts.append(name)
            else:
                plain.append((s.header[name]["data_offsets"][0], name, cls))
        out = []
        for _, name, cls in sorted(plain):
            if cls == "pass":
                out.append((name, "pass", name, None))
                continue
            shape = s.header[name]["shape"]
            if len(shape) != 2:
                raise CheckFailed(f"{s.name}: quantizable tensor {name} is not 2-D: {shape}")
            form = quant_form(self.bits[cls], shape[1])
            if form == "bf16":
                out.append((name, "kept", name, None))
            else:
                out.append((name, form, name, None))
                out.append((name + ".qs", form + "_scale", name, None))
        for name in sorted(experts, key=expert_key):
            out.append((name, "expert", name, None))
        return out

    def check_shard(self, num, s, d):
        rep = self.rep
        validate_holeless(d, rep)
        layout = self.expected_layout(s)
        want = [x[0] for x in layout]
        if d.names != want:
            missing = [n for n in want if n not in d.header]
            extra = [n for n in d.names if n not in set(want)]
            first = next((i for i, (a, b) in enumerate(zip(d.names, want)) if a != b), min(len(want), len(d.names)))
            rep.fail(f"{d.name}: tensor list/order differs from the expected layout: first difference at "
                     f"position {first} (got {d.names[first] if first < len(d.names) else 'END'}, "
                     f"want {want[first] if first < len(want) else 'END'}); "
                     f"{len(missing)} missing e.g. {missing[:3]}, {len(extra)} unexpected e.g. {extra[:3]}")
        cache = {}
        for name, kind, srcname, _ in layout:
            if name not in d.header:
                continue
            self.stats["tensors"] += 1
            se, de = s.header[srcname], d.header[name]
            tag = f"{d.name}: tensor {name}"
            if kind in ("pass", "expert", "kept"):
                if not rep.check(de["dtype"] == se["dtype"] and de["shape"] == se["shape"],
                                 f"{tag}: {de['dtype']}{de['shape']} != source {se['dtype']}{se['shape']}"):
                    continue
                if kind == "expert":
                    rep.check(se["dtype"] == "U8", f"{tag}: source expert dtype {se['dtype']} is not U8")
                    self.stats["experts"] += 1 if name.endswith("w1.weight_packed") else 0
                    self.stats["expert_bytes"] += de["data_offsets"][1] - de["data_offsets"][0]
                    if name.endswith("w1.weight_packed"):
                        self._check_expert_contiguous(d, name)
                if kind == "kept":
                    rep.check(se["dtype"] == "BF16", f"{tag}: kept tensor is {se['dtype']} in the source")
                if kind != "expert":
                    self.stats["bf16_kept" if kind == "kept" else "pass"] += 1
                if s.bytes(srcname) != d.bytes(name):
                    rep.fail(f"{tag}: bytes differ from source {s.name} ({kind})")
                continue
            # Quantized tensor or its sidecar.
            if se["dtype"] != "BF16":
                rep.fail(f"{tag}: source dtype {se['dtype']} is not BF16 (spec 5.1)")
                continue
            O, I = se["shape"]
            if srcname not in cache:
                w = bf16_to_f32(s.array(srcname, np.uint16)).reshape(O, I)
                cache.clear()
                cache[srcname] = quant_int4(w) if kind.startswith("int4") else quant_int8(w)
            q, sc = cache[srcname]
            if kind in ("int8", "int4"):
                self.stats[kind] += 1
                shape = [O, I] if kind == "int8" else [O, I // 2]
                if rep.check(de["dtype"] == "U8" and de["shape"] == shape,
                             f"{tag}: {de['dtype']}{de['shape']}, expected U8{shape} ({kind})"):
                    got = d.array(name, np.uint8).reshape(shape)
                    ref = q.view(np.uint8).reshape(shape)
                    bad = np.count_nonzero(got != ref)
                    rep.check(bad == 0, f"{tag}: {bad} of {got.size} {kind} payload bytes differ from the "
                                        f"numpy re-quantization (first at flat index "
                                        f"{int(np.flatnonzero(got != ref)[0]) if bad else -1})")
            else:
                shape = [O] if kind == "int8_scale" else [O, I // 64]
                if rep.check(de["dtype"] == "F32" and de["shape"] == shape,
                             f"{tag}: {de['dtype']}{de['shape']}, expected F32{shape} (.qs sidecar)"):
                    got = d.array(name, np.uint32).reshape(shape)
                    bad = np.count_nonzero(got != sc.view(np.uint32).reshape(shape))
                    rep.check(bad == 0, f"{tag}: {bad} of {got.size} scales differ bit-wise from the "
                                        f"numpy re-quantization")

    def _check_expert_contiguous(self, d, first):
        base = first[: -len("w1.weight_packed")]
        order = [base + w for w in ("w1.weight_packed", "w1.weight_scale", "w2.weight_packed",
                                    "w2.weight_scale", "w3.weight_packed", "w3.weight_scale")]
        pos = d.header[first]["data_offsets"][0]
        for n in order:
            ent = d.header.get(n)
            if not self.rep.check(ent is not None and ent["data_offsets"][0] == pos,
                                  f"{d.name}: expert tensor {n} missing or not directly after its predecessor"):
                return
            pos = ent["data_offsets"][1]

    def check_index(self):
        rep = self.rep
        path = os.path.join(self.dst, "model.safetensors.index.json")
        if not rep.check(os.path.exists(path), f"{path}: missing"):
            return
        with open(path, encoding="utf-8") as f:
            idx = json.load(f)
        wm = idx.get("weight_map")
        total = (idx.get("metadata") or {}).get("total_size")
        if not rep.check(isinstance(wm, dict), "index: weight_map missing"):
            return
        want, want_total = {}, 0
        for num in sorted(self.dst_shards):
            d = self.dst_shards[num]
            for n in d.names:
                rep.check(n not in want, f"index: tensor {n} appears in two output shards")
                want[n] = d.name
                b, e = d.header[n]["data_offsets"]
                want_total += e - b
        rep.check(list(wm) == list(want), "index: weight_map keys are not the shard tensors in shard/header "
                                          "order (spec 5.7)" if set(wm) == set(want) else
                  f"index: weight_map names differ from the shard headers "
                  f"({len(set(wm) - set(want))} extra, {len(set(want) - set(wm))} missing)")
        wrong = [n for n in want if wm.get(n) not in (None, want[n])]
        rep.check(not wrong, f"index: {len(wrong)} tensors mapped to the wrong shard, e.g. {wrong[:2]}")
        rep.check(total == want_total, f"index: metadata.total_size {total} != sum of tensor spans {want_total}")

    def check_extra_files(self):
        for fn in EXTRA_FILES:
            sp, dp = os.path.join(self.src, fn), os.path.join(self.dst, fn)
            if not os.path.exists(sp):
                continue
            if self.rep.check(os.path.exists(dp), f"{fn}: present in the source but not copied"):
                with open(sp, "rb") as a, open(dp, "rb") as b:
                    self.rep.check(a.read() == b.read(), f"{fn}: copy differs from the source")

    def check_manifest(self):
        return check_manifest(self)

    def run(self):
        self.open_all()
        produced = {}
        for num, s in sorted(self.src_shards.items()):
            if all(classify(n, self.kda) == "skip" for n in s.names):
                self.stats["dropped_vision"] += len(s.names)
                continue
            produced[num] = s
        for num in sorted(set(produced) | set(self.dst_shards)):
            if num not in self.dst_shards:
                self.rep.fail(f"output shard model-{num:05d}-of-{self.total:06d}.safetensors missing "
                              f"(source {produced[num].name} has text tensors)")
                continue
            if num not in produced:
                self.rep.fail(f"{self.dst_shards[num].name}: unexpected output shard (no source text tensors)")
                continue
            d = self.dst_shards[num]
            self.stats["shards"] += 1
            self.stats["bytes"] += d.size
            self.check_shard(num, produced[num], d)
        self.check_index()
        self.check_extra_files()
        self.stats["manifest"] = self.check_manifest()
        for sh in list(self.src_shards.values()) + list(self.dst_shards.values()):
            sh.close()


def main(argv=None):
    ap = argparse.ArgumentParser(description="Check a k3-repack container against its source snapshot.")
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--bits", type=int, required=True)
    ap.add_argument("--mla-bits", type=int)
    ap.add_argument("--head-bits", type=int)
    ap.add_argument("--require-manifest", action="store_true", help="fail when k3-manifest.json is absent")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    args = ap.parse_args(argv)
    rep = Report()
    stats = {}
    try:
        ck = Checker(args.src, args.dst, args.bits, args.mla_bits, args.head_bits, args.require_manifest, rep)
        ck.run()
        stats = ck.stats
    except CheckFailed as e:
        rep.fail(str(e))
    except Exception as e:  # malformed input of any other kind: one clear line, exit 1
        rep.fail(f"{type(e).__name__}: {e}")
    ok = not rep.failures
    if len(rep.failures) > rep.limit:
        print(f"... {len(rep.failures) - rep.limit} more failures not shown", file=sys.stderr)
    if args.json:
        print(json.dumps({"ok": ok, "failures": len(rep.failures), "first_failures": rep.failures[:10], **stats}))
    else:
        s = stats
        print(f"k3_container_check: {'OK' if ok else 'FAILED'}: {len(rep.failures)} failures; "
              f"{s.get('shards', 0)} shards, {s.get('tensors', 0)} tensors, {s.get('experts', 0)} experts "
              f"({s.get('expert_bytes', 0)} B), int8 {s.get('int8', 0)}, int4 {s.get('int4', 0)}, "
              f"bf16 kept {s.get('bf16_kept', 0)}, pass {s.get('pass', 0)}, "
              f"vision dropped {s.get('dropped_vision', 0)}, manifest {s.get('manifest', '?')}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
