"""What a run leaves a researcher to read last: the end-of-run summaries.

``job_summary`` is the block every job prints on stderr when it ends (``Job.main``): the tables it
wrote with their row counts and locations, the total time, the counters that need attention (a
non-zero counter whose name says reject, fail, error, no_text, not_judged...) and the next command.

``python -m udfs.runtime.summary OUT`` is the last thing ``make demo`` prints: the report's
``file://`` link, the headline per source (triples in -> after validity -> after factuality ->
after compliance, and what each agent rejected) from ``OUT/scores``, the thresholds the verdict
agents decided with and where they came from (a calibration file or the configuration), the run
records' total time.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import sys
from pathlib import Path
from typing import Any, Iterable

from udfs.runtime.io import Folder
from udfs.runtime.judge_record import read_judge

# Counter names that say something went wrong or was left out; a non-zero one is worth a look. The
# duplicate keys of an input are (the rows of one page in several strata, evaluate's duplicate_rows,
# are not: that is how a sample is).
ATTENTION = re.compile(
    r"reject|fail|error|damaged|no_text|not_judged|no_verdict|unreadable|missing|dropped"
    r"|ambiguous|conflicting|duplicate_cset|duplicate_vote|truth_duplicate"
)
# Counters named like attention ones that are bookkeeping, not trouble.
_NOT_ATTENTION = {"rejects_written"}
# The funnel of the scores table, in pipeline order, as the report names its stages.
# (scores column, what the count is, the agent that cut it down to that)
STAGES = (
    ("n_triples", "triples", ""),
    ("n_valid", "valid", "validity"),
    ("n_factual", "factual", "factuality"),
    ("n_compliant", "compliant", "compliance"),
)


def table_rows(folder: Folder) -> int | None:
    """Rows of the Parquet table in ``folder`` (from the files' footers; no data read), or None
    where the folder holds no Parquet (a report folder, a failed write)."""
    try:
        if not folder.ls("*.parquet") and not folder.ls("*/*.parquet"):
            return None
        return folder.dataset().count_rows()
    except Exception:  # noqa: BLE001 - a summary never fails a run that succeeded
        return None


def attention(counters: dict[str, Any]) -> dict[str, int | float]:
    """The counters to look at: numeric, non-zero, named like trouble (see ``ATTENTION``)."""
    return {
        k: v
        for k, v in counters.items()
        if ATTENTION.search(k)
        and k not in _NOT_ATTENTION
        and isinstance(v, (int, float))
        and not isinstance(v, bool)
        and v
    }


def _duration(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def job_summary(name: str, tables: Iterable[tuple[str, Folder]], record: dict[str, Any], next_step: str = "") -> str:
    """The end-of-run block of job ``name``: ``tables`` are (name, folder) pairs it wrote,
    ``record`` its run record (counters, wall_s, report), ``next_step`` the command to run next."""
    lines = [f"{name}: done in {_duration(record.get('wall_s') or 0)}"]
    report = record.get("report")
    link = report if isinstance(report, str) and report.endswith(".html") else None
    rows = [(table, folder, table_rows(folder)) for table, folder in tables]
    # An empty rejects table is no news (an empty output table is); a folder without Parquet that
    # holds the report is named by the report's link.
    rows = [
        (t, f, n)
        for t, f, n in rows
        if (n or not t.startswith("rejects")) and f.exists() and not (n is None and link and link.startswith(str(f)))
    ]
    width = max((len(t) for t, _, _ in rows), default=0) + 1
    for table, folder, n in rows:
        count = f"{n:>10,} rows" if n is not None else " " * 15
        lines.append(f"  {table + '/':<{width}} {count}  {folder}")
    if link:
        lines.append(f"  report: {file_url(link)}")
    look = attention(record.get("counters", {}))
    if look:
        lines.append("  to look at: " + ", ".join(f"{k} {_num(v)}" for k, v in look.items()))
    if next_step:
        lines.append(f"  next: {next_step}")
    return "\n".join(lines)


def file_url(location: str) -> str:
    """A local path as a ``file://`` link a terminal can open; a URL as it is."""
    return location if "://" in location else Path(location).resolve().as_uri()


def _num(v: int | float) -> str:
    return f"{v:,}" if isinstance(v, int) else f"{v:,.3g}"


# ---- the demo's summary ----------------------------------------------------------------------------
def funnel(scores: Folder) -> dict[str, dict[str, int]]:
    """source -> {stage column: triples} summed over the pages of ``scores/``."""
    t = scores.read(columns=["source", *(c for c, _, _ in STAGES)]).to_pylist()
    out: dict[str, dict[str, int]] = {}
    for r in t:
        acc = out.setdefault(r["source"], {c: 0 for c, _, _ in STAGES})
        for c, _, _ in STAGES:
            acc[c] += int(r[c] or 0)
    return out


def headline(source: str, counts: dict[str, int]) -> str:
    """One line per source: the funnel, then the biggest cut said in words."""
    chain = " -> ".join(f"{counts[c]:,} {what}" for c, what, _ in STAGES)
    cuts = [
        (counts[a] - counts[b], agent, counts[a]) for (a, _, _), (b, _, agent) in zip(STAGES, STAGES[1:]) if counts[a]
    ]
    line = f"  {source}: {chain}"
    if cuts:
        lost, label, before = max(cuts)
        if lost:
            line += f"  ({label} rejected {lost:,} of {before:,} {source} triples)"
    return line


def thresholds_line(scores: Folder) -> str | None:
    """The verdict agents' thresholds of the evaluation that wrote ``scores/`` (its run record's
    judge block, ``udfs.runtime.judge_record``), each with where it came from (calibrated,
    command line, configured, fallback) and the calibration file; None without a record."""
    try:
        judge = read_judge(json.loads(scores.read_bytes("_run.json")))
    except (OSError, ValueError):
        return None
    if judge is None:
        return None
    parts = [f"{a} {r.threshold.value:.3g} ({r.threshold.origin.short()})" for a, r in judge.agents.items()]
    where = f"; calibration file {judge.calibration_file}" if judge.calibration_file else ""
    return f"verdict thresholds: {', '.join(parts)}{where}" if parts else None


def demo_summary(out: Folder) -> str:
    """The closing block of ``make demo`` over the output root ``out``."""
    lines = ["", "== demo summary =="]
    report = out / "report"
    if report.exists("index.html"):
        lines.append(f"report:  {file_url(str(report / 'index.html'))}")
    scores = out / "scores"
    if table_rows(scores):
        pages = len({r["page_key"] for r in scores.read(columns=["page_key"]).to_pylist()})
        lines.append(f"triples kept after each agent ({pages} pages):")
        lines += [headline(s, c) for s, c in sorted(funnel(scores).items())]
        said = thresholds_line(scores)
        if said:
            lines.append(said)
    else:
        lines.append("no scores: the evaluation wrote nothing (see its log above)")
    starts, ends, look = [], [], {}
    # every job's run record under the root (Folder.files skips ``_`` files, as Parquet readers do)
    for run in out.ls("**/_run.json"):
        try:
            rec = json.loads((out / run).read_bytes())
        except (OSError, ValueError):
            continue
        if rec.get("started_at") and rec.get("finished_at"):
            starts.append(dt.datetime.fromisoformat(rec["started_at"]))
            ends.append(dt.datetime.fromisoformat(rec["finished_at"]))
        for k, v in attention(rec.get("counters", {})).items():
            look[f"{rec.get('job', '?')}.{k}"] = v
    if look:
        lines.append("to look at: " + ", ".join(f"{k} {_num(v)}" for k, v in look.items()))
    if starts:
        lines.append(
            f"total time: {_duration((max(ends) - min(starts)).total_seconds())} (first job's start to last job's end)"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from udfs.runtime.cli import ArgumentParser

    p = ArgumentParser(
        prog="python -m udfs.runtime.summary", description="The closing summary of a pipeline run over its output root."
    )
    p.add_argument("output", help="the output root the jobs wrote (--output)")
    a = p.parse_args(argv)
    out = Folder.of(a.output)
    if not out.exists():
        print(f"summary: error: {a.output}: no such output root", file=sys.stderr)
        return 2
    print(demo_summary(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
