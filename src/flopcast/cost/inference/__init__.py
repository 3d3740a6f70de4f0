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

The rooms: formats (weights, KV elements), engines (families, efficiencies, calibration
lookup), cpu (the threads bandwidth model), replica (a Deployment and its rates),
roofline (one forward pass), footprint (memory, batch and KV capacity), request (a
request of fixed shape, the CPU thread sweep). This face re-exports them, so
`from flopcast.cost import inference as inf` reads as one module.

Every function here takes floats or numpy arrays for the batch and token counts.
"""

from ...model.system import Dtype
from .cpu import cpu_bandwidth, instance_bandwidth
from .engines import (
    ACCELERATOR_FAMILIES, ENGINE_FAMILIES, NEURON_DMA_CORE_BYTES_PER_S, NEURON_DMA_ENGINE_BYTES_PER_S,
    NEURON_DMA_TRANSFER_S, NEURON_SPREAD_RELEASE, PRIOR_RELEASE_RATES, PRIORS, STATIC_SHAPE_FAMILIES, EngineEfficiency,
    calibration_hardware, engine_family, family_efficiency, fit_prior, hardware_fractions, load_inference_calibration,
    with_basis,
)
from .footprint import CPU_RESERVE_BYTES, RUNTIME_RESERVE, kv_capacity_tokens, max_batch, memory, reserve_bytes
from .formats import (
    KV_BYTES, Q6_K_BITS, WEIGHT_ALIASES, WEIGHT_FORMATS, WeightFormat, effective_context, kv_bytes_per_token,
    kv_element_bytes, weight_bytes, weight_format,
)
from .replica import NEURON_LOGICAL_CORES, Deployment, calibration_basis, compute_peak, deployment
from .request import InferenceResult, deployment_interval, graviton4_assumptions, predict, thread_sweep
from .roofline import decode_time, decode_window, prefill_time, step_time

__all__ = [
    "ACCELERATOR_FAMILIES", "CPU_RESERVE_BYTES", "ENGINE_FAMILIES", "KV_BYTES", "NEURON_DMA_CORE_BYTES_PER_S",
    "NEURON_DMA_ENGINE_BYTES_PER_S", "NEURON_DMA_TRANSFER_S", "NEURON_LOGICAL_CORES", "NEURON_SPREAD_RELEASE",
    "PRIOR_RELEASE_RATES", "PRIORS",
    "Q6_K_BITS", "RUNTIME_RESERVE", "STATIC_SHAPE_FAMILIES", "WEIGHT_ALIASES", "WEIGHT_FORMATS", "Deployment", "Dtype",
    "EngineEfficiency", "InferenceResult", "WeightFormat", "calibration_basis", "calibration_hardware",
    "compute_peak", "cpu_bandwidth", "decode_time", "decode_window", "deployment", "effective_context",
    "engine_family", "family_efficiency", "fit_prior", "graviton4_assumptions", "hardware_fractions",
    "instance_bandwidth",
    "kv_bytes_per_token", "deployment_interval", "kv_capacity_tokens", "kv_element_bytes",
    "load_inference_calibration", "max_batch", "memory", "predict",
    "prefill_time", "reserve_bytes", "step_time", "thread_sweep", "weight_bytes", "weight_format", "with_basis",
]
