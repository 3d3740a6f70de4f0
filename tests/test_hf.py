"""Hugging Face config.json files as models: each config below is written by the test, with the keys and
values of the published checkpoint's config.json; parameter counts are checked against the published totals."""

import json

import pytest

from flopcast import api, catalog
from flopcast.cli import main
from flopcast.cost.params import active_params, total_params
from flopcast.errors import FlopcastError
from flopcast.model import hf

COMMON = {"attention_dropout": 0.0, "initializer_range": 0.02, "rms_norm_eps": 1e-06, "use_cache": True,
          "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "hidden_act": "silu"}

LLAMA3_8B = {**COMMON, "architectures": ["LlamaForCausalLM"], "model_type": "llama", "bos_token_id": 128000,
             "eos_token_id": 128001, "hidden_size": 4096, "intermediate_size": 14336, "max_position_embeddings": 8192,
             "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "rope_theta": 500000.0,
             "tie_word_embeddings": False, "vocab_size": 128256, "attention_bias": False, "mlp_bias": False}

QWEN3_8B = {**COMMON, "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "attention_bias": False,
            "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_size": 4096,
            "intermediate_size": 12288, "max_position_embeddings": 40960, "max_window_layers": 36,
            "num_attention_heads": 32, "num_hidden_layers": 36, "num_key_value_heads": 8, "rope_scaling": None,
            "rope_theta": 1000000, "sliding_window": None, "tie_word_embeddings": False, "use_sliding_window": False,
            "vocab_size": 151936}

QWEN3_30B_A3B = {**COMMON, "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
                 "attention_bias": False, "decoder_sparse_step": 1, "head_dim": 128, "hidden_size": 2048,
                 "intermediate_size": 6144, "max_position_embeddings": 40960, "max_window_layers": 48,
                 "mlp_only_layers": [], "moe_intermediate_size": 768, "norm_topk_prob": True,
                 "num_attention_heads": 32, "num_experts": 128, "num_experts_per_tok": 8, "num_hidden_layers": 48,
                 "num_key_value_heads": 4, "output_router_logits": False, "rope_theta": 1000000.0,
                 "router_aux_loss_coef": 0.001, "sliding_window": None, "tie_word_embeddings": False,
                 "use_sliding_window": False, "vocab_size": 151936}

DEEPSEEK_V3 = {**COMMON, "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
               "attention_bias": False, "aux_loss_alpha": 0.001, "bos_token_id": 0, "eos_token_id": 1, "ep_size": 1,
               "first_k_dense_replace": 3, "hidden_size": 7168, "intermediate_size": 18432, "kv_lora_rank": 512,
               "max_position_embeddings": 163840, "moe_intermediate_size": 2048, "moe_layer_freq": 1, "n_group": 8,
               "n_routed_experts": 256, "n_shared_experts": 1, "norm_topk_prob": True, "num_attention_heads": 128,
               "num_experts_per_tok": 8, "num_hidden_layers": 61, "num_key_value_heads": 128,
               "num_nextn_predict_layers": 1, "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
               "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                                       "weight_block_size": [128, 128]},
               "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
                                "original_max_position_embeddings": 4096, "type": "yarn"},
               "rope_theta": 10000, "routed_scaling_factor": 2.5, "scoring_func": "sigmoid", "seq_aux": True,
               "tie_word_embeddings": False, "topk_group": 4, "topk_method": "noaux_tc", "v_head_dim": 128,
               "vocab_size": 129280}


