"""A Hugging Face `config.json` as a Model, offline: the file a checkpoint ships with, read field by field.

Each architecture's reader names the config keys it maps (the transformers configuration classes of
the same name: LlamaConfig, Qwen3MoeConfig, DeepseekV3Config, Llama4TextConfig, GPT2Config, ...).
Every key of the file is accounted for: it is mapped onto a Model field, or listed in the Model's
notes as `not_modelled` (it changes the architecture in a way flopcast does not represent) or
`no_cost_effect` (token ids, initialisation, norm epsilons, RoPE base: nothing a time or memory
estimate depends on). Nothing is dropped silently.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from ..errors import FlopcastError
from ..limits import FFN, HEADS, LAYERS, TOKENS_PER_SEQ, WIDTH, read_bounded, resolved, unicode_text
from .workload import Mla, Mlp, Model, Moe

CONFIG_NAME = "config.json"
MAX_CONFIG_BYTES = 1 << 20  # a checkpoint's config.json is a few kB (DeepSeek-V3's: 1.7 kB)

# keys with no bearing on time or memory: read and named in the `no_cost_effect` note
NO_COST_EFFECT = frozenset({
    "architectures", "model_type", "transformers_version", "torch_dtype", "dtype", "_name_or_path", "auto_map",
    "bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id", "decoder_start_token_id",
    "initializer_range", "initializer_factor", "rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon",
    "rope_theta", "rope_local_base_freq", "rotary_emb_base", "rotary_pct", "partial_rotary_factor",
    "rope_interleave", "use_cache", "summary_type",
    "summary_use_proj", "summary_activation", "summary_proj_to_labels", "summary_first_dropout",
    "scale_attn_weights", "scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn", "task_specific_params",
    "pretraining_tp", "output_router_logits", "router_aux_loss_coef", "router_jitter_noise", "aux_loss_alpha",
    "seq_aux", "norm_topk_prob", "ep_size", "classifier_dropout", "routed_scaling_factor", "scoring_func",
    "topk_method", "use_parallel_residual", "no_rope_layers", "no_rope_layer_interval",
    "bos_token", "eos_token", "cache_implementation", "final_logit_softcapping", "query_pre_attn_scalar",
    "attn_temperature_tuning", "floor_scale", "attn_scale", "router_z_loss_coef", "use_qk_norm",
})

# the largest value of each integer key: the model schema's bounds (limits.py), so a config is read as a model
# file is; any other key (contexts, windows) at most TOKENS_PER_SEQ
MOST = {
    **dict.fromkeys(("num_hidden_layers", "n_layer", "first_k_dense_replace", "moe_layer_freq", "decoder_sparse_step",
                     "interleave_moe_layer_step", "sliding_window_pattern", "_sliding_window_pattern"), LAYERS),
    **dict.fromkeys(("num_attention_heads", "num_key_value_heads", "n_head", "num_experts", "num_local_experts",
                     "n_routed_experts", "num_experts_per_tok", "n_shared_experts", "n_group", "topk_group"), HEADS),
    **dict.fromkeys(("hidden_size", "n_embd", "head_dim", "kv_lora_rank", "q_lora_rank", "qk_nope_head_dim",
                     "qk_rope_head_dim", "v_head_dim"), WIDTH),
    **dict.fromkeys(("intermediate_size", "n_inner", "moe_intermediate_size", "intermediate_size_mlp", "vocab_size"),
                    FFN),
    "shared_expert_intermediate_size": 4 * FFN, "num_nextn_predict_layers": 64,
}


class _Fields:
    """A config mapping that records which keys were read, so the unread ones can be named."""

    def __init__(self, data: dict, label: str):
        self.data, self.label, self.read = data, label, set()

    def get(self, key: str, default=None):
        self.read.add(key)
        value = self.data.get(key)
        return default if value is None else value

    def dropout(self) -> bool:
        """Whether training applies dropout (its masks take activation memory): any dropout rate above zero."""
        keys = ("attention_dropout", "hidden_dropout", "resid_pdrop", "embd_pdrop", "attn_pdrop")
        rates = [self.get(k) for k in keys]  # every one read, so none is reported as unmapped
        return any(isinstance(v, (int, float)) and v > 0 for v in rates)

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def int(self, key: str, default: int | None = None, minimum: int = 1) -> int:
        value = self.get(key, default)
        if value is None:
            raise FlopcastError(f"{self.label}: no {key}; a {self._arch()} config.json states it "
                                f"(a positive integer)")
        most = MOST.get(key, TOKENS_PER_SEQ)
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= most:
            valid = "a positive integer" if minimum == 1 else f"an integer of at least {minimum}"
            raise FlopcastError(f"{self.label}: {key}: {value!r}; valid: {valid} up to {most:,}")
        return value

    def flag(self, key: str, default: bool) -> bool:
        """A JSON true/false (absent or null: `default`); a string such as "false" is an error, not truthy."""
        value = self.get(key, default)
        if not isinstance(value, bool):
            raise FlopcastError(f"{self.label}: {key}: {value!r}; valid: true or false")
        return value

    def indices(self, key: str) -> list[int] | None:
        """A list of layer indices, sorted (absent or null: None); anything else is an error."""
        value = self.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(type(i) is int and 0 <= i < LAYERS for i in value):
            raise FlopcastError(f"{self.label}: {key}: {str(value)[:80]}; valid: a list of layer indices "
                                f"(0 to {LAYERS - 1:,})")
        return sorted(value)

    def _arch(self) -> str:
        return str(self.data.get("model_type", "Hugging Face"))

    def unread(self) -> list[str]:
        return sorted(k for k in self.data if k not in self.read)


# ---------------------------------------------------------------- shared pieces

def _context(f: _Fields, key: str = "max_position_embeddings") -> tuple[int, str]:
    """(sequence length, note): the pre-training context where RoPE scaling names it, else the longest context."""
    scaling = f.get("rope_scaling") or {}
    original = scaling.get("original_max_position_embeddings") if isinstance(scaling, dict) else None
    longest = f.int(key, 2048)
    if type(original) is int and 0 < original <= TOKENS_PER_SEQ:
        kind = scaling.get("rope_type") or scaling.get("type") or "RoPE"
        return original, (f"{original}: rope_scaling.original_max_position_embeddings (the context before "
                          f"{kind} extension to {key} {longest}); set seq_len for another training sequence")
    return longest, f"{longest}: {key}, the longest context the checkpoint takes; set seq_len for the training sequence"


def _attention(f: _Fields) -> dict:
    """Heads and head width of a Llama-style attention block (explicit head_dim only where it is not hidden/heads)."""
    hidden, heads = f.int("hidden_size"), f.int("num_attention_heads")
    kv_heads = f.int("num_key_value_heads", heads)
    head_dim = f.int("head_dim", 0, minimum=0)
    if head_dim and hidden % heads == 0 and head_dim == hidden // heads:
        head_dim = 0
    return {"hidden": hidden, "heads": heads, "kv_heads": kv_heads, "head_dim": head_dim}


def _every_nth_full(layer_types: list, layers: int) -> tuple[int, bool]:
    """(N, exact) for a layer_types list whose full-attention layers are every Nth (0: none full)."""
    full = [i for i, t in enumerate(layer_types) if t == "full_attention"]
    if not full:
        return 0, True
    n = max(1, round(layers / len(full)))  # more full-attention entries than layers: every layer attends fully
    return n, full == list(range(n - 1, layers, n))


def _sliding(f: _Fields, layers: int, default_every: int = 0) -> tuple[int, int, str | None]:
    """(window, every, note): the window and every Nth layer that attends fully (0: all layers sliding)."""
    window = f.int("sliding_window", 0, minimum=0)
    if f.has("use_sliding_window") and not f.flag("use_sliding_window", False):
        f.get("max_window_layers"), f.get("layer_types")  # read: they describe windows that are switched off
        return 0, 0, None
    types = f.get("layer_types")
    if isinstance(types, list) and window:
        n, exact = _every_nth_full(types, layers)
        if n == 1:
            return 0, 0, None
        note = None if exact else (f"layer_types: {sum(t == 'full_attention' for t in types)} of {layers} layers "
                                   f"attend "
                                   f"fully, not every {n}th; modelled as every {n}th")
        return window, n, note
    every = f.int("sliding_window_pattern", 0, minimum=0) or f.int("_sliding_window_pattern", 0, minimum=0)
    if f.has("max_window_layers") and f.flag("use_sliding_window", False) and f.int("max_window_layers", 0,
                                                                                  minimum=0) < layers:
        return window, 0, (f"max_window_layers {f.get('max_window_layers')}: only the layers from that index on slide "
                           "in transformers; modelled as all layers sliding")
    return window, every or default_every, None


def _llama_like(f: _Fields, *, tied: bool, every: int = 0) -> tuple[dict, dict]:
    """(Model fields, notes) shared by the decoders with a gated MLP and RMSNorm (Llama and its descendants)."""
    layers = f.int("num_hidden_layers")
    seq_len, seq_note = _context(f)
    window, sliding_every, window_note = _sliding(f, layers, every)
    fields = {"layers": layers, **_attention(f), "ffn_hidden": f.int("intermediate_size"),
              "vocab": f.int("vocab_size"), "seq_len": seq_len, "mlp": Mlp.SWIGLU,
              "tied_embeddings": f.flag("tie_word_embeddings", tied), "dropout": f.dropout(),
              "sliding_window": window, "sliding_every": sliding_every}
    notes = {"seq_len": seq_note, "mlp": f"gated MLP (gate, up, down projections; activation "
                                         f"{f.get('hidden_act') or f.get('hidden_activation') or 'silu'})"}
    if window_note:
        notes["sliding_window"] = window_note
    return fields, notes


# ---------------------------------------------------------------- one reader per architecture family

def _dense(tied: bool, every: int = 0):
    def read(f: _Fields):
        return _llama_like(f, tied=tied, every=every)
    return read


def _mixtral(f: _Fields):
    fields, notes = _llama_like(f, tied=False)
    fields["moe"] = Moe(experts=f.int("num_local_experts"), topk=f.int("num_experts_per_tok"),
                        expert_ffn=fields["ffn_hidden"])
    notes["moe"] = "every layer is MoE; intermediate_size is each expert's width"
    return fields, notes


def _leading_dense(f: _Fields, key: str, layers: int) -> int:
    """Leading dense layers from a list of dense layer indices (mlp_only_layers); they must be the first k."""
    dense = f.indices(key) or []
    if dense != list(range(len(dense))):
        raise FlopcastError(f"{f.label}: {key} {dense}: flopcast models dense layers as the first k layers; "
                            f"valid: [0, 1, ..., k-1] (or none)")
    if len(dense) > layers:
        raise FlopcastError(f"{f.label}: {key} lists {len(dense)} layers; the model has {layers}")
    return len(dense)


def _qwen_moe(f: _Fields):
    """Qwen2-MoE / Qwen3-MoE: routed experts, an optional shared expert, every decoder_sparse_step-th layer sparse."""
    fields, notes = _llama_like(f, tied=False)
    dense = _leading_dense(f, "mlp_only_layers", fields["layers"])
    shared_ffn = f.int("shared_expert_intermediate_size", 0, minimum=0)
    step = f.int("decoder_sparse_step", 1)
    moe = Moe(experts=f.int("num_experts"), topk=f.int("num_experts_per_tok"),
              expert_ffn=f.int("moe_intermediate_size"), shared_experts=1 if shared_ffn else 0,
              shared_ffn=shared_ffn or None, dense_layers=dense, layer_freq=step)
    fields["moe"] = moe
    if not dense and step == 1:
        notes["ffn_hidden"] = (f"every layer is MoE: intermediate_size {fields['ffn_hidden']} is unused, "
                               f"so ffn_hidden repeats moe_intermediate_size {moe.expert_ffn}")
        fields["ffn_hidden"] = moe.expert_ffn
    return fields, notes


def _deepseek(f: _Fields):
    """DeepSeek-V2/V3: MLA attention, first_k_dense_replace dense layers, routed + shared experts."""
    fields, notes = _llama_like(f, tied=False)
    fields["mla"] = Mla(q_lora_rank=f.int("q_lora_rank", 0, minimum=0), kv_lora_rank=f.int("kv_lora_rank"),
                        qk_nope_head_dim=f.int("qk_nope_head_dim"), qk_rope_head_dim=f.int("qk_rope_head_dim"),
                        v_head_dim=f.int("v_head_dim"))
    fields["head_dim"] = fields["mla"].v_head_dim
    fields["moe"] = Moe(experts=f.int("n_routed_experts"), topk=f.int("num_experts_per_tok"),
                        expert_ffn=f.int("moe_intermediate_size"), shared_experts=f.int("n_shared_experts", 0,
                            minimum=0),
                        dense_layers=f.int("first_k_dense_replace", 0, minimum=0), layer_freq=f.int("moe_layer_freq",
                            1),
                        groups=f.int("n_group", 0, minimum=0), topk_groups=f.int("topk_group", 0, minimum=0))
    if fields["moe"].topk_groups > fields["moe"].groups:  # a config without n_group: no group limit
        fields["moe"] = replace(fields["moe"], groups=0, topk_groups=0)
    fields["mtp_layers"] = f.int("num_nextn_predict_layers", 0, minimum=0)
    notes["head_dim"] = "v_head_dim; the mla block governs attention"
    if not fields["mla"].q_lora_rank:
        notes["mla"] = "q_lora_rank null: queries are projected at full rank (no query compression)"
    return fields, notes


def _llama4(f: _Fields):
    """Llama 4: a shared expert in every MoE layer, MoE every interleave_moe_layer_step-th layer, dense MLP between."""
    fields, notes = _llama_like(f, tied=False)
    layers, step = fields["layers"], f.int("interleave_moe_layer_step", 1)
    listed = f.indices("moe_layers")
    if listed is not None:
        if listed != list(range(step - 1, layers, step)):
            raise FlopcastError(f"{f.label}: moe_layers {listed[:6]}...: flopcast models every Nth layer as "
                                f"MoE; "
                                f"valid: the layers interleave_moe_layer_step ({step}) gives")
    expert = fields["ffn_hidden"]
    fields["moe"] = Moe(experts=f.int("num_local_experts"), topk=f.int("num_experts_per_tok"), expert_ffn=expert,
                        shared_experts=1, layer_freq=step)
    fields["ffn_hidden"] = f.int("intermediate_size_mlp", expert)
    where = "every layer is MoE" if step == 1 else (f"every {step}th layer is MoE (interleave_moe_layer_step), the "
                                                     f"others a dense MLP of intermediate_size_mlp "
                                                     f"{fields['ffn_hidden']}")
    notes["moe"] = f"a shared expert of intermediate_size {expert} beside the routed ones; {where}"
    return fields, notes


def _gpt_neox(f: _Fields):
    seq_len, seq_note = _context(f)
    hidden = f.int("hidden_size")
    fields = {"layers": f.int("num_hidden_layers"), "hidden": hidden, "heads": f.int("num_attention_heads"),
              "ffn_hidden": f.int("intermediate_size", 4 * hidden), "vocab": f.int("vocab_size"), "seq_len": seq_len,
              "mlp": Mlp.GELU, "tied_embeddings": f.flag("tie_word_embeddings", False), "dropout": f.dropout()}
    fields["kv_heads"] = fields["heads"]
    return fields, {"seq_len": seq_note,
                    "mlp": f"2-matrix MLP (dense_h_to_4h, dense_4h_to_h; activation {f.get('hidden_act', 'gelu')})"}


def _gpt2(f: _Fields):
    hidden, positions = f.int("n_embd"), f.int("n_positions", f.data.get("n_ctx") or 1024)
    f.get("n_ctx")
    heads = f.int("n_head")
    fields = {"layers": f.int("n_layer"), "hidden": hidden, "heads": heads, "kv_heads": heads,
              "ffn_hidden": f.int("n_inner", 4 * hidden), "vocab": f.int("vocab_size"), "seq_len": positions,
              "mlp": Mlp.GELU, "tied_embeddings": f.flag("tie_word_embeddings", True), "dropout": f.dropout()}
    notes = {"seq_len": f"{positions}: n_positions",
             "mlp": f"2-matrix MLP (c_fc, c_proj; activation {f.get('activation_function', 'gelu_new')})",
             "position": f"learned position embeddings (n_positions x n_embd = {positions * hidden:,} weights) "
                         "are not counted in the parameters"}
    return fields, notes


READERS = {  # model_type -> reader
    "llama": _dense(False), "mistral": _dense(False), "qwen2": _dense(False), "qwen3": _dense(False),
    "gemma": _dense(True), "gemma2": _dense(True, every=2), "gemma3_text": _dense(True, every=6),
    "mixtral": _mixtral, "qwen2_moe": _qwen_moe, "qwen3_moe": _qwen_moe,
    "deepseek_v2": _deepseek, "deepseek_v3": _deepseek, "llama4_text": _llama4,
    "gpt_neox": _gpt_neox, "gpt2": _gpt2,
}
# keys that transformers' configuration classes default when a checkpoint's config.json leaves them out
# (Gemma3TextConfig: vocab_size 262208, max_position_embeddings 131072, sliding_window_pattern 6; the
# Gemma 3 4B-27B checkpoints omit them)
CLASS_DEFAULTS = {"gemma3_text": {"vocab_size": 262_208, "max_position_embeddings": 131_072,
                                  "sliding_window_pattern": 6}}
# multimodal wrappers whose language model sits under text_config
WRAPPERS = {"gemma3": "gemma3_text", "llama4": "llama4_text"}
ARCHITECTURES = {  # class name in `architectures` -> model_type, for configs without model_type
    "LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral", "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3", "GemmaForCausalLM": "gemma", "Gemma2ForCausalLM": "gemma2",
    "Gemma3ForCausalLM": "gemma3_text", "Gemma3ForConditionalGeneration": "gemma3",
    "MixtralForCausalLM": "mixtral", "Qwen2MoeForCausalLM": "qwen2_moe", "Qwen3MoeForCausalLM": "qwen3_moe",
    "DeepseekV2ForCausalLM": "deepseek_v2", "DeepseekV3ForCausalLM": "deepseek_v3",
    "Llama4ForCausalLM": "llama4_text", "Llama4ForConditionalGeneration": "llama4",
    "GPTNeoXForCausalLM": "gpt_neox", "GPT2LMHeadModel": "gpt2",
}
# keys that change the architecture in a way flopcast does not represent, and what that means for the estimate
NOT_MODELLED_WHY = {
    "attention_chunk_size": "chunked attention is modelled as full attention (attention cost overestimated)",
    "quantization_config": "the checkpoint's quantization is not read; choose the serving weights format",
    "attention_bias": "linear-layer biases are not counted",
    "vision_config": "the vision encoder is not modelled",
    "attn_logit_softcapping": "logit soft-capping costs only elementwise work",
}


def supported() -> list[str]:
    return sorted(set(READERS) | set(WRAPPERS))


def model_type(cfg: dict, label: str) -> str:
    """The config's model_type (or the one its `architectures` class implies); an unsupported one is an error."""
    archs = cfg.get("architectures") or []
    if not isinstance(archs, list) or not all(isinstance(a, str) for a in archs):
        raise FlopcastError(f"{label}: architectures {archs!r} is not a list of class names; valid: e.g. "
                            '["LlamaForCausalLM"]')
    mt = cfg.get("model_type") or next((ARCHITECTURES[a] for a in archs if a in ARCHITECTURES), None)
    if mt is not None and not isinstance(mt, str):
        raise FlopcastError(f"{label}: `model_type` is {mt!r}; valid: one name, one of {', '.join(supported())}")
    if mt in READERS or mt in WRAPPERS:
        return mt
    named = f"model_type {mt!r}" if mt else f"architectures {archs!r}" if archs else "no model_type or architectures"
    raise FlopcastError(f"{label}: unsupported architecture ({named}); supported model_type values: "
                        f"{', '.join(supported())}")


