"""The page funnel: sampled -> fetched -> with text -> deduplicated -> evaluated, each step with
its count or the reason it has none (its table is missing). The first steps are the output root's
tables; the last counts the pages of one settings hash's scores."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from udfs.evaluation.evaluator import page_key
from udfs.report.sections import Part

if TYPE_CHECKING:
    from udfs.report.inputs import Run

BLOCK = "funnel"
PER_RUN = True


def _page_steps(pages) -> list[dict[str, Any]]:
    """fetched, with text and deduplicated, from pages/ (None: the table is missing)."""
    if pages is None:
        return [
            {"step": step, "count": None, "note": "pages/ not found under the output root"}
            for step in ("fetched", "with text", "deduplicated")
        ]
    want = [
        c
        for c in ("page_url", "human_markup", "status", "selected", "text_chars", "html_sha256")
        if c in pages.schema.names
    ]
    rows = [r for r in pages.to_table(columns=want).to_pylist() if r.get("selected", True) is not False]
    ok = [r for r in rows if r.get("status") == "ok"]
    text = [r for r in ok if (r.get("text_chars") or 0) > 0]
    # one HTML with one human markup under several URLs is one page (udfs.evaluation.plan)
    distinct = {
        ("html", r["html_sha256"], r.get("human_markup") or "")
        if r.get("html_sha256")
        else page_key(r["page_url"], r.get("human_markup"))
        for r in text
    }
    return [
        {"step": "fetched", "count": len(ok), "note": f"selected rows of pages/ with status ok, of {len(rows)}"},
        {"step": "with text", "count": len(text), "note": "fetched pages whose extracted text is not empty"},
        {
            "step": "deduplicated",
            "count": len(distinct),
            "note": "distinct (page URL, human markup): a page sampled in several strata is evaluated once, "
            "and so is one HTML with one human markup under several URLs",
        },
    ]


def funnel(run: Run) -> list[dict[str, Any]]:
    samples = run.src.dataset("samples")
    steps: list[dict[str, Any]] = [
        {
            "step": "sampled",
            "count": samples.count_rows() if samples is not None else None,
            "note": "rows of samples/ (one per feature, stratum and draw)"
            if samples is not None
            else "samples/ not found under the output root",
        },
        *_page_steps(run.src.dataset("pages")),
    ]
    scores = run.score_rows
    evaluated = len(set(scores["page_key"])) if len(scores) else 0
    note = "distinct pages in scores/"
    if over := run.counter("over_limit"):
        note += f"; {over} more left out by the evaluation's limit ({run.record.get('config', {}).get('limit')})"
    if same := run.counter("pages_same_html"):
        note += f"; {same} more hold the HTML and markup of a page evaluated, under another URL (not counted again)"
    cut = {k for k, t in zip(scores.get("page_key", []), scores.get("truncated", [])) if t}
    if cut:
        note += (
            f"; {len(cut)} of them judged on a truncated WARC record ([pages] judge_truncated): their text ends early"
        )
    if failed := run.counter("failed"):
        note += f"; {failed} failed"
    steps.append({"step": "evaluated", "count": evaluated, "note": note})
    return steps


def data(run: Run) -> Part:
    return Part({"steps": funnel(run)})
