"""validate and calibrate: flopcast's predictions against measured runs, and the fit of its efficiencies.

A CSV file is read as the training or the serving schema of validation/README.md, told apart by its
columns.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..cost import calibrations
from ..errors import FlopcastError
from ..frame import Tabular, flatten
from ..limits import resolved
from ..validate import training as vt
from ..validate.rows import MAX_FIT_ROWS
from .args import python_errors

# the columns only one schema has (validation/README.md): they decide which schema a header means
TRAINING_ONLY = frozenset({"source_locator", "params_b", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab",
                           "seq_len", "mlp", "moe_experts", "moe_topk", "moe_expert_ffn", "pp", "dp", "cp", "ep", "vp",
                           "micro_batch", "global_batch", "dtype", "recompute", "sharding", vt.MEASURED, "measured_as"})
SERVING_ONLY = frozenset({"instance", "vcpus", "threads", "engine", "weights", "batch", "input_tokens",
                          "output_tokens", "measured_decode_tokens_per_s_per_stream",
                          "measured_output_tokens_per_s_total", "measured_tpot_ms", "measured_ttft_ms",
                          "measured_prefill_tokens_per_s"})
CROSS_VALIDATION = "leave-one-source-out: each source predicted by parameters fitted without it"


def files_of(file: str) -> list[Path]:
    """The CSV file(s) `file` names: a path, or a shipped file's short name (`training`: the union of the
    training files; validate.training.SHIPPED)."""
    return vt.resolve_files(file)


def schema(path: str) -> str:
    """'training', 'serving' or 'memory' (validation/memory_runs.csv's), from the header's columns (of the first
    file a short name names); a one-line error for an empty file or one that has no schema's columns (naming what
    the closer of training and serving, by its own columns present, lacks)."""
    from ..validate import inference as vi
    from ..validate import memory as vm

    path = str(files_of(path)[0])
    header, _ = vt.read_table(path)
    if not header:
        raise FlopcastError(f"{path} is empty")
    if not [c for c in vt.REQUIRED if c not in header]:
        return "training"
    if not vi.missing_columns(header):
        return "serving"
    if vm.is_memory_header(header):
        return "memory"
    cols = set(header)
    closer = vi if len(cols & SERVING_ONLY) > len(cols & TRAINING_ONLY) else vt  # a tie keeps training
    closer.check_columns(header, path)  # raises: that schema lacks a column
    raise AssertionError(f"{path}: neither schema matched")


def prepare_out(out: str, file: str, name: str = "out") -> Path:
    """An output path made writable before the (possibly long) run: its missing folders created."""
    p = Path(out)
    if p.exists() and resolved(p) == resolved(file):
        raise FlopcastError(f"`{name}` {out} is the input file; choose another path")
    for parent in reversed(p.parents):
        if parent.exists() and not parent.is_dir():
            raise FlopcastError(f"cannot write {out}: {parent} is a file, not a folder")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FlopcastError(f"cannot write {out}: {exc.strerror or exc}") from None
    return p


@dataclass(frozen=True)
class ValidationResult(Tabular):
    """Predictions beside measurements: `records` (validate.training.RowResult for training; dicts, one per
    figure, for serving) and `summary` (MAPE, median, bias, by source and hardware)."""

    schema: str  # training | serving | memory
    records: tuple
    summary: dict

    def to_dict(self) -> dict:
        rows = [r if isinstance(r, dict) else r.to_dict() for r in self.records]
        return {"rows": rows, "summary": self.summary}

    def rows(self) -> list[dict]:
        return [flatten(r) for r in self.to_dict()["rows"]]


@python_errors
def validate(file: str, *, cross_validate: bool = False, calibration=None, progress=None,
             write_intervals: str | None = None) -> ValidationResult:
    """Compare predictions with the measured runs in `file` (a CSV of the validation/ schemas, or a shipped
    file's short name: calibration_runs, more_training_runs, training (both), published_training_runs (the
    holdout, never calibrated on), inference_runs, more_inference_runs, published_inference_runs, inference (both)).

    Blank layout cells are chosen by the search over just those fields. `cross_validate=True` refits with
    each source left out and predicts it (minutes): the error to expect on runs flopcast has not seen.
    `calibration`: a file `calibrate` wrote (training or serving, as the CSV), instead of the shipped one.
    summary["intervals"] says how often the 80% prediction intervals covered the measurements, scored
    honestly: with `cross_validate`, each row against the interval fitted on the other sources' errors (and
    the intervals per kind those errors give, written to `write_intervals` when given); without, the shipped
    intervals on the rows neither they nor the calibration were fitted on.

    >>> v = flopcast.validate("validation/inference_runs.csv")
    >>> v.schema, v.summary["n_ok"] > 0
    ('serving', True)
    """
    from ..validate import uncertainty as vu

    if calibration is not None and cross_validate:
        raise FlopcastError("`calibration` and `cross_validate` exclude each other: cross-validation fits its own "
                            "parameters for each held-out source")
    files = files_of(file)
    if write_intervals:
        if not cross_validate:
            raise FlopcastError("`write_intervals` needs `cross_validate` (intervals come from out-of-sample errors)")
        prepare_out(write_intervals, str(files[0]), "write_intervals")
        from ..validate.uncertainty import check_target

        check_target(write_intervals)  # before the cross-validation's minutes, not after
    kind = schema(file)
    if kind == "memory":
        return _memory(files, cross_validate, calibration)
    if kind == "serving":
        from ..cost.inference.engines import _inference_calibration_file
        from ..validate.inference import cross_validate_inference, validate_inference

        result = (cross_validate_inference(file) if cross_validate
                  else validate_inference(file, calibrations.serving(calibration)))
        if cross_validate:
            intervals = vu.from_cross_validation(file, result["rows"], "serving", write_intervals)
        else:
            prov = _inference_calibration_file().get("provenance") or {}
            intervals = {"coverage": vu.shipped_coverage(file, result["rows"], "serving", prov)}
        return ValidationResult("serving", tuple(result["rows"]), {**result["summary"], "intervals": intervals})
    if cross_validate:
        from ..validate import calibrate as cb

        if progress is not None:
            progress.add_total(len({c.source for c in vt.load_cases(files)[0]}))
        res = cb.cross_validate(files, progress=None if progress is None else progress.update)
        summary = {**res["summary"], "method": CROSS_VALIDATION, "fold_parameters": res["folds"],
                   "intervals": vu.from_cross_validation(file, res["rows"], "training", write_intervals)}
        return ValidationResult("training", tuple(res["rows"]), summary)
    cal = calibrations.training(calibration)
    rows = vt.run_validation(files, cal)
    intervals = {"coverage": vu.shipped_coverage(file, rows, "training", cal.provenance, cal)}
    return ValidationResult("training", tuple(rows), {**vt.summarize(rows), "intervals": intervals})


def _memory(files, cross_validate: bool, calibration) -> ValidationResult:
    """A memory file: the memory model has no fitted parameter, so there is nothing to cross-validate or swap."""
    from ..validate.memory import validate_memory

    if cross_validate or calibration is not None:
        raise FlopcastError(f"{files[0]} is a memory file (measured_state_bytes_per_param): the memory model has no "
                            "fitted parameters; validate it without `cross_validate` and `calibration`")
    res = validate_memory(files[0])  # no short name names a memory file: one path
    return ValidationResult("memory", tuple(res["rows"]), res["summary"])


@dataclass(frozen=True)
class CalibrationResult(Tabular):
    """What a fit wrote: the parameters' file (`target`) and the fit's figures (`info`)."""

    schema: str
    target: str
    info: dict
    families: int = 0
    global_parameters: int = 0

    def to_dict(self) -> dict:
        return dict(self.info) if self.schema == "serving" else {
            "target": self.target, "families": self.families, "global_parameters": self.global_parameters,
            **{k: v for k, v in self.info.items() if not isinstance(v, (list, dict))}}


@python_errors
def calibrate(file: str, *, output: str | None = None, progress=None) -> CalibrationResult:
    """Fit the efficiency parameters on the measured runs in `file` and write them with their provenance
    to `output` (default: ./calibration.yaml, or ./inference_calibration.yaml for a serving CSV, in the working
    directory; predictions read it with `calibration=`). The shipped parameters change only when `output`
    names src/flopcast/catalog/data/calibration.yaml (or inference_calibration.yaml).

    Example (not run here: it fits for tens of seconds and writes a file):
    ``flopcast.calibrate("validation/calibration_runs.csv", output="my-calibration.yaml").info["fit_mape_pct"]``
    """
    from ..validate import calibrate as cb

    kind = schema(file)
    files = files_of(file)
    if kind == "memory":
        raise FlopcastError(f"{file} is a memory file (measured_state_bytes_per_param): the memory model has no "
                            f"fitted parameters; `flopcast validate {file}` compares it with the measurements")
    output = str(output or ("inference_calibration.yaml" if kind == "serving" else "calibration.yaml"))
    for f in files:
        prepare_out(output, str(f), "output")
    if kind == "serving":
        from ..validate.inference import fit_inference

        try:
            info = fit_inference(file, output)
        except OSError as exc:
            raise FlopcastError(f"cannot write {exc.filename or output}: {exc.strerror or exc}") from None
        return CalibrationResult("serving", output, info)
    cases, _ = vt.load_cases(files)
    if len(cases) > MAX_FIT_ROWS:
        raise FlopcastError(f"{file}: {len(cases):,} usable training runs; valid: at most {MAX_FIT_ROWS:,} to fit on "
                            "(each round of the fit forecasts every run)")
    if progress is not None:
        progress.add_total(2)
    cal, info = cb.fit(cases, progress=None if progress is None else progress.update)
    target = Path(output)
    try:
        cb.write(cal, cb.provenance(files, cases, info), target)
    except OSError as exc:
        raise FlopcastError(f"cannot write {target}: {exc.strerror or exc}") from None
    return CalibrationResult("training", str(target), info, len(cal.families), len(cb.GLOBAL_PRIOR))
