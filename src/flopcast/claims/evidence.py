"""What the estimators share: the announcement's entries, source strings, fabric tiers, a cache of predictions."""

from __future__ import annotations

import numpy as np

from .. import catalog
from ..plan import bounds, forecast
from ..cost.params import total_params
from ..model.system import System

ANNOUNCEMENT = "AWS_TRN2_2023"  # press release, 2023-11-28 (model_sources.yaml)
TRN2, TRN1 = "trn2.48xlarge", "trn1.32xlarge"
ULTRACLUSTER = "trn2-ultracluster"
GPT300B = "gpt-300b"
# Weak scaling: 0.5 sequences (1,024 tokens at seq 2048) per chip, the Llama 3 ratio of a
# 16M-token batch on 16,384 GPUs (Dubey et al. 2024, arXiv:2407.21783, sec. 3.4.1).
WEAK_SEQS_PER_CHIP = 0.5


def source_of(entry_id: str, fld: str, obj) -> str:
    """'catalog ENTRY.FIELD [SOURCE]' for a chip or system field (per-field override, else the entry's source)."""
    sources = getattr(obj, "sources", {}) or {}
    return f"catalog {entry_id}.{fld} [{sources.get(fld) or sources.get('*')}]"


def _tier_of(system: System, n: int, stride: int) -> str:
    """The fabric tier a group of n ranks `stride` apart stays within: the innermost tier of
    size >= n x stride (cost/comm.py `_members`); 'none' for a group of one."""
    if n <= 1:
        return "none"
    return next((t.name for t in system.tiers if t.size >= n * stride), system.tiers[-1].name)


def fabric_tiers(system: System, layout) -> dict:
    """Tier each parallel group crosses. Rank order tp, cp, dp, pp (model/strategy.py); a
    pipeline send goes to the rank tp x cp x dp away, inside the innermost tier larger than that."""
    out = {"tp": _tier_of(system, layout.tp, 1), "cp": _tier_of(system, layout.cp, layout.tp),
           "dp": _tier_of(system, layout.dp, layout.tp * layout.cp)}
    stride = layout.tp * layout.cp * layout.dp
    out["pp"] = "none" if layout.pp <= 1 else next((t.name for t in system.tiers if t.size > stride),
                                                     system.tiers[-1].name)
    return out


def train_point(r) -> dict:
    """A training result as a plot/table point with unit-suffixed keys."""
    return {"chips": r.chips, "chips_used": r.chips_used, "fits": bool(r.fits),
            "tokens_per_s": r.tokens_per_s, "tokens_per_s_per_chip": r.tokens_per_s_per_chip,
            "model_tflops_per_chip": r.model_tflops_per_chip, "mfu": r.mfu,
            "global_batch_seqs": r.layout.global_batch, "layout": r.layout.describe(),
            "fabric_tiers": fabric_tiers(r.system, r.layout)}


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return float(np.exp(np.mean(np.log(xs)))) if xs else None


def dense_models(load=catalog.load_model) -> list:
    """Dense catalog models, smallest first; load(name): how a model is read (Runs.model reads each once a run)."""
    out = [load(n) for n in catalog.names("model")]
    return sorted((m for m in out if m.moe is None), key=total_params)


class Runs:
    """One claims run: a cache of training predictions (claims share configurations), of the catalog's models and
    systems (read once per run, not once per search), and progress."""

    def __init__(self, quick: bool, progress=None, calibration=None):
        from ..cost import calibrations

        self.quick = quick
        self.progress = progress or (lambda msg: None)
        # a calibration file replaces the shipped calibration of its kind (training or serving)
        self.calibration, self.engines = calibrations.pair(calibration)
        self._cache = {}
        self._tables = {}  # bounds.WorkTable per model, system and calibration, shared by the searches

    def model(self, name: str):
        """The catalog model `name`, parsed once per run."""
        return self.once(("model", name), lambda: forecast.resolve_model(name))

    def system(self, name: str):
        """The catalog system `name` (or a chip's default system), parsed once per run."""
        return self.once(("system", name), lambda: forecast.resolve_system(name))

    def once(self, key, compute):
        """compute() the first time `key` is asked for, its value from then on (evidence several rows share)."""
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    def prefetch(self, model: str, hardware: str, cases: list) -> None:
        """Forecast the (chips, layout) cases not yet known together (plan/batched.py: the searches of one model
        and system in lockstep, the same results as train() one at a time)."""
        from ..plan import batched

        todo = [(c, lay) for c, lay in dict.fromkeys((c, tuple(sorted(lay.items()))) for c, lay in cases)
                if (model, hardware, c, lay) not in self._cache]
        results = batched.train_many(self.model(model), self.system(hardware), [(c, dict(lay)) for c, lay in todo],
                                     calibration=self.calibration, work_tables=self._tables)
        for (c, lay), r in zip(todo, results):
            self._cache[(model, hardware, c, lay)] = r

    def train(self, model: str, hardware: str, chips: int, **layout):
        key = (model, hardware, chips, tuple(sorted(layout.items())))
        if key not in self._cache:
            self._cache[key] = forecast.train(self.model(model), self.system(hardware), chips,
                                              calibration=self.calibration,
                                              exhaustive=False, work_tables=self._tables, **layout)
        return self._cache[key]

    def fitting(self, model: str, hardware: str, chips: int, **layout):
        """train()'s forecast where a layout fits on the chips, else None; where the model's states alone exceed
        the chips' HBM (plan/bounds.cannot_fit) no search runs."""
        if bounds.cannot_fit(self.model(model), self.system(hardware), chips):
            return None
        r = self.train(model, hardware, chips, **layout)
        return r if r.fits else None


def describe_run(r) -> str:
    return f"{r.model.id} on {r.chips:,} x {r.system.chip.id} ({r.system.id}), layout {r.layout.describe()}"


def median(xs):
    xs = [x for x in xs if x]
    return float(np.median(xs)) if xs else None
