"""One training forecast: a layout checked (or searched) and evaluated, as a frozen TrainResult.

flopcast.api.train wraps `train` here for users (strings such as tokens="15T" accepted); the capacity
planner and the claims call it directly. Errors name the Python argument (`tp=3 must divide ...`); the
command line renames them to its flags.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from .. import catalog, limits
from ..cost import calibrations, uncertainty
from ..cost.uncertainty import Interval
from ..model.efficiency import Calibration
from ..errors import FlopcastError
from ..frame import Tabular
from ..model import hf
from ..model.strategy import (MODERN_SOFTWARE, Layout, LayoutBatch, Recompute, Schedule, Sharding, Software, label,
                              parse_choice)
from ..model.system import Dtype, System
from ..model.workload import Model
from ..simulate import training
from ..units import DAY, HOUR, GiB
from . import search as search_mod

# the ~300B dense GPT of AWS's "300-billion-parameter model in weeks" claim; catalog entry gpt-300b
DEFAULT_MODEL = "gpt-300b"
DEFAULT_SYSTEM = "trn2.48xlarge"
DEFAULT_INSTANCES = 64  # 1,024 Trainium2 chips
TOKENS_PER_PARAM = 20  # Hoffmann et al. 2022 (Chinchilla): ~20 training tokens per parameter


@dataclass(frozen=True)
class TrainResult(Tabular):
    model: Model
    system: System
    layout: Layout
    chips: int  # chips allocated (the cluster)
    step_time_s: float
    time_breakdown_s: dict
    memory_breakdown_bytes: dict
    memory_capacity_bytes: float
    fits: bool
    tokens_per_s: float
    tokens_per_s_per_chip: float
    model_tflops_per_chip: float
    mfu: float
    hfu: float
    tokens: float | None = None
    layout_source: str = "given"  # given | searched | rule
    chosen_fields: tuple = ()
    calibration_basis: str = ""
    notes: tuple = ()
    search_summary: dict = field(default_factory=dict)
    # the prediction interval of this kind of forecast (cost/uncertainty.py); None without uncertainty.yaml
    interval: Interval | None = None
    rates: object = None  # cost.economics.Rates: price, power and PUE; None: the catalog's (rates_for(system))
    software: Software = MODERN_SOFTWARE  # what the forecast assumed of the framework (its CUDA-graph capture)

    @property
    def chips_used(self) -> int:
        return self.layout.chips

    @property
    def idle_chips(self) -> int:
        return self.chips - self.layout.chips

    @property
    def memory_bytes(self) -> float:
        return sum(self.memory_breakdown_bytes.values())

    @property
    def memory_gib(self) -> float:
        return self.memory_bytes / GiB

    @property
    def time_to_train_s(self) -> float | None:
        return None if not self.tokens else self.tokens / self.tokens_per_s

    @property
    def chip_hours(self) -> float | None:
        t = self.time_to_train_s
        return None if t is None else t / HOUR * self.chips

    @property
    def instances(self) -> int:
        """Whole instances rented: a cluster of chips that is not a multiple of a node still pays for the node."""
        return math.ceil(self.chips / self.system.chips_per_node)

    @property
    def instance_hours(self) -> float | None:
        t = self.time_to_train_s
        return None if t is None else t / HOUR * self.instances

    @cached_property
    def expected(self):
        """Time-to-train with faults, checkpoints and restarts (cost/reliability.py), or None without tokens.

        Straggler variation is left out here (cv = 0): the calibrated efficiencies already hold what
        the measured runs lost to it; `flopcast reliability --cv` models it explicitly.
        """
        if not self.tokens:
            return None
        from ..cost.reliability import GoodputAssumptions, goodput_for

        return goodput_for(self, GoodputAssumptions())

    @cached_property
    def bill(self):
        """Cost and energy over the expected time with faults (cost/economics.py), or None without tokens."""
        if not self.tokens:
            return None
        from ..cost import economics

        rates = self.rates if self.rates is not None else economics.rates_for(self.system)
        return economics.bill(self.chips, self.instances, self.time_to_train_s, self.expected.expected_s, rates)

    @property
    def energy_kwh(self) -> float | None:
        """(Chips + hosts and network) x expected time x PUE; the parts in bill.energy_breakdown_kwh."""
        return None if self.bill is None else self.bill.energy_kwh

    @property
    def cost_usd(self) -> float | None:
        """Instances x expected time (downtime and re-done work included) x price."""
        return None if self.bill is None else self.bill.cost_usd

    def launch(self, framework: str):
        """The arguments or YAML that start this layout in `framework` (flopcast.emit.TRAINING: megatron, nemo,
        neuron, maxtext), as a flopcast.emit.Launch; `.render()` is the text with its caveats as comments."""
        from .. import emit

        out = emit.training(framework, self.model, self.system, self.layout, self.tokens,
                            graphs=self.software.graphs_on(self.system.chip.family),
                            dispatcher=self.software.dispatcher)
        if not self.fits:
            out = replace(out, warnings=out.warnings + (
                f"the forecast says this layout does not fit in memory ({self.memory_gib:.1f} GiB of "
                f"{self.memory_capacity_bytes / GiB:.1f} GiB per chip)",))
        return out

    def why_missing(self) -> dict:
        """For each figure that cannot be computed, why."""
        out = {}
        if not self.tokens:
            for k in ("time_to_train", "chip_hours", "energy", "cost"):
                out[k] = "no tokens given"
            return out
        rates = self.bill.rates
        if rates.chip_power_w is None:
            out["energy"] = f"no published power for {self.system.chip.name}: " + str(
                self.system.chip.notes.get("power", "not published"))
        if rates.price_per_hour_usd is None:
            out["cost"] = f"no known price for {self.system.id}: " + str(
                self.system.notes.get("price_per_hour", "not published"))
        if self.expected is not None and not self.expected.finishes:
            out["expected_time_to_train"] = self.expected.never_finishes_reason()
            for k in ("energy", "cost"):  # held for ever: no bill
                out.setdefault(k, out["expected_time_to_train"])
        return out

    def scaled(self, factor: float) -> TrainResult:
        """The same forecast with throughput times `factor` (step time divided by it): an interval's end."""
        f = factor
        return replace(self, step_time_s=self.step_time_s / f, tokens_per_s=self.tokens_per_s * f,
                       tokens_per_s_per_chip=self.tokens_per_s_per_chip * f,
                       model_tflops_per_chip=self.model_tflops_per_chip * f, mfu=self.mfu * f, hfu=self.hfu * f,
                       interval=None)

    def bounds(self) -> dict:
        """key -> (low, high) of every headline figure under the prediction interval; {} without one.

        Each end is the whole forecast recomputed at the interval's slow or fast throughput, so figures that
        are not proportional to it (expected time with failures) follow their own formulas."""
        if self.interval is None:
            return {}
        slow, fast = self.scaled(self.interval.low).to_dict(), self.scaled(self.interval.high).to_dict()
        return {k: tuple(sorted((slow[k], fast[k]))) for k in uncertainty.TRAINING_KEYS
                if slow.get(k) is not None and fast.get(k) is not None}

    def to_dict(self) -> dict:
        return uncertainty.with_bounds(self._dict(), self.bounds(), self.interval)

    def _dict(self) -> dict:
        mem = self.memory_breakdown_bytes
        d = {
            "model": self.model.label,
            "hardware": self.system.id,
            "chip": self.system.chip.id,
            "chips": self.chips,
            "chips_used": self.chips_used,
            "idle_chips": self.idle_chips,
            "layout": self.layout.as_dict(),
            "layout_source": self.layout_source,
            "chosen_fields": list(self.chosen_fields),
            "microbatches": self.layout.microbatches,
            "step_time_s": self.step_time_s,
            "time_breakdown_s": dict(self.time_breakdown_s),
            "tokens_per_s": self.tokens_per_s,
            "tokens_per_s_per_chip": self.tokens_per_s_per_chip,
            "model_tflops_per_chip": self.model_tflops_per_chip,
            "mfu": self.mfu,
            "hfu": self.hfu,
            "memory_gib": self.memory_gib,
            "memory_breakdown_gib": {k: v / GiB for k, v in mem.items()},
            "memory_capacity_gib": self.memory_capacity_bytes / GiB,
            "fits": bool(self.fits),
            "tokens": self.tokens,
            "time_to_train_s": self.time_to_train_s,
            "time_to_train_days": None if self.time_to_train_s is None else self.time_to_train_s / DAY,
            "chip_hours": self.chip_hours,
            "instances": self.instances,
            "instance_hours": self.instance_hours,
            "expected_time_to_train_s": self.expected.expected_s if self.expected else None,
            "expected_time_to_train_days": self.expected.expected_s / DAY if self.expected else None,
            "goodput": self.expected.goodput if self.expected else None,
            "expected_interruptions": self.expected.interruptions if self.expected else None,
            "checkpoint_interval_s": self.expected.interval_s if self.expected else None,
            "energy_kwh": self.energy_kwh,
            "cost_usd": self.cost_usd,
            **({k: v for k, v in self.bill.to_dict().items() if k not in ("energy_kwh", "cost_usd")}
               if self.bill is not None else {}),
            "unavailable": self.why_missing(),
            "calibration_basis": self.calibration_basis,
            "notes": list(self.notes),
        }
        return d


