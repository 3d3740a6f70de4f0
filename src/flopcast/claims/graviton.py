"""Claims 7a-7c: Graviton4 against Graviton3 (30% faster, 50% more cores, 75% more memory bandwidth).

All three rows rest on one set of serving predictions (GravitonEvidence), computed once per run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import catalog
from ..cost import inference as inf
from ..cost.params import total_params
from ..model.system import Dtype
from ..units import GiB
from .evidence import Runs, median, source_of
from .rows import Estimate


# Socket vs socket: r7g.16xlarge (one full Graviton3) and one socket of r8g.48xlarge (96 Graviton4 cores);
# equal cores: c7g.16xlarge and c8g.16xlarge (64 cores each).
SOCKET = (("r7g.16xlarge", 1), ("r8g.48xlarge", 1))
EQUAL_CORES = (("c7g.16xlarge", 1), ("c8g.16xlarge", 1))


def _bound(d: inf.Deployment, batch: int) -> str:
    """Roofline of a decode step (Williams et al. 2009): 2 x params x batch FLOPs vs the weight bytes."""
    t_compute = 2.0 * total_params(d.model) * batch / d.compute_rate
    t_memory = inf.weight_bytes(d.model, d.weights) / d.memory_rate
    return "bandwidth" if t_memory >= t_compute else "compute"


def graviton_cases(quick: bool, engines: dict | None = None) -> list[dict]:
    """Predicted Graviton4 / Graviton3 speed-ups, per case (cost/inference.py predict)."""
    models = ["llama3-8b", "llama3-70b"]
    weights = ["bf16", "q8_0", "q4_0"]
    batches = [1, 8] if quick else [1, 4, 16, 32]
    out, fitted = [], inf.calibration_hardware()  # read once for every case's interval
    for basis, pair in (("socket", SOCKET), ("equal_cores", EQUAL_CORES)):
        for mname in models:
            m = catalog.load_model(mname)
            for w in weights:
                d3, d4 = (inf.deployment(m, catalog.system_for(hw), chips=c, weights=w, inference_calibration=engines)
                          for hw, c in pair)
                for b in batches:
                    p3, p4 = (inf.predict(d, b, 512, 128, fitted_hardware=fitted) for d in (d3, d4))
                    fits = p3.fits and p4.fits
                    common = {"model": mname, "weights": w, "batch": b, "basis": basis, "graviton3": pair[0][0],
                              "graviton4": pair[1][0], "fits": fits, "fits_graviton3": p3.fits,
                                  "fits_graviton4": p4.fits,
                              "memory_needed_gib": sum(p4.memory_bytes.values()) / GiB,
                              "memory_graviton3_gib": p3.memory_capacity_bytes / GiB,
                              "memory_graviton4_gib": p4.memory_capacity_bytes / GiB}
                    out.append({**common, "phase": "prefill", "bound": "compute",
                                "speedup": p4.prefill_tokens_per_s / p3.prefill_tokens_per_s if fits else None})
                    out.append({**common, "phase": "decode", "bound": _bound(d4, b),
                                "speedup": p3.tpot_s / p4.tpot_s if fits else None})
    return out


def _rates(pair, engines: dict | None = None) -> dict:
    m = catalog.load_model("llama3-8b")
    d3, d4 = (inf.deployment(m, catalog.system_for(hw), chips=c, weights="q8_0", inference_calibration=engines)
              for hw, c in pair)
    return {"compute_ratio": d4.compute_rate / d3.compute_rate, "bandwidth_ratio": d4.memory_rate / d3.memory_rate,
            "threads_graviton3": d3.threads, "threads_graviton4": d4.threads}


def _speedup_summary(cases: list) -> list:
    """One line per basis, model, weights and phase: the speed-up at each batch (None where it does not fit)."""
    out = {}
    for c in cases:
        key = (c["basis"], c["model"], c["weights"], c["phase"])
        row = out.setdefault(key, {"basis": key[0], "model": key[1], "weights": key[2], "phase": key[3],
                                   "bound_at_batch_1": None})
        if c["batch"] == 1:
            row["bound_at_batch_1"] = c["bound"]
        row[f"speedup_batch_{c['batch']}"] = c["speedup"]
    return list(out.values())


@dataclass(frozen=True)
class GravitonEvidence:
    """The predicted cases, both chips, the modelled rates per basis, and what the three rows cite."""

    cases: list
    g3: object  # catalog Chip
    g4: object
    socket_rates: dict
    equal_cores_rates: dict
    assumptions: tuple
    sources: tuple

    @classmethod
    def of(cls, quick: bool, engines: dict | None = None) -> GravitonEvidence:
        cases = graviton_cases(quick, engines)
        g3, g4 = catalog.load_chip("graviton3"), catalog.load_chip("graviton4")
        assumptions = (
            "prediction: cost/inference.predict (per-operator roofline, llama.cpp efficiencies fitted on Graviton3/3E "
            "rows of inference_runs.csv; no measured Graviton4 rows), 512 input + 128 output tokens, "
            f"llama3-8b and llama3-70b, weights bf16/q8_0/q4_0, batches {sorted({c['batch'] for c in cases})}",
            "socket basis: r7g.16xlarge (64 Graviton3 cores) vs one socket of r8g.48xlarge (96 Graviton4 cores); "
            "equal-core basis: c7g.16xlarge vs c8g.16xlarge (64 cores each; c8g.16xlarge bandwidth: the socket's, as "
            "the Classmethod STREAM run of a 16xlarge shows)",
        ) + _not_fitting(cases)
        sources = (source_of("graviton3", "cores", g3), source_of("graviton4", "cores", g4),
                   source_of("graviton3", "memory_bandwidth", g3), source_of("graviton4", "memory_bandwidth", g4),
                   source_of("graviton3", "peak_flops.int8", g3), source_of("graviton4", "peak_flops.int8", g4),
                   "inference_calibration.yaml (llama.cpp family)", "WIKICHIP_G4 (announcement figures)")
        return cls(cases, g3, g4, _rates(SOCKET, engines), _rates(EQUAL_CORES, engines), assumptions, sources)

    def speedups(self, basis, phase=None, bound=None, batch=None) -> list:
        return [c["speedup"] for c in self.cases if c["basis"] == basis and (phase is None or c["phase"] == phase)
                and (bound is None or c["bound"] == bound) and (batch is None or c["batch"] == batch)]

    @property
    def clock_ratio(self) -> float:
        return self.g4.clock / self.g3.clock


def _not_fitting(cases: list) -> tuple:
    """One assumption line naming the model/weights that fit on neither or one chip, with the memory they need."""
    no_fit = {}
    for c in cases:
        if not c["fits"]:
            hosts = [c[g] for g in ("graviton3", "graviton4") if not c[f"fits_{g}"]]
            key = f"{c['model']} {c['weights']} on {' and '.join(hosts)} ({c['memory_graviton3_gib']:.0f} / " \
                  f"{c['memory_graviton4_gib']:.0f} GiB)"
            no_fit[key] = min(no_fit.get(key, math.inf), c["memory_needed_gib"])
    no_fit = [f"{k}: needs {v:.0f} GiB or more" for k, v in sorted(no_fit.items())]
    return (f"does not fit in memory (left out): {'; '.join(no_fit)}",) if no_fit else ()


def _evidence(runs: Runs) -> GravitonEvidence:
    return runs.once("graviton", lambda: GravitonEvidence.of(runs.quick, runs.engines))


def estimate_faster(runs: Runs, rows: dict) -> Estimate:
    """7a: the median predicted serving speed-up at equal core count."""
    ev = _evidence(runs)
    g3, g4, eq = ev.g3, ev.g4, ev.equal_cores_rates
    eq_all = ev.speedups("equal_cores")
    est_a = median(eq_all)
    lo, hi = (min(x for x in eq_all if x), max(x for x in eq_all if x)) if any(eq_all) else (None, None)
    series = [{k: c[k] for k in ("model", "weights", "batch", "phase", "basis", "speedup", "bound", "fits")}
              for c in ev.cases]
    return Estimate(
        est_a,
        ev.assumptions + ("estimate = median predicted speed-up at equal core count (prefill tokens/s and decode "
                          "tokens/s over all cases that fit); the announcement's 30% is for general workloads",),
        ev.sources,
        (f"at 64 cores each flopcast predicts {lo:.2f}-{hi:.2f}x (median {est_a:.2f}x): clock "
         f"{g4.clock / g3.clock:.2f}x "
         f"for compute-bound prefill, {eq['bandwidth_ratio']:.2f}x sustained bandwidth for decode; per socket "
         f"it is {median(ev.speedups('socket')):.2f}x." if est_a else "no case fits on both."),
        {"summary": _speedup_summary(ev.cases), "equal_cores_speedup_min": lo, "equal_cores_speedup_max": hi,
         "equal_cores_speedup_median": est_a, "socket_speedup_median": median(ev.speedups("socket")),
         "equal_cores_rates": eq, "socket_rates": ev.socket_rates, "clock_ratio": ev.clock_ratio, "cases": ev.cases},
        {"graviton_speedups": series},
    )


def estimate_cores(runs: Runs, rows: dict) -> Estimate:
    """7b: the catalog's cores per socket, with the per-socket prefill speed-up that tracks compute."""
    ev = _evidence(runs)
    g3, g4, sock = ev.g3, ev.g4, ev.socket_rates
    sock_pre = median(ev.speedups("socket", "prefill"))
    cores_ratio = g4.cores / g3.cores
    return Estimate(
        cores_ratio,
        ("estimate = catalog graviton4.cores / graviton3.cores",
         "compute per socket = cores x clock x FLOP/cycle (chips.yaml derivations): "
         f"{g4.peak(Dtype.INT8) / g3.peak(Dtype.INT8):.3f}x, which prefill (compute-bound) tracks"),
        ev.sources[:2] + ev.sources[4:6],
        (f"the catalog has {g4.cores} vs {g3.cores} cores per socket; predicted per-socket prefill speed-up "
         f"{sock_pre:.2f}x tracks the compute ratio {sock['compute_ratio']:.2f}x (cores x clock "
         f"{g4.clock / g3.clock:.2f})."),
        {"cores_graviton3": g3.cores, "cores_graviton4": g4.cores, "socket_prefill_speedup_median": sock_pre,
         "socket_compute_ratio": sock["compute_ratio"], "clock_ratio": ev.clock_ratio},
    )


