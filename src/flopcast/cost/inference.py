"""Inference cost: prefill and decode of a decoder-only transformer by per-operator roofline.

Each operator of a forward pass (QKV, attention core, output projection, MLP or
experts, logits) takes max(FLOPs / compute rate, bytes / memory rate) (Williams
et al. 2009, "Roofline"); prefill is then compute-bound, decode bandwidth-bound
(Pope et al. 2022, "Efficiently Scaling Transformer Inference", sec. 2-3), and the
attention core of decode reads the whole KV cache. Tensor parallelism adds two
all-reduces per layer (Megatron, Shoeybi et al. 2019, sec. 3) timed by
cost/comm.collective_time. An engine's fixed per-layer cost (kernel launches,
synchronisation) and per-request cost are calibrated per engine family on
validation/inference_runs.csv (validate/inference.fit_inference).

CPUs: compute is threads x per-core peak of the compute dtype (the chip's peak_flops
already folds in SVE/NEON width and the i8mm/BF16 matrix instructions); bandwidth is
threads x r, r = weights one thread dequantises per cycle x bytes per weight x clock,
saturating smoothly at the instance's achievable bandwidth: b(n) = nr R / sqrt((nr)^2 + R^2)
(a p=2 soft minimum; it fits the llama.cpp thread sweep of PR 11917 within 6%). A partial
instance gets the bandwidth its system entry states (memory_bandwidth).

Every function here takes floats or numpy arrays for the batch and token counts.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from ..errors import FlopcastError
from ..model import hf
from ..model.system import Dtype, System
from ..model.workload import Model
from . import params as P
from .comm import Collective, collective_time

# ---------------------------------------------------------------- weight and KV formats


@dataclass(frozen=True)
class WeightFormat:
    name: str
    bits: float  # stored bits per weight, block scales included
    cpu_compute: Dtype  # what a CPU engine multiplies in
    accel_compute: Dtype  # what an accelerator engine multiplies in (weight-only quantisation -> bf16)
    source: str
    output_bits: float | None = None  # bits of the output (logits) matrix when the format stores it differently

    @property
    def logits_bits(self) -> float:
        return self.output_bits or self.bits


Q6_K_BITS = 8.0 * 210 / 256


def _ggml(name, block_bytes, block_weights, note):
    """A llama.cpp block format: block_bytes per block of block_weights weights (ggml-common.h structs).

    llama.cpp's quantizer stores output.weight as Q6_K for every such type below 6.56 bits
    (llama-quant.cpp llama_tensor_get_type: "new_type = GGML_TYPE_Q6_K" for LLM_TENSOR_OUTPUT
    unless the type is Q8_0), so decode streams the logits matrix at 6.56 bits."""
    bits = 8.0 * block_bytes / block_weights
    return WeightFormat(name, bits, Dtype.INT8, Dtype.BF16,
                        f"llama.cpp ggml-common.h {note}: {block_bytes} B per {block_weights} weights",
                        Q6_K_BITS if bits < Q6_K_BITS else None)


def _mix(name: str, bits: float, what: str = "mix") -> WeightFormat:
    """A llama.cpp quantization mix, at the file-average bits per weight its quantize README lists."""
    return WeightFormat(name, bits, Dtype.INT8, Dtype.BF16, f"llama.cpp quantize README: {name.upper()} {bits} bpw ({what})")


WEIGHT_FORMATS = {f.name: f for f in (
    WeightFormat("fp32", 32, Dtype.FP32, Dtype.FP32, "IEEE single"),
    WeightFormat("bf16", 16, Dtype.BF16, Dtype.BF16, "bfloat16"),
    WeightFormat("fp16", 16, Dtype.FP16, Dtype.FP16, "IEEE half"),
    WeightFormat("fp8", 8, Dtype.FP8, Dtype.FP8, "FP8 E4M3, per-tensor scale"),
    WeightFormat("int8", 8, Dtype.INT8, Dtype.BF16, "per-channel int8 weights (scales negligible)"),
    WeightFormat("int4", 4.25, Dtype.INT8, Dtype.BF16, "4-bit groups of 128 with fp16 scale and zero (GPTQ)"),
    WeightFormat("awq-int4", 4.25, Dtype.INT8, Dtype.BF16, "AWQ (Lin et al. 2023): 4-bit, group 128, fp16 scale+zero"),
    _ggml("q4_0", 18, 32, "block_q4_0 {fp16 d; 16 B nibbles}"),
    _ggml("q4_1", 20, 32, "block_q4_1 {fp16 d, m; 16 B}"),
    _ggml("q5_0", 22, 32, "block_q5_0 {fp16 d; 4 B high bits; 16 B}"),
    _ggml("q5_1", 24, 32, "block_q5_1"),
    _ggml("q8_0", 34, 32, "block_q8_0 {fp16 d; 32 int8}"),
    _ggml("q2_k", 84, 256, "block_q2_K {16 B scales; 64 B quants; fp16 d, dmin}"),
    _ggml("q3_k", 110, 256, "block_q3_K {32 B hmask; 64 B quants; 12 B scales; fp16 d}"),
    _ggml("q4_k", 144, 256, "block_q4_K {fp16 d, dmin; 12 B scales; 128 B quants}"),
    _ggml("q5_k", 176, 256, "block_q5_K"),
    _ggml("q6_k", 210, 256, "block_q6_K {128 B ql; 64 B qh; 16 B scales; fp16 d}"),
    # mixes: llama.cpp examples/quantize README lists the file-average bits per weight
    _mix("q3_k_s", 3.50), _mix("q3_k_m", 3.91), _mix("q3_k_l", 4.27), _mix("q4_k_s", 4.58),
    _mix("q4_k_m", 4.85, "q4_K + q6_K"), _mix("q5_k_s", 5.54), _mix("q5_k_m", 5.69),
    WeightFormat("iq4_xs", 4.25, Dtype.INT8, Dtype.BF16, "llama.cpp block_iq4_xs: 136 B per 256 weights"),
    WeightFormat("mxfp4", 4.25, Dtype.BF16, Dtype.BF16, "OCP MX FP4: 4-bit elements + one 8-bit scale per 32"),
)}
KV_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "q8_0": 34 / 32, "q4_0": 18 / 32}

# other spellings of the same storage (repacked llama.cpp layouts keep the bytes of their base format)
WEIGHT_ALIASES = {"q4_0_4_4": "q4_0", "q4_0_4_8": "q4_0", "q4_0_8_8": "q4_0", "f16": "fp16", "bfloat16": "bf16",
                  "f32": "fp32", "w8a8": "int8", "int8-w8a8": "int8", "w8a16": "int8", "gptq-int4": "int4",
                  "awq": "awq-int4", "w4a16": "int4", "fp8-dynamic": "fp8", "q6_k_m": "q6_k"}


def weight_format(name: str) -> WeightFormat:
    key = name.strip().lower()
    key = WEIGHT_ALIASES.get(key, key)
    if key not in WEIGHT_FORMATS:
        raise FlopcastError(f"--weights {name!r} is not a known format; valid: {', '.join(WEIGHT_FORMATS)}")
    return WEIGHT_FORMATS[key]


def kv_element_bytes(name: str) -> float:
    key = name.strip().lower()
    if key not in KV_BYTES:
        raise FlopcastError(f"--kv-dtype {name!r} is not a known KV-cache type; valid: {', '.join(KV_BYTES)}")
    return KV_BYTES[key]


def weight_bytes(m: Model, fmt: WeightFormat) -> float:
    """Bytes of all weights stored in `fmt` (embeddings and norms included)."""
    logits = m.vocab * m.hidden
    return (P.total_params(m) - logits) * fmt.bits / 8.0 + logits * fmt.logits_bits / 8.0


def kv_bytes_per_token(m: Model, element_bytes: float) -> float:
    """KV-cache bytes one token adds over all layers.

    MHA/GQA: 2 (K and V) x layers x kv_heads x head_dim x bytes (Pope et al. 2022 sec. 3.1;
    GQA, Ainslie et al. 2023, stores kv_heads < heads). MLA caches the compressed latent and
    the decoupled RoPE key: layers x (kv_lora_rank + qk_rope_head_dim) x bytes (DeepSeek-AI
    2024, arXiv:2405.04434 sec. 2.1.2)."""
    if m.mla:
        return m.layers * (m.mla.kv_lora_rank + m.mla.qk_rope_head_dim) * element_bytes
    return 2.0 * m.layers * m.kv_heads * m.d_head * element_bytes


def effective_context(m: Model, context):
    """Tokens of KV each layer reads on average: sliding-window layers read at most the window."""
    context = np.asarray(context, dtype=float)
    if not m.sliding_window:
        return context
    full_share = 1.0 - m.sliding_share
    return full_share * context + (1 - full_share) * np.minimum(context, m.sliding_window)


# ---------------------------------------------------------------- engines and their efficiencies

# NeuronCores the runtime shows per chip: Trainium2/3 group their 8 physical cores in pairs
# (logical NeuronCore config LNC=2, the default since Neuron SDK 2.21; Neuron docs "Logical NeuronCore")
NEURON_LOGICAL_CORES = {"trainium2": 4, "trainium3": 4}


@dataclass(frozen=True)
class EngineEfficiency:
    """What one serving engine family reaches; fitted on inference_runs.csv (few, physical)."""

    compute: float = 0.4  # fraction of the compute dtype's peak reached by GEMMs
    memory: float = 0.7  # fraction of the memory bandwidth reached streaming weights and KV
    layer_overhead_s: float = 20e-6  # fixed cost per layer per forward pass (launches, syncs)
    request_overhead_s: float = 5e-3  # fixed cost per prefill (scheduling, sampling, host)
    thread_weights_per_cycle: float = 6.0  # CPUs: weights one thread dequantises and multiplies per clock cycle


ENGINE_FAMILIES = ("llama.cpp", "neuronx", "gpu")
# Priors (the fit is regularised towards them; used alone for a family with no rows):
# llama.cpp: decode reaches ~80% of STREAM bandwidth at full socket (Arm/llama.cpp
# Graviton guides); a 256-bit SVE/NEON dot-product loop consumes ~6 4-bit weights per cycle
# (a 256-bit SVE dot-product step takes 64 4-bit weights in ~2 instructions plus unpacking and
# scaling: ~6.6 weights/cycle reached at 2 threads in PR 11917, 4.86 tok/s x 7.1 G weights / 2 / 2.6 GHz).
# Neuron and GPU engines: typical decode bandwidth utilisation 60-70%.
PRIORS = {
    "llama.cpp": EngineEfficiency(0.1, 0.8, 10e-6, 2e-3, 6.0),
    "neuronx": EngineEfficiency(0.3, 0.6, 40e-6, 5e-3, 0.0),
    "gpu": EngineEfficiency(0.5, 0.7, 40e-6, 10e-3, 0.0),
}


def engine_family(engine: str | None, system: System) -> str:
    """The engine family whose calibration applies, chosen by the hardware the engine runs on.

    The calibration rows hold one engine family per kind of hardware (llama.cpp on CPUs,
    transformers-neuronx on Neuron chips, TGI/vLLM on GPUs), so the hardware decides;
    `engine` (the serving software's name) is kept only for the assumptions printed."""
    if system.chip.kind == "cpu":
        return "llama.cpp"
    return "neuronx" if system.chip.family in ("trainium", "inferentia") else "gpu"


# ---------------------------------------------------------------- a deployment


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
    calibration: object  # cost.efficiency.Calibration, for collectives
    assumptions: tuple = field(default=(), compare=False)

    @property
    def is_cpu(self) -> bool:
        return self.system.chip.kind == "cpu"

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
        multiple of the TP degree), so the cache and its reads grow by that factor. MLA caches one
        latent shared by all heads: 1."""
        m = self.model
        n = self.shards
        if n <= 1 or m.mla or not m.kv_heads:
            return 1.0
        return n * math.ceil(m.kv_heads / n) / m.kv_heads

    @property
    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes one token adds to this replica (replication included)."""
        return kv_bytes_per_token(self.model, self.kv_bytes) * self.kv_replication

    @property
    def compute_dtype(self) -> Dtype:
        return self.weights.cpu_compute if self.is_cpu else self.weights.accel_compute

    @property
    def compute_rate(self) -> float:
        """FLOP/s the replica's GEMMs reach."""
        chip = self.system.chip
        peak = _peak(chip, self.compute_dtype)
        if self.is_cpu:
            return peak / chip.cores * self.threads * self.efficiency.compute
        return peak * self.tp * self.efficiency.compute

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
        return s.chip.memory * self.tp

    @property
    def price_per_hour(self) -> float | None:
        s = self.system
        return None if s.price_per_hour is None else s.price_per_hour * self.tp * self.replicas / s.chips_per_node


