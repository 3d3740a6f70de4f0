"""Wider cases of the fuzz campaign (benchmarks/fuzz_cases.py, fuzz_files.py): a Hugging Face config of every
architecture flopcast reads with any key it reads given a hostile value, the columns of each row schema that the
shipped CSVs leave out, sweep files over every field, layout pin, what-if knob and serving field, and options
drawn together where they interact (--cp with --ep, --disaggregate with --speculative, a budget or deadline with
tiny and huge clusters). tests/test_fuzz_generators.py fails when a command, file or endpoint gains a field that
none of these sets."""

from __future__ import annotations

import json
import random
from pathlib import Path

_LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
          "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
          "max_position_embeddings": 8192, "tie_word_embeddings": False, "rope_theta": 500000.0,
          "torch_dtype": "bfloat16", "attention_dropout": 0.0, "hidden_act": "silu"}
_SMALL = {"hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 16, "num_key_value_heads": 4,
          "intermediate_size": 2816, "vocab_size": 32000, "max_position_embeddings": 4096}
HF_TEMPLATES = {  # one config per model_type the reader knows (flopcast.model.hf.READERS and WRAPPERS)
    "llama": _LLAMA,
    "mistral": {**_LLAMA, "architectures": ["MistralForCausalLM"], "model_type": "mistral", "sliding_window": 4096},
    "qwen2": {**_SMALL, "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "use_sliding_window": False,
              "sliding_window": 32768, "max_window_layers": 28, "tie_word_embeddings": True},
    "qwen3": {**_SMALL, "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "head_dim": 128},
    "gemma": {**_SMALL, "architectures": ["GemmaForCausalLM"], "model_type": "gemma", "head_dim": 256},
    "gemma2": {**_SMALL, "architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "head_dim": 256,
               "sliding_window": 4096, "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0},
    "gemma3_text": {**_SMALL, "architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "head_dim": 256,
                    "sliding_window": 1024, "sliding_window_pattern": 6,
                    "layer_types": ["sliding_attention"] * 3 + ["full_attention"]},
    "gemma3": {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
               "text_config": {**_SMALL, "model_type": "gemma3_text", "head_dim": 256, "sliding_window": 1024},
               "vision_config": {"hidden_size": 1152}},
    "mixtral": {**_LLAMA, "architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "num_local_experts": 8,
                "num_experts_per_tok": 2, "router_aux_loss_coef": 0.02},
    "qwen2_moe": {**_SMALL, "architectures": ["Qwen2MoeForCausalLM"], "model_type": "qwen2_moe", "num_experts": 60,
                  "num_experts_per_tok": 4, "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
                  "decoder_sparse_step": 1, "mlp_only_layers": []},
    "qwen3_moe": {**_SMALL, "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "num_experts": 128,
                  "num_experts_per_tok": 8, "moe_intermediate_size": 768, "decoder_sparse_step": 1, "head_dim": 128,
                  "mlp_only_layers": [0]},
    "deepseek_v2": {**_SMALL, "architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2",
                    "n_routed_experts": 64, "num_experts_per_tok": 6, "n_shared_experts": 2,
                    "moe_intermediate_size": 1408, "first_k_dense_replace": 1, "moe_layer_freq": 1,
                    "kv_lora_rank": 512, "q_lora_rank": None, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
                    "v_head_dim": 128},
    "deepseek_v3": {**_SMALL, "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
                    "n_routed_experts": 256, "num_experts_per_tok": 8, "n_shared_experts": 1, "n_group": 8,
                    "topk_group": 4, "moe_intermediate_size": 2048, "first_k_dense_replace": 3, "moe_layer_freq": 1,
                    "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
                    "v_head_dim": 128, "num_nextn_predict_layers": 1, "routed_scaling_factor": 2.5},
    "llama4_text": {**_SMALL, "architectures": ["Llama4ForCausalLM"], "model_type": "llama4_text",
                    "num_local_experts": 16, "num_experts_per_tok": 1, "intermediate_size_mlp": 16384,
                    "interleave_moe_layer_step": 2, "attention_chunk_size": 8192, "no_rope_layers": [],
                    "head_dim": 128, "moe_layers": [1, 3]},
    "llama4": {"architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4",
               "text_config": {**_SMALL, "model_type": "llama4_text", "num_local_experts": 16,
                               "num_experts_per_tok": 1, "intermediate_size_mlp": 16384,
                               "interleave_moe_layer_step": 2}, "vision_config": {"hidden_size": 1408}},
    "gpt_neox": {"architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox", "hidden_size": 2048,
                 "num_hidden_layers": 16, "num_attention_heads": 16, "intermediate_size": 8192, "vocab_size": 50304,
                 "max_position_embeddings": 2048, "rotary_pct": 0.25, "use_parallel_residual": True},
    "gpt2": {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12,
             "n_inner": None, "n_positions": 1024, "n_ctx": 1024, "vocab_size": 50257, "resid_pdrop": 0.1,
             "embd_pdrop": 0.1, "attn_pdrop": 0.1},
}
# every key a reader maps (flopcast/model/hf.py), whichever template holds it
HF_KEYS = sorted({k for t in HF_TEMPLATES.values() for k in t} | {
    "head_dim", "sliding_window", "layer_types", "use_sliding_window", "max_window_layers", "sliding_window_pattern",
    "_sliding_window_pattern", "quantization_config", "rope_scaling", "attention_bias", "mlp_bias", "n_group",
    "topk_group", "num_nextn_predict_layers", "mtp_layers", "moe_layers", "no_rope_layer_interval", "hidden_dropout",
    "original_max_position_embeddings", "dtype", "text_config", "pretraining_tp", "_name_or_path"})
HF_VALUES = [0, -1, 1, 2, 3, 7, 1e30, 1e308, "x", None, [1], True, False, 2**63, 2**31, 1.5, 8.0, float("nan"),
             {"a": 1}, "8", 1e-300, [], -2**63, float("inf"), "true", "1e3", [[1]], ["full_attention"] * 100_000,
             ["sliding_attention", "bogus"], {"type": "yarn", "factor": 1e30}, {"quant_method": "fp8"}, "", 65536,
             1048576, 16777217, 134217729, -0.0, [0, 1, 2, 99], {"rope_type": "llama3", "factor": 8.0},
             "\ud800x", "\udcff", "\U0001f999", "\u202e", {"\ud800": 1}]  # escapes json.dumps writes as \\ud800


def hf_config(rng: random.Random, folder: Path) -> Path:
    """A config.json of one architecture with one to three keys (its own, another's, or nested) set hostile."""
    cfg = json.loads(json.dumps(HF_TEMPLATES[rng.choice(sorted(HF_TEMPLATES))]))
    for _ in range(rng.randint(1, 3)):
        nested = isinstance(cfg.get("text_config"), dict) and rng.random() < 0.6
        target = cfg["text_config"] if nested else cfg
        own = sorted(target) if rng.random() < 0.6 else HF_KEYS
        target[rng.choice(own)] = rng.choice(HF_VALUES)
    if rng.random() < 0.1:
        cfg.pop(rng.choice(sorted(cfg)))
    path = folder / f"hf{rng.randrange(10**6)}" / "config.json"
    path.parent.mkdir()
    text = json.dumps(cfg)
    path.write_text(text if rng.random() < 0.92 else rng.choice(["{not json", "[]", "null", '"x"', text[:-1], "{}"]))
    return path


# ---- CSV columns the shipped files leave out ---------------------------------------------------------------------

def schemas() -> dict:
    """kind -> the row schema the file is read with (training, serving and memory validate rows, serve --trace)."""
    from flopcast.simulate.serving import requests
    from flopcast.validate import inference, memory, rows

    return {"training": rows.TRAINING, "serving": inference.SERVING, "memory": memory.MEMORY, "trace": requests.TRACE}


def _cell(rng: random.Random, column) -> str:
    b = column.bound
    if b is None:
        return rng.choice(["x", "", "bf16", "selective", "zero1", "megatron", "true", "no", "yes", "1", "\u00e9", "a,b",
                           "optimum-neuron SDK 2.28", "neuronx-distributed-inference SDK 99.1", "SDK x", "vllm",
                           "guidellm", "mean", "p50", "flex", "1f1b", "dualpipe", "2024-13-45", "fa2", "full"])
    picks = [b.low, b.high, (b.low + b.high) / 2, b.high * 1.0001 + 1, b.low - 1, "nan", "inf", "", "x", "1e308",
             "-0", "1_000", "0x10"]
    v = rng.choice(picks)
    return str(int(v)) if b.integer and isinstance(v, float) and v == int(v) else str(v)


def extra_columns(rng: random.Random, kind: str, header: list, body: list) -> None:
    """Add one to three columns of the kind's schema the header lacks, with edge and hostile cells (in place)."""
    schema = schemas().get(kind)
    if schema is None:
        return
    missing = [c for c in schema.columns if c not in header]
    for name in rng.sample(missing, min(len(missing), rng.randint(1, 3))):
        header.append(name)
        for row in body:
            row.append(_cell(rng, schema.columns[name]))


# ---- sweep files ---------------------------------------------------------------------------------------------------

def _knobs() -> list:
    from flopcast.sweep.hardware import KNOBS

    return list(KNOBS)


def _layout_fields() -> tuple:
    from flopcast.model.strategy import LAYOUT_FIELDS

    return LAYOUT_FIELDS


LAYOUT_VALUES = ["1", "2", "8", "0", "-1", "1e30", "x", "true", "null", "[1, 2]", "full", "zero3", "bf16", "dualpipe"]
KNOB_VALUES = ["[1x, 2x]", "[0.5x]", "[0x]", "[-1x]", "[1e30x]", "[nanx]", "{from: 0.5x, to: 2x, steps: 3}",
               "{from: 1x, to: 1e30x, times: 1.0000001}", "[96 GiB]", "[1 W, 1e9 W]", "[8, 65536, 0]", "[2 us, -1 s]",
               "[1 TB/s]", "[x]", "[]", "5", "{from: 2x, to: 1x, step: 1}", "[1 PFLOP/s]", "[40 USD/h, -1 USD/h]"]
SERVING_FIELDS = {"slo_ttft": ["1s", "[1s, 2s]", "0", "-1s", "nan", "1e30s", "[]", "x"],
                  "slo_tpot": ["50ms", "[50ms, 100ms]", "0s", "inf", "1e-30s", "x"],
                  "input_tokens": ["512", "uniform:1:1e30", "lognormal:100:1", "0", "[512, 2048]", "134217729"],
                  "output_tokens": ["128", "0", "[1, 200000]", "uniform:5:1", "x", "1e30"],
                  "qps": ["100", "[100, 1000]", "0", "-1", "1e30", "nan", "1e-308", "null"],
                  "weights": ["[bf16, fp8]", "int4", "fp3", "[]", "5"], "kv_dtype": ["fp8", "[bf16, x]", "[]"],
                  "requests": ["300", "9", "100001", "1e30", "x", "10"],
                  "disaggregate": ["false", "true", "'no'", "maybe", "1", "[]"]}


def sweep_file(rng: random.Random, folder: Path) -> Path:
    """A sweep over a few fields with edge and hostile values: what-if knobs, layout pins, a serving block."""
    lines = ["models: [" + rng.choice(["llama3-8b", "mixtral-8x7b", "llama3-8b, gpt3-175b", "deepseek-v3"]) + "]",
             "systems: [" + rng.choice(["p5.48xlarge", "trn2.48xlarge", "gb200-nvl72, r8g.xlarge"]) + "]"]
    r = rng.random()
    if r < 0.35:
        block = {"slo_ttft": "1s", "slo_tpot": "50ms", "requests": "20"}
        for f in rng.sample(sorted(SERVING_FIELDS), rng.randint(1, 3)):
            block[f] = rng.choice(SERVING_FIELDS[f])
        lines.append("serving: {" + ", ".join(f"{k}: {v}" for k, v in block.items()) + "}")
        if rng.random() < 0.2:
            lines.append(rng.choice(["chips: [8]", "layout: {tp: 2}", "tokens: [1T]"]))  # training fields
    else:
        lines.append("chips: " + rng.choice(["[8]", "[1, 100000]", "{from: 8, to: 64, times: 2}", "[65536]"]))
        knobs = rng.sample(_knobs(), rng.randint(0, 2))
        if knobs:
            lines.append("what_if: {" + ", ".join(f"{k}: {rng.choice(KNOB_VALUES)}" for k in knobs) + "}")
        pins = rng.sample(_layout_fields(), rng.randint(0, 3))
        if pins:
            lines.append("layout: {" + ", ".join(f"{k}: {rng.choice(LAYOUT_VALUES)}" for k in pins) + "}")
        if rng.random() < 0.3:
            lines.append(rng.choice(["objective: [cost, energy, time_with_failures]", "tokens_per_param: 1e-300",
                                     "tokens: {from: 1T, to: 2T, steps: 2}", "seq_len: [1, 134217728]",
                                     "tokens_per_param: 20", "name: " + "a" * 300]))
    path = folder / f"sweep{rng.randrange(10**6)}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


# ---- options drawn together ---------------------------------------------------------------------------------------

SMALL_BIG = ["1", "2", "3", "4", "8", "16", "64", "1000", "65536", "0", "1e30"]
COMBOS = {  # command -> lists of options given together (each value drawn from its list)
    "train": [{"--cp": SMALL_BIG, "--ep": SMALL_BIG, "--etp": ["1", "2", "8"]},
              {"--cp": SMALL_BIG, "--tp": SMALL_BIG, "-n": ["1", "8", "100000", "100000000"]},
              {"--schedule": ["dualpipe", "interleaved"], "--vp": SMALL_BIG, "--pp": SMALL_BIG},
              {"--sequence-parallel": [""], "--tp": ["1", "8"], "--dtype": ["fp8", "nvfp4", "mxfp4", "cfp8"]}],
    "plan": [{"--budget": ["1", "100", "1e12", "0.01", "2.5M", "1e20"], "--deadline": ["1s", "1h", "100y", "30d"]},
             {"--budget": ["1", "1e12", "2.5M"], "--tokens": ["1", "1e17", "15T", "chinchilla"]},
             {"--deadline": ["1s", "1 min", "10000y", "1e-6s"], "--max-global-batch": ["1", "1000000000"]},
             {"--pareto": [""], "--budget": ["5", "1e12"], "--cp": SMALL_BIG, "--ep": SMALL_BIG}],
    "serve": [{"--disaggregate": ["1x1", "2x3", "8x8"], "--speculative": ["draft", "eagle", "medusa", "mtp"],
               "--spec-tokens": ["1", "8", "64"], "--acceptance": ["0.01", "0.99", "1"]},
              {"--disaggregate": ["1x1", "4x1"], "--prefill-tp": SMALL_BIG, "--decode-tp": SMALL_BIG,
               "--prefix-tokens": ["0", "512", "1000000"]},
              {"--speculative": ["draft", "mtp"], "--prefix-tokens": ["128", "100000"], "--replicas": SMALL_BIG},
              {"--find-capacity": [""], "--disaggregate": ["1x1", "2x2"], "--slo-tpot": ["1ms", "1e30s", "10s"]},
              {"--pp": SMALL_BIG, "--ep": SMALL_BIG, "--tp": SMALL_BIG, "-n": ["1", "8", "1000000"]}],
    "deploy": [{"--qps": ["1e-6", "1e7", "5"], "--weights": ["bf16,fp8,int4", "fp8,fp8", "bf16,,fp8", "q4_0,awq-int4"],
                "--kv-dtype": ["bf16,fp8", "fp8,x", "q8_0,q4_0"]},
               {"--no-disaggregate": [""], "--slo-ttft": ["1ms", "1e30s"], "--slo-tpot": ["1us", "1h"]}],
    "reliability": [{"-n": ["1", "100000", "100000000"], "--mtbf-chip-hours": ["1", "1e9", "10"],
                     "--spares": ["0", "1000000"], "--interval": ["1s", "100y"]}],
    "search": [{"--cp": SMALL_BIG, "--ep": SMALL_BIG, "-n": ["1", "8", "100000"], "--top": ["1", "1000"]}],
}
COMBOS["compare"] = COMBOS["train"][:2]


def combo(rng: random.Random, command: str, flags: set) -> list:
    """Options of the command that interact, given together (only flags the command has)."""
    out = []
    for flag, pool in rng.choice(COMBOS.get(command) or [{}]).items():
        if flag in flags or flag == "-n" and "--chips" in flags:
            v = rng.choice(pool)
            out += [flag] if v == "" else [flag, v]
    return out
