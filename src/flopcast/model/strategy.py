"""The strategy: how a training step is laid out over chips.

Degrees are counted in chips (Trainium included: a Neuron TP degree of 32
NeuronCores on Trainium1, two cores per chip, is tp=16 here; the cores of one
chip share its HBM and act as one device in the collectives flopcast models).
Rank order is Megatron's: tp innermost, then cp, then dp, then pp outermost. The
expert layers fold the same tp x cp x dp ranks of a stage differently (Megatron-Core's
MoE Parallel Folding, Liu et al. 2025, arXiv:2504.14960): expert tensor parallel (etp)
innermost, then ep, then expert data parallel (edp = tp cp dp / (etp ep)).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import IntEnum

import numpy as np

from .system import Dtype


class Recompute(IntEnum):
    NONE = 0
    SELECTIVE = 1  # core attention recomputed (Korthikanti et al. 2022, sec. 4.2)
    FULL = 2  # every layer's forward recomputed from its stored input
    # the MLP (dense MLP, or the MoE layer's experts) recomputed from its stored input, attention's activations
    # kept: Megatron-Core's --recompute-granularity selective --recompute-modules mlp (moe for MoE layers);
    # AXLearn's default remat policy (build_remat_spec saves only the q/k/v/o projections and the context) and
    # MaxText's remat_policy save_dot_except_mlp in spirit
    MLP = 3
    # per-operator selective checkpointing as torchtitan runs it (activation_checkpoint.mode selective,
    # selective_ac_option op; torchtitan parallelisms/parallelize_llama.py _save_list at 9dec370, 2024-12): the outputs
    # of the matmuls, of flash attention and of the tensor-parallel reduce-scatters are saved, except every second
    # matmul of the block's forward, which is recomputed with the elementwise kernels and the all-gathers
    OP = 4
    # the layer input, Q, K, V and the attention output (with flash attention's log-sum-exp) kept, everything else
    # recomputed: the norms, the output projection and the MLP. MaxText remat_policy custom with decoder_layer_input,
    # query_proj, key_proj, value_proj and context on 'device' (configs/base.yml; the splash kernel names its
    # residuals 'context', attention_op.py residual_checkpoint_name), as the tpu-recipes Ironwood Llama 3.1 70B runs
    # state; a JAX checkpoint policy, taken only where stated
    QKV_CONTEXT = 5
    # the layer input, Q, K and V kept (on device or offloaded to host), everything else recomputed: the attention
    # core (its output, 'context', is not kept), the norms, the output projection and the MLP. MaxText remat_policy
    # save_qkv_proj, qkv_proj_offloaded, or custom with decoder_layer_input, query_proj, key_proj and value_proj kept
    # and context not (layers/decoders.py get_remat_policy: save_and_offload_only_these_names recomputes every
    # unnamed tensor), as the tpu-recipes v6e Llama recipes run; a JAX checkpoint policy, taken only where stated
    QKV = 6


# What a search tries when the recomputation is left blank: OP is one framework's policy, taken only when stated
SEARCHED_RECOMPUTE = (Recompute.NONE, Recompute.SELECTIVE, Recompute.FULL, Recompute.MLP)


class Sharding(IntEnum):
    NONE = 0  # plain data parallel: every chip holds weights, grads, optimizer
    ZERO1 = 1  # optimizer states sharded (Megatron distributed optimizer)
    ZERO2 = 2  # + gradients
    ZERO3 = 3  # + weights (FSDP)


class Schedule(IntEnum):
    ONE_F_ONE_B = 0  # PipeDream-Flush (Narayanan et al. 2021)
    INTERLEAVED = 1  # virtual stages, bubble (p-1)/(v m)
    GPIPE = 2  # all forwards then all backwards; m micro-batches in flight
    # DeepSeek-V3 report sec. 3.2.1: bidirectional pipeline, each rank holds stages i and p-1-i; a forward and a
    # backward chunk of two micro-batches run together so one's all-to-all hides behind the other's compute
    DUALPIPE = 3
    # Megatron-Core "Combined 1F1B" (--overlap-moe-expert-parallel-comm, EP A2A overlap): 1F1B (with or without
    # virtual stages) whose steady-state forward and backward of adjacent micro-batches are merged so the
    # dispatch/combine all-to-all of one hides behind the other's compute
    ONE_F_ONE_B_OVERLAP = 4


OVERLAP_SCHEDULES = (Schedule.DUALPIPE, Schedule.ONE_F_ONE_B_OVERLAP)


class CudaGraphs(IntEnum):
    """How much of an MoE layer's host work a run replays from a captured graph instead of issuing op by op."""

    NONE = 0  # eager PyTorch: every operator issued from the host (Megatron-Core's default, --cuda-graph-impl none)
    # the router and the dispatch preprocessing captured: Megatron-Core --cuda-graph-impl transformer_engine
    # --cuda-graph-scope moe_router moe_preprocess (optionally attn), as Megatron-Bridge's Blackwell recipes do
    PARTIAL = 1
    # the whole step is one compiled program, nothing issued op by op: XLA (JAX/MaxText/AXLearn on TPU), the Neuron
    # compiler (Trainium), Megatron-Core --cuda-graph-impl full_iteration
    FULL = 2


