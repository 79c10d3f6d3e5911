"""Table 7 per group of pages: who wrote the human markup (its generator) or which schema.org type
its root has, with each agent's rejection rate and its interval, and only the groups whose
figures say something shown on their own.

A *unit* is one page of one source: its group and its four counts (triples in, after validity,
after factuality, after compliance). Per group: the summed counts and, per agent, the rejection
rate (the claims the agent judged that it rejected) with an interval that holds both the
percentile interval of a bootstrap over the group's pages (claims of one page are not independent)
and the Wilson interval over its claims (a few pages' bootstrap is too narrow); a group of fewer
than ``MIN_PAGES`` pages has no interval, so it is never shown on its own. Where the judge's accuracy was measured (the calibration entry applied to
the agent), the factuality and compliance rates are also corrected for the judge's errors with
their interval (``udfs.scores.correction.corrected_rate``). The validity agent is rules, not a
judge: its rate is not corrected. A group is shown on its own only when every interval it shows is
at most ``width`` wide (``[report] group_interval_width``); the others are pooled into one row,
``OTHER``, which is shown whatever its width, and names the groups it holds. Counts reconcile:
the rows' pages and triples add up to the units'.

Pure: numbers in, rows out (numpy only).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

from udfs.scores.confusion import Confusion
from udfs.scores.correction import BOOTSTRAP_DRAWS, CI_LEVEL, SEED, corrected_rate

OTHER = "(other)"
STAGES = ("triples_in", "after_validity", "after_factuality", "after_compliance")
# (agent, the stage before it, the stage after it): "all agents" is the paper's rejection rate
AGENTS = (("validity", 0, 1), ("factuality", 1, 2), ("compliance", 2, 3), ("all agents", 0, 3))
JUDGED_AGENTS = ("factuality", "compliance")
# The method's own constant (not a setting): a bootstrap over fewer pages has too few distinct
# resamples (5 pages: 126) to be read as an interval.
MIN_PAGES = 5


@dataclass(frozen=True)
class Unit:
    """One page of one source: its group and its counts (``STAGES``)."""

    group: str
    counts: tuple[int, int, int, int]


@dataclass
class Rate:
    """One agent's rejection rate over a group: observed with its interval, and corrected for the
    judge with its interval where the judge's accuracy is known (``why``: why it is not)."""

    agent: str
    claims: int
    observed: float | None
    low: float | None
    high: float | None
    corrected: float | None = None
    corrected_low: float | None = None
    corrected_high: float | None = None
    why: str | None = None

    @property
    def width(self) -> float | None:
        """The widest interval the rate shows (None: a rate without an interval)."""
        widths = [
            h - lo for lo, h in ((self.low, self.high), (self.corrected_low, self.corrected_high)) if lo is not None
        ]
        return max(widths) if widths and self.observed is not None else None


@dataclass
class GroupRow:
    group: str
    pages: int
    counts: list[int]
    rates: list[Rate]
    pooled: list[str] = field(default_factory=list)  # the groups OTHER holds

    @property
    def width(self) -> float | None:
        """The widest interval of the row (None: some rate has none, so the row says too little)."""
        widths = [r.width for r in self.rates]
        return None if any(w is None for w in widths) else max(widths)


def wilson(k: float, n: float, level: float = CI_LEVEL) -> tuple[float, float]:
    """The Wilson score interval of ``k`` successes in ``n`` trials."""
    from statistics import NormalDist

    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def observed_interval(
    judged: Sequence[int],
    rejected: Sequence[int],
    *,
    draws: int = BOOTSTRAP_DRAWS,
    level: float = CI_LEVEL,
    seed: int = SEED,
) -> tuple[float | None, float | None, float | None]:
    """(rate, low, high): the share of the judged claims rejected over the pages, and an interval
    holding the percentile interval of ``draws`` bootstrap resamples of the pages (seeded) and the
    Wilson interval over the claims; (rate, None, None) with fewer than ``MIN_PAGES`` pages
    judging claims (no interval), (None, None, None) with none."""
    n = np.asarray(judged, dtype=float)
    k = np.asarray(rejected, dtype=float)
    keep = n > 0
    n, k = n[keep], k[keep]
    if not n.sum():
        return None, None, None
    rate = float(k.sum() / n.sum())
    if len(n) < MIN_PAGES:
        return rate, None, None
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(n), size=(draws, len(n)))
    rates = k[idx].sum(axis=1) / n[idx].sum(axis=1)
    a = (1 - level) / 2
    low, high = (float(x) for x in np.quantile(rates, [a, 1 - a]))
    w_low, w_high = wilson(float(k.sum()), float(n.sum()), level)
    return rate, min(low, w_low), max(high, w_high)


