"""Calibration files a user names: what `flopcast calibrate` writes, read instead of the shipped ones.

Two kinds, told apart by their contents: a training calibration (calibration.yaml: `families` of
chip-family efficiencies and `global` parameters) and a serving calibration (inference_calibration.yaml:
`families` of engine-family efficiencies). Each prediction takes one explicitly; None means the file
flopcast ships (catalog/data/). Nothing here is cached or global: a file is read when it is named.
"""

from __future__ import annotations

import difflib
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


def _check(label: str, where: str, given: dict, valid: tuple) -> None:
    for key, value in given.items():
        if key not in valid:
            close = difflib.get_close_matches(key, valid, n=1)
            hint = f"closest: {close[0]}" if close else f"valid: {', '.join(valid)}"
            raise FlopcastError(f"{label}: {where}{key} is not a calibration parameter; {hint}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
            raise FlopcastError(f"{label}: {where}{key}: {value!r}; valid: a number of zero or more")


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