class FlashKernel(IntEnum):
    """Which fused (FlashAttention-style) attention kernel a run calls; the fitted attention efficiency is the
    first's (FlashAttention-2-class kernels: FA2/FA3, cuDNN, Transformer Engine's fused attention)."""

    FA2 = 0
    # FlashAttention in Triton (flash_attn/flash_attn_triton.py, the FlashAttention-1 algorithm; MPT's
    # attn_impl triton), which Dao 2023 (FlashAttention-2, arXiv:2307.08691, sec. 4.1) benchmarks against FA2
    TRITON = 1


class ContextParallel(IntEnum):
    """How a framework's context-parallel attention (ring attention, Liu et al. 2023) exchanges K and V."""

    # Megatron-Core / Transformer Engine (AttnFuncWithCPAndKVP2P): the K and V chunks, with the model's key/value
    # heads, go point to point round the ring, each step's transfer behind the previous chunk's attention
    RING = 0
    # PyTorch's experimental context_parallel as torchtitan runs it (torch/distributed/tensor/experimental/
    # _attention.py, _templated_ring_attention and its backward; torchtitan's default context_parallel_rotate_method
    # "allgather", config_manager.py at 9dec370): the model repeats K and V to every query head before SDPA
    # (torchtitan models/llama/model.py repeat_kv), each call all-gathers them once and waits on the gather after
    # the first of its cp SDPA calls; backward all-gathers them again and, after each of its cp steps, passes the
    # fp32 dK and dV accumulated so far to the next rank (_AllToAllRotater), the last pass waited on at once
    ALLGATHER = 1


class Dispatcher(IntEnum):
    """How an MoE layer's tokens reach the ranks holding their experts (Megatron-Core --moe-token-dispatcher-type)."""

    # Megatron-Core's alltoall dispatcher: the tokens are permuted into top-k copies, one per routed expert, and an
    # NCCL all-to-all sends each copy to its expert's rank, two copies for two experts on one rank (Megatron-Core's
    # default; MoEAlltoAllTokenDispatcher)
    ALLTOALL = 0
    # a fused dispatch kernel (DeepEP, HybridEP: Megatron-Core --moe-token-dispatcher-type flex): each token crosses
    # to a destination rank once, whatever the number of its experts there, and is expanded to its experts after
    # (DeepEP README, "intranode/internode dispatch"; Megatron-LM docs/discussions/deepseek-v3-gb200-optimization,
    # sec. 2.1.1: "the Flex Dispatcher of DeepEP or HybridEP fuses the global permute into the communication
    # kernel, eliminating the need to explicitly copy the tokens top-k times"); the combine returns one sum per
    # token and rank
    FLEX = 1


# chip families whose frameworks compile the whole training step (XLA on TPU, neuronx-cc on Trainium): no
# host-issued operators, so CudaGraphs.FULL is their default
COMPILED_FAMILIES = ("tpu", "trainium")


def default_cuda_graphs(family: str) -> CudaGraphs:
    """The framework default a run gets when it states no graph capture: compiled (FULL) on TPU and Trainium,
    eager (NONE) on GPUs (Megatron-Core, NeMo, PyTorch FSDP, DeepSpeed default to no CUDA graphs)."""
    return CudaGraphs.FULL if family in COMPILED_FAMILIES else CudaGraphs.NONE


def default_named_remat(family: str) -> bool:
    """Whether a run that names no framework recomputes by a JAX checkpoint policy: on TPUs (JAX: MaxText,
    AXLearn); elsewhere PyTorch's autograd keeps what each operator's backward reads."""
    return family == "tpu"


