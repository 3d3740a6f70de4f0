"""A budget of simulation work that a search's runs share, so that any input ends in bounded time.

Work is counted in units, not seconds, so the same input gives the same answer on any machine: a batch iteration
is one unit, a request REQUEST_WORK more (its arrival, routing, prefill admission and finish cost about that many
plain decode steps: benchmarks/serve_speed.py, llama3-8b on p5.48xlarge at 8 req/s, 0.15 s of CPU for 5,000
requests and 43,000 iterations, of which ~0.05 s the iterations). A run checks the budget as it goes and stops with
BudgetSpent when the work would pass what is left; the search that set the budget catches it and reports that the
budget cut it (the rates it had verified stand; a capacity cut short is a lower bound).
"""

from __future__ import annotations

from ...errors import FlopcastError

REQUEST_WORK = 20  # units per request (see the module doc)
# the work of a run given no budget (a report's curve, a compare point), and of a plain `serve` with both ends of its
# interval: ~1 us a unit (up to ~6 us for a decode step of thousands of long outputs, run ahead), so 3-18 s; 50,000
# requests a run, or fewer with long outputs. Measured: `serve llama3-8b -H p5.48xlarge --requests 2000
# --output-tokens 200000` ran past 120 s of CPU before it; 5M units of it took 30 s of CPU at a load of 10.
RUN_WORK = 3_000_000


def work_limit(spent_on: str) -> str:
    """The one-line refusal of a run past RUN_WORK (`spent_on`: what it had simulated)."""
    return (f"the simulation stopped at its work limit ({RUN_WORK:,} units: a batch iteration is 1, a request "
            f"{REQUEST_WORK}) {spent_on}; valid: fewer requests, shorter outputs, or a shorter --duration")


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
