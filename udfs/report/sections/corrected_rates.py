"""Rejection rates corrected for the judge: per source and verdict agent, the observed rejection
rate and the rate corrected for the judge's measured errors, with its bootstrap interval."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from udfs.evaluation.evaluator import HUMAN
from udfs.report.sections import Part
from udfs.runtime.judge_record import read_judge

if TYPE_CHECKING:
    from udfs.report.inputs import Run

BLOCK = "corrected_rates"
PER_RUN = True

# per agent: the claims it judged on a page and the ones it rejected (scores' counts)
_JUDGED = {"factuality": ("n_valid", "n_factual"), "compliance": ("n_factual", "n_compliant")}
_COUNTS = ("n_valid", "n_factual", "n_compliant")


def _rate(source: str, agent: str, counts: list[tuple], entry: dict[str, Any] | None) -> dict[str, Any]:
    """One row: ``agent``'s observed rejection rate over the pages' ``counts`` and, where the
    applied calibration ``entry`` measured the judge, the corrected rate and its interval."""
    from udfs.scores.confusion import Confusion
    from udfs.scores.correction import CI_LEVEL, corrected_rate

    before, after = _JUDGED[agent]
    i, j = _COUNTS.index(before), _COUNTS.index(after)
    judged = [c[i] for c in counts]
    rejected = [max(0, c[i] - c[j]) for c in counts]
    n = sum(judged)
    observed = sum(rejected) / n if n else None
    row = {
        "source": source,
        "agent": agent,
        "pages": len(judged),
        "claims": n,
        "observed": f"{observed:.1%}" if observed is not None else "no claim judged",
        "corrected": None,
        "interval": None,
        "why": None,
    }
    if entry is None:
        row["why"] = "no calibration matched this agent: the judge's errors are not measured"
    elif n:
        test = entry.get("test") or {}
        accuracy = Confusion(**{k: int(test.get(k) or 0) for k in ("tp", "fn", "tn", "fp")})
        c = corrected_rate(judged, rejected, accuracy)
        if c.corrected is not None:
            row["corrected"] = f"{c.corrected:.1%}"
        if c.low is not None:
            row["interval"] = f"{c.low:.1%} – {c.high:.1%} ({CI_LEVEL:.0%})"
        row["why"] = "; ".join(c.flags) or None
    return row


def corrected_rates(con, record: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Per source and verdict agent: the observed rejection rate over the scored pages and the rate
    corrected for the judge's errors with its bootstrap interval (``udfs.scores.correction``),
    using the sensitivity and specificity the applied calibration measured on its test split. A
    rate that cannot be corrected says why (no calibration matched this agent, or the flags of
    the estimator)."""
    ev = (record or {}).get("evaluation") or {}
    stages = ev.get("stages") or ["validity", "factuality", "compliance"]
    judge = read_judge(record)
    entries = {a: r.entry for a, r in (judge.agents if judge else {}).items() if r.entry is not None}
    rows = con.execute(
        "SELECT source, n_valid, n_factual, n_compliant FROM scores WHERE status = 'ok' ORDER BY source, page_key"
    ).fetchall()
    by_source: dict[str, list[tuple]] = {}
    for source, *counts in rows:
        by_source.setdefault(source, []).append(tuple(int(x or 0) for x in counts))
    return [
        _rate(source, agent, by_source[source], entries.get(agent))
        for source in sorted(by_source, key=lambda src: (src != HUMAN, src))
        for agent in _JUDGED
        if agent in stages
    ]


def data(run: Run) -> Part:
    import pandas as pd

    rows = corrected_rates(run.con, run.record)
    return Part({"rows": rows}, {"corrected_rates": pd.DataFrame(rows)})