def searched_recompute(family: str) -> tuple:
    """What a search tries when the recomputation is left blank: SEARCHED_RECOMPUTE, and MaxText's qkv_context
    policy where the chip's frameworks recompute by named checkpoints (default_named_remat: TPUs)."""
    return SEARCHED_RECOMPUTE + ((Recompute.QKV_CONTEXT,) if default_named_remat(family) else ())


def virtual_stages_allowed(schedule, vp, pp):
    """Whether a schedule runs with vp virtual stages per rank (arrays): interleaved needs vp > 1 and pp > 1,
    combined 1F1B takes any vp (vp > 1 with pp > 1), the others vp = 1."""
    schedule, vp, pp = np.asarray(schedule), np.asarray(vp), np.asarray(pp)
    return np.where(schedule == Schedule.INTERLEAVED, (vp > 1) & (pp > 1),
                    np.where(schedule == Schedule.ONE_F_ONE_B_OVERLAP, (vp == 1) | (pp > 1), vp == 1))


def virtual_stages(schedule, vp):
    """The virtual stages a schedule actually runs: vp for interleaved and combined 1F1B, else 1."""
    schedule = np.asarray(schedule)
    return np.where((schedule == Schedule.INTERLEAVED) | (schedule == Schedule.ONE_F_ONE_B_OVERLAP), vp, 1.0)


def _label(e: IntEnum) -> str:
    return {"ONE_F_ONE_B": "1f1b", "ONE_F_ONE_B_OVERLAP": "1f1b-overlap"}.get(e.name, e.name.lower())


def parse_choice(cls, text: str, field_name: str):
    names = {_label(e): e for e in cls}
    key = text.strip().lower()
    if key == "fsdp":
        key = "zero3"
    if key not in names:
        from ..errors import FlopcastError

        raise FlopcastError(f"unknown {field_name} {text!r}; valid: {', '.join(names)}")
    return names[key]


def label(e: IntEnum) -> str:
    return _label(e)


@dataclass(frozen=True)
class Layout:
    tp: int = 1
    pp: int = 1
    dp: int = 1
    cp: int = 1
    ep: int = 1
    vp: int = 1  # virtual stages per pipeline rank (interleaved schedule)
    micro_batch: int = 1  # sequences per micro-batch
    global_batch: int = 1  # sequences per optimizer step
    recompute: Recompute = Recompute.NONE
    sharding: Sharding = Sharding.ZERO1
    sequence_parallel: bool = True
    dtype: Dtype = Dtype.BF16
    schedule: Schedule = Schedule.ONE_F_ONE_B
    # expert tensor-parallel degree; 0 = the attention's tp (Megatron-Core's default when
    # --expert-tensor-parallel-size is unset: megatron/training/arguments.py, model_parallel_config.py)
    etp: int = 0

    @property
    def chips(self) -> int:
        return self.tp * self.pp * self.dp * self.cp

    @property
    def expert_tp(self) -> int:
        """The expert layers' tensor-parallel degree (etp, or tp where etp is 0)."""
        return self.etp or self.tp

    @property
    def microbatches(self) -> int:
        return self.global_batch // (self.dp * self.micro_batch)

    def describe(self, short: bool = False) -> str:
        """Every field as key=value; `short`: the degrees, recompute, sharding and schedule only (table cells: the
        sharding and a schedule other than 1F1B by their names alone, 'zero1 interleaved')."""
        parts = [f"tp={self.tp}", f"pp={self.pp}", f"dp={self.dp}"]
        if self.cp > 1:
            parts.append(f"cp={self.cp}")
        if self.ep > 1:
            parts.append(f"ep={self.ep}")
        if self.expert_tp != self.tp:
            parts.append(f"etp={self.expert_tp}")
        if self.vp > 1:
            parts.append(f"vp={self.vp}")
        parts += [
            f"mb={self.micro_batch}",
            f"gb={self.global_batch}",
            f"recompute={label(self.recompute)}",
            f"sharding={label(self.sharding)}",
            f"sp={'on' if self.sequence_parallel else 'off'}",
            f"dtype={self.dtype.label}",
            f"schedule={label(self.schedule)}",
        ]
        if short:
            keep = ("tp=", "pp=", "dp=", "cp=", "ep=", "etp=", "vp=", "recompute=", "sharding=", "schedule=")
            parts = [q.removeprefix("sharding=").removeprefix("schedule=") for q in parts
                     if q.startswith(keep) and q not in ("recompute=none", "sharding=none", "schedule=1f1b")]
        return " ".join(parts)

    def as_dict(self) -> dict:
        out = {}
        for f in fields(self):
            v = self.expert_tp if f.name == "etp" else getattr(self, f.name)
            out[f.name] = label(v) if isinstance(v, IntEnum) and not isinstance(v, Dtype) else (
                v.label if isinstance(v, Dtype) else v
            )
        return out