def _switched_off(value) -> bool:
    """A key set to null, false or an empty list/mapping switches its feature off: nothing to model or to note."""
    return value is None or value is False or value == [] or value == {}


def _notes(f: _Fields, outer: dict, notes: dict) -> dict:
    """The per-field notes plus every key no reader took: those that change the architecture, and those that do not.

    A wrapper's own keys (beside text_config) that repeat a text_config key are governed by text_config."""
    unread = [k for k in f.unread() if not _switched_off(f.data[k])]
    unread += [f"{k} (outside text_config)" for k, v in outer.items()
               if k not in ("text_config", "architectures", "model_type") and k not in f.data and not _switched_off(v)]
    no_effect = [k for k in unread if k.split(" ")[0] in NO_COST_EFFECT
                 or k.split(" ")[0].endswith(("_token_id", "_token_index"))]
    other = [k for k in unread if k not in no_effect]
    if other:
        why = lambda k: NOT_MODELLED_WHY.get(k.split(" ")[0])
        notes["not_modelled"] = "; ".join(f"{k}: {why(k)}" if why(k) else k for k in other)
    if no_effect:
        notes["no_cost_effect"] = ", ".join(no_effect)
    return notes


def from_config(cfg: dict, label: str, model_id: str) -> Model:
    """The Model a parsed config.json describes; `label` names it in errors, `model_id` identifies it."""
    if not isinstance(cfg, dict):
        raise FlopcastError(f"{label} must hold a JSON object of config fields (a Hugging Face config.json)")
    mt = model_type(cfg, label)
    outer, inner = {}, cfg
    if mt in WRAPPERS:
        inner = cfg.get("text_config")
        if not isinstance(inner, dict):
            raise FlopcastError(f"{label}: model_type {mt!r} keeps its language model under text_config, "
                                "which is missing; valid: the checkpoint's full config.json")
        outer, mt = cfg, WRAPPERS[mt]
    defaults = {k: v for k, v in CLASS_DEFAULTS.get(mt, {}).items() if inner.get(k) is None}
    f = _Fields({**inner, **defaults}, label)
    f.get("architectures"), f.get("model_type")
    fields, notes = READERS[mt](f)
    arch = ", ".join(cfg.get("architectures") or []) or mt  # a list of names: model_type() checked it
    notes = {"config": f"Hugging Face config {label} (model_type {mt}, {arch})", **notes}
    if defaults:
        notes["defaults"] = "not in the file, transformers' defaults for " + mt + ": " + ", ".join(
            f"{k} {v}" for k, v in defaults.items())
    name = str(cfg.get("_name_or_path") or model_id)
    model = Model(name=name, id=model_id, source=f"Hugging Face config.json ({label})",
                  notes=_notes(f, outer, notes), **fields)
    for key, value, valid in model.shape_errors():
        raise FlopcastError(f"{label}: {key} {value}; valid: {valid}")
    return model


