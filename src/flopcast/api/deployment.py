"""deploy: the cheapest way to serve a model on each system at the SLOs (plan/deploy.py searches)."""

from __future__ import annotations

from dataclasses import dataclass

from .. import catalog
from ..cost import calibrations
from ..cost import inference as inf
from ..errors import FlopcastError
from ..frame import Tabular, flatten
from ..model.workload import Model
from ..plan import deploy as D
from ..plan import deploy_interval as ends
from ..plan import forecast
from ..simulate import serving as S
from . import args
from .args import python_errors
from .serving import config


def _point(p) -> dict | None:
    return None if p is None else p.to_dict()


def outcome_dict(o: D.DeployOutcome) -> dict:
    """One system's search as JSON: the best deployment, the one-replica baseline, the Pareto front."""
    best, base = o.best, o.baseline
    whole = o.verified is not None and best is not None
    saving = None
    if best and base and best.cost_per_million_output_tokens_usd and base.cost_per_million_output_tokens_usd:
        saving = 1.0 - best.cost_per_million_output_tokens_usd / base.cost_per_million_output_tokens_usd
    return {"system": o.system.id, "chips_per_instance": o.system.chips_per_node,
            "price_per_hour_usd": o.system.price_per_hour, "ranked_by": (
                "cost_per_million_output_tokens_usd" if o.system.price_per_hour is not None
                else "chip_hours_per_million_output_tokens"),
            "best": None if best is None else ends.with_ends(best.to_dict(), o.bounds),
            "interval": None if o.interval is None or not o.bounds else o.interval.to_dict(),
            "interval_unavailable": o.interval_note or None if best is not None else None,
            "baseline_one_replica_per_instance": _point(base),
            "cost_saving_vs_baseline": saving, "pareto": [p.to_dict() for p in o.pareto],
            "verified_instance": None if not whole else {
                "replicas": best.candidate.replicas_per_instance, "qps": o.best.qps,
                "slo_attainment": o.verified.slo_attainment, "ttft_s": o.verified.ttft_s, "tpot_s": o.verified.tpot_s,
                "requests": o.verified.requests},
            "simulated": [p.to_dict() for p in o.simulated], "candidates": o.considered,
            "pruned": dict(o.pruned), "budget": dict(o.budget) or None, "budget_note": o.budget_note or None,
            "not_simulated_ranked_on_roofline": o.unsimulated_dicts(),
            "error": o.reason or None}


@dataclass(frozen=True)
class DeployResult(Tabular):
    """The deployment search on each system: {system id: plan.deploy.DeployOutcome}."""

    model: Model
    config: S.ServingConfig
    input_tokens: str
    output_tokens: str
    qps: float | None
    systems: dict
    trace: str | None = None  # the trace whose request lengths the search drew (its lengths in input/output_tokens)

    @property
    def workload_label(self) -> str:
        if self.trace:
            return f"request lengths of {self.trace} ({len(self.input_tokens):,} requests)"
        return f"{self.input_tokens} in / {self.output_tokens} out tokens"

    def to_dict(self) -> dict:
        cfg = self.config
        tokens = (f"trace {self.trace}", f"trace {self.trace}") if self.trace else (self.input_tokens,
                                                                                    self.output_tokens)
        return {"workload": "deploy", "model": self.model.label, "slo_ttft_s": cfg.slo_ttft_s,
                "slo_tpot_s": cfg.slo_tpot_s, "slo_attainment_target": D.ATTAINMENT, "qps": self.qps,
                "input_tokens": tokens[0], "output_tokens": tokens[1], "trace": self.trace,
                "systems": {k: outcome_dict(v) for k, v in self.systems.items()}}

    def launches(self) -> dict:
        """{system id: emit.Launch} starting each system's best deployment (vLLM, or llama-server on CPUs)."""
        from ..emit.engines import disaggregated_serve, launch_for

        out = {}
        for sid, o in self.systems.items():
            if o.best is None:
                continue
            c = o.best.candidate
            if isinstance(o.best.deployment, S.Disaggregated):
                out[sid] = disaggregated_serve(o.best.deployment, units=c.replicas_per_instance, max_seqs=c.max_seqs,
                                               max_model_len=_model_len(self.input_tokens, self.output_tokens))
                continue
            d = inf.deployment(self.model, o.system, chips=c.tp * c.pp, tp=c.tp, weights=c.weights,
                               kv_dtype=c.kv_dtype, ep=c.ep, pp=c.pp)
            out[sid] = launch_for(d, replicas=max(c.replicas_per_instance, 1), max_seqs=c.max_seqs,
                                  max_model_len=_model_len(self.input_tokens, self.output_tokens))
        return out

    def rows(self) -> list[dict]:
        out = []
        for sid, o in self.systems.items():
            best = o.best
            for p in o.simulated:
                out.append({"system": sid, "best": p is best, "pareto": p in o.pareto, **flatten(p.to_dict())})
        return out


