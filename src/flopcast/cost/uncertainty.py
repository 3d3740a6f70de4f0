"""How sure a forecast is: prediction intervals from cross-validated residuals, applied to a forecast.

A forecast belongs to a kind: training or serving; a chip with its own measured runs in the calibration
(`own`), a chip whose architecture family has runs (`family`), or a family with none (`unseen`); a dense
or a mixture-of-experts model; for training, the chip's matrix unit: a weight-stationary systolic array
compiled with the whole step (TPU, Trainium: `systolic`) or a GPU's (`gpu`, every other chip).
catalog/data/uncertainty.yaml holds, per kind, the quantiles of the
leave-one-source-out log errors r = log(predicted speed / measured speed) of forecasts of that kind
(written by `flopcast validate FILE --cross-validate --write-intervals`, validate/uncertainty.py).
A measured speed is the predicted one times exp(-r), so the interval on a speed (tokens/s, MFU) is
[predicted x exp(-r_high), predicted x exp(-r_low)] and on a time (step time, time-to-train, cost,
energy) its reciprocal: multiplicative intervals, the same for every figure that scales with throughput.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from enum import Enum

from ..catalog.names import load_yaml
from .compute import SYSTOLIC_FAMILIES

FILE = "uncertainty.yaml"


class Task(str, Enum):
    TRAINING = "training"
    SERVING = "serving"


class Basis(str, Enum):
    """Where a forecast's efficiencies come from, from the narrowest to the broadest extrapolation."""

    OWN = "own"  # the chip has measured runs in the fit
    FAMILY = "family"  # its architecture family has runs, the chip has none
    UNSEEN = "unseen"  # no run of its family: borrowed from other families


BASES = (Basis.OWN, Basis.FAMILY, Basis.UNSEEN)
ARCHS = ("dense", "moe")
# A training kind's matrix unit. The leave-one-source-out errors of the two differ in spread (2026-12-02, the 138
# cross-validated rows of `flopcast validate training --cross-validate`: own-chip dense log-error standard deviation
# 0.142 on 37 TPU and Trainium rows against 0.095 on 69 GPU rows, a variance ratio of 2.2): the systolic chips' step
# is one XLA or Neuron program whose fusion, collective scheduling and host offload the time model sees less of.
UNITS = ("gpu", "systolic")


def unit_of(family: str) -> str:
    """'systolic' for a family whose matrix unit is a systolic array (cost/compute.SYSTOLIC_FAMILIES), else 'gpu'."""
    return "systolic" if family in SYSTOLIC_FAMILIES else "gpu"


def kind_key(task: Task, basis: Basis, moe: bool, unit: str | None = None) -> str:
    """The name of a kind of forecast, e.g. 'training/own/dense', or with a matrix unit 'training/own/dense/gpu'."""
    key = f"{Task(task).value}/{Basis(basis).value}/{'moe' if moe else 'dense'}"
    return key if unit is None else f"{key}/{unit}"


def basis_of(chip_id: str, family: str, chips_with_runs, families_with_runs) -> Basis:
    """own when the chip had runs in the fit, family when its family had, unseen otherwise."""
    if chip_id in chips_with_runs:
        return Basis.OWN
    if family in families_with_runs:
        return Basis.FAMILY
    return Basis.UNSEEN


@dataclass(frozen=True)
class Interval:
    """A central prediction interval as factors on a predicted speed: truth in [speed x low, speed x high]."""

    level: float  # e.g. 0.8
    low: float  # factor on a speed, <= high
    high: float
    kind: str  # the forecast's kind
    residuals: int  # how many cross-validated residuals set it
    pooled: str = ""  # how a kind with few residuals was widened

    def speed(self, value: float | None) -> tuple[float | None, float | None]:
        """(low, high) of a figure proportional to throughput (tokens/s, TFLOP/s, MFU)."""
        return (None, None) if value is None else (value * self.low, value * self.high)

    def time(self, value: float | None) -> tuple[float | None, float | None]:
        """(low, high) of a figure inversely proportional to throughput (a duration, a cost, an energy)."""
        return (None, None) if value is None else (value / self.high, value / self.low)

    @property
    def label(self) -> str:
        return f"{round(100 * self.level)}%"

    def to_dict(self) -> dict:
        return {"level": self.level, "speed_factor_low": self.low, "speed_factor_high": self.high,
                "kind": self.kind, "residuals": self.residuals, "pooled": self.pooled}


