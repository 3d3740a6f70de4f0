"""Megatron-LM (pretrain_gpt.py flags) and Megatron-Bridge / NeMo (ConfigContainer overrides).

Flag names: NVIDIA/Megatron-LM megatron/training/arguments.py at tag core_v0.15.3 (6 Feb 2026); since
core_v0.16 most flags are generated from the Megatron-Core config dataclasses (ModelParallelConfig,
TransformerConfig), whose field names are the same words with underscores, and those fields are what
Megatron-Bridge's ConfigContainer overrides set (model.*, train.*, ddp.*; NVIDIA-NeMo/Megatron-Bridge
src/megatron/bridge/training/config.py, scripts/training/run_recipe.py, 22 Aug 2026).
"""

from __future__ import annotations

from ..model.strategy import CudaGraphs, Dispatcher, Recompute, Schedule, Sharding
from ..model.system import Dtype
from ..model.workload import Mlp
from . import Launch, moe_layer_list, moe_pattern, nodes, shared_ffn, train_iters

LM_SOURCE = "NVIDIA/Megatron-LM megatron/training/arguments.py (tag core_v0.15.3)"
BRIDGE_SOURCE = ("NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/training/config.py (ConfigContainer) and "
                 "Megatron-Core ModelParallelConfig / TransformerConfig fields")
# Megatron FSDP's --data-parallel-sharding-strategy for the ZeRO stages beyond the distributed optimizer
FSDP_STRATEGY = {Sharding.ZERO2: "optim_grads", Sharding.ZERO3: "optim_grads_params"}
# Megatron-Bridge mixed-precision recipes (src/megatron/bridge/training/mixed_precision.py, @register)
BRIDGE_PRECISION = {Dtype.BF16: "bf16_mixed", Dtype.FP16: "fp16_mixed",
                    Dtype.FP8: "bf16_with_fp8_current_scaling_mixed"}
# What flopcast's CudaGraphs.PARTIAL removes from an MoE layer's host work (simulate/layer.MOE_HOST_OPS_GRAPHED):
# the router and the dispatch preprocessing, captured by Transformer Engine (Megatron-Core MoE README, "CPU Overhead
# Bottleneck"; Megatron-Bridge's Blackwell perf recipes add attn to the same scope)
PARTIAL_SCOPE = ["moe_router", "moe_preprocess"]


