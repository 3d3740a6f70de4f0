"""The serving fit's parameter space (validate/inference.fit_families): which efficiencies each engine family fits,
within what bounds, how a Neuron SDK release's own MoE block rate and transfer cost are named and read back, and
the solver (scipy, the `calibrate` extra)."""

from __future__ import annotations

from dataclasses import asdict

from .. import catalog
from ..cost import inference as inf
from ..cost.inference import releases
from ..errors import FlopcastError

_FREE = {  # parameter -> (lower, upper); fitted in log space, regularised towards the prior
    "compute": (0.01, 1.0), "memory": (0.05, 1.0), "layer_overhead_s": (1e-7, 1e-3),
    "request_overhead_s": (1e-5, 0.5), "thread_weights_per_cycle": (0.3, 30.0), "moe_block_bytes_per_s": (1e9, 1e13),
    "moe_expert_overhead_s": (1e-8, 1e-3), "moe_transfer_s": (1e-8, 1e-3),
}
FAMILY_ONLY = {"thread_weights_per_cycle": ("llama.cpp",), "moe_block_bytes_per_s": inf.STATIC_SHAPE_FAMILIES,
               "moe_expert_overhead_s": inf.STATIC_SHAPE_FAMILIES,
               "moe_transfer_s": inf.STATIC_SHAPE_FAMILIES}  # the rest: every family
PER_RELEASE = {"moe_block_bytes_per_s": releases.PER_RELEASE, "moe_transfer_s": releases.PER_RELEASE_TRANSFER}


MISSING_SCIPY = ("the serving fit (calibrating on a serving file, or cross-validating one) needs scipy: "
                 "pip install 'flopcast[calibrate]'")


def _least_squares():
    """scipy.optimize.least_squares, or the one-line error naming the extra that installs it."""
    try:
        from scipy.optimize import least_squares
    except ImportError:
        raise FlopcastError(MISSING_SCIPY) from None
    return least_squares


def _free_names(fam: str, mine: list) -> list[str]:
    """The family's free parameters; a static-shape family whose MoE rows state Neuron SDK releases fits one MoE
    block rate and one fixed cost per block per release (`moe_block_bytes_per_s@2.28`, `moe_transfer_s@2.28`,
    cost/inference/releases.py) instead of one for all."""
    names = [n for n in _FREE if fam in FAMILY_ONLY.get(n, (fam,))]
    stated = sorted({releases.release_of(r.get("engine")) for r in mine if _is_moe(r)} - {None},
                    key=releases.release_key)
    if "moe_block_bytes_per_s" not in names or not stated:
        return names
    return [m for n in names for m in ([PER_RELEASE[n] + rel for rel in stated] if n in PER_RELEASE else [n])]


def _is_moe(row) -> bool:
    try:
        return bool(catalog.load_model(row["model"].strip()).moe)
    except (FlopcastError, KeyError, ValueError):
        return False


def _param(eff: inf.EngineEfficiency, name: str) -> float:
    """A free parameter's value in eff; a release's block rate or fixed cost falls back to the family's one."""
    if "@" in name:
        head, rel = name.split("@")
        per_release, one = releases.PER_RELEASE_FIELDS[head + "@"]
        return dict(getattr(eff, per_release)).get(rel, getattr(eff, one))
    return getattr(eff, name)


def _prior(fam: str, prior: inf.EngineEfficiency, name: str) -> float:
    """A free parameter's prior; a release's block rate is its release's (releases.prior_rate)."""
    if name.startswith(releases.PER_RELEASE):
        return releases.prior_rate(fam, name.split("@")[1])
    return _param(prior, name)


def _efficiency(prior: inf.EngineEfficiency, names: list, values) -> inf.EngineEfficiency:
    plain = {n: float(v) for n, v in zip(names, values) if "@" not in n}
    for head, (per_release, one) in releases.PER_RELEASE_FIELDS.items():
        vals = tuple((n.split("@")[1], float(v)) for n, v in zip(names, values) if n.startswith(head))
        if vals:  # oldest first (_free_names); a user's forecast takes the newest
            plain.update({one: vals[-1][1], per_release: vals})
    return inf.EngineEfficiency(**{**asdict(prior), **plain})
