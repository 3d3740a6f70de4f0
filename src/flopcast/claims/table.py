"""The claims, one row each: id, the claim as announced, the announced figure and unit, how flopcast
estimates it and the rule that judges it; `evaluate` runs them in order."""

from __future__ import annotations

import time

from ..errors import FlopcastError
from . import graviton, memory, peak, scaling, security, speedup, weeks
from .evidence import Runs
from .rows import Claim, ClaimsResult, no_figure_rule, weeks_rule
from .rules import VERDICTS, WEEKS_THRESHOLD_DAYS

CLAIMS = (
    Claim("1a", "100,000 Trainium2 chips in an EC2 UltraCluster give 65 exaflops (~650 TFLOP/s per chip)",
          65.0, "EFLOP/s", peak.estimate_peak,
          progress="claim 1: 65 exaflops (catalog peak; gpt-300b on 100,000 Trainium2)"),
    Claim("1b", "65 exaflops as training throughput of 100,000 Trainium2 on the ~300B GPT",
          65.0, "EFLOP/s", peak.estimate_sustained, band="trainium-training"),
    Claim("2", "Trainium2 gives up to 4x the training performance of Trainium1",
          4.0, "x (tokens/s per chip, Trn2 / Trn1)", speedup.estimate_4x,
          progress="claim 2: 4x Trainium1 (tokens/s per chip at 1,024 chips)", band="trainium-training"),
    Claim("3", "Trainium2 has 96 GB of HBM, 3x Trainium1",
          3.0, "x (HBM per chip, Trn2 / Trn1)", memory.estimate_memory,
          progress="claim 3: 3x memory (largest model per instance, layouts that fit)"),  # catalog HBM: spec band
    Claim("4", "Trainium2 gives 2x the performance per watt of Trainium1",
          2.0, "x (tokens/s per W, Trn2 / Trn1)", speedup.estimate_perf_per_watt,
          progress="claim 4: 2x performance per watt", band="trainium-training"),
    Claim("5", "16-chip Trn2 instances scale to EC2 UltraClusters of 100,000 chips (65 EF = 100,000 x per-chip peak: "
          "linear scaling implied)",
          None, "x (weak-scaling efficiency: tokens/s per chip at 100,000 / the sweep's best)",
          scaling.estimate_scaling,
          progress="claim 5: scaling to 100,000 chips (batch up to the critical batch, and strong)",
          band="trainium-training", reading=1.0),
    Claim("6", "A 300-billion-parameter model trains in weeks instead of months on Trainium2",
          None, "days (expected, with failures)", weeks.estimate_weeks, weeks_rule,
          progress="claim 6: 300B model in weeks (expected time-to-train with failures)", band="trainium-training",
          reading=WEEKS_THRESHOLD_DAYS, time_like=True),
    Claim("7a", "Graviton4 is 30% faster than Graviton3",
          1.3, "x (Graviton4 / Graviton3, LLM serving)", graviton.estimate_faster,
          progress="claim 7: Graviton4 vs Graviton3 (llama3-8b/70b serving)", band="cpu-serving"),
    Claim("7b", "Graviton4 has 50% more cores than Graviton3",
          1.5, "x (cores per socket)", graviton.estimate_cores),
    Claim("7c", "Graviton4 has 75% more memory bandwidth than Graviton3",
          1.75, "x (memory bandwidth per socket)", graviton.estimate_bandwidth),
    Claim("7d", "Graviton4 fully encrypts all its high-speed physical hardware interfaces",
          None, "(security property, no figure)", security.estimate_encrypted, no_figure_rule, band="none"),
)


def groups() -> list[tuple[str, ...]]:
    """The claims' independent pieces: the ids of the claims one estimator module computes (they share its
    evidence, and claim 4 reads claim 2's row), in table order."""
    out: dict[str, list] = {}
    for c in CLAIMS:
        out.setdefault(c.estimate.__module__, []).append(c.id)
    return [tuple(ids) for ids in out.values()]


def evaluate_group(task) -> dict:
    """(quick, calibration, ids) -> {id: (ClaimRow, series)}: one piece of the claims, on its own Runs (an
    executor task: module-level, picklable in and out)."""
    quick, calibration, ids = task
    return _rows(Runs(quick, None, calibration), ids)


def _rows(runs: Runs, ids, said=None) -> dict:
    rows, out = {}, {}
    for claim in (c for c in CLAIMS if c.id in ids):
        if claim.progress and said:
            said(claim.progress)
        estimate = claim.estimate(runs, rows)
        rows[claim.id] = claim.judge(estimate, runs.calibration)
        out[claim.id] = (rows[claim.id], estimate.series)
    return out


def evaluate(quick: bool = False, progress=None, calibration=None, *, engine: str = "local",
             workers: int = 1, address: str | None = None) -> ClaimsResult:
    """Every claim row and the plot series. progress(msg) is called once per claim; calibration: a file
    `flopcast calibrate` wrote, replacing the shipped calibration of its kind. workers: 1 (the default) runs every
    claim here, sharing one cache of predictions; more hand the groups() to the sweep executor (a local process
    pool, or Ray with engine="ray" and an optional address), the same rows either way."""
    from ..sweep import executors

    t0 = time.perf_counter()
    if workers == 1 and executors.Engine.parse(engine) == executors.Engine.LOCAL:
        runs = Runs(quick, progress, calibration)
        found = _rows(runs, {c.id for c in CLAIMS}, runs.progress)
    else:
        tasks = [(quick, calibration, ids) for ids in groups()]
        found = {}
        for o in executors.run(tasks, evaluate_group, engine=engine, workers=workers, address=address):
            if not o.ok:
                raise FlopcastError(o.error)
            found.update(o.value)
            for cid in o.value:
                said = next(c.progress for c in CLAIMS if c.id == cid)
                if said and progress:
                    progress(said)
    rows, series = {}, {}
    for claim in CLAIMS:  # table order, whatever order the pieces finished in
        rows[claim.id], part = found[claim.id]
        series.update(part)
        assert rows[claim.id].verdict in VERDICTS, rows[claim.id].verdict
    return ClaimsResult(tuple(rows.values()), series, quick, time.perf_counter() - t0)
