"""Claim 3: Trainium2's 3x memory, and what it changes in the layouts that fit."""

from __future__ import annotations

from dataclasses import replace


from .. import catalog
from ..plan import forecast
from ..cost.memory import fits as fits_in
from ..cost.params import total_params
from ..model.strategy import Recompute
from ..simulate import training
from ..plan import search as search_mod
from ..units import GiB
from .evidence import ANNOUNCEMENT, GPT300B, TRN1, TRN2, Runs, dense_models, source_of
from .rows import Estimate


def _candidates(runs: Runs, model_name: str, hardware: str, chips: int) -> tuple:
    """(valid layouts, what each rule rejected, candidates considered, bytes per chip of each layout) of one case.
    The rules read the system's node size, tensor-parallel domain and the chip's training dtypes only, and the
    bytes per chip the model and the layout only (simulate/training.memory_bytes), so systems that agree on
    those share one computation (Trainium1 and Trainium2 instances: 16 chips each, BF16)."""
    m, system = runs.model(model_name), runs.system(hardware)
    space = replace(forecast.layout_space(), ep=(1,))
    trainable = tuple(int(d) for d in space.dtype if not search_mod.training_dtype_problem(system.chip, d))
    key = ("layout counts", model_name, chips, system.chips_per_node, system.tp_domain, trainable)

    def compute():
        lb, rejected, considered, _ = search_mod._valid(m, system, chips, space, True)
        return lb, rejected, considered, training.memory_bytes(m, system, lb, runs.calibration)
    return runs.once(key, compute)


def _outcome(runs: Runs, model_name: str, hardware: str, chips: int) -> dict:
    """Search counts for one case: valid, fitting, fitting without recomputation (plan/search.py)."""
    system = runs.system(hardware)
    lb, rejected, considered, needed = _candidates(runs, model_name, hardware, chips)
    rejected = dict(rejected)
    fits = fits_in(needed, system.chip)  # counts need every layout
    no_rec = fits & (lb.recompute == int(Recompute.NONE))
    # the best layout: the run's own search of this case (the same space: dense, ep 1), shared with the other rows
    r = runs.train(model_name, hardware, chips) if fits.any() else None
    best = r.layout if r is not None and r.fits else None
    if not fits.all():
        rejected["does not fit in memory"] = int((~fits).sum())
    return {"chips": chips, "candidates": considered, "valid": lb.size, "fit": int(fits.sum()),
            "fit_without_recompute": int(no_rec.sum()), "rejected": rejected,
            "best_layout": best.describe() if best else None,
            "best_recompute": None if best is None else best.recompute.name.lower()}


def _largest_fitting(runs: Runs, hardware: str, names: list) -> dict | None:
    """The largest model (by parameters) in `names` with a layout that fits on one 16-chip instance."""
    for m in sorted(names, key=lambda n: -total_params(runs.model(n))):
        r = runs.fitting(m, hardware, 16)
        if r is not None:
            return {"model": m, "params_b": total_params(r.model) / 1e9, "memory_gib": r.memory_gib,
                    "layout": r.layout.describe()}
    return None


def estimate_memory(runs: Runs, rows: dict) -> Estimate:
    """3: the catalog's HBM ratio, with what it buys: the largest model per instance and the layouts that fit."""
    c1, c2 = catalog.load_chip("trainium1"), catalog.load_chip("trainium2")
    est = c2.memory / c1.memory
    names = (["llama2-7b", "llama2-13b", "narayanan-gpt-18.4b", "mpt-30b", "llama2-70b", "gpt3-175b", GPT300B]
             if runs.quick else [m.id for m in dense_models(runs.model)])
    largest = {"trainium1": _largest_fitting(runs, TRN1, names), "trainium2": _largest_fitting(runs, TRN2, names)}
    # smallest power-of-two cluster on which the ~300B GPT fits at all
    min_chips = {}
    for chip_id, hw in (("trainium1", TRN1), ("trainium2", TRN2)):
        min_chips[chip_id] = next((n for n in (16, 32, 64, 128, 256, 512, 1024)
                                   if runs.fitting(GPT300B, hw, n) is not None), None)
    ref = min_chips["trainium1"] or 1024
    counts = {"trainium1": _outcome(runs, GPT300B, TRN1, ref), "trainium2": _outcome(runs, GPT300B, TRN2, ref)}
    l1, l2 = largest["trainium1"], largest["trainium2"]
    why = (f"the catalog gives {c2.memory / GiB:.0f} GiB vs {c1.memory / GiB:.0f} GiB ({est:.1f}x): one instance "
           f"trains "
           f"{l2['model'] if l2 else 'none'} instead of {l1['model'] if l1 else 'none'}, gpt-300b needs "
           f"{min_chips['trainium2']} instead of {min_chips['trainium1']} chips, and at {ref} chips "
           f"{counts['trainium2']['fit']:,} vs {counts['trainium1']['fit']:,} layouts fit.")
    return Estimate(
        est,
        ("estimate = catalog trainium2.memory / trainium1.memory (both GiB; the announcement says GB)",
         f"largest model: dense catalog models ({len(names)}) searched on one 16-chip {TRN1} / {TRN2}; "
         "memory per chip on the busiest pipeline stage (Korthikanti et al. 2022) incl. the runtime reserve",
         f"layout counts: flopcast's search for {GPT300B} at {ref} chips (the smallest power of two where it fits "
         "on Trainium1), BF16"),
        (source_of("trainium1", "memory", c1), source_of("trainium2", "memory", c2),
         f"catalog {GPT300B} [NARAYANAN2021]",
         f"announcement [{ANNOUNCEMENT}]"),
        why,
        {"trn1_memory_gib": c1.memory / GiB, "trn2_memory_gib": c2.memory / GiB,
         "largest_model_one_instance": largest, "gpt300b_min_chips": min_chips,
         "layout_counts_chips": ref, "layout_counts": counts},
    )
