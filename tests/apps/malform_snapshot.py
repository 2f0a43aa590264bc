#!/usr/bin/python3
"""Damage a copy of a synthetic K3 snapshot in one named way (k3-repack's
malformed-input tests).

    malform_snapshot.py CASE DIR

Edits DIR in place (DIR is a throw-away copy). Works on raw bytes and JSON
with the standard library only, independent of the C++ code under test.
Shard 3 of the tiny preset holds layer 2 (KDA + MoE, 16 experts).
"""
import json
import os
import struct
import sys

SHARD = "model-00003-of-000011.safetensors"
OTHER = "model-00004-of-000011.safetensors"
P = "language_model.model.layers.2."
EXPERT = P + "block_sparse_moe.experts.3."


def read_st(path):
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    return header, raw[8 + n:]


def write_st(path, header, data, header_text=None):
    text = header_text if header_text is not None else json.dumps(header, separators=(",", ":"))
    text += " " * ((8 - (8 + len(text)) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text.encode() + data)


def tensors(header):
    return [(k, v) for k, v in header.items() if k != "__metadata__"]


def relayout(header, data, drop=(), gap_after=None, gap=16):
    """Re-lays tensors back to back in offset order (optionally dropping some
    or inserting a hole), returning (header, data)."""
    items = sorted(tensors(header), key=lambda kv: kv[1]["data_offsets"][0])
    out, chunks, off = {}, [], 0
    if "__metadata__" in header:
        out["__metadata__"] = header["__metadata__"]
    for name, e in items:
        b, en = e["data_offsets"]
        if name in drop:
            continue
        out[name] = dict(e, data_offsets=[off, off + (en - b)])
        chunks.append(data[b:en])
        off += en - b
        if name == gap_after:
            chunks.append(b"\0" * gap)
            off += gap
    return out, b"".join(chunks)


def edit_json(path, fn):
    with open(path) as f:
        obj = json.load(f)
    fn(obj)
    with open(path, "w") as f:
        json.dump(obj, f)


def main():
    case, d = sys.argv[1], sys.argv[2]
    sp = os.path.join(d, SHARD)
    idx_path = os.path.join(d, "model.safetensors.index.json")
    h, data = read_st(sp)
    names = [k for k, _ in sorted(tensors(h), key=lambda kv: kv[1]["data_offsets"][0])]
    if case == "truncated_shard":
        with open(sp, "r+b") as f:
            f.truncate(os.path.getsize(sp) - 1000)
    elif case == "header_length_beyond_file":
        with open(sp, "r+b") as f:
            f.write(struct.pack("<Q", os.path.getsize(sp)))
    elif case == "invalid_header_json":
        text = json.dumps(h, separators=(",", ":"))
        write_st(sp, None, data, header_text=text[:-1] + ",}")
    elif case == "unknown_dtype":
        h[P + "input_layernorm.weight"]["dtype"] = "BX16"
        write_st(sp, h, data)
    elif case == "overlapping_offsets":
        b = h[names[11]]["data_offsets"]
        h[names[11]]["data_offsets"] = [b[0] - 2, b[1] - 2]  # starts 2 bytes inside its neighbour
        write_st(sp, h, data)
    elif case == "offsets_out_of_range":
        last = names[-1]
        h[last]["data_offsets"] = [h[last]["data_offsets"][0] + 64, h[last]["data_offsets"][1] + 64]
        write_st(sp, h, data)
    elif case == "hole":
        h2, d2 = relayout(h, data, gap_after=names[5])
        write_st(sp, h2, d2)
    elif case == "missing_expert_tensor":
        gone = EXPERT + "w2.weight_scale"
        h2, d2 = relayout(h, data, drop={gone})
        write_st(sp, h2, d2)
        edit_json(idx_path, lambda o: o["weight_map"].pop(gone))
    elif case == "wrong_packed_shape":
        t = h[EXPERT + "w1.weight_packed"]
        t["shape"] = [t["shape"][1], t["shape"][0]]  # same byte count, transposed
        write_st(sp, h, data)
    elif case == "wrong_scale_shape":
        t = h[EXPERT + "w3.weight_scale"]
        t["shape"] = [t["shape"][0] // 2, t["shape"][1] * 2]
        write_st(sp, h, data)
    elif case == "config_disagrees_with_tensors":
        edit_json(os.path.join(d, "config.json"),
                  lambda o: o["text_config"].__setitem__("hidden_size", o["text_config"]["hidden_size"] * 2))
    elif case == "invalid_config_json":
        with open(os.path.join(d, "config.json"), "a") as f:
            f.write("{")
    elif case == "missing_index_entry":
        edit_json(idx_path, lambda o: o["weight_map"].pop(P + "post_attention_layernorm.weight"))
    elif case == "invalid_index_json":
        with open(idx_path, "w") as f:
            f.write('{"weight_map": {"a": ')
    elif case == "duplicate_tensor_across_shards":
        # Layer 2's input_layernorm also appears in shard 4 (index keeps shard 3).
        dup = P + "input_layernorm.weight"
        b, e = h[dup]["data_offsets"]
        op = os.path.join(d, OTHER)
        h4, d4 = read_st(op)
        h4[dup] = dict(h[dup], data_offsets=[len(d4), len(d4) + e - b])
        write_st(op, h4, d4 + data[b:e])
    elif case == "duplicate_key_in_header":
        text = json.dumps(h, separators=(",", ":"))
        first = names[0]
        entry = json.dumps({first: h[first]}, separators=(",", ":"))[1:-1]
        write_st(sp, None, data, header_text=text[:-1] + "," + entry + "}")
    elif case == "missing_shard":
        os.remove(sp)
    elif case == "quant_tensor_not_bf16":
        h[P + "self_attn.q_proj.weight"]["dtype"] = "F16"  # same size, not BF16
        write_st(sp, h, data)
    elif case == "expert_wrong_byte_count":
        t = h[EXPERT + "w2.weight_packed"]
        t["dtype"] = "BF16"  # same bytes as U8 [r, c] -> BF16 [r, c/2]
        t["shape"] = [t["shape"][0], t["shape"][1] // 2]
        write_st(sp, h, data)
    elif case == "index_names_wrong_shard":
        edit_json(idx_path, lambda o: o["weight_map"].__setitem__(P + "mlp_res_norm.weight", OTHER))
    else:
        sys.exit(f"unknown case {case}")


if __name__ == "__main__":
    main()
