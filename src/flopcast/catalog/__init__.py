"""The catalog: models, chips and systems as data files with a source for every number.

Built-in entries live in catalog/data/*.yaml. A user's own entry is a YAML or TOML
file passed by path wherever a name is accepted; `base: NAME` starts it from a
built-in entry, so "Trainium2 with twice the HBM bandwidth" is two lines:

    base: trainium2
    memory_bandwidth: 5.8 TB/s

The package is a face: names.py resolves names, files.py reads user files and `base:` chains,
entries.py (with fields.py) declares every field and reads the built-in entries, schema.py checks a user's
file through pydantic with one-line messages, build.py makes the frozen values.
"""

from __future__ import annotations

import functools
from dataclasses import replace

from ..model.efficiency import Calibration, FamilyEfficiency
from ..model.system import Dtype
from .build import load_chip, load_model, load_system, model_from_dict, system_for
from .files import SUFFIXES, entry, file_kind, is_file, read_file
from .names import DATA, close_matches, load_yaml, names, raw, resolve_name, sources

__all__ = ["DATA", "SUFFIXES", "calibration", "calibration_from_dict", "close_matches", "entry", "family_mamf",
           "file_kind", "is_file", "load_chip", "load_model", "load_system", "model_from_dict", "names", "raw",
           "read_file", "resolve_name", "sources", "system_for", "with_mamf_transfer"]


GEMM_KINDS = (("gemm", Dtype.BF16), ("gemm_fp8", Dtype.FP8))  # FamilyEfficiency's GEMM keys and their MAMF dtype


@functools.cache
def calibration() -> Calibration:
    """The shipped calibration (written by `flopcast calibrate`); defaults if none was written yet."""
    path = DATA / "calibration.yaml"
    if not path.exists():
        return Calibration()
    return calibration_from_dict(load_yaml(path.read_text()) or {})


def calibration_from_dict(d: dict) -> Calibration:
    fams = {k: FamilyEfficiency(**v) for k, v in (d.get("families") or {}).items()}
    glob = d.get("global") or {}
    return with_mamf_transfer(Calibration(families=fams, provenance=d.get("provenance") or {}, **glob))


@functools.cache
def family_mamf(family: str, dtype: Dtype) -> float | None:
    """Mean measured maximum achievable matmul fraction of peak (chip field `mamf`) over the catalogued chips
    of a family, or None when none has one. A measurement one part lends another of the same die (the same
    figures, e.g. h100-sxm-96gb's from h100-sxm) counts once."""
    measured = {}
    for cid, d in raw("chip").items():
        if d.get("family", cid) == family and d.get("mamf"):
            chip = load_chip(cid)
            f = chip.mamf_fraction(dtype)
            if f:
                measured[(chip.mamf.get(dtype), chip.peak_flops.get(dtype))] = f
    fractions = list(measured.values())
    return sum(fractions) / len(fractions) if fractions else None


def with_mamf_transfer(cal: Calibration) -> Calibration:
    """The calibration with its fitted/MAMF ratio per GEMM kind, which chips of unfitted families scale their
    own MAMF by (Calibration.for_chip)."""
    transfer = {}
    for key, dtype in GEMM_KINDS:
        ratios = [getattr(v, key) / m for f, v in cal.families.items() if (m := family_mamf(f, dtype))]
        if ratios:
            transfer[key] = sum(ratios) / len(ratios)
    # each fitted family's mean MAMF fraction per GEMM kind: what its fitted efficiency is shared out by among its
    # chips (Calibration.for_chip)
    fams = {}
    for f in cal.families:
        means = {key: m for key, dtype in GEMM_KINDS if (m := family_mamf(f, dtype))}
        if means:
            fams[f] = means
    return replace(cal, mamf_transfer=transfer, mamf_family=fams)
