"""Serving from Python: infer (one batch, per-operator roofline) and serve (discrete-event simulation).

Durations take numbers of seconds or strings (`slo_ttft="2s"`, `slo_tpot="50ms"`, `duration="10min"`);
token lengths take N, "uniform:LO:HI" or "lognormal:MEAN:SIGMA" where the command line does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import catalog
from ..cost import calibrations
from ..cost import inference as inf
from ..cost.inference.speculation import speculation
from ..simulate.serving.interval import RATES
from ..errors import FlopcastError
from ..frame import Tabular
from ..limits import check
from ..simulate import serving as S
from . import args
from .args import python_errors


def deployment(model, hardware, *, chips=None, tp=None, threads=None, weights=None, kv_dtype=None,
               calibration=None, speculative=None, spec_tokens=None, acceptance=None, ep=None,
               pp=None) -> inf.Deployment:
    """The deployment of `model` on `hardware` (names, files or catalog objects); `calibration`: a serving
    calibration file `calibrate` wrote, instead of the shipped one; `speculative` (draft, eagle, medusa, mtp)
    with `spec_tokens` k and `acceptance` alpha (defaults per method, cost/inference/speculation.py); `ep`: 1, or
    `tp` to split a MoE model's experts over the replica's chips with data-parallel attention."""
    m = model if not isinstance(model, str) else catalog.load_model(model)
    s = hardware if not isinstance(hardware, str) else catalog.system_for(hardware)
    spec = speculation(speculative, spec_tokens, acceptance)
    return inf.deployment(m, s, chips=chips, tp=tp, threads=threads, weights=weights, kv_dtype=kv_dtype,
                          inference_calibration=calibrations.serving(calibration), speculation=spec,
                          ep=check("ep", ep), pp=check("pp", pp))


def assumptions(d: inf.Deployment, calibration=None) -> list[str]:
    """What a forecast of `d` assumes: the deployment's own notes, the calibration basis and the price rule."""
    out = list(d.assumptions)
    table = calibrations.serving(calibration)
    if d.is_cpu and d.system.chip.id not in ("graviton3", "graviton3e"):
        out += inf.graviton4_assumptions(d)
    elif d.family in table:
        out.append(f"efficiencies of engine family {d.family} from the calibration file {calibration}" if calibration
                   else inf.calibration_basis(d))
    if d.system.price_per_hour is None:
        out.append(f"no price known for {d.system.id}: cost not shown")
    elif d.chips * d.replicas != d.system.chips_per_node:
        out.append(f"cost: {d.system.id}'s price pro rata to the {d.chips * d.replicas} of its "
                   f"{d.system.chips_per_node} chips in use (a smaller instance of the family may rent them whole)")
    return out


@dataclass(frozen=True)
class InferResult(Tabular):
    """One batch of requests on one deployment: `prediction` (cost.inference.InferenceResult) and notes."""

    deployment: inf.Deployment
    prediction: object
    assumptions: tuple
    input_tokens: int
    output_tokens: int

    def to_dict(self) -> dict:
        return {**self.prediction.to_dict(), "assumptions": list(self.assumptions)}


@python_errors
def infer(model, hardware, *, chips: int | None = None, tp: int | None = None, threads: int | None = None,
          weights: str | None = None, kv_dtype: str | None = None, batch: int = 1, input_tokens: int = 512,
          output_tokens: int = 128, calibration=None, speculative=None, spec_tokens=None,
          acceptance=None, ep: int | None = None, pp: int | None = None, prefix_tokens: int = 0) -> InferResult:
    """Latency, throughput, memory and cost of one batch of requests (per-operator roofline).

    prefix_tokens: prefix caching, tokens at the start of every prompt shared and already cached.

    >>> r = flopcast.infer("llama3-8b", "p5.48xlarge", chips=1, batch=8)
    >>> r.prediction.ttft_s > 0 and r.prediction.fits
    True
    """
    chips, tp, threads = check("chips", chips), check("tp", tp), check("threads", threads)
    batch, input_tokens = args.bounded("max_batch", batch, "batch"), check("input_tokens", input_tokens)
    output_tokens = check("output_tokens", output_tokens)
    d = deployment(model, hardware, chips=chips, tp=tp, threads=threads, weights=weights, kv_dtype=kv_dtype,
                   calibration=calibration, speculative=speculative, spec_tokens=spec_tokens, acceptance=acceptance,
                   ep=ep, pp=pp)
    r = inf.predict(d, batch, input_tokens, output_tokens, _prefix(prefix_tokens))
    notes = assumptions(d, calibration) + [a for a in r.assumptions if a not in d.assumptions]
    if r.interval is not None:
        notes.append(f"{r.interval.label} prediction interval of a {r.interval.kind} forecast from "
                     f"{r.interval.residuals} leave-one-source-out errors (uncertainty.yaml)")
    return InferResult(d, r, tuple(notes), input_tokens, output_tokens)


