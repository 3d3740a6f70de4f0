"""Published training runs in, predictions vs measurements out.

Each row of a calibration-schema CSV (see validation/README.md) becomes a
model (its dimensions; blanks filled from the catalog entry of the same name), a
system (the chip's default system) and a layout (the stated cells pinned; blank
cells chosen by flopcast's search over just those fields, as a tuned practitioner
would). The measured column is read only to compare, and by the fit.
"""

from __future__ import annotations

import datetime as dt
import re
import statistics
from dataclasses import dataclass, field, replace

import numpy as np

from .. import catalog
from ..model.efficiency import Calibration
from ..errors import FlopcastError
from ..model.strategy import (
    ContextParallel,
    CudaGraphs,
    Dispatcher,
    FlashKernel,
    ERA_2021_SOFTWARE,
    FP32_COPY_LOSS_BYTES,
    MODERN_SOFTWARE,
    Layout,
    LayoutBatch,
    Recompute,
    Schedule,
    Sharding,
    Software,
    parse_choice,
)
from ..model.system import Dtype, System
from ..model.workload import Model
from ..plan import bounded
from ..plan import search as search_mod
from ..simulate import training
from . import measured
from .architecture import (  # noqa: F401
    DEFAULT_SEQ_LEN,
    DEFAULT_VOCAB,
    model_and_assumptions,
    model_of,
)
from .rows import (  # noqa: F401
    MEASURED,
    REQUIRED,
    SHIPPED,
    TEXT_REQUIRED,
    VALIDATION_DIR,
    TRAINING,
    _int,
    _read_all,
    _safe_float,
    check_columns,
    check_row,
    parse_number,
    read_table,
    require_rows,
    resolve_files,
)

LAYOUT_CELLS = ("tp", "pp", "dp", "cp", "ep", "etp", "vp", "micro_batch", "global_batch", "recompute", "sharding",
                "dtype")
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
# FP8 training: the FP8 formats were published on 12 September 2022 (Micikevicius et al., "FP8 Formats for Deep
# Learning", arXiv:2209.05433) with Transformer Engine 0.1.0 (beta) for H100. A blank dtype of a run whose source
# is dated before it is searched in 16-bit formats only.
FP8_TRAINING_SINCE = dt.date(2022, 9, 12)
# Fused attention by framework, where it came later than FlashAttention itself: AXLearn's fuji configurations
# built their attention from GroupedQueryAttention / MultiheadAttention (XLA's unfused softmax(QK^T)V) until
# commit e0e93105, "add flash attention to fuji" (apple/axlearn#506, 4 June 2024), which added the `-flash`
# variants; a fuji figure written before it ran unfused attention.
FUSED_ATTENTION_SINCE = {"axlearn": dt.date(2024, 6, 4)}
# A year, optionally -MM and -DD, not inside a longer number or a hexadecimal commit hash.
_DATE = re.compile(r"(?<![0-9a-fA-F])(19\d\d|20\d\d)(?:-(\d\d))?(?:-(\d\d))?(?![0-9])")


# The date a locator states for its source, as more_training_runs.csv writes it: "[source date: 2023-06 ...]".
_SOURCE_DATE = re.compile(r"\[source date:([^\]]*)\]", re.IGNORECASE)


def _first_date(text: str) -> dt.date | None:
    m = _DATE.search(text or "")
    if not m:
        return None
    y, mo, d = int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1)
    try:
        return dt.date(y, mo, d)
    except ValueError:
        return dt.date(y, 1, 1)


def source_date(row: dict) -> dt.date | None:
    """The date a row's source states: its `date` column, else the locator's `[source date: ...]`, else the first
    date in its source id, else in its locator.

    A bare year or year-month is taken at its first day: the software a source describes is no newer
    than the source, and a run precedes its write-up. None when no cell holds a date."""
    stated = _SOURCE_DATE.search(row.get("source_locator") or "")
    for text in (row.get("date"), stated.group(1) if stated else "", row.get("source"), row.get("source_locator")):
        d = _first_date(text or "")
        if d is not None:
            return d
    return None


