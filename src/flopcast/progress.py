"""A progress bar for work that may take a while: silent for the first second, then a bar on stderr.

Work reports units (candidates evaluated, cluster sizes searched); the total may grow as work is
discovered (a plan does not know in advance how many cluster sizes it will search). On a terminal
the bar redraws in place; elsewhere (a pipe, a CI log) one line says what is running, once.
"""

from __future__ import annotations

import sys
import time

SHOW_AFTER_S = 1.0
WIDTH = 28


class Progress:
    def __init__(self, label: str, total: int = 0, *, unit: str = "candidates", after_s: float = SHOW_AFTER_S,
                 enabled: bool = True, stream=None, clock=time.perf_counter):
        self.label, self.unit = label, unit
        self.total, self.done = int(total), 0
        self.after_s, self.enabled = after_s, enabled
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.start = clock()
        self.shown = False
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

    def _tty(self) -> bool:
        return bool(getattr(self.stream, "isatty", lambda: False)())

    def _tick(self) -> None:
        if not self.enabled:
            return
        now = self.clock()
        elapsed = now - self.start
        if not self.shown:
            if elapsed < self.after_s:
                return
            self.shown = True
            if not self._tty():
                self.stream.write(f"{self.label} ...\n")
                self.stream.flush()
                return
        if self._tty() and now - self._last_draw >= 0.1:
            self._last_draw = now
            self._draw(elapsed)

    def _draw(self, elapsed: float) -> None:
        frac = min(self.done / self.total, 1.0) if self.total > 0 else 0.0
        fill = int(round(frac * WIDTH))
        bar = "#" * fill + "-" * (WIDTH - fill)
        self.stream.write(f"\r{self.label} [{bar}] {100 * frac:3.0f}%  {self.done:,}/{self.total:,} {self.unit}"
                          f"  {elapsed:.1f} s\x1b[K")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.shown and self._tty():
            self.done = max(self.done, self.total)
            self._draw(self.clock() - self.start)
            self.stream.write("\n")
            self.stream.flush()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
