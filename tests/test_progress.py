"""The progress bar: silent for quick work, shown once work passes a second."""

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
    assert out.getvalue().endswith("\n") and "100%" in out.getvalue()


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
    assert pipe.getvalue() == "planning ...\n"


def test_search_counts_every_candidate():
    clock, out = Clock(), io.StringIO()
    p = Progress("searching", stream=out, clock=clock)
    s = search_mod.search(api.resolve_model("llama3-8b"), api.resolve_system("p5.48xlarge"), 64,
                          catalog.calibration(), progress=p)
    assert p.total == s.considered and p.done == s.considered
