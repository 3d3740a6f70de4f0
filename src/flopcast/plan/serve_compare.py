"""compare --serve: each system serving one model at the same SLOs, with its best deployment (plan/deploy.py) or the
one the user gave, at its capacity or a given rate."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import FlopcastError
from ..model.system import System
from ..model.workload import Model
from ..units import GiB


@dataclass(frozen=True)
class ServingPoint:
    """One system serving one model at the SLOs: its capacity and what a token costs there."""

    system: System
    deployment: object  # cost.inference.Deployment (its replicas), or a simulate.serving.Disaggregated (xPyD)
    qps: float  # the load simulated: capacity at the SLOs, or the user's rate
    capacity: bool  # qps was found by find_capacity
    result: object  # simulate.serving.ServingResult at qps
    budget_note: str = ""  # what the deployment search's work budget cut ("" when nothing)
    capacity_bounds: tuple | None = None  # (low, high) of qps: the capacity found again at each end of the interval
    interval: object = None  # cost.uncertainty.Interval of those ends

    @property
    def split(self):
        """The Disaggregated deployment, or None for a colocated one."""
        from ..simulate import serving as S

        return self.deployment if isinstance(self.deployment, S.Disaggregated) else None

    @property
    def replica(self):
        """The Deployment (the decode pool's for xPyD): model, formats, engine family, assumptions."""
        return self.deployment.decode if self.split else self.deployment

    @property
    def label(self) -> str:
        d = self.deployment
        if self.split:
            return (f"{d.prefill_replicas}P{d.decode_replicas}D TP{d.prefill.tp}/TP{d.decode.tp}, "
                    f"{d.decode.weights.name}")
        return f"{d.replicas} x TP{d.tp}, {d.weights.name}"

    @property
    def chips(self) -> int:
        d = self.deployment
        return d.chips if self.split else d.chips * d.replicas

    def to_dict(self) -> dict:
        d, r = self.deployment, self.replica
        out = {"system": self.system.id, "chips": self.chips, "tp": r.tp,
               "replicas": (d.prefill_replicas + d.decode_replicas) if self.split else d.replicas,
               "threads": r.threads or None, "weights": r.weights.name, "engine_family": r.family,
               "price_per_hour_usd": d.price_per_hour, "disaggregated": d.to_dict() if self.split else None,
               "budget_note": self.budget_note or None,
               ("capacity_qps" if self.capacity else "qps"): self.qps}
        out.update(self.result.to_dict())
        if self.capacity_bounds:  # at capacity the instances are fixed: tokens/s scale with the rate, cost inversely
            lo, hi = self.capacity_bounds
            out["capacity_qps_low"], out["capacity_qps_high"] = lo, hi
            for k in ("output_tokens_per_s", "total_tokens_per_s", "throughput_requests_per_s"):
                if out.get(k):
                    out[f"{k}_low"], out[f"{k}_high"] = out[k] * lo / self.qps, out[k] * hi / self.qps
            for k in ("cost_per_million_output_tokens_usd", "cost_per_million_tokens_usd"):
                if out.get(k):
                    out[f"{k}_low"], out[f"{k}_high"] = out[k] * self.qps / hi, out[k] * self.qps / lo
            out["interval"] = self.interval.to_dict()
        return out


def compare_serving(model: Model, systems: list[System], config, *, chips: int | None = None, tp: int | None = None,
                    weights: str | None = None, kv_dtype: str | None = None, qps: float | None = None,
                    requests: int = 400, input_tokens="512", output_tokens="128", seed: int = 0,
                    progress=None, inference_calibration: dict | None = None) -> dict:
    """Serve `model` on each system at the same SLOs: {system id: ServingPoint, or a string saying why not}.

    Without `chips`, `tp` and `qps`, each system serves with its best deployment (plan/deploy.py: replicas x TP
    in the given formats, the instance simulated whole at its replicas' capacity). Without `qps`, each system
    runs at its capacity: the highest Poisson request rate at which 90% of
    requests meet both SLOs (goodput as in DistServe, Zhong et al. 2024); its cost per million output
    tokens is the instance price over the output tokens it delivers at that rate. inference_calibration:
    engine family -> EngineEfficiency to serve with (None: the shipped calibration)."""
    from ..cost import inference as inf

    if weights is not None:
        inf.weight_format(weights)  # a misspelt format is the user's error, not one system's
    if kv_dtype is not None:
        inf.kv_element_bytes(kv_dtype)
    from ..simulate import serving as S
    from . import deploy as D

    out = {}
    if progress is not None:
        progress.add_total(len(systems))
    budget = S.WorkBudget(D.DEPLOY_WORK * min(len(systems), D.DEPLOY_SYSTEMS))  # deploy's, shared as api.deploy does
    for i, system in enumerate(systems):
        if progress is not None:
            progress.note(f"simulating {system.id}")
        if chips is None and tp is None and qps is None:
            out[system.id] = _best_deployment(model, system, config, weights, kv_dtype, requests, input_tokens,
                                              output_tokens, seed, inference_calibration,
                                              budget.part(len(systems) - i))
        else:
            out[system.id] = _serve_one(model, system, config, chips, tp, weights, kv_dtype, qps, requests,
                                        input_tokens, output_tokens, seed, inference_calibration)
        if progress is not None:
            progress.update(1)
    return out


def _best_deployment(model, system, config, weights, kv_dtype, requests, input_tokens, output_tokens, seed,
                     inference_calibration=None, budget=None):
    """The ServingPoint of the cheapest deployment plan/deploy finds in the given (or default) formats, colocated
    replicas or disaggregated xPyD units, as deploy ranks them: the instance simulated whole when deploy checked it,
    else one replica (or unit) at its capacity."""
    from ..cost import inference as inf
    from ..simulate import serving as S
    from . import deploy as D

    cpu = system.chip.kind == "cpu"
    ws = (weights or ("q4_0" if cpu else "bf16"),)
    kvs = (kv_dtype or ("fp16" if cpu else "bf16"),)
    o = D.deploy(model, system, config, input_tokens=input_tokens, output_tokens=output_tokens, weights=ws,
                 kv_dtypes=kvs, requests=requests, seed=seed, inference_calibration=inference_calibration,
                 budget=budget)
    if o.best is None:
        return f"no deployment meets the SLOs: {o.reason}" + (f" ({o.budget_note})" if o.budget_note else "")
    c, k = o.best.candidate, (max(o.best.candidate.replicas_per_instance, 1) if o.verified is not None else 1)
    if isinstance(o.best.deployment, S.Disaggregated):
        pd = o.best.deployment
        d = S.disaggregated(pd.prefill, pd.decode, pd.prefill_replicas * k, pd.decode_replicas * k, pd.placement)
    else:
        d = inf.deployment(model, system, chips=c.tp * c.pp * k, tp=c.tp, weights=c.weights, kv_dtype=c.kv_dtype,
                           inference_calibration=inference_calibration, ep=c.ep, pp=c.pp)
    b = o.bounds.get("qps" if k > 1 else "replica_capacity_qps")
    return ServingPoint(system, d, o.best.qps if k > 1 else o.best.replica_qps, True, o.verified or o.best.result,
                        o.budget_note, b, o.interval if b else None)


def _serve_one(model, system, config, chips, tp, weights, kv_dtype, qps, requests, input_tokens, output_tokens,
               seed, inference_calibration=None):
    """One system's ServingPoint, or a string saying why it cannot serve at the SLOs."""
    import numpy as np

    from ..cost import inference as inf
    from ..simulate import serving as S

    try:
        d = inf.deployment(model, system, chips=chips, tp=tp, weights=weights, kv_dtype=kv_dtype,
                           inference_calibration=inference_calibration)
    except FlopcastError as exc:
        return str(exc)
    n_in, n_out = S.median_lengths(input_tokens, output_tokens, seed)
    one = inf.predict(d, 1, n_in, n_out)
    if not one.fits:
        mem = one.memory_bytes
        return (f"does not fit: weights {mem['weights'] / GiB:.1f} GiB plus one {n_in + n_out}-token "
                f"sequence exceed the {one.memory_capacity_bytes / GiB:.1f} GiB of a replica")
    if qps is not None:
        reqs = S.poisson_requests(qps, np.random.default_rng(seed), n=requests, input_tokens=input_tokens,
                                  output_tokens=output_tokens)
        return ServingPoint(system, d, qps, False, S.simulate(d, reqs, config, seed=seed))
    q, res = S.find_capacity(d, config, requests=requests, input_tokens=input_tokens,
                             output_tokens=output_tokens, seed=seed)
    if res is None:
        return (f"misses the SLOs even unloaded: one request alone has TTFT {one.ttft_s * 1e3:,.0f} ms "
                f"and TPOT {one.tpot_s * 1e3:,.1f} ms (targets {config.slo_ttft_s * 1e3:,.0f} ms, "
                f"{config.slo_tpot_s * 1e3:,.1f} ms)")
    return ServingPoint(system, d, q, True, res)
