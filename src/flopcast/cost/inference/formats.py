"""Weight and KV-cache storage formats: bits per weight, bytes per KV element, and the bytes they add up to."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import FlopcastError
from ...model.system import Dtype
from ...model.workload import Model
from .. import params as P


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
    return WeightFormat(name, bits, Dtype.INT8, Dtype.BF16,
                        f"llama.cpp quantize README: {name.upper()} {bits} bpw ({what})")


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


def weight_format(name: str, label: str = "--weights") -> WeightFormat:
    """The weight format `name` (or an alias); `label` names where it was given in the error (an option, a field)."""
    key = name.strip().lower()
    key = WEIGHT_ALIASES.get(key, key)
    if key not in WEIGHT_FORMATS:
        raise FlopcastError(f"{label} {name!r} is not a known format; valid: {', '.join(WEIGHT_FORMATS)}")
    return WEIGHT_FORMATS[key]


def kv_element_bytes(name: str, label: str = "--kv-dtype") -> float:
    """Bytes of one KV-cache element of type `name`; `label` names where it was given in the error."""
    key = name.strip().lower()
    if key not in KV_BYTES:
        raise FlopcastError(f"{label} {name!r} is not a known KV-cache type; valid: {', '.join(KV_BYTES)}")
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
