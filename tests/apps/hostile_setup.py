#!/usr/bin/python3
"""Prepare one hostile or careless input for the table-driven hostile-input
tests (hostile_input_test.cpp).

    hostile_setup.py CASE ROOT

ROOT holds throw-away copies: ROOT/src (tiny synthetic snapshot) and ROOT/c
(its --bits 4 container). Edits them in place with the standard library only,
independent of the C++ code under test. Special files (FIFOs, symlinks to
/dev/zero, directories) replace regular ones; sizes beyond the tools' caps are
made as sparse files, so they cost no disk.
"""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from malform_snapshot import edit_json, read_st, write_st  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../scripts"))
from special_file import replace_file as replace  # noqa: E402

SRC_SHARD = "model-00003-of-000011.safetensors"  # layer 2: KDA + MoE
C_SHARD = "model-00003-of-000009.safetensors"
P = "language_model.model.layers.2."


def set_element(path, tensor, index, raw_bytes):
    """Overwrite element `index` of `tensor` in a safetensors file (same size)."""
    h, data = read_st(path)
    t = h[tensor]
    size = {"BF16": 2, "F16": 2, "F32": 4}[t["dtype"]]
    b = t["data_offsets"][0] + index * size
    data = data[:b] + raw_bytes + data[b + size:]
    write_st(path, h, data)


def set_header(path, tensor, key, value):
    """Change one header field of a tensor (the data stays)."""
    h, data = read_st(path)
    h[tensor][key] = value
    write_st(path, h, data)


def flip_tensor_byte(path, tensor, at=1):
    h, data = read_st(path)
    b = h[tensor]["data_offsets"][0] + at
    data = data[:b] + bytes([data[b] ^ 0x01]) + data[b + 1:]
    write_st(path, h, data)


def rehash_manifest_shard(c, shard):
    """The attacker's move: recompute the shard's SHA-256 in the manifest."""
    import hashlib
    digest = hashlib.sha256(open(os.path.join(c, shard), "rb").read()).hexdigest()

    def fix(m):
        for s in m["shards"]:
            if s["file"] == shard:
                s["sha256"] = digest
    edit_json(os.path.join(c, "k3-manifest.json"), fix)


def manifest(c, fn):
    edit_json(os.path.join(c, "k3-manifest.json"), fn)


def add_manifest_file(c, name, size=5):
    manifest(c, lambda m: m["files"].append({"file": name, "size": size, "sha256": "0" * 64}))


def many_manifest_files(c, n):
    """A manifest listing n copied files (~95 MB of JSON for 10^6), written as
    text: a list of 10^6 dicts would cost this script more than the tool."""
    path = os.path.join(c, "k3-manifest.json")
    with open(path) as f:
        m = json.load(f)
    m["files"] = ["FILES"]
    head, tail = json.dumps(m, indent=1).split('"FILES"')
    entry = '{"file": "f%d", "size": 5, "sha256": "' + "0" * 64 + '"}'
    with open(path, "w") as f:
        f.write(head)
        f.write(",\n".join(entry % i for i in range(n)))
        f.write(tail)


def text_config(d, key, value):
    edit_json(os.path.join(d, "config.json"), lambda o: o["text_config"].__setitem__(key, value))


def add_unknown_tensor(src):
    """An extra BF16 tensor nothing in config.json implies, in shard and index."""
    sp = os.path.join(src, SRC_SHARD)
    h, data = read_st(sp)
    end = max(v["data_offsets"][1] for k, v in h.items() if k != "__metadata__")
    name = P + "extra_unknown.weight"
    h[name] = {"dtype": "BF16", "shape": [4], "data_offsets": [end, end + 8]}
    write_st(sp, h, data[:end] + b"\0" * 8 + data[end:])
    edit_json(os.path.join(src, "model.safetensors.index.json"),
              lambda o: o["weight_map"].__setitem__(name, SRC_SHARD))


def tiktoken_lines(src, fn):
    p = os.path.join(src, "tiktoken.model")
    lines = open(p).read().splitlines()
    open(p, "w").write("\n".join(fn(lines)) + "\n")