def llama4(experts, step, max_pos):
    text = {**COMMON, "model_type": "llama4_text", "attention_bias": False, "attention_chunk_size": 8192,
            "bos_token_id": 200000, "eos_token_id": [200001, 200007, 200008], "head_dim": 128, "hidden_size": 5120,
            "interleave_moe_layer_step": step, "intermediate_size": 8192, "intermediate_size_mlp": 16384,
            "max_position_embeddings": max_pos, "no_rope_layers": [1, 1, 1, 0] * 12, "num_attention_heads": 40,
            "num_experts_per_tok": 1, "num_hidden_layers": 48, "num_key_value_heads": 8,
            "num_local_experts": experts, "pad_token_id": 200018, "rms_norm_eps": 1e-05,
            "rope_scaling": {"factor": 16.0, "high_freq_factor": 1.0, "low_freq_factor": 1.0,
                             "original_max_position_embeddings": 8192, "rope_type": "llama3"},
            "rope_theta": 500000.0, "router_aux_loss_coef": 0.001, "tie_word_embeddings": False,
            "use_qk_norm": True, "vocab_size": 202048}
    return {"architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4", "boi_token_index": 200080,
            "eoi_token_index": 200081, "image_token_index": 200092, "text_config": text,
            "tie_word_embeddings": False, "torch_dtype": "bfloat16",
            "vision_config": {"model_type": "llama4_vision_model", "hidden_size": 1408, "num_hidden_layers": 34}}


MIXTRAL = {**COMMON, "architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "bos_token_id": 1,
           "eos_token_id": 2, "hidden_size": 4096, "intermediate_size": 14336, "max_position_embeddings": 32768,
           "num_attention_heads": 32, "num_experts_per_tok": 2, "num_hidden_layers": 32, "num_key_value_heads": 8,
           "num_local_experts": 8, "output_router_logits": False, "rms_norm_eps": 1e-05, "rope_theta": 1000000.0,
           "router_aux_loss_coef": 0.02, "sliding_window": None, "tie_word_embeddings": False, "vocab_size": 32000}

GEMMA3_1B = {"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "attention_bias": False,
             "attention_dropout": 0.0, "attn_logit_softcapping": None, "bos_token_id": 2,
             "cache_implementation": "hybrid", "eos_token_id": [1, 106], "final_logit_softcapping": None,
             "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 1152,
             "initializer_range": 0.02, "intermediate_size": 6912, "max_position_embeddings": 32768,
             "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1, "pad_token_id": 0,
             "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000,
             "rope_scaling": None, "rope_theta": 1000000, "sliding_window": 512, "sliding_window_pattern": 6,
             "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0", "use_cache": True,
             "vocab_size": 262144}