# Training frameworks a row may name (its `framework` column, else a word of its source, locator or notes), and
# how each gathers ZeRO-3 / FSDP parameters. DeepSpeed's ZeRO-3 fetches each module's parameter tensors on
# their own and prefetches stage3_prefetch_bucket_size parameters ahead, 5e7 by default
# (deepspeed/runtime/zero/config.py, still the default), so most of a large layer is gathered behind no compute;
# PyTorch FSDP gathers one flat parameter per wrapped block and prefetches the next block (backward_prefetch
# BACKWARD_PRE, forward_prefetch; Zhao et al. 2023 sec. 3.3.2), as do Megatron-Core's FSDP and XLA's FSDP
# (MaxText, AXLearn: the latency-hiding scheduler issues the next layer's all-gather during this one's compute).
_FRAMEWORK = re.compile(r"\b(deepspeed|fsdp|torchtitan|maxtext|axlearn|megatron|nemo|neuron)", re.IGNORECASE)
DEEPSPEED_ZERO3 = dict(zero3_gathers_per_layer=ERA_2021_SOFTWARE.zero3_gathers_per_layer,
                       zero3_prefetch_params=ERA_2021_SOFTWARE.zero3_prefetch_params)
JAX_FRAMEWORKS = ("maxtext", "axlearn")  # recompute by a checkpoint policy's names (Software.named_remat)
BLOCK_PREFETCH_ZERO3 = dict(zero3_gathers_per_layer=MODERN_SOFTWARE.zero3_gathers_per_layer,
                            zero3_prefetch_params=MODERN_SOFTWARE.zero3_prefetch_params)


def framework_of(row: dict) -> str:
    """The training framework a row names, lower case: its `framework` column, else the first known framework
    named in its source, locator or notes; "" when none is named."""
    for text in (row.get("framework"), row.get("source"), row.get("source_locator"), row.get("notes")):
        m = _FRAMEWORK.search(text or "")
        if m:
            return m.group(1).lower()
    return ""


# what the frameworks do when a run states no graph capture: the XLA and Neuron stacks compile the whole step, the
# PyTorch ones (Megatron-Core's --cuda-graph-impl defaults to none) run eagerly
_FRAMEWORK_GRAPHS = {"maxtext": CudaGraphs.FULL, "axlearn": CudaGraphs.FULL, "neuron": CudaGraphs.FULL,
                     "megatron": CudaGraphs.NONE, "nemo": CudaGraphs.NONE, "deepspeed": CudaGraphs.NONE,
                     "fsdp": CudaGraphs.NONE}


def cuda_graphs_of(row: dict) -> CudaGraphs | None:
    """A row's graph capture: its `cuda_graphs` cell (none, partial, full), else the default of the framework it
    names (_FRAMEWORK_GRAPHS), else None: the default of its chip's frameworks (model.strategy.default_cuda_graphs)."""
    cell = (row.get("cuda_graphs") or "").strip()
    if cell:
        return parse_choice(CudaGraphs, cell, "cuda_graphs")
    return _FRAMEWORK_GRAPHS.get(framework_of(row))


# a row's `dispatcher` cell: Megatron-Core's --moe-token-dispatcher-type, or the flex dispatcher's backend as
# Megatron-Bridge's perf configs name it (moe_flex_dispatcher_backend deepep / hybridep)
_DISPATCHERS = {"alltoall": Dispatcher.ALLTOALL, "flex": Dispatcher.FLEX, "deepep": Dispatcher.FLEX,
                "hybridep": Dispatcher.FLEX}


def dispatcher_of(row: dict) -> Dispatcher:
    """A row's MoE token dispatcher: its `dispatcher` cell, else Megatron-Core's default (the all-to-all one)."""
    cell = (row.get("dispatcher") or "").strip().lower()
    if cell not in ("", *_DISPATCHERS):
        raise FlopcastError(f"dispatcher {row['dispatcher'].strip()!r} is not one of {', '.join(_DISPATCHERS)} "
                            "(or blank)")
    return _DISPATCHERS.get(cell, Dispatcher.ALLTOALL)


def before_software_cutoff(row: dict) -> bool:
    """Whether a row's source is dated before sequence parallelism, selective recomputation and FlashAttention."""
    d = source_date(row)
    return d is not None and d < SOFTWARE_CUTOFF


