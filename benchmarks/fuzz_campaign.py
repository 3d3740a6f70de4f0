"""The fuzz campaign of issue 16: thousands of flopcast runs with random valid and hostile values of every
option of every command (benchmarks/fuzz_cases.py), malformed model, chip, system, calibration, sweep, CSV and
trace files, and requests to the web page's JSON endpoints; each run's outcome put in one class, with counts
and the first example of each.

Each run is a fork of this process (flopcast imported once, so a run costs its own work, not the start-up),
under `resource.setrlimit(RLIMIT_AS, 2 GiB)` and RLIMIT_CPU; past 30 s of CPU time (or WALL_S of wall clock)
it is killed and counted a hang. Its peak memory is the child's ru_maxrss (os.wait4). Classes:

    ok            exit 0, valid output              refused   exit 2, one line `error: ...`
    traceback     a Python traceback, or an exit code other than 0 and 2 (a crash)
    hang          over 30 s of CPU (its own and its worker processes')
    stalled       killed at WALL_S of wall clock under 30 s of CPU: a wait (or a machine too loaded to say)
    memory        over 2 GiB of peak RSS, or a MemoryError under the 2 GiB address-space limit
    invalid_json  --json at exit 0 and not strict JSON (NaN, Infinity, or not JSON at all)
    nonsense      nan/inf in text output, a negative time, cost or energy, an MFU outside (0, 1], a multi-line error,
                  a JSON result that breaks an invariant (benchmarks/fuzz_invariants.py: intervals, breakdown sums,
                  tokens = throughput x time, chip-hours, TTFT <= end-to-end latency, ...)
    slow          finished, but past 30 s of wall clock (under 30 s of CPU: a loaded machine)

    python benchmarks/fuzz_campaign.py --runs 3000 --jobs 2 --seed 7          # prints the counts
    python benchmarks/fuzz_campaign.py --runs 200 --json fuzz.json            # and every failure to a file
    python benchmarks/fuzz_campaign.py --runs 11000 --minutes 60 --log f.jsonl  # at most an hour; failures as they come

Exit code 1 when any run is in a failing class (traceback, hang, stalled, memory, invalid_json, nonsense).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import fuzz_cases  # noqa: E402
import fuzz_invariants  # noqa: E402
import fuzz_pairs  # noqa: E402
import fuzz_shapes  # noqa: E402

MEMORY_BYTES = 2 << 30
CPU_S = 30
WALL_S = 300  # a run is killed here; past 30 s of wall clock but under 30 s of CPU it is `slow` (a loaded machine)
FAILING = ("traceback", "hang", "stalled", "memory", "invalid_json", "nonsense")
# AMD's "Infinity Fabric" and "Infinity Cache" (the MI300X/MI355X links and last-level cache the catalog names) are
# product names, not numbers
NONSENSE = re.compile(r"(?<![\w.'\"/-])(nan|inf|-inf|infinity)(?![\w'\"/])(?!\s+(?:fabric|cache))", re.IGNORECASE)
NON_NEGATIVE = re.compile(r"(_s|_ms|_days|_hours|_usd|_kwh|_gib|_bytes|tokens_per_s\w*|_joules?)$")


def _child(case: fuzz_cases.Case, folder: Path) -> None:
    """The run itself, in the forked process; never returns."""
    try:
        os.setpgid(0, 0)  # its own process group: a kill reaches the worker processes it starts too
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
        resource.setrlimit(resource.RLIMIT_CPU, (CPU_S + 1, CPU_S + 2))
        os.chdir(folder)
        for k, v in case.env.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
        if case.stdin is not None:
            (folder / "stdin").write_bytes(case.stdin)
        os.dup2(os.open(folder / "stdin" if case.stdin is not None else os.devnull, os.O_RDONLY), 0)
        out = os.open("/dev/full" if case.stdout_full else folder / "stdout", os.O_WRONLY | os.O_CREAT)
        err = os.open(folder / "stderr", os.O_WRONLY | os.O_CREAT)
        os.dup2(out, 1)
        os.dup2(err, 2)
        reader = fuzz_shapes.terminal(folder) if case.tty and not case.stdout_full else None
        if case.churn:
            threading.Thread(target=fuzz_shapes.rewrite, args=case.churn, daemon=True).start()
        code = {"ui": _run_ui, "pair": _run_pair}.get(case.kind, _run_cli)(case)
        sys.stdout.flush()
        if reader:
            os.close(1)  # the terminal's last writer gone: its reader sees the end (EIO) and stops
            reader.join(10)
    except BaseException:
        traceback.print_exc()
        code = 70
    try:
        sys.stderr.flush()
    finally:
        os._exit(code)


def _run_cli(case) -> int:
    from flopcast.cli import main

    code = main(case.argv)
    sys.stdout.flush()
    return code


def _run_pair(case) -> int:
    """Both runs of a pair (fuzz_pairs.py), their outputs split by a line; 2 when either refused, else the worse."""
    from flopcast.cli import main

    codes = []
    for i, argv in enumerate(case.argv):
        if i:
            sys.stdout.write(fuzz_pairs.SEPARATOR)
        codes.append(main(list(argv)))
        sys.stdout.flush()
    bad = [c for c in codes if c not in (0, 2)]
    return bad[0] if bad else max(codes)


def _run_ui(case) -> int:
    from starlette.testclient import TestClient

    from flopcast.ui import create_app

    method, path, payload = case.argv
    def post(client, path, body):  # JSON with its escapes as a browser sends them (httpx's json= refuses "\ud800")
        return client.post(path, content=json.dumps(body).encode(), headers={"content-type": "application/json"})

    with TestClient(create_app(Path("uploads")), raise_server_exceptions=False) as client:
        if method == "POST+GET":  # upload a model, then ask for a forecast of it by the key the upload returned
            up = post(client, "/api/upload", payload["upload"])
            key = up.json().get("model") if up.status_code == 200 else "upload:none"
            r = client.get(path, params={**payload["params"], "model": key})
        else:
            r = post(client, path, payload) if method == "POST" else client.get(path, params=payload)
    sys.stdout.write(f"{r.status_code}\n{r.headers.get('content-type', '')}\n{r.text}")
    return 0


def _strict(text: str):
    def reject(name):
        raise ValueError(name)

    return json.loads(text, parse_constant=reject)


def _bad_values(data, path="") -> str | None:
    """The first nonsense value of a JSON result: a negative time, cost, energy or memory; an MFU outside (0, 1]."""
    stack = [(path, data)]
    while stack:
        where, o = stack.pop()
        if isinstance(o, dict):
            for k, v in o.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    if NON_NEGATIVE.search(str(k)) and v < 0:
                        return f"{where}.{k} = {v}"
                    if k == "mfu" and not 0 < v <= 1:
                        return f"{where}.mfu = {v}"
                stack.append((f"{where}.{k}", v))
        elif isinstance(o, list):
            stack.extend((f"{where}[{i}]", v) for i, v in enumerate(o))
    return None


def _json_verdict(text: str):
    """(the parsed document, None), or (None, (class, detail)) when it is not strict JSON or holds nonsense."""
    try:
        data = _strict(text)
    except ValueError as exc:
        return None, ("invalid_json", f"{exc}: {text[:300]}")
    bad = _bad_values(data) or fuzz_invariants.violation(data)  # signs and ranges, then the identities
    return data, (("nonsense", bad) if bad else None)


def classify(case, status: int, cpu_s: float, wall_s: float, rss_bytes: int, out: str, err: str) -> tuple[str, str]:
    """(class, detail) of one finished run."""
    if cpu_s > CPU_S or (os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGXCPU):
        return "hang", f"{cpu_s:.1f} s CPU, {wall_s:.1f} s wall"
    if wall_s > WALL_S:
        return "stalled", f"killed at {wall_s:.0f} s of wall clock after {cpu_s:.1f} s of CPU"
    if rss_bytes > MEMORY_BYTES or "MemoryError" in err or "Unable to allocate" in err:
        return "memory", f"peak RSS {rss_bytes / 2**30:.2f} GiB; {err.strip()[-300:]}"
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)
    if "Traceback" in err or "Traceback" in out or code not in (0, 2):
        return "traceback", f"exit {code}; {err.strip()[-700:]}"
    if case.kind == "ui":
        return _classify_ui(out)
    if case.kind == "pair":
        return _classify_pair(case, code, out, err)
    if code == 2:
        lines = [x for x in err.splitlines() if x.startswith("error:")]  # progress lines may come before it
        if len(lines) != 1:
            return "nonsense", f"exit 2 without one error line: {err.strip()[:500]}"
        return "refused", ""
    eager = {"-h", "--help", "--version"} & set(case.argv)  # click prints the help or version and stops
    if "--json" in case.argv and not case.stdout_full and "--emit" not in case.argv and not eager:
        data, verdict = _json_verdict(out)
        if verdict:
            return verdict
    else:
        bad = NONSENSE.search(out)
        if bad:
            return "nonsense", f"{bad.group(0)!r} in ...{out[max(0, bad.start() - 150):bad.end() + 50]}"
    return ("slow", f"{wall_s:.1f} s wall, {cpu_s:.1f} s CPU") if wall_s > 30 else ("ok", "")


def _classify_pair(case, code: int, out: str, err: str) -> tuple[str, str]:
    """Each refusal one line, each JSON strict and within its invariants, the faster chip never slower."""
    if len([x for x in err.splitlines() if x.startswith("error:")]) > len(case.argv):
        return "nonsense", f"more error lines than runs: {err.strip()[:500]}"
    for part in out.split(fuzz_pairs.SEPARATOR):
        if part.strip() and not part.lstrip().startswith("{"):
            return "invalid_json", part[:300]
        if part.strip():
            _, bad = _json_verdict(part)
            if bad:
                return bad
    bad = fuzz_pairs.verdict(case.argv, out) if code == 0 else None
    return bad or ("refused" if code == 2 else "ok", "")


def _classify_ui(out: str) -> tuple[str, str]:
    status, ctype, body = (out.split("\n", 2) + ["", ""])[:3]
    if status not in ("200", "400", "404", "405", "413", "422"):
        return "traceback", f"HTTP {status}: {body[:500]}"
    if "json" in ctype:
        data, verdict = _json_verdict(body)
        if verdict:
            return verdict
        if status == "400" and "\n" in str(data.get("error", "")) if isinstance(data, dict) else False:
            return "nonsense", f"multi-line error {data}"
    return ("refused" if status != "200" else "ok"), ""


def _start(case, folder):
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _child(case, folder)
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass  # the child has set it (or already exec'd nothing: it is ours either way)
    return pid


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass  # no process is left in the group


def _finish(case, folder, status, usage, wall_s):
    read = lambda name: (folder / name).read_text(errors="replace") if (folder / name).is_file() else ""  # noqa: E731
    cpu = usage.ru_utime + usage.ru_stime
    return classify(case, status, cpu, wall_s, usage.ru_maxrss * 1024, read("stdout"), read("stderr"))


def campaign(runs: int, seed: int, jobs: int, progress: bool = True, log: Path | None = None,
             minutes: float | None = None, only=()) -> dict:
    """Run `runs` cases (case i from random seed `seed` + i), `jobs` at a time, starting none after `minutes`;
    the counts and examples."""
    names = fuzz_cases.Names(only)
    _warm(names)
    root = Path(tempfile.mkdtemp(prefix="flopcast-campaign-"))
    counts: dict[str, int] = {}
    examples: dict[str, list] = {}
    running: dict[int, tuple] = {}
    files = 0
    t0 = time.monotonic()
    nxt = 0
    while nxt < runs or running:
        if minutes is not None and time.monotonic() - t0 > 60 * minutes:
            runs = nxt  # the budget is spent: finish the runs under way, start no more
        while nxt < runs and len(running) < jobs:
            folder = root / str(nxt)
            folder.mkdir()
            case = fuzz_cases.case(random.Random(seed * 1_000_003 + nxt), names, folder)
            files += case.files
            running[_start(case, folder)] = (case, folder, time.monotonic(), nxt)
            nxt += 1
        if running:
            _reap(running, counts, examples, wait=True, log=log)
        if progress and sum(counts.values()) % 100 == 0 and counts:
            done = sum(counts.values())
            print(f"  {done}/{runs} in {time.monotonic() - t0:.0f} s: {_short(counts)}", file=sys.stderr, flush=True)
    shutil.rmtree(root, ignore_errors=True)
    return {"runs": nxt, "seed": seed, "malformed_files": files, "wall_s": round(time.monotonic() - t0, 1),
            "counts": dict(sorted(counts.items())), "examples": examples}


def _reap(running, counts, examples, wait: bool, log: Path | None = None) -> None:
    """Collect finished children; kill the ones past WALL_S (they finish as hangs)."""
    while True:
        pid, status, usage = os.wait4(-1, os.WNOHANG)
        if pid == 0:
            now = time.monotonic()
            for p, (_, _, started, _) in list(running.items()):
                if now - started > WALL_S:
                    _kill_group(p)
            if not wait:
                return
            time.sleep(0.01)
            continue
        _kill_group(pid)  # worker processes a run left behind
        case, folder, started, index = running.pop(pid)
        cls, detail = _finish(case, folder, status, usage, time.monotonic() - started)
        counts[cls] = counts.get(cls, 0) + 1
        if cls not in ("ok", "refused") or cls not in examples:
            examples.setdefault(cls, []).append({"run": index, "case": case.shown(), "detail": detail})
            if log and cls in FAILING + ("slow",):
                with open(log, "a") as f:
                    f.write(json.dumps({"class": cls, **examples[cls][-1]}) + "\n")
        shutil.rmtree(folder, ignore_errors=True)
        return


def _warm(names) -> None:
    """Import every command and load the catalog once, in the parent, so each fork starts warm."""
    import importlib

    import pkgutil

    import flopcast
    from flopcast import catalog

    for info in pkgutil.walk_packages(flopcast.__path__, "flopcast."):  # every module: a fork reads none from disk
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
    for n in names.models:
        catalog.load_model(n)
    for n in names.systems:
        catalog.system_for(n)


def _short(counts) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=11_000)
    ap.add_argument("--seed", type=int, default=int(time.time()) % 100_000)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--minutes", type=float, help="start no run after this many minutes (then report)")
    ap.add_argument("--json", help="write the counts and every failing run to this file")
    ap.add_argument("--log", help="append each failing run to this JSON-lines file as it finishes")
    ap.add_argument("--only", default="", help="comma-separated commands to draw (and `ui` for the web page)")
    ap.add_argument("--shaped", type=float, default=fuzz_cases.SHAPED,
                    help="the share of command lines reshaped (fuzz_shapes.py: stdin, environment, terminal, links, "
                         "repeated and long arguments)")
    a = ap.parse_args(argv)
    fuzz_cases.SHAPED = a.shaped
    only = tuple(c for c in a.only.split(",") if c)
    result = campaign(a.runs, a.seed, a.jobs, log=Path(a.log) if a.log else None, minutes=a.minutes, only=only)
    print(f"{result['runs']} runs (seed {a.seed}, {result['malformed_files']} malformed files) in {result['wall_s']} s")
    for cls, n in result["counts"].items():
        first = result["examples"].get(cls, [{}])[0]
        print(f"  {cls:13} {n:6}" + (f"   first: {first.get('case', '')[:300]}" if cls != "ok" else ""))
        if cls in FAILING:
            print(f"{'':24}{first.get('detail', '')[:600]}")
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=1))
    return 1 if any(c in result["counts"] for c in FAILING) else 0


if __name__ == "__main__":
    sys.exit(main())