def resolve_model(model: str | Model, seq_len: int | None = None) -> Model:
    m = model if isinstance(model, Model) else catalog.load_model(model)
    if seq_len is not None:
        m = replace(m, seq_len=limits.check("seq_len", seq_len))
    return m


def resolve_system(hardware: str | System) -> System:
    return hardware if isinstance(hardware, System) else catalog.system_for(hardware)


def _enum(cls, value, name):
    if value is None or isinstance(value, cls):
        return value
    if cls is Dtype:
        return Dtype.parse(str(value))
    return parse_choice(cls, str(value), name)


def check_positive(**kw):
    """Each count in its range (flopcast.limits); one sentence naming the argument otherwise."""
    for k, v in kw.items():
        limits.check(k, v)


def layout_space(tp=None, pp=None, dp=None, cp=None, ep=None, vp=None, micro_batch=None, global_batch=None,
                 recompute=None, sharding=None, sequence_parallel=None, dtype=None, schedule=None,
                 batch_range=None, dtypes=None, etp=None) -> search_mod.SearchSpace:
    """A search space with the given fields pinned."""
    check_positive(tp=tp, pp=pp, dp=dp, cp=cp, ep=ep, vp=vp, micro_batch=micro_batch, global_batch=global_batch,
                   etp=etp or None)  # etp 0: as tp (Layout.etp)
    one = lambda v: None if v is None else (v,)
    rc, sh, dt, sc = (_enum(Recompute, recompute, "recompute"), _enum(Sharding, sharding, "sharding"),
                      _enum(Dtype, dtype, "dtype"), _enum(Schedule, schedule, "schedule"))
    if vp is not None and vp > 1 and sc is None:
        sc = Schedule.INTERLEAVED
    dts = tuple(_enum(Dtype, d, "dtype") for d in dtypes) if dtypes else one(dt) or (Dtype.BF16,)
    return search_mod.SearchSpace(
        tp=one(tp), pp=one(pp), dp=one(dp), cp=one(cp), ep=one(ep), vp=one(vp), micro_batch=one(micro_batch),
        global_batch=one(global_batch), recompute=one(rc), sharding=one(sh),
        sequence_parallel=None if sequence_parallel is None else (int(bool(sequence_parallel)),),
        dtype=dts, schedule=one(sc), batch_range=batch_range, etp=one(etp),
    )


