"""reliability: failures, checkpoints and restarts of a training run, closed form beside Monte-Carlo."""

from __future__ import annotations

from dataclasses import dataclass

from ..limits import check
from ..cost.reliability import Goodput, GoodputAssumptions, goodput_for
from ..errors import FlopcastError
from ..frame import Tabular, flatten
from ..model.workload import Model
from ..plan import forecast
from ..plan.forecast import DEFAULT_MODEL, DEFAULT_SYSTEM, TrainResult
from ..simulate.reliability import simulate
from ..units import GIGA, GiB
from . import args
from .args import python_errors


def assumptions(*, mtbf_chip_hours=None, checkpoint_write_gbps=None, checkpoint_load_gbps=None,
                async_checkpoint=None, restart_minutes=None, spares=None, interval=None,
                cv=None) -> GoodputAssumptions:
    """GoodputAssumptions with the given fields changed (None keeps the default); interval as "20min" or seconds."""
    # each finite and within its bound (flopcast.limits); the error names the argument
    mtbf_chip_hours, checkpoint_write_gbps, checkpoint_load_gbps, restart_minutes, cv, spares = (
        check(name, v) for name, v in (("mtbf_chip_hours", mtbf_chip_hours),
                                       ("checkpoint_write_gbps", checkpoint_write_gbps),
                                       ("checkpoint_load_gbps", checkpoint_load_gbps),
                                       ("restart_minutes", restart_minutes), ("cv", cv), ("spares", spares)))
    kw = {"mtbf_chip_hours": mtbf_chip_hours, "async_checkpoint": async_checkpoint, "spares": spares, "cv": cv,
          "checkpoint_write_bps": None if checkpoint_write_gbps is None else checkpoint_write_gbps * GIGA,
          "checkpoint_load_bps": None if checkpoint_load_gbps is None else checkpoint_load_gbps * GIGA,
          "restart_s": None if restart_minutes is None else restart_minutes * 60.0,
          "interval_s": None if interval is None else args.duration(interval, "interval", "30min, 2h or 900 (seconds)")}
    return GoodputAssumptions(**{k: v for k, v in kw.items() if v is not None})


def _train(model, hardware, chips, tokens, layout, calibration=None, economics=None) -> TrainResult:
    """The forecast whose faults are modelled; economics: the user's price_per_hour, power_w and pue, if any."""
    from dataclasses import replace

    from ..cost.economics import rates_for

    r = forecast.train(model, hardware, chips, tokens=tokens, calibration=calibration, **layout)
    given = {k: v for k, v in (economics or {}).items() if v is not None}
    if given:
        r = replace(r, rates=rates_for(r.system, **given))
    if not r.fits:
        raise FlopcastError(
            f"{r.model.label} does not fit on {r.chips:,} {r.system.chip.id} chips"
            f"{' with the given layout' if layout else ' with any layout'}: it needs {r.memory_gib:,.1f} GiB of "
            f"{r.memory_capacity_bytes / GiB:,.1f} GiB per chip (`flopcast train` shows the breakdown); use more chips")
    return r


@dataclass(frozen=True)
class ReliabilityResult(Tabular):
    """One cluster: the training forecast, the closed form (`goodput`) and the Monte-Carlo run (`monte_carlo`)."""

    train: TrainResult
    goodput: Goodput
    monte_carlo: object  # simulate.reliability.SimResult; None when it was not run (`monte_carlo_unavailable`)
    monte_carlo_unavailable: str = ""  # why: the run never finishes, or it would pass the event cap

    def to_dict(self) -> dict:
        out = {"train": self.train.to_dict(), "closed_form": self.goodput.to_dict(),
               "monte_carlo": None if self.monte_carlo is None else self.monte_carlo.summary()}
        if self.monte_carlo is None:
            out["unavailable"] = {"monte_carlo": self.monte_carlo_unavailable}
        return out


@dataclass(frozen=True)
class ReliabilitySweepResult(Tabular):
    """Goodput and time-to-train by cluster size: rows (chips, TrainResult, Goodput, Simulation) and the knee."""

    model: Model
    hardware: str
    tokens: float
    sweep: tuple
    errors: dict  # chips -> why that size has no valid layout
    fastest_chips: int
    stops_paying_off_beyond: int | None

    @staticmethod
    def marginal(previous, row) -> float:
        """Speed-up of the expected time per unit of extra chips from `previous` to `row` (1.0 = linear)."""
        (n0, _, g0, _), (n1, _, g1, _) = previous, row
        return (g0.expected_s / g1.expected_s - 1) / (n1 / n0 - 1)

    def to_dict(self) -> dict:
        return {"sweep": [{"chips": n, "chips_used": g.chips, "layout": r.layout.as_dict(), "closed_form": g.to_dict(),
                           "monte_carlo": sim.summary()} for n, r, g, sim in self.sweep],
                "errors": {str(k): v for k, v in self.errors.items()},
                "fastest_chips": self.fastest_chips, "stops_paying_off_beyond": self.stops_paying_off_beyond}

    def rows(self) -> list[dict]:
        return [flatten(d) for d in self.to_dict()["sweep"]]