def _model_len(input_tokens, output_tokens) -> int:
    """Longest request of the workload (prompt + output), rounded up to a multiple of 256."""
    import numpy as np

    rng = np.random.default_rng(0)
    n = int(max(S.lengths(input_tokens, 256, rng, "--input-tokens")) + max(S.lengths(output_tokens, 256, rng,
                                                                                         "--output-tokens")))
    return -(-n // 256) * 256


def _formats(text, what, check):
    if text is None:
        return None
    names = args.names(text, what) if isinstance(text, str) else list(text)
    for n in names:
        check(n)
    return tuple(names)


@python_errors
def deploy(model, hardware, *, slo_ttft="2s", slo_tpot="50ms", qps: float | None = None, input_tokens=None,
           output_tokens=None, weights=None, kv_dtype=None, requests: int = 300, seed: int = 0,
           calibration=None, progress=None, disaggregate: bool = True, trace=None) -> DeployResult:
    """For each system of `hardware`, search replicas x TP x weight/KV format x max batch, prune with the
    roofline, simulate the candidates worth it, and rank by cost per million output tokens at the SLOs.
    `calibration`: a serving calibration file `calibrate` wrote, instead of the shipped one. `disaggregate`: consider
    prefill and decode pools apart (xPyD units within an instance) too. `trace`: a CSV (arrival_s, input_tokens,
    output_tokens) whose request lengths the capacity runs draw from (instead of `input_tokens` / `output_tokens`;
    the arrivals stay Poisson at each rate tried).

    >>> r = flopcast.deploy("llama3-8b", "p5.48xlarge", weights="bf16", kv_dtype="bf16")
    >>> r.systems["p5.48xlarge"].best.candidate.replicas_per_instance > 1
    True
    """
    if qps is not None and not qps > 0:
        raise FlopcastError(f"`qps` must be a positive request rate, got {qps}")
    if requests < 10:
        raise FlopcastError(f"`requests` must be at least 10, got {requests}")
    input_tokens, output_tokens = _lengths(trace, input_tokens, output_tokens)
    ws = _formats(weights, "weights", inf.weight_format)
    kvs = _formats(kv_dtype, "kv_dtype", inf.kv_element_bytes)
    m = model if isinstance(model, Model) else catalog.load_model(model)
    systems = [forecast.resolve_system(h) for h in
               (args.names(hardware, "hardware") if isinstance(hardware, (str, list, tuple)) else [hardware])]
    cfg = config(slo_ttft=slo_ttft, slo_tpot=slo_tpot)
    table = calibrations.serving(calibration)
    out = {}
    # one work budget over all the systems (bounded time for any input), each system a share of what is left
    budget = S.WorkBudget(D.DEPLOY_WORK * min(len(systems), D.DEPLOY_SYSTEMS))
    for i, s in enumerate(systems):
        if progress is not None:
            progress.note(f"deploying {m.label} on {s.id}")
        out[s.id] = D.deploy(m, s, cfg, input_tokens=input_tokens, output_tokens=output_tokens, qps=qps,
                             weights=ws, kv_dtypes=kvs, requests=requests, seed=seed, progress=progress,
                             inference_calibration=table, disaggregate=bool(disaggregate),
                             budget=budget.part(len(systems) - i))
    return DeployResult(m, cfg, input_tokens, output_tokens, qps, out, None if trace is None else str(trace))


def _lengths(trace, input_tokens, output_tokens) -> tuple:
    """The request lengths: a trace's (as sequences), else the given ones (default 512 in, 128 out)."""
    if trace is None:
        return input_tokens or "512", output_tokens or "128"
    if input_tokens is not None or output_tokens is not None:
        raise FlopcastError("`trace` gives the request lengths; leave out `input_tokens` and `output_tokens`")
    reqs = S.read_trace(trace, [])
    return tuple(int(x) for x in reqs.input_tokens), tuple(int(x) for x in reqs.output_tokens)
