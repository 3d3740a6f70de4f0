"""How fast flopcast searches every layout. Plain script, run by hand: python benchmarks/search_speed.py

For each case: candidates evaluated, configurations per second, wall time end to end, and a check that
the best row equals `flopcast.train` on that layout (step time within 1e-9 relative).
"""

import time

from flopcast import api, catalog
from flopcast.plan import search as search_mod

CASES = [
    ("gpt-300b", "trn2-ultracluster", 100_000),
    ("gpt3-175b", "dgx-a100-80gb", 1_024),
    ("llama3-405b", "p5.48xlarge", 16_384),
    ("deepseek-v3", "hgx-h800", 2_048),
]


def main() -> int:
    cal = catalog.calibration()
    failures = 0
    print(f"{'model':<12} {'system':<18} {'chips':>8} {'candidates':>12} {'valid':>10} {'fit':>9} "
          f"{'configs/s':>12} {'wall s':>7}  check")
    for model, system, chips in CASES:
        t0 = time.perf_counter()
        m = api.resolve_model(model)
        s = api.resolve_system(system)
        out = search_mod.search(m, s, chips, cal, search_mod.SearchSpace())
        wall = time.perf_counter() - t0
        if out.n_fit == 0:
            print(f"{model:<12} {system:<18} {chips:>8,} nothing fits: {out.rejected}")
            failures += 1
            continue
        i = int(out.order[0])
        best = out.batch.layout(i)
        step = float(out.results["step_time_s"][i])
        lay = {k: getattr(best, k) for k in best.__dataclass_fields__}
        # a full layout must use every chip it is given; the step time does not depend on idle chips
        ref = api.train(m, s, best.chips, calibration=cal, **lay)
        rel = abs(ref.step_time_s - step) / ref.step_time_s
        ok = rel <= 1e-9
        failures += not ok
        print(f"{model:<12} {system:<18} {chips:>8,} {out.considered:>12,} {out.batch.size:>10,} {out.n_fit:>9,} "
              f"{out.considered / wall:>12,.0f} {wall:>7.2f}  {'ok' if ok else 'MISMATCH'} (rel {rel:.1e}; "
              f"best {best.describe()}, step {step:.3f} s)")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
