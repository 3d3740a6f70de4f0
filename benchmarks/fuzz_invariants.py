"""The invariants the fuzz campaign (benchmarks/fuzz_campaign.py) asserts on every JSON result, beyond strict JSON and
the signs of times and costs: each holds by construction, so a run that breaks one printed a wrong number.

    interval      value_low <= value <= value_high (a number, or each percentile of a dict of them)
    breakdowns    time_breakdown_s sums to step_time_s, memory_breakdown_gib to memory_gib, cost_breakdown_usd to
                  cost_usd, energy_breakdown_kwh to energy_kwh
    fits          fits implies memory_gib <= memory_capacity_gib
    identities    tokens_per_s x time_to_train_s = tokens; tokens_per_s_per_chip x chips = tokens_per_s;
                  chip_hours = chips x time_to_train_s / 3600 (instance_hours: instances); days = seconds / 86,400;
                  hfu >= mfu; expected_time_to_train_s >= time_to_train_s; 0 <= goodput <= 1
    serving       p50 <= p90 <= p99 of each latency; ttft and tpot <= e2e at every percentile and the mean (each
                  request's first token comes before its last); prefill_s <= ttft_s <= e2e_latency_s of one batch;
                  completed + rejected <= requests; output tokens <= total tokens per second; cost per million
                  tokens <= per million output tokens; 0 <= attainment <= 1

`violation(data)` is the first broken one, named with where it is, or None.
"""

from __future__ import annotations

import math

REL = 1e-6  # float noise: sums of a dozen parts, products of two factors
PERCENTILES = ("p50", "p90", "p99")
SUMS = {"time_breakdown_s": "step_time_s", "memory_breakdown_gib": "memory_gib", "cost_breakdown_usd": "cost_usd",
        "energy_breakdown_kwh": "energy_kwh"}
LATENCIES = ("ttft_s", "tpot_s", "e2e_s")


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _close(a: float, b: float, rel: float = REL) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-9)


def _le(a: float, b: float, rel: float = REL) -> bool:
    return a <= b + rel * max(abs(a), abs(b)) + 1e-12


def _intervals(d: dict) -> str | None:
    for k, v in d.items():
        low, high = d.get(f"{k}_low"), d.get(f"{k}_high")
        if _num(v) and _num(low) and _num(high) and not (_le(low, v) and _le(v, high)):
            return f"{k}: {low} <= {v} <= {high} does not hold"
        if isinstance(v, dict) and isinstance(low, dict) and isinstance(high, dict):
            for p, x in v.items():
                lo, hi = low.get(p), high.get(p)
                if _num(x) and _num(lo) and _num(hi) and not (_le(lo, x) and _le(x, hi)):
                    return f"{k}.{p}: {lo} <= {x} <= {hi} does not hold"
    return None


def _sums(d: dict) -> str | None:
    for parts, total in SUMS.items():
        p, t = d.get(parts), d.get(total)
        if isinstance(p, dict) and p and _num(t) and all(_num(x) for x in p.values()):
            if not _close(sum(p.values()), t):
                return f"{parts} sums to {sum(p.values())}, {total} is {t}"
    if d.get("fits") is True and _num(d.get("memory_gib")) and _num(d.get("memory_capacity_gib")):
        if not _le(d["memory_gib"], d["memory_capacity_gib"]):
            return f"fits, but memory_gib {d['memory_gib']} > memory_capacity_gib {d['memory_capacity_gib']}"
    return None


