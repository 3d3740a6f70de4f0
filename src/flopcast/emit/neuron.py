"""NxD Training (AWS Neuron, Trainium): the YAML config its training script reads.

Key names: aws-neuron/neuronx-distributed-training examples/conf/*.yaml (22 Sep 2025), the Megatron-style
model source (megatron_llama_70b_config.yaml, megatron_mixtral_8x7b_config.yaml) with the parallel degrees
under distributed_strategy (hf_llama3_70B_CP_config.yaml adds context_parallel_size) and trn2's
trainer.lnc (hf_llama3_70B_trn2_config.yaml). NxD counts tensor-parallel degrees and devices in
NeuronCores, not chips: a trn2 chip shows 4 logical cores (LNC=2), a trn1 chip 2 (flopcast's degrees
are in chips; see model/strategy.py).
"""

from __future__ import annotations

from ..cost.inference import NEURON_LOGICAL_CORES
from ..model.strategy import Recompute, Schedule, Sharding, label
from ..model.system import Dtype
from ..model.workload import Mlp
from . import Launch, nodes, train_iters

SOURCE = "aws-neuron/neuronx-distributed-training examples/conf/*.yaml"


def cores_per_chip(chip) -> int:
    """NeuronCores the runtime shows per chip: logical cores (LNC=2) on Trainium2/3, physical ones elsewhere."""
    return NEURON_LOGICAL_CORES.get(chip.id, chip.cores)


def _unmapped(model, layout) -> list[str]:
    out = []
    if model.mla:
        out.append("multi-head latent attention (mla): NxD's model configs have no MLA; emitted as "
                   f"{model.heads} attention heads of {model.d_head}")
    if model.moe and (model.moe.shared_experts or model.moe.shared_ffn):
        out.append("shared experts: no key in NxD's MoE config (model.moe); only the routed experts are emitted")
    if model.moe and model.moe.dense_layers:
        out.append(f"{model.moe.dense_layers} leading dense layers: model.moe.frequency sets every Nth layer only")
    if model.mtp_layers:
        out.append(f"{model.mtp_layers} multi-token-prediction module(s): no key in NxD's model configs; left out")
    if model.moe and layout.expert_tp != layout.tp:
        out.append(f"etp={layout.expert_tp} with tp={layout.tp}: no expert tensor-parallel key in NxD Training's "
                   "distributed_strategy; its experts shard over tensor_model_parallel_size like the attention")
    if model.moe and model.moe.groups:
        out.append("group-limited routing (moe groups): no key in NxD's MoE config; routing is unrestricted")
    if model.sliding_window:
        out.append(f"sliding-window attention ({model.sliding_window} tokens): no key; emitted as full attention")
    if layout.sharding in (Sharding.ZERO2, Sharding.ZERO3):
        out.append(f"sharding {layout.sharding.name.lower()}: NxD Training offers ZeRO-1 (distributed_strategy.zero1); "
                   "emitted as zero1, which holds full gradients and weights per rank")
    if layout.schedule == Schedule.GPIPE:
        out.append("schedule gpipe: NxD's pipeline runs 1F1B; emitted as 1F1B")
    if layout.schedule in (Schedule.DUALPIPE, Schedule.ONE_F_ONE_B_OVERLAP):
        out.append(f"schedule {label(layout.schedule)}: NxD Training has no schedule that runs one micro-batch's "
                   "expert-parallel all-to-all behind another's compute; emitted as 1F1B, whose all-to-all is exposed")
    if layout.dtype not in (Dtype.BF16, Dtype.FP32):
        out.append(f"dtype {layout.dtype.label}: the example configs' precision.type offers bf16 mixed precision and "
                   "fp32 only; emitted as mixed_precision (BF16)")
    return out


def _model(model, layout) -> dict:
    m = model
    out = {"encoder_seq_length": m.seq_len, "max_position_embeddings": m.seq_len, "num_layers": m.layers,
           "hidden_size": m.hidden, "ffn_hidden_size": m.ffn_hidden, "num_attention_heads": m.heads,
           "num_kv_heads": m.kv_heads, "kv_channels": m.d_head,
           "activation": "swiglu" if m.mlp == Mlp.SWIGLU else "gelu",
           "normalization": "rmsnorm" if m.mlp == Mlp.SWIGLU else "layernorm",
           "position_embedding_type": "rope" if m.mlp == Mlp.SWIGLU else "learned_absolute",
           "has_bias": m.mlp != Mlp.SWIGLU, "share_embeddings_and_output_weights": m.tied_embeddings,
           # NxD Training checkpoints full layers or core attention only: MLP recomputation becomes full (holds less)
           "activations_checkpoint_granularity": {Recompute.FULL: "full", Recompute.SELECTIVE: "selective",
                                                  Recompute.MLP: "full", Recompute.OP: "full",
                                                  Recompute.QKV_CONTEXT: "full",
                                                  Recompute.QKV: "full"}.get(layout.recompute),
           "fusions": {"flash_attention": True}}
    if m.moe:
        out["moe"] = {"num_experts": m.moe.experts, "top_k": m.moe.topk, "frequency": m.moe.layer_freq,
                      "dropless": True}
    return out


def nxd_training(model, system, layout, tokens=None) -> Launch:
    """The NxD Training YAML (Megatron model source) that starts the layout."""
    cores = cores_per_chip(system.chip)
    n_nodes, per_node = nodes(system, layout)
    iters = train_iters(model, layout, tokens)
    strategy = {"tensor_model_parallel_size": layout.tp * cores, "pipeline_model_parallel_size": layout.pp,
                "virtual_pipeline_model_parallel_size": layout.vp, "context_parallel_size": layout.cp,
                "expert_model_parallel_size": layout.ep, "zero1": layout.sharding != Sharding.NONE,
                "sequence_parallel": bool(layout.sequence_parallel and layout.tp > 1)}
    trainer = {"devices": per_node * cores, "num_nodes": n_nodes, "max_steps": iters or 100}
    if system.chip.id in NEURON_LOGICAL_CORES:
        trainer["lnc"] = 2
    config = {"name": f"flopcast_{model.label}", "model_source": "megatron", "trainer": trainer,
              "distributed_strategy": strategy,
              "data": {"micro_batch_size": layout.micro_batch, "global_batch_size": layout.global_batch,
                       "seq_length": model.seq_len},
              "model": _model(model, layout),
              "precision": {"type": "fp32" if layout.dtype == Dtype.FP32 else "mixed_precision"}}
    assumed = [f"tensor_model_parallel_size {layout.tp * cores} and devices {per_node * cores}: NeuronCores, "
               f"{cores} per {system.chip.id} chip",
               "normalization, positions and biases follow the MLP kind (SwiGLU: rmsnorm, rope, no bias); "
               "flopcast's model does not hold them",
               "data.data_prefix / tokenizer: give the tokenized data set and tokenizer of the run"]
    if iters is None:
        assumed.append("trainer.max_steps 100: no token count was given, so a short benchmark run")
    import yaml

    text = yaml.safe_dump(config, sort_keys=False, default_flow_style=False)
    return Launch("neuron", f"NxD Training config: {model.label} on {layout.chips} {system.chip.id} ({system.id}), "
                  f"{layout.describe()}", text, tuple(_unmapped(model, layout)), tuple(assumed), SOURCE)