def _sweep(m, hardware, sizes, tokens, layout, base, trials, seed, calibration=None,
           economics=None) -> ReliabilitySweepResult:
    rows, errors = [], {}
    pinned = {k: v for k, v in layout.items() if k != "dp"}  # dp follows the cluster size
    for n in sizes:
        try:
            r = _train(m, hardware, n, tokens, pinned, calibration, economics)
        except FlopcastError as exc:
            errors[n] = str(exc)
            continue
        g = goodput_for(r, base)
        try:
            sim = simulate(g.ideal_s, g.chips, g.checkpoint_bytes, g.assumptions, trials=min(trials, 200), seed=seed)
        except FlopcastError as exc:  # never finishes, or past the Monte-Carlo's cap: that size is left out
            errors[n] = str(exc)
            continue
        rows.append((n, r, g, sim))
    if not rows:
        raise FlopcastError("no cluster size in `sweep_chips` gives a valid layout: "
                            + "; ".join(f"{n}: {e}" for n, e in errors.items()))
    # where adding chips stops paying off: the first size whose extra chips buy less than half their worth
    knee = next((a[0] for a, b in zip(rows, rows[1:]) if ReliabilitySweepResult.marginal(a, b) < 0.5), None)
    best = min(rows, key=lambda x: x[2].expected_s)[0]
    return ReliabilitySweepResult(m, str(hardware), tokens, tuple(rows), errors, best, knee)


@python_errors
def reliability(model=DEFAULT_MODEL, hardware=DEFAULT_SYSTEM, chips: int | None = None, *, tokens=None,
                trials: int = 1000, seed: int = 0, sweep_chips=None, seq_len: int | None = None,
                mtbf_chip_hours=None, checkpoint_write_gbps=None, checkpoint_load_gbps=None, async_checkpoint=None,
                restart_minutes=None, spares=None, interval=None, cv=None, calibration=None,
                price_per_hour=None, power_w=None, pue=None, **layout) -> ReliabilityResult | ReliabilitySweepResult:
    """Expected time-to-train with failures, checkpoints and restarts: Monte-Carlo beside the closed form.

    tokens default to 20 per parameter; `sweep_chips` ("1024,8192" or a list) evaluates several cluster sizes;
    `calibration`: a training calibration file `calibrate` wrote, instead of the shipped one; price_per_hour
    (USD per node-hour), power_w (per chip) and pue replace the catalog's in the cost and energy, as in `train`.

    >>> r = flopcast.reliability("llama2-7b", "p5.48xlarge", 64, tokens="1T", trials=20)
    >>> 0 < r.goodput.goodput < 1 and r.goodput.expected_s > r.goodput.ideal_s
    True
    """
    base = assumptions(mtbf_chip_hours=mtbf_chip_hours, checkpoint_write_gbps=checkpoint_write_gbps,
                       checkpoint_load_gbps=checkpoint_load_gbps, async_checkpoint=async_checkpoint,
                       restart_minutes=restart_minutes, spares=spares, interval=interval, cv=cv)
    m = forecast.resolve_model(model, seq_len)
    n_tokens = forecast.default_tokens(m) if tokens is None else args.tokens(tokens, m)
    trials, seed = check("trials", trials), check("seed", seed)
    economics = {"price_per_hour": price_per_hour, "power_w": power_w, "pue": pue}
    if sweep_chips:
        return _sweep(m, hardware, args.chip_counts(sweep_chips, "sweep_chips"), n_tokens, layout, base, trials, seed,
                      calibration, economics)
    result = _train(m, hardware, chips, n_tokens, layout, calibration, economics)
    g = goodput_for(result, base)
    try:
        sim = simulate(g.ideal_s, g.chips, g.checkpoint_bytes, g.assumptions, trials=trials, seed=seed)
    except FlopcastError as exc:  # trials and seed are checked above: the run never finishes or is past the cap
        return ReliabilityResult(result, g, None, str(exc))
    return ReliabilityResult(result, g, sim)
