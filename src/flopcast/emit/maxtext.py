"""MaxText (JAX, TPU and GPU): base.yml overrides on the `python3 -m maxtext.trainers.pre_train.train` command line.

Key names: AI-Hypercomputer/maxtext src/maxtext/configs/base.yml (22 Aug 2026); decoder_block values:
src/maxtext/common/common_types.py DecoderBlockType. MaxText lays the chips out as a mesh of ICI axes
(within a slice) times DCN axes (across slices); each flopcast degree is placed in the ICI axes as far
as the slice holds it, innermost first (tp, cp, ep, data, pp: Megatron's rank order), the rest over DCN.
"""

from __future__ import annotations

import math

from ..model.strategy import Recompute, Schedule, Sharding, label
from ..model.system import Dtype
from ..model.workload import Mlp
from . import Launch, train_iters

SOURCE = "AI-Hypercomputer/maxtext src/maxtext/configs/base.yml"
# flopcast recompute -> remat_policy (base.yml: 'minimal' saves the weight matmuls and recomputes the rest,
# Korthikanti et al.'s selective recompute in spirit; 'minimal_with_context' also keeps the attention output,
# the least recomputation a named policy offers; 'full' keeps only each layer's input)
# 'save_dot_with_context_except_mlp' keeps attention's matmul outputs and context and recomputes the MLP's
REMAT = {Recompute.NONE: "minimal_with_context", Recompute.SELECTIVE: "minimal", Recompute.FULL: "full",
         Recompute.MLP: "save_dot_with_context_except_mlp", Recompute.QKV_CONTEXT: "custom",
         # OP (torchtitan's per-operator policy) has no MaxText name: emitted as minimal
         Recompute.QKV: "save_qkv_proj", Recompute.OP: "minimal"}
QKV_CONTEXT_NAMES = ("decoder_layer_input", "query_proj", "key_proj", "value_proj", "context")
DTYPE = {Dtype.BF16: ("bfloat16", ""), Dtype.FP8: ("bfloat16", "fp8"), Dtype.INT8: ("bfloat16", "int8"),
         Dtype.FP32: ("float32", ""), Dtype.FP16: ("float16", "")}


def slice_chips(system, chips: int) -> int:
    """Chips of one ICI slice the job uses: the largest tier that is not a scale-out network, at most the job."""
    ici = [t.size for t in system.tiers if not t.scale_out] or [system.chips_per_node]
    return min(max(ici), chips)


