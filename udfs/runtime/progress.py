"""Progress of a long step, shown the way its console wants it.

``Progress(label, total, unit)`` is told of each finished unit (``update``, with running counts
such as verdicts; the counts named in ``rates`` are also shown per second, e.g. verdicts/s).
Where it writes to a terminal it draws a tqdm bar; anywhere else (a log file,
``make demo | tee``, a cluster's driver log) it writes one line every ``interval_s`` seconds and one
at the end, e.g. ``evaluate: 3/10 pages, 42 verdicts, 1.2 pages/min, ETA 5 min``, so a piped log
stays short and still says whether the step moves. The periodic line is also written between
updates (a background timer), since one unit (a page through the model) can take minutes.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from typing import Callable, TextIO

# Seconds between two summary lines outside a terminal: about a screen per hour of evaluation.
INTERVAL_S = 30.0


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _rate(n: float, seconds: float, unit: str) -> str:
    per_s = n / seconds
    return f"{per_s:.1f} {unit}/s" if per_s >= 1 else f"{per_s * 60:.1f} {unit}/min"


class Progress:
    """Progress of ``total`` units named ``unit`` (``total`` 0 or None: unknown).

    ``tty`` (default: whether ``stream`` is a terminal) picks the bar or the summary lines;
    ``clock`` and ``background`` exist for tests (a fake clock, no timer thread). Use as a context
    manager, or call ``close()``: it writes the final line (non-terminal) or closes the bar.
    """

    def __init__(
        self,
        label: str,
        total: int | None,
        unit: str = "items",
        *,
        stream: TextIO | None = None,
        interval_s: float = INTERVAL_S,
        tty: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
        background: bool = True,
        rates: tuple[str, ...] = (),
    ):
        self.label, self.total, self.unit = label, total or None, unit
        self.rates = tuple(rates)
        self.stream = stream if stream is not None else sys.stderr
        self.interval_s = interval_s
        self.clock = clock
        self.done = 0
        self.counts: dict[str, int | float] = {}
        self.t0 = clock()
        self._last = self.t0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._bar = None
        self._thread = None
        if tty if tty is not None else _isatty(self.stream):
            from tqdm import tqdm

            self._bar = tqdm(total=self.total, desc=label, unit=f" {unit}", file=self.stream, dynamic_ncols=True)
        elif background and interval_s > 0:
            self._thread = threading.Thread(target=self._tick_loop, name=f"progress-{label}", daemon=True)
            self._thread.start()

    # ---- reporting ---------------------------------------------------------------------------
    def update(self, n: int = 1, **counts: int | float) -> None:
        """``n`` more units done; ``counts`` are added to the running counts (e.g. verdicts=12)."""
        with self._lock:
            self.done += n
            for k, v in counts.items():
                self.counts[k] = self.counts.get(k, 0) + v
            if self._bar is not None:
                shown = {k: _num(v) for k, v in self.counts.items() if v}
                elapsed = max(self.clock() - self.t0, 1e-9)
                shown.update(
                    {f"{k}/s": _num(float(self.counts[k]) / elapsed) for k in self.rates if self.counts.get(k)}
                )
                if shown:
                    self._bar.set_postfix(shown, refresh=False)
                self._bar.update(n)
                return
        self.tick()

    def tick(self) -> None:
        """Write the summary line if ``interval_s`` has passed since the last one (non-terminal)."""
        if self._bar is not None:
            return
        with self._lock:
            now = self.clock()
            if now - self._last < self.interval_s:
                return
            self._last = now
            line = self.line(now)
        self._write(line)

    def line(self, now: float | None = None) -> str:
        """The one-line summary: done/total units, running counts, rate and time left."""
        now = self.clock() if now is None else now
        elapsed = max(now - self.t0, 1e-9)
        parts = [f"{self.done}/{self.total} {self.unit}" if self.total else f"{self.done} {self.unit}"]
        parts += [f"{_num(v)} {k}" for k, v in self.counts.items() if v]  # a zero count says nothing
        parts += [f"{_num(float(self.counts[k]) / elapsed)} {k}/s" for k in self.rates if self.counts.get(k)]
        if self.done:
            parts.append(_rate(self.done, elapsed, self.unit))
            if self.total and self.done < self.total:
                parts.append(f"ETA {_duration(elapsed / self.done * (self.total - self.done))}")
        parts.append(f"{_duration(elapsed)} elapsed")
        return f"{self.label}: " + ", ".join(parts)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1)
        if self._bar is not None:
            self._bar.close()
        else:
            self._write(self.line())

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- internals -----------------------------------------------------------------------------
    def _tick_loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.tick()

    def _write(self, line: str) -> None:
        try:
            self.stream.write(line + "\n")
            self.stream.flush()
        except ValueError:  # the stream was closed under us (interpreter exit): nothing to say
            pass


def quiet_ray_data() -> None:
    """Ray Data without its own progress display, for a job that shows a ``Progress``: no bars, no
    execution plan at start, no 10-second progress block in logs, no INFO lines (warnings stay).
    Call before the Dataset is created: a Dataset copies the current DataContext."""
    import ray.data

    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    # With the bars off Ray Data warns once how to turn them on: that is this module's choice.
    logging.getLogger("ray.data._internal.progress").setLevel(logging.ERROR)


def _num(v: int | float) -> str:
    return f"{v:,}" if isinstance(v, int) else f"{v:,.1f}"


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