def config_path(name) -> Path | None:
    """The config.json a model argument names (a .json file, or a folder holding config.json); None otherwise."""
    text = str(name)
    path = Path(text).expanduser()
    if text.lower().endswith(".json"):
        return path
    if path.suffix.lower() in (".yaml", ".yml", ".toml"):
        return None  # a flopcast model file (the catalog reads it, and says if it is a folder)
    if path.is_dir() and ((path / CONFIG_NAME).exists() or "/" in text or text.startswith(".")):
        return path / CONFIG_NAME  # a bare name that is also a folder without config.json stays a catalog name
    return None


def load(path: Path) -> Model:
    """Read a config.json; its id is its folder's name when the file is called config.json, else the file's stem."""
    if not path.is_file():
        where = f"folder {path.parent} holds no {CONFIG_NAME}" if path.name == CONFIG_NAME and path.parent.is_dir() \
            else f"file {path} does not exist"
        raise FlopcastError(f"{where}; valid: a Hugging Face config.json or a folder holding one")
    size = path.stat().st_size
    if size > MAX_CONFIG_BYTES:
        raise FlopcastError(f"{path} is {size:,} bytes; valid: a config.json of at most {MAX_CONFIG_BYTES:,} bytes")
    try:
        cfg = json.loads(read_bounded(path, MAX_CONFIG_BYTES).decode("utf-8"))
    except RecursionError:
        raise FlopcastError(f"{path}: values nested too deeply to be a Hugging Face config.json") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FlopcastError(" ".join(f"cannot read {path} as JSON: {exc}".split())) from None
    if not unicode_text(cfg):
        raise FlopcastError(f"cannot read {path} as JSON: a string holds an unpaired surrogate escape (such as "
                            "\\ud800), which is not Unicode")
    model_id = resolved(path.parent).name if path.name == CONFIG_NAME else path.stem
    return from_config(cfg, str(path), model_id or path.stem)


def result_notes(model: Model) -> tuple[str, ...]:
    """The lines a forecast of an imported model carries: the config keys it could not represent."""
    missing = model.notes.get("not_modelled") if model.source.startswith("Hugging Face config.json") else None
    return (f"{model.label}: config.json fields flopcast does not model: {missing}",) if missing else ()
