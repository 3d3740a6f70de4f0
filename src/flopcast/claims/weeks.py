"""Claim 6: a 300-billion-parameter model trains in weeks instead of months."""

from __future__ import annotations

from dataclasses import replace

from .. import catalog
from ..plan import forecast
from ..units import DAY
from .evidence import ANNOUNCEMENT, GPT300B, TRN1, ULTRACLUSTER, Runs, source_of
from .rows import Estimate
from .rules import WEEKS_THRESHOLD_DAYS


def estimate_weeks(runs: Runs, rows: dict) -> Estimate:
    """6: expected days to train the ~300B GPT (with failures) on Trainium2 and Trainium1 over cluster sizes."""
    sizes = [100_000] if runs.quick else [1024, 2048, 4096, 8192, 16384, 32768, 65536, 100_000]
    tokens = forecast.default_tokens(forecast.resolve_model(GPT300B))
    series = {"trainium2": [], "trainium1": [], "threshold_days": WEEKS_THRESHOLD_DAYS}
    points = []
    for hw in (ULTRACLUSTER, TRN1):
        runs.prefetch(GPT300B, hw, [(n, {}) for n in sizes])
    for n in sizes:
        row = {"chips": n}
        for key, hw, short in (("trainium2", ULTRACLUSTER, "trn2"), ("trainium1", TRN1, "trn1")):
            r = replace(runs.train(GPT300B, hw, n), tokens=tokens)
            g = r.expected if r.fits else None
            pt = {"chips": n, "fits": bool(r.fits), "ideal_days": r.time_to_train_s / DAY if r.fits else None,
                  "expected_days": g.expected_s / DAY if g else None, "goodput": g.goodput if g else None,
                  "interruptions": g.interruptions if g else None, "layout": r.layout.describe()}
            series[key].append(pt)
            row[f"{short}_days"] = pt["expected_days"]
        points.append(row)
    weeks = [p for p in points if p["trn2_days"] is not None and p["trn2_days"] < WEEKS_THRESHOLD_DAYS]
    first = weeks[0] if weeks else None
    est = first["trn2_days"] if first else (points[-1]["trn2_days"])
    if first:
        t1 = first["trn1_days"]
        why = (f"of the swept sizes ({', '.join(f'{n:,}' for n in sizes)} chips), Trainium2 first finishes in under "
               f"8 weeks at {first['chips']:,} chips ({first['trn2_days']:.0f} days "
               f"expected with failures), where Trainium1 takes " + (f"{t1:.0f} days." if t1 else "more than it fits."))
    else:
        why = f"Trainium2 needs {est:.0f} days even at {sizes[-1]:,} chips."
    return Estimate(
        est,
        (f"prediction: {GPT300B} for 20 tokens per parameter ({tokens:.3g} tokens, Hoffmann et al. 2022) on "
         f"{ULTRACLUSTER} (Trainium2) and {TRN1} (Trainium1) at {', '.join(f'{n:,}' for n in sizes)} chips, best "
         f"layouts",
         "expected time = cost/reliability.goodput_for (Daly 2006 checkpoint interval; one interruption per "
         "50,677 chip-hours from the Llama 3 paper; stragglers folded into calibration, cv = 0)",
         f"estimate = Trainium2's expected days at the smallest swept size under {WEEKS_THRESHOLD_DAYS:.0f} days "
         "(the largest size if none); claimed = the 8-week threshold"),
        (f"catalog {GPT300B} [NARAYANAN2021]", "LLAMA3_2024 (failure rate)", source_of(ULTRACLUSTER, "tiers",
                                                                                   catalog.system_for(ULTRACLUSTER)),
         source_of(TRN1, "tiers", catalog.system_for(TRN1)), f"announcement [{ANNOUNCEMENT}]"),
        why,
        {"tokens": tokens, "threshold_days": WEEKS_THRESHOLD_DAYS, "points": points,
         "weeks_from_chips": first["chips"] if first else None},
        {"time_to_train": series},
    )