@functools.cache
def _table() -> dict:
    from ..catalog import DATA

    path = DATA / FILE
    if not path.exists():
        return {}
    return load_yaml(path.read_text()) or {}


def interval_for(kind: str, table: dict | None = None) -> Interval | None:
    """The stored interval of a kind, or None when uncertainty.yaml has no entry for it."""
    data = _table() if table is None else table
    task = kind.split("/", 1)[0]
    kinds = (data.get(task) or {}).get("kinds") or {}
    entry = kinds.get(kind)
    if not entry and kind.count("/") == 3:  # a table written before kinds carried their matrix unit
        kind = kind.rsplit("/", 1)[0]
        entry = kinds.get(kind)
    if not entry:
        return None
    level = float((data.get(task) or {}).get("level", 0.8))
    return Interval(level, math.exp(-float(entry["log_error_high"])), math.exp(-float(entry["log_error_low"])),
                    kind, int(entry.get("residuals", 0)), str(entry.get("pooled", "")))


def training_kind(calibration, chip, moe: bool) -> str:
    """The kind of a training forecast on `chip` with the calibration whose provenance names its rows."""
    prov = calibration.provenance or {}
    basis = basis_of(chip.id, chip.family, prov.get("rows_per_chip") or {}, prov.get("chips_per_family") or {})
    return kind_key(Task.TRAINING, basis, moe, unit_of(chip.family))


def training_interval(calibration, chip, moe: bool, table: dict | None = None) -> Interval | None:
    """The interval of a training forecast on `chip`."""
    return interval_for(training_kind(calibration, chip, moe), table)


def serving_interval(chip_id: str, family: str, hardware_per_family: dict, moe: bool,
                     table: dict | None = None) -> Interval | None:
    """The interval of a serving forecast of engine family `family` on chip `chip_id`: own when the family's
    calibration rows include the chip, family when the engine family has rows, unseen otherwise."""
    return interval_for(serving_kind(chip_id, family, hardware_per_family, moe), table)


def serving_kind(chip_id: str, family: str | None, hardware_per_family: dict, moe: bool) -> str:
    """own when the engine family's calibration rows include the chip, family when the engine family has
    rows, unseen otherwise."""
    fitted = hardware_per_family.get(family) or () if family else ()
    basis = Basis.OWN if chip_id in fitted else Basis.FAMILY if fitted else Basis.UNSEEN
    return kind_key(Task.SERVING, basis, moe)


# the headline figures of a training forecast that carry *_low / *_high
TRAINING_KEYS = ("step_time_s", "tokens_per_s", "tokens_per_s_per_chip", "model_tflops_per_chip", "mfu", "hfu",
                 "time_to_train_s", "time_to_train_days", "expected_time_to_train_s", "expected_time_to_train_days",
                 "chip_hours", "instance_hours", "energy_kwh", "cost_usd")
# ... and of a serving forecast
SERVING_KEYS = ("ttft_s", "tpot_s", "prefill_s", "e2e_latency_s", "decode_tokens_per_s_per_stream",
                "output_tokens_per_s_total", "prefill_tokens_per_s", "cost_per_million_output_tokens_usd")


def with_bounds(d: dict, bounds: dict, interval: Interval | None) -> dict:
    """d with KEY_low and KEY_high right after each KEY that has bounds, and the interval described."""
    out = {}
    for k, v in d.items():
        out[k] = v
        if k in bounds:
            out[f"{k}_low"], out[f"{k}_high"] = bounds[k]
    out["interval"] = None if interval is None else interval.to_dict()
    return out
