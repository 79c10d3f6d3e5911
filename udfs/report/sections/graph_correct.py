"""GraphCorrect (``evaluate --correct``): per source the triples corrected beside Table 7's
after-factuality count that holds them, how many of them are kept, a few corrected triples, and
the line under Table 7 that says Table 7 counts them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from udfs.evaluation.evaluator import HUMAN
from udfs.report.sections import Part
from udfs.report.values import claim

if TYPE_CHECKING:
    from udfs.report.inputs import Run

BLOCK = "graph_correct"
PER_RUN = True
CORRECTION_EXAMPLES = 5
ROW_COLUMNS = ["source", "pages", "corrected", "after_factuality", "corrected_kept"]
EXAMPLE_COLUMNS = ["source", "page_url", "claim", "value", "corrected_value"]


def _rows(con, triples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per source: its pages with status ok, the triples corrected on them (scores' ``n_corrected``;
    None in scores written before that column), Table 7's after-factuality count and the corrected
    triples kept after the last stage (triples/' ``kept``; None without triples/)."""
    # scores written before n_corrected was a column cannot say
    known = "n_corrected" in {r[0] for r in con.execute("DESCRIBE scores").fetchall()}
    rows = []
    for source, pages, corrected, factual in con.execute(f"""
        SELECT source, count(*), {"sum(n_corrected)::BIGINT" if known else "NULL::BIGINT"}, sum(n_factual)::BIGINT
        FROM scores
        WHERE status = 'ok' GROUP BY source ORDER BY source = '{HUMAN}' DESC, source""").fetchall():
        fixed = [r for r in triples if r["source"] == source and r.get("corrected")]
        rows.append(
            {
                "source": source,
                "pages": int(pages),
                "corrected": None if corrected is None else int(corrected),
                "after_factuality": None if factual is None else int(factual),
                "corrected_kept": sum(r.get("kept") is True for r in fixed) if triples else None,
            }
        )
    return rows


def _examples(triples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Up to :data:`CORRECTION_EXAMPLES` corrected triples (claim, value, corrected value), taken in
    turn from each source (human first), each source's in page and claim order."""
    by_source: dict[str, list[dict[str, Any]]] = {}
    for r in sorted(
        (r for r in triples if r.get("corrected")),
        key=lambda r: (r["source"] != HUMAN, r["source"], r.get("page_url") or "", claim(r)),
    ):
        by_source.setdefault(r["source"], []).append(r)
    examples: list[dict[str, Any]] = []
    queues = list(by_source.values())
    while queues and len(examples) < CORRECTION_EXAMPLES:
        for q in list(queues):
            if len(examples) == CORRECTION_EXAMPLES:
                break
            r = q.pop(0)
            examples.append(
                {
                    "source": r["source"],
                    "page_url": r.get("page_url"),
                    "claim": claim(r),
                    "value": r.get("value"),
                    "corrected_value": r.get("corrected_value"),
                }
            )
            if not q:
                queues.remove(q)
    return examples


def _line(ran: bool | None, rows: list[dict[str, Any]], counting: str) -> str:
    counts = ", ".join(
        f"{r['source']} {r['corrected'] if r['corrected'] is not None else 'not recorded'}" for r in rows
    )
    if ran is False:
        return "This run did not correct (evaluate without --correct): no triple of Table 7 is a corrected one."
    line = (
        "Table 7 counts corrected triples (GraphCorrect, evaluate --correct): a claim judged non-factual whose "
        "value the text states passes factuality with that value re-verified, so it is kept after factuality, "
        f"and after compliance when its corrected value complies. Corrected triples per source: {counts}."
    )
    if counting == "paper":
        line += " They are counted as rows of triples/, not the paper's way."
    return line


def graph_correct(con, record: dict[str, Any] | None, triples: list[dict[str, Any]], counting: str) -> dict[str, Any]:
    """The section: whether the run corrected (the record's ``evaluation.correction``; None: not
    recorded), per source the triples corrected (:func:`_rows`; a corrected claim passes
    factuality with its re-verified value, ``udfs.evaluation.evaluator``, so Table 7's
    after-factuality count holds it), the line that says so under Table 7, and the examples."""
    ran = ((record or {}).get("evaluation") or {}).get("correction")
    rows = _rows(con, triples)
    return {"ran": ran, "rows": rows, "examples": _examples(triples), "table7_line": _line(ran, rows, counting)}


def table7_line(run: Run) -> str:
    """The line under Table 7 of ``run`` on its corrected triples."""
    ran = ((run.record or {}).get("evaluation") or {}).get("correction")
    return _line(ran, _rows(run.con, run.triples), run.counting)


def data(run: Run) -> Part:
    import pandas as pd

    gc = graph_correct(run.con, run.record, run.triples, run.counting)
    frames = {
        "graph_correct": pd.DataFrame(gc["rows"], columns=ROW_COLUMNS),
        "graph_correct_examples": pd.DataFrame(gc["examples"], columns=EXAMPLE_COLUMNS),
    }
    return Part({**gc, "triples_note": run.triples_note}, frames)
