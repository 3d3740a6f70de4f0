"""The progress bar (rich, on stderr): silent for quick work, shown once work passes a second; in a pipe,
one line at the end."""

import io

from flopcast import api, catalog
from flopcast.plan import search as search_mod
from flopcast.progress import Progress


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


class Tty(io.StringIO):
    def isatty(self):
        return True


def test_silent_under_a_second_then_a_bar():
    clock, out = Clock(), Tty()
    with Progress("searching", 100, stream=out, clock=clock) as p:
        p.update(40)
        clock.t = 0.5
        p.update(10)
        assert out.getvalue() == ""
        clock.t = 1.5
        p.update(10)
        assert "searching" in out.getvalue() and "60%" in out.getvalue()
    shown = out.getvalue().replace("\x1b[?25h", "")  # rich shows the cursor again after the last line
    assert shown.endswith("\n") and "100%" in shown and "100/100 candidates" in shown


def test_a_growing_total_never_runs_past_it():
    clock, out = Clock(), Tty()
    with Progress("planning", stream=out, clock=clock, unit="sizes") as p:
        clock.t = 2.0
        p.add_total(4)
        p.update(3)
        p.add_total(4)
        clock.t = 3.0  # redrawn at most every 0.1 s
        p.update(1)
        assert "4/8 sizes" in out.getvalue() and "100%" not in out.getvalue()
    assert "8/8 sizes" in out.getvalue()


def test_quick_work_prints_nothing_and_pipes_get_one_line():
    clock, out = Clock(), Tty()
    with Progress("searching", 10, stream=out, clock=clock) as p:
        p.update(10)
    assert out.getvalue() == ""
    clock, pipe = Clock(), io.StringIO()
    with Progress("planning", 10, stream=pipe, clock=clock) as p:
        clock.t = 2.0
        p.update(5)
        p.update(5)
    assert pipe.getvalue() == "planning: 10 candidates in 2.0 s\n"


def test_search_counts_every_candidate():
    clock, out = Clock(), io.StringIO()
    p = Progress("searching", stream=out, clock=clock)
    s = search_mod.search(api.resolve_model("llama3-8b"), api.resolve_system("p5.48xlarge"), 64,
                          catalog.calibration(), progress=p)
    assert p.total == s.considered and p.done == s.considered