def config_sha_fixed(c, edit):
    """Edit the container's config.json, then what the manifest says of it
    (source.config_sha256, its files entry), so only the edit itself is what a
    tool can object to."""
    import hashlib
    p = os.path.join(c, "config.json")
    edit(p)
    data = open(p, "rb").read()
    digest = hashlib.sha256(data).hexdigest()

    def fix(m):
        m["source"]["config_sha256"] = digest
        for f in m["files"]:
            if f["file"] == "config.json":
                f["size"], f["sha256"] = len(data), digest
    manifest(c, fix)


def drop_max_positions(p):
    edit_json(p, lambda o: o["text_config"].pop("max_position_embeddings"))


def duplicate_key(p):
    """hidden_size twice in text_config: JSON parsers keep one or the other."""
    text = open(p).read()
    at = text.index('"text_config"')
    brace = text.index("{", at)
    open(p, "w").write(text[:brace + 1] + '"hidden_size": 4096, ' + text[brace + 1:])


def in_file(root, how):
    """ROOT/in: the file an option (--ids, --perplexity, --api-key-file, -f, ...) names."""
    path = os.path.join(root, "in")
    open(path, "w").close()
    replace(path, how)


def in_text(root, text):
    open(os.path.join(root, "in"), "w").write(text)


CASES = {
    # ---- special files and sizes in the source snapshot (k3-repack) ----
    "src_config_fifo": lambda s, c: replace(f"{s}/config.json", "fifo"),
    "src_config_devzero": lambda s, c: replace(f"{s}/config.json", "devzero"),
    "src_config_dir": lambda s, c: replace(f"{s}/config.json", "dir"),
    "src_config_huge": lambda s, c: replace(f"{s}/config.json", "sparse:17000000"),
    "src_index_fifo": lambda s, c: replace(f"{s}/model.safetensors.index.json", "fifo"),
    "src_index_devzero": lambda s, c: replace(f"{s}/model.safetensors.index.json", "devzero"),
    "src_index_dir": lambda s, c: replace(f"{s}/model.safetensors.index.json", "dir"),
    "src_index_huge": lambda s, c: replace(f"{s}/model.safetensors.index.json", "sparse:1100000000"),
    "src_shard_fifo": lambda s, c: replace(f"{s}/{SRC_SHARD}", "fifo"),
    "src_shard_devzero": lambda s, c: replace(f"{s}/{SRC_SHARD}", "devzero"),
    "src_shard_dir": lambda s, c: replace(f"{s}/{SRC_SHARD}", "dir"),
    "src_tiktoken_fifo": lambda s, c: replace(f"{s}/tiktoken.model", "fifo"),
    "src_tiktoken_devzero": lambda s, c: replace(f"{s}/tiktoken.model", "devzero"),
    "src_tiktoken_dir": lambda s, c: replace(f"{s}/tiktoken.model", "dir"),
    "src_tiktoken_huge": lambda s, c: replace(f"{s}/tiktoken.model", "sparse:70000000"),
    "src_tokcfg_fifo": lambda s, c: replace(f"{s}/tokenizer_config.json", "fifo"),
    "src_tokcfg_devzero": lambda s, c: replace(f"{s}/tokenizer_config.json", "devzero"),
    "src_gencfg_fifo": lambda s, c: replace(f"{s}/generation_config.json", "fifo"),
    # ---- paths in the source index ----
    "src_index_shard_dotdot": lambda s, c: edit_json(
        f"{s}/model.safetensors.index.json",
        lambda o: o["weight_map"].__setitem__(P + "input_layernorm.weight", "../" + SRC_SHARD)),
    "src_index_shard_absolute": lambda s, c: edit_json(
        f"{s}/model.safetensors.index.json",
        lambda o: o["weight_map"].__setitem__(P + "input_layernorm.weight", "/dev/zero")),
    # ---- values in the source config ----
    "src_config_num_experts_1e6": lambda s, c: text_config(s, "num_experts", 1000000),
    "src_config_layers_1e5": lambda s, c: text_config(s, "num_hidden_layers", 100000),
    "src_config_hidden_huge": lambda s, c: text_config(s, "hidden_size", 1 << 30),
    "src_config_vocab_negative": lambda s, c: text_config(s, "vocab_size", -5),
    # ---- tensors that k3-verify would reject ----
    # same byte count, another shape / dtype
    "src_dense_wrong_shape": lambda s, c: set_header(f"{s}/{SRC_SHARD}", P + "self_attn.g_proj.weight", "shape", [64, 256]),
    "src_norm_wrong_shape": lambda s, c: set_header(f"{s}/{SRC_SHARD}", P + "input_layernorm.weight", "shape", [2, 64]),
    "src_norm_int_dtype": lambda s, c: set_header(f"{s}/{SRC_SHARD}", P + "input_layernorm.weight", "dtype", "I16"),
    "src_expert_i8": lambda s, c: set_header(
        f"{s}/{SRC_SHARD}", P + "block_sparse_moe.experts.3.w1.weight_packed", "dtype", "I8"),
    "src_unknown_tensor": lambda s, c: add_unknown_tensor(s),
    "src_nan_quantized": lambda s, c: set_element(f"{s}/{SRC_SHARD}", P + "self_attn.q_proj.weight", 77, b"\xc0\x7f"),
    "src_inf_quantized": lambda s, c: set_element(f"{s}/{SRC_SHARD}", P + "self_attn.k_proj.weight", 5, b"\x80\x7f"),
    "src_neg_inf_norm": lambda s, c: set_element(f"{s}/{SRC_SHARD}", P + "input_layernorm.weight", 3, b"\x80\xff"),
    "src_nan_f32": lambda s, c: set_element(f"{s}/{SRC_SHARD}", P + "self_attn.dt_bias", 9, b"\x00\x00\xc0\x7f"),
    # ---- tokenizer files ----
    "src_tiktoken_dup_rank": lambda s, c: tiktoken_lines(s, lambda ls: ls[:-1] + [ls[-1].split()[0] + " 0"]),
    "src_tiktoken_dup_bytes": lambda s, c: tiktoken_lines(s, lambda ls: ls + [ls[0].split()[0] + f" {len(ls)}"]),
    "src_tiktoken_garbage": lambda s, c: tiktoken_lines(s, lambda ls: ls[:10] + ["not-a-token-line"] + ls[10:]),
    "src_tiktoken_bad_base64": lambda s, c: tiktoken_lines(s, lambda ls: ["@@@@ 0"] + ls[1:]),
    "src_tokcfg_invalid_json": lambda s, c: open(f"{s}/tokenizer_config.json", "a").write("{"),
    "src_tokcfg_id_collides": lambda s, c: edit_json(
        f"{s}/tokenizer_config.json",
        lambda o: o["added_tokens_decoder"].__setitem__("3", {"content": "<|x|>", "special": True})),
    "src_tokcfg_dup_content": lambda s, c: edit_json(
        f"{s}/tokenizer_config.json",
        lambda o: o["added_tokens_decoder"]["513"].__setitem__("content", "[BOS]")),
    # ---- the container (k3-verify) ----
    "c_config_fifo": lambda s, c: replace(f"{c}/config.json", "fifo"),
    "c_config_devzero": lambda s, c: replace(f"{c}/config.json", "devzero"),
    "c_config_dir": lambda s, c: replace(f"{c}/config.json", "dir"),
    "c_config_huge": lambda s, c: replace(f"{c}/config.json", "sparse:17000000"),
    "c_index_fifo": lambda s, c: replace(f"{c}/model.safetensors.index.json", "fifo"),
    "c_index_devzero": lambda s, c: replace(f"{c}/model.safetensors.index.json", "devzero"),
    "c_index_huge": lambda s, c: replace(f"{c}/model.safetensors.index.json", "sparse:1100000000"),
    "c_manifest_fifo": lambda s, c: replace(f"{c}/k3-manifest.json", "fifo"),
    "c_manifest_devzero": lambda s, c: replace(f"{c}/k3-manifest.json", "devzero"),
    "c_manifest_dir": lambda s, c: replace(f"{c}/k3-manifest.json", "dir"),
    "c_manifest_huge": lambda s, c: replace(f"{c}/k3-manifest.json", "sparse:1100000000"),
    "c_shard_fifo": lambda s, c: replace(f"{c}/{C_SHARD}", "fifo"),
    "c_shard_devzero": lambda s, c: replace(f"{c}/{C_SHARD}", "devzero"),
    "c_shard_dir": lambda s, c: replace(f"{c}/{C_SHARD}", "dir"),
    "c_tiktoken_fifo": lambda s, c: replace(f"{c}/tiktoken.model", "fifo"),
    "c_tiktoken_devzero": lambda s, c: replace(f"{c}/tiktoken.model", "devzero"),
    "c_unexpected_file": lambda s, c: open(f"{c}/notes.txt", "w").write("hello"),
    "c_unexpected_dir": lambda s, c: os.mkdir(f"{c}/junk"),
    "c_unexpected_fifo": lambda s, c: os.mkfifo(f"{c}/pipe"),
    "c_files_dotdot": lambda s, c: add_manifest_file(c, "../../../../etc/hostname"),
    "c_files_absolute": lambda s, c: add_manifest_file(c, "/dev/zero"),
    "c_files_subdir": lambda s, c: add_manifest_file(c, "sub/x"),
    "c_files_empty": lambda s, c: add_manifest_file(c, ""),
    "c_files_dot": lambda s, c: add_manifest_file(c, "."),
    "c_files_1e6": lambda s, c: many_manifest_files(c, 1000000),
    "c_files_symlink_out": lambda s, c: (os.symlink("/etc/hostname", f"{c}/hostname"),
                                         add_manifest_file(c, "hostname", os.path.getsize("/etc/hostname"))),
    "c_files_symlink_devzero": lambda s, c: (os.symlink("/dev/zero", f"{c}/zero"), add_manifest_file(c, "zero")),
    "c_shard_name_dotdot": lambda s, c: manifest(c, lambda m: m["shards"][0].__setitem__("file", "../" + C_SHARD)),
    "c_source_file_dotdot": lambda s, c: manifest(
        c, lambda m: m["shards"][0]["source"].__setitem__("file", "../../etc/passwd")),
    "c_config_sha_changed": lambda s, c: open(f"{c}/config.json", "a").write("\n"),
    "c_manifest_num_experts_1e6": lambda s, c: manifest(c, lambda m: m["source"].__setitem__("num_experts", 1000000)),
    "c_manifest_layers_1e6": lambda s, c: manifest(c, lambda m: m["source"].__setitem__("num_hidden_layers", 1000000)),
    "c_manifest_num_experts_other": lambda s, c: manifest(c, lambda m: m["source"].__setitem__("num_experts", 8)),
    "c_manifest_layers_other": lambda s, c: manifest(c, lambda m: m["source"].__setitem__("num_hidden_layers", 3)),
    "c_manifest_prefix_other": lambda s, c: manifest(c, lambda m: m["source"].__setitem__("prefix", "")),
    "c_manifest_bits_absurd": lambda s, c: manifest(c, lambda m: m["settings"].__setitem__("bits", 1000)),
    "c_manifest_bits_5": lambda s, c: manifest(c, lambda m: m["settings"].__setitem__("bits", 5)),
    "c_config_num_experts_1e6": lambda s, c: text_config(c, "num_experts", 1000000),
    "c_dense_byte_rehashed": lambda s, c: (flip_tensor_byte(f"{c}/{C_SHARD}", P + "self_attn.q_proj.weight"),
                                           rehash_manifest_shard(c, C_SHARD)),
    "c_norm_byte_rehashed": lambda s, c: (flip_tensor_byte(f"{c}/{C_SHARD}", P + "input_layernorm.weight"),
                                          rehash_manifest_shard(c, C_SHARD)),
    "c_scale_byte_rehashed": lambda s, c: (flip_tensor_byte(f"{c}/{C_SHARD}", P + "self_attn.v_proj.weight.qs", 2),
                                           rehash_manifest_shard(c, C_SHARD)),
    "src_dense_byte": lambda s, c: flip_tensor_byte(f"{s}/{SRC_SHARD}", P + "self_attn.o_proj.weight"),
    "c_tokenizer_json_ok": lambda s, c: open(f"{c}/tokenizer.json", "w").write("{}"),
    "c_stale_lock_ok": lambda s, c: open(f"{c}/.k3-repack.lock", "w").write("999999\n"),
    "none": lambda s, c: None,
    # ---- k3-run: the model's limits, config keys ----
    "c_no_max_positions": lambda s, c: config_sha_fixed(c, drop_max_positions),
    "c_config_dup_key": lambda s, c: config_sha_fixed(c, duplicate_key),
    "src_config_dup_key": lambda s, c: duplicate_key(f"{s}/config.json"),
    # ---- k3-run's start gate: what k3-verify's fast checks reject ----
    "c_manifest_garbage": lambda s, c: open(f"{c}/k3-manifest.json", "w").write("{not json"),
    "c_manifest_no_shards": lambda s, c: manifest(c, lambda m: m.__setitem__("shards", [])),
    "c_manifest_size_wrong": lambda s, c: manifest(c, lambda m: m["shards"][2].__setitem__("size", m["shards"][2]["size"] + 1)),
    "c_index_missing": lambda s, c: os.remove(f"{c}/model.safetensors.index.json"),
    "c_index_wrong_shard": lambda s, c: edit_json(
        f"{c}/model.safetensors.index.json",
        lambda o: o["weight_map"].__setitem__(P + "input_layernorm.weight", "model-00001-of-000009.safetensors")),
    "c_layers_fewer": lambda s, c: config_sha_fixed(c, lambda p: edit_json(p, lambda o: (
        o["text_config"].__setitem__("num_hidden_layers", 4),
        o["text_config"]["linear_attn_config"].__setitem__(
            "kda_layers", [x for x in o["text_config"]["linear_attn_config"]["kda_layers"] if x <= 4])))),
    "c_expert_dtype_i8": lambda s, c: set_header(
        f"{c}/{C_SHARD}", P + "block_sparse_moe.experts.3.w1.weight_packed", "dtype", "I8"),
    "c_norm_shape_wrong": lambda s, c: set_header(f"{c}/{C_SHARD}", P + "input_layernorm.weight", "shape", [2, 64]),
    "c_shard_truncated": lambda s, c: os.truncate(f"{c}/{C_SHARD}", os.path.getsize(f"{c}/{C_SHARD}") - 100),
    # ---- k3-tokgen: added tokens past the vocabulary, a hostile token length ----
    "src_tokcfg_past_vocab": lambda s, c: edit_json(
        f"{s}/tokenizer_config.json",
        lambda o: o["added_tokens_decoder"].__setitem__("800", {"content": "<|beyond|>", "special": True})),
    "src_tokcfg_reserved_past_ok": lambda s, c: edit_json(
        f"{s}/tokenizer_config.json",
        lambda o: o["added_tokens_decoder"].__setitem__("768", {"content": "<|reserved_token_768|>", "special": True})),
    "src_tiktoken_long_token": lambda s, c: tiktoken_lines(
        s, lambda ls: ls[:-1] + [__import__("base64").b64encode(b"q" * 300000).decode() + " " + ls[-1].split()[1]]),
    "c_shard_header_garbage": lambda s, c: open(f"{c}/{C_SHARD}", "r+b").write(struct.pack("<Q", 1 << 40)),
}