MAX_TOKENS = limits.LIMITS["tokens"].high  # 10,000x the largest published pre-training run (Llama 3: 15.6T tokens)


def _valid_divisors(n: int, limit: int, ok=lambda d: True) -> str:
    vals = [d for d in range(1, limit + 1) if n % d == 0 and ok(d)]
    return ", ".join(map(str, vals)) or "none"


def _check_pinned(m: Model, system: System, layout: dict):
    """One sentence per pinned field that cannot work whatever the other fields are."""
    chip, node = system.chip, system.tp_domain
    check_positive(**{k: layout.get(k) for k in ("tp", "pp", "dp", "cp", "ep", "vp", "micro_batch", "global_batch")},
                   etp=layout.get("etp") or None)
    tp, pp, cp, ep, vp = (layout.get(k) for k in ("tp", "pp", "cp", "ep", "vp"))
    etp = layout.get("etp") or None
    if tp is not None:
        splits_kv = lambda d: m.kv_heads % d == 0 or d % m.kv_heads == 0
        valid_tp = _valid_divisors(m.heads, node, splits_kv)
        if tp > node:
            where = "node" if node == system.chips_per_node else "ICI slice"
            raise FlopcastError(f"`tp={tp}` exceeds the {node} chips of one {system.id} {where}; tensor parallelism "
                                f"stays within a {where} (valid: {valid_tp})")
        if m.heads % tp or not splits_kv(tp):
            raise FlopcastError(f"`tp={tp}` must divide the {m.heads} attention heads ({m.kv_heads} KV heads); "
                                f"valid on {system.id}: {valid_tp}")
    if layout.get("sequence_parallel") and tp == 1:
        raise FlopcastError("`sequence_parallel=True` needs `tp` > 1 (it splits the tensor-parallel group's "
                            "activations)")
    if pp is not None and pp > m.layers:
        raise FlopcastError(f"`pp={pp}` exceeds the {m.layers} layers of {m.label}")
    if cp is not None and m.seq_len % cp:
        raise FlopcastError(f"`cp={cp}` must divide the sequence of {m.seq_len} tokens")
    if ep is not None and ep > 1:
        if not m.moe:
            raise FlopcastError(f"`ep={ep}`: {m.label} is a dense model (expert parallelism needs experts); leave "
                                f"`ep` out")
        if m.moe.experts % ep:
            raise FlopcastError(f"`ep={ep}` must divide the {m.moe.experts} experts of {m.label} "
                                f"(valid: {_valid_divisors(m.moe.experts, m.moe.experts)})")
    if etp is not None:
        if not m.moe and etp != tp:
            raise FlopcastError(f"`etp={etp}`: {m.label} is a dense model (expert tensor parallelism needs experts); "
                                "leave `etp` out")
        if m.moe and m.moe.expert_ffn % etp:
            valid = _valid_divisors(m.moe.expert_ffn, min(m.moe.expert_ffn, node))
            raise FlopcastError(f"`etp={etp}` must divide the experts' width of {m.moe.expert_ffn} "
                                f"(valid on {system.id}: {valid})")
        if etp > node:
            raise FlopcastError(f"`etp={etp}` exceeds the {node} chips of one {system.id} node; expert tensor "
                                "parallelism stays within a node, as tensor parallelism does")
    schedule = layout.get("schedule")
    if vp is not None and vp > 1:
        if schedule is not None and _enum(Schedule, schedule, "schedule") not in (Schedule.INTERLEAVED,
                                                                                   Schedule.ONE_F_ONE_B_OVERLAP):
            raise FlopcastError(f"`vp={vp}` needs `schedule=interleaved` or `schedule=1f1b-overlap` (the schedules "
                                "with virtual stages)")
        if pp == 1:
            raise FlopcastError(f"`vp={vp}` needs `pp` > 1 (virtual stages split pipeline stages)")
    dtype = layout.get("dtype")
    if dtype is not None:
        d = _enum(Dtype, dtype, "dtype")
        why = search_mod.training_dtype_problem(chip, d)
        if why:
            valid = [x.label for x in Dtype if search_mod.training_dtype_problem(chip, x) is None]
            raise FlopcastError(f"`dtype={d.label}`: {why}; valid on {chip.id}: {', '.join(valid)}")