def config(*, scheduler="continuous", replicas: int = 1, router="least-loaded", slo_ttft="1s",
           slo_tpot="50ms", prefix_tokens: int = 0) -> S.ServingConfig:
    """A serving configuration from names and durations (`slo_ttft="2s"` or 2.0)."""
    return S.ServingConfig(scheduler=S.parse_choice(S.Scheduler, scheduler, "`scheduler`"), replicas=replicas,
                           routing=S.parse_choice(S.Routing, router, "`router`"),
                           slo_ttft_s=args.duration(slo_ttft, "slo_ttft", "1s, 500ms or 50ms"),
                           slo_tpot_s=args.duration(slo_tpot, "slo_tpot", "1s, 500ms or 50ms"),
                           prefix_tokens=_prefix(prefix_tokens))


def _prefix(n) -> int:
    if n is None:
        return 0
    if not isinstance(n, int) or n < 0:
        raise FlopcastError(f"`prefix_tokens` must be a whole number of tokens >= 0, got {n}")
    return n


@dataclass(frozen=True)
class ServeResult(Tabular):
    """A simulated serving run: `result` (simulate.serving.ServingResult) at `qps`, and its settings."""

    deployment: inf.Deployment
    config: S.ServingConfig
    result: object
    qps: float | None
    capacity_qps: float | None
    assumptions: tuple
    requests: int | None
    input_tokens: str
    output_tokens: str
    seed: int
    interval: object = None  # cost.uncertainty.Interval of this kind of serving forecast
    bounds: dict = field(default_factory=dict)  # simulate.serving.interval_bounds: each end simulated
    disaggregated: object = None  # simulate.serving.Disaggregated (prefill and decode pools), or None

    def to_dict(self) -> dict:
        d, cfg = self.deployment, self.config
        out = S.with_interval(self.result.to_dict(), self.bounds, self.interval)
        out.update({"model": d.model.label, "hardware": d.system.id, "tp": d.tp, "pp": d.pp, "ep": d.ep,
                    "replicas": cfg.replicas,
                    "scheduler": cfg.scheduler.value, "qps": self.qps, "slo_ttft_s": cfg.slo_ttft_s,
                    "slo_tpot_s": cfg.slo_tpot_s, "capacity_qps": self.capacity_qps,
                    "disaggregated": None if self.disaggregated is None else self.disaggregated.to_dict(),
                    "assumptions": list(self.assumptions)})
        if self.bounds.get("capacity_qps"):
            out["capacity_qps_low"], out["capacity_qps_high"] = self.bounds["capacity_qps"]
        return out

    @property
    def target(self):
        """What was simulated: the Disaggregated pools, or the deployment (config.replicas of it)."""
        return self.disaggregated or self.deployment


def _requests(qps, n_requests, duration, trace, input_tokens, output_tokens, seed, notes) -> S.Requests:
    if trace:
        if qps is not None:
            raise FlopcastError("`trace` gives the arrivals; leave out `qps`")
        return S.read_trace(trace, notes)
    if qps is None:
        raise FlopcastError("`qps` is required (a positive request rate) unless `trace` or `find_capacity` is given")
    dur = args.duration(duration, "duration", "60s or 10min") if duration else None
    if n_requests is not None and n_requests < 1:
        raise FlopcastError(f"`requests` must be at least 1, got {n_requests}")
    return S.poisson_requests(qps, np.random.default_rng(seed), n=None if dur else (n_requests or 500),
                              duration_s=dur, input_tokens=input_tokens, output_tokens=output_tokens)


