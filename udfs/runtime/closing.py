"""How every run ends: the job's :class:`Outcome`, checked and told by the base class.

A job's ``run()`` returns an :class:`Outcome`: its counters, the further checks it computed (the
per-file reads adding up...), its own summary lines, and how many units of work (pages, files,
C-sets) it was given and how many succeeded. ``Job.main`` closes every run the same way with it
(:func:`close`), so a job written tomorrow gets all of this without being told:

* the counters' reconciliation: each of the job's declared ``balances`` (a total and the counters
  that add up to it) and each named check must hold; ``counters["reconciles"]`` says whether they
  all did, and a run whose counters do not reconcile is an internal error (exit status 1) whose
  run record names the balances that failed;
* the run record (``<table>/_run.json``) with its ``status``;
* the summary block and the ``next:`` hint;
* the exit status: a run given units none of which succeeded never exits 0 (:class:`NothingDone`,
  status 2, its last line the commonest reason), and a run in which most units failed says so in
  its last line with the commonest reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from udfs.runtime.errors import NothingDone


@dataclass
class Outcome:
    """What one run did. ``counters`` go to the run record; ``checks`` are named reconciliations
    the job computed beyond its declared balances (name -> whether it holds); ``lines`` are the
    job's own summary lines (printed on stdout before the common block); ``units`` names one unit
    of work in the plural, ``given`` how many the run was given and ``done`` how many succeeded
    (None: the job has no such rule), ``failures`` the failed units by reason."""

    counters: dict[str, Any]
    checks: dict[str, bool] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    units: str = "units"
    given: int | None = None
    done: int | None = None
    failures: dict[str, int] = field(default_factory=dict)


Balance = tuple[str, tuple[str, ...]]  # (total counter, the counters that add up to it)


def unbalanced(counters: dict[str, Any], balances: tuple[Balance, ...]) -> list[str]:
    """Each balance that does not hold, as ``"total 10 != a 4 + b 5"`` (a counter a balance names
    but the job did not count is a failure too: a balance cannot hold by omission)."""
    out = []
    for total, parts in balances:
        names = (total, *parts)
        missing = [n for n in names if n not in counters]
        if missing:
            out.append(f"{total}: counter{'s' if len(missing) > 1 else ''} {', '.join(missing)} not counted")
        elif counters[total] != sum(counters[p] for p in parts):
            out.append(f"{total} {counters[total]} != " + " + ".join(f"{p} {counters[p]}" for p in parts))
    return out


def commonest(failures: dict[str, int]) -> str:
    """The commonest failure reason with its count, ``"WARC file not found" (179)``."""
    if not failures:
        return "no reason recorded"
    reason, n = max(failures.items(), key=lambda kv: (kv[1], kv[0]))
    return f"{reason!r} ({n})"


def verdict_line(outcome: Outcome) -> str | None:
    """The last line of a run in which most units failed (None otherwise)."""
    given, done = outcome.given, outcome.done
    if given is None or done is None or not given or done * 2 >= given:
        return None
    return f"warning: {given - done} of {given} {outcome.units} failed; commonest reason: {commonest(outcome.failures)}"


def close(outcome: Outcome, balances: tuple[Balance, ...], record: Any) -> list[str]:
    """Fill the run record from ``outcome`` (counters, ``reconciles``, ``status``, the failed
    balances and checks) and return what failed to reconcile (empty: everything adds up). Raises
    nothing: the caller writes the record first, then acts on it (:func:`ending`)."""
    counters = dict(outcome.counters)
    # counters the job's library counted into the record itself are reconciled too
    failed = unbalanced({**record["counters"], **counters}, balances) + [
        f"check {name} fails" for name, ok in outcome.checks.items() if not ok
    ]
    counters["reconciles"] = not failed
    for k, v in counters.items():
        record.count(k, v)
    if failed:
        record["status"] = "failed: counters do not reconcile"
        record["unreconciled"] = failed
    elif outcome.given and outcome.done == 0:
        record["status"] = (
            f"failed: no {outcome.units[:-1] if outcome.units.endswith('s') else outcome.units} succeeded"
        )
    else:
        record["status"] = "ok"
    return failed


def ending(outcome: Outcome, failed: list[str]) -> None:
    """Raise what a closed run must end on: RuntimeError (a bug: exit 1) when the counters do not
    reconcile, :class:`NothingDone` (exit 2) when the run was given units and none succeeded."""
    if failed:
        raise RuntimeError("counters do not reconcile: " + "; ".join(failed))
    if outcome.given and outcome.done == 0:
        raise NothingDone(
            f"none of {outcome.given} {outcome.units} succeeded; commonest reason: {commonest(outcome.failures)} "
            "(the run record and rejects/ name every one)"
        )
