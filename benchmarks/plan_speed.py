"""How long `plan` of the seed scenario and `claims` take. Plain script, run by hand:
PYTHONPATH=src python benchmarks/plan_speed.py [--quick-claims] [--workers N] [--repeat N]

Prints wall and CPU seconds of each (CPU time is the figure to compare on a shared machine; with --repeat N,
default 3, the least of N runs, as timeit reports, since other processes only ever add to it), the cluster
sizes the plan searched (and those a lower bound ruled out without a search, plan/bounded.py), and its
answer, so a speed-up that changes the answer shows. The catalog is read once before the timed runs.
--workers N also runs claims with its independent claims on N local processes (its CPU seconds include the
workers').
Target (issue 14): each under 2 s on 2 cores.
"""

import resource
import sys
import time

from flopcast import api

PLANS = [
    ("llama3-70b", "trn2.48xlarge", "15T", "30d"),
    ("gpt-300b", "trn2.48xlarge", "chinchilla", "30d"),
    ("gpt-300b", "p5.48xlarge", "chinchilla", "30d"),
]


def _children_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _timed(f, repeat: int = 1):
    """(result, least wall s, least CPU s) of `repeat` runs of f()."""
    walls, cpus = [], []
    for _ in range(repeat):
        w0, c0, k0 = time.perf_counter(), time.process_time(), _children_cpu_s()
        out = f()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0 + _children_cpu_s() - k0)
    return out, min(walls), min(cpus)


def main() -> int:
    repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 3
    api.plan(*PLANS[0][:2], tokens=PLANS[0][2], deadline=PLANS[0][3])  # reads the catalog
    print(f"{'what':<44} {'wall s':>8} {'cpu s':>8}  answer (least of {repeat} runs; target: under 2 s)")
    for model, system, tokens, deadline in PLANS:
        res, wall, cpu = _timed(lambda m=model, s=system, t=tokens, d=deadline: api.plan(m, s, tokens=t, deadline=d),
                                repeat)
        c = res.outcome.chosen
        r = c.result
        print(f"{f'plan {model} -H {system} --deadline {deadline}':<44} {wall:>8.1f} {cpu:>8.1f}  "
              f"{c.chips:,} chips, {c.expected_s / 86400:.1f} days with faults, "
              f"${r.cost_usd:,.0f}; {res.outcome.searches} sizes searched, {res.outcome.bounded} ruled out by a bound")
    quick = "--quick-claims" in sys.argv
    res, wall, cpu = _timed(lambda: api.claims(quick=quick), repeat)
    print(f"{'claims' + (' --quick' if quick else ''):<44} {wall:>8.1f} {cpu:>8.1f}  {len(res.result.rows)} rows")
    if "--workers" in sys.argv:
        n = int(sys.argv[sys.argv.index("--workers") + 1])
        res, wall, cpu = _timed(lambda: api.claims(quick=quick, workers=n))
        print(f"{f'claims --workers {n}' + (' --quick' if quick else ''):<44} {wall:>8.1f} {cpu:>8.1f}  "
              f"{len(res.result.rows)} rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