def software_of(row: dict) -> Software:
    """The framework features a row's run could have had, from its source's date (never its measurement), with
    the ZeRO-3 gathering of the framework it names (the date's default otherwise)."""
    d = source_date(row)
    if d is None:
        base = MODERN_SOFTWARE
    elif d < SOFTWARE_CUTOFF:  # before_software_cutoff, its date already read
        base = ERA_2021_SOFTWARE
    else:
        base = EVEN_PIPELINE_SOFTWARE if d < UNEVEN_PIPELINE_SINCE else MODERN_SOFTWARE
    framework = framework_of(row)
    fused_since = FUSED_ATTENTION_SINCE.get(framework)
    if d is not None and fused_since is not None and d < fused_since:
        base = replace(base, flash_attention=False)
    if framework == "deepspeed":
        return replace(base, **DEEPSPEED_ZERO3)
    if framework == "torchtitan":  # FSDP2 per block; vanilla TP (its AsyncTP is a separate switch the rows state)
        return replace(base, **BLOCK_PREFETCH_ZERO3, tp_comm_overlap=False, loss_bytes_per_logit=FP32_COPY_LOSS_BYTES,
                       context_parallel=ContextParallel.ALLGATHER, fp8_cast_passes=True)
    return replace(base, **BLOCK_PREFETCH_ZERO3, named_remat=framework in JAX_FRAMEWORKS) if framework else base


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
    assumed: tuple = ()  # sentences: what flopcast filled in for cells the row left blank


@dataclass(frozen=True)
class Skipped:
    run_id: str
    source: str
    hardware: str
    reason: str
    measured: float | None = None
    model: str = ""
    chips: int = 0


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


def dtypes_of(row: dict, system: System) -> tuple:
    """The row's dtype, or when blank the formats a tuned run could have trained in: BF16, and FP8 where the
    chip's FP8 peak exceeds its BF16 peak (FP8 units) and the source is not dated before FP8 training existed."""
    text = (row.get("dtype") or "").strip()
    if text:
        return (Dtype.parse(text),)
    chip = system.chip
    out = [Dtype.BF16]
    d = source_date(row)
    if chip.peak_flops.get(Dtype.FP8, 0) > chip.peak_flops.get(Dtype.BF16, 0) and (d is None
        or d >= FP8_TRAINING_SINCE):
        out.append(Dtype.FP8)
    return tuple(out)


def _row_software(row: dict, assumed: tuple) -> tuple[Software, tuple]:
    """The row's software (`software_of`) with what its `cuda_graphs` and `attention` cells state, and the
    assumptions with a sentence where attention is unfused by the date rule rather than a stated cell."""
    software = replace(software_of(row), cuda_graphs=cuda_graphs_of(row), dispatcher=dispatcher_of(row))
    attention = (row.get("attention") or "").strip().lower()
    if attention not in ("", "fused", "triton", "unfused"):
        raise FlopcastError(f"attention {row['attention'].strip()!r} is not one of fused, triton, unfused (or blank)")
    if attention:
        software = replace(software, flash_attention=attention != "unfused",
                           flash_kernel=FlashKernel.TRITON if attention == "triton" else FlashKernel.FA2)
    elif not software.flash_attention:
        assumed = (*assumed, f"attention unfused: the source's date ({source_date(row)}) precedes fused attention in "
                             f"{framework_of(row) or 'its software'}")
    overlap = (row.get("tp_comm_overlap") or "").strip().lower()
    if overlap not in ("", "yes", "no"):
        raise FlopcastError(f"tp_comm_overlap {row['tp_comm_overlap'].strip()!r} is not one of yes, no (or blank)")
    if overlap:
        software = replace(software, tp_comm_overlap=overlap == "yes")
    gather = (row.get("fp8_allgather") or "").strip().lower()
    if gather not in ("", "yes", "no"):
        raise FlopcastError(f"fp8_allgather {row['fp8_allgather'].strip()!r} is not one of yes, no (or blank)")
    if gather:
        software = replace(software, fp8_allgather=gather == "yes")
    return software, assumed