def mesh(system, layout) -> tuple[dict, list]:
    """(ici_*/dcn_* axis -> degree, lines for what does not divide): each degree split into ICI and DCN parts."""
    per_slice = slice_chips(system, layout.chips)
    slices = max(1, layout.chips // per_slice)
    data_axis = "fsdp" if layout.sharding == Sharding.ZERO3 else "data"
    axes = [("tensor", layout.tp), ("context", layout.cp), ("expert", layout.ep),
            (data_axis, max(layout.dp // layout.ep, 1)), ("pipeline", layout.pp)]
    room, out = per_slice, {}
    for name, degree in axes:
        ici = math.gcd(degree, room)
        room //= ici
        out[f"ici_{name}_parallelism"] = ici
        out[f"dcn_{name}_parallelism"] = degree // ici
    other = "data" if data_axis == "fsdp" else "fsdp"
    out[f"ici_{other}_parallelism"] = out[f"dcn_{other}_parallelism"] = 1  # base.yml sets -1 (auto) on some axes
    problems = []
    if room != 1 or math.prod(v for k, v in out.items() if k.startswith("dcn_")) != slices:
        problems.append(f"mesh: the degrees do not factor into {slices} slice(s) of {per_slice} chips; the axes "
                        "below give the right products per degree, check them against the slice shape")
    return out, problems


def _batch(model, layout) -> dict:
    """per_device_batch_size counts sequences per chip per micro-step (global = per-device x chips x accumulation)."""
    m = layout.microbatches
    out = {"per_device_batch_size": layout.global_batch / layout.chips / (1 if layout.pp > 1 else m)}
    if layout.pp > 1:
        out.update(num_pipeline_microbatches=m, num_layers_per_pipeline_stage=model.layers // (layout.pp * layout.vp),
                   num_pipeline_repeats=layout.vp)
    elif m > 1:
        out["gradient_accumulation_steps"] = m
    return out


def _decoder_block(model) -> str:
    if model.mla:
        return "deepseek"
    if model.moe:
        return "llama4" if model.moe.layer_freq > 1 else "mixtral"
    return "llama2" if model.mlp == Mlp.SWIGLU else "gpt3"


def _model(model) -> dict:
    m = model
    out = {"decoder_block": _decoder_block(m), "base_emb_dim": m.hidden, "base_num_query_heads": m.heads,
           "base_num_kv_heads": m.kv_heads, "head_dim": m.d_head, "base_mlp_dim": m.ffn_hidden,
           "base_num_decoder_layers": m.layers, "vocab_size": m.vocab, "max_target_length": m.seq_len,
           "mlp_activations": ["silu", "linear"] if m.mlp == Mlp.SWIGLU else ["gelu"],
           "logits_via_embedding": m.tied_embeddings}
    if m.moe:
        e = m.moe
        out.update(num_experts=e.experts, num_experts_per_tok=e.topk, base_moe_mlp_dim=e.expert_ffn,
                   first_num_dense_layers=e.dense_layers, shared_experts=e.shared_experts,
                   interleave_moe_layer_step=e.layer_freq)
        if e.groups:
            out.update(n_routing_groups=e.groups, topk_routing_group=e.topk_groups or -1)
        if e.capacity_factor is not None:
            out["capacity_factor"] = e.capacity_factor
    if m.mtp_layers:
        out["mtp_num_layers"] = m.mtp_layers
    if m.mla:
        a = m.mla
        out.update(attention_type="mla", q_lora_rank=a.q_lora_rank, kv_lora_rank=a.kv_lora_rank,
                   qk_nope_head_dim=a.qk_nope_head_dim, qk_rope_head_dim=a.qk_rope_head_dim, v_head_dim=a.v_head_dim)
    elif m.sliding_window:
        out.update(attention_type="local_sliding", sliding_window_size=m.sliding_window)
    return out


def _unmapped(model, layout) -> list[str]:
    out = []
    if layout.schedule != Schedule.GPIPE and layout.pp > 1:
        out.append(f"schedule {layout.schedule.name.lower()}: MaxText's pipeline loops over micro-batches and takes "
                   "the backward pass by autodiff, GPipe-like; virtual stages are num_pipeline_repeats")
    if layout.recompute == Recompute.OP:
        out.append("recompute op: torchtitan's per-operator policy has no MaxText name; emitted as remat_policy "
                   "minimal, which saves every matmul's output")
    if layout.schedule in (Schedule.DUALPIPE, Schedule.ONE_F_ONE_B_OVERLAP) and layout.pp == 1:
        out.append(f"schedule {label(layout.schedule)}: no key; XLA's latency-hiding scheduler decides whether the "
                   "expert-parallel all-to-all runs behind compute")
    if layout.sharding == Sharding.ZERO2:
        out.append("sharding zero2: no gradient-only sharding; emitted as the data axis with the optimizer sharded "
                   "(shard_optimizer_over_data)")
    if layout.sequence_parallel and layout.tp > 1:
        out.append("sequence_parallel: no switch; MaxText's logical axis rules decide how the tensor axis shards "
                   "activations")
    if model.sliding_window and model.sliding_every > 1:
        out.append(f"full attention every {model.sliding_every}th layer: attention_type applies to every layer of "
                   "a generic decoder_block (the Gemma and gpt-oss blocks interleave their own)")
    if model.moe and model.moe.shared_ffn:
        out.append("shared expert width: shared_experts counts experts of base_moe_mlp_dim")
    if model.moe and layout.expert_tp != layout.tp:
        out.append(f"etp={layout.expert_tp} with tp={layout.tp}: no expert-only tensor axis; the experts shard over "
                   "the tensor axis like the attention")
    return out


def maxtext(model, system, layout, tokens=None) -> Launch:
    """The train command with base.yml overrides as key=value arguments, on synthetic data."""
    axes, problems = mesh(system, layout)
    if layout.dtype in DTYPE:
        compute, quantization = DTYPE[layout.dtype]
    else:  # TF32 and the 4-bit formats: base.yml's dtype and quantization name no such setting
        compute, quantization = DTYPE[Dtype.BF16]
        problems = list(problems) + [f"dtype {layout.dtype.label}: MaxText's dtype and quantization settings name no "
                                     f"{layout.dtype.label} training; the emitted job computes in bfloat16"]
    iters = train_iters(model, layout, tokens)
    settings = {"run_name": f"flopcast-{model.label}", "dataset_type": "synthetic", "steps": iters or 100,
                "enable_checkpointing": False, **_model(model), **axes, **_batch(model, layout),
                "remat_policy": REMAT[layout.recompute], "dtype": compute}
    if layout.recompute == Recompute.QKV_CONTEXT:  # the tensors remat_policy custom keeps on device
        settings.update({name: "device" for name in QKV_CONTEXT_NAMES})
    if quantization:
        settings["quantization"] = quantization
    if layout.sharding in (Sharding.ZERO1, Sharding.ZERO2):
        settings["shard_optimizer_over_data"] = True
    args = [_shell(f"{k}={_value(v)}") for k, v in settings.items()]
    text = " \\\n    ".join(["python3 -m maxtext.trainers.pre_train.train src/maxtext/configs/base.yml"] + args)
    assumed = ["dataset_type=synthetic, enable_checkpointing=False: a benchmark run; give the data set and "
               "base_output_directory of the real run",
               f"decoder_block={settings['decoder_block']}: the generic block of this architecture; flopcast's model "
               "does not name the family, norm or position kind"]
    if layout.recompute == Recompute.NONE:
        assumed.append("remat_policy=minimal_with_context: the named policy that recomputes least (only "
                       "remat_policy=custom with every tensor on 'device' recomputes nothing)")
    if iters is None:
        assumed.append("steps=100: no token count was given, so a short benchmark run")
    return Launch("maxtext", f"MaxText: {model.label} on {layout.chips} {system.chip.id} ({system.id}), "
                  f"{layout.describe()}", text, tuple(problems + _unmapped(model, layout)), tuple(assumed), SOURCE)


def _shell(arg: str) -> str:
    """One shell word: quoted when it holds characters a shell would expand or strip ([ ] ' *)."""
    return f'"{arg}"' if any(c in arg for c in "[]'* ") else arg


def _value(v) -> str:
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, list):
        return "[" + ",".join(f"'{x}'" for x in v) + "]"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)
