"""Batching schedulers: what a replica's next iteration (one forward pass) carries.

- static: a batch is admitted only when the previous one has finished; KV for
  prompt + output is reserved up front (no preemption) (the pre-Orca baseline).
- continuous: iteration-level scheduling (Yu et al. 2022, Orca, OSDI sec. 4.2) as
  vLLM v0 does it: waiting prompts are prefilled in their own iteration whenever
  they fit, otherwise all running sequences decode one token; when the KV cache
  cannot grow, the most recently admitted sequence is preempted and recomputed
  later (Kwon et al. 2023, vLLM/PagedAttention, sec. 4.5).
  With a waiting_served_ratio (TGI's router, ServingConfig), waiting prompts join a running batch only in
  groups (_may_join).
- chunked-prefill: Sarathi-Serve (Agrawal et al. 2024, OSDI, sec. 4): every
  iteration carries all decodes plus prompt chunks up to a token budget.

Each policy takes the simulation (simulation.Simulation), an idle replica and the time, and
returns the iteration's end event, or () when there is nothing to run.
"""

from __future__ import annotations

from functools import partial

from .config import Scheduler


def static_iteration(sim, rep, now: float):
    """A new batch only when the last one has drained; its output KV reserved up front."""
    if rep.n_dec > 0:
        return _decode(sim, rep, now)
    return _prefill(sim, rep, now, reserve_output=True) or _decode(sim, rep, now)


def continuous_iteration(sim, rep, now: float):
    """Prefill waiting prompts that fit (when the router lets them join), else one decode step of every running
    sequence (vLLM v0)."""
    if sim.config.waiting_served_ratio > 0 and not _may_join(sim, rep):
        started = ()
    else:
        started = _prefill(sim, rep, now, reserve_output=False)
    if not started and rep.joining:
        rep.joining = 0  # the group's rest does not fit now: it waits for the router's next offer
    if started or rep.n_dec == 0:
        return started
    sim.make_room(rep)
    return _decode(sim, rep, now)


def chunked_iteration(sim, rep, now: float):
    """All decodes plus prompt chunks up to the token budget (Sarathi-Serve)."""
    sim.make_room(rep)
    left = sim.budget - rep.n_dec
    chunks = _continued_chunks(sim, rep, left)  # (entry, tokens before, chunk tokens)
    chunks += _new_chunks(sim, rep, left - sum(c for _, _, c in chunks))
    tokens = rep.n_dec + sum(c for _, _, c in chunks)
    if tokens == 0:
        return ()
    pairs = kv = float(rep.win_sum if sim.static_shapes else rep.ctx_sum + rep.cached_sum)
    cached = sim.cached
    for entry, got, c in chunks:
        pairs += c * (cached[entry[0]] + got + (c + 1) / 2.0)
        kv += cached[entry[0]] + got + c
    prompt = sim.prompt
    seqs = rep.n_dec + sum(1 for entry, got, c in chunks if got + c >= prompt[entry[0]])
    return sim.launch(rep, now + sim.ct(tokens, seqs, kv, pairs), partial(sim.end_chunked, rep, chunks))


def _may_join(sim, rep) -> bool:
    """Whether waiting prompts may be prefilled now. Without a waiting_served_ratio, always (vLLM). TGI's router
    (backends/v2/src/backend.rs `batching_task`): an idle replica takes a batch at once; with one running, the queue
    offers a group only if at least floor(running x waiting_served_ratio) requests can join, or once
    max_waiting_tokens decode steps have passed since the last join (`waiting_tokens`, 1 after a prefill, + 1
    per decode); the group is all that fit in the free slots, prefilled before the next decode."""
    ratio = sim.config.waiting_served_ratio
    if ratio <= 0 or rep.joining > 0:
        return True  # vLLM's rule, or the rest of a group already let in
    if not rep.waiting:
        return False
    can = min(len(rep.waiting), sim.max_seqs - rep.n_dec)
    waited = rep.step - rep.joined_step + 1
    if rep.n_dec and can < max(1, int(rep.n_dec * ratio)) and waited < sim.config.max_waiting_tokens:
        return False
    rep.joining = can
    return can > 0


