#!/usr/bin/python3
"""Self-test of scripts/k3_synth.py and scripts/k3_container_check.py.

1. Generates the `tiny` snapshot and validates it with an independent reader
   written here from the spec (sections 1-4, 7.1): names, dtypes, shapes,
   shard layout, string-order expert shuffle, holeless files, index, tokenizer,
   MXFP4 scale validity and weight statistics, determinism.
2. Builds fake containers with the small Python repacker in fake_container.py (per-row /
   per-group loops, unlike the checker's vectorised quantizer), checks that
   k3_container_check.py accepts them for several bit settings, then breaks
   copies in many ways and checks that the checker rejects each one.
No C++ tool is used.
"""

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_container import PRE, bf16, fake_repack, read_st, tensor, text_cfg  # noqa: E402

ROOT = os.environ.get("K3_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PY = "/usr/bin/python3"
SYNTH = os.path.join(ROOT, "scripts", "k3_synth.py")
CHECK = os.path.join(ROOT, "scripts", "k3_container_check.py")
TMP_BASE = os.environ.get("K3_TEST_TMP") or tempfile.gettempdir()


def synth(out, preset="tiny", seed=7, *extra):
    r = subprocess.run([PY, SYNTH, "--preset", preset, "--seed", str(seed), "--out", out, *extra],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"k3_synth.py failed: {r.stderr}")


# ------------------------------------------------- expected inventory (spec 2)

def expected_layer(tc, i, pre):
    """{name: (dtype, shape)} for layer i, from the spec's tables."""
    D = tc["hidden_size"]
    lac = tc["linear_attn_config"]
    L = f"{pre}model.layers.{i}."
    out = {L + n: ("BF16", s) for n, s in (
        ("input_layernorm.weight", [D]), ("post_attention_layernorm.weight", [D]),
        ("self_attention_res_norm.weight", [D]), ("self_attention_res_proj.weight", [1, D]),
        ("mlp_res_norm.weight", [D]), ("mlp_res_proj.weight", [1, D]))}
    a = L + "self_attn."
    if (i + 1) in lac["kda_layers"]:
        Hk, d, K = lac["num_heads"], lac["head_dim"], lac["short_conv_kernel_size"]
        P = Hk * d
        for x in "qkvg":
            out[a + f"{x}_proj.weight"] = ("BF16", [P, D])
        for x in "qkv":
            out[a + f"{x}_conv1d.weight"] = ("F32", [P, 1, K])
        out.update({a + "o_proj.weight": ("BF16", [D, P]), a + "f_a_proj.weight": ("BF16", [d, D]),
                    a + "f_b_proj.weight": ("BF16", [P, d]), a + "b_proj.weight": ("BF16", [Hk, D]),
                    a + "dt_bias": ("F32", [P]), a + "A_log": ("F32", [d]),
                    a + "o_norm.weight": ("F32", [d])})
    else:
        H, nope, rope, v = (tc["num_attention_heads"], tc["qk_nope_head_dim"], tc["qk_rope_head_dim"],
                            tc["v_head_dim"])
        ql, kl = tc["q_lora_rank"], tc["kv_lora_rank"]
        out.update({a + "q_a_proj.weight": ("BF16", [ql, D]), a + "q_a_layernorm.weight": ("BF16", [ql]),
                    a + "q_b_proj.weight": ("BF16", [H * (nope + rope), ql]),
                    a + "kv_a_proj_with_mqa.weight": ("BF16", [kl + rope, D]),
                    a + "kv_a_layernorm.weight": ("BF16", [kl]),
                    a + "kv_b_proj.weight": ("BF16", [H * (nope + v), kl]),
                    a + "o_proj.weight": ("BF16", [D, H * v]), a + "g_proj.weight": ("BF16", [H * v, D])})
    if i < tc["first_k_dense_replace"]:
        I = tc["intermediate_size"]
        out.update({L + "mlp.gate_proj.weight": ("BF16", [I, D]), L + "mlp.up_proj.weight": ("BF16", [I, D]),
                    L + "mlp.down_proj.weight": ("BF16", [D, I])})
    else:
        m = L + "block_sparse_moe."
        E, Z, Mi = tc["num_experts"], tc["routed_expert_hidden_size"], tc["moe_intermediate_size"]
        Ish = Mi * tc["num_shared_experts"]
        out.update({m + "gate.weight": ("BF16", [E, D]), m + "gate.e_score_correction_bias": ("F32", [E]),
                    m + "routed_expert_down_proj.weight": ("BF16", [Z, D]),
                    m + "routed_expert_up_proj.weight": ("BF16", [D, Z]),
                    m + "routed_expert_norm.weight": ("BF16", [Z]),
                    m + "shared_experts.gate_proj.weight": ("BF16", [Ish, D]),
                    m + "shared_experts.up_proj.weight": ("BF16", [Ish, D]),
                    m + "shared_experts.down_proj.weight": ("BF16", [D, Ish])})
        for e in range(E):
            x = f"{m}experts.{e}."
            out.update({x + "w1.weight_packed": ("U8", [Mi, Z // 2]), x + "w1.weight_scale": ("U8", [Mi, Z // 32]),
                        x + "w2.weight_packed": ("U8", [Z, Mi // 2]), x + "w2.weight_scale": ("U8", [Z, Mi // 32]),
                        x + "w3.weight_packed": ("U8", [Mi, Z // 2]), x + "w3.weight_scale": ("U8", [Mi, Z // 32])})
    return out

def run_check(src, dst, *args):
    r = subprocess.run([PY, CHECK, src, dst, *args], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


# ---------------------------------------------------------------------- tests

class SynthSnapshotTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        os.makedirs(TMP_BASE, exist_ok=True)
        cls.work = tempfile.mkdtemp(prefix="synth_snapshot_test-", dir=TMP_BASE)
        cls.snap = os.path.join(cls.work, "tiny")
        synth(cls.snap)
        cls.root, cls.tc = text_cfg(cls.snap)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def shards(self):
        return sorted(f for f in os.listdir(self.snap) if f.endswith(".safetensors"))

    def test_config(self):
        root, tc = self.root, self.tc
        self.assertEqual(root["model_type"], "kimi_k3")
        self.assertEqual(root["architectures"], ["KimiK3ForConditionalGeneration"])
        self.assertEqual(tc["model_type"], "kimi_linear")
        for k in ("hidden_size", "num_hidden_layers", "vocab_size", "first_k_dense_replace", "intermediate_size",
                  "num_attention_heads", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                  "v_head_dim", "num_experts", "num_experts_per_token", "moe_intermediate_size",
                  "routed_expert_hidden_size", "num_shared_experts", "attn_res_block_size",
                  "activation_situ_beta", "activation_situ_linear_beta", "rms_norm_eps", "linear_attn_config",
                  "quantization_config"):
            self.assertIn(k, tc)
        self.assertNotIn("quantization_config", root)
        lac = tc["linear_attn_config"]
        L = tc["num_hidden_layers"]
        self.assertEqual(sorted(lac["kda_layers"] + lac["full_attn_layers"]), list(range(1, L + 1)))
        self.assertGreaterEqual(len(lac["kda_layers"]), 2)
        self.assertGreaterEqual(len(lac["full_attn_layers"]), 2)
        self.assertIn(L, lac["full_attn_layers"])  # the last layer is MLA, as in K3
        self.assertEqual(tc["first_k_dense_replace"], 1)
        self.assertGreaterEqual(-(-L // tc["attn_res_block_size"]), 2)
        self.assertLess(tc["num_experts_per_token"], tc["num_experts"])
        self.assertLess(tc["routed_expert_hidden_size"], tc["hidden_size"])
        self.assertEqual(tc["routed_expert_hidden_size"] % 32, 0)
        self.assertEqual(tc["moe_intermediate_size"] % 32, 0)
        self.assertNotEqual(tc["intermediate_size"] % 64, 0)  # exercises the int4 -> int8 fallback
        self.assertEqual(tc["quantization_config"]["format"], "mxfp4-pack-quantized")

    def test_every_preset_has_k3_structure_and_budget(self):
        sys.path.insert(0, os.path.join(ROOT, "scripts"))
        import k3_synth
        import k3_synth_config
        for preset, p in k3_synth.PRESETS.items():
            with self.subTest(preset=preset):
                tc = k3_synth_config.root_config(p, preset, 1, 1)["text_config"]
                lac = tc["linear_attn_config"]
                L, bs = tc["num_hidden_layers"], tc["attn_res_block_size"]
                self.assertGreaterEqual(len(lac["kda_layers"]), 2)
                self.assertGreaterEqual(len(lac["full_attn_layers"]), 2)
                self.assertIn(L, lac["full_attn_layers"])
                self.assertTrue(2 <= -(-L // bs) and -(-L // bs) + 1 <= 16)
                self.assertLess(tc["num_experts_per_token"], tc["num_experts"])
                self.assertLessEqual(tc["num_experts_per_token"], 64)
                self.assertLess(tc["routed_expert_hidden_size"], tc["hidden_size"])
                self.assertEqual(tc["routed_expert_hidden_size"] % 32, 0)
                self.assertEqual(tc["moe_intermediate_size"] % 32, 0)
                self.assertGreaterEqual(tc["num_shared_experts"], 1)
                self.assertLessEqual(lac["num_heads"], lac["head_dim"])  # A_log is [head_dim], zero padded
                self.assertLessEqual(lac["head_dim"], 512)
                r = subprocess.run([PY, SYNTH, "--preset", preset, "--out", "unused", "--dry-run"],
                                   capture_output=True, text=True)
                self.assertEqual(r.returncode, 0, r.stderr)
                words = r.stdout.split()
                total = int(words[words.index("tensor") - 1])
                share = float(words[-1].rstrip("%"))
                if preset == "small":
                    self.assertTrue(250e6 < total < 350e6 and share > 90.0, r.stdout)
                if preset == "medium":
                    self.assertTrue(total >= 3e9 and share > 92.0, r.stdout)
                if preset == "bench":  # K3's real tensor sizes: one expert is 17,547,264 bytes (spec appendix)
                    self.assertEqual(tc["hidden_size"], 7168)
                    self.assertEqual(3 * tc["moe_intermediate_size"] * tc["routed_expert_hidden_size"] * 17 // 32,
                                     17547264)
                    self.assertTrue(5e9 < total < 9e9, r.stdout)

    def test_shards_and_index(self):
        tc = self.tc
        L = tc["num_hidden_layers"]
        names = self.shards()
        self.assertEqual(names, [f"model-{n:05d}-of-{L + 3:06d}.safetensors" for n in range(1, L + 4)])
        expected = {}
        for i in range(L):
            expected[names[i]] = expected_layer(tc, i, PRE)
        D, V = tc["hidden_size"], tc["vocab_size"]
        expected[names[L]] = {PRE + "model.embed_tokens.weight": ("BF16", [V, D]),
                              PRE + "model.norm.weight": ("BF16", [D]),
                              PRE + "model.output_attn_res_norm.weight": ("BF16", [D]),
                              PRE + "model.output_attn_res_proj.weight": ("BF16", [1, D]),
                              PRE + "lm_head.weight": ("BF16", [V, D])}
        total = 0
        weight_map = {}
        for fn in names:
            n, raw_hdr, hdr, data = read_st(os.path.join(self.snap, fn))
            self.assertEqual((8 + n) % 8, 0, fn)
            self.assertEqual(raw_hdr.decode().rstrip(" "), raw_hdr.decode().rstrip(" ").strip())
            self.assertEqual(hdr.pop("__metadata__"), {"format": "pt"}, fn)
            pos = 0
            for name, ent in hdr.items():  # holeless, header order = data order
                self.assertEqual(ent["data_offsets"][0], pos, f"{fn}: {name}")
                pos = ent["data_offsets"][1]
                weight_map[name] = fn
            self.assertEqual(pos, len(data), fn)
            total += pos
            if fn in expected:
                got = {k: (v["dtype"], v["shape"]) for k, v in hdr.items()}
                self.assertEqual(got, expected[fn], fn)
            else:  # vision shards
                self.assertTrue(all(k.startswith(("vision_tower.", "mm_projector.")) for k in hdr), fn)
                self.assertTrue(all(v["dtype"] == "BF16" for v in hdr.values()), fn)
            experts = [k for k in hdr if ".experts." in k]
            if experts:
                E = tc["num_experts"]
                ids = [int(k.split(".experts.")[1].split(".")[0]) for k in experts[::6]]
                self.assertEqual(ids, sorted(range(E), key=lambda e: str(e) + "."), fn)
                self.assertNotEqual(ids, list(range(E)))
                tail = list(hdr)[-len(experts):]
                self.assertEqual(tail, experts, f"{fn}: experts are not one contiguous run")
                for j in range(0, len(experts), 6):
                    self.assertEqual([k.rsplit(".", 2)[-2] + "." + k.rsplit(".", 1)[-1] for k in experts[j:j + 6]],
                                     ["w1.weight_packed", "w1.weight_scale", "w2.weight_packed",
                                      "w2.weight_scale", "w3.weight_packed", "w3.weight_scale"])
        vision = [k for k in weight_map if k.startswith(("vision_tower", "mm_projector"))]
        self.assertTrue(any(k.startswith("mm_projector.") for k in vision))
        self.assertTrue(any(k.startswith("vision_tower.") for k in vision))
        with open(os.path.join(self.snap, "model.safetensors.index.json")) as f:
            idx = json.load(f)
        self.assertEqual(idx["weight_map"], weight_map)
        self.assertEqual(idx["metadata"]["total_size"], total)

    def test_tokenizer(self):
        tc, root = self.tc, self.root
        with open(os.path.join(self.snap, "tiktoken.model")) as f:
            lines = [ln.split() for ln in f if ln.strip()]
        toks = [base64.b64decode(a) for a, _ in lines]
        self.assertEqual([int(r) for _, r in lines], list(range(len(lines))))
        gpt2 = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
        gpt2 += [b for b in range(256) if b not in gpt2]
        self.assertEqual(toks[:256], [bytes([b]) for b in gpt2])
        self.assertEqual(len(set(toks)), len(toks))
        seen = set(toks[:256])
        for t in toks[256:]:
            self.assertTrue(any(t[:k] in seen and t[k:] in seen for k in range(1, len(t))), t)
            seen.add(t)
        nb = len(toks)
        self.assertEqual(tc["vocab_size"], nb + 256)
        for sample in ("的".encode(), "о".encode(), b" the", b"'t"):
            self.assertIn(sample, toks)
        def whole_chars(t):
            try:
                return t.decode("utf-8")
            except UnicodeDecodeError:
                return ""
        self.assertTrue(any(len(whole_chars(t)) >= 2 and ord(whole_chars(t)[0]) > 0x2E80 for t in toks),
                        "no multi-character CJK/kana token was learned")
        with open(os.path.join(self.snap, "tokenizer_config.json")) as f:
            dec = json.load(f)["added_tokens_decoder"]
        want = {0: "[BOS]", 1: "[EOS]", 2: "<|end_of_msg|>", 3: "<|open|>", 4: "<|close|>", 5: "<|sep|>",
                6: "[start_header_id]", 7: "[end_header_id]", 9: "[EOT]", 18: "<|media_begin|>",
                19: "<|media_content|>", 20: "<|media_end|>", 21: "<|media_pad|>", 65: "<osagent_mode>",
                254: "[UNK]", 255: "[PAD]"}
        self.assertEqual({int(k) - nb: v["content"] for k, v in dec.items()}, want)
        self.assertFalse(dec[str(nb + 4)]["special"])
        self.assertTrue(dec[str(nb + 0)]["special"])
        self.assertEqual(root["bos_token_id"], nb)
        self.assertEqual(root["eos_token_id"], nb + 2)
        self.assertEqual(tc["eos_token_id"], nb + 2)

    def test_values(self):
        tc = self.tc
        names = self.shards()
        Z, Mi = tc["routed_expert_hidden_size"], tc["moe_intermediate_size"]
        e2m1 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6], np.float32)
        _, _, hdr, data = read_st(os.path.join(self.snap, names[1]))
        hdr.pop("__metadata__")
        m = PRE + "model.layers.1.block_sparse_moe."
        stds = []
        for e in (0, 5):
            for w, fan_in in (("w1", Z), ("w2", Mi), ("w3", Z)):
                p = tensor(hdr, data, f"{m}experts.{e}.{w}.weight_packed", np.uint8)
                s = tensor(hdr, data, f"{m}experts.{e}.{w}.weight_scale", np.uint8)
                self.assertTrue(s.min() >= 1 and s.max() <= 254)
                codes = np.stack([p & 15, p >> 4], axis=1).reshape(-1)
                val = e2m1[codes] * np.repeat(np.ldexp(np.float32(1), s.astype(np.int32) - 127), 32)
                stds.append(float(val.std() * np.sqrt(fan_in)))
        self.assertTrue(all(0.6 < x < 1.6 for x in stds), stds)
        a = PRE + "model.layers.1.self_attn."
        alog = tensor(hdr, data, a + "A_log", np.float32)
        Hk = tc["linear_attn_config"]["num_heads"]
        self.assertTrue(np.all(alog[Hk:] == 0) and np.all(alog[:Hk] != 0))
        for name, ent in hdr.items():
            if ent["dtype"] == "BF16":
                x = bf16(tensor(hdr, data, name, np.uint16))
                self.assertTrue(np.all(np.isfinite(x)), name)
                if name.endswith("norm.weight"):
                    self.assertLess(abs(float(x.mean()) - 1.0), 0.05, name)
                elif name.endswith("proj.weight") and "res_proj" not in name:
                    fan_in = ent["shape"][-1]
                    self.assertLess(abs(float(x.std()) * np.sqrt(fan_in) - 1.0), 0.25, name)
        bias = tensor(hdr, data, m + "gate.e_score_correction_bias", np.float32)
        self.assertGreater(float(bias.std()), 0.0)

    def test_deterministic_and_prefix(self):
        again = os.path.join(self.work, "again")
        other = os.path.join(self.work, "other-seed")
        bare = os.path.join(self.work, "no-prefix")
        synth(again)
        synth(other, "tiny", 8)
        synth(bare, "tiny", 7, "--no-prefix")
        for fn in os.listdir(self.snap):
            with open(os.path.join(self.snap, fn), "rb") as a, open(os.path.join(again, fn), "rb") as b:
                self.assertEqual(a.read(), b.read(), fn)
        fn = self.shards()[2]
        n1, h1, _, d1 = read_st(os.path.join(self.snap, fn))
        n2, h2, _, d2 = read_st(os.path.join(other, fn))
        self.assertEqual(h1, h2)
        self.assertNotEqual(d1, d2)
        _, _, hb, db = read_st(os.path.join(bare, fn))
        self.assertTrue(all(not k.startswith(PRE) for k in hb))
        self.assertEqual(db, d1)

    def test_checker_accepts_sound_and_rejects_broken(self):
        src = self.snap
        good = {}
        for args in ((4,), (8,), (16,), (4, 4, 4)):
            dst = os.path.join(self.work, "c" + "-".join(map(str, args)))
            fake_repack(src, dst, *args)
            flags = ["--bits", str(args[0])]
            if len(args) > 1:
                flags += ["--mla-bits", str(args[1]), "--head-bits", str(args[2])]
            rc, out = run_check(src, dst, *flags)
            self.assertEqual(rc, 0, out)
            self.assertIn("OK", out)
            good[args] = dst
        rc, out = run_check(src, good[(4,)], "--bits", "8")  # settings mismatch -> quant form differs
        self.assertEqual(rc, 1, out)
        rc, out = run_check(src, good[(4,)], "--bits", "4", "--require-manifest")
        self.assertEqual(rc, 1, out)
        self.assertIn("k3-manifest.json", out)

        with_manifest = os.path.join(self.work, "c4-manifest")
        fake_repack(src, with_manifest, 4, manifest=True)
        rc, out = run_check(src, with_manifest, "--bits", "4", "--require-manifest")
        self.assertEqual(rc, 0, out)
        self.assertIn("manifest ok", out)

        def edit_manifest(d, change):
            p = os.path.join(d, "k3-manifest.json")
            with open(p) as f:
                man = json.load(f)
            change(man)
            with open(p, "w") as f:
                json.dump(man, f)

        manifest_edits = {
            "expert digest": (lambda m: m["shards"][1]["experts"][2].update(sha256="0" * 64), "sha256"),
            "expert offset": (lambda m: m["shards"][1]["experts"][0].update(offset=8), "range"),
            "settings": (lambda m: m["settings"].update(mla_bits=4), "settings"),
            "shard size": (lambda m: m["shards"][0].update(size=1), "size"),
            "file list": (lambda m: m["files"].pop(), "files"),
        }
        for what, (change, msg) in manifest_edits.items():
            with self.subTest(broken_manifest=what):
                d = os.path.join(self.work, "manifest-" + what.replace(" ", "-"))
                shutil.copytree(with_manifest, d)
                edit_manifest(d, change)
                rc, out = run_check(src, d, "--bits", "4")
                self.assertEqual(rc, 1, out)
                self.assertIn(msg, out)

        base = good[(4,)]
        _, _, hdr, _ = read_st(os.path.join(base, "model-00002-of-000009.safetensors"))
        n = read_st(os.path.join(base, "model-00002-of-000009.safetensors"))[0]

        def flip(tname, shard="model-00002-of-000009.safetensors", fn=None):
            def go(d):
                p = os.path.join(d, fn or shard)
                with open(p, "r+b") as f:
                    pos = 0 if fn else 8 + n + hdr[tname]["data_offsets"][0] + 3
                    f.seek(pos)
                    b = f.read(1)
                    f.seek(pos)
                    f.write(bytes([b[0] ^ 0x10]))
            return go

        def edit_index(d):
            p = os.path.join(d, "model.safetensors.index.json")
            with open(p) as f:
                idx = json.load(f)
            idx["metadata"]["total_size"] += 1
            with open(p, "w") as f:
                json.dump(idx, f)

        def remove(fn):
            return lambda d: os.remove(os.path.join(d, fn))

        def rename_shard(d):
            os.rename(os.path.join(d, "model-00003-of-000009.safetensors"),
                      os.path.join(d, "model-00003-of-000011.safetensors"))

        m = PRE + "model.layers.1."
        post_edits = {
            "expert byte": (flip(m + "block_sparse_moe.experts.3.w2.weight_scale"), "bytes differ"),
            "int4 payload": (flip(m + "self_attn.q_proj.weight"), "payload bytes differ"),
            "qs scale": (flip(m + "self_attn.q_proj.weight.qs"), "scales differ"),
            "pass tensor": (flip(m + "block_sparse_moe.gate.weight"), "bytes differ"),
            "index total": (edit_index, "total_size"),
            "missing shard": (remove("model-00004-of-000009.safetensors"), "missing"),
            "renamed shard": (rename_shard, "output shard name"),
            "config copy": (flip(None, fn="tokenizer_config.json"), "copy differs"),
            "missing tiktoken": (remove("tiktoken.model"), "not copied"),
        }
        for what, (edit, msg) in post_edits.items():
            with self.subTest(broken=what):
                d = os.path.join(self.work, "broken-" + what.replace(" ", "-"))
                shutil.copytree(base, d)
                edit(d)
                rc, out = run_check(src, d, "--bits", "4")
                self.assertEqual(rc, 1, out)
                self.assertIn(msg, out)
        build_edits = {
            "experts out of id order": (dict(swap_experts=True), "order differs"),
            "vision kept": (dict(keep_vision=True), "unexpected output shard"),
            "sidecar dropped": (dict(drop_qs=True), "order differs"),
            "hole": (dict(hole=True), "hole"),
            "metadata written": (dict(metadata={"format": "pt"}), "__metadata__"),
        }
        for what, (kw, msg) in build_edits.items():
            with self.subTest(broken=what):
                d = os.path.join(self.work, "built-" + what.replace(" ", "-"))
                fake_repack(src, d, 4, **kw)
                rc, out = run_check(src, d, "--bits", "4")
                self.assertEqual(rc, 1, out)
                self.assertIn(msg, out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