LAYOUT_FIELDS = tuple(f.name for f in fields(Layout))


@dataclass(frozen=True)
class Software:
    """What the training framework offers beyond the layout (the same for every layout of a search).

    The defaults are today's Megatron-Core / NeMo / PyTorch FSDP. `era_2021` is what a source
    dated before May 2022 could have used (see flopcast.validate.training.software_of).
    """

    flash_attention: bool = True  # fused attention keeps no s x s scores (Dao et al. 2022, arXiv:2205.14135)
    flash_kernel: FlashKernel = FlashKernel.FA2  # the fused kernel, where flash_attention is on
    # collectives a ZeRO-3 / FSDP rank issues per layer and pass: 1 for FSDP's flat parameter per
    # wrapped block (Zhao et al. 2023, PyTorch FSDP, sec. 3.2), one per parameter tensor for DeepSpeed
    # ZeRO-3 as of 2021 (its partitioned-parameter coordinator fetches each module's parameters)
    zero3_gathers_per_layer: int = 1
    # parameters a ZeRO-3 rank gathers ahead of their use: FSDP prefetches the next whole wrapped block
    # (Zhao et al. 2023, sec. 3.3.2); DeepSpeed's stage3_prefetch_bucket_size defaulted to 5e7 parameters
    # (deepspeed/runtime/zero/constants.py, ZERO_OPTIMIZATION_PREFETCH_BUCKET_SIZE_DEFAULT), so of a layer
    # with more parameters the rest is gathered when the layer starts, behind no compute
    zero3_prefetch_params: float = float("inf")
    # pipeline stages may hold different numbers of layers, so the stages with the embedding and the
    # logits take fewer (Megatron-Core: --decoder-first/last-pipeline-num-layers,
    # --account-for-embedding/loss-in-pipeline-split, --pipeline-model-parallel-layout); Megatron-LM of
    # 2021 split the layers evenly (num_layers divisible by the pipeline degree)
    uneven_pipeline_split: bool = True
    # how much of an MoE layer's host work is replayed from captured graphs (CudaGraphs; the host calls left are
    # flopcast.simulate.layer.moe_host_ops); None: the framework's default for the chip (default_cuda_graphs)
    cuda_graphs: CudaGraphs | None = None
    # whether the framework hides tensor-parallel collectives behind GEMMs (the calibration's tp_overlap share):
    # Megatron-Core's --tp-comm-overlap (Transformer Engine userbuffers) does; torchtitan's vanilla TP (DTensor
    # redistributes between the GEMMs, waited on) does not, only its AsyncTP (torch._inductor micro-pipelined TP),
    # which benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md measures at 1.04-1.16x over vanilla TP
    tp_comm_overlap: bool = True
    # bytes per token and vocabulary entry (over tp) the loss holds at its peak on the last stage: Megatron-LM's
    # vocab_parallel_cross_entropy keeps one fp32 softmax and writes its gradient in place (4); torchtitan's loss_fn
    # runs cross_entropy on an fp32 copy of the logits (train.py at 9dec370, `pred.flatten(0, 1).float()`), whose
    # log_softmax backward holds its saved fp32 output, the incoming fp32 gradient and the fp32 input gradient at
    # once (FP32_COPY_LOSS_BYTES)
    loss_bytes_per_logit: float = 4.0
    # the MoE token dispatcher (Dispatcher); Megatron-Core's default is the NCCL all-to-all one
    dispatcher: Dispatcher = Dispatcher.ALLTOALL
    # what MLP recomputation keeps: PyTorch's autograd (Megatron-Core --recompute-modules mlp) keeps every tensor
    # attention's backward reads, the norms' inputs among them; a JAX checkpoint policy
    # (jax.checkpoint_policies.save_only_these_names: MaxText's remat_policy, AXLearn's build_remat_spec) keeps only
    # the named tensors and the layer's input (the scan carry) and recomputes the rest from them (memory._kept_elems).
    # None: the default of the chip's frameworks (JAX on TPU, default_named_remat)
    named_remat: bool | None = None
    # how context-parallel attention exchanges K and V (ContextParallel); Megatron-Core's is the p2p ring
    context_parallel: ContextParallel = ContextParallel.RING
    # whether FP8 GEMM operands are cast by separate memory-bound kernels (flopcast.cost.compute.fp8_cast_bytes):
    # torchao's Float8Linear (torchtitan's float8 converter) scales input, weight and grad_output dynamically per
    # tensor, an amax pass and a cast pass each; Transformer Engine fuses the casts into the kernel before the GEMM
    fp8_cast_passes: bool = False
    # FSDP2's float8 all-gather (torchao enable_fsdp_float8_all_gather with precompute_float8_dynamic_scale_for_fsdp,
    # torchao/float8/fsdp_utils.py): an FP8 run's ZeRO-3 gathers move its layers' linear weights in 1 byte, cast on
    # the shard before the gather; the embedding and output head stay bf16
    fp8_allgather: bool = False

    def graphs_on(self, family: str) -> CudaGraphs:
        """The graph capture a run on a chip of this family has: the stated one, else the framework default."""
        return default_cuda_graphs(family) if self.cuda_graphs is None else self.cuda_graphs

    def named_remat_on(self, family: str) -> bool:
        """Whether recomputation keeps only named tensors (a JAX checkpoint policy): stated, else the chip's."""
        return default_named_remat(family) if self.named_remat is None else self.named_remat