# Gemma 3 27B: a multimodal wrapper whose text_config leaves vocab_size and the layer pattern to the class defaults
GEMMA3_27B = {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3", "boi_token_index": 255999,
              "eoi_token_index": 256000, "eos_token_id": [1, 106], "image_token_index": 262144,
              "initializer_range": 0.02, "mm_tokens_per_image": 256,
              "text_config": {"head_dim": 128, "hidden_size": 5376, "intermediate_size": 21504,
                              "model_type": "gemma3_text", "num_attention_heads": 32, "num_hidden_layers": 62,
                              "num_key_value_heads": 16, "query_pre_attn_scalar": 168,
                              "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024},
              "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0",
              "vision_config": {"hidden_size": 1152, "image_size": 896, "model_type": "siglip_vision_model"}}

GPT2 = {"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
        "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256, "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 1024, "n_embd": 768, "n_head": 12, "n_layer": 12,
        "n_positions": 1024, "resid_pdrop": 0.1, "summary_activation": None, "summary_first_dropout": 0.1,
        "summary_proj_to_labels": True, "summary_type": "cls_index", "summary_use_proj": True,
        "task_specific_params": {"text-generation": {"do_sample": True, "max_length": 50}}, "vocab_size": 50257}


def write(tmp_path, cfg, folder="model"):
    d = tmp_path / folder
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(json.dumps(cfg))
    return d


def load(tmp_path, cfg, folder="model"):
    return catalog.load_model(str(write(tmp_path, cfg, folder) / "config.json"))


# (config, published total, published active or None, relative tolerance, source of the published figure)
PUBLISHED = {
    "llama3-8b": (LLAMA3_8B, 8.03e9, None, 0.002),  # Hugging Face checkpoint: 8,030,261,248
    "qwen3-8b": (QWEN3_8B, 8.2e9, None, 0.01),  # Qwen3 report Table 1: 8.2B
    "qwen3-30b-a3b": (QWEN3_30B_A3B, 30.5e9, 3.3e9, 0.01),  # Qwen3 report: 30.5B total, 3.3B activated
    "deepseek-v3": (DEEPSEEK_V3, 671e9, 37e9, 0.01),  # DeepSeek-V3 report: 671B / 37B without the 14B MTP module
    "llama4-scout": (llama4(16, 1, 10485760), 109e9, 17e9, 0.03),  # Meta: 109B / 17B (the vision encoder uncounted)
    "llama4-maverick": (llama4(128, 2, 1048576), 400e9, 17e9, 0.03),  # Meta: 400B / 17B
    "mixtral-8x7b": (MIXTRAL, 46.7e9, 12.9e9, 0.01),  # Mistral AI: 46.7B / 12.9B
    "gemma3-1b": (GEMMA3_1B, 999_885_952, None, 0.002),  # Hugging Face checkpoint count
    "gemma3-27b": (GEMMA3_27B, 27.0e9, None, 0.03),  # Google: 27B (the 0.4B SigLIP encoder uncounted)
    "gpt2": (GPT2, 124_439_808, None, 0.01),  # Hugging Face checkpoint; learned positions and biases uncounted
}


@pytest.mark.parametrize("name", PUBLISHED)
def test_parameter_counts_match_published_totals(tmp_path, name):
    cfg, total, active, tol = PUBLISHED[name]
    m = load(tmp_path, cfg, name)
    assert total_params(m) == pytest.approx(total, rel=tol)
    if active:
        assert active_params(m) == pytest.approx(active, rel=max(tol, 0.02))
    assert m.id == name and m.notes["config"].startswith("Hugging Face config")


@pytest.mark.parametrize("config, entry", [(LLAMA3_8B, "llama3-8b"), (QWEN3_30B_A3B, "qwen3-30b-a3b"),
                                           (DEEPSEEK_V3, "deepseek-v3"), (MIXTRAL, "mixtral-8x7b")])
def test_config_gives_the_catalog_entrys_dimensions(tmp_path, config, entry):
    """The importer and the hand-written catalog entry of the same checkpoint agree on every dimension."""
    m, ref = load(tmp_path, config), catalog.load_model(entry)
    for field in ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "mlp", "head_dim",
                  "tied_embeddings", "moe", "mla", "sliding_window"):
        assert getattr(m, field) == getattr(ref, field), field
    assert total_params(m) == total_params(ref)


def test_structure_of_each_family(tmp_path):
    v3 = load(tmp_path, DEEPSEEK_V3, "v3")
    assert v3.moe.dense_layers == 3 and v3.moe.shared_experts == 1 and v3.moe_layers == 58
    assert v3.mla.kv_lora_rank == 512 and v3.seq_len == 4096  # rope_scaling's original context, not 163840
    maverick = load(tmp_path, llama4(128, 2, 1048576), "maverick")
    assert maverick.moe_layers == 24 and maverick.dense_layers == 24 and maverick.ffn_hidden == 16384
    assert maverick.moe.shared_experts == 1 and maverick.moe.expert_ffn == 8192
    gemma = load(tmp_path, GEMMA3_1B, "g1")
    assert (gemma.sliding_window, gemma.sliding_every, gemma.tied_embeddings) == (512, 6, True)
    assert gemma.sliding_share == pytest.approx(5 / 6)
    g27 = load(tmp_path, GEMMA3_27B, "g27")
    assert g27.vocab == 262_208 and g27.sliding_every == 6 and "vocab_size 262208" in g27.notes["defaults"]
    assert load(tmp_path, QWEN3_8B, "q").sliding_window == 0  # use_sliding_window false
    gpt2 = load(tmp_path, GPT2, "gpt2")
    assert gpt2.mlp.value == "gelu" and gpt2.ffn_hidden == 3072 and gpt2.tied_embeddings and gpt2.dropout


