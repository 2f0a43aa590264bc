#!/usr/bin/python3
"""k3-mini's dimensions, in the key layout of k3_synth.PRESETS (so the
snapshot's config.json, tensor names, shapes and shard plan come from the same
functions as the synthetic presets), sized to train on 2 shared cores in about
half an hour: every K3 structural feature, tiny widths. Widths are multiples of
64 (int4-g64 groups) and of 32 (MXFP4 groups)."""

import k3_synth_config

PRESET = dict(
    hidden=128, layers=8, full_attn=[4, 8], block=3, dense_inter=256,
    experts=16, topk=4, moe_inter=32, latent=64, shared=2,
    kda_heads=2, kda_dim=32, conv=4,
    mla_heads=2, q_lora=64, kv_lora=64, nope=32, rope=32, v_dim=32,
    num_base=2048, vision_width=32, vision_blocks=1)


def text_config(p=PRESET):
    return k3_synth_config.root_config(p, "k3-mini", 0, 1)["text_config"]
