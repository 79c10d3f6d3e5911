"""The evaluate job's account of a run (``jobs/evaluate.py``; the base class reconciles and tells
it): every input row planned, left out with its reason, or evaluated or failed, and the stored
markups' rows where a table of them was judged."""

from __future__ import annotations

from collections import Counter
from typing import Any

from udfs.runtime.closing import Outcome
from udfs.runtime.io import Folder

# Where each input row went (udfs.evaluation.plan): the pages planned are evaluated or failed.
LEFT_OUT = (
    "not_ok_or_not_selected",
    "no_text",
    "ambiguous_page_id_rows",
    "conflicting_text_rows",
    "duplicate_rows",
    "pages_same_html",
    "over_limit",
    "already_scored",
    "no_stored_markup",
)


def evaluation_outcome(counters: dict[str, Any], record: dict, rejects: Folder) -> Outcome:
    """The Outcome of an evaluate run from its counters (``udfs.evaluation.run.evaluate_pages``),
    its run record's data and its rejects folder (``failed.parquet``: this run's failed pages
    with their reasons)."""
    planned = counters["evaluated"] + counters["failed"]
    checks = {
        "input rows = rows left out + pages evaluated + pages failed": counters["input_rows"]
        == sum(counters.get(k, 0) for k in LEFT_OUT) + planned
    }
    if "markups" in record and "reconciles" in record["markups"]:
        checks["every stored markup row is judged, rejected, over the limit, already scored or failed"] = record[
            "markups"
        ]["reconciles"]
    failures: Counter = Counter()
    if counters["failed"] and rejects.exists("failed.parquet"):
        failures.update(str(r) for r in rejects.read("failed.parquet", columns=["reason"]).column("reason").to_pylist())
    lines = []
    if same := counters.get("pages_same_html"):
        lines.append(
            f"pages_same_html: {same} pages hold the same HTML and human markup as a page judged in this run, "
            "under another URL: judged once, not counted again (rejects/evaluate/same_html.parquet names the "
            "judged page of each, same_page_as)"
        )
    return Outcome(
        counters={},  # evaluate_pages counted them into the record
        lines=lines,
        checks=checks,
        units="pages",
        given=planned,
        done=counters["evaluated"],
        failures=dict(failures),
    )