@python_errors
def serve(model, hardware, *, chips: int | None = None, tp: int | None = None, threads: int | None = None,
          weights: str | None = None, kv_dtype: str | None = None, qps: float | None = None,
          requests: int | None = None, duration=None, input_tokens="512", output_tokens="128", trace=None,
          scheduler="continuous", slo_ttft="1s", slo_tpot="50ms", seed: int = 0, replicas: int = 1,
          router="least-loaded", find_capacity: bool = False, calibration=None, speculative=None,
          spec_tokens=None, acceptance=None, prefix_tokens: int = 0, disaggregate=None, prefill_tp: int | None = None,
          decode_tp: int | None = None, ep: int | None = None, pp: int | None = None) -> ServeResult:
    """Discrete-event simulation of serving: TTFT/TPOT/latency percentiles, throughput, SLO attainment, cost.

    Poisson arrivals at `qps` (`requests` of them, or for `duration`), a `trace` CSV, or with
    `find_capacity=True` the highest rate at which 90% of requests meet both SLOs. `calibration`: a serving
    calibration file `calibrate` wrote, instead of the shipped one. `disaggregate="PxD"`: P prefill and D decode
    replicas apart (each of `prefill_tp` / `decode_tp` chips, default `tp`), the KV cache sent between them
    (simulate/serving/disagg.py).

    >>> s = flopcast.serve("llama3-8b", "p5.48xlarge", chips=1, qps=5, requests=50, slo_ttft="2s")
    >>> s.result.completed, s.config.slo_ttft_s
    (50, 2.0)
    """
    chips, tp, threads, qps = check("chips", chips), check("tp", tp), check("threads", threads), check("qps", qps)
    requests, seed, replicas = check("requests", requests), check("seed", seed), check("replicas", replicas)
    kw = dict(threads=threads, weights=weights, kv_dtype=kv_dtype, calibration=calibration, speculative=speculative,
              spec_tokens=spec_tokens, acceptance=acceptance, ep=ep, pp=pp)
    pd = None
    if disaggregate is not None:
        pd = _pools(model, hardware, disaggregate, chips, tp, check("tp", prefill_tp, label="`prefill_tp`"),
                    check("tp", decode_tp, label="`decode_tp`"), replicas, kw)
        d = pd.prefill
    else:
        if prefill_tp is not None or decode_tp is not None:
            raise FlopcastError("`prefill_tp` and `decode_tp` size the pools of a disaggregated deployment; give "
                                "`disaggregate` (e.g. \"1x1\") too")
        d = deployment(model, hardware, chips=chips, tp=tp, **kw)
    target = pd or d
    cfg = config(scheduler=scheduler, replicas=replicas, router=router, slo_ttft=slo_ttft, slo_tpot=slo_tpot,
                 prefix_tokens=prefix_tokens)
    if requests is not None and duration is not None:
        raise FlopcastError("give either `requests` or `duration`, not both")
    notes = [a for a in assumptions(d, calibration) if pd is None or not a.startswith("cost:")]
    notes += [] if pd is None else _pool_notes(pd, input_tokens)
    capacity = None
    if find_capacity:
        if qps is not None:
            raise FlopcastError("`find_capacity` searches the request rate; leave out `qps`")
        if trace:
            raise FlopcastError("`find_capacity` draws Poisson arrivals; leave out `trace`")
        if requests is not None and requests < 10:
            raise FlopcastError(f"`requests` must be at least 10 with `find_capacity`, got {requests}")
        budget = S.WorkBudget(S.CAPACITY_WORK)
        capacity, res = S.find_capacity(target, cfg, requests=requests or 400, input_tokens=input_tokens,
                                        output_tokens=output_tokens, seed=seed, budget=budget)
        if res is None and budget.cut:
            raise FlopcastError(f"the capacity search's work budget ({budget.total:,.0f} simulated units) ran out "
                                "before any rate was verified; use tighter `slo_ttft`/`slo_tpot` or simulate one `qps`")
        if res is None:
            raise FlopcastError("no request rate meets the SLOs (even the lowest tried); relax `slo_ttft`/`slo_tpot`")
        if budget.cut:
            notes.append(f"the work budget ({budget.total:,.0f} simulated units) cut the capacity search: "
                         f"{capacity:,.3g} req/s is the highest rate verified, a lower bound on the capacity")
        qps = capacity
    else:
        reqs = _requests(qps, requests, duration, trace, input_tokens, output_tokens, seed, notes)
        budget = S.WorkBudget(S.RUN_WORK)  # the run and both ends of its interval together
        res = _bounded(lambda: S.simulate_any(target, reqs, cfg, seed=seed, budget=budget), len(reqs))
    interval = inf.deployment_interval(d)
    # each end of the interval is its own run of the same requests (queues are not linear in speed)
    if capacity is not None:
        b, how = _capacity_ends(target, cfg, interval, requests or 400, input_tokens, output_tokens, seed, capacity,
                                res)
    else:
        b = _bounded(lambda: S.interval_bounds(target, reqs, cfg, interval, seed, budget=budget, center=res), len(reqs))
        how = ", each end simulated with the same requests"
    if interval is not None:
        notes.append(f"{interval.label} prediction interval of a {interval.kind} forecast from {interval.residuals} "
                     "leave-one-source-out errors (uncertainty.yaml)" + how)
    return ServeResult(d, cfg, res, qps, capacity, tuple(notes), requests, input_tokens, output_tokens, seed,
                       interval, b, pd)


