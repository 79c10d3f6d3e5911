"""Table 8: per feature, stratum and source, the triples kept after each agent, the rejection rate
and MeMR, beside the paper's finding for the stratum; and how much the strata overlap (a page in two
strata is a row in both)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from udfs.evaluation.evaluator import HUMAN
from udfs.report import paper
from udfs.report.sections import Part
from udfs.report.sections.table7 import STAGES, counts_sql, footnotes, kept, memr, rejected
from udfs.report.values import cell, num

if TYPE_CHECKING:
    from udfs.report.inputs import Run

BLOCK = "table8"
PER_RUN = True

TABLE8_HEADER = [
    "feature",
    "stratum",
    "source",
    "pages",
    "triples in",
    "after validity",
    "after factuality",
    "after compliance",
    "rejected",
    "MeMR h",
    "MeMR l",
    "paper's finding",
]


def frame(con, counting: str = "rows"):
    """Table 8 as a DataFrame from the DuckDB views ``scores`` and ``strata`` (page_key, feature,
    stratum): per feature, stratum (low, medium, high) and source, over the pages with status ok."""
    return con.execute(f"""
        SELECT st.feature, st.stratum, s.source, {counts_sql(counting)}
        FROM scores s JOIN strata st USING (page_key) WHERE s.status = 'ok'
        GROUP BY st.feature, st.stratum, s.source
        ORDER BY st.feature, CASE st.stratum WHEN 'low' THEN 0 WHEN 'medium' THEN 1 WHEN 'high' THEN 2 ELSE 3 END,
                 s.source = '{HUMAN}' DESC, s.source""").df()


def table8_rows(df) -> list[list[dict[str, Any]]]:
    """Table 8 as cells: per feature, stratum and source, ours, and the paper's finding for the
    stratum (the article's per-stratum figures are not in the summary the project keeps)."""
    out = []
    for row in df.to_dict("records"):
        cells = [
            cell(row["feature"], ""),
            cell(row["stratum"], ""),
            cell(row["source"], ""),
            cell(str(int(row["pages"]))),
            cell(f"{int(num(row['triples_in']) or 0):,}"),
        ]
        cells += [cell(kept(row, s)) for s in STAGES[1:]]
        cells += [
            rejected(row),
            memr(row, "memr_h"),
            memr(row, "memr_l"),
            cell(paper.TABLE8_FINDING.get(row["stratum"], "none stated"), "paper"),
        ]
        out.append(cells)
    return out


def data(run: Run) -> Part:
    t8 = frame(run.con, run.counting)
    rows = table8_rows(t8)
    # strata overlap among the evaluated pages: a page in two strata is a row in both
    strata = run.strata
    in_strata = strata[strata["page_key"].isin(set(run.score_rows["page_key"]))]
    per_key = in_strata.groupby("page_key").size()
    ctx = {
        "header": TABLE8_HEADER,
        "rows": rows,
        "footnotes": footnotes(rows),
        "note": run.strata_note,
        "overlap": int((per_key > 1).sum()) if len(in_strata) else None,
        "strata_pages": int(in_strata["page_key"].nunique()),
        "strata_rows": len(in_strata),
    }
    return Part(ctx, {"table8": t8})
