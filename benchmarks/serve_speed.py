"""How fast the serving simulator runs: batch iterations simulated per second, and wall time.

    python benchmarks/serve_speed.py

Target (issue 5): >= 50,000 batch iterations per second on a 2-core machine.
"""

from __future__ import annotations

import time

import numpy as np

from flopcast import catalog
from flopcast.cost import inference as inf
from flopcast.simulate import serving as S

CASES = [  # (model, system, chips, qps, scheduler)
    ("llama3-8b", "p5.48xlarge", 1, 8.0, S.Scheduler.CONTINUOUS),
    ("llama3-8b", "p5.48xlarge", 1, 8.0, S.Scheduler.CHUNKED),
    ("llama3-70b", "inf2.48xlarge", 12, 1.0, S.Scheduler.CONTINUOUS),
    ("llama3-8b", "p5.48xlarge", 1, 4.0, S.Scheduler.STATIC),
    ("llama3-8b", "c8g.16xlarge", 1, 0.05, S.Scheduler.CONTINUOUS),
]


def main(requests: int = 5000) -> float:
    total_it, total_wall = 0, 0.0
    for model, system, chips, qps, sched in CASES:
        d = inf.deployment(catalog.load_model(model), catalog.load_system(system), chips=chips)
        reqs = S.poisson_requests(qps, np.random.default_rng(0), n=requests, input_tokens="uniform:128:1024",
                                  output_tokens="lognormal:256:0.6")
        t0 = time.perf_counter()
        r = S.simulate(d, reqs, S.ServingConfig(scheduler=sched))
        wall = time.perf_counter() - t0
        total_it += r.iterations
        total_wall += wall
        print(f"{model:11s} {system:14s} {sched.value:16s} {r.iterations:8d} iterations  {wall:6.2f} s wall  "
              f"{r.iterations / wall:9.0f} iterations/s")
    rate = total_it / total_wall
    print(f"total: {total_it} batch iterations in {total_wall:.2f} s wall = {rate:.0f} batch iterations/s")
    return rate


if __name__ == "__main__":
    main()