def test_unmodelled_fields_are_named_never_dropped(tmp_path):
    v3 = load(tmp_path, DEEPSEEK_V3, "v3")
    assert "quantization_config" in v3.notes["not_modelled"]
    # group-limited routing and the MTP module are read into the model, not noted
    assert (v3.moe.groups, v3.moe.topk_groups, v3.mtp_layers) == (8, 4, 1)
    for key in ("num_nextn_predict_layers", "n_group", "topk_group"):
        assert key not in v3.notes["not_modelled"], key
    for key in ("rope_theta", "bos_token_id", "aux_loss_alpha", "scoring_func", "routed_scaling_factor"):
        assert key in v3.notes["no_cost_effect"], key
    scout = load(tmp_path, llama4(16, 1, 10485760), "scout")
    assert "attention_chunk_size" in scout.notes["not_modelled"]
    assert "vision_config (outside text_config)" in scout.notes["not_modelled"]
    # every key of the file is mapped onto a field, named in a note, or switched off (null/false/empty)
    # (keys the notes name, such as max_position_embeddings in the seq_len note, are not listed)
    mapped = {"deepseek_v3": {"architectures", "hidden_size", "intermediate_size", "kv_lora_rank", "hidden_act",
                              "moe_intermediate_size", "moe_layer_freq", "n_routed_experts", "n_shared_experts",
                              "num_attention_heads", "num_experts_per_tok", "num_hidden_layers", "num_key_value_heads",
                              "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "vocab_size",
                              "first_k_dense_replace", "n_group", "topk_group", "num_nextn_predict_layers"},
              "gpt2": {"architectures", "activation_function", "n_ctx", "n_head", "n_layer", "vocab_size",
                       "attn_pdrop", "embd_pdrop", "resid_pdrop"}}
    for cfg in (DEEPSEEK_V3, GPT2):
        m = load(tmp_path, cfg, cfg["model_type"])
        text = " ".join(str(v) for v in m.notes.values())
        unnamed = {k for k, v in cfg.items() if k not in text and v not in (None, False, [], {})}
        assert unnamed == mapped[cfg["model_type"]]
        assert "attention_bias" not in text  # false: switched off, nothing to say


def test_unknown_architecture_is_one_line_naming_the_supported(tmp_path):
    d = write(tmp_path, {"architectures": ["MambaForCausalLM"], "model_type": "mamba", "hidden_size": 768})
    with pytest.raises(FlopcastError) as exc:
        catalog.load_model(str(d))
    msg = str(exc.value)
    assert "\n" not in msg and "'mamba'" in msg and "deepseek_v3" in msg and "llama4" in msg and "gpt2" in msg


@pytest.mark.parametrize("change, expected", [
    ({"num_hidden_layers": 0}, "num_hidden_layers: 0; valid: a positive integer"),
    ({"num_key_value_heads": 5}, "kv_heads 5; valid: a divisor of heads"),
    ({"hidden_size": "4096"}, "hidden_size: '4096'; valid: a positive integer"),
    ({"vocab_size": None}, "no vocab_size"),
])
def test_bad_values_are_one_sentence(tmp_path, change, expected):
    with pytest.raises(FlopcastError) as exc:
        load(tmp_path, {**LLAMA3_8B, **change})
    assert expected in str(exc.value) and "\n" not in str(exc.value)