def _scalar_rules(model: Model, system: System, layout: Layout, chips: int):
    lb = LayoutBatch.of([layout])
    broken = [name for name, ok in search_mod.rules(model, system, lb, chips, exact_chips=True).items() if not ok[0]]
    if not broken:
        return
    rule = broken[0]
    detail = {
        "tp divides the attention heads": f"tp={layout.tp}, heads={model.heads}, kv heads={model.kv_heads}",
        "tp fits within one node": f"tp={layout.tp}, {system.id} joins {system.tp_domain} chips by its scale-up fabric",
        search_mod.PIPELINE_SLOTS_RULE: f"pp={layout.pp}, vp={layout.vp}, layers={model.layers}",
        "global batch divides into dp x micro-batch": f"global batch {layout.global_batch}, dp={layout.dp}, "
                                                      f"micro-batch {layout.micro_batch}",
        "cp divides the sequence": f"cp={layout.cp}, sequence {model.seq_len}",
        search_mod.EP_RULE: f"ep={layout.ep}, etp={layout.expert_tp}, tp={layout.tp}, cp={layout.cp}, "
                            f"dp={layout.dp}, experts={model.moe.experts if model.moe else 0}",
        search_mod.ETP_RULE: f"etp={layout.expert_tp}, tp={layout.tp}, sequence parallel "
                             f"{'on' if layout.sequence_parallel else 'off'}",
        "tp x pp x dp x cp equals the chips": f"{layout.tp}x{layout.pp}x{layout.dp}x{layout.cp}={layout.chips}, "
                                              f"chips={chips}",
        "chips available": f"the layout needs {layout.chips} chips, the cluster has {chips}",
        "sequence parallel needs tp > 1": "use `sequence_parallel=False` with tp=1",
        "vp > 1 only with the interleaved schedule, which needs pp > 1": f"vp={layout.vp}, pp={layout.pp}, "
                                                                         f"schedule={label(layout.schedule)}",
    }.get(rule, "")
    raise FlopcastError(f"invalid layout: {rule} ({detail})")


