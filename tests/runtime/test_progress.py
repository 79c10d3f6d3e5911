"""udfs/runtime/progress.py: a bar in a terminal, a periodic one-line summary anywhere else."""

from __future__ import annotations

import io

from udfs.runtime.progress import Progress


class FakeClock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_summary_lines_come_every_interval_not_every_update():
    clock, out = FakeClock(), io.StringIO()
    p = Progress("evaluate", 10, "pages", stream=out, interval_s=30, tty=False, clock=clock, background=False)
    clock.t += 10
    p.update(1, verdicts=12)
    assert out.getvalue() == ""  # 10 s after the start: not yet
    clock.t += 25
    p.update(2, verdicts=30)
    lines = out.getvalue().splitlines()
    assert lines == ["evaluate: 3/10 pages, 42 verdicts, 5.1 pages/min, ETA 82 s, 35 s elapsed"]
    clock.t += 5
    p.update(1, verdicts=1)
    assert len(out.getvalue().splitlines()) == 1  # 5 s after the last line
    p.close()
    assert out.getvalue().splitlines()[-1].startswith("evaluate: 4/10 pages, 43 verdicts, ")


def test_tick_between_updates_says_the_step_still_moves():
    """One page can take minutes: the timer's tick writes a line even when nothing finished."""
    clock, out = FakeClock(), io.StringIO()
    p = Progress("evaluate", 2, "pages", stream=out, interval_s=30, tty=False, clock=clock, background=False)
    clock.t += 31
    p.tick()
    assert out.getvalue().splitlines() == ["evaluate: 0/2 pages, 31 s elapsed"]


def test_zero_counts_and_unknown_totals():
    clock, out = FakeClock(), io.StringIO()
    p = Progress("judge", None, "verdicts", stream=out, interval_s=30, tty=False, clock=clock, background=False)
    clock.t += 120
    p.update(240, failed=0)
    # no total: no ETA, no "/total"; a zero counter is not shown
    assert out.getvalue().splitlines() == ["judge: 240 verdicts, 2.0 verdicts/s, 2 min elapsed"]


def test_terminal_gets_a_bar_and_no_summary_lines():
    out = io.StringIO()
    with Progress("evaluate", 3, "pages", stream=out, tty=True) as p:
        p.update(1, triples=7)
        p.update(2, triples=5)
    text = out.getvalue()
    assert "evaluate" in text and "3/3" in text and "triples=12" in text
    assert "elapsed" not in text  # the summary line format is for logs only


def test_a_stream_that_is_not_a_terminal_gets_lines_by_default():
    out = io.StringIO()  # isatty() is False
    p = Progress("evaluate", 1, "pages", stream=out, interval_s=0, background=False)
    p.update(1)
    p.close()
    assert out.getvalue().splitlines()[-1].startswith("evaluate: 1/1 pages")
