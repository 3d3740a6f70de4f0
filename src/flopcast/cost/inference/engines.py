"""Serving-engine families, their efficiencies (priors and fitted), and where the fit came from.

An engine's fixed per-layer cost (kernel launches, synchronisation) and per-request cost are
calibrated per engine family on validation/inference_runs.csv (validate/inference.fit_inference)
and stored in catalog/data/inference_calibration.yaml.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from ...errors import FlopcastError
from ...model.system import Dtype, System


@dataclass(frozen=True)
class EngineEfficiency:
    """What one serving engine family reaches; fitted on inference_runs.csv (few, physical)."""

    compute: float = 0.4  # fraction of the compute dtype's peak reached by GEMMs
    memory: float = 0.7  # fraction of the memory bandwidth reached streaming weights and KV
    layer_overhead_s: float = 20e-6  # fixed cost per layer per forward pass (launches, syncs)
    request_overhead_s: float = 5e-3  # fixed cost per prefill (scheduling, sampling, host)
    thread_weights_per_cycle: float = 6.0  # CPUs: weights one thread dequantises and multiplies per clock cycle
    # static-shape engines: the rate at which the blockwise MoE context-encoding kernel moves each expert block's
    # token rows and expert weights on one physical NeuronCore (roofline.moe_block_seconds); 0: no such kernel
    moe_block_bytes_per_s: float = 0.0
    # static-shape engines: fixed seconds per expert a decode pass's MoE kernel runs (touched experts, roofline.py)
    moe_expert_overhead_s: float = 0.0
    # not fitted: the hardware fractions (hardware_fractions) of the chips whose rows fitted the family, geometric
    # means; compute / compute_basis is the share of what its chips reach that the engine reaches (0: unknown)
    compute_basis: float = 0.0
    memory_basis: float = 0.0
    # static-shape engines: (Neuron SDK release, moe_block_bytes_per_s) fitted on each release's MoE rows, oldest
    # first (releases.py); moe_block_bytes_per_s is then the newest's. (): one rate for every release
    moe_block_rates: tuple = ()
    # static-shape engines: the blockwise kernel's seconds to issue one DMA transfer (roofline.moe_block_seconds),
    # and the same per Neuron SDK release, as moe_block_rates
    moe_transfer_s: float = 0.0
    moe_transfer_times: tuple = ()


HARDWARE = ("compute", "memory")  # a family's hardware fractions; every other fitted number is software


ENGINE_FAMILIES = ("llama.cpp", "neuronx", "transformers-neuronx", "neuronx-v3", "gpu")
# Priors (the fit is regularised towards them; used alone for a family with no rows):
# llama.cpp: decode reaches ~80% of STREAM bandwidth at full socket (Arm/llama.cpp
# Graviton guides); a 256-bit SVE/NEON dot-product loop consumes ~6 4-bit weights per cycle
# (a 256-bit SVE dot-product step takes 64 4-bit weights in ~2 instructions plus unpacking and
# scaling: ~6.6 weights/cycle reached at 2 threads in PR 11917, 4.86 tok/s x 7.1 G weights / 2 / 2.6 GHz).
# Neuron and GPU engines: typical decode bandwidth utilisation 60-70%. Neuron's MoE block rate: one DMA engine's
# theoretical bandwidth (NEURON_DMA_ENGINE_BYTES_PER_S): the blockwise kernel gathers each block's token rows by
# their token_position_to_id indices and accumulates its output rows back; an indexed gather or scatter is a
# software-DGE transfer whose descriptors the GpSimd engine generates at run time (nki.isa.dma_copy, "Descriptor
# Generation Engine (DGE) Reference"). Assumed for releases before NEURON_SPREAD_RELEASE (the docs give no
# indexed-transfer rate): each physical core moves its share of a block (roofline.moe_block_seconds) at one engine's
# rate, not spread over its 16 engines as a strided transfer is; SDK 2.26's MoE rows on Trainium2 (LNC=2) and
# Trainium1 (LNC=1) ran at 26-27 GB/s so counted (docs/accuracy.md).
NEURON_DMA_ENGINE_BYTES_PER_S = 27.2e9  # per DMA engine, NeuronCore-v2 and -v3 (Neuron docs, "Introduction to
# Direct Memory Access (DMA) with NKI": 16 engines per NeuronCore, 27.2 GB/s each, 38.4 GB/s on NeuronCore-v4)
# A transfer's fixed cost: "every DMA transfer incurs descriptor setup, synchronization, and semaphore-to-start
# latency (~1300 ns cross-engine)" (Neuron docs, "Guideline to Avoid Under-Utilizing DMA Bandwidth"); a blockwise
# block issues a few dozen (roofline.moe_block_transfers), and takes at least their issue time.
NEURON_DMA_TRANSFER_S = 1.3e-6
# Spread over a core's 16 engines, a transfer of full 128-partition tiles ("each DMA transfer is by default
# parallelized up to 16 DMA engines, depending on the shape", "Introduction to DMA with NKI") moves at their sum:
# 17 B/ns an engine on Trainium1 (NeuronCore-v2), 23 on Trainium2 (NeuronCore-v3), 272 and 368 GB/s a core
# ("Guideline to Avoid Under-Utilizing DMA Bandwidth", BW / Engine table).
NEURON_DMA_CORE_BYTES_PER_S = {"neuronx": 16 * 17e9, "neuronx-v3": 16 * 23e9}
# The first Neuron SDK release whose blockwise kernel is taken to spread its transfers so (its prior rate the core's
# engines, not one): SDK 2.28's only fitted MoE rows (NxD Inference's Trinity-Mini contrib, trn2.3xlarge TP 4,
# validation/inference_runs.csv tm-1) encode 2,048 tokens in 371 ms, 159 blocks a layer over 30 layers, so a block
# takes at most 78 us to move 4.7 MB a physical core: at least 60 GB/s, more than one engine's 27.2; SDK 2.26's rows
# (optimum-neuron) sit at one engine's rate (docs/accuracy.md). Which releases spread was read from the fitted rows.
NEURON_SPREAD_RELEASE = "2.28"
# family -> (release, prior block rate) for the releases whose prior is not one engine's (releases.py)
PRIOR_RELEASE_RATES = {f: ((NEURON_SPREAD_RELEASE, rate),) for f, rate in NEURON_DMA_CORE_BYTES_PER_S.items()}
_NEURON = dict(moe_transfer_s=NEURON_DMA_TRANSFER_S)
PRIORS = {
    "llama.cpp": EngineEfficiency(0.1, 0.8, 10e-6, 2e-3, 6.0),
    "neuronx": EngineEfficiency(0.3, 0.6, 40e-6, 5e-3, 0.0, NEURON_DMA_ENGINE_BYTES_PER_S, 5e-6, **_NEURON),
    "transformers-neuronx": EngineEfficiency(0.3, 0.6, 40e-6, 5e-3, 0.0, NEURON_DMA_ENGINE_BYTES_PER_S, 5e-6,
                                             **_NEURON),
    "neuronx-v3": EngineEfficiency(0.3, 0.6, 40e-6, 5e-3, 0.0, NEURON_DMA_ENGINE_BYTES_PER_S, 5e-6, **_NEURON),
    "gpu": EngineEfficiency(0.5, 0.7, 40e-6, 10e-3, 0.0),
}


def engine_family(engine: str | None, system: System) -> str:
    """The engine family whose calibration applies, chosen by the hardware the engine runs on and, on
    NeuronCore-v2, by the software stack.

    llama.cpp on CPUs, TGI/vLLM on GPUs, one family per NeuronCore generation, except that on NeuronCore-v2
    (Inferentia2, Trainium1) an engine naming transformers-neuronx (the AWS Neuron performance tables, DJL's
    LMI) is its own family: it compiles its own HLO graphs, bucketed by context length (its `n_positions` and
    `context_length_estimate` arguments), while
    optimum-neuron (its vLLM plugin, TGI's Neuron image, NeuronModelForCausalLM) runs NxD Inference-style
    graphs of one fixed shape (optimum/neuron/models/inference/backend/config.py: enable_bucketing False);
    on the same Inferentia2 and Llama-3-70B, transformers-neuronx encodes 2,048 tokens in 0.75 s and
    optimum-neuron's padded 4,096 in 1.1 s (validation/README.md). A blank or other engine is optimum-neuron's,
    the stack served today."""
    if system.chip.kind == "cpu":
        return "llama.cpp"
    if system.chip.family in ("trainium", "inferentia"):
        if system.chip.id in NEURON_CORE_V3:
            return "neuronx-v3"
        return "transformers-neuronx" if "transformers-neuronx" in (engine or "").lower() else "neuronx"
    return "gpu"


# chips of NeuronCore-v3 (Neuron docs, "Trainium2 Architecture"; Trainium3 keeps the generation's compiler and
# kernels): their engines are their own family; Inferentia2 and Trainium1 are NeuronCore-v2 ("neuronx")
NEURON_CORE_V3 = ("trainium2", "trainium3")
STATIC_SHAPE_FAMILIES = ("neuronx", "transformers-neuronx", "neuronx-v3")


ACCELERATOR_FAMILIES = ("neuronx", "transformers-neuronx", "neuronx-v3", "gpu")


# engines of the same kind share their software (per-layer and per-request costs, kernels): Neuron's static-shape
# engines, the GPU engines, the CPU engine
KIND = {"neuronx": "neuron", "transformers-neuronx": "neuron", "neuronx-v3": "neuron", "gpu": "gpu", "llama.cpp": "cpu"}


def hardware_fractions(chip, calibration) -> tuple[float, float]:
    """(compute, memory): the fractions of its BF16 peak and of its memory bandwidth the chip is known to reach,
    from its own published facts: the training calibration's fitted large-GEMM and memory efficiencies where the
    chip has training runs of its own (calibration.yaml rows_per_chip); else its measured maximum achievable
    matmul (MAMF) fraction, and the STREAM-like bound MEMORY_CEILING; else its peak (1.0)."""
    from ...model.efficiency import MEMORY_CEILING

    if (calibration.provenance.get("rows_per_chip") or {}).get(chip.id) and chip.family in calibration.families:
        fam = calibration.families[chip.family]
        return float(fam.gemm), float(fam.memory)
    return float(chip.mamf_fraction(Dtype.BF16) or 1.0), MEMORY_CEILING


def with_basis(eff: EngineEfficiency, chips, calibration) -> EngineEfficiency:
    """eff with the geometric-mean hardware fractions of the chips whose rows fitted it."""
    fr = np.array([hardware_fractions(c, calibration) for c in chips])
    return replace(eff, compute_basis=float(np.exp(np.log(fr[:, 0]).mean())),
                   memory_basis=float(np.exp(np.log(fr[:, 1]).mean())))


def _kin(table: dict, family: str) -> list[str]:
    """The fitted families whose software stands in for `family`'s: the same kind, else every fitted
    accelerator engine for an accelerator (none for the CPU engine)."""
    same = [f for f in table if f != family and KIND.get(f) == KIND[family]]
    if same or family not in ACCELERATOR_FAMILIES:
        return same
    return [f for f in ACCELERATOR_FAMILIES if f != family and f in table]


def _geomean(values) -> float:
    return float(np.exp(np.mean(np.log(values))))


def kin_hardware(table: dict, kin: list, own) -> dict:
    """{compute, memory} of an engine on hardware whose known fractions are `own` (compute, memory): own x the
    share of their chips' fractions (compute / compute_basis) that the `kin` families of `table` reach, at most 1."""
    return {k: min(1.0, own[i] * _geomean([getattr(table[f], k) / (getattr(table[f], k + "_basis") or own[i])
                                           for f in kin])) for i, k in enumerate(HARDWARE)}


def fit_prior(table: dict, family: str, own) -> EngineEfficiency:
    """The prior a serving fit regularises `family` towards (validate/inference.fit_families), given the families
    already fitted in `table` and the hardware fractions `own` of the family's rows' chips (with_basis).

    Partial pooling (Gelman et al. 2013, "Bayesian Data Analysis", 3rd ed., ch. 5): where families of the same
    kind (KIND: the same software, on other chips) are fitted, the hardware fractions' prior is what those engines
    reach of their chips, carried to this family's chips (kin_hardware), the rule family_efficiency applies to a
    family with no rows at all; so a family with few rows (Trainium2's NxD Inference with one source left out) is
    drawn towards its kin, not towards a fixed fraction of a peak that means another thing on each chip. The
    first family of a kind, and every software cost, keep PRIORS."""
    prior = PRIORS[family]
    kin = [f for f in table if f != family and KIND.get(f) == KIND[family]]
    return replace(prior, **kin_hardware(table, kin, own)) if kin else prior


def family_efficiency(table: dict, family: str, chip, calibration=None) -> tuple[EngineEfficiency, str | None]:
    """The efficiencies of `family` from a fitted table, and a note when they are not its own.

    A family without fitted rows is split in two. Its software (per-layer and per-request costs, the MoE kernel's
    rates, a CPU's dequantisation rate) is the geometric mean of the fitted families of its kind (_kin), since
    peaks cannot give it. Its hardware fractions are `chip`'s own (hardware_fractions) times the share of their
    chips' fractions that those engines reach (compute / compute_basis): a chip's serving engine reaches of its
    hardware what its kind's engines reach of theirs. Without kin, its prior."""
    if family in table:
        return table[family], None
    kin = _kin(table, family)
    if not kin:
        return PRIORS[family], f"engine family {family} has no calibration: prior efficiencies used"
    prior = PRIORS[family]
    soft = {k: _geomean([getattr(table[f], k) for f in kin]) for k, v in asdict(prior).items()
            if k not in HARDWARE and isinstance(v, float) and v > 0 and all(getattr(table[f], k) > 0 for f in kin)}
    if calibration is None:  # the shipped training calibration
        from ...catalog import calibration as shipped

        calibration = shipped()
    own = hardware_fractions(chip, calibration)
    hard = kin_hardware(table, kin, own)
    return replace(prior, **soft, **hard), (
        f"engine family {family} has no calibration rows: per-layer and per-request costs of {', '.join(kin)} "
        f"(fitted); compute {hard['compute']:.2f} and bandwidth {hard['memory']:.2f}: the chip's own fractions "
        f"({own[0]:.2f}, {own[1]:.2f}) x the share of their chips' that those engines reach")


def _inference_calibration_file() -> dict:
    """The parsed catalog/data/inference_calibration.yaml, or {} before the first `flopcast calibrate`; parsed
    once per version of the file (a serving fit asks for it at every row of every evaluation: thousands of
    parses, a fifth of `calibrate`'s time before). Callers only read it."""
    from ...catalog.names import DATA

    try:
        st = (DATA / "inference_calibration.yaml").stat()
    except FileNotFoundError:
        return {}
    return _parsed_calibration(str(DATA / "inference_calibration.yaml"), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=4)
def _parsed_calibration(path: str, mtime_ns: int, size: int) -> dict:
    from ...catalog.names import load_yaml

    return load_yaml(Path(path).read_text()) or {}


def calibration_hardware() -> dict:
    """family -> chip ids whose measured rows fitted it (inference_calibration.yaml provenance)."""
    return (_inference_calibration_file().get("provenance") or {}).get("hardware_per_family") or {}


def load_inference_calibration() -> dict:
    """family -> EngineEfficiency from catalog/data/inference_calibration.yaml (priors where absent)."""
    return {k: from_yaml(v) for k, v in (_inference_calibration_file().get("families") or {}).items()}


RATES_KEY = "moe_block_rates"  # a fitted family's MoE block rate per Neuron SDK release, release -> bytes/s
OVERHEADS_KEY = "moe_transfer_times"  # and its seconds per DMA transfer per release, release -> s
PER_RELEASE_KEYS = {RATES_KEY: "bytes/s", OVERHEADS_KEY: "seconds"}


def release_key(release: str) -> tuple[int, ...]:
    """A Neuron SDK release ('2.28') as a sortable tuple."""
    return tuple(int(p) for p in release.split("."))


def to_yaml(eff: EngineEfficiency) -> dict:
    """A family's fitted efficiencies as inference_calibration.yaml stores them (4 significant figures)."""
    out = {}
    for k, v in asdict(eff).items():
        if k in PER_RELEASE_KEYS:
            if v:
                out[k] = {rel: float(f"{x:.4g}") for rel, x in v}
        else:
            out[k] = float(f"{v:.4g}")
    return out


def _per_release(fam: dict, key: str, where: str) -> tuple:
    values = fam.pop(key, None) or {}
    if not isinstance(values, dict) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in values.values()):
        raise FlopcastError(f"{where}{key}: {values!r}; valid: a mapping of Neuron SDK release to "
                            f"{PER_RELEASE_KEYS[key]} > 0")
    try:
        return tuple(sorted(((str(k), float(v)) for k, v in values.items()), key=lambda r: release_key(r[0])))
    except ValueError:
        raise FlopcastError(f"{where}{key}: {sorted(values)!r}; valid: releases such as 2.28") from None


def from_yaml(fam: dict, where: str = "") -> EngineEfficiency:
    """An EngineEfficiency from a calibration file's family mapping (per-release values as mappings)."""
    fam = dict(fam)
    per = {key: _per_release(fam, key, where) for key in PER_RELEASE_KEYS}
    return EngineEfficiency(**fam, **per)