def _router_declines(sim, rep) -> bool:
    """TGI's router offers no group now (what _may_join answers False for, with nothing to change): prompts wait,
    a batch runs, too few of them can join and too few decode steps have passed since the last join."""
    ratio = sim.config.waiting_served_ratio
    if ratio <= 0 or rep.joining > 0 or not rep.waiting or not rep.n_dec:
        return False
    can = min(len(rep.waiting), sim.max_seqs - rep.n_dec)
    return can < max(1, int(rep.n_dec * ratio)) and rep.step - rep.joined_step + 1 < sim.config.max_waiting_tokens


POLICIES = {Scheduler.STATIC: static_iteration, Scheduler.CONTINUOUS: continuous_iteration,
            Scheduler.CHUNKED: chunked_iteration}


def _prefill(sim, rep, now: float, *, reserve_output: bool):
    """An iteration prefilling the waiting prompts that fit, or () when none does."""
    if not rep.waiting:
        return ()
    rids, tokens, pairs = admit_prefill(sim, rep, sim.budget, reserve_output)
    if not rids:
        return ()
    if sim.static_seq_len:  # one prompt per context-encoding pass, padded to its bucket
        t = sim.prefill_times.get(tokens)
        if t is None:
            padded = sim.prefill_tokens(tokens)
            t = sim.prefill_times[tokens] = sim.iteration_time(padded, 1, padded, padded * (padded + 1) / 2.0)
    else:
        t = sim.iteration_time(tokens, len(rids), tokens, pairs)
    rep.pre_kv += tokens
    if rep.joining:  # a group the router let join: the rest of it follows; the step it joined at restarts the wait
        rep.joining = max(0, rep.joining - len(rids))
        rep.joined_step = rep.step
    return sim.launch(rep, now + t, partial(sim.end_prefill, rep, rids, tokens), 0)


def _decode(sim, rep, now: float):
    """One decode step of every running sequence, or () when none runs."""
    if rep.n_dec == 0:
        return ()
    # nothing else pending (a closed loop's lone replica): the steps up to the next finish, summed at once
    k = 1 if sim.spec is not None or sim.heap else sim.decode_run(rep)
    if k > 1:
        n, kv = sim.decode_shape(rep)
        growth = 0.0 if sim.static_shapes else float(rep.n_dec)
        rep.iterations += k - 1
        sim.summed += k - 1
        return sim.launch(rep, now + sim.cost.decode_run(n, kv, k, growth), partial(sim.end_decode, rep, steps=k), k)
    return sim.launch(rep, now + decode_step_s(sim, rep), partial(sim.end_decode, rep), 1)


def decode_step_s(sim, rep) -> float:
    """Seconds of one decode step of the replica's running sequences (rep.n_dec > 0)."""
    times = sim.step_times
    if times is not None:  # static shapes at a compiled sequence length: its rows alone (decode_shape)
        rows = rep.n_dec if rep.n_dec > sim.static_batch else sim.static_batch
        t = times.get(rows)
        if t is None:
            n, kv = sim.decode_shape(rep)
            t = times[rows] = sim.ct(n, n, kv, kv)
        return t
    n, kv = sim.decode_shape(rep)
    spec = sim.spec
    if spec is None:
        return sim.ct(n, n, kv, kv)
    # speculative: a step stands for 1/E of a verification pass (+ k drafter steps): its expected time per token
    m = n * (spec.k + 1)
    t = sim.iteration_time(m, m, kv, kv * (spec.k + 1)) + sim.spec_draft * sim.ct(n, n, kv, kv)
    return t / sim.spec_tokens


