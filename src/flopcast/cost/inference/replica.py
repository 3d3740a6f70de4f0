"""A deployment: one model replica on `tp` chips (sockets for CPUs), its rates and capacity.

CPUs: compute is threads x per-core peak of the compute dtype (the chip's peak_flops already folds
in SVE/NEON width and the i8mm/BF16 matrix instructions); bandwidth follows cpu.cpu_bandwidth.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from ...errors import FlopcastError
from ...model import hf
from ...model.system import Dtype, System
from ...model.workload import Model
from .. import params as P
from .cpu import REPACKED_GEMM_SPEEDUP, cpu_bandwidth, instance_bandwidth, repacked_gemm
from .engines import (STATIC_SHAPE_FAMILIES, EngineEfficiency, calibration_hardware, engine_family,
                      family_efficiency, load_inference_calibration)
from .formats import WeightFormat, kv_bytes_per_token, kv_element_bytes, weight_format
from .releases import at_release, scores_whole_square

TRANSFORMERS_NEURONX = "transformers-neuronx"  # its engine family (engines.engine_family)
# NeuronCores the runtime shows per chip: Trainium2/3 group their 8 physical cores in pairs
# (logical NeuronCore config LNC=2, the default since Neuron SDK 2.21; Neuron docs "Logical NeuronCore")
NEURON_LOGICAL_CORES = {"trainium2": 4, "trainium3": 4}


@dataclass(frozen=True)
class Deployment:
    """One model replica: `tp` chips (sockets for CPUs) running one engine."""

    model: Model
    system: System
    tp: int
    replicas: int  # chips // tp
    threads: int  # CPU threads (0 on accelerators)
    weights: WeightFormat
    kv_bytes: float  # per element
    family: str
    efficiency: EngineEfficiency
    calibration: object  # model.efficiency.Calibration, for collectives
    assumptions: tuple = field(default=(), compare=False)
    speculation: object = None  # speculation.Speculation, or None: one token per sequence per decode step
    ep: int = 1  # > 1: MoE experts split whole over the replica's ep = tp chips, attention data-parallel (see below)
    pp: int = 1  # pipeline stages, each of tp chips holding layers / pp (see `virtual_engines`)
    gemm_speedup: float = 1.0  # CPUs: the GEMM kernel's rate over the fitted one's (cpu.REPACKED_GEMM_SPEEDUP)
    # a context encoding scores all I x I query-key pairs and masks the causal half afterwards (no fused attention
    # kernel: releases.scores_whole_square, roofline.prefill_time); False: the I^2 / 2 causal pairs
    whole_square: bool = False

    @property
    def chips(self) -> int:
        """Chips (sockets for CPUs) of one replica: tp x pp."""
        return self.tp * self.pp

    @property
    def virtual_engines(self) -> int:
        """Batches a replica runs at once: one per pipeline stage. vLLM's pipeline parallelism keeps pp virtual
        engines, each with its own scheduler and 1/pp of the KV blocks, so pp batches flow through the stages
        staggered (vLLM docs, "Distributed inference and serving"; the GPipe-style decode pipeline of Huang et al.
        2019). Each batch's pass takes all stages in turn (rates below are one stage's tp chips); with fewer busy
        engines than stages the others' stages idle: the decode pipeline's bubble."""
        return self.pp

    @property
    def is_cpu(self) -> bool:
        return self.system.chip.kind == "cpu"

    @property
    def expert_parallel(self) -> bool:
        """Experts over the replica's chips, everything else data-parallel: each chip holds its own copy of the
        attention, dense MLPs, shared experts and embeddings, serves its own share of the sequences (their KV cache
        on it alone, once), and holds experts / ep routed experts of every MoE layer; tokens reach their experts by
        a dispatch and a combine all-to-all per MoE layer (SGLang's DP attention with --ep-size, vLLM's
        --data-parallel-size with --enable-expert-parallel; DeepSeek-V3 report sec. 3.4, its decode deployment)."""
        return self.ep > 1

    @property
    def shards(self) -> int:
        """Ranks the model's heads are split over: NeuronCores for Neuron chips (transformers-neuronx
        shards over cores, 2 per Trainium1/Inferentia2 chip), chips elsewhere; 1 on CPUs."""
        if self.is_cpu:
            return 1
        chip = self.system.chip
        if chip.family in ("trainium", "inferentia"):
            return self.tp * NEURON_LOGICAL_CORES.get(chip.id, chip.cores)
        return self.tp

    @property
    def kv_replication(self) -> float:
        """Stored (and read) KV heads over the model's KV heads.

        Each of `shards` ranks holds ceil(kv_heads / shards) KV heads: when the ranks outnumber
        the KV heads (GQA), each KV head is replicated on shards / kv_heads ranks (Megatron-LM and
        vLLM replicate KV heads when tp > num_kv_heads; transformers-neuronx pads the heads to a
        multiple of the TP degree), so the cache and its reads grow by that factor; an engine that turns GQA into
        MHA (kv_heads_as_query_heads) stores one KV head per padded query head. MLA caches one
        latent shared by all heads, which no head split can shard: every tensor-parallel rank keeps all of it
        (vLLM's and SGLang's MLA caches; SGLang's DP attention exists to avoid this copy): `shards` copies. Under
        expert parallelism each chip holds only its own sequences' KV: 1."""
        m = self.model
        n = self.shards
        if n <= 1 or self.expert_parallel or not (m.kv_heads or m.mla):
            return 1.0
        if m.mla:
            return float(n)
        if self.kv_heads_as_query_heads:
            return n * math.ceil(m.heads / n) / m.kv_heads
        return n * math.ceil(m.kv_heads / n) / m.kv_heads

    @property
    def kv_heads_as_query_heads(self) -> bool:
        """Whether the engine turns a GQA model into MHA: transformers-neuronx does whenever the ranks do not divide
        the KV heads (`check_gqa_fallback` in decoder.py, the same at 7a30b42, 0623de2, c8d6bdc and 1ade6d7, i.e.
        versions 0.10-0.13, SDK 2.18-2.21: "KV head replication will be enabled since the number of KV heads is not
        evenly divisible by the tensor parallel degree" -> GQA.REPLICATED_HEADS, also the Llama-3 samples' explicit
        choice). Its K and V projection weights are then repeated to every query head (`repeat_interleave` by
        heads / kv_heads) and padded with the query heads to a multiple of the ranks, so each rank holds and reads as
        many KV heads as query heads, with their projection weights (`attention_copies_params`). NxD Inference
        and optimum-neuron replicate the KV heads to the TP degree instead where it divides by them (gqa.py
        REPLICATE_TO_TP_DEGREE: one a rank, the general rule above; neuronx-distributed-inference@4bcdc54,
        optimum-neuron@213224e), else convert to MHA as well."""
        m, n = self.model, self.shards
        if (m.mla or not m.kv_heads or m.kv_heads >= m.heads or n <= 1 or self.expert_parallel
                or self.family not in STATIC_SHAPE_FAMILIES):
            return False
        if self.family == TRANSFORMERS_NEURONX:
            return m.kv_heads % n != 0
        # NxD Inference / optimum-neuron gqa.py get_shardable_head_counts: CONVERT_TO_MHA when tp % kv_heads != 0
        # and the KV heads do not split evenly over the ranks
        return n % m.kv_heads != 0 and (m.kv_heads < n or m.kv_heads % n != 0)

    @property
    def attention_copies_params(self) -> float:
        """Attention weights the ranks hold and stream beyond the model's own: query heads padded to a multiple of
        the ranks, with their output-projection columns (Neuron engines pad rather than refuse such a TP:
        transformers-neuronx `MaybePadder` to `round_up_to_divisor(heads, tp)`, NxD Inference gqa.py
        `get_number_of_extra_heads`), and a K and V projection for every KV head stored (kv_replication x kv_heads:
        vLLM's QKVParallelLinear and NxD's REPLICATE_TO_TP_DEGREE give each rank its KV head's weights; a GQA model
        turned MHA, kv_heads_as_query_heads, one per padded query head). Llama-3-70B on 32 Trainium1 ranks under
        transformers-neuronx: 2 x 80 x 8,192 x 128 x (64 - 8) = 9.4 B weights beside the model's 70.6 B. 0 without
        tensor parallelism, for MLA (latent_copies_params) and under expert parallelism."""
        m = self.model
        n = self.shards
        if n <= 1 or self.is_cpu or self.expert_parallel or m.mla or not m.kv_heads:
            return 0.0
        padded = n * math.ceil(m.heads / n)
        stored_kv = m.kv_heads * self.kv_replication
        return m.layers * m.hidden * m.d_head * (2.0 * (padded - m.heads) + 2.0 * (stored_kv - m.kv_heads))

    @property
    def copied_params(self) -> float:
        """Weights the replica holds and streams beyond one copy of the model: MLA's latent down-projections
        (latent_copies_params), padded query heads and replicated K/V projections (attention_copies_params)."""
        return self.latent_copies_params + self.attention_copies_params

    @property
    def latent_copies_params(self) -> float:
        """Weights the replica holds and streams beyond one copy of the model: under tensor parallelism each of the
        kv_replication ranks that keeps the whole MLA latent also keeps the down-projections that make it
        (params.mla_latent_params), so every layer's are stored and read kv_replication - 1 more times and computed
        by every rank for every token. DeepSeek-V3 at TP 64 on trn2.48xlarge: 0.92 B weights (1.85 GB in BF16) a rank
        beside its 1/64 share, 21.2 GiB a rank in all (21.6 with NxD's router, also a plain nn.Linear, in fp32),
        as the contrib README's "per-rank files (~21.4GB each)"; everything sharded would be 19.5 GiB. The router's
        copies are not modelled. 0 without MLA."""
        m = self.model
        if not m.mla or self.kv_replication <= 1:
            return 0.0
        return (self.kv_replication - 1.0) * m.layers * P.mla_latent_params(m)

    @property
    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes one token adds to this replica (replication included)."""
        return kv_bytes_per_token(self.model, self.kv_bytes) * self.kv_replication

    @property
    def compute_dtype(self) -> Dtype:
        return self.weights.cpu_compute if self.is_cpu else self.weights.accel_compute

    @property
    def compute_rate(self) -> float:
        """FLOP/s the replica's GEMMs reach, at the clock the chip sustains under its power limit."""
        chip = self.system.chip
        peak = compute_peak(chip, self.compute_dtype)
        if self.is_cpu:
            return peak / chip.cores * self.threads * self.efficiency.compute * self.gemm_speedup
        return peak * chip.clock_fraction() * self.tp * self.efficiency.compute

    @property
    def memory_rate(self) -> float:
        """Bytes/s the replica streams from memory."""
        if self.is_cpu:
            return cpu_bandwidth(self.threads, self.thread_bandwidth,
                                 self.efficiency.memory * instance_bandwidth(self.system, self.tp))
        return self.system.chip.memory_bandwidth * self.tp * self.efficiency.memory

    @property
    def thread_bandwidth(self) -> float:
        """CPUs: bytes/s one thread streams when the memory system is idle: the weights its
        dequantise-and-dot loop consumes per cycle x their stored bytes x the clock. The loop, not
        the bytes, sets the pace: llama.cpp at 8 Graviton3 threads decodes the same ~16 G weights/s
        from q3_K (3.44 bits) and q4_K_M (4.85 bits) (inference_runs.csv, PR 11917 vs PR 15277)."""
        return self.efficiency.thread_weights_per_cycle * self.weights.bits / 8.0 * (self.system.chip.clock or 2.5e9)

    @property
    def memory_capacity(self) -> float:
        """Bytes of memory the replica holds (HBM of its chips; a CPU instance's DRAM share)."""
        s = self.system
        if self.is_cpu:
            total = s.host_memory or s.chip.memory * s.chips_per_node
            return total * self.tp / s.chips_per_node
        return s.chip.memory * self.tp * self.pp

    @property
    def price_per_hour(self) -> float | None:
        s = self.system
        return None if s.price_per_hour is None else s.price_per_hour * self.chips * self.replicas / s.chips_per_node


def compute_peak(chip, dtype: Dtype) -> float:
    try:
        return chip.peak(dtype)
    except FlopcastError:
        return chip.peak(Dtype.FP32)  # no int8/bf16 rate published: the engine falls back to fp32 math


def deployment(model: Model, system: System, *, chips: int | None = None, tp: int | None = None,
               threads: int | None = None, weights: str | None = None, kv_dtype: str | None = None,
               engine: str | None = None, efficiency: EngineEfficiency | None = None,
               calibration=None, inference_calibration: dict | None = None, speculation=None,
               ep: int | None = None, pp: int | None = None) -> Deployment:
    """Check the user's choices and fill the blanks the way a tuned practitioner would.

    `speculation`: a speculation.Speculation (speculative decoding), or None. `ep`: 1, or tp for a MoE model's
    experts split over the replica's chips (Deployment.expert_parallel). `pp`: pipeline stages of tp chips each
    (Deployment.virtual_engines)."""
    cpu = system.chip.kind == "cpu"
    pp = _pp(model, system, pp, ep)
    chips, tp = _chips_and_tp(system, chips, tp, pp)
    threads = _threads(system, tp, threads)
    fmt = weight_format(weights or ("q4_0" if cpu else "bf16"))
    kv = kv_element_bytes(kv_dtype or ("fp16" if cpu else "bf16"))
    family = engine_family(engine, system)
    notes = []
    if calibration is None:
        from ...catalog import calibration as _cal

        calibration = _cal()
    if efficiency is None:
        table = inference_calibration if inference_calibration is not None else load_inference_calibration()
        efficiency, note = family_efficiency(table, family, system.chip, calibration)
        if note:
            notes.append(note)
    efficiency, note = at_release(efficiency, engine, model, family)
    if note:
        notes.append(note)
    gemm = REPACKED_GEMM_SPEEDUP if repacked_gemm(weights, engine, system) else 1.0
    if gemm != 1.0:
        notes.append(f"weights repacked for llama.cpp's aarch64 GEMM kernels: prompt GEMMs {gemm:.2f}x the fitted "
                     "vec_dot rate (llama.cpp PR 5780, Graviton3, 64 threads)")
    d = Deployment(model, system, tp, chips // (tp * pp), threads, fmt, kv, family, efficiency, calibration, (),
                   speculation, _ep(model, system, tp, ep), pp, gemm, scores_whole_square(family, engine))
    if speculation is not None:
        notes.append(f"speculative decoding {speculation.label()}: decode time per token = (verification pass "
                     f"over k+1 tokens + k drafter steps of {speculation.drafter_fraction(model):.3f} of a decode "
                     "step) / expected tokens (Leviathan et al. 2023)")
    return replace(d, assumptions=tuple(notes + _layout_notes(d)) + hf.result_notes(model))


def _ep(model: Model, system: System, tp: int, ep: int | None) -> int:
    """The expert-parallel degree: 1, or the replica's tp (experts over all its chips) for a MoE model."""
    if ep is None or ep == 1:
        return 1
    if not model.moe:
        raise FlopcastError(f"--ep applies to mixture-of-experts models; {model.label} is dense")
    if system.chip.kind == "cpu":
        raise FlopcastError("--ep applies to accelerators; leave it out for CPU systems")
    if ep != tp or model.moe.experts % ep:
        raise FlopcastError(f"--ep must be 1 or the replica's --tp ({tp}) and divide the {model.moe.experts} experts, "
                            f"got {ep}")
    return ep


def _pp(model: Model, system: System, pp: int | None, ep: int | None) -> int:
    """Pipeline stages: 1, or up to the model's layers on an accelerator (not with expert parallelism)."""
    if pp is None or pp == 1:
        return 1
    if system.chip.kind == "cpu":
        raise FlopcastError("--pp applies to accelerators; CPU sockets run one replica each (--tp)")
    if pp < 1 or pp > model.layers:
        raise FlopcastError(f"--pp must be between 1 and the model's {model.layers} layers, got {pp}")
    if ep not in (None, 1):
        raise FlopcastError("--pp with --ep is not modelled; give one of them")
    return pp


def _chips_and_tp(system: System, chips: int | None, tp: int | None, pp: int = 1) -> tuple[int, int]:
    """The chips of the deployment (default: one node, or tp x pp) and its tensor-parallel degree (default: the
    chips over the pipeline stages)."""
    if chips is None:
        chips = system.chips_per_node if tp is None or pp == 1 else tp * pp
    if chips < 1 or chips > system.max_chips:
        raise FlopcastError(f"--chips must be between 1 and {system.max_chips} for {system.id}, got {chips}")
    if tp is None:
        tp = chips // pp
    if tp < 1 or chips % (tp * pp):
        raise FlopcastError(f"--tp must be a positive divisor of --chips ({chips})"
                            + (f" over --pp {pp} stages" if pp > 1 else "") + f", got {tp}")
    return chips, tp


def _threads(system: System, tp: int, threads: int | None) -> int:
    """CPU threads of a replica (default: every vCPU of its `tp` sockets); 0 on accelerators."""
    chip = system.chip
    if chip.kind != "cpu":
        if threads:
            raise FlopcastError("--threads applies to CPU systems only; leave it out for accelerators")
        return 0
    vcpus = system.vcpus or chip.cores * system.chips_per_node
    limit = vcpus // system.chips_per_node * tp
    if threads is None:
        threads = limit
    if threads < 1 or threads > limit:
        raise FlopcastError(f"--threads must be between 1 and {limit} (cores of {tp} socket(s) of {system.id}), got "
                            f"{threads}")
    return threads


def _layout_notes(d: Deployment) -> list[str]:
    """What the engine does with the layout that the roofline does not model, or models by a factor."""
    model, family, notes = d.model, d.family, []
    if family in STATIC_SHAPE_FAMILIES:
        notes.append(f"engine family {family} compiles static shapes: a request's decode steps each read its whole "
                     "KV window (input + output tokens), not the live context")
    if d.pp > 1:
        notes.append(f"pipeline of {d.pp} stages x TP{d.tp}: {d.pp} batches in flight (vLLM virtual engines), each "
                     f"with 1/{d.pp} of the KV cache and --max-num-seqs; a pass crosses every stage (+{d.pp - 1} "
                     "activation sends); stalls between batches of unequal length are not modelled; `infer` times one "
                     "batch in the pipeline (the other stages idle: the bubble)")
    if d.expert_parallel:
        notes.append(f"expert parallel over {d.ep} chips: {model.moe.experts // d.ep} routed experts per chip, "
                     "attention, dense layers and shared experts copied on each, every chip its own sequences and "
                     "their KV cache; dispatch and combine all-to-all per MoE layer; experts' load taken as balanced")
    elif d.kv_replication > 1 and model.mla:
        notes.append(f"MLA under tensor parallelism: each of {d.shards} ranks keeps the whole compressed KV cache, "
                     f"stored {d.kv_replication:g}x (--ep {d.tp} keeps one copy)")
    if not d.is_cpu and model.heads % d.shards and not model.mla and not d.expert_parallel:
        notes.append(f"{d.shards} tensor-parallel ranks do not divide the {model.heads} query heads: heads are "
                     f"padded to {math.ceil(model.heads / d.shards) * d.shards} (Neuron pads; vLLM refuses such a tp), "
                     "their zero weights streamed, their attention scores not modelled")
    if d.attention_copies_params > 0:
        notes.append(f"attention weights as the ranks hold them (padded query heads, a K/V projection per stored KV "
                     f"head): {d.attention_copies_params / 1e9:.2f} B beyond the model's")
    if d.kv_heads_as_query_heads:
        notes.append(f"{d.shards} ranks do not divide the {model.kv_heads} KV heads: transformers-neuronx repeats "
                     f"them to the {d.shards * math.ceil(model.heads / d.shards)} (padded) query heads with their K/V "
                     f"projections (GQA.REPLICATED_HEADS), so the KV cache is stored and read {d.kv_replication:g}x "
                     "with their K/V projection weights")
    elif d.kv_replication > 1 and not model.mla:
        notes.append(f"{d.shards} tensor-parallel ranks for {model.kv_heads} KV heads: each rank holds "
                     f"{math.ceil(model.kv_heads / d.shards)}, so the KV cache is stored and read "
                     f"{d.kv_replication:g}x")
    return notes


def calibration_basis(d: Deployment) -> str:
    """One line: whose measured rows the deployment's engine efficiencies come from."""
    fitted_on = calibration_hardware().get(d.family) or []
    chip = d.system.chip.id
    if not fitted_on:
        return f"engine family {d.family}: no calibration rows; efficiencies as stated above"
    if chip in fitted_on:
        return (f"efficiencies of engine family {d.family} fitted on the serving validation rows (inference_runs.csv, "
                f"more_inference_runs.csv), {chip} among them")
    return (f"no measured {chip} serving runs: engine family {d.family} efficiencies fitted on "
            f"{', '.join(fitted_on)} rows of the serving validation files, with {chip}'s own peaks, bandwidth and "
            "links")
