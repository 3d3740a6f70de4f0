"""A budget of simulation work that a search's runs share, so that any input ends in bounded time.

Work is counted in units, not seconds, so the same input gives the same answer on any machine; a unit is about a
microsecond of CPU here, each kind of work weighted by what it costs: a decode step run ahead of the event queue
(Simulation.run_ahead) STEP_WORK, an iteration started as an event (a prefill, a chunk, a decode step that must
wait its turn, or a run of identical decode steps summed in closed form, IterationCost.decode_run) EVENT_WORK, a
request REQUEST_WORK (its arrival, routing, admission and finish). Fitted by least squares on nine runs
(llama3-8b and llama3-70b on p5.48xlarge and trn2.48xlarge, 0.02 to 10^6 req/s, 64 to 20,000 output tokens, one
disaggregated 1P2D, 300 to 20,000 requests; 2-core machine at a load of ~4, 2026-12-01): 1.35 us a step run
ahead, 9.2 us an event, 10.1 us a request (within 20-50% on each run, the cheap bursts relatively worst). A run
checks the budget as it goes and stops with BudgetSpent when the work would pass what is left; the search that set
the budget catches it and reports that the budget cut it (the rates it had verified stand; a capacity cut short is a
lower bound).
"""

from __future__ import annotations

from ...errors import FlopcastError

STEP_WORK, EVENT_WORK, REQUEST_WORK = 1, 8, 10  # units per decode step run ahead, per event, per request (see above)
# the work of a run given no budget (a report's curve, a compare point), and of a plain `serve` with both ends of its
# interval: ~3 s of CPU here. Measured: `serve llama3-8b -H p5.48xlarge --requests 2000 --output-tokens 200000`
# ran past 120 s of CPU before any budget.
RUN_WORK = 3_000_000
CHECK_EVERY = 64  # arrivals, launches and steps run ahead between two looks at a run's work budget


def work_units(iterations: int, launched: int, summed: int, requests: int) -> float:
    """Units of a run's work: its batch iterations of which `launched` started as events and `summed` were folded
    into one of those (the rest ran ahead one at a time), and its requests admitted."""
    return STEP_WORK * (iterations - launched - summed) + EVENT_WORK * launched + REQUEST_WORK * requests


def work_limit(spent_on: str) -> str:
    """The one-line refusal of a run past RUN_WORK (`spent_on`: what it had simulated)."""
    return (f"the simulation stopped at its work limit ({RUN_WORK:,} units: a decode step {STEP_WORK}, an event "
            f"{EVENT_WORK}, a request {REQUEST_WORK}) {spent_on}; valid: fewer requests, shorter outputs, or a "
            "shorter --duration")


class BudgetSpent(FlopcastError):
    """A run stopped because its search's work budget is spent (the search catches it), or a run given no budget
    passed RUN_WORK (the user is told, in one line, what to shorten)."""


class WorkBudget:
    """Units of simulation work left, shared by the runs of one search and its parts.

    Mutable on purpose (a counter the runs draw on), passed explicitly, never global. `part(k)` is a budget of
    1/k of what is left whose spending is charged to this one too."""

    __slots__ = ("total", "spent", "parent", "cut")

    def __init__(self, units: float, parent: WorkBudget | None = None):
        self.total = float(units)
        self.spent = 0.0
        self.parent = parent
        self.cut = False  # a run was stopped, or work was skipped, for want of budget

    @property
    def left(self) -> float:
        own = self.total - self.spent
        return own if self.parent is None else min(own, self.parent.left)

    @property
    def exhausted(self) -> bool:
        return self.left <= 0

    def part(self, k: int) -> WorkBudget:
        """A budget of 1/k of what is left (k >= 1), charged here as it is spent."""
        return WorkBudget(max(self.left, 0.0) / max(k, 1), self)

    def charge(self, units: float) -> None:
        """Spend `units` here and in every budget above."""
        b = self
        while b is not None:
            b.spent += units
            b = b.parent

    def mark_cut(self) -> None:
        b = self
        while b is not None:
            b.cut = True
            b = b.parent

    def to_dict(self) -> dict:
        return {"work_units": self.total, "spent_units": self.spent, "cut": self.cut}