# Cases on ROOT/in (the file an option names), given ROOT rather than src and c.
ROOT_CASES = {
    "in_fifo": lambda r: in_file(r, "fifo"),
    "in_devzero": lambda r: in_file(r, "devzero"),
    "in_dir": lambda r: in_file(r, "dir"),
    "in_empty": lambda r: in_file(r, "empty"),
    "in_sparse_300m": lambda r: in_file(r, "sparse:300000000"),
    "in_sparse_100k": lambda r: in_file(r, "sparse:100000"),
    "in_ids_garbage": lambda r: in_text(r, "1 2 3\n4 five 6\n"),
    "in_ids_double_comma": lambda r: in_text(r, "1,2,,3\n"),
    "in_ids_past_vocab": lambda r: in_text(r, "1 2 768\n"),
    "in_ids_overflow": lambda r: in_text(r, "1 2 4294967296\n"),
    "in_ids_ok": lambda r: in_text(r, "1 2 3\n"),
    "in_text": lambda r: in_text(r, "the quick brown fox jumps over the lazy dog. " * 4),
    "in_json_garbage": lambda r: in_text(r, "{\"messages\": [1, 2"),
}


def main():
    case, root = sys.argv[1], sys.argv[2]
    if case in ROOT_CASES:
        ROOT_CASES[case](root)
    elif case in CASES:
        CASES[case](os.path.join(root, "src"), os.path.join(root, "c"))
    else:
        sys.exit(f"unknown case {case}")


if __name__ == "__main__":
    main()