def test_paths_folder_and_file(tmp_path):
    d = write(tmp_path, QWEN3_8B, "Qwen3-8B")
    assert catalog.load_model(str(d)).id == "Qwen3-8B"  # the folder
    f = tmp_path / "qwen.json"
    f.write_text(json.dumps(QWEN3_8B))
    assert catalog.load_model(str(f)).id == "qwen"
    for bad, why in ((tmp_path / "none.json", "does not exist"), (tmp_path / "Qwen3-8B" / "x" / "", "")):
        if why:
            with pytest.raises(FlopcastError, match=why):
                catalog.load_model(str(bad))
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(FlopcastError, match="cannot read .* as JSON"):
        catalog.load_model(str(tmp_path / "broken.json"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(FlopcastError, match="holds no config.json"):
        catalog.load_model(str(tmp_path / "empty"))
    assert hf.config_path("llama3-8b") is None


def test_config_trains_and_serves_from_the_command_line(tmp_path, capsys):
    d = write(tmp_path, QWEN3_30B_A3B, "Qwen3-30B-A3B")
    assert main(["train", str(d), "-H", "p5.48xlarge", "-n", "16", "--seq-len", "4096", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["model"] == "Qwen3-30B-A3B" and out["step_time_s"] > 0
    r = api.train(str(d), "p5.48xlarge", 16, seq_len=4096)
    assert r.model.moe.experts == 128
    assert main(["infer", str(write(tmp_path, DEEPSEEK_V3, "DeepSeek-V3")), "-H", "p5.48xlarge", "--weights", "fp8",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)
    assert main(["serve", str(tmp_path / "DeepSeek-V3"), "-H", "p5e.48xlarge", "--weights", "fp8", "--qps", "1",
                 "--requests", "20", "--json"]) == 0
    served = json.loads(capsys.readouterr().out)
    assert served["completed"] == 20
    assert catalog.load_model(str(tmp_path / "DeepSeek-V3")).mtp_layers == 1  # num_nextn_predict_layers is modelled
    assert main(["train", str(write(tmp_path, QWEN3_8B, "Qwen3-8B")), "-H", "trn2.48xlarge", "-n", "16",
                 "--seq-len", "4096", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["model"] == "Qwen3-8B"
    d = write(tmp_path, {"model_type": "rwkv"}, "rwkv")
    assert main(["train", str(d)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unsupported architecture" in err


def test_mla_without_query_compression(tmp_path):
    """DeepSeek-V2-Lite (q_lora_rank null): 15.7B total, 2.4B activated (DeepSeek-AI 2024, arXiv:2405.04434 App. B)."""
    lite = {**DEEPSEEK_V3, "model_type": "deepseek_v2", "architectures": ["DeepseekV2ForCausalLM"],
            "hidden_size": 2048, "intermediate_size": 10944, "kv_lora_rank": 512, "moe_intermediate_size": 1408,
            "n_routed_experts": 64, "n_shared_experts": 2, "num_attention_heads": 16, "num_key_value_heads": 16,
            "num_experts_per_tok": 6, "num_hidden_layers": 27, "first_k_dense_replace": 1, "q_lora_rank": None,
            "vocab_size": 102400, "num_nextn_predict_layers": None, "quantization_config": None}
    m = load(tmp_path, lite, "lite")
    assert m.mla.q_lora_rank == 0 and "full rank" in m.notes["mla"]
    assert total_params(m) == pytest.approx(15.7e9, rel=0.01)
    # the 2.4B activated leave out the input embedding lookup (102400 x 2048 = 0.21B), as gpt-oss's card does
    assert active_params(m) - m.vocab * m.hidden == pytest.approx(2.4e9, rel=0.03)
    assert api.train(m, "p5.48xlarge", 8, tp=1, pp=1, micro_batch=1, global_batch=8, seq_len=4096).step_time_s > 0


def test_forecasts_carry_the_unmodelled_fields(tmp_path, capsys):
    from flopcast.cost import inference

    m = load(tmp_path, DEEPSEEK_V3, "DeepSeek-V3")
    r = api.train(m, "p5.48xlarge", 64, seq_len=4096)
    assert any("quantization_config" in n for n in r.notes)
    d = inference.deployment(m, api.resolve_system("p5.48xlarge"), weights="fp8")
    assert any("quantization_config" in n for n in d.assumptions)
    assert not hf.result_notes(catalog.load_model("deepseek-v3"))  # catalog entries carry their own notes


def test_oversized_or_deep_json_is_refused(tmp_path):
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(FlopcastError, match="nested too deeply"):
        catalog.load_model(str(tmp_path / "deep.json"))
    (tmp_path / "big.json").write_text('{"model_type": "llama", "pad": "' + "x" * (2 << 20) + '"}')
    with pytest.raises(FlopcastError, match="at most 1,048,576 bytes"):
        catalog.load_model(str(tmp_path / "big.json"))


def test_catalog_shows_a_config_with_its_unmapped_keys(tmp_path, capsys):
    d = write(tmp_path, DEEPSEEK_V3, "DeepSeek-V3")
    assert main(["catalog", str(d)]) == 0
    out = capsys.readouterr().out
    assert "Hugging Face config" in out and "mla.kv_lora_rank" in out and "mtp_layers" in out
    assert main(["catalog", str(d), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["computed_params"] == pytest.approx(671e9, rel=0.01)
