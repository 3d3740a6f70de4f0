"""compare: systems side by side, training (the best layout on each) or serving (`serve=True`: each at the SLOs)."""

from __future__ import annotations

from dataclasses import dataclass

from .. import catalog
from ..cost import calibrations
from ..errors import FlopcastError
from ..frame import Tabular, flatten
from ..model.workload import Model
from ..plan import forecast, serve_compare
from ..simulate import serving as S
from . import args
from .args import python_errors
from .serving import config
from .training import CompareResult, compare_training


@dataclass(frozen=True)
class CompareServingResult(Tabular):
    """Each system serving the model at the same SLOs: {system id: plan.serve_compare.ServingPoint, or why not}."""

    model: Model
    config: S.ServingConfig
    input_tokens: str
    output_tokens: str
    qps: float | None
    systems: dict

    def head(self) -> dict:
        cfg = self.config
        return {"workload": "serve", "model": self.model.label, "scheduler": cfg.scheduler.value,
                "slo_ttft_s": cfg.slo_ttft_s, "slo_tpot_s": cfg.slo_tpot_s, "slo_attainment_target": S.ATTAINMENT,
                "input_tokens": self.input_tokens, "output_tokens": self.output_tokens}

    def to_dict(self) -> dict:
        return {**self.head(), "systems": {k: (v.to_dict() if not isinstance(v, str) else {"error": v})
                                           for k, v in self.systems.items()}}

    def rows(self) -> list[dict]:
        return [{"system": k, **(flatten(v.to_dict()) if not isinstance(v, str) else {"error": v})}
                for k, v in self.systems.items()]


def _compare_serving(model, systems, *, chips, qps, input_tokens, output_tokens, weights, kv_dtype, scheduler,
                     slo_ttft, slo_tpot, requests, seed, progress, calibration=None, **layout) -> CompareServingResult:
    tp = layout.pop("tp", None)
    layout = {k: v for k, v in layout.items() if v is not None}
    if layout:
        raise FlopcastError(f"{', '.join(f'`{k}`' for k in layout)} describe a training layout; with `serve` only "
                            "`chips`, `tp`, `weights` and `kv_dtype` set the deployment")
    if qps is not None and not qps > 0:
        raise FlopcastError(f"`qps` must be a positive request rate, got {qps}")
    if requests < 10:
        raise FlopcastError(f"`requests` must be at least 10, got {requests}")
    m = model if isinstance(model, Model) else catalog.load_model(model)
    cfg = config(scheduler=scheduler, slo_ttft=slo_ttft, slo_tpot=slo_tpot)
    out = serve_compare.compare_serving(m, systems, cfg, chips=chips, tp=tp, weights=weights, kv_dtype=kv_dtype,
                                        qps=qps, requests=requests, input_tokens=input_tokens,
                                        output_tokens=output_tokens, seed=seed, progress=progress,
                                        inference_calibration=calibrations.serving(calibration))
    return CompareServingResult(m, cfg, input_tokens, output_tokens, qps, out)


@python_errors
def compare(model, hardware, chips: int | None = None, *, tokens="chinchilla", serve: bool = False,
            qps: float | None = None, input_tokens="512", output_tokens="128", weights: str | None = None,
            kv_dtype: str | None = None, scheduler="continuous", slo_ttft="1s", slo_tpot="50ms", requests: int = 400,
            seed: int = 0, seq_len: int | None = None, calibration=None, progress=None,
            price_per_hour=None, power_w=None, pue=None, **layout) -> CompareResult | CompareServingResult:
    """The best layout of `model` on each system of `hardware` ("a,b" or a list) on `chips` chips, side by side;
    with `serve=True`, each system serving `model` at the same SLOs, by cost per million output tokens.

    >>> c = flopcast.compare("llama2-7b", "p4d.24xlarge,p5.48xlarge", chips=8, tokens="100B")
    >>> sorted(c.systems), c.systems["p5.48xlarge"].step_time_s < c.systems["p4d.24xlarge"].step_time_s
    (['p4d.24xlarge', 'p5.48xlarge'], True)

    Training: price_per_hour (USD per instance-hour), power_w (per chip) and pue replace the catalog's on every
    system compared (a what-if at equal price or power).
    """
    systems = [forecast.resolve_system(h) for h in
               (args.names(hardware, "hardware") if isinstance(hardware, (str, list, tuple)) else [hardware])]
    if serve and any(v is not None for v in (price_per_hour, power_w, pue)):
        raise FlopcastError("`price_per_hour`, `power_w` and `pue` apply to training; serving uses each system's "
                            "catalog price (give a system file with price_per_hour to change it)")
    if serve:
        return _compare_serving(model, systems, chips=chips, qps=qps, input_tokens=input_tokens,
                                output_tokens=output_tokens, weights=weights, kv_dtype=kv_dtype, scheduler=scheduler,
                                slo_ttft=slo_ttft, slo_tpot=slo_tpot, requests=requests, seed=seed,
                                progress=progress, calibration=calibration, **layout)
    return compare_training(model, systems, chips, tokens=tokens, seq_len=seq_len, calibration=calibration,
                            progress=progress, serving_only={"weights": weights, "kv_dtype": kv_dtype, "qps": qps},
                            economics={"price_per_hour": price_per_hour, "power_w": power_w, "pue": pue}, **layout)
