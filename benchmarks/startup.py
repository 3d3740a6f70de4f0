"""How long flopcast takes to start: `flopcast --help` and a `flopcast search` on 8 chips, each a fresh
process, median of several runs. Plain script, run by hand:

    python benchmarks/startup.py                       # this checkout (src/ beside this file)
    python benchmarks/startup.py --before /tmp/old/src # also another checkout's src/, printed beside it

A source tree is run with PYTHONPATH=<src> and `from flopcast.cli import main`, so a checkout from before
`python -m flopcast` existed runs the same way.

Measured 2026-12-01 on the shared 2-core development machine, --before = commit 2365484 (the seven cli*.py
files), medians of 9 interleaved runs: `flopcast --help` 1.28 s -> 0.29 s (-77%: the help lists the command
table and imports no command, numpy or catalog); `flopcast search` on 8 chips 2.38 s -> 2.37 s (the C YAML
loader and the lazy imports win back what the catalog's pydantic schema, added since, costs: ~0.7 s to
import pydantic and build the schema classes).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "src"
COMMANDS = {
    "flopcast --help": ["--help"],
    "flopcast search (8 chips)": ["search", "llama3-8b", "--hardware", "p5.48xlarge", "--chips", "8", "--top", "3"],
}
RUN = "import sys; from flopcast.cli import main; sys.exit(main(sys.argv[1:]))"


def once_s(src: Path, argv: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(src)}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", RUN, *argv], env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def medians_s(srcs: list[Path], argv: list[str], runs: int) -> list[float]:
    """Median seconds per tree; the trees take turns run by run, so a change in the machine's load hits both."""
    times = [[] for _ in srcs]
    for _ in range(runs):
        for k, src in enumerate(srcs):
            times[k].append(once_s(src, argv))
    return [statistics.median(t) for t in times]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, help="src/ folder of another checkout to time beside this one")
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    trees = ([("before", args.before)] if args.before else []) + [("this checkout", HERE)]
    print(f"{'command':<28}" + "".join(f"{name:>16}" for name, _ in trees) + f"   (median of {args.runs} runs, s)")
    for label, argv in COMMANDS.items():
        cells = medians_s([src for _, src in trees], argv, args.runs)
        change = f"   {cells[-1] / cells[0] - 1:+.0%}" if len(cells) == 2 else ""
        print(f"{label:<28}" + "".join(f"{c:>16.3f}" for c in cells) + change)
    return 0


if __name__ == "__main__":
    sys.exit(main())