def result_from(model, system, chips, lb: LayoutBatch, res: dict, i: int, cal: Calibration, tokens=None,
                layout_source="given", chosen=(), notes=(), summary=None) -> TrainResult:
    layout = lb.layout(i)
    g = lambda k: float(np.asarray(res[k])[i]) if np.ndim(res[k]) else float(res[k])
    parts = {k: float(np.broadcast_to(v, res["step_time_s"].shape)[i]) for k, v in res["time_parts"].items()}
    mem = {k: float(np.broadcast_to(v, res["step_time_s"].shape)[i]) for k, v in res["memory_parts"].items()}
    return TrainResult(
        model=model, system=system, layout=layout, chips=int(chips),
        step_time_s=g("step_time_s"), time_breakdown_s=parts, memory_breakdown_bytes=mem,
        memory_capacity_bytes=system.chip.memory, fits=bool(np.asarray(res["fits"])[i]),
        tokens_per_s=g("tokens_per_s"), tokens_per_s_per_chip=g("tokens_per_s") / chips,
        model_tflops_per_chip=g("model_flops_per_s_per_chip") * layout.chips / chips / 1e12,
        mfu=g("mfu") * layout.chips / chips, hfu=g("hfu") * layout.chips / chips,
        tokens=tokens, layout_source=layout_source, chosen_fields=tuple(chosen),
        calibration_basis=cal.basis(system.chip), notes=(*notes, *hf.result_notes(model), *system.chip.power_notes()),
        search_summary=summary or {}, interval=uncertainty.training_interval(cal, system.chip, bool(model.moe)),
    )


def train(model: str | Model = DEFAULT_MODEL, hardware: str | System = DEFAULT_SYSTEM, chips: int | None = None,
          *, tokens: float | None = None, seq_len: int | None = None, calibration: Calibration | str | None = None,
          objective: str = "throughput", progress=None, shared=None, exhaustive: bool = True, work_tables=None,
          software: Software = MODERN_SOFTWARE, **layout) -> TrainResult:
    """Forecast one training configuration. Layout fields left out are chosen by the search.

    layout: tp, pp, dp, cp, ep, vp, micro_batch, global_batch, recompute, sharding,
    sequence_parallel, dtype, schedule (enum members or their names), etp (the experts' tensor-parallel degree;
    0 = tp; unset: searched among tp and 1 for MoE models).
    progress: a flopcast.progress.Progress that counts the searched candidates (optional).
    calibration: None (the shipped calibration), a Calibration, or the path of a file `flopcast calibrate` wrote.
    shared: a flopcast.plan.shared.SearchShare that searches of hardware variants reuse (optional; same answer).
    exhaustive=False: the throughput search evaluates only the layouts a lower bound cannot rule out
    (plan/bounded.py; the same layout, the counts of fitting layouts only of those evaluated); work_tables: a
    dict the caller keeps to reuse bounded.WorkTable across calls (optional). software: model.strategy.Software.
    """
    m = resolve_model(model, seq_len)
    system = resolve_system(hardware)
    cal = calibrations.training(calibration)
    case = _case(m, system, cal, chips, tokens, layout, software)
    if not isinstance(case, TrainResult):
        chips, tokens, space, free = case
        case = _searched(m, system, chips, cal, space, free, tokens, objective, progress, shared, exhaustive,
                         work_tables, software=software)
    return replace(case, software=software)


