"""The report of one pipeline run: ``scores/`` (+ ``triples/``, ``pages/``, ``samples/`` and the
run records under the same output root, each used when present) to the paper's Tables 7 and 8,
the page funnel, Fig. 10, the agents' rejections and score distributions, the agents' measured
accuracy, and one self-contained HTML page.

The scores are one run's: each run folder of the scores is read with its record, and scores of
more than one settings hash are refused (``udfs.report.runs``); with ``compare`` each settings
hash is reported on its own (the run table: a column per hash; every other table: one per hash,
under its label), never pooled.

The page is its sections (:data:`SECTIONS`, one module each under ``udfs.report.sections``, in
the page's order), each rendered by its template block ``templates/sections/<BLOCK>.html.j2``
from what its ``data(run)`` returns.

Contract of the page (``render``): one file, rendered by the Jinja2 template
``templates/report.html.j2`` with autoescape on (page text and markup values are untrusted);
every image is embedded as a ``data:`` URI (PNG from matplotlib); no script, font or style sheet is
fetched. A value that is not defined is never shown as ``NaN``: the cell says why it is missing.
A table or run record the run did not write is said in the page, not an error; a scores folder
without its run record is an error (``udfs.report.runs.RunsError``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from udfs.report.inputs import Options, Run, Sources
from udfs.report.runs import one_settings, read_runs
from udfs.report.sections import (
    Part,
    benchmark,
    by_generator,
    by_type,
    corrected_rates,
    failures,
    fig10,
    funnel,
    graph_correct,
    paper_pages,
    rejections,
    repeats,
    run_table,
    score_plot,
    table7,
    table8,
)
from udfs.report.sections.repeats import repeat_rates, repeats_table
from udfs.report.sections.table7 import COUNTINGS, table7_text, triple_counting
from udfs.runtime.io import Folder

# the names other rooms' tests read from here (the report's entry point)
__all__ = ["COUNTINGS", "build", "render", "repeat_rates", "repeats_table", "table7_text", "tables", "triple_counting"]

SECTIONS = (
    run_table,
    funnel,
    table7,
    repeats,
    graph_correct,
    corrected_rates,
    by_generator,
    by_type,
    table8,
    fig10,
    rejections,
    score_plot,
    benchmark,
    paper_pages,
    failures,
)
TITLE = "LLM4Schema.org evaluation report"


@dataclass
class Report:
    """What the page shows (``sections``: per section its block and parts), the tables as CSV
    (``frames``), the files beside the page (the Table 7 plot) and Table 7 for the console."""

    sections: list[dict[str, Any]] = field(default_factory=list)
    frames: dict[str, Any] = field(default_factory=dict)  # name -> pandas DataFrame (CSV files)
    files: dict[str, bytes] = field(default_factory=dict)
    table7_text: str = ""
    compare: bool = False


def tables(con, counting: str = "rows") -> dict[str, Any]:
    """Table 7, Table 8 and the pages without a score, as DataFrames from the DuckDB views
    ``scores`` and ``strata`` (page_key, feature, stratum); triples counted as ``counting`` says
    (:data:`COUNTINGS`)."""
    return {
        "table7": table7.frame(con, counting),
        "table8": table8.frame(con, counting),
        "failures": failures.frame(con),
    }


def _frames(parts: list[Part]) -> dict[str, Any]:
    """The CSV tables of a section's parts: one part's as they are; several parts' (settings
    compared) concatenated, each row with its settings hash in a first column ``settings``."""
    import pandas as pd

    if len(parts) == 1:
        return parts[0].frames
    out: dict[str, Any] = {}
    for name in dict.fromkeys(n for p in parts for n in p.frames):
        out[name] = pd.concat(
            [
                p.frames[name].assign(settings=p.label)[["settings", *p.frames[name].columns]]
                for p in parts
                if name in p.frames
            ],
            ignore_index=True,
        )
    return out


def build(
    scores: list[str],
    root: Folder,
    pages: Folder | None = None,
    paper_source: str = "",
    *,
    group_width: float,
    compare: bool = False,
) -> Report:
    """Everything the page shows, from the ``scores`` table and what ``root`` holds; with
    ``paper_source`` (the paper's folder the pages were imported from: a bundle or a checkout), the
    "paper's pages" section (``udfs.report.paper_pages``). ``group_width``: the widest interval a
    group of the per-generator and per-type tables may have to be shown on its own ([report]
    group_interval_width). ``compare``: scores of several settings hashes are reported side by side
    (else they are refused). Raises RunsError for scores the report cannot attribute to a run."""
    settings = read_runs(scores)
    if not compare:
        one_settings(settings)
    src = Sources(root=root, pages=pages)
    opts = Options(paper_source=paper_source, group_width=group_width, compare=compare)
    strata, strata_note = src.strata()
    triples = src.triples()
    runs = [Run(s, src, opts, strata, strata_note, triples, only=len(settings) == 1) for s in settings]
    report = Report(compare=compare)
    for section in SECTIONS:
        parts = [section.data(run) for run in (runs if section.PER_RUN else runs[:1])]
        for part, run in zip(parts, runs):
            part.label = run.label if section.PER_RUN else ""
            report.files.update(part.files)
        if len(parts) > 1 and hasattr(section, "combine"):
            parts = [section.combine(parts)]
        report.frames.update(_frames(parts))
        report.sections.append({"block": section.BLOCK, "parts": parts})
    texts = [p.ctx["text"] for p in report.sections[SECTIONS.index(table7)]["parts"]]
    labels = [run.label for run in runs]
    report.table7_text = "\n\n".join(f"settings {lb}:\n{t}" if lb else t for lb, t in zip(labels, texts))
    return report


def render(report: Report) -> str:
    """The page: the Jinja2 template over the report's sections, autoescaped."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("udfs.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,  # a block's last line is the blank line that parts it from the next
    )
    return env.get_template("report.html.j2").render(title=TITLE, sections=report.sections, compare=report.compare)


def write(report: Report, out: Folder) -> Folder:
    """``out`` gets index.html (self-contained), one CSV per table and the Table 7 plot
    (``triples_per_stage.png``; settings compared: one per settings hash); returns the page's location."""
    for name, df in report.frames.items():
        out.write_text(f"{name}.csv", df.to_csv(index=False))
    for name, data in report.files.items():
        out.write_bytes(name, data)
    out.write_text("index.html", render(report))
    return out / "index.html"
