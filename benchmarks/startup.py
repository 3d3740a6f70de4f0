"""How long flopcast takes to start: `flopcast --help` and a `flopcast search` on 8 chips, each a fresh
process, median of several runs. Plain script, run by hand:

    python benchmarks/startup.py                       # this checkout (src/ beside this file)
    python benchmarks/startup.py --before /tmp/old/src # also another checkout's src/, printed beside it

A source tree is run with PYTHONPATH=<src> and `from flopcast.cli import main`, so a checkout from before
`python -m flopcast` existed runs the same way.
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


def median_s(src: Path, argv: list[str], runs: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(src)}
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", RUN, *argv], env=env, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, help="src/ folder of another checkout to time beside this one")
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    trees = ([("before", args.before)] if args.before else []) + [("this checkout", HERE)]
    print(f"{'command':<28}" + "".join(f"{name:>16}" for name, _ in trees) + f"   (median of {args.runs} runs, s)")
    for label, argv in COMMANDS.items():
        cells = [median_s(src, argv, args.runs) for _, src in trees]
        change = f"   {cells[-1] / cells[0] - 1:+.0%}" if len(cells) == 2 else ""
        print(f"{label:<28}" + "".join(f"{c:>16.3f}" for c in cells) + change)
    return 0


if __name__ == "__main__":
    sys.exit(main())
