"""What a layout search minimises: the objectives, each a score per layout (lower is better)."""

from __future__ import annotations

import numpy as np

from ..cost.reliability import GoodputAssumptions, checkpoint_bytes, expected_time
from ..errors import FlopcastError
from ..model.strategy import LayoutBatch
from ..model.system import System
from ..model.workload import Model


def objective_score(res: dict, system: System, objective: str, failures=None):
    """Lower is better: seconds per token (throughput), dollars per token (cost), joules per token (energy), or
    the expected time to train with failures, checkpoints and restarts (time_with_failures; `failures` is
    (model, tokens): the checkpoint is the model's, the budget the tokens)."""
    if objective == "time_with_failures":
        return _expected_time(res, system, failures)
    per_token = 1.0 / res["tokens_per_s"]
    if objective == "throughput":
        return per_token
    if objective == "cost":
        price = system.price_per_chip_hour
        if price is None:
            raise FlopcastError(f"{system.id} has no known price; use --objective throughput or a system with a price")
        return per_token * res["chips"] * price
    if objective == "energy":
        if system.chip.power is None:
            raise FlopcastError(f"{system.chip.id} has no published power; use --objective throughput")
        return per_token * res["chips"] * system.chip.power
    raise FlopcastError(f"unknown objective {objective!r}; valid: throughput, cost, energy, time_with_failures")


def _expected_time(res: dict, system: System, failures) -> np.ndarray:
    """Expected seconds to train each layout with faults, checkpoints and restarts (cost/reliability.py, Daly 2006),
    on the chips it uses: what TrainResult.expected reports for it. Straggler variation left out, as there."""
    model, tokens = failures or (None, None)
    if not tokens:
        raise FlopcastError("objective time_with_failures needs a token budget (tokens)")
    ideal = tokens / np.asarray(res["tokens_per_s"], dtype=float)
    chips = np.broadcast_to(np.asarray(res["chips"], dtype=float), ideal.shape)
    out = np.empty_like(ideal)
    ckpt = checkpoint_bytes(model)
    for c in np.unique(chips):
        sel = chips == c
        a = GoodputAssumptions.for_system(system, int(c))
        out[sel] = expected_time(ideal[sel], int(c), ckpt, a).expected_s
    return out


def step_score(step, lb: LayoutBatch, index, model: Model, system: System, objective: str, failures=None):
    """The objective's score of layouts lb[index] with the given step times (the formula objective_score applies)."""
    tokens = lb.global_batch[index].astype(float) * model.seq_len
    chips = (lb.tp[index] * lb.pp[index] * lb.dp[index] * lb.cp[index]).astype(float)
    return objective_score({"tokens_per_s": tokens / step, "chips": chips}, system, objective, failures)