def _peak(chip, dtype: Dtype) -> float:
    try:
        return chip.peak(dtype)
    except FlopcastError:
        return chip.peak(Dtype.FP32)  # no int8/bf16 rate published: the engine falls back to fp32 math


def cpu_bandwidth(threads, thread_bandwidth, roof):
    """Bytes/s `threads` threads stream: n r R / sqrt((n r)^2 + R^2), monotone, -> R (a p=2 soft min)."""
    nr = np.asarray(threads, dtype=float) * thread_bandwidth
    return nr * roof / np.sqrt(nr * nr + roof * roof)


def instance_bandwidth(system: System, sockets: int) -> float:
    """Memory bandwidth of `sockets` sockets of a CPU instance (a partial instance: its stated share)."""
    if system.memory_bandwidth:
        return system.memory_bandwidth * sockets / system.chips_per_node
    return system.chip.memory_bandwidth * sockets


def deployment(model: Model, system: System, *, chips: int | None = None, tp: int | None = None,
               threads: int | None = None, weights: str | None = None, kv_dtype: str | None = None,
               engine: str | None = None, efficiency: EngineEfficiency | None = None,
               calibration=None, inference_calibration: dict | None = None) -> Deployment:
    """Check the user's choices and fill the blanks the way a tuned practitioner would."""
    chip = system.chip
    notes = []
    cpu = chip.kind == "cpu"
    if chips is None:
        chips = system.chips_per_node
    if chips < 1 or chips > system.max_chips:
        raise FlopcastError(f"--chips must be between 1 and {system.max_chips} for {system.id}, got {chips}")
    if tp is None:
        tp = chips
    if tp < 1 or chips % tp:
        raise FlopcastError(f"--tp must be a positive divisor of --chips ({chips}), got {tp}")
    vcpus = system.vcpus or chip.cores * system.chips_per_node
    if cpu:
        per_chip = vcpus // system.chips_per_node
        limit = per_chip * tp
        if threads is None:
            threads = limit
        if threads < 1 or threads > limit:
            raise FlopcastError(f"--threads must be between 1 and {limit} (cores of {tp} socket(s) of {system.id}), got {threads}")
    elif threads:
        raise FlopcastError("--threads applies to CPU systems only; leave it out for accelerators")
    else:
        threads = 0
    fmt = weight_format(weights or ("q4_0" if cpu else "bf16"))
    kv = kv_element_bytes(kv_dtype or ("fp16" if cpu else "bf16"))
    family = engine_family(engine, system)
    if efficiency is None:
        table = inference_calibration if inference_calibration is not None else load_inference_calibration()
        efficiency, note = family_efficiency(table, family)
        if note:
            notes.append(note)
    if calibration is None:
        from ..catalog import calibration as _cal

        calibration = _cal()
    d = Deployment(model, system, tp, chips // tp, threads, fmt, kv, family, efficiency, calibration, ())
    notes.extend(hf.result_notes(model))
    if family in STATIC_SHAPE_FAMILIES:
        notes.append(f"engine family {family} compiles static shapes: a request's decode steps each read its whole "
                     "KV window (input + output tokens), not the live context")
    if not cpu and model.heads % d.shards and not model.mla:
        notes.append(f"{d.shards} tensor-parallel ranks do not divide the {model.heads} query heads: heads are "
                     f"padded to {math.ceil(model.heads / d.shards) * d.shards} (Neuron pads; vLLM refuses such a tp), "
                     "the padding's extra compute is not modelled")
    if d.kv_replication > 1:
        notes.append(f"{d.shards} tensor-parallel ranks for {model.kv_heads} KV heads: each rank holds "
                     f"{math.ceil(model.kv_heads / d.shards)}, so the KV cache is stored and read {d.kv_replication:g}x")
    return replace(d, assumptions=tuple(notes))


ACCELERATOR_FAMILIES = ("neuronx", "gpu")


def family_efficiency(table: dict, family: str) -> tuple[EngineEfficiency, str | None]:
    """The efficiencies of `family` from a fitted table, and a note when they are not its own.

    A family without fitted rows borrows the geometric mean of the other fitted families of its
    kind (accelerator engines from accelerator engines; the rule flopcast's training calibration
    uses for a chip without runs), else its prior: one engine's measured per-layer cost and
    bandwidth share say more about another accelerator's than a guessed prior does."""
    if family in table:
        return table[family], None
    kin = [f for f in ACCELERATOR_FAMILIES if f != family and f in table] if family in ACCELERATOR_FAMILIES else []
    if not kin:
        return PRIORS[family], f"engine family {family} has no calibration: prior efficiencies used"
    prior = PRIORS[family]
    mean = {k: float(np.exp(np.mean([np.log(getattr(table[f], k)) for f in kin])))
            for k, v in asdict(prior).items() if v > 0 and all(getattr(table[f], k) > 0 for f in kin)}
    return replace(prior, **mean), (f"engine family {family} has no calibration rows: efficiencies of "
                                    f"{', '.join(kin)} (fitted) used")


def _inference_calibration_file() -> dict:
    """The parsed catalog/data/inference_calibration.yaml, or {} before the first `flopcast calibrate`."""
    from ..catalog import DATA

    path = DATA / "inference_calibration.yaml"
    if not path.exists():
        return {}
    import yaml

    return yaml.safe_load(path.read_text()) or {}


def calibration_hardware() -> dict:
    """family -> chip ids whose measured rows fitted it (inference_calibration.yaml provenance)."""
    return (_inference_calibration_file().get("provenance") or {}).get("hardware_per_family") or {}


def calibration_basis(d: Deployment) -> str:
    """One line: whose measured rows the deployment's engine efficiencies come from."""
    fitted_on = calibration_hardware().get(d.family) or []
    chip = d.system.chip.id
    if not fitted_on:
        return f"engine family {d.family}: no calibration rows; efficiencies as stated above"
    if chip in fitted_on:
        return f"efficiencies of engine family {d.family} fitted on inference_runs.csv rows, {chip} among them"
    return (f"no measured {chip} serving runs: engine family {d.family} efficiencies fitted on "
            f"{', '.join(fitted_on)} rows of inference_runs.csv, with {chip}'s own peaks, bandwidth and links")


def load_inference_calibration() -> dict:
    """family -> EngineEfficiency from catalog/data/inference_calibration.yaml (priors where absent)."""
    return {k: EngineEfficiency(**v) for k, v in (_inference_calibration_file().get("families") or {}).items()}


# ---------------------------------------------------------------- one forward pass


def _op(flops, nbytes, d: Deployment):
    return np.maximum(flops / d.compute_rate, nbytes / d.memory_rate)


def _mlp_weights(d: Deployment, tokens):
    """(weights streamed, weights each token multiplies) of all MLPs for a pass over `tokens` tokens.

    MoE: a batch touches E (1 - (1 - k/E)^tokens) experts per layer in expectation
    (uniform routing), so decode weight traffic grows with the batch."""
    m = d.model
    dense = m.dense_layers * P.mlp_params(m.hidden, m.ffn_hidden, m.mlp)
    if not m.moe:
        return dense + 0 * tokens, dense
    routed, always = P.moe_params(m)
    e = m.moe
    touched = 1.0 - (1.0 - e.topk / e.experts) ** np.maximum(tokens, 1.0)
    streamed = dense + m.moe_layers * (always + routed * touched)
    per_token = dense + m.moe_layers * (always + routed * e.topk / e.experts)
    return streamed, per_token


def step_time(d: Deployment, new_tokens, seqs, kv_tokens, attn_pairs):
    """Seconds of one forward pass (a batch iteration) of the replica -> (time, breakdown).

    new_tokens: tokens computed in the pass (prompt tokens + one per decoding sequence);
    seqs: sequences producing a logit row; kv_tokens: KV-cache tokens read (summed over
    sequences); attn_pairs: query-key pairs scored (sum over sequences of q x kv).
    The breakdown's parts sum to the total."""
    m = d.model
    new_tokens = np.asarray(new_tokens, dtype=float)
    wb = d.weights.bits / 8.0
    act = 2.0  # bytes per activation element (bf16)
    h = m.hidden
    qkv = m.layers * h * (m.q_dim + 2 * m.kv_dim) if not m.mla else m.layers * (P.attention_params(m) - m.attn_out_dim * h)
    out = m.layers * m.attn_out_dim * h
    mlp_stream, mlp_per_token = _mlp_weights(d, new_tokens)
    logits = m.vocab * h
    parts = {
        "attention/qkv": _op(2 * qkv * new_tokens, qkv * wb + act * new_tokens * (h + m.q_dim + 2 * m.kv_dim) * m.layers, d),
        "attention/core": _op(2.0 * m.layers * (m.q_dim + m.attn_out_dim) * np.asarray(attn_pairs, dtype=float),
                              d.kv_bytes_per_token * np.asarray(kv_tokens, dtype=float), d),
        "attention/out": _op(2 * out * new_tokens, out * wb + act * new_tokens * 2 * h * m.layers, d),
        "mlp": _op(2 * mlp_per_token * new_tokens, mlp_stream * wb + act * new_tokens * 2 * h * m.layers, d),
        "logits": _op(2 * logits * np.asarray(seqs, dtype=float), logits * d.weights.logits_bits / 8.0, d),
    }
    if d.tp > 1 and not d.is_cpu:
        ar = collective_time(Collective.ALL_REDUCE, new_tokens * h * act, d.tp, 1, d.system, d.calibration)
        parts["comm/tp"] = 2.0 * m.layers * ar
    else:
        parts["comm/tp"] = 0.0 * new_tokens
    parts["overhead"] = m.layers * d.efficiency.layer_overhead_s + 0.0 * new_tokens
    total = sum(parts.values())
    return total, parts


def prefill_time(d: Deployment, batch, input_tokens):
    """Seconds to prefill `batch` prompts of `input_tokens` (causal: I^2/2 pairs each), pass only."""
    b = np.asarray(batch, dtype=float)
    i = np.maximum(np.asarray(input_tokens, dtype=float), 1.0)
    return step_time(d, b * i, b, b * effective_context(d.model, i), b * i * effective_context(d.model, i) / 2.0)


def decode_time(d: Deployment, batch, context):
    """Seconds of one decode step of `batch` sequences, each attending to `context` tokens."""
    b = np.asarray(batch, dtype=float)
    c = effective_context(d.model, np.maximum(np.asarray(context, dtype=float), 1.0))
    return step_time(d, b, b, b * c, b * c)


# ---------------------------------------------------------------- a request of fixed shape


@dataclass(frozen=True)
class InferenceResult:
    deployment: Deployment
    batch: int
    input_tokens: int
    output_tokens: int
    ttft_s: float
    tpot_s: float
    prefill_s: float
    e2e_s: float
    decode_tokens_per_s_per_stream: float
    output_tokens_per_s_total: float  # one replica
    prefill_tokens_per_s: float
    memory_bytes: dict
    memory_capacity_bytes: float
    fits: bool
    max_batch: int
    cost_per_million_output_tokens_usd: float | None
    decode_breakdown_s: dict
    prefill_breakdown_s: dict
    assumptions: tuple = ()

    def to_dict(self) -> dict:
        d = self.deployment
        return {
            "model": d.model.label, "hardware": d.system.id, "chips": d.tp * d.replicas, "tp": d.tp,
            "replicas": d.replicas, "threads": d.threads or None, "weights": d.weights.name,
            "engine_family": d.family, "batch": self.batch, "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens, "ttft_s": self.ttft_s, "tpot_s": self.tpot_s,
            "prefill_s": self.prefill_s, "e2e_latency_s": self.e2e_s,
            "decode_tokens_per_s_per_stream": self.decode_tokens_per_s_per_stream,
            "output_tokens_per_s_total": self.output_tokens_per_s_total * d.replicas,
            "prefill_tokens_per_s": self.prefill_tokens_per_s,
            "memory_bytes": self.memory_bytes, "memory_capacity_bytes": self.memory_capacity_bytes,
            "fits": self.fits, "max_batch": self.max_batch,
            "cost_per_million_output_tokens_usd": self.cost_per_million_output_tokens_usd,
            "decode_breakdown_s": self.decode_breakdown_s, "prefill_breakdown_s": self.prefill_breakdown_s,
            "assumptions": list(self.assumptions),
        }


RUNTIME_RESERVE = 0.05  # share of accelerator memory an engine keeps for runtime, activations and fragmentation
# (vLLM's default gpu_memory_utilization 0.9 keeps 10% incl. activations; 5% here plus activations below)
CPU_RESERVE_BYTES = 2 * 2**30  # CPUs: operating system and engine runtime per replica (assumption)


def reserve_bytes(d: Deployment) -> float:
    return CPU_RESERVE_BYTES if d.is_cpu else RUNTIME_RESERVE * d.memory_capacity


def memory(d: Deployment, batch, context) -> tuple[dict, float]:
    """Bytes the replica holds: weights, KV cache of `batch` sequences of `context` tokens, other."""
    m = d.model
    weights = weight_bytes(m, d.weights)
    kv = float(batch) * float(effective_context(m, context)) * d.kv_bytes_per_token
    other = reserve_bytes(d) + 4.0 * batch * m.hidden * 2.0 * min(context, 4096)
    return {"weights": weights, "kv_cache": kv, "other": other}, d.memory_capacity


def max_batch(d: Deployment, context) -> int:
    """Largest batch whose KV cache for `context` tokens per sequence fits beside the weights."""
    m = d.model
    free = d.memory_capacity - reserve_bytes(d) - weight_bytes(m, d.weights)
    per_seq = float(effective_context(m, context)) * d.kv_bytes_per_token + 8.0 * m.hidden * min(context, 4096)
    return max(0, int(free // per_seq))


def kv_capacity_tokens(d: Deployment) -> int:
    """Tokens of KV cache the replica can hold beside its weights and reserve."""
    free = d.memory_capacity - reserve_bytes(d) - weight_bytes(d.model, d.weights)
    return max(0, int(free // d.kv_bytes_per_token))


STATIC_SHAPE_FAMILIES = ("neuronx",)


def decode_window(d: Deployment, input_tokens, output_tokens):
    """KV tokens each sequence's decode step reads, averaged over the O steps of a request of fixed shape.

    Engines with dynamic shapes (llama.cpp, TGI/vLLM paged attention) read the live context, I + O/2
    on average (attention cost is linear in it). Neuron engines run a decode graph compiled for a fixed
    KV length, here the request's sequence length I + O: every step reads and scores the whole window and
    masks the unused part ("every decode step reads ceil(max_model_len / block_size) KV blocks per request
    from HBM regardless of the request's actual position ... the DMA traffic is real", Neuron docs, vLLM
    Neuron "Decode Context-Length Bucketing")."""
    if d.family in STATIC_SHAPE_FAMILIES:
        return input_tokens + output_tokens
    return input_tokens + output_tokens / 2.0


def predict(d: Deployment, batch: int, input_tokens: int, output_tokens: int) -> InferenceResult:
    """TTFT, TPOT, throughput, memory and cost of `batch` requests of fixed shape on one replica.

    TPOT is the decode step at the mean KV window of the request (decode_window)."""
    if batch < 1:
        raise FlopcastError(f"--batch must be a positive integer, got {batch}")
    if input_tokens < 0 or output_tokens < 1:
        raise FlopcastError("--input-tokens must be >= 0 and --output-tokens >= 1")
    t_pre, pre_parts = prefill_time(d, batch, input_tokens)
    t_pre = float(t_pre)
    ttft = t_pre + d.efficiency.request_overhead_s
    t_dec, dec_parts = decode_time(d, batch, decode_window(d, input_tokens, output_tokens))
    tpot = float(t_dec)
    total = batch / tpot
    price = d.price_per_hour
    mem, cap = memory(d, batch, input_tokens + output_tokens)
    fits = sum(mem.values()) <= cap
    # a deployment that does not fit serves nothing: no cost per token
    cost = None if price is None or not fits else price / 3600.0 / (total * d.replicas) * 1e6
    notes = list(d.assumptions)
    if not fits:
        notes.append(f"does not fit: needs {sum(mem.values()) / 2**30:.1f} GiB of {cap / 2**30:.1f} GiB")
    return InferenceResult(
        d, batch, input_tokens, output_tokens, ttft, tpot, t_pre, ttft + (output_tokens - 1) * tpot,
        1.0 / tpot, total, batch * max(input_tokens, 1) / t_pre, mem, cap, fits,
        max_batch(d, input_tokens + output_tokens), cost,
        {k: float(v) for k, v in dec_parts.items()}, {k: float(v) for k, v in pre_parts.items()}, tuple(notes))


def thread_sweep(d: Deployment, threads, context: float = 64.0):
    """Decode tokens/s at batch 1 for each thread count (CPUs): rises to the bandwidth roof."""
    out = []
    for n in np.atleast_1d(threads):
        out.append(1.0 / float(decode_time(replace(d, threads=int(n)), 1, context)[0]))
    return np.array(out)


def graviton4_assumptions(d: Deployment) -> list[str]:
    """What a prediction for a CPU without measured rows rests on."""
    chip = d.system.chip
    bw = instance_bandwidth(d.system, d.tp)
    return [
        f"no measured {chip.id} runs: {d.family} efficiencies fitted on Graviton3/3E rows of inference_runs.csv",
        f"compute: {d.threads} threads x {_peak(chip, d.compute_dtype) / chip.cores / 1e9:.0f} G{d.compute_dtype.label}-OP/s "
        f"per core (chip peak_flops / cores) x {d.efficiency.compute:.3f}",
        f"bandwidth: {d.efficiency.thread_weights_per_cycle:.2f} weights/cycle per thread x {d.weights.bits:g} bits "
        f"x {(chip.clock or 0) / 1e9:.2f} GHz = {d.thread_bandwidth / 1e9:.1f} GB/s per thread, "
        f"saturating at {d.efficiency.memory:.2f} x {bw / 1e9:.1f} GB/s (instance memory bandwidth)",
    ] + ([f"{d.tp} sockets: the bandwidth of all of them, assuming NUMA-aware placement (llama.cpp --numa distribute) "
        "and no traffic between sockets; --tp 1 runs one replica per socket instead"]
         if d.tp > 1 else [])
