#!/usr/bin/python3
"""JSON side files of a synthetic K3 snapshot (spec 1.1-1.4, 7.1).

config.json with the `text_config` nesting and every key the spec lists,
and tokenizer_config.json with the 16 named K3 added tokens placed at
num_base + (K3 id - 163584), so the vocabulary matches the embedding rows.
"""

K3_BOS = 163584  # first added-token id of the real model; offsets below are relative to it

# The 16 named K3 added tokens: (id - 163584, content, special).
K3_ADDED = (
    (0, "[BOS]", True), (1, "[EOS]", True), (2, "<|end_of_msg|>", True),
    (3, "<|open|>", False), (4, "<|close|>", False), (5, "<|sep|>", False),
    (6, "[start_header_id]", True), (7, "[end_header_id]", True), (9, "[EOT]", True),
    (18, "<|media_begin|>", True), (19, "<|media_content|>", True),
    (20, "<|media_end|>", True), (21, "<|media_pad|>", True),
    (65, "<osagent_mode>", True), (254, "[UNK]", True), (255, "[PAD]", True),
)


def text_config(p, bos, eos, pad):
    L = p["layers"]
    kda = [i for i in range(1, L + 1) if i not in p["full_attn"]]
    return {
        "architectures": ["KimiLinearForCausalLM"],
        "model_type": "kimi_linear",
        "hidden_size": p["hidden"],
        "num_hidden_layers": L,
        "vocab_size": p["num_base"] + 256,
        "first_k_dense_replace": 1,
        "intermediate_size": p["dense_inter"],
        "num_attention_heads": p["mla_heads"],
        "num_key_value_heads": p["mla_heads"],
        "q_lora_rank": p["q_lora"],
        "kv_lora_rank": p["kv_lora"],
        "qk_nope_head_dim": p["nope"],
        "qk_rope_head_dim": p["rope"],
        "v_head_dim": p["v_dim"],
        "num_experts": p["experts"],
        "num_experts_per_token": p["topk"],
        "moe_intermediate_size": p["moe_inter"],
        "routed_expert_hidden_size": p["latent"],
        "num_shared_experts": p["shared"],
        "attn_res_block_size": p["block"],
        "activation_situ_beta": 4,
        "activation_situ_linear_beta": 25,
        "rms_norm_eps": 1e-05,
        "linear_attn_config": {
            "num_heads": p["kda_heads"],
            "head_dim": p["kda_dim"],
            "short_conv_kernel_size": p["conv"],
            "gate_lower_bound": -5,
            "kda_layers": kda,
            "full_attn_layers": list(p["full_attn"]),
            "use_full_rank_gate": True,
        },
        "hidden_act": "situ",
        "latent_moe_use_norm": True,
        "mla_use_nope": True,
        "mla_use_output_gate": True,
        "moe_router_activation_func": "sigmoid",
        "moe_renormalize": True,
        "use_grouped_topk": True,
        "topk_method": "noaux_tc",
        "num_expert_group": 1,
        "topk_group": 1,
        "routed_scaling_factor": 1.0,
        "moe_layer_freq": 1,
        "num_nextn_predict_layers": 0,
        "max_position_embeddings": 1048576,
        "tie_word_embeddings": False,
        "bos_token_id": bos,
        "eos_token_id": eos,
        "pad_token_id": pad,
        "quantization_config": {
            "quant_method": "compressed-tensors",
            "format": "mxfp4-pack-quantized",
            "quantization_status": "compressed",
            "global_compression_ratio": None,
            "kv_cache_scheme": None,
            "config_groups": {"group_0": {
                "targets": ["Linear"],
                "input_activations": None,
                "output_activations": None,
                "format": "mxfp4-pack-quantized",
                "weights": {
                    "num_bits": 4, "type": "float", "symmetric": True, "strategy": "group",
                    "group_size": 32, "scale_dtype": "torch.uint8", "dynamic": False,
                    "observer": "minmax", "observer_kwargs": {}, "actorder": None,
                    "block_structure": None, "zp_dtype": None}}},
            "ignore": ["re:.*self_attn.*", "re:.*shared_experts.*",
                       "re:.*mlp\\.(gate|up|gate_up|down)_proj.*", "re:.*lm_head.*",
                       "re:.*vision_tower.*", "re:.*mm_projector.*"],
        },
    }


def root_config(p, preset, seed, generator_version):
    nb = p["num_base"]
    bos, eos, pad = nb + 0, nb + 2, nb + 255
    vw = p["vision_width"]
    return {
        "architectures": ["KimiK3ForConditionalGeneration"],
        "model_type": "kimi_k3",
        "bos_token_id": bos,
        "eos_token_id": eos,
        "pad_token_id": pad,
        "media_placeholder_token_id": nb + 21,
        "image_placeholder": "<|kimi_image_placeholder|>",
        "tie_word_embeddings": False,
        "dtype": "bfloat16",
        "vision_config": {"hidden_size": vw, "num_hidden_layers": p["vision_blocks"],
                          "patch_size": 14, "mm_hidden_size": p["hidden"]},
        "text_config": text_config(p, bos, eos, pad),
        "k3_synth": {"preset": preset, "seed": seed, "generator_version": generator_version},
    }


def tokenizer_config(p):
    nb = p["num_base"]
    dec = {}
    for off, content, special in K3_ADDED:
        dec[str(nb + off)] = {"content": content, "lstrip": False, "normalized": False,
                              "rstrip": False, "single_word": False, "special": special}
    return {
        "added_tokens_decoder": dec,
        "bos_token": "[BOS]",
        "eos_token": "[EOS]",
        "pad_token": "[PAD]",
        "unk_token": "[UNK]",
        "clean_up_tokenization_spaces": False,
        "model_max_length": 1048576,
        "tokenizer_class": "TikTokenTokenizer",
    }
