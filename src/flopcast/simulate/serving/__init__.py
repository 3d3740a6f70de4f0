"""A discrete-event simulation of LLM serving: replicas, a router, batching schedulers, KV memory.

The rooms: config (scheduler, routing, limits), requests (lengths, Poisson arrivals, traces),
closed_loop (C clients, each sending its next request when the previous one finished),
iteration (the cost of one batch iteration), schedulers (static, continuous, chunked-prefill),
simulation (the request lifecycle on simulate/events.Engine), metrics (percentiles, SLOs, cost),
capacity (the highest rate within the SLOs), budget (the work a search may simulate)
and disagg (prefill and decode pools apart, xPyD).
This face re-exports them, so
`from flopcast.simulate import serving as S` reads as one module.

Iteration times are the per-operator roofline of cost/inference.step_time, split as
dense(n tokens) [a precomputed table] + logits(sequences) + attention(kv tokens, pairs),
which equals step_time exactly and costs a few float operations per iteration.
"""

from .budget import EVENT_WORK, REQUEST_WORK, RUN_WORK, STEP_WORK, BudgetSpent, WorkBudget, work_limit, work_units
from .capacity import ATTAINMENT, CAPACITY_WORK, SPAN_HORIZONS, find_capacity
from .closed_loop import ClosedLoop, closed_loop
from .disagg import Disaggregated, disaggregated, parse_split, run_any, run_disaggregated, simulate_any
from .config import Routing, Scheduler, ServingConfig, parse_choice
from .interval import bounds as interval_bounds
from .interval import with_bounds as with_interval
from .iteration import IterationCost
from .metrics import Outcome, ServingResult, summarize
from .requests import Requests, lengths, median_length, median_lengths, median_output, poisson_requests, read_trace
from .schedulers import POLICIES
from .simulation import ARRIVAL, END, Replica, Simulation, simulate

__all__ = [
    "ARRIVAL", "ATTAINMENT", "BudgetSpent", "CAPACITY_WORK", "EVENT_WORK", "REQUEST_WORK", "RUN_WORK", "STEP_WORK",
    "WorkBudget", "work_limit", "work_units",
    "Disaggregated", "disaggregated", "parse_split", "run_any", "run_disaggregated",
    "simulate_any", "END", "POLICIES", "SPAN_HORIZONS", "IterationCost", "interval_bounds", "with_interval",
    "ClosedLoop", "closed_loop",
    "Outcome",
    "Replica", "Requests", "Routing",
    "Scheduler", "ServingConfig", "ServingResult", "Simulation", "find_capacity", "lengths", "median_length",
    "median_lengths", "median_output", "parse_choice",
    "poisson_requests", "read_trace", "simulate", "summarize",
]