CAPACITY_END_WORK = S.CAPACITY_WORK // 4  # each end's capacity search (the middle one has S.CAPACITY_WORK)


def _capacity_ends(target, cfg, interval, requests, input_tokens, output_tokens, seed, q, res) -> tuple[dict, str]:
    """({key: (low, high)}, note): the capacity found again at each end's engine speed (queues and the TPOT target
    are not linear in speed) and the rates at each end's capacity; ({}, why) when an end's work budget ran out."""
    if interval is None:
        return {}, ""
    ends = []
    for speed in (interval.low, interval.high):
        budget = S.WorkBudget(CAPACITY_END_WORK)
        c, r = S.find_capacity(target, cfg, requests=requests, input_tokens=input_tokens, output_tokens=output_tokens,
                               seed=seed, budget=budget, speed=speed, start_qps=max(q * speed, 1e-3))
        if budget.cut or r is None:
            return {}, f"; unavailable at the capacity found: the search at x{speed:.2f} engine speed " + (
                "ran out of its work budget" if budget.cut else "met the SLOs at no rate")
        ends.append((c, r.to_dict()))
    mid = {"capacity_qps": q, **res.to_dict()}
    out = {}
    for k in ("capacity_qps",) + tuple(r for r in RATES if r != "slo_attainment"):
        vals = [e[1].get(k) if k != "capacity_qps" else e[0] for e in ends] + [mid.get(k)]
        if all(isinstance(v, (int, float)) for v in vals):  # the point itself inside the span
            out[k] = (min(vals), max(vals))
    return out, ", its capacity found again at each end's engine speed"


def _bounded(run, n: int):
    """run(), or one line saying the run and its interval's ends passed the work limit (S.RUN_WORK)."""
    try:
        return run()
    except S.BudgetSpent:
        raise FlopcastError(S.work_limit(f"simulating {n:,} requests three times (the run and both ends of its "
                                         "prediction interval)")) from None


def _pools(model, hardware, split, chips, tp, prefill_tp, decode_tp, replicas, kw) -> S.Disaggregated:
    """The prefill and decode pools of `split` ("PxD"); each replica's TP defaults to `tp`, else to the largest
    power of two whose P + D replicas fit in one instance."""
    p, n = S.parse_split(split)
    if chips is not None:
        raise FlopcastError("`chips` sizes a colocated deployment; with `disaggregate` the chips are P x prefill_tp + "
                            "D x decode_tp")
    if replicas != 1:
        raise FlopcastError("`replicas` counts colocated replicas; with `disaggregate` give the pools' sizes as PxD")
    s = hardware if not isinstance(hardware, str) else catalog.system_for(hardware)
    base = tp or max(1, 2 ** int(np.log2(max(1, s.chips_per_node // (p + n)))))
    pre = deployment(model, s, chips=prefill_tp or base, tp=prefill_tp or base, **kw)
    dec = deployment(model, s, chips=decode_tp or base, tp=decode_tp or base, **kw)
    return S.disaggregated(pre, dec, p, n)


def _pool_notes(pd: S.Disaggregated, input_tokens) -> list[str]:
    link = pd.link
    n = S.median_length(input_tokens, np.random.default_rng(0), "`input_tokens`")
    return [f"disaggregated {pd.label} ({pd.chips} chips, {pd.placement.value}): each request's KV cache "
            f"({n:,.0f}-token prompt: "
            f"{n * inf.kv_bytes_per_token(pd.prefill.model, pd.prefill.kv_bytes) / 1e6:,.1f} MB) crosses "
            f"{link.tier} on {link.lanes} lane(s) in {S.disagg.transfer_mean_s(pd, n) * 1e3:.2f} ms after its "
            "prefill (DistServe, Zhong et al. 2024; Splitwise, Patel et al. 2024); decode replicas only decode"] + (
        [f"cost: {pd.prefill.system.id}'s price pro rata to the {pd.chips} of its {pd.prefill.system.chips_per_node} "
         "chips of both pools"] if pd.chips != pd.prefill.system.chips_per_node else [])
