"""Serving-engine families, their efficiencies (priors and fitted), and where the fit came from.

An engine's fixed per-layer cost (kernel launches, synchronisation) and per-request cost are
calibrated per engine family on validation/inference_runs.csv (validate/inference.fit_inference)
and stored in catalog/data/inference_calibration.yaml.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np

from ...model.system import System


@dataclass(frozen=True)
class EngineEfficiency:
    """What one serving engine family reaches; fitted on inference_runs.csv (few, physical)."""

    compute: float = 0.4  # fraction of the compute dtype's peak reached by GEMMs
    memory: float = 0.7  # fraction of the memory bandwidth reached streaming weights and KV
    layer_overhead_s: float = 20e-6  # fixed cost per layer per forward pass (launches, syncs)
    request_overhead_s: float = 5e-3  # fixed cost per prefill (scheduling, sampling, host)
    thread_weights_per_cycle: float = 6.0  # CPUs: weights one thread dequantises and multiplies per clock cycle
    # static-shape engines: the rate at which the blockwise MoE context-encoding kernel moves each expert block's
    # token rows (gathered in, accumulated out: roofline.moe_block_time); 0: no such kernel
    moe_block_bytes_per_s: float = 0.0
    # static-shape engines: fixed seconds per expert a decode pass's MoE kernel runs (touched experts, roofline.py)
    moe_expert_overhead_s: float = 0.0


ENGINE_FAMILIES = ("llama.cpp", "neuronx", "neuronx-v3", "gpu")
# Priors (the fit is regularised towards them; used alone for a family with no rows):
# llama.cpp: decode reaches ~80% of STREAM bandwidth at full socket (Arm/llama.cpp
# Graviton guides); a 256-bit SVE/NEON dot-product loop consumes ~6 4-bit weights per cycle
# (a 256-bit SVE dot-product step takes 64 4-bit weights in ~2 instructions plus unpacking and
# scaling: ~6.6 weights/cycle reached at 2 threads in PR 11917, 4.86 tok/s x 7.1 G weights / 2 / 2.6 GHz).
# Neuron and GPU engines: typical decode bandwidth utilisation 60-70%. Neuron's MoE block rate: one DMA engine's
# theoretical bandwidth (NEURON_DMA_ENGINE_BYTES_PER_S): the blockwise kernel gathers each block's token rows by
# their token_position_to_id indices and accumulates its output rows back; an indexed gather or scatter is a
# software-DGE transfer whose descriptors the GpSimd engine generates at run time (nki.isa.dma_copy, "Descriptor
# Generation Engine (DGE) Reference"). Assumed (the docs give no indexed-transfer rate): it runs at one engine's
# rate, not spread over the core's 16 engines as a strided transfer is.
NEURON_DMA_ENGINE_BYTES_PER_S = 27.2e9  # per DMA engine, NeuronCore-v2 and -v3 (Neuron docs, "Introduction to
# Direct Memory Access (DMA) with NKI": 16 engines per NeuronCore, 27.2 GB/s each, 38.4 GB/s on NeuronCore-v4)
PRIORS = {
    "llama.cpp": EngineEfficiency(0.1, 0.8, 10e-6, 2e-3, 6.0),
    "neuronx": EngineEfficiency(0.3, 0.6, 40e-6, 5e-3, 0.0, NEURON_DMA_ENGINE_BYTES_PER_S, 5e-6),
    "neuronx-v3": EngineEfficiency(0.3, 0.6, 40e-6, 5e-3, 0.0, NEURON_DMA_ENGINE_BYTES_PER_S, 5e-6),
    "gpu": EngineEfficiency(0.5, 0.7, 40e-6, 10e-3, 0.0),
}


def engine_family(engine: str | None, system: System) -> str:
    """The engine family whose calibration applies, chosen by the hardware the engine runs on.

    The calibration rows hold one engine family per kind of hardware (llama.cpp on CPUs,
    transformers-neuronx on Neuron chips, TGI/vLLM on GPUs), so the hardware decides;
    `engine` (the serving software's name) is kept only for the assumptions printed."""
    if system.chip.kind == "cpu":
        return "llama.cpp"
    if system.chip.family in ("trainium", "inferentia"):
        return "neuronx-v3" if system.chip.id in NEURON_CORE_V3 else "neuronx"
    return "gpu"


# chips of NeuronCore-v3 (Neuron docs, "Trainium2 Architecture"; Trainium3 keeps the generation's compiler and
# kernels): their engines are their own family; Inferentia2 and Trainium1 are NeuronCore-v2 ("neuronx")
NEURON_CORE_V3 = ("trainium2", "trainium3")
RELATIVES = {"neuronx-v3": "neuronx"}  # a family without rows borrows its predecessor's fit first


STATIC_SHAPE_FAMILIES = ("neuronx", "neuronx-v3")


ACCELERATOR_FAMILIES = ("neuronx", "neuronx-v3", "gpu")


def family_efficiency(table: dict, family: str) -> tuple[EngineEfficiency, str | None]:
    """The efficiencies of `family` from a fitted table, and a note when they are not its own.

    A family without fitted rows borrows the geometric mean of the other fitted families of its
    kind (accelerator engines from accelerator engines; the rule flopcast's training calibration
    uses for a chip without runs), else its prior: one engine's measured per-layer cost and
    bandwidth share say more about another accelerator's than a guessed prior does."""
    if family in table:
        return table[family], None
    if RELATIVES.get(family) in table:
        return table[RELATIVES[family]], (f"engine family {family} has no calibration rows: efficiencies of its "
                                          f"predecessor {RELATIVES[family]} (fitted) used")
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
    from ...catalog.names import DATA, load_yaml

    path = DATA / "inference_calibration.yaml"
    if not path.exists():
        return {}
    return load_yaml(path.read_text()) or {}


def calibration_hardware() -> dict:
    """family -> chip ids whose measured rows fitted it (inference_calibration.yaml provenance)."""
    return (_inference_calibration_file().get("provenance") or {}).get("hardware_per_family") or {}


def load_inference_calibration() -> dict:
    """family -> EngineEfficiency from catalog/data/inference_calibration.yaml (priors where absent)."""
    return {k: EngineEfficiency(**v) for k, v in (_inference_calibration_file().get("families") or {}).items()}