def _case(m: Model, system: System, cal, chips, tokens, layout: dict, software: Software = MODERN_SOFTWARE):
    """One case's arguments checked: its TrainResult if the layout is pinned, else (chips, tokens, space, free)."""
    if chips is None:
        chips = system.chips_per_node * (DEFAULT_INSTANCES if system.id == DEFAULT_SYSTEM else 1)
    check_positive(chips=chips)
    if chips > system.max_chips:
        raise FlopcastError(f"{system.id} scales to {system.max_chips} chips; `chips={chips}` is more")
    tokens = limits.check("tokens", tokens)
    unknown = set(layout) - set(Layout.__dataclass_fields__)
    if unknown:
        raise FlopcastError(f"unknown layout field(s) {', '.join(sorted(unknown))}; valid: "
                            f"{', '.join(Layout.__dataclass_fields__)}")
    _check_pinned(m, system, layout)
    space = layout_space(**layout)
    pinned = space.pinned()
    free = [k for k in Layout.__dataclass_fields__ if k not in pinned and not (k in ("ep", "etp") and not m.moe)]
    if not m.moe:
        space = replace(space, ep=(1,), etp=space.etp or (0,))
    degrees = [layout[k] for k in ("tp", "pp", "dp", "cp") if layout.get(k)]
    if (len(degrees) == 4 and math.prod(degrees) != chips
            or len(degrees) == 3 and "dp" in layout and chips % math.prod(degrees)):
        raise FlopcastError(f"invalid layout: tp x pp x dp x cp equals the chips "
                            f"({' x '.join(map(str, degrees))} = {math.prod(degrees)}, chips={chips})")
    if "dp" in free and all(k in pinned for k in ("tp", "pp")):
        cp = layout.get("cp") or 1
        if chips % (layout["tp"] * layout["pp"] * cp):
            raise FlopcastError(f"invalid layout: tp x pp x cp = {layout['tp'] * layout['pp'] * cp} does not divide "
                                f"chips={chips}")
        space = replace(space, dp=(chips // (layout["tp"] * layout["pp"] * cp),), cp=space.cp or (1,))
        free.remove("dp")
    if not free:
        lay = Layout(**{k: v[0] for k, v in space.pinned().items()})
        _scalar_rules(m, system, lay, chips)
        lb = LayoutBatch.of([lay])
        res = training.evaluate(m, system, lb, cal, software=software)
        return result_from(m, system, chips, lb, res, 0, cal, tokens)
    return chips, tokens, space, free


def _searched(m, system, chips, cal, space, free, tokens, objective, progress=None, shared=None,
              exhaustive=True, work_tables=None, out=None, software: Software = MODERN_SOFTWARE) -> TrainResult:
    """The searched forecast; out: the bounded search's outcome where the caller ran it (None: searched here)."""
    if out is None and not exhaustive and objective == "throughput" and shared is None:
        from . import bounded

        tables = {} if work_tables is None else work_tables
        table = tables.setdefault(repr((m, system, cal, software)), bounded.WorkTable(m, system, cal, software))
        out = bounded.search(m, system, chips, cal, space, table, software=software)
    if out is None:
        out = search_mod.search(m, system, chips, cal, space, objective=objective, progress=progress, shared=shared,
                                tokens=tokens, software=software, keep=1)
    elif progress is not None:
        progress.add_total(out.considered)
        progress.update(out.considered)
    if out.n_fit == 0:
        reasons = search_mod.rejection_summary(out.rejected)
        if out.batch.size and out.results:
            # nothing fits: show the layout that comes closest, as a result with its breakdown
            i = int(np.argmin(out.results["memory_bytes"]))
            return result_from(m, system, chips, out.batch, out.results, i, cal, tokens, "searched", free,
                               notes=(f"no layout fits in memory; showing the smallest footprint ({reasons})",))
        raise FlopcastError(f"no valid layout for {m.label} on {chips} {system.chip.id} chips "
                            f"({reasons or 'no candidates'})")
    i = int(out.order[0])
    if out.valid is None and out.fit is not None:  # bounded: the others cannot be faster (plan/bounded.py)
        summary = {"candidates": out.considered, "evaluated": out.n_evaluated, "fit": out.n_fit,
                   "rejected": out.rejected}
        how = f"{out.considered:,} candidates, {out.n_evaluated:,} evaluated, the rest bounded away"
    else:
        summary = {"candidates": out.considered, "valid": out.n_valid, "fit": out.n_fit, "rejected": out.rejected}
        how = f"{out.considered:,} candidates, {out.n_fit:,} fit"
    return result_from(m, system, chips, out.batch, out.results, i, cal, tokens, "searched", free,
                       notes=(f"layout searched over {', '.join(free)} ({how})",), summary=summary)


def default_tokens(model: Model) -> float:
    from ..cost.params import total_params

    return TOKENS_PER_PARAM * total_params(model)

