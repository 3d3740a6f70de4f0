"""How fast the serving simulator runs: batch iterations simulated per second, of wall and of CPU time.

    python benchmarks/serve_speed.py

Target (issue 13): >= 400,000 batch iterations per second on a 2-core machine, with speculative decoding,
prefix caching and disaggregated prefill/decode among the cases. An iteration is one batch forward pass of one
replica (a decode step, a prefill or a mixed chunk), each timed and applied on its own; the rate counts
ServingResult.iterations (both pools' for a disaggregated deployment).
"""

from __future__ import annotations

import time

import numpy as np

from flopcast import catalog
from flopcast.cost import inference as inf
from flopcast.cost.inference.speculation import Method, Speculation
from flopcast.simulate import serving as S

CASES = [  # (model, system, chips, qps, scheduler, what else: "" | "eagle" | "prefix" | "1P2D")
    ("llama3-8b", "p5.48xlarge", 1, 8.0, S.Scheduler.CONTINUOUS, ""),
    ("llama3-8b", "p5.48xlarge", 1, 8.0, S.Scheduler.CHUNKED, ""),
    ("llama3-70b", "inf2.48xlarge", 12, 1.0, S.Scheduler.CONTINUOUS, ""),
    ("llama3-8b", "p5.48xlarge", 1, 4.0, S.Scheduler.STATIC, ""),
    ("llama3-8b", "c8g.16xlarge", 1, 0.05, S.Scheduler.CONTINUOUS, ""),
    ("llama3-8b", "p5.48xlarge", 1, 8.0, S.Scheduler.CONTINUOUS, "eagle"),
    ("llama3-8b", "p5.48xlarge", 1, 8.0, S.Scheduler.CHUNKED, "prefix"),
    ("llama3-8b", "p5.48xlarge", 1, 16.0, S.Scheduler.CONTINUOUS, "1P2D"),
]


def _target(model: str, system: str, chips: int, what: str):
    m, s = catalog.load_model(model), catalog.load_system(system)
    if what == "eagle":
        return inf.deployment(m, s, chips=chips, speculation=Speculation(Method.EAGLE, 4, 0.75))
    d = inf.deployment(m, s, chips=chips)
    return S.disaggregated(d, d, 1, 2) if what == "1P2D" else d


def main(requests: int = 5000) -> float:
    total_it, total_wall, total_cpu = 0, 0.0, 0.0
    for model, system, chips, qps, sched, what in CASES:
        target = _target(model, system, chips, what)
        reqs = S.poisson_requests(qps, np.random.default_rng(0), n=requests, input_tokens="uniform:128:1024",
                                  output_tokens="lognormal:256:0.6")
        config = S.ServingConfig(scheduler=sched, prefix_tokens=96 if what == "prefix" else 0)
        t0, c0 = time.perf_counter(), time.process_time()
        r = S.simulate_any(target, reqs, config)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        total_it += r.iterations
        total_wall += wall
        total_cpu += cpu
        print(f"{model:11s} {system:14s} {sched.value:16s} {what or '-':6s} {r.iterations:8d} iterations  "
              f"{wall:6.2f} s wall {cpu:6.2f} s CPU  {r.iterations / wall:9.0f} iterations/s")
    rate = total_it / total_wall
    print(f"total: {total_it} batch iterations in {total_wall:.2f} s wall ({total_cpu:.2f} s CPU) = {rate:.0f} "
          f"batch iterations/s of wall time, {total_it / total_cpu:.0f} of CPU time")
    return rate


if __name__ == "__main__":
    main()
