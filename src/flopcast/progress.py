"""The one progress display for work that may take a while: rich's progress bar on stderr.

Work reports units (candidates evaluated, cluster sizes searched); the total may grow as work is
discovered (a plan does not know in advance how many cluster sizes it will search). Nothing shows for
the first second. On a terminal the bar then redraws in place and stays, complete, when the work ends;
elsewhere (a pipe, a CI log) nothing is written until the end, then one line says what was done.
rich is imported only when a bar is drawn.
"""

from __future__ import annotations

import sys
import time

SHOW_AFTER_S = 1.0
REDRAW_S = 0.1


class Progress:
    def __init__(self, label: str, total: int = 0, *, unit: str = "candidates", after_s: float = SHOW_AFTER_S,
                 enabled: bool = True, stream=None, clock=time.perf_counter):
        self.title = self.label = label  # the title names the work in the final line; the label changes
        self.unit = unit
        self.total, self.done = int(total), 0
        self.after_s, self.enabled = after_s, enabled
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.start = clock()
        self._bar = None  # rich.progress.Progress, once shown on a terminal
        self._task = None
        self._last_draw = -1.0

    def add_total(self, n: int) -> None:
        self.total += int(n)
        self._tick()

    def update(self, n: int = 1) -> None:
        self.done += int(n)
        self._tick()

    def note(self, text: str) -> None:
        """Change the label (e.g. the cluster size being searched)."""
        self.label = text
        self._tick()

    def step(self, text: str) -> None:
        """One unit done, and the label says what comes next (for work reported as messages)."""
        self.label = text
        self.update(1)

    def _tty(self) -> bool:
        return bool(getattr(self.stream, "isatty", lambda: False)())

    def _tick(self) -> None:
        if not self.enabled:
            return
        now = self.clock()
        if self._bar is None:
            if now - self.start < self.after_s or not self._tty():
                return
            self._show()
        if now - self._last_draw >= REDRAW_S:
            self._last_draw = now
            self._draw()

    def _show(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress as Bar, ProgressColumn, TaskProgressColumn, TextColumn
        from rich.progress import TimeElapsedColumn
        from rich.text import Text

        class Count(ProgressColumn):
            def render(self, task):  # "3/8 sizes", or "3 claims" while the total is unknown
                total = f"/{task.total:,.0f}" if task.total is not None else ""
                return Text(f"{task.completed:,.0f}{total} {task.fields['unit']}")

        console = Console(file=self.stream, force_terminal=True)
        self._bar = Bar(TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(), Count(),
                        TimeElapsedColumn(), console=console, auto_refresh=False, get_time=self.clock)
        self._task = self._bar.add_task(self.label, total=self._total(self.done), unit=self.unit)
        self._bar.start()

    def _total(self, done: int) -> int | None:
        """The bar's total: None (a pulsing bar) while no total is known."""
        return max(self.total, done) if self.total > 0 else None

    def _draw(self, final: bool = False) -> None:
        done = max(self.done, self.total) if final else self.done
        total = done if final and self.total == 0 else self._total(done)
        self._bar.update(self._task, description=self.label, completed=done, total=total)
        self._bar.refresh()

    def close(self) -> None:
        if not self.enabled:
            return
        if self._bar is not None:
            self._draw(final=True)
            self._bar.stop()
            self._bar = None
            return
        elapsed = self.clock() - self.start
        if elapsed >= self.after_s and not self._tty():
            self.stream.write(f"{self.title}: {self.done:,} {self.unit} in {elapsed:.1f} s\n")
            self.stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
