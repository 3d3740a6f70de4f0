"""Decode steps repeated in a tight loop: Simulation.run_ahead's steps while each is the same step again.

A static-shape engine with a compiled sequence length (Neuron) times a decode step by its rows alone, so while no
sequence finishes or joins its steps are one time t after another; run_ahead would run each of them (plain, before
anything else can reach the replica) with its own checks; here the steps' count is bounded once and their ends
summed one at a time, as run_ahead sums them, so the clock, the steps and the iterations are the same.
"""

from __future__ import annotations

from . import schedulers
from .budget import CHECK_EVERY
from .schedulers import plain_continuous


def repeat_steps(sim, rep, t: float, now: float, limit: float) -> float:
    """Simulation.run_ahead's loop over the replica's next decode steps while each is the step just run again: a
    static shape's step of the same rows (the same t) that finishes no request, for which the scheduler still
    chooses a plain decode step, and that ends before `limit` (before which nothing but the replica itself can
    change it: the run_ahead loop would run it there). Returns the clock after them (each step's end the previous
    end + t, as run_ahead sums them)."""
    n = rep.n_dec
    steps = rep.fin[0][0] - rep.step - 1  # the next steps that finish none
    if sim.plain is plain_continuous:
        # plain_continuous: the KV cache holds one more token a sequence, and no waiting prompt may join: it is
        # blocked (a full batch, or its KV does not fit: both hold while the cache only grows), or TGI's router
        # declines until max_waiting_tokens steps have passed since the last group joined
        steps = min(steps, (sim.cap - rep.pre_kv - rep.ctx_sum) // n)
        if rep.waiting and not sim.blocked(rep):
            if not schedulers._router_declines(sim, rep):
                return now
            steps = min(steps, sim.config.max_waiting_tokens + rep.joined_step - rep.step - 1)
    start, done = now, 0
    while done < steps:
        end = now + t
        if end >= limit:
            break
        now = end
        done += 1
    if not done:
        return now
    ticks = sim.ticks + done
    if ticks // CHECK_EVERY != sim.ticks // CHECK_EVERY:  # tick() would look at the work on the way: at most
        rep.iterations += done  # this much; past the budget, the steps go one at a time (run_ahead), so that
        over = sim.work() > sim.work_cap  # the run stops where it would (the work only grows)
        rep.iterations -= done
        if over:
            return start
    rep.iterations += done
    sim.ticks = ticks
    rep.step += done
    rep.ctx_sum += n * done
    return now
