"""CPU seconds and peak memory of flopcast's heavy commands on the largest built-in models and systems.

Each command runs in its own process (`python -m flopcast ...`, or a web-page request through Starlette's test
client), and os.wait4 reads that process's own resource use: user + system CPU seconds and peak resident memory
(ru_maxrss, worker processes it waited for included). A command passes when it stays under --cpu-s and
--rss-gib, or refuses (exit code 2, one line) under them; issue 16 holds every command to 30 s of CPU and 2 GiB.

    python benchmarks/heavy_commands.py                   # every command x model x system x size (a few hundred)
    python benchmarks/heavy_commands.py --only report     # the commands whose line contains "report"
    python benchmarks/heavy_commands.py --list            # the command lines only
    python benchmarks/heavy_commands.py --sample 40 --seed 1 --jobs 2

It prints one row per command (exit code, CPU s, peak RSS MB, wall s, verdict) and the worst of each.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("deepseek-v3", "llama4-maverick", "qwen3-235b-a22b", "gpt-oss-120b", "llama3-405b", "gpt-300b")
SYSTEMS = ("trn2.48xlarge", "p5.48xlarge", "gb200-nvl72", "tpu7x")
BIG = 100_000  # chips: the announcement's largest cluster
SEARCH_CHIPS = 1024  # `search` has no default cluster: train's default on trn2.48xlarge (64 instances)


@dataclass(frozen=True)
class Run:
    command: str  # the line as a user types it (after `flopcast`), or `ui GET /api/...?...`
    argv: tuple
    ui: bool = False


def commands(out_dir: Path) -> list[Run]:
    """Every heavy command on every model and system, at the chips it defaults to and at BIG chips."""
    runs = []

    def cli(*argv):
        runs.append(Run(" ".join(argv), tuple(argv)))

    for m in MODELS:
        for s in SYSTEMS:
            for n in ((), ("-n", str(BIG))):
                cli("train", m, "-H", s, *n)
                cli("search", m, "-H", s, "--top", "3", *(n or ("-n", str(SEARCH_CHIPS))))  # -n is required
                cli("reliability", m, "-H", s, *n)
            cli("plan", m, "-H", s, "--pareto")
            cli("plan", m, "-H", s, "--deadline", "30d")
            cli("report", m, "-H", s, "--html", str(out_dir / f"report-{m}-{s}.html"))
            cli("deploy", m, "-H", s)
            cli("serve", m, "-H", s, "--find-capacity")
            ui("/api/train", model=m, hardware=s, runs=runs)
        for n in ("1024", str(BIG)):
            cli("compare", m, "-H", ",".join(SYSTEMS), "-n", n)
            ui("/api/compare", model=m, hardware=",".join(SYSTEMS), chips=n, runs=runs)
    cli("claims")
    return runs


def ui(path: str, runs: list, **params) -> None:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    runs.append(Run(f"ui GET {path}?{query}", (path, json.dumps(params)), ui=True))


UI_SCRIPT = """
import json, sys
from pathlib import Path
from starlette.testclient import TestClient
from flopcast.ui import create_app
with TestClient(create_app(Path(sys.argv[3])), raise_server_exceptions=False) as client:
    r = client.get(sys.argv[1], params=json.loads(sys.argv[2]))
print(r.status_code)
print(r.text[:300])
sys.exit(0 if r.status_code == 200 else 2 if r.status_code in (400, 422) else 1)
"""


@dataclass(frozen=True)
class Measured:
    run: Run
    code: int
    cpu_s: float
    rss_mb: float
    wall_s: float
    tail: str


def measure(run: Run, timeout_s: float, work: Path) -> Measured:
    """Run one command in a child process; its own CPU seconds and peak RSS from os.wait4."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    argv = ([sys.executable, "-c", UI_SCRIPT, *run.argv, str(work)] if run.ui
            else [sys.executable, "-m", "flopcast", *run.argv])
    with tempfile.TemporaryFile() as out:
        start = time.monotonic()
        child = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                 cwd=work)
        deadline = start + timeout_s
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                child.kill()
                pid, status, usage = os.wait4(child.pid, 0)
                break
            time.sleep(0.05)
        child.returncode = os.waitstatus_to_exitcode(status)  # reaped here: keep Popen from waiting again
        wall = time.monotonic() - start
        out.seek(0)
        text = out.read().decode(errors="replace").strip().splitlines()
    return Measured(run, child.returncode, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0, wall,
                    text[-1][:160] if text else "")


def verdict(m: Measured, cpu_s: float, rss_gib: float) -> str:
    over = [w for w, bad in (("CPU", m.cpu_s > cpu_s), ("memory", m.rss_mb > rss_gib * 1024.0)) if bad]
    if over:
        return "OVER " + "+".join(over)
    return {0: "ok", 2: "refused"}.get(m.code, f"exit {m.code}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", default=[], help="run the commands whose line contains this")
    ap.add_argument("--sample", type=int, default=0, help="run this many commands drawn at random (0: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1, help="commands at a time (each measured on its own)")
    ap.add_argument("--timeout-s", type=float, default=600.0, help="wall-clock limit per command")
    ap.add_argument("--cpu-s", type=float, default=20.0, help="CPU seconds a command may take")
    ap.add_argument("--rss-gib", type=float, default=2.0, help="peak resident memory a command may take")
    ap.add_argument("--list", action="store_true", help="print the command lines and stop")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="flopcast-heavy-"))
    runs = [r for r in commands(work) if all(s in r.command for s in args.only)]
    if args.sample and args.sample < len(runs):
        runs = sorted(random.Random(args.seed).sample(runs, args.sample), key=runs.index)
    if args.list:
        print("\n".join(r.command for r in runs))
        return 0
    print(f"{'CPU s':>7} {'peak MB':>8} {'wall s':>7}  {'verdict':<12} command")
    done = []
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for m in pool.map(lambda r: measure(r, args.timeout_s, work), runs):
            v = verdict(m, args.cpu_s, args.rss_gib)
            print(f"{m.cpu_s:7.1f} {m.rss_mb:8.0f} {m.wall_s:7.1f}  {v:<12} {m.run.command}"
                  + (f"\n{'':36}{m.tail}" if v not in ("ok",) else ""), flush=True)
            done.append((m, v))
    if done:
        worst_cpu = max(done, key=lambda d: d[0].cpu_s)[0]
        worst_rss = max(done, key=lambda d: d[0].rss_mb)[0]
        bad = [m for m, v in done if v.startswith(("OVER", "exit"))]
        print(f"\n{len(done)} commands: {len(bad)} over the limits or failing; most CPU {worst_cpu.cpu_s:.1f} s "
              f"({worst_cpu.run.command}); most memory {worst_rss.rss_mb:.0f} MB ({worst_rss.run.command})")
    return 1 if any(v.startswith(("OVER", "exit")) for _, v in done) else 0


if __name__ == "__main__":
    sys.exit(main())
