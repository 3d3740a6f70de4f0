"""Training from Python: train, search, plan and compare, each returning a frozen result.

Arguments take what the command line takes: `tokens="15T"` or 1.5e13, `deadline="30d"` or seconds,
`budget="2.5M"`, layout fields as numbers and choices as names (`recompute="full"`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from ..cost import calibrations
from ..model.efficiency import Calibration
from ..model.strategy import MODERN_SOFTWARE, CudaGraphs, Dispatcher, Software, parse_choice
from ..errors import FlopcastError
from ..frame import Tabular, flatten
from ..model.system import System
from ..model.workload import Model
from ..plan import capacity, forecast
from ..plan import search as search_mod
from ..plan.forecast import DEFAULT_MODEL, DEFAULT_SYSTEM, TrainResult
from ..units import DAY
from . import args
from .args import python_errors


def rates(system: System, price_per_hour=None, power_w=None, pue=None):
    """The user's price (USD per node-hour), chip power (W) and PUE over the catalog's; None when none is given."""
    from ..cost import economics

    if price_per_hour is None and power_w is None and pue is None:
        return None
    return economics.rates_for(system, price_per_hour, power_w, pue)


def software_for(cuda_graphs: str | None, dispatcher: str | None = None) -> Software:
    """The framework features a user states: today's defaults with the given CUDA-graph capture (None: the chip's
    framework default) and MoE token dispatcher ("alltoall" or "flex"; None: Megatron-Core's default, alltoall)."""
    out = MODERN_SOFTWARE
    if cuda_graphs is not None:
        out = replace(out, cuda_graphs=parse_choice(CudaGraphs, str(cuda_graphs), "cuda_graphs"))
    if dispatcher is not None:
        out = replace(out, dispatcher=parse_choice(Dispatcher, str(dispatcher), "dispatcher"))
    return out


def _space(layout: dict, dtypes=None, batch_range=None) -> search_mod.SearchSpace:
    if dtypes:
        if layout.get("dtype") is not None:
            raise FlopcastError("give either `dtype` (pinned) or `dtypes` (searched), not both")
        dtypes = args.names(dtypes, "dtypes")
    return forecast.layout_space(**layout, dtypes=dtypes, batch_range=args.batch_range(batch_range))


@python_errors
def train(model: str | Model = DEFAULT_MODEL, hardware: str | System = DEFAULT_SYSTEM, chips: int | None = None, *,
          tokens=None, seq_len: int | None = None, calibration: Calibration | str | None = None,
          objective: str = "throughput", progress=None, price_per_hour=None, power_w=None, pue=None,
          cuda_graphs: str | None = None, dispatcher: str | None = None, **layout) -> TrainResult:
    """Forecast one training configuration; layout fields left out are chosen by the search.

    tokens: a count (1.5e13, "15T", "300B") or "chinchilla" (20 per parameter); without it the
    time and cost to train are None. layout: tp, pp, dp, cp, ep, vp, micro_batch, global_batch,
    recompute, sharding, sequence_parallel, dtype, schedule. price_per_hour (USD per instance-hour), power_w
    (per chip) and pue replace the catalog's in the cost and energy (cost/economics.py). cuda_graphs: "none"
    (eager), "partial" (an MoE layer's router and dispatch preprocessing captured) or "full" (the whole step a
    compiled program); None: the framework's default for the chip (model.strategy.default_cuda_graphs). dispatcher:
    an MoE model's token dispatcher, "alltoall" (Megatron-Core's default: one message per routed expert) or "flex"
    (DeepEP/HybridEP: one per destination rank).

    >>> r = flopcast.train("llama2-7b", hardware="p5.48xlarge", chips=8, tp=8, pp=1, micro_batch=1, global_batch=8)
    >>> r.layout.tp, r.fits, 0 < r.mfu < 1
    (8, True, True)
    """
    m = forecast.resolve_model(model, seq_len)
    r = forecast.train(m, hardware, chips, tokens=args.tokens(tokens, m), calibration=calibration,
                       objective=objective, progress=progress, software=software_for(cuda_graphs, dispatcher), **layout)
    given = rates(r.system, price_per_hour, power_w, pue)
    return r if given is None else replace(r, rates=given)


@dataclass(frozen=True)
class SearchResult(Tabular):
    """Every valid layout evaluated; `top` holds the best (TrainResult), best first."""

    model: Model
    system: System
    chips: int
    objective: str
    candidates: int
    valid: int
    fit: int
    wall_s: float
    rejected: dict
    top: tuple
    tokens: float | None = None

    @property
    def candidates_per_s(self) -> float:
        return self.candidates / self.wall_s if self.wall_s > 0 else float("inf")

    def to_dict(self) -> dict:
        return {"model": self.model.label, "hardware": self.system.id, "chips": self.chips,
                "objective": self.objective, "candidates": self.candidates, "valid": self.valid, "fit": self.fit,
                "wall_s": self.wall_s, "candidates_per_s": self.candidates_per_s, "rejected": self.rejected,
                "top": [r.to_dict() for r in self.top]}

    def rows(self) -> list[dict]:
        return [{"rank": k, **flatten(r.to_dict())} for k, r in enumerate(self.top, 1)]


@python_errors
def search(model: str | Model, hardware: str | System, chips: int, *, top: int = 10, objective: str = "throughput",
           dtypes=None, batch_range=None, tokens=None, allow_idle: bool = True, seq_len: int | None = None,
           calibration: Calibration | str | None = None, progress=None, cuda_graphs: str | None = None,
           dispatcher: str | None = None, **layout) -> SearchResult:
    """Evaluate every valid layout of `model` on `chips` chips and rank them; layout fields given are pinned.

    dtypes: compute types searched ("bf16,fp8" or a list); batch_range: "512:4096" or (512, 4096); cuda_graphs and
    dispatcher: as for train.

    >>> s = flopcast.search("llama2-7b", "p5.48xlarge", 8, top=3)
    >>> len(s.top), s.top[0].step_time_s <= s.top[1].step_time_s
    (3, True)
    """
    m = forecast.resolve_model(model, seq_len)
    system = forecast.resolve_system(hardware)
    forecast.check_positive(chips=chips, top=top)
    if chips > system.max_chips:
        raise FlopcastError(f"{system.id} scales to {system.max_chips} chips; `chips={chips}` is more")
    space = _space(layout, dtypes, batch_range)
    n_tokens = args.tokens(tokens, m)
    cal = calibrations.training(calibration)
    t0 = time.perf_counter()
    software = software_for(cuda_graphs, dispatcher)
    out = search_mod.search(m, system, chips, cal, space, objective, allow_idle=allow_idle, progress=progress,
                            software=software, keep=top)
    wall = time.perf_counter() - t0
    best = tuple(replace(forecast.result_from(m, system, chips, out.batch, out.results, int(i), cal, n_tokens,
                                              "searched"), software=software) for i in out.order[:top])
    return SearchResult(m, system, chips, objective, out.considered, out.n_valid, out.n_fit, wall,
                        dict(out.rejected), best, n_tokens)


def _point_dict(p: capacity.PlanPoint) -> dict:
    d = {"nodes": p.nodes, "chips": p.chips, "batch_limited": p.batch_limited}
    if p.result is None:
        d["reason"] = p.reason
        return d
    r = p.result.to_dict()
    keys = ("time_to_train_s", "time_to_train_days", "expected_time_to_train_s", "expected_time_to_train_days",
            "goodput", "cost_usd", "cost_breakdown_usd", "price_kind", "chip_hours", "energy_kwh",
            "energy_breakdown_kwh", "mfu", "step_time_s", "tokens_per_s", "idle_chips", "layout", "unavailable")
    for k in keys:  # each headline figure with its prediction interval (KEY_low, KEY_high), as train gives them
        d[k] = r[k]
        d.update({f"{k}_{end}": r[f"{k}_{end}"] for end in ("low", "high") if f"{k}_{end}" in r})
    d["interval"] = r.get("interval")
    return d


def _answer(out: capacity.PlanOutcome) -> dict | None:
    """The chosen size and the alternatives a planner weighs: the fastest and the smallest that meet the target."""
    if out.chosen is None:
        return None
    rule = {"deadline": "cheapest that meets the deadline with faults",
            "budget": "fastest within the budget, downtime and re-done work included"}[out.kind]
    chosen = out.chosen
    return {"rule": rule, "chosen": _point_dict(chosen), "fastest": _point_dict(out.fastest),
            "smallest": _point_dict(out.smallest), "batch_cap_sequences": out.batch_cap or None,
            "batch_cap_reason": out.batch_cap_reason, "batch_limited": chosen.batch_limited,
            "batch_limited_note": (f"the global batch is at its cap ({out.batch_cap:,} sequences, "
                                   f"{out.batch_cap_reason}): the batch, not the hardware, limits scaling"
                                   if chosen.batch_limited else "")}


@dataclass(frozen=True)
class PlanResult(Tabular):
    """The cluster sizes searched (`outcome.points`), the frontier and the chosen size (`outcome.chosen`)."""

    model: Model
    system: System
    tokens: float
    outcome: capacity.PlanOutcome
    what: str  # "deadline 30.0 days", "budget $2,500,000" or "pareto frontier"
    wall_s: float

    def to_dict(self) -> dict:
        out = self.outcome
        return {"model": self.model.label, "hardware": self.system.id, "tokens": self.tokens, "kind": out.kind,
                "target": out.target, "searches": out.searches, "wall_s": self.wall_s,
                "chosen": None if out.chosen is None else out.chosen.result.to_dict(),
                "answer": _answer(out),
                "frontier": [_point_dict(p) for p in out.frontier],
                "points": [_point_dict(p) for p in out.points]}

    def rows(self) -> list[dict]:
        chosen = self.outcome.chosen
        return [{**flatten(_point_dict(p)), "chosen": p is chosen, "on_frontier": p in self.outcome.frontier}
                for p in self.outcome.points]


@python_errors
def plan(model: str | Model, hardware: str | System, *, tokens="chinchilla", deadline=None, budget=None,
         pareto: bool = False, seq_len: int | None = None, calibration: Calibration | str | None = None, progress=None,
         price_per_hour=None, power_w=None, pue=None, max_global_batch: int | None = None, engine: str = "local",
         workers: int = 1, address: str | None = None, **layout) -> PlanResult:
    """Size a cluster of whole nodes: the cheapest that meets `deadline` ("30d", "12h" or seconds) with faults,
    the fastest within `budget` (dollars, "2.5M", downtime and re-done work included), or (`pareto=True`) the
    size/time/cost frontier. Exactly one of them. The global batch is searched up to the model's critical
    batch (plan/batch.py) or `max_global_batch` sequences; price_per_hour, power_w and pue as in `train`.
    workers: 1 (the default) searches here; more hand the independent cluster sizes (the pareto sizes, the
    sizes priced above the smallest that meets a deadline) to the sweep executor (engine "local" or "ray",
    address), with the same answer.

    >>> p = flopcast.plan("llama2-7b", hardware="p5.48xlarge", tokens="100B", deadline="30d")
    >>> p.outcome.chosen.result.time_to_train_s <= 30 * 86400
    True
    """
    if sum(x is not None and x is not False for x in (deadline, budget, pareto or None)) != 1:
        raise FlopcastError("give exactly one of `deadline`, `budget` or `pareto`")
    m = forecast.resolve_model(model, seq_len)
    system = forecast.resolve_system(hardware)
    n_tokens = args.tokens(tokens, m)
    space, cal = _space(layout), calibrations.training(calibration)
    kw = {"progress": progress, "rates": rates(system, price_per_hour, power_w, pue),
          "max_global_batch": max_global_batch, "mapper": args.executor_map(engine, workers, address)}
    t0 = time.perf_counter()
    if deadline is not None:
        d = args.duration(deadline, "deadline", unit_required=True)
        out = capacity.plan_deadline(m, system, n_tokens, d, cal, space, **kw)
        what = f"deadline {d / DAY:.1f} days"
    elif budget is not None:
        b = args.positive(args.count(budget, "budget", "dollars such as 2.5M or 400000"), "budget", repr(budget))
        b = args.bounded("budget_usd", b, "budget")
        out = capacity.plan_budget(m, system, n_tokens, b, cal, space, **kw)
        what = f"budget ${b:,.0f}"
    else:
        out = capacity.pareto(m, system, n_tokens, cal, space, **kw)
        what = "pareto frontier"
    return PlanResult(m, system, n_tokens, out, what, time.perf_counter() - t0)


@dataclass(frozen=True)
class CompareResult(Tabular):
    """The best layout of the model on each system: {system id: TrainResult, or why there is none}."""

    model: Model
    chips: int
    tokens: float | None
    systems: dict

    def to_dict(self) -> dict:
        return {"workload": "train", "model": self.model.label, "chips": self.chips, "tokens": self.tokens,
                "systems": {k: (_with_search(v) if not isinstance(v, str) else {"error": v})
                            for k, v in self.systems.items()}}

    def rows(self) -> list[dict]:
        return [{"system": k, **(flatten(v.to_dict()) if not isinstance(v, str) else {"error": v})}
                for k, v in self.systems.items()]


SEARCH_COUNTS = ("candidates", "valid", "fit", "fit_exact", "memory_checked")


def _with_search(r) -> dict:
    """A compared system's dict with its search's counts: `fit` exact, or (fit_exact false) a lower bound over the
    `memory_checked` layouts (plan/capacity.COMPARE_MEMORY_BUDGET)."""
    return {**r.to_dict(), "search": {k: r.search_summary[k] for k in SEARCH_COUNTS if k in r.search_summary}}


def compare_training(model, systems: list[System], chips, *, tokens, seq_len, calibration, progress,
                     serving_only: dict, economics: dict | None = None, **layout) -> CompareResult:
    given = [k for k, v in serving_only.items() if v is not None]
    if given:
        raise FlopcastError(f"{', '.join(f'`{k}`' for k in given)} apply to serving; add `serve=True`, "
                            "or leave them out to compare training")
    if chips is None:
        raise FlopcastError("`chips` is required to compare training (the chips on each system)")
    forecast.check_positive(chips=chips)
    m = forecast.resolve_model(model, seq_len)
    n_tokens = args.tokens(tokens, m)
    out = capacity.compare(m, systems, chips, n_tokens, calibrations.training(calibration), _space(layout),
                           progress=progress)
    for k, v in out.items():  # the user's price, power or PUE applies to every system compared
        given = None if isinstance(v, str) else rates(v.system, **(economics or {}))
        if given is not None:
            out[k] = replace(v, rates=given)
    return CompareResult(m, chips, n_tokens, out)
