"""Calibration files a user names: what `flopcast calibrate` writes, read instead of the shipped ones.

Two kinds, told apart by their contents: a training calibration (calibration.yaml: `families` of
chip-family efficiencies and `global` parameters) and a serving calibration (inference_calibration.yaml:
`families` of engine-family efficiencies). Each prediction takes one explicitly; None means the file
flopcast ships (catalog/data/). Nothing here is cached or global: a file is read when it is named.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import fields
from pathlib import Path

from ..model.efficiency import Calibration, FamilyEfficiency
from ..errors import FlopcastError
from ..catalog.files import read_file

TRAINING_GLOBAL = tuple(f.name for f in fields(Calibration) if f.name not in ("families", "provenance",
                                                                                  "mamf_transfer", "mamf_family"))
TRAINING_FAMILY = tuple(f.name for f in fields(FamilyEfficiency))


def _serving_family_keys() -> tuple[str, ...]:
    from .inference import EngineEfficiency

    return tuple(f.name for f in fields(EngineEfficiency))


def kind(data: dict, label: str) -> str:
    """'training' or 'serving' for a calibration file's mapping; anything else is one sentence."""
    families = data.get("families")
    if not isinstance(families, dict) or not families or not all(isinstance(v, dict) for v in families.values()):
        raise FlopcastError(f"{label} is not a calibration file: it needs `families:` (a mapping of family -> "
                            "efficiencies), as `flopcast calibrate` writes")
    keys = {k for v in families.values() for k in v}
    if "global" in data or keys <= set(TRAINING_FAMILY):
        return "training"
    if keys <= set(_serving_family_keys()):
        return "serving"
    # a misspelt key: the kind whose parameters it shares most (the check then names the stray key)
    return "serving" if len(keys & set(_serving_family_keys())) > len(keys & set(TRAINING_FAMILY)) else "training"


# (low, high, low included) of each parameter a calibration file may set; any other: a finite number >= 0. Fractions
# of a peak (kernel efficiencies, a collective's share of link bandwidth) are above 0 and at most 1 (at 0 a
# forecast's time is infinite, `nan` in its output); overlaps are shares of a window; overheads a per-kernel, per-step
# or per-request time (an hour is past any); the fit's own bounds (validate/calibrate.py) lie inside these
_FRACTION, _SHARE, _SECONDS = (0.0, 1.0, False), (0.0, 1.0, True), (0.0, 3600.0, True)
RANGES = {
    **dict.fromkeys(("gemm", "gemm_fp8", "attention", "memory", "compute", "scaleup_efficiency", "scaleout_efficiency",
                     "grouped_gemm"), _FRACTION),
    **dict.fromkeys(("tp_overlap", "comm_overlap", "zero3_overlap"), _SHARE),
    **dict.fromkeys(("op_overhead_s", "moe_host_op_s", "step_overhead_s", "layer_overhead_s", "request_overhead_s",
                     "moe_expert_overhead_s", "moe_transfer_s"), _SECONDS),
    "elementwise_traffic": (0.0, 100.0, False), "thread_weights_per_cycle": (0.0, 1e6, True),
}


def _check(label: str, where: str, given: dict, valid: tuple) -> None:
    for key, value in given.items():
        if key not in valid:
            close = difflib.get_close_matches(key, valid, n=1)
            hint = f"closest: {close[0]}" if close else f"valid: {', '.join(valid)}"
            raise FlopcastError(f"{label}: {where}{key} is not a calibration parameter; {hint}")
        low, high, closed = RANGES.get(key, (0.0, math.inf, True))
        number = not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
        if not number or not (low <= value if closed else low < value) or value > high:
            lower = f"{low:g} or more" if closed else f"above {low:g}"
            upper = f", at most {high:g}" if math.isfinite(high) else ""
            raise FlopcastError(f"{label}: {where}{key}: {value!r}; valid: a finite number {lower}{upper}")


def read(path) -> tuple[str, object]:
    """(kind, value) of a calibration file: ('training', Calibration) or ('serving', {family: EngineEfficiency})."""
    from ..catalog import calibration_from_dict

    p = Path(str(path)).expanduser()
    if not p.exists():
        raise FlopcastError(f"calibration file {path} does not exist; valid: a file `flopcast calibrate --out` wrote")
    label = str(path)
    data = read_file(p)
    k = kind(data, label)
    if k == "training":
        for name, fam in data["families"].items():
            _check(label, f"families.{name}.", fam, TRAINING_FAMILY)
        _check(label, "global.", data.get("global") or {}, TRAINING_GLOBAL)
        return k, calibration_from_dict(data)
    from .inference.releases import PER_RELEASE_KEYS, from_yaml

    valid = _serving_family_keys()
    for name, fam in data["families"].items():
        _check(label, f"families.{name}.", {k: v for k, v in fam.items() if k not in PER_RELEASE_KEYS}, valid)
    return k, {name: from_yaml(fam, f"{label}: families.{name}.") for name, fam in data["families"].items()}


def _other(k: str) -> str:
    return {"training": "a serving", "serving": "a training"}[k]


def _resolve(value, kind: str, shipped, given_type):
    """None: the shipped calibration of `kind`; an object of `given_type` as it is; else a file's path of that kind."""
    if value is None:
        return shipped()
    if isinstance(value, given_type):
        return value
    k, cal = read(value)
    if k != kind:
        what = {"training": "chip families", "serving": "engine families"}[k]
        raise FlopcastError(f"calibration {value} is a {k} calibration ({what}); {kind} predictions "
                            f"take {_other(k)} one, written by `flopcast calibrate` on a {kind} CSV")
    return cal


def _shipped_training() -> Calibration:
    from ..catalog import calibration

    return calibration()


def _shipped_serving() -> dict:
    from .inference import load_inference_calibration

    return load_inference_calibration()


def training(value=None) -> Calibration:
    """The training calibration to predict with: None (the shipped one), a Calibration, or a file's path."""
    return _resolve(value, "training", _shipped_training, Calibration)


def serving(value=None) -> dict:
    """The engine-family efficiencies to serve with: None (the shipped ones), a mapping, or a file's path."""
    return _resolve(value, "serving", _shipped_serving, dict)


def pair(value=None) -> tuple[Calibration, dict]:
    """(training calibration, serving efficiencies) for a command that predicts both: a file replaces the
    shipped calibration of its own kind and leaves the other shipped."""
    if value is None or isinstance(value, Calibration):
        return training(value), serving()
    k, cal = read(value)
    return (cal, serving()) if k == "training" else (training(), cal)