def _training(d: dict) -> str | None:
    g = {k: v for k, v in d.items() if _num(v)}
    if {"tokens", "tokens_per_s", "time_to_train_s"} <= set(g) and g["tokens_per_s"] > 0:
        if not _close(g["tokens_per_s"] * g["time_to_train_s"], g["tokens"], 1e-4):
            return f"tokens_per_s {g['tokens_per_s']} x time_to_train_s {g['time_to_train_s']} != tokens {g['tokens']}"
    if {"tokens_per_s", "tokens_per_s_per_chip", "chips"} <= set(g):  # per chip of the cluster, idle ones too
        if not _close(g["tokens_per_s_per_chip"] * g["chips"], g["tokens_per_s"], 1e-4):
            return (f"tokens_per_s_per_chip {g['tokens_per_s_per_chip']} x chips {g['chips']} != "
                    f"tokens_per_s {g['tokens_per_s']}")
    for hours, count in (("chip_hours", "chips"), ("instance_hours", "instances")):
        if {hours, count, "time_to_train_s"} <= set(g) and not _close(g[hours], g[count] * g["time_to_train_s"] / 3600,
                                                                         1e-4):
            return f"{hours} {g[hours]} != {count} {g[count]} x time_to_train_s {g['time_to_train_s']} / 3600"
    for stem in ("time_to_train", "expected_time_to_train"):
        s, days = g.get(f"{stem}_s"), g.get(f"{stem}_days")
        if s is not None and days is not None and not _close(days, s / 86400):
            return f"{stem}_days {days} != {stem}_s {s} / 86,400"
    if "hfu" in g and "mfu" in g and not _le(g["mfu"], g["hfu"]):
        return f"mfu {g['mfu']} > hfu {g['hfu']}"
    if "expected_time_to_train_s" in g and "time_to_train_s" in g:
        if not _le(g["time_to_train_s"], g["expected_time_to_train_s"]):
            return f"expected_time_to_train_s {g['expected_time_to_train_s']} < time_to_train_s {g['time_to_train_s']}"
    if "goodput" in g and not 0 <= g["goodput"] <= 1 + REL:  # 0: a run that never finishes
        return f"goodput {g['goodput']} outside [0, 1]"
    return None


def _serving(d: dict) -> str | None:
    for name in LATENCIES:
        q = d.get(name)
        if isinstance(q, dict):
            vals = [q.get(p) for p in PERCENTILES]
            if all(_num(v) for v in vals) and not all(_le(a, b) for a, b in zip(vals, vals[1:])):
                return f"{name} percentiles out of order: {dict(zip(PERCENTILES, vals))}"
    e2e = d.get("e2e_s")
    for name in ("ttft_s", "tpot_s"):
        q = d.get(name)
        if isinstance(q, dict) and isinstance(e2e, dict):
            for p in PERCENTILES + ("mean",):
                if _num(q.get(p)) and _num(e2e.get(p)) and not _le(q[p], e2e[p]):
                    return f"{name}.{p} {q[p]} > e2e_s.{p} {e2e[p]}"
    g = {k: v for k, v in d.items() if _num(v)}
    for first, later in (("prefill_s", "ttft_s"), ("ttft_s", "e2e_latency_s"), ("tpot_s", "e2e_latency_s")):
        if first in g and later in g and not _le(g[first], g[later]):  # one batch (infer): in the order they come
            return f"{first} {g[first]} > {later} {g[later]}"
    if {"requests", "completed", "rejected"} <= set(g) and g["completed"] + g["rejected"] > g["requests"]:
        return f"completed {g['completed']} + rejected {g['rejected']} > requests {g['requests']}"
    pairs = (("output_tokens_per_s", "total_tokens_per_s"),
             ("cost_per_million_tokens_usd", "cost_per_million_output_tokens_usd"))
    for small, big in pairs:
        if small in g and big in g and not _le(g[small], g[big]):
            return f"{small} {g[small]} > {big} {g[big]}"
    if "slo_attainment" in g and not -REL <= g["slo_attainment"] <= 1 + REL:
        return f"slo_attainment {g['slo_attainment']} outside [0, 1]"
    return None


CHECKS = (_intervals, _sums, _training, _serving)


def violation(data, where: str = "") -> str | None:
    """The first invariant a JSON document breaks (in any object nested in it), with its path; None if none."""
    stack = [(where, data)]
    while stack:
        path, o = stack.pop()
        if isinstance(o, dict):
            for check in CHECKS:
                bad = check(o)
                if bad:
                    return f"{path or '.'}: {bad}"
            stack.extend((f"{path}.{k}", v) for k, v in o.items())
        elif isinstance(o, list):
            stack.extend((f"{path}[{i}]", v) for i, v in enumerate(o))
    return None