def case_of(row: dict, fixed_space: dict | None = None) -> Case:
    run = row.get("run_id", "?")
    check_row(row)
    model, assumed = model_and_assumptions(row)
    stated_dtype = Dtype.parse(row["dtype"]) if (row.get("dtype") or "").strip() else None
    system = stated_network(row, catalog.system_for(row["hardware"].strip()))
    chips = _int(row["chips"])
    if not chips:
        raise FlopcastError("chips is blank")
    value, how = measured.tokens_per_s_per_chip(row, model, system.chip, stated_dtype)
    if how != measured.TOKENS:
        assumed = (*assumed, f"measured figure converted: {how} = {value:,.1f} tokens/s/chip")
    pinned = {}
    for cell in ("tp", "pp", "dp", "cp", "ep", "etp", "vp", "micro_batch", "global_batch"):
        v = _int(row.get(cell))
        if v is not None:
            pinned[cell] = (v,)
    for cell, cls in (("recompute", Recompute), ("sharding", Sharding)):
        v = (row.get(cell) or "").strip()
        if v:
            pinned[cell] = (parse_choice(cls, v, cell),)
    pinned["dtype"] = dtypes_of(row, system)
    if not model.moe:
        pinned.setdefault("ep", (1,))
        pinned["etp"] = (0,)  # a dense model's etp is its tp
    software, assumed = _row_software(row, assumed)
    if before_software_cutoff(row):
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
    chosen = tuple(k for k in ("tp", "pp", "dp", "cp", "ep", "etp", "vp", "micro_batch", "global_batch", "recompute",
                               "sharding", "sequence_parallel", "schedule", "dtype")
                   if k not in pinned or len(pinned[k]) > 1)
    space = search_mod.SearchSpace(**pinned)
    return Case(run, row.get("source", ""), model, system, chips, space, chosen, value, software, assumed)


def load_cases(path) -> tuple[list[Case], list[Skipped]]:
    """Every row as a Case, or as a Skipped with the reason (an unreadable or impossible cell, an unknown chip).

    path: a CSV, a list of CSVs read as one table, or a short name of a shipped file (resolve_files)."""
    rows = _read_all(path)
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
    """The stated layout completed by the search; (None, reason) when nothing valid fits.

    The branch-and-bound search (plan/bounded.py) finds the exhaustive search's best layout, ties broken alike,
    evaluating a fraction of the candidates (the fit searches every row twice: 13-17 s -> ~4.5 s for the shipped
    training rows); the exhaustive search answers where its bound fails, no layout fits (the smallest footprint
    and the rules' counts need every candidate) or the stated cells leave few candidates (bounded.best_search)."""
    out = bounded.best_search(case.model, case.system, case.chips, cal, case.space, allow_idle=False,
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


def predict_rows(cases: list[Case], layouts: list[Layout], cal: Calibration, k: int) -> np.ndarray:
    """(rows, k) tokens/s/chip of several rows of one model, system and software under k calibrations: cal's
    parameters are arrays of len(cases) x k values, the k of each row in turn (np.tile of the k columns)."""
    lb = LayoutBatch.of(layouts).take(np.repeat(np.arange(len(layouts)), k))
    c = cases[0]
    rate = training.tokens_per_s(c.model, c.system, lb, cal, software=c.software, dedupe=False)
    chips = np.array([x.chips for x in cases], dtype=float)
    return np.asarray(rate, dtype=float).reshape(len(cases), k) / chips[:, None]


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
    assumed: tuple = ()  # what flopcast filled in for cells the row left blank, and how the figure was converted

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
            "kind": self.kind, "family": family_of(self.hardware), "assumed": list(self.assumed),
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
                                 predict(c, lay, cal), c.measured, "moe" if c.model.moe else "dense", c.assumed))
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

    by_source, by_hw, by_family, by_kind = {}, {}, {}, {}
    for key, target in ((lambda r: r.source, by_source), (lambda r: r.hardware, by_hw),
                        (lambda r: family_of(r.hardware), by_family), (lambda r: r.kind, by_kind)):
        for k in sorted({key(r) for r in ok}):
            target[k] = stats([r for r in ok if key(r) == k])
    worst = sorted(ok, key=lambda r: -abs(r.error_pct))[:5]
    return {
        "n_ok": len(ok),
        "n_skipped": sum(r.status == "skipped" for r in rows),
        "mape_pct": float(np.mean(np.abs(errs))) if errs else None,
        "median_ape_pct": float(statistics.median(np.abs(errs))) if errs else None,
        "bias_pct": float(np.mean(errs)) if errs else None,
        "worst": [{"run_id": r.run_id, "model": r.model, "hardware": r.hardware, "error_pct": r.error_pct}
                  for r in worst],
        "by_source": by_source,
        "by_hardware": by_hw,
        "by_family": by_family,
        "by_kind": by_kind,  # dense and MoE models apart
    }


def family_of(chip_id: str) -> str:
    """The catalog family of a chip id ("" for an id the catalog does not know)."""
    try:
        return catalog.load_chip(chip_id).family
    except (FlopcastError, KeyError, ValueError):
        return ""
