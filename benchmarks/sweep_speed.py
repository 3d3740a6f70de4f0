"""How fast a co-design sweep runs: 10,080 scenarios, each with a full layout search, on 1 and 2 local processes
and on a local Ray cluster of 2 workers. Plain script, run by hand:

    python benchmarks/sweep_speed.py                      # all three engines, the whole grid
    python benchmarks/sweep_speed.py --engines local:2    # one of them
    python benchmarks/sweep_speed.py --limit 500          # the first 500 scenarios (says so in its output)
    python benchmarks/sweep_speed.py --sample 1008        # a random 1,008 of them (seed 0; says so)

The grid: 4 models (Llama-3 8B and 70B, Mixtral 8x7B, Qwen3 30B-A3B) x 3 systems (trn2.48xlarge, p5.48xlarge,
DGX B200) x 3 cluster sizes (64, 256, 1,024 chips) x 280 hardware variants (HBM bandwidth x7, BF16 peak x5,
scale-out bandwidth x4, scale-up bandwidth x2, multiples of each system's own). Every scenario's layout is the
full search's answer (plan/shared.py: searches of hardware variants share their candidates and memory, and the
step times of faster variants bound the slower ones'); a sample of rows is checked against a fresh
`flopcast.train` at the end. Prints scenarios/s per engine, the CPU load while it ran, and the check.
"""

from __future__ import annotations

import argparse
import os
import pickle
import random
import sys
import tempfile
import time
from pathlib import Path

from flopcast import api
from flopcast.sweep import hardware, runner, spec

GRID = """
name: sweep-speed
models: [llama3-8b, llama3-70b, mixtral-8x7b, qwen3-30b-a3b]
systems: [trn2.48xlarge, p5.48xlarge, dgx-b200]
chips: [64, 256, 1024]
tokens_per_param: 20
what_if:
  memory_bandwidth: [0.5x, 0.75x, 1x, 1.25x, 1.5x, 2x, 3x]
  peak_flops.bf16: [0.5x, 0.75x, 1x, 1.5x, 2x]
  scale_out_bandwidth: [0.5x, 1x, 2x, 4x]
  scale_up_bandwidth: [1x, 2x]
"""
CHECKED = 20  # rows compared with a fresh train() at the end


def _load() -> str:
    try:
        return "load average {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())
    except OSError:
        return "load average unknown"


def _run(sweep, engine: str, workers: int):
    kw = dict(resolve_model=api.resolve_model, forecast=api.train, engine=engine, workers=workers)
    t0 = time.perf_counter()
    cpu0 = time.process_time(), os.times().children_user + os.times().children_system
    out = runner.run_sweep(sweep, **kw)
    wall = time.perf_counter() - t0
    t = os.times()
    cpu = (time.process_time() - cpu0[0]) + (t.children_user + t.children_system - cpu0[1])
    return out, wall, cpu


def _setup(sweep) -> None:
    """Where the driver's own time goes before any worker runs: the variants, the tasks, their pickled size."""
    t0 = time.process_time()
    work = runner.tasks(sweep, list(sweep.scenarios), api.resolve_model, 2)
    t1 = time.process_time()
    size = sum(len(pickle.dumps(t)) for t in work)
    t2 = time.process_time()
    variants = len({(s.system, s.what_if) for s in sweep.scenarios})
    print(f"driver: {variants:,} hardware variants and {len(work)} tasks built in {t1 - t0:.1f} s CPU "
          f"({(t1 - t0) / max(variants, 1) * 1e3:.1f} ms per variant); tasks pickle to {size / 1e6:.1f} MB in "
          f"{t2 - t1:.2f} s", flush=True)


def _check(rows, n: int) -> int:
    """Rows whose step time and layout differ from a fresh train() of the same scenario."""
    bad = 0
    for row in random.Random(0).sample([r for r in rows if r["status"] == "ok"], n):
        over = {k.split(".", 1)[1]: v for k, v in row.items() if k.startswith("what_if.")}
        system = hardware.variant(row["system"], over)
        ref = api.train(row["model"], system, row["chips"], tokens=row["tokens"] or None)
        layout = {f"layout_{k}": v for k, v in ref.layout.as_dict().items()}
        if ref.step_time_s != row["step_time_s"] or any(row[k] != v for k, v in layout.items()):
            bad += 1
            print(f"  MISMATCH {row['scenario_id']}: {row['step_time_s']} vs {ref.step_time_s}")
    return bad


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engines", default="local:1,local:2,ray:2", help="engine:workers, comma-separated")
    ap.add_argument("--limit", type=int, default=None, help="run only the first N scenarios of the grid")
    ap.add_argument("--sample", type=int, default=None,
                    help="run N scenarios drawn at random (seed --seed), in grid order; fewer variants per task "
                         "share a search than in the whole grid, so the rate is a lower bound of the whole grid's")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sweep-speed.yaml"
        path.write_text(GRID)
        sweep = spec.read(path)
    if args.limit:
        sweep = spec.Sweep(sweep.name, sweep.path, sweep.scenarios[:args.limit], sweep.what_if_keys)
        print(f"LIMITED to the first {args.limit:,} of the grid's scenarios")
    if args.sample:
        keep = sorted(random.Random(args.seed).sample(range(len(sweep.scenarios)), args.sample))
        print(f"SAMPLED {args.sample:,} of the grid's {len(sweep.scenarios):,} scenarios at random (seed {args.seed})")
        sweep = spec.Sweep(sweep.name, sweep.path, tuple(sweep.scenarios[i] for i in keep), sweep.what_if_keys)
    _setup(sweep)
    n = len(sweep.scenarios)
    print(f"{n:,} scenarios, {os.cpu_count()} CPUs, {_load()} before")
    results = {}
    for item in args.engines.split(","):
        engine, workers = item.split(":")
        out, wall, cpu = _run(sweep, engine, int(workers))
        results[item] = out
        for row in out.rows:  # every row that is not a forecast, named, so that none goes unexamined
            if row["status"] == "failed":
                print(f"  FAILED {row['scenario_id']}: {row['error']}", flush=True)
        cpu_note = (f", {cpu / n * 1e3:.0f} ms CPU per scenario (this process and its children)" if engine == "local"
                    else "")
        print(f"{engine:<5} {int(workers)} worker(s): {n / wall:7.2f} scenarios/s, {wall:7.1f} s wall{cpu_note}; "
              f"{out.counts}; {_load()}", flush=True)
    rows = next(iter(results.values())).rows
    same = all(r.rows == rows for r in results.values())
    print(f"same rows from every engine: {same}")
    bad = _check(rows, min(CHECKED, len(rows)))
    print(f"{CHECKED} sampled rows vs a fresh flopcast.train: {CHECKED - bad} equal, {bad} differ")
    return 0 if same and not bad else 1


if __name__ == "__main__":
    sys.exit(main())
