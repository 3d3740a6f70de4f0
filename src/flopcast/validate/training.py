"""Published training runs in, predictions vs measurements out.

Each row of a calibration-schema CSV (see validation/README.md) becomes a
model (its dimensions; blanks filled from the catalog entry of the same name), a
system (the chip's default system) and a layout (the stated cells pinned; blank
cells chosen by flopcast's search over just those fields, as a tuned practitioner
would). The measured column is read only to compare, and by the fit.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import math
import re
import statistics
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from .. import catalog
from ..cost.efficiency import Calibration
from ..errors import FlopcastError
from ..model.strategy import (ERA_2021_SOFTWARE, MODERN_SOFTWARE, Layout, LayoutBatch, Recompute, Schedule,
                              Sharding, Software, parse_choice)
from ..model.system import Dtype, System
from ..model.workload import Model
from ..plan import search as search_mod
from ..simulate import training

REQUIRED = ("run_id", "source", "model", "layers", "hidden", "heads", "seq_len", "hardware", "chips",
            "global_batch", "dtype", "measured_tokens_per_s_per_chip")
LAYOUT_CELLS = ("tp", "pp", "dp", "cp", "ep", "vp", "micro_batch", "global_batch", "recompute", "sharding", "dtype")
MEASURED = "measured_tokens_per_s_per_chip"

# Sequence parallelism and selective recomputation (Korthikanti et al. 2022, arXiv:2205.05198, 10 May 2022)
# and FlashAttention (Dao et al. 2022, arXiv:2205.14135, 27 May 2022) appeared in May 2022, context
# parallelism later still. A run whose source is dated before that could not use them: its blank cells are
# searched without them (cp = 1, no sequence parallelism, recompute none or full), its attention
# is unfused (s x s scores in memory and HBM traffic) and its ZeRO-3 gathers are per parameter tensor.
SOFTWARE_CUTOFF = dt.date(2022, 5, 10)
# Pipeline stages with different layer counts (first and last stages lighter): Megatron Core 0.9.0,
# released 24 October 2024 (release notes, "Uneven pipeline parallelism"). Before it, layers were split evenly.
UNEVEN_PIPELINE_SINCE = dt.date(2024, 10, 24)
EVEN_PIPELINE_SOFTWARE = replace(MODERN_SOFTWARE, uneven_pipeline_split=False)
# A year, optionally -MM and -DD, not inside a longer number or a hexadecimal commit hash.
_DATE = re.compile(r"(?<![0-9a-fA-F])(19\d\d|20\d\d)(?:-(\d\d))?(?:-(\d\d))?(?![0-9])")


def source_date(row: dict) -> dt.date | None:
    """The date a row's source states: the first date in its source id, else in its locator.

    A bare year or year-month is taken at its first day: the software a source describes is no newer
    than the source, and a run precedes its write-up. None when neither cell holds a date."""
    for cell in ("source", "source_locator"):
        m = _DATE.search(row.get(cell) or "")
        if m:
            y, mo, d = int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1)
            try:
                return dt.date(y, mo, d)
            except ValueError:
                return dt.date(y, 1, 1)
    return None


def software_of(row: dict) -> Software:
    """The framework features a row's run could have had, from its source's date (never its measurement)."""
    d = source_date(row)
    if d is None:
        return MODERN_SOFTWARE
    if d < SOFTWARE_CUTOFF:
        return ERA_2021_SOFTWARE
    return EVEN_PIPELINE_SOFTWARE if d < UNEVEN_PIPELINE_SINCE else MODERN_SOFTWARE


@dataclass(frozen=True)
class Case:
    """One row made simulable: model, system, chips, a search space with the stated cells pinned."""

    run_id: str
    source: str
    model: Model
    system: System
    chips: int
    space: search_mod.SearchSpace
    chosen: tuple  # layout fields the row left blank
    measured: float | None
    software: Software = MODERN_SOFTWARE


@dataclass(frozen=True)
class Skipped:
    run_id: str
    source: str
    hardware: str
    reason: str
    measured: float | None = None
    model: str = ""
    chips: int = 0


def read_table(path: str | Path) -> tuple[list[str], list[dict]]:
    """(header, rows) of a CSV: header names stripped, short rows padded with "", rows of blank cells dropped.

    One-line FlopcastErrors for a missing, unreadable or empty file (shared by the serving reader)."""
    path = Path(path)
    if not path.exists():
        raise FlopcastError(f"file {path} does not exist")
    if path.is_dir():
        raise FlopcastError(f"{path} is a folder, not a CSV file")
    try:
        text = path.read_text(encoding="utf-8-sig")  # -sig: a spreadsheet's byte-order mark is not a column name
    except UnicodeDecodeError:
        raise FlopcastError(f"{path} is not a UTF-8 text CSV") from None
    except OSError as exc:
        raise FlopcastError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not text.strip():
        raise FlopcastError(f"{path} is empty")
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        header = [(h or "").strip() for h in reader.fieldnames or []]
        reader.fieldnames = header
        rows = []
        for row in reader:
            row = {k: ("" if v is None else v) for k, v in row.items() if k is not None}
            if any(v.strip() for v in row.values()):
                rows.append(row)
    except csv.Error as exc:
        raise FlopcastError(f"{path} is not a readable CSV: {exc}") from None
    return header, rows


def read_rows(path: str | Path) -> tuple[list[str], list[dict]]:
    return read_table(path)


def require_rows(rows, path) -> None:
    if not rows:
        raise FlopcastError(f"{path} has no rows (only a header)")


def check_columns(header, path, required=REQUIRED):
    missing = [c for c in required if c not in header]
    if missing:
        raise FlopcastError(f"{path} lacks column(s) {', '.join(missing)}; the training schema needs "
                            f"{', '.join(required)} (see validation/README.md)")


def _int(v):
    v = (v or "").strip()
    return int(float(v)) if v else None


def _float(v):
    v = (v or "").strip()
    return float(v) if v else None


def parse_number(col: str, value, whole: bool = False, minimum: float | None = None) -> float | int | None:
    """A cell as a number, None when blank; FlopcastError naming the column and value otherwise.

    whole: a count (int; 8.0 is read as 8, 8.5 is refused); minimum: the least value allowed."""
    s = (value or "").strip()
    if not s:
        return None
    try:
        v = float(s)
    except ValueError:
        raise FlopcastError(f"{col} {s!r} is not a number") from None
    if not math.isfinite(v):
        raise FlopcastError(f"{col} {s!r} is not a finite number")
    if whole:
        if v != int(v):
            raise FlopcastError(f"{col} {s!r} is not a whole number")
        v = int(v)
    if minimum is not None and v < minimum:
        what = "positive" if minimum == 1 and whole else f"at least {minimum:g}"
        raise FlopcastError(f"{col} must be {what}, got {s}")
    return v


def _safe_float(v) -> float | None:
    """The measured cell of a skipped row, for the listing only: None unless a finite number."""
    try:
        x = float((v or "").strip())
    except ValueError:
        return None
    return x if math.isfinite(x) else None


# count columns and the least value each may take (moe_*: 0 or blank is a dense model)
COUNT_COLUMNS = {c: 1 for c in ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "seq_len", "chips",
                                "tp", "pp", "dp", "cp", "ep", "vp", "micro_batch", "global_batch")}
COUNT_COLUMNS.update({"moe_experts": 0, "moe_topk": 0, "moe_expert_ffn": 0})
# optional architecture columns (validation/README.md): MoE placement, multi-token prediction, MLA's latent
ARCH_COLUMNS = {"moe_shared_experts": 0, "moe_dense_layers": 0, "moe_layer_freq": 1, "mtp_layers": 0,
                "mla_kv_lora_rank": 1}
COUNT_COLUMNS.update(ARCH_COLUMNS)
TEXT_REQUIRED = ("model", "hardware", "dtype")


def check_row(row: dict) -> float:
    """Every numeric cell of a training row readable and possible; the measured figure (> 0) returned.

    FlopcastError (the row's skip reason) naming the first bad cell: not a number, not a whole count,
    a count below 1, a blank required cell, or a measured figure that is blank, zero, negative or not finite."""
    for col in TEXT_REQUIRED:
        if not (row.get(col) or "").strip():
            raise FlopcastError(f"{col} is blank")
    if not (row.get("chips") or "").strip():
        raise FlopcastError("chips is blank")
    for col, least in COUNT_COLUMNS.items():
        parse_number(col, row.get(col), whole=True, minimum=least)
    parse_number("params_b", row.get("params_b"))
    m = parse_number(MEASURED, row.get(MEASURED))
    if m is None:
        raise FlopcastError(f"{MEASURED} is blank: nothing to compare with")
    if m <= 0:
        raise FlopcastError(f"{MEASURED} must be positive, got {row[MEASURED].strip()}")
    return m


def _catalog_model(row: dict) -> Model | None:
    """The catalog entry named like the row whose dimensions agree with the row's stated ones."""
    name = row["model"].strip().lower()
    key = catalog.resolve_name("model", name)
    candidates = [key] if key else []
    # an alias may be shared by entries of different sources: check every entry naming it
    for k, e in catalog.raw("model").items():
        if name in [str(a).lower() for a in e.get("aliases") or []] and k not in candidates:
            candidates.append(k)
    for k in candidates:
        m = catalog.load_model(k)
        dims = {"layers": m.layers, "hidden": m.hidden, "heads": m.heads}
        if all(_int(row.get(d)) in (None, v) for d, v in dims.items()):
            return m
    return None


_MOE_ARCH = {"moe_shared_experts": "shared_experts", "moe_dense_layers": "dense_layers", "moe_layer_freq": "layer_freq"}


def model_of(row: dict) -> Model:
    base = _catalog_model(row)
    d = {}
    for key in ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "seq_len"):
        v = _int(row.get(key))
        if v is not None:
            d[key] = v
    if row.get("mlp"):
        d["mlp"] = row["mlp"].strip().lower()
    e = _int(row.get("moe_experts"))
    if e:
        d["moe"] = {"experts": e, "topk": _int(row.get("moe_topk")) or 1, "expert_ffn": _int(row.get("moe_expert_ffn"))}
    arch = {k: _int(row.get(k)) for k in ARCH_COLUMNS if _int(row.get(k)) is not None}
    if base is not None:
        m = base
        upd = {k: v for k, v in d.items() if k not in ("mlp", "moe")}
        if "ffn_hidden" in upd and base.moe and base.moe.dense_layers == 0:
            upd.pop("ffn_hidden")
        if "mtp_layers" in arch:
            upd["mtp_layers"] = arch["mtp_layers"]
        if base.moe and any(k.startswith("moe_") for k in arch):
            upd["moe"] = replace(base.moe, **{f: arch[c] for c, f in _MOE_ARCH.items() if c in arch})
        if "mla_kv_lora_rank" in arch:
            if not base.mla:
                raise FlopcastError(f"mla_kv_lora_rank is set but {base.label} has no multi-head latent attention")
            upd["mla"] = replace(base.mla, kv_lora_rank=arch["mla_kv_lora_rank"])
        return replace(m, **upd)
    if "mla_kv_lora_rank" in arch:
        raise FlopcastError("mla_kv_lora_rank needs a catalog model with MLA (the other latent widths come from it)")
    if "moe" in d:
        d["moe"].update({f: arch[c] for c, f in _MOE_ARCH.items() if c in arch})
    if "mtp_layers" in arch:
        d["mtp_layers"] = arch["mtp_layers"]
    missing = [k for k in ("vocab",) if k not in d]
    if missing:
        raise FlopcastError(f"model {row['model']!r} is not in the catalog and the row lacks {', '.join(missing)}")
    d.setdefault("kv_heads", d["heads"])
    return catalog.model_from_dict(row["model"], d)


