"""Capacity questions answered with the layout search: how many nodes for a deadline, the fastest
cluster within a budget, the size/time/cost frontier, and the best layout on several systems.

Time to train = tokens / tokens_per_s of the fastest layout that fits on that cluster
(the search may leave chips idle; the cluster is still paid for in whole nodes). Deadlines and budgets are
met on the expected time with faults and its full cost (downtime and re-done work, cost/economics.py).
The global batch is searched on a grid that reaches the model's critical batch (plan/batch.py) unless it
is pinned.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from ..model.efficiency import Calibration
from ..errors import FlopcastError
from ..units import GiB, fmt_duration
from ..model.system import System
from ..model.workload import Model
from . import batch as batch_mod
from . import bounded
from . import search as search_mod
from .forecast import result_from

MAX_PARETO_SEARCHES = 20


@dataclass(frozen=True)
class PlanPoint:
    nodes: int
    chips: int
    result: object | None  # forecast.TrainResult of the best layout, None when nothing fits
    reason: str = ""  # why there is no result

    @property
    def time_to_train_s(self) -> float:
        return math.inf if self.result is None else self.result.time_to_train_s

    @property
    def expected_s(self) -> float:
        """Time to train with failures, checkpoints and restarts: what a deadline is held to."""
        return math.inf if self.result is None else self.result.expected.expected_s

    @property
    def batch_limited(self) -> bool:
        """The layout runs at the largest global batch tried: the batch, not the hardware, limits scaling."""
        return self.result is not None and self.result.layout.global_batch >= self.batch_cap > 0

    batch_cap: int = 0  # the largest global batch (sequences) tried on this cluster; 0: pinned by the user

    @property
    def cost_usd(self) -> float | None:
        return None if self.result is None else self.result.cost_usd


@dataclass
class PlanOutcome:
    kind: str  # deadline | budget | pareto
    chosen: PlanPoint | None
    points: list  # every cluster size evaluated, ascending nodes
    frontier: list = field(default_factory=list)
    target: float | None = None  # deadline (s) or budget (USD)
    searches: int = 0
    fastest: PlanPoint | None = None  # of the sizes that meet the target
    smallest: PlanPoint | None = None
    batch_cap: int = 0  # largest global batch tried (sequences); 0: pinned
    batch_cap_reason: str = ""
    bounded: int = 0  # sizes that provably miss the deadline, decided by a lower bound without their best layout


class _Sizer:
    """Best layout per node count, cached."""

    def __init__(self, model, system, tokens, cal, space, progress=None, rates=None, max_global_batch=None,
                 mapper=None):
        if tokens is None or tokens <= 0:
            raise FlopcastError(f"`tokens` must be positive, got {tokens}")
        self.model, self.system, self.tokens, self.cal, self.space = model, system, float(tokens), cal, space
        self.rates = rates
        self.batch_cap, self.batch_cap_reason = 0, "pinned"
        self.search_space = space
        if not space.global_batch:
            grid, self.batch_cap, self.batch_cap_reason = batch_mod.batch_grid(model, tokens, max_global_batch)
            if space.batch_range:
                lo, hi = space.batch_range
                grid = tuple(b for b in grid if lo <= b <= hi) or (lo, hi)
                self.batch_cap = max(grid)
            self.search_space = replace(space, global_batch=grid)
        self.node = system.chips_per_node
        self.max_nodes = max(1, system.max_chips // self.node)
        self.cache: dict[int, PlanPoint] = {}
        self.beyond: dict[int, float] = {}  # nodes -> a lower bound of seconds to train, where that missed a deadline
        self.progress = progress
        self.table = bounded.WorkTable(model, system, cal)
        self._floor = None
        self.mapper = mapper
        self._args = (model, system, tokens, cal, space, rates, max_global_batch)

    def prefetch(self, nodes: list) -> None:
        """Search the sizes not yet known, independent pieces: on mapper(fn, tasks) -> values in order (the api's
        executor: local processes or Ray) where one is given and there are several, else here."""
        todo = sorted({int(n) for n in nodes} - set(self.cache))
        if self.mapper is None or len(todo) < 2:
            for n in todo:
                self(n)
            return
        if self.progress is not None:
            self.progress.note(f"searching {len(todo)} sizes on the executor")
        for n, point in zip(todo, self.mapper(size_point, [(self._args, n) for n in todo])):
            self.cache[n] = point

    def __call__(self, nodes: int) -> PlanPoint:
        if nodes not in self.cache:
            self.cache[nodes] = self._best(nodes)
        return self.cache[nodes]

    def meets(self, nodes: int, deadline_s: float) -> bool:
        """Whether the best layout on `nodes` trains within `deadline_s` with faults. A size whose time without
        faults is provably longer (bounded.floor_s_per_token_chip, else a bounded search that finds no layout
        that fast) is decided without its best layout; the others are searched exactly."""
        if nodes in self.cache:
            return self.cache[nodes].expected_s <= deadline_s
        if nodes in self.beyond:
            return False
        cutoff = deadline_s / self.tokens  # seconds per token without faults; with faults it is only longer
        if self._floor is None:
            self._floor = bounded.floor_s_per_token_chip(self.model, self.system, self.search_space, self.table)
        floor = self._floor / (nodes * self.node)
        if floor > cutoff:
            self.beyond[nodes] = floor * self.tokens
            return False
        point = self._best(nodes, cutoff)
        if isinstance(point, bounded.Beyond):
            self.beyond[nodes] = point.s_per_token * self.tokens
            return False
        self.cache[nodes] = point
        return point.expected_s <= deadline_s

    def _search(self, chips: int, cutoff: float | None):
        out = bounded.search(self.model, self.system, chips, self.cal, self.search_space, self.table, cutoff=cutoff)
        if out is None:  # the bound did not hold for some layout: the exhaustive search decides
            return search_mod.search(self.model, self.system, chips, self.cal, self.search_space,
                                     objective="throughput", progress=self.progress, keep=1)
        if self.progress is not None and not isinstance(out, bounded.Beyond):
            self.progress.add_total(out.considered)  # every candidate judged: evaluated or bounded away
            self.progress.update(out.considered)
        return out

    def _best(self, nodes: int, cutoff: float | None = None):
        chips = nodes * self.node
        if self.progress is not None:
            self.progress.note(f"searching {nodes:,} nodes ({len(self.cache) + 1} sizes so far)")
        out = self._search(chips, cutoff)
        if isinstance(out, bounded.Beyond):
            return out
        if out.n_fit == 0:
            return PlanPoint(nodes, chips, None, why_nothing_fits(out, self.system), self.batch_cap)
        i = int(out.order[0])
        free = [k for k in search_mod.LAYOUT_FIELDS if k not in self.space.pinned() or len(self.space.pinned()[k]) > 1]
        r = result_from(self.model, self.system, chips, out.batch, out.results, i, self.cal, self.tokens,
                            "searched", free,
                            summary={"candidates": out.considered, "evaluated": out.n_evaluated, "fit": out.n_fit,
                                     "rejected": out.rejected})
        if self.rates is not None:
            r = replace(r, rates=self.rates)
        return PlanPoint(nodes, chips, r, "", self.batch_cap)

    def points(self) -> list:
        return [self.cache[n] for n in sorted(self.cache)]


def size_point(task) -> PlanPoint:
    """((model, system, tokens, cal, space, rates, max_global_batch), nodes) -> the best PlanPoint on that many
    nodes: one cluster size searched on its own (an executor task: module-level, picklable in and out)."""
    (model, system, tokens, cal, space, rates, max_global_batch), nodes = task
    return _Sizer(model, system, tokens, cal, space, None, rates, max_global_batch)(nodes)


def why_nothing_fits(out: search_mod.SearchOutcome, system: System) -> str:
    """One phrase: memory when valid layouts exist (with the smallest footprint), else the rules."""
    if out.batch.size and out.results:
        need = float(np.min(out.results["memory_bytes"]))
        return (f"no layout fits in memory: the smallest of {out.n_valid:,} valid layouts needs "
                f"{need / GiB:,.1f} GiB of {system.chip.memory / GiB:,.1f} GiB per chip")
    return f"no valid layout ({search_mod.rejection_summary(out.rejected) or 'no candidates'})"


SIZE_STEPS_PER_OCTAVE = 8  # cluster sizes the bisection tries: a power of two, then steps of an eighth of it


def round_sizes(lo: int, hi: int) -> list[int]:
    """The node counts from lo to hi (both kept) that a planner would list: above a power of two p, multiples
    of p / 8 (1,024, 1,152, 1,280, ... nodes; every count below 16 nodes). Sizes in between buy little: at an
    odd node count few batch and layout choices divide the chips, so their times form a sawtooth, not a
    finer answer; a size on this grid is within 12.5% of any size between its neighbours."""
    step = _size_step(lo)
    return sorted({lo, hi} | set(range(-(-lo // step) * step, hi, step)))


def _size_step(n: int) -> int:
    """The round sizes' step above n nodes: an eighth of the power of two at or below n (at least 1)."""
    return max(1, 2 ** int(math.log2(max(n, 1))) // SIZE_STEPS_PER_OCTAVE)


def _round_up(n: int) -> int:
    """The smallest round size (round_sizes) at or above n nodes."""
    step = _size_step(n)
    return -(-n // step) * step


def _bisect(lo: int, hi: int, stays_low) -> tuple[int, int]:
    """Narrow lo < hi, where stays_low(lo) holds and stays_low(hi) does not, until they are neighbours on the
    grid of round sizes (round_sizes)."""
    grid = round_sizes(lo, hi)
    i, j = 0, len(grid) - 1
    while j - i > 1:
        mid = (i + j) // 2
        if stays_low(grid[mid]):
            i = mid
        else:
            j = mid
    return grid[i], grid[j]


EXTRA_SIZES = (1.25, 1.5, 2.0)  # multiples of the smallest size that meets a deadline, priced for the cheapest


def _finish(kind, size, ok, target, chosen_key) -> PlanOutcome:
    """An outcome over the sizes in `ok` (the ones that meet the target): the chosen, fastest and smallest."""
    return PlanOutcome(kind, min(ok, key=chosen_key), size.points(), target=target, searches=len(size.cache),
                       fastest=min(ok, key=lambda p: (p.expected_s, p.nodes)), smallest=min(ok, key=lambda p: p.nodes),
                       batch_cap=size.batch_cap, batch_cap_reason=size.batch_cap_reason, bounded=len(size.beyond))


def _cost_key(p: PlanPoint):
    """Cheapest first (chip-hours held when there is no price), then fastest."""
    r = p.result
    held = p.expected_s / 3600.0 * p.chips
    return (r.cost_usd if r.cost_usd is not None else held, p.expected_s)


def plan_deadline(model: Model, system: System, tokens: float, deadline_s: float, cal: Calibration,
                  space: search_mod.SearchSpace = search_mod.SearchSpace(), progress=None, rates=None,
                  max_global_batch: int | None = None, mapper=None) -> PlanOutcome:
    """Cheapest cluster (whole nodes) whose best layout trains `tokens` within `deadline_s` with faults,
    checkpoints and restarts; the fastest and the smallest that do are kept too."""
    if not deadline_s or deadline_s <= 0:
        raise FlopcastError(f"`deadline` must be positive, got {deadline_s}")
    size = _Sizer(model, system, tokens, cal, space, progress, rates, max_global_batch, mapper)
    meets = lambda n: size.meets(n, deadline_s)
    # exponential: 1, 2, 4, ... nodes until one meets the deadline or the system's largest cluster
    lo, hi, n = 0, None, 1
    while True:
        if meets(n):
            hi = n
            break
        lo = n
        if n >= size.max_nodes:
            break
        n = min(2 * n, size.max_nodes)
    if hi is None:
        size(size.max_nodes)  # searched exactly even where a bound decided it, so the message names its time
        best = min(size.points(), key=lambda p: p.expected_s)
        if best.result is None:
            raise FlopcastError(f"{model.label} fits on no cluster of {system.id} up to {system.max_chips} chips: "
                                f"{best.reason}")
        raise FlopcastError(
            f"no {system.id} cluster up to {system.max_chips:,} chips trains {tokens:.3g} tokens of {model.label} in "
            f"{fmt_duration(deadline_s)} with faults; the fastest searched ({best.chips:,} chips) takes "
            f"{fmt_duration(best.expected_s)}")
    lo, hi = _bisect(lo, hi, lambda n: not meets(n))  # lo misses, hi meets
    # a larger cluster can be cheaper (a better layout, fewer idle chips): price a few above the smallest
    size.prefetch([min(size.max_nodes, _round_up(int(math.ceil(hi * f)))) for f in EXTRA_SIZES])
    ok = [p for p in size.points() if p.result is not None and p.expected_s <= deadline_s]
    return _finish("deadline", size, ok, deadline_s, _cost_key)


def plan_budget(model: Model, system: System, tokens: float, budget_usd: float, cal: Calibration,
                space: search_mod.SearchSpace = search_mod.SearchSpace(), progress=None, rates=None,
                max_global_batch: int | None = None, mapper=None) -> PlanOutcome:
    """Fastest cluster (whole nodes) whose training run, downtime and re-done work included, costs at most
    `budget_usd`; the cheapest and the smallest within budget are kept too."""
    from ..cost.economics import rates_for

    r = rates if rates is not None else rates_for(system)
    if r.price_per_hour_usd is None:
        raise FlopcastError(f"{system.id} has no known price ({system.notes.get('price_per_hour', 'not published')}); "
                            f"`budget` needs one: give one (--price USD/h), use `deadline`, or a system with a price")
    if not budget_usd or budget_usd <= 0:
        raise FlopcastError(f"`budget` must be positive, got {budget_usd}")
    size = _Sizer(model, system, tokens, cal, space, progress, rates, max_global_batch, mapper)
    # a run that never finishes (faults faster than restarts: reliability) has no cost and is within no budget
    within = lambda n: size(n).result is not None and size(n).cost_usd is not None and size(n).cost_usd <= budget_usd
    # cost grows with cluster size (efficiency falls): largest size within budget by exponential + bisection
    lo, hi, n = None, None, 1
    while True:
        if within(n):
            lo = n
        elif lo is not None:
            hi = n
            break
        if n >= size.max_nodes:
            break
        n = min(2 * n, size.max_nodes)
    if lo is None:
        cheap = [p for p in size.points() if p.result is not None and p.cost_usd is not None]
        if not cheap and any(p.result is not None for p in size.points()):
            raise FlopcastError(f"no {system.id} cluster up to {system.max_chips:,} chips finishes training "
                                f"{model.label}: faults come faster than restarts at every size searched (see "
                                "`flopcast reliability`); `budget` has nothing to price")
        if not cheap:
            raise FlopcastError(f"{model.label} fits on no cluster of {system.id} up to {system.max_chips} chips")
        c = min(cheap, key=lambda p: p.cost_usd)
        raise FlopcastError(f"no {system.id} cluster trains {tokens:.3g} tokens of {model.label} for "
                            f"${budget_usd:,.0f}; the cheapest searched ({c.chips:,} chips) costs ${c.cost_usd:,.0f}")
    if hi is not None:
        lo, hi = _bisect(lo, hi, within)
    ok = [p for p in size.points() if p.result is not None and p.cost_usd is not None and p.cost_usd <= budget_usd]
    return _finish("budget", size, ok, budget_usd, lambda p: (p.expected_s, p.nodes))


def _sizes(max_nodes: int) -> list[int]:
    sizes = [2**i for i in range(int(math.log2(max_nodes)) + 1)]
    if sizes[-1] != max_nodes:
        sizes.append(max_nodes)
    if len(sizes) > MAX_PARETO_SEARCHES:  # keep the largest and smallest, thin the middle geometrically
        step = math.ceil(len(sizes) / MAX_PARETO_SEARCHES)
        sizes = sorted(set(sizes[::step] + [sizes[-1]]))
    return sizes


def pareto(model: Model, system: System, tokens: float, cal: Calibration,
           space: search_mod.SearchSpace = search_mod.SearchSpace(), sizes=None, progress=None, rates=None,
           max_global_batch: int | None = None, mapper=None) -> PlanOutcome:
    """Frontier of (chips, time to train, cost) over cluster sizes (powers of two nodes by default).

    A size is on the frontier when no other size is both at least as fast and at least as cheap
    (cost in USD when the system has a price, chip-hours otherwise), one of them strictly; times with faults.
    """
    size = _Sizer(model, system, tokens, cal, space, progress, rates, max_global_batch, mapper)
    nodes = sorted({int(n) for n in sizes}) if sizes else _sizes(size.max_nodes)
    if any(n < 1 or n > size.max_nodes for n in nodes):
        raise FlopcastError(f"cluster sizes must be 1..{size.max_nodes} nodes of {system.id}")
    size.prefetch(nodes)
    pts = [size(n) for n in nodes]
    ok = [p for p in pts if p.result is not None]
    if not ok:
        raise FlopcastError(f"{model.label} fits on no searched cluster of {system.id}: {pts[-1].reason}")
    cost = (lambda p: p.cost_usd) if ok[0].cost_usd is not None else (lambda p: p.result.chip_hours)
    frontier = [p for p in ok if not any(
        q is not p and q.expected_s <= p.expected_s and cost(q) <= cost(p)
        and (q.expected_s < p.expected_s or cost(q) < cost(p)) for q in ok)]
    return PlanOutcome("pareto", None, pts, frontier=frontier, searches=len(size.cache), batch_cap=size.batch_cap,
                       batch_cap_reason=size.batch_cap_reason)


# memory checks per system past which compare judges each layout's bound first (plan/streamed.Pruning.budget):
# DeepSeek-V3 on 1,024 chips has 6.6-9.7 million valid layouts per system, and checking the memory of every one
# was 12 of the 21 s of CPU that comparing four systems took (idle machine); the best layout is the same, the
# count of fitting layouts then a lower bound ("at least K fit of M checked"). 2 million checks took as long as
# 250,000 (the bound then costs what memory did) with 90 MB more peak memory
COMPARE_MEMORY_BUDGET = 250_000


def fit_count(s: search_mod.SearchOutcome) -> str:
    """How many layouts fit: exact, or past a memory budget a lower bound naming the layouts checked."""
    if s.checked is None:
        return f"{s.n_valid:,} valid layouts, {s.n_fit:,} fit"
    return f"{s.n_valid:,} valid layouts, at least {s.n_fit:,} fit of {s.checked:,} checked for memory"


def compare(model: Model, systems: list[System], chips: int, tokens: float | None, cal: Calibration,
            space: search_mod.SearchSpace = search_mod.SearchSpace(), progress=None,
            memory_budget: int | None = COMPARE_MEMORY_BUDGET) -> dict:
    """Best layout of each system on `chips` chips: {system id: TrainResult, or a string saying why not}."""
    out = {}
    for system in systems:
        if chips > system.max_chips:
            out[system.id] = f"{system.id} scales to {system.max_chips:,} chips"
            continue
        if progress is not None:
            progress.note(f"searching {system.id}")
        s = search_mod.search(model, system, chips, cal, space, objective="throughput", progress=progress, keep=1,
                              memory_budget=memory_budget)
        if s.n_fit == 0:
            out[system.id] = why_nothing_fits(s, system)
            continue
        i = int(s.order[0])
        summary = {"candidates": s.considered, "valid": s.n_valid, "fit": s.n_fit, "fit_exact": s.checked is None,
                   "memory_checked": s.n_valid if s.checked is None else s.checked, "rejected": s.rejected}
        out[system.id] = result_from(model, system, chips, s.batch, s.results, i, cal, tokens, "searched",
                                     notes=(f"layout searched ({s.considered:,} candidates, {fit_count(s)})",),
                                     summary=summary)
    return out