def group_rates(units: Sequence[Unit], accuracy: dict[str, Confusion]) -> list[Rate]:
    """Every agent's rate over ``units`` (``AGENTS``); ``accuracy``: the judge's measured accuracy
    per judged agent (an agent without one is not corrected, and says so)."""
    out = []
    for agent, before, after in AGENTS:
        judged = [u.counts[before] for u in units]
        rejected = [max(0, u.counts[before] - u.counts[after]) for u in units]
        observed, low, high = observed_interval(judged, rejected)
        rate = Rate(agent, sum(judged), observed, low, high)
        if agent in JUDGED_AGENTS:
            if agent not in accuracy:
                rate.why = "no calibration matched this agent: not corrected"
            elif observed is not None:
                c = corrected_rate(judged, rejected, accuracy[agent])
                rate.corrected, rate.corrected_low, rate.corrected_high = c.corrected, c.low, c.high
                rate.why = "; ".join(c.flags) or None
        out.append(rate)
    return out


def _row(group: str, units: Sequence[Unit], accuracy: dict[str, Confusion]) -> GroupRow:
    counts = [sum(u.counts[i] for u in units) for i in range(len(STAGES))]
    return GroupRow(group, len(units), counts, group_rates(units, accuracy))


def group_table(units: Iterable[Unit], width: float, accuracy: dict[str, Confusion] | None = None) -> list[GroupRow]:
    """The rows of the groups of ``units`` whose every interval is at most ``width`` wide, most
    pages first, then ``OTHER`` pooling the rest (module docstring)."""
    accuracy = accuracy or {}
    by_group: dict[str, list[Unit]] = {}
    for u in units:
        by_group.setdefault(u.group, []).append(u)
    rows = [_row(g, us, accuracy) for g, us in by_group.items()]
    shown = sorted((r for r in rows if r.width is not None and r.width <= width), key=lambda r: (-r.pages, r.group))
    pooled = sorted(r.group for r in rows if r not in shown)
    if pooled:
        other = _row(OTHER, [u for g in pooled for u in by_group[g]], accuracy)
        other.pooled = pooled
        shown.append(other)
    return shown


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x:.1%}"


def _interval(lo: float | None, hi: float | None) -> str:
    return "" if lo is None else f" [{lo:.1%}, {hi:.1%}]"


def table_rows(
    rows: Sequence[GroupRow], corrected: bool = True, units: str = "pages"
) -> tuple[list[str], list[list[str]], list[dict]]:
    """(header, rows of text, rows for a CSV) of a group table: the group, its pages, its counts
    per stage, each agent's observed rate with its interval and (``corrected``) the judged agents'
    corrected rates with theirs; OTHER's cell names the groups it pools. ``units``: what a unit
    is, the second column's name."""
    header = ["group", units, "in", "after validity", "after factuality", "after compliance"]
    for agent, _, _ in AGENTS:
        header.append(f"rejected: {agent}")
        if corrected and agent in JUDGED_AGENTS:
            header.append(f"corrected: {agent}")
    text, frame = [], []
    for r in rows:
        name = r.group if not r.pooled else f"{r.group}: {', '.join(r.pooled)}"
        cells = [name, f"{r.pages:,}", *(f"{c:,}" for c in r.counts)]
        rec = {"group": r.group, "pooled": " ".join(r.pooled), units: r.pages, **dict(zip(STAGES, r.counts))}
        for rate in r.rates:
            cells.append(_pct(rate.observed) + _interval(rate.low, rate.high))
            rec |= {
                f"{rate.agent}_rejected": rate.observed,
                f"{rate.agent}_low": rate.low,
                f"{rate.agent}_high": rate.high,
            }
            if corrected and rate.agent in JUDGED_AGENTS:
                cells.append(
                    (_pct(rate.corrected) + _interval(rate.corrected_low, rate.corrected_high))
                    if rate.corrected is not None
                    else (rate.why or "–")
                )
                rec |= {
                    f"{rate.agent}_corrected": rate.corrected,
                    f"{rate.agent}_corrected_low": rate.corrected_low,
                    f"{rate.agent}_corrected_high": rate.corrected_high,
                    f"{rate.agent}_why": rate.why,
                }
        text.append(cells)
        frame.append(rec)
    return header, text, frame