def _settings(model, layout, system=None, graphs=CudaGraphs.NONE, dispatcher=Dispatcher.ALLTOALL) -> tuple[dict, list,
                                                                                                      list]:
    """(Megatron-Core field -> value, no-equivalent lines, assumed lines): the layout, the model's dimensions and
    the run-time choices the forecast assumed (`_runtime`) as TransformerConfig / ModelParallelConfig name them;
    True is a bare flag, None leaves a field out."""
    s, missing, assumed = {}, [], []
    s.update(tensor_model_parallel_size=layout.tp, pipeline_model_parallel_size=layout.pp,
             context_parallel_size=layout.cp, expert_model_parallel_size=layout.ep,
             sequence_parallel=bool(layout.sequence_parallel and layout.tp > 1) or None)
    if model.moe:
        # stated always: Megatron-Core defaults it to tp (arguments.py), Megatron-Bridge's recipes set it
        s["expert_tensor_parallel_size"] = layout.expert_tp
    if layout.vp > 1:
        s["virtual_pipeline_model_parallel_size"] = layout.vp
    if layout.vp > 1 and model.layers % (layout.pp * layout.vp):
        missing.append(f"{model.layers} layers do not split evenly into {layout.pp} x {layout.vp} virtual stages: "
                       "Megatron then needs a per-stage placement (--pipeline-model-parallel-layout); the virtual "
                       "stage count is emitted as --num-virtual-stages-per-pipeline-rank")
    if layout.schedule == Schedule.GPIPE:
        missing.append("schedule gpipe: Megatron runs 1F1B (interleaved with virtual stages); the emitted layout "
                       "runs 1F1B, which holds fewer micro-batches' activations")
    if layout.recompute == Recompute.FULL:
        s.update(recompute_granularity="full", recompute_method="uniform", recompute_num_layers=1)
    elif layout.recompute == Recompute.SELECTIVE:
        s["recompute_granularity"] = "selective"
    elif layout.recompute == Recompute.MLP:  # Megatron-Core --recompute-modules (its default: core_attn)
        s.update(recompute_granularity="selective", recompute_modules="moe" if model.moe else "mlp")
    elif layout.recompute in (Recompute.QKV_CONTEXT, Recompute.QKV):
        s.update(recompute_granularity="selective", recompute_modules="moe" if model.moe else "mlp")
        missing.append(f"recompute {layout.recompute.name.lower()}: Megatron has no switch to recompute the output "
                       "projection; emitted as MLP recomputation, which recomputes less and holds more")
    elif layout.recompute == Recompute.OP:
        s["recompute_granularity"] = "selective"
        missing.append("recompute op: torchtitan's per-operator policy has no Megatron switch; emitted as selective "
                       "(core attention), which recomputes less and holds more")
    if layout.dtype not in (Dtype.BF16, Dtype.FP16, Dtype.FP8):
        missing.append(f"dtype {layout.dtype.label}: no mixed-precision setting; the emitted job computes in fp32")
    m = model
    s.update(num_layers=m.layers, hidden_size=m.hidden, ffn_hidden_size=m.ffn_hidden,
             num_attention_heads=m.heads, seq_length=m.seq_len, max_position_embeddings=m.seq_len)
    if m.kv_heads < m.heads and not m.mla:
        s["num_query_groups"] = m.kv_heads
    if m.head_dim and not m.mla:
        s["kv_channels"] = m.head_dim
    if m.sliding_window:
        s["window_size"] = f"({m.sliding_window},0)"
        if m.sliding_every > 1:
            s["window_attn_skip_freq"] = m.sliding_every
    s.update(_structure(m))
    s.update(_runtime(m, system, layout, graphs, missing, dispatcher))
    if layout.sharding in FSDP_STRATEGY:
        assumed.append(f"sharding {layout.sharding.name.lower()} as Megatron FSDP ({FSDP_STRATEGY[layout.sharding]}): "
                       "arguments.py asserts CUDA_DEVICE_MAX_CONNECTIONS is not 1 and the fsdp_dtensor checkpoint "
                       "format" + ("; with pipeline parallelism check that your Megatron-Core version combines "
                                   "them (torch FSDP2 does not: arguments.py asserts pp = 1)" if layout.pp > 1 else ""))
    if layout.pp > 1:
        assumed.append("an even split of layers over pipeline stages; flopcast's forecast lets the first and last "
                       "stages hold fewer (--decoder-first/last-pipeline-num-layers), so the forecast is at most this "
                       "split's step time")
    if m.mlp == Mlp.SWIGLU:
        assumed.append("normalization RMSNorm, RoPE positions, no linear biases: flopcast's model holds the MLP kind "
                       "(SwiGLU) but not these, so the Llama-family choices are emitted")
    else:
        assumed.append("LayerNorm and learned absolute positions (Megatron's defaults) with a 2-matrix GeLU MLP: "
                       "flopcast's model does not hold the norm or position kind")
    return s, missing, assumed


def _structure(m) -> dict:
    """MLA, MoE (routing groups, capacity) and multi-token prediction as Megatron-Core fields; None leaves one out."""
    out = {}
    if m.mla:
        a = m.mla
        out.update(multi_latent_attention=True, q_lora_rank=a.q_lora_rank or None, kv_lora_rank=a.kv_lora_rank,
                   qk_head_dim=a.qk_nope_head_dim, qk_pos_emb_head_dim=a.qk_rope_head_dim, v_head_dim=a.v_head_dim)
    if m.moe:
        e = m.moe
        out.update(num_moe_experts=e.experts, moe_router_topk=e.topk, moe_ffn_hidden_size=e.expert_ffn,
                   moe_shared_expert_intermediate_size=shared_ffn(m) or None, moe_layer_freq=moe_pattern(m),
                   moe_router_num_groups=e.groups or None, moe_router_group_topk=e.topk_groups or None,
                   moe_expert_capacity_factor=e.capacity_factor,
                   moe_pad_expert_input_to_capacity=True if e.capacity_factor is not None else None,
                   moe_grouped_gemm=True, moe_token_dispatcher_type="alltoall")
    out["mtp_num_layers"] = m.mtp_layers or None
    return out