def estimate_bandwidth(runs: Runs, rows: dict) -> Estimate:
    """7c: the catalog's memory bandwidth per socket, with the bandwidth-bound decode speed-up."""
    ev = _evidence(runs)
    g3, g4, sock = ev.g3, ev.g4, ev.socket_rates
    sock_dec_bw = median(ev.speedups("socket", "decode", "bandwidth"))
    bw_ratio = g4.memory_bandwidth / g3.memory_bandwidth
    return Estimate(
        bw_ratio,
        ("estimate = catalog graviton4.memory_bandwidth / graviton3.memory_bandwidth (12 x DDR5-5600 vs 8 x DDR5-4800)",
         "sustained bandwidth b(n) = n r R / sqrt((n r)^2 + R^2) (cost/inference.py cpu_bandwidth), which decode "
         "at small batch is bound by"),
        ev.sources[2:4] + ev.sources[6:7],
        (f"the catalog gives {g4.memory_bandwidth / 1e9:.1f} vs {g3.memory_bandwidth / 1e9:.1f} GB/s "
         f"({bw_ratio:.2f}x); "
         f"bandwidth-bound decode per socket speeds up {sock_dec_bw:.2f}x (modelled sustained bandwidth "
         f"{sock['bandwidth_ratio']:.2f}x)." if sock_dec_bw else f"the catalog gives {bw_ratio:.2f}x."),
        {"bandwidth_graviton3_gbps": g3.memory_bandwidth / 1e9, "bandwidth_graviton4_gbps": g4.memory_bandwidth / 1e9,
         "socket_decode_bandwidth_bound_speedup_median": sock_dec_bw,
         "socket_sustained_bandwidth_ratio": sock["bandwidth_ratio"],
         "socket_decode_batch1_speedups": ev.speedups("socket", "decode", batch=1)},
    )
