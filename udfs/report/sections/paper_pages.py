"""The paper's pages (``--paper``): a run over the pages imported from the paper's folder set beside
the paper's stored verdicts, counts and MeMR (``udfs.report.paper_pages``), or why there is none."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from udfs.report.sections import Part

if TYPE_CHECKING:
    from udfs.report.inputs import Run

BLOCK = "paper_pages"
PER_RUN = True


def paper_pages_section(run: Run) -> dict[str, Any]:
    """The tables of the "paper's pages" section and their frames, or why there are none."""
    import pandas as pd

    from udfs.corpus.pset import PsetError, open_pset
    from udfs.report import paper_pages

    pages_ds = run.src.dataset("pages")
    need = ["page_url", "page_id", "judge_text", "paper_text", "paper_commit"]
    if pages_ds is None or not set(need) <= set(pages_ds.schema.names):
        return {"why": "pages/ is not a table of jobs/import_pset.py (no page_id and paper_text)", "frames": {}}
    pages = pages_ds.to_table(columns=need).to_pylist()
    commits = {p["paper_commit"] for p in pages}
    if len(commits) != 1:
        return {"why": f"pages/ mixes commits of the paper's folder: {sorted(commits)}", "frames": {}}
    cols = ["page_url", "source", "status", "n_triples", "n_valid", "n_factual", "n_compliant"]
    scores = [r for r in run.ds.to_table(columns=cols).to_pylist() if r["status"] == "ok"]
    try:
        tables, frames = paper_pages.section(
            open_pset(run.opts.paper_source),
            pages,
            scores,
            run.triples,
            commits.pop() or None,
            group_width=run.opts.group_width,
        )
    except PsetError as exc:
        return {"why": f"the paper's folder cannot be read: {exc}", "frames": {}}
    frames = {k: pd.DataFrame(v, columns=paper_pages.FRAME_COLUMNS.get(k)) for k, v in frames.items()}
    return {"why": None, "tables": tables, "frames": frames}


def data(run: Run) -> Part:
    """The section when the report was given the paper's folder; ``section`` None otherwise."""
    if not run.opts.paper_source:
        return Part({"section": None})
    section = paper_pages_section(run)
    return Part({"section": section}, section.pop("frames"))