def hierarchical_dispatch(model, system, layout) -> bool:
    """Whether the forecast dispatched the tokens hierarchically (cost.comm.dispatch_time: a group-limited router
    whose expert-parallel group, ranks etp apart, spans more than the innermost tier's domain, the node): what
    DeepEP's dispatcher does (DeepSeek-V3 report sec. 3.2.2), Megatron-Core's flex dispatcher with DeepEP."""
    e = model.moe
    if not (e and e.groups and e.topk_groups) or system is None or len(system.tiers) < 2:
        return False
    per_node = max(1, min(layout.ep, system.tiers[0].size // max(layout.expert_tp, 1)))
    return layout.ep > per_node


def _runtime(model, system, layout, graphs, missing: list, dispatcher=Dispatcher.ALLTOALL) -> dict:
    """The CUDA-graph capture, the expert-parallel overlap and the token dispatcher the forecast assumed (flex where
    it was stated or where the forecast dispatched hierarchically, DeepEP's way), as
    Megatron-Core fields (arguments.py core_v0.15.3: --cuda-graph-impl none|local|transformer_engine, local with
    --cuda-graph-scope full_iteration the whole step; --overlap-moe-expert-parallel-comm, which Megatron-Core runs
    with --delay-wgrad-compute so the weight gradients fill the combined 1F1B's gaps)."""
    out = {}
    if graphs == CudaGraphs.PARTIAL and model.moe:
        out.update(cuda_graph_impl="transformer_engine", cuda_graph_scope=PARTIAL_SCOPE)
    elif graphs == CudaGraphs.FULL:
        out.update(cuda_graph_impl="local", cuda_graph_scope=["full_iteration"])
    if layout.schedule == Schedule.DUALPIPE:
        missing.append("schedule dualpipe: Megatron-Core has no DualPipe; emitted as its combined 1F1B "
                       "(--overlap-moe-expert-parallel-comm), which overlaps the same all-to-alls but keeps 1F1B's "
                       "bubble and holds one copy of the parameters")
    if model.moe and layout.schedule in (Schedule.ONE_F_ONE_B_OVERLAP, Schedule.DUALPIPE):
        out.update(overlap_moe_expert_parallel_comm=True, delay_wgrad_compute=True)
    if model.moe and (dispatcher == Dispatcher.FLEX or hierarchical_dispatch(model, system, layout)):
        out["moe_token_dispatcher_type"] = "flex"
    return out


# Megatron-Core field -> pretrain_gpt.py flag, where the flag is not the field's name with dashes
LM_FLAG = {"num_moe_experts": "--num-experts", "virtual_pipeline_model_parallel_size": None}


def _flag(field: str) -> str:
    return LM_FLAG.get(field) or "--" + field.replace("_", "-")


def _lm_precision(layout) -> list[str]:
    if layout.dtype == Dtype.FP8:
        return ["--bf16", "--fp8-format hybrid"]  # E4M3 forward, E5M2 gradients (Transformer Engine)
    return {Dtype.BF16: ["--bf16"], Dtype.FP16: ["--fp16"]}.get(layout.dtype, [])


def _lm_sharding(layout) -> list[str]:
    if layout.sharding == Sharding.ZERO1:
        return ["--use-distributed-optimizer"]
    if layout.sharding in FSDP_STRATEGY:  # Megatron FSDP asserts the fsdp_dtensor checkpoint format (arguments.py)
        return ["--use-megatron-fsdp", f"--data-parallel-sharding-strategy {FSDP_STRATEGY[layout.sharding]}",
                "--ckpt-format fsdp_dtensor"]
    return []


def megatron_lm(model, system, layout, tokens=None, graphs: CudaGraphs = CudaGraphs.NONE,
                dispatcher: Dispatcher = Dispatcher.ALLTOALL) -> Launch:
    """torchrun + pretrain_gpt.py flags that start the layout on mock data (give --data-path for real data), with
    the CUDA-graph capture `graphs` the forecast assumed."""
    s, missing, assumed = _settings(model, layout, system, graphs, dispatcher)
    args = []
    for field, value in s.items():
        if value is None or value is False or field == "virtual_pipeline_model_parallel_size":
            continue
        if isinstance(value, list):  # nargs='+': one shell word per value
            args.append(" ".join([_flag(field), *map(str, value)]))
        else:
            args.append(_flag(field) if value is True else f"{_flag(field)} {_quote(value)}")
    if s.get("moe_token_dispatcher_type") == "flex":
        args.append("--moe-enable-deepep")  # core_v0.15.3: the flex dispatcher's DeepEP backend
    if layout.vp > 1:
        if model.layers % (layout.pp * layout.vp) == 0:
            args.append(f"--num-layers-per-virtual-pipeline-stage {model.layers // (layout.pp * layout.vp)}")
        else:
            args.append(f"--num-virtual-stages-per-pipeline-rank {layout.vp}")
    if model.kv_heads < model.heads and not model.mla:
        args.append("--group-query-attention")
    if model.mlp == Mlp.SWIGLU:
        args += ["--swiglu", "--normalization RMSNorm", "--position-embedding-type rope", "--disable-bias-linear"]
    if not model.tied_embeddings:
        args.append("--untie-embeddings-and-output-weights")
    args += _lm_precision(layout) + _lm_sharding(layout)
    iters = train_iters(model, layout, tokens)
    if iters is None:
        assumed.append("--train-iters 100: no token count was given, so a short benchmark run")
    args += [f"--micro-batch-size {layout.micro_batch}", f"--global-batch-size {layout.global_batch}",
             f"--train-iters {iters or 100}", "--mock-data", "--tokenizer-type NullTokenizer",
             f"--vocab-size {model.vocab}"]
    n_nodes, per_node = nodes(system, layout)
    launcher = (f"torchrun --nnodes {n_nodes} --nproc-per-node {per_node} --rdzv-backend c10d "
                "--rdzv-endpoint ${MASTER_ADDR}:29500 pretrain_gpt.py")
    text = " \\\n    ".join([launcher] + args)
    return Launch("megatron", f"Megatron-LM pretrain_gpt.py: {model.label} on {layout.chips} {system.chip.id} "
                  f"({system.id}), {layout.describe()}", text, tuple(missing), tuple(assumed), LM_SOURCE)


def _quote(value) -> str:
    text = str(value)
    return f'"{text}"' if any(c in text for c in "()[]*+, ") else text


def megatron_bridge(model, system, layout, tokens=None, graphs: CudaGraphs = CudaGraphs.NONE,
                    dispatcher: Dispatcher = Dispatcher.ALLTOALL) -> Launch:
    """Megatron-Bridge (NeMo 2's successor) ConfigContainer overrides in YAML for a pretraining recipe."""
    s, missing, assumed = _settings(model, layout, system, graphs, dispatcher)
    model_section = {k: v for k, v in s.items() if v is not None and k not in ("max_position_embeddings",)}
    if model.mlp == Mlp.SWIGLU:
        model_section.update(gated_linear_unit=True, normalization="RMSNorm", position_embedding_type="rope",
                             add_bias_linear=False)
    model_section["share_embeddings_and_output_weights"] = model.tied_embeddings
    model_section["vocab_size"] = model.vocab
    if model.sliding_window:
        model_section["window_size"] = [model.sliding_window, 0]
    if isinstance(model_section.get("recompute_modules"), str):
        model_section["recompute_modules"] = [model_section["recompute_modules"]]
    if isinstance(model_section.get("moe_layer_freq"), str):
        model_section["moe_layer_freq"] = moe_layer_list(model)
    if model_section.get("cuda_graph_scope") == ["full_iteration"]:  # Bridge's perf recipes: a module, not a scope
        del model_section["cuda_graph_scope"]
        model_section["cuda_graph_modules"] = "full_iteration"
    if model_section.get("moe_token_dispatcher_type") == "flex":
        model_section["moe_flex_dispatcher_backend"] = "deepep"
    iters = train_iters(model, layout, tokens)
    if iters is None:
        assumed.append("train_iters 100: no token count was given, so a short benchmark run")
    sections = {
        "model": model_section,
        "train": {"micro_batch_size": layout.micro_batch, "global_batch_size": layout.global_batch,
                  "train_iters": iters or 100},
        "dataset": {"seq_length": model.seq_len},
        "ddp": _bridge_ddp(layout),
        "optimizer": {"use_distributed_optimizer": layout.sharding == Sharding.ZERO1},
    }
    precision = BRIDGE_PRECISION.get(layout.dtype)
    lines = [_yaml(sections)] + ([f"mixed_precision: {precision}"] if precision else [])
    stem = model.label.replace("-", "_").replace(".", "p").lower()
    n_nodes, per_node = nodes(system, layout)
    assumed.append(f"recipe: run as `torchrun --nnodes {n_nodes} --nproc-per-node {per_node} "
                   f"scripts/training/run_recipe.py --model {stem} --mode pretrain --dataset mock` with these "
                   "overrides as KEY=VALUE (section.field=value); a model without a recipe takes the model: "
                   "section whole")
    return Launch("nemo", f"Megatron-Bridge / NeMo pretraining overrides: {model.label} on {layout.chips} "
                  f"{system.chip.id} ({system.id}), {layout.describe()}", "\n".join(lines), tuple(missing),
                  tuple(assumed), BRIDGE_SOURCE)


def _bridge_ddp(layout) -> dict:
    out = {"use_distributed_optimizer": layout.sharding == Sharding.ZERO1}
    if layout.sharding in FSDP_STRATEGY:
        out.update(use_megatron_fsdp=True, data_parallel_sharding_strategy=FSDP_STRATEGY[layout.sharding])
    return out


def _yaml(sections: dict) -> str:
    import yaml

    return yaml.safe_dump(sections, sort_keys=False, default_flow_style=None, width=120).rstrip()
