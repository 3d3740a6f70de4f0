"""How long flopcast takes to start: `flopcast --help` and a `flopcast search` on 8 chips, each a fresh
process, median of several runs, printed beside the figures recorded before the start-up work. Plain script,
run by hand:

    python benchmarks/startup.py                       # this checkout (src/ beside this file) vs BEFORE
    python benchmarks/startup.py --before /tmp/old/src # also time another checkout's src/ now, beside it

A source tree is run with PYTHONPATH=<src> and `from flopcast.cli import main`, so a checkout from before
`python -m flopcast` existed runs the same way.

BEFORE was measured at commit f5a94b6 (main before the built-in catalog was read without pydantic) with
`--before`, interleaved with this checkout's runs on the same machine; on an idle machine both are lower,
on a loaded one higher, and the ratio is what carries over. Where the time went at f5a94b6 (`python -X
importtime`, cProfile, load ~1): pydantic and the schema classes ~0.45 s, the pure-Python YAML parser for
uncertainty.yaml and instances.yaml ~0.2 s, numpy ~0.25 s (search needs it), the search itself ~0.2 s. Now
`flopcast search` on built-in names imports no pydantic (403 -> 317 modules) and reads every YAML file with
the C parser; `flopcast --help` imports the same 134 modules as before (no numpy, pydantic, rich or catalog;
tests/test_startup.py checks both), so its change is noise.
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
# medians (s) at commit f5a94b6, measured 2026-12-01 12:22 UTC with --before on the shared 2-core development
# machine (load average ~20), 11 runs interleaved with this checkout's, which then took 0.678 s and 3.825 s;
# again at 12:54 (load ~13, 9 runs): --help 0.329 s -> 0.339 s, search 3.661 s -> 2.712 s (-26%)
BEFORE_COMMIT = "f5a94b6"
BEFORE_S = {"flopcast --help": 0.717, "flopcast search (8 chips)": 5.063}


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
    trees = ([("--before", args.before)] if args.before else []) + [("now", HERE)]
    head = f"{'command':<28}{'before ' + BEFORE_COMMIT:>16}" + "".join(f"{name:>16}" for name, _ in trees)
    print(head + f"   (median of {args.runs} runs, s; before: recorded)")
    for label, argv in COMMANDS.items():
        cells = medians_s([src for _, src in trees], argv, args.runs)
        before = BEFORE_S.get(label)
        base = cells[0] if len(cells) == 2 else before  # a tree timed now beats a figure from another load
        change = f"   {cells[-1] / base - 1:+.0%}" if base else ""
        shown = f"{before:>16.3f}" if before else f"{'n/a':>16}"
        print(f"{label:<28}{shown}" + "".join(f"{c:>16.3f}" for c in cells) + change)
    return 0


if __name__ == "__main__":
    sys.exit(main())