FP32_COPY_LOSS_BYTES = 12.0
MODERN_SOFTWARE = Software()
# A GPT layer's parameter tensors: two norms (weight, bias), fused QKV, projection, two MLP matrices
# (weight, bias each) -- Megatron-LM's ParallelTransformerLayer.
ERA_2021_SOFTWARE = Software(flash_attention=False, zero3_gathers_per_layer=12, zero3_prefetch_params=5e7,
                             uneven_pipeline_split=False)


@dataclass(frozen=True)
class LayoutBatch:
    """Many layouts as parallel numpy arrays: the vectorized path's input.

    Categorical fields hold their enum's integer value, sequence_parallel 0/1.
    """

    tp: np.ndarray
    pp: np.ndarray
    dp: np.ndarray
    cp: np.ndarray
    ep: np.ndarray
    vp: np.ndarray
    micro_batch: np.ndarray
    global_batch: np.ndarray
    recompute: np.ndarray
    sharding: np.ndarray
    sequence_parallel: np.ndarray
    dtype: np.ndarray
    schedule: np.ndarray
    etp: np.ndarray  # 0 = tp

    @classmethod
    def of(cls, layouts: list[Layout]) -> LayoutBatch:
        return cls(**{n: np.array([int(getattr(l, n)) for l in layouts], dtype=np.int64) for n in LAYOUT_FIELDS})

    @classmethod
    def from_arrays(cls, **arrays) -> LayoutBatch:
        arrays.setdefault("etp", 0)
        n = max(np.size(a) for a in arrays.values())
        return cls(**{k: np.broadcast_to(np.asarray(v, dtype=np.int64), (n,)).copy() for k, v in arrays.items()})

    @property
    def size(self) -> int:
        return int(self.tp.shape[0])

    @property
    def expert_tp(self) -> np.ndarray:
        return np.where(self.etp > 0, self.etp, self.tp)

    def take(self, index) -> LayoutBatch:
        return LayoutBatch(**{n: getattr(self, n)[index] for n in LAYOUT_FIELDS})

    @classmethod
    def concat(cls, batches: list[LayoutBatch]) -> LayoutBatch:
        """The batches one after another (the one batch itself where there is one)."""
        return batches[0] if len(batches) == 1 else cls(
            **{n: np.concatenate([getattr(b, n) for b in batches]) for n in LAYOUT_FIELDS})

    def layout(self, i: int) -> Layout:
        v = {n: int(getattr(self, n)[i]) for n in LAYOUT_FIELDS}
        return Layout(
            **{**v, "recompute": Recompute(v["recompute"]), "sharding": Sharding(v["sharding"]),
               "sequence_parallel": bool(v["sequence_parallel"]), "dtype": Dtype(v["dtype"]),
               "schedule": Schedule(v["schedule"])}
        )