# A replica's next iteration, when it is nothing but one decode step of its running sequences (no prompt to admit,
# no chunk to run, no sequence to preempt, more steps not summed in closed form): its seconds; else None. Each
# answers for its scheduler exactly what that scheduler's policy would run (Simulation.run_ahead relies on it).

def plain_static(sim, rep):
    return decode_step_s(sim, rep) if rep.n_dec else None


def plain_continuous(sim, rep):
    n = rep.n_dec
    if not n or rep.joining or rep.ctx_sum + rep.pre_kv + n > sim.cap:
        return None  # (the policy itself ends a router's group, rep.joining, when no prompt is left to join)
    if rep.waiting and not sim.blocked(rep) and not _router_declines(sim, rep):
        return None
    if sim.live_plain:  # decode_step_s of live shapes without speculation, inlined (the hot path)
        kv = rep.ctx_sum + rep.cached_sum
        return sim.ct(n, n, kv, kv)
    return decode_step_s(sim, rep)


def plain_chunked(sim, rep):
    n = rep.n_dec
    if rep.waiting or rep.prefilling or not n or rep.ctx_sum + rep.pre_kv + n > sim.cap:
        return None
    kv = float(rep.win_sum if sim.static_shapes else rep.ctx_sum + rep.cached_sum)  # as chunked_iteration counts
    return sim.ct(n, n, kv, kv)


PLAIN_DECODE = {Scheduler.STATIC: plain_static, Scheduler.CONTINUOUS: plain_continuous,
                Scheduler.CHUNKED: plain_chunked}


def admit_prefill(sim, rep, limit_tokens: int, reserve_output: bool):
    """Pop waiting prompts that fit into this iteration, FCFS; returns (rids, tokens, pairs).

    A prompt longer than the per-iteration budget runs alone (timed beyond the table, on the fly)."""
    prompt, out, gen, cap = sim.prompt, sim.out, sim.gen, sim.cap
    rids, tokens, pairs = [], 0, 0.0
    used = rep.ctx_sum + rep.pre_kv
    most = 1 if sim.static_seq_len else sim.max_seqs  # a compiled context-encoding graph takes one prompt
    while rep.waiting and rep.n_dec + len(rids) < sim.max_seqs and len(rids) < most:
        r = rep.waiting[0]
        p = prompt[r]
        need = p + (out[r] - gen[r] if reserve_output else 0)
        if p > limit_tokens:
            if rids or p > cap:
                break
        elif tokens + p > limit_tokens:
            break
        if used + need > cap:
            break
        rep.waiting.popleft()
        rids.append(r)
        tokens += p
        # new tokens attend to the cached prefix too; without a fused causal kernel to all p keys (whole_square)
        pairs += (p * p if sim.d.whole_square else p * (p + 1) / 2.0) + p * sim.cached[r]
        used += need
    return rids, tokens, pairs


def _continued_chunks(sim, rep, left: int) -> list:
    """The next chunk of each partly prefilled prompt, in admission order, while budget is left."""
    chunks, prompt = [], sim.prompt
    for entry in rep.prefilling:
        if left <= 0:
            break
        r, got = entry
        c = min(prompt[r] - got, left)
        chunks.append((entry, got, c))
        left -= c
    return chunks


def _new_chunks(sim, rep, left: int) -> list:
    """Waiting prompts admitted while budget is left: KV reserved for the whole prompt, the first chunk run."""
    chunks, prompt, cap = [], sim.prompt, sim.cap
    used = rep.ctx_sum + rep.pre_kv
    while left > 0 and rep.waiting and rep.n_dec + len(rep.prefilling) < sim.max_seqs:
        r = rep.waiting[0]
        if used + prompt[r] > cap:
            break
        rep.waiting.popleft()
        entry = [r, 0]
        rep.prefilling.append(entry)
        used += prompt[r]
        rep.pre_kv += prompt[r]  # KV blocks reserved for the whole prompt
        c = min(prompt[r], left)
        chunks.append((entry, 0, c))
        left -= c
    return chunks