# A node's scale-out network as a source states it, e.g. "A100 80GB (1600 Gbps RoCE) section": the
# bandwidth of the whole node, in the source locator or the notes.
# Gigabits only: "GB/s" (gigabytes) is not a network rate written this way, and must not read as Gb/s.
_NETWORK = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*(?:[Gg]bps|[Gg]bit/s|[Gg]b/s)\b")


def stated_network(row: dict, system: System) -> System:
    """The chip's default node with the scale-out bandwidth the row's source states for its nodes, if it
    states one (the catalog's instance network otherwise): a row is simulated on the hardware it ran on."""
    m = _NETWORK.search(f"{row.get('source_locator') or ''} {row.get('notes') or ''}")
    if not m or not system.tiers or system.tiers[-1].size <= system.chips_per_node:
        return system
    node_bits = float(m.group(1)) * 1e9
    tier = replace(system.tiers[-1], name=f"{m.group(0)} (stated)", bandwidth=node_bits / 8 / system.chips_per_node)
    return replace(system, tiers=(*system.tiers[:-1], tier),
                   name=f"{system.name}, scale-out {m.group(0)} per node as the source states")


def case_of(row: dict, fixed_space: dict | None = None) -> Case:
    run = row.get("run_id", "?")
    check_row(row)
    model = model_of(row)
    system = stated_network(row, catalog.system_for(row["hardware"].strip()))
    chips = _int(row["chips"])
    if not chips:
        raise FlopcastError("chips is blank")
    pinned = {}
    for cell in ("tp", "pp", "dp", "cp", "ep", "vp", "micro_batch", "global_batch"):
        v = _int(row.get(cell))
        if v is not None:
            pinned[cell] = (v,)
    for cell, cls in (("recompute", Recompute), ("sharding", Sharding)):
        v = (row.get(cell) or "").strip()
        if v:
            pinned[cell] = (parse_choice(cls, v, cell),)
    pinned["dtype"] = (Dtype.parse(row["dtype"]),)
    if not model.moe:
        pinned.setdefault("ep", (1,))
    software = software_of(row)
    if software == ERA_2021_SOFTWARE:
        pinned["sequence_parallel"] = (0,)
        pinned.setdefault("cp", (1,))  # context parallelism: Megatron-Core 2023 (ring attention, Liu et al. 2023)
        if "recompute" not in pinned:
            pinned["recompute"] = (Recompute.NONE, Recompute.FULL)
    if (row.get("schedule") or "").strip():
        pinned["schedule"] = (parse_choice(Schedule, row["schedule"], "schedule"),)
    elif "vp" in pinned:
        pinned["schedule"] = (Schedule.INTERLEAVED,) if pinned["vp"][0] > 1 else (Schedule.ONE_F_ONE_B,)
    # degrees: when three of tp, pp, dp, cp are stated the fourth follows from the chip count; when all
    # four are stated but multiply to a divisor of the chips, the missing factor r is data parallel when
    # the global batch can spread over dp x r (x the micro-batch, if stated), else context parallel when the
    # sequence divides by cp x r; otherwise dp is taken from the chips (the row's dp is noted)
    degrees = ("tp", "pp", "dp", "cp")
    if all(d in pinned for d in degrees):
        product = int(np.prod([pinned[d][0] for d in degrees]))
        if product != chips:
            r = chips // product if chips % product == 0 else 0
            dp, cp = pinned["dp"][0], pinned["cp"][0]
            gb, mb = pinned.get("global_batch", (None,))[0], pinned.get("micro_batch", (1,))[0]
            if r and gb is not None and gb % (dp * r * mb) != 0 and model.seq_len % (cp * r) == 0:
                pinned["cp"] = (cp * r,)
            else:
                del pinned["dp"]
    blank = [d for d in degrees if d not in pinned]
    if len(blank) == 1:
        rest = int(np.prod([pinned[d][0] for d in degrees if d in pinned]))
        if chips % rest == 0:
            pinned[blank[0]] = (chips // rest,)
    if "cp" not in pinned and all(d in pinned for d in ("tp", "pp", "dp")):
        pinned["cp"] = (1,)
    chosen = tuple(k for k in ("tp", "pp", "dp", "cp", "ep", "vp", "micro_batch", "global_batch", "recompute",
                               "sharding", "sequence_parallel", "schedule") if k not in pinned or len(pinned[k]) > 1)
    space = search_mod.SearchSpace(**pinned)
    return Case(run, row.get("source", ""), model, system, chips, space, chosen, _float(row.get(MEASURED)), software)


def load_cases(path) -> tuple[list[Case], list[Skipped]]:
    """Every row as a Case, or as a Skipped with the reason (an unreadable or impossible cell, an unknown chip)."""
    header, rows = read_table(path)
    check_columns(header, path)
    require_rows(rows, path)
    cases, skipped = [], []
    for row in rows:
        try:
            cases.append(case_of(row))
        except FlopcastError as exc:
            try:
                chips = parse_number("chips", row.get("chips"), whole=True, minimum=1) or 0
            except FlopcastError:
                chips = 0
            skipped.append(Skipped(row.get("run_id") or "?", row.get("source", ""), row.get("hardware", ""), str(exc),
                                   _safe_float(row.get(MEASURED)), row.get("model", ""), chips))
    return cases, skipped


def best_layout(case: Case, cal: Calibration) -> tuple[Layout | None, str]:
    """The stated layout completed by the search; (None, reason) when nothing valid fits."""
    out = search_mod.search(case.model, case.system, case.chips, cal, case.space, allow_idle=False,
                            software=case.software)
    if out.n_fit == 0:
        if out.batch.size and out.results:
            i = int(np.argmin(out.results["memory_bytes"]))
            return out.batch.layout(i), "stated layout does not fit in memory (predicted anyway)"
        reasons = ", ".join(f"{k} ({v})" for k, v in out.rejected.items()) or "no candidates"
        return None, f"no valid layout: {reasons}"
    return out.batch.layout(int(out.order[0])), ""


def predict(case: Case, layout: Layout, cal: Calibration) -> float:
    res = training.evaluate(case.model, case.system, LayoutBatch.of([layout]), cal, software=case.software)
    return float(res["tokens_per_s"][0]) / case.chips


def predict_columns(case: Case, layout: Layout, cal: Calibration, k: int) -> np.ndarray:
    """Tokens/s/chip of one layout under k calibrations at once: cal's parameters are arrays of k values."""
    lb = LayoutBatch.of([layout]).take(np.zeros(k, dtype=int))
    res = training.evaluate(case.model, case.system, lb, cal, software=case.software, dedupe=False)
    return np.asarray(res["tokens_per_s"], dtype=float) / case.chips


@dataclass
class RowResult:
    run_id: str
    source: str
    model: str
    hardware: str
    chips: int
    status: str
    reason: str = ""
    layout: dict = field(default_factory=dict)
    chosen: tuple = ()
    predicted: float | None = None
    measured: float | None = None
    kind: str = ""  # "dense" or "moe" (the simulated model's architecture); blank for skipped rows

    @property
    def error_pct(self) -> float | None:
        if self.predicted is None or not self.measured:
            return None
        return 100.0 * (self.predicted - self.measured) / self.measured

    def to_dict(self) -> dict:
        return {
            "run_id": self.run_id, "source": self.source, "model": self.model, "hardware": self.hardware,
            "chips": self.chips, "status": self.status, "reason": self.reason,
            "predicted_tokens_per_s_per_chip": self.predicted, "measured_tokens_per_s_per_chip": self.measured,
            "error_pct": self.error_pct, "layout": self.layout, "chosen_fields": list(self.chosen),
            "kind": self.kind,
        }


def run_validation(path, cal: Calibration, progress=None) -> list[RowResult]:
    cases, skipped = load_cases(path)
    out = []
    for c in cases:
        lay, why = best_layout(c, cal)
        hw = c.system.chip.id
        if lay is None:
            out.append(RowResult(c.run_id, c.source, c.model.name, hw, c.chips, "skipped", why, measured=c.measured))
        else:
            out.append(RowResult(c.run_id, c.source, c.model.name, hw, c.chips, "ok", why, lay.as_dict(), c.chosen,
                                 predict(c, lay, cal), c.measured, "moe" if c.model.moe else "dense"))
        if progress:
            progress(1)
    return out + skipped_rows(skipped)


def skipped_rows(skipped: list[Skipped]) -> list[RowResult]:
    return [RowResult(s.run_id, s.source, s.model, s.hardware, s.chips, "skipped", s.reason, measured=s.measured)
            for s in skipped]


def summarize(rows: list[RowResult]) -> dict:
    ok = [r for r in rows if r.status == "ok" and r.error_pct is not None]
    errs = [r.error_pct for r in ok]

    def stats(sub):
        e = [r.error_pct for r in sub]
        return {"n": len(e), "mape_pct": float(np.mean(np.abs(e))) if e else None,
                "bias_pct": float(np.mean(e)) if e else None}

    by_source, by_hw, by_kind = {}, {}, {}
    for key, target in ((lambda r: r.source, by_source), (lambda r: r.hardware, by_hw), (lambda r: r.kind, by_kind)):
        for k in sorted({key(r) for r in ok}):
            target[k] = stats([r for r in ok if key(r) == k])
    worst = sorted(ok, key=lambda r: -abs(r.error_pct))[:5]
    return {
        "n_ok": len(ok),
        "n_skipped": sum(r.status == "skipped" for r in rows),
        "mape_pct": float(np.mean(np.abs(errs))) if errs else None,
        "median_ape_pct": float(statistics.median(np.abs(errs))) if errs else None,
        "bias_pct": float(np.mean(errs)) if errs else None,
        "worst": [{"run_id": r.run_id, "model": r.model, "hardware": r.hardware, "error_pct": r.error_pct} for r in worst],
        "by_source": by_source,
        "by_hardware": by_hw,
        "by_kind": by_kind,  # dense and MoE models apart
    }
