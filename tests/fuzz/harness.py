"""The fuzz suite's harness: run a command in-process, and check what every run must satisfy.

Every run has a limit: past RUN_LIMIT_S of CPU time (or WALL_LIMIT_S of wall clock, for a run that waits)
it is a hang and fails the test. CPU time, not wall clock, so a loaded machine does not fail a run. Every run
also has a memory cap: its peak resident memory (the process's, VmHWM, reset before the run) must stay under
MEMORY_CAP_BYTES, and for the run's duration the address space may grow by at most that much (a soft
RLIMIT_AS, restored after), so a runaway allocation is a MemoryError, failed as `memory`, not an OOM kill.
FUZZ is the hypothesis settings of the suite's tests: profile `ci` by default (20 examples per test,
derandomized, the suite well under two minutes on 2 cores),
FLOPCAST_FUZZ=long for a developer's run (400 per test, random seeds). The profiles are applied per test
(@FUZZ), so other hypothesis tests keep their own settings.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
import os
import resource
import signal
import traceback

from hypothesis import HealthCheck, settings

RUN_LIMIT_S = 30  # CPU seconds: a run that takes longer is a hang (issue 16's threshold)
WALL_LIMIT_S = 300
MEMORY_CAP_BYTES = 2 << 30  # issue 16's threshold: no run over 2 GiB
# The deadline of an example is its runs' CPU limit above (and the wall-clock one past that), not hypothesis's
# wall-clock `deadline`: on a shared machine (a load of 17 on 2 cores) one plan example took 253 s of wall clock.
EXAMPLE_DEADLINE = None
_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture]
settings.register_profile("flopcast-ci", max_examples=20, deadline=EXAMPLE_DEADLINE, derandomize=True,
                          suppress_health_check=_QUIET)
settings.register_profile("flopcast-long", max_examples=400, deadline=EXAMPLE_DEADLINE, suppress_health_check=_QUIET)
FUZZ = settings.get_profile("flopcast-long" if os.environ.get("FLOPCAST_FUZZ") == "long" else "flopcast-ci")

# a computed nan or inf in text (a user's own 'inf', echoed in quotes in an error, is not one)
_NONSENSE = re.compile(r"(?<![\w.'\"])(nan|inf|-inf|infinity)(?![\w'\"])", re.IGNORECASE)


class OverMemory(AssertionError):
    pass


class Hang(BaseException):  # not an Exception: no `except Exception` inside a command can swallow it
    pass


def _alarm(signum, frame):
    raise Hang(f"a run took longer than {RUN_LIMIT_S} s of CPU time or {WALL_LIMIT_S} s of wall clock")


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            line = next((x for x in f if x.startswith(field + ":")), None)
    except OSError:
        return None
    return int(line.split()[1]) if line else None


def peak_rss_bytes() -> int:
    """The process's peak resident memory since the last reset_peak_rss (Linux VmHWM; else ru_maxrss)."""
    kib = _status_kib("VmHWM")
    return (kib if kib is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def reset_peak_rss() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as f:  # "5": reset the peak RSS (Linux >= 4.0, proc(5))
            f.write("5")
    except OSError:
        pass  # not Linux: the peak is the process's since it started, a stricter check


@contextlib.contextmanager
def memory_cap(argv):
    """The run's peak RSS under MEMORY_CAP_BYTES; its address space may grow by at most that much meanwhile."""
    reset_peak_rss()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    vm = _status_kib("VmSize")
    if vm is not None:
        cap = vm * 1024 + MEMORY_CAP_BYTES
        resource.setrlimit(resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    peak = peak_rss_bytes()
    if peak > MEMORY_CAP_BYTES:
        raise OverMemory(f"memory: flopcast {' '.join(argv)} peaked at {peak / 2**30:.2f} GiB")


def run(argv: list[str]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `flopcast ARGV` run in this process, past RUN_LIMIT_S or
    MEMORY_CAP_BYTES an error."""
    from flopcast.cli import main

    out, err = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, _alarm), signal.signal(signal.SIGPROF, _alarm)
    signal.alarm(WALL_LIMIT_S)
    signal.setitimer(signal.ITIMER_PROF, RUN_LIMIT_S)
    try:
        with memory_cap(argv), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    except Hang:
        raise AssertionError(f"hang: flopcast {' '.join(argv)}") from None
    except MemoryError:
        raise AssertionError(f"memory: flopcast {' '.join(argv)} needed over {MEMORY_CAP_BYTES / 2**30:g} GiB "
                             "more address space") from None
    except OverMemory:
        raise
    except BaseException:
        args = " ".join(map(repr, argv))
        raise AssertionError(f"traceback from flopcast {args}:\n{traceback.format_exc()}") from None
    finally:
        signal.alarm(0)
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGALRM, previous[0])
        signal.signal(signal.SIGPROF, previous[1])
    return code, out.getvalue(), err.getvalue()


def _reject_constant(name):
    raise ValueError(f"{name} in JSON output")


def strict_json(text: str):
    return json.loads(text, parse_constant=_reject_constant)


def check_run(argv: list[str]) -> tuple[int, str, str]:
    """Run and check: exit 0 or 2, one line of error on 2, no traceback, strict JSON, no nan/inf in text."""
    code, out, err = run(argv)
    where = f"flopcast {' '.join(map(repr, argv))}"
    assert code in (0, 2), f"{where}: exit code {code}; stderr: {err[-500:]}"
    assert "Traceback" not in err and "Traceback" not in out, f"{where}: {err[-2000:]}"
    if code == 2:
        lines = [x for x in err.splitlines() if x.startswith("error:")]
        assert len(lines) == 1, f"{where}: the error is not one line: {err[-500:]}"
        return code, out, err
    if "--json" in argv:
        data = strict_json(out)
        check_values(data, where)
    else:
        bad = _NONSENSE.search(out)
        if bad:
            context = out[max(0, bad.start() - 200):bad.end() + 50]
            raise AssertionError(f"{where}: {bad.group(0)!r} in the text output: ...{context}")
    return code, out, err


def check_values(data, where: str) -> None:
    """The invariants of every result object found in the JSON (train results wherever they sit)."""
    for obj in _objects(data):
        if "step_time_s" in obj and "time_breakdown_s" in obj:
            check_train(obj, where)


def _objects(data):
    stack = [data]
    while stack:
        o = stack.pop()
        if isinstance(o, dict):
            yield o
            stack.extend(o.values())
        elif isinstance(o, list):
            stack.extend(o)


def check_train(r: dict, where: str) -> None:
    step = r["step_time_s"]
    assert step is not None and step > 0, f"{where}: step_time_s {step}"
    parts = r["time_breakdown_s"]
    assert all(v is not None and v >= -1e-9 * step for v in parts.values()), f"{where}: negative part {parts}"
    assert math.isclose(sum(parts.values()), step, rel_tol=1e-6, abs_tol=1e-12), f"{where}: parts {parts} != {step}"
    mfu = r.get("mfu")
    assert mfu is not None and 0 < mfu <= 1, f"{where}: mfu {mfu}"
    if r.get("fits"):
        assert r["memory_gib"] <= r["memory_capacity_gib"] * (1 + 1e-9), f"{where}: fits but needs {r['memory_gib']}"
    for key in ("tokens_per_s", "time_to_train_s", "expected_time_to_train_s", "cost_usd", "energy_kwh"):
        if r.get(key) is not None:
            assert r[key] >= 0, f"{where}: {key} {r[key]}"
