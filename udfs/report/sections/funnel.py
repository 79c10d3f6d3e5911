"""The page funnel: from the pages given to the pages job to the pages judged, with a row for each
way a page was lost on the way, its count and its share of the pages given.

The unit is an input row of the pages job (``pages/_run.json``'s ``input_rows``: a sample row or
a URL of the list given). Each is rejected by the pages job (a row given twice, a row without a
URL), or selected once with a status (``udfs.corpus.html.STATUSES``): not found, fetch error,
truncated, markup unreadable (``parse_error``), no matching entity (``no_matching_markup``), or
ok. An ok row with an empty text (whitespace only, as ``udfs.evaluation.plan`` reads it) has no
text to judge against; the rows left of one page key (the same page drawn in several strata) are
one page; then the evaluation leaves out pages holding a judged page's HTML under another URL
(``pages_same_html``), pages over its limit (``over_limit``) and fails some (``failed``); the rest
are judged (distinct page keys in scores/). So

    pages given = judged + every loss row

and the last row says whether it holds (the difference, named, when it does not: evaluation
counters summed over several run folders, scores of another pages table).

Also the unreadable markup per generator: the selected rows of pages/ whose HTML was read, per
``generator`` (the pages job names it on an unreadable page too), with the share of them whose
markup could not be read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from udfs.corpus import html as P
from udfs.evaluation.evaluator import page_key
from udfs.report.sections import Part

if TYPE_CHECKING:
    from udfs.report.inputs import Run

BLOCK = "funnel"
PER_RUN = True

# The statuses of a selected row lost before the evaluation, in the funnel's order, with its label.
LOST_STATUSES = (
    (P.NOT_FOUND, "not found", "no capture of the URL in the WARC index"),
    (P.FETCH_ERROR, "fetch error", "the WARC record could not be read"),
    (P.TRUNCATED, "truncated", "the capture holds part of the page ([pages] judge_truncated off)"),
    (P.PARSE_ERROR, "markup unreadable", "parse_error: no JSON-LD block of the page could be read"),
    (P.NO_MATCHING_MARKUP, "no matching entity", "no_matching_markup: no entity of the C-set's types"),
)
# The statuses whose row went through the page's HTML (a generator can be named).
HTML_READ = (P.OK, P.PARSE_ERROR, P.NO_MATCHING_MARKUP, P.TRUNCATED)
NO_GENERATOR = "(none named)"


def _selected_rows(pages) -> list[dict[str, Any]]:
    want = [
        c
        for c in ("page_url", "human_markup", "status", "selected", "text", "text_chars", "generator")
        if c in pages.schema.names
    ]
    return [r for r in pages.to_table(columns=want).to_pylist() if r.get("selected", True) is not False]


def _row(step: str, count: int | None, note: str, kind: str = "lost") -> dict[str, Any]:
    return {"step": step, "count": count, "note": note, "kind": kind, "share": None}


def _judged(run: Run) -> dict[str, Any]:
    """The judged row: distinct pages of the scores, and those judged on a truncated record."""
    scores = run.score_rows
    note = "distinct pages in scores/"
    cut = {k for k, t in zip(scores.get("page_key", []), scores.get("truncated", [])) if t}
    if cut:
        note += (
            f"; {len(cut)} of them judged on a truncated WARC record ([pages] judge_truncated): their text ends early"
        )
    return _row("judged", len(set(scores["page_key"])) if len(scores) else 0, note, "judged")


def funnel(run: Run) -> list[dict[str, Any]]:
    """The funnel's rows (``step``, ``count``, ``share`` of the pages given, ``note``, ``kind``:
    given, lost, kept, judged or check)."""
    pages = run.src.dataset("pages")
    record = run.src.run_record("pages") or {}
    pc = record.get("counters") or {}
    samples = run.src.dataset("samples")
    sampled = (
        f"; samples/ holds {samples.count_rows()} rows"
        if samples is not None
        else "; samples/ not found under the output root"
    )
    if pages is None:
        return [_row("pages given", None, "pages/ not found under the output root" + sampled, "given"), _judged(run)]
    rows = _selected_rows(pages)
    status = {s: sum(1 for r in rows if r.get("status") == s) for s in P.STATUSES}
    given = pc.get("input_rows")
    steps: list[dict[str, Any]] = []
    if given is None:
        given = len(rows)
        steps.append(
            _row(
                "pages given",
                given,
                "selected rows of pages/ (no run record: its rejected rows are not known)",
                "given",
            )
        )
    else:
        steps.append(_row("pages given", given, "input rows of the pages job (its run record)" + sampled, "given"))
        steps.append(
            _row("input row rejected", int(pc.get("rejected_rows") or 0), "rejects/pages/: given twice, no URL")
        )
    for s, label, note in LOST_STATUSES:
        steps.append(_row(label, status[s], note))
    unknown = len(rows) - sum(status.values())
    if unknown:
        steps.append(_row("other status", unknown, "selected rows with a status the report does not know"))
    ok = [r for r in rows if r.get("status") == P.OK]
    steps.append(_row("fetched and read", len(ok), "selected rows with status ok", "kept"))
    with_text = [r for r in ok if (r.get("text") or "").strip()] if "text" in pages.schema.names else ok
    steps.append(
        _row(
            "no text",
            len(ok) - len(with_text),
            "the page's extracted text is empty (evaluate rejects it: rejects/evaluate/no_text.parquet)",
        )
    )
    keys = {page_key(r["page_url"], r.get("human_markup")) for r in with_text}
    steps.append(
        _row(
            "deduplicated",
            len(with_text) - len(keys),
            "one page (URL and human markup) drawn in several strata or features is judged once",
        )
    )
    steps.append(
        _row(
            "same HTML under another URL",
            run.counter("pages_same_html"),
            "evaluate's pages_same_html: the HTML and markup of a page judged, under another URL",
        )
    )
    limit = run.record.get("config", {}).get("limit")
    steps.append(_row("over the limit", run.counter("over_limit"), f"left out by the evaluation's --limit ({limit})"))
    steps.append(_row("failed", run.counter("failed"), "the evaluation failed on the page (rejects/evaluate/failed)"))
    steps.append(_judged(run))
    judged = steps[-1]["count"]
    lost = sum(s["count"] or 0 for s in steps if s["kind"] == "lost")
    gap = given - judged - lost
    steps.append(
        _row(
            "accounted for" if gap == 0 else "not accounted for",
            gap,
            "pages given = judged + every loss row"
            if gap == 0
            else f"pages given - judged - losses = {gap}: the evaluation's counters of several run folders "
            "(a resumed run), or scores of another pages table, do not match pages/",
            "check",
        )
    )
    for s in steps:
        if s["count"] is not None and given:
            s["share"] = s["count"] / given
    return steps


def unreadable_by_generator(run: Run) -> list[dict[str, Any]]:
    """Per generator (pages/'s ``generator``; :data:`NO_GENERATOR` when none was named), the
    selected rows whose HTML was read and how many of them have markup that could not be read
    (``parse_error``), most pages first."""
    pages = run.src.dataset("pages")
    if pages is None or "generator" not in pages.schema.names:
        return []
    per: dict[str, list[int]] = {}
    for r in _selected_rows(pages):
        if r.get("status") not in HTML_READ:
            continue
        n = per.setdefault(r.get("generator") or NO_GENERATOR, [0, 0])
        n[0] += 1
        n[1] += r.get("status") == P.PARSE_ERROR
    return [
        {"generator": g, "pages": n, "unreadable": u, "share": u / n}
        for g, (n, u) in sorted(per.items(), key=lambda kv: (-kv[1][0], kv[0]))
    ]


def data(run: Run) -> Part:
    import pandas as pd

    steps = funnel(run)
    by_gen = unreadable_by_generator(run)
    frames = {
        "funnel": pd.DataFrame(steps, columns=["step", "count", "share", "note", "kind"]),
        "unreadable_by_generator": pd.DataFrame(by_gen, columns=["generator", "pages", "unreadable", "share"]),
    }
    return Part({"steps": steps, "unreadable": by_gen}, frames)
