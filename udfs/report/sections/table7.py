"""Table 7: per source, the triples kept after each agent (counts and shares), the rejection rate,
MeMR and key F1 beside the paper's figures; the triples' counting it uses (:data:`COUNTINGS`), the
line on corrected triples (GraphCorrect), the plot of the table and its console text. The cells'
helpers serve Table 8 too."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from udfs.evaluation.evaluator import HUMAN
from udfs.report import paper
from udfs.report.counting import counts_sql, frame, triple_counting  # noqa: F401 - table8 and build read them here
from udfs.report.figures import data_uri, png_bytes, pyplot
from udfs.report.sections import Part, graph_correct
from udfs.report.values import cell, num

if TYPE_CHECKING:
    from udfs.report.inputs import Run

BLOCK = "table7"
PER_RUN = True

STAGES = ("triples_in", "after_validity", "after_factuality", "after_compliance")
STAGE_TITLES = ("triples in", "after validity", "after factuality", "after compliance")
MEMR_FOOTNOTES = {
    "human": "MeMR and key F1 compare a model's markup with the human markup: the human row has none "
    "(the human side of each comparison is MeMR h on the model's row).",
    "undefined": "Undefined: on no page of this row did either side keep a triple after the stages "
    "(MeMR divides by the merged markup's size).",
}
COUNTINGS = {
    "rows": "Triples counted as the rows of triples/: one per (subject, property, value, entity type), "
    "links between nodes and repeated strings included (the scores' n_* columns). The paper counts "
    "distinct leaf (property, value, entity type) strings: a run in validity mode paper reports "
    "that counting, and these tables then use it.",
    "paper": "Triples counted the paper's way (validity mode paper; the scores' n_*_paper columns): a leaf "
    "(property, value) with its entity type, identical strings once, links between nodes, @type "
    "and @id not counted; a triple is kept after a stage while one of its occurrences is.",
}
TABLE7_HEADER = [
    "source",
    "pages",
    "triples in",
    "paper",
    "after validity",
    "paper",
    "after factuality",
    "paper",
    "after compliance",
    "paper",
    "rejected",
    "paper",
    "MeMR h / l",
    "paper",
    "key F1",
]


def kept(row: dict[str, Any], stage: str, lines: bool = False) -> str | list[str]:
    n0 = num(row["triples_in"]) or 0
    n = int(num(row[stage]) or 0)
    if not n0:
        return f"{n:,}"
    return [f"{n:,}", f"{n / n0:.1%}"] if lines else f"{n:,} ({n / n0:.1%})"


def _paper(source: str, value) -> dict[str, Any]:
    """The paper's Table 7 figure for ``source`` (the human row for the human markup; GPT-3.5 and
    GPT-4 for a model of ours, which is set beside both): ``value(name)`` formats one."""
    if source == HUMAN:
        return cell(value("human"), "paper")
    return cell([f"{name.removeprefix('GPT-')}: {value(name)}" for name in ("GPT-3.5", "GPT-4")], "paper")


def _memr_pair(row: dict[str, Any]) -> dict[str, Any]:
    """MeMR of both sides in one cell: ``h <human side> / l <model side>`` and on how many pages."""
    if row["source"] == HUMAN:
        return cell("n/a ¹", "why")
    h, lo = num(row["memr_h"]), num(row["memr_l"])
    if h is None or lo is None:
        return cell("undefined ²", "why")
    return cell([f"{h:.3f} / {lo:.3f}", f"{int(row['memr_pages'])} of {int(row['pages'])} pages"])


def memr(row: dict[str, Any], col: str) -> dict[str, Any]:
    if row["source"] == HUMAN:
        return cell("n/a ¹", "why")
    v = num(row[col])
    if v is None:
        return cell("undefined ²", "why")
    return cell(f"{v:.3f}" if col == "key_f1" else f"{v:.3f} ({int(row['memr_pages'])}/{int(row['pages'])} p.)")


def rejected(row: dict[str, Any]) -> dict[str, Any]:
    n0 = num(row["triples_in"]) or 0
    after = num(row["after_compliance"]) or 0
    return cell(f"{1 - after / n0:.1%}") if n0 else cell("no triples in", "why")


def table7_rows(df) -> list[list[dict[str, Any]]]:
    """Table 7 as cells: per source, ours (counts, the share of the triples in kept after each
    stage, the rejection rate, MeMR where defined, else why not) beside the paper's figures."""
    out = []
    for row in df.to_dict("records"):
        src = row["source"]
        t = paper.TABLE7
        cells = [
            cell(src, ""),
            cell(str(int(row["pages"]))),
            cell(f"{int(num(row['triples_in']) or 0):,}"),
            _paper(src, lambda n: f"{t[n][0]:,}"),
        ]
        for i, stage in enumerate(STAGES[1:], 1):
            cells += [cell(kept(row, stage, lines=True)), _paper(src, lambda n, i=i: f"{t[n][i] / t[n][0]:.1%}")]
        cells += [
            rejected(row),
            _paper(src, lambda n: f"{paper.REJECTION[n]:.1%}"),
            _memr_pair(row),
            cell("n/a ¹", "paper") if src == HUMAN else _paper(src, lambda n: "{:.3f}/{:.3f}".format(*paper.MEMR[n])),
            memr(row, "key_f1"),
        ]
        out.append(cells)
    return out


def footnotes(*tables: list[list[dict[str, Any]]]) -> list[str]:
    """The footnotes the cells of ``tables`` refer to, numbered as the cells mark them."""
    marks = {line for t in tables for row in t for c in row for line in c["lines"]}
    out = []
    if any(m.endswith("¹") for m in marks):
        out.append("¹ " + MEMR_FOOTNOTES["human"])
    if any(m.endswith("²") for m in marks):
        out.append("² " + MEMR_FOOTNOTES["undefined"])
    return out


def table7_text(t7, counting: str = "rows") -> str:
    """Table 7 for the console: counts, rejection rate, MeMR where defined ("-" and a footnote
    otherwise), no NaN, and which counting of triples it shows."""
    lines = [
        f"{'source':<24}{'pages':>6}{'in':>8}{'valid':>8}{'factual':>9}{'compliant':>10}{'rejected':>10}"
        f"{'MeMR h':>8}{'MeMR l':>8}"
    ]
    for row in t7.to_dict("records"):
        n0 = num(row["triples_in"]) or 0
        after = num(row["after_compliance"]) or 0
        h, lo = num(row["memr_h"]), num(row["memr_l"])
        lines.append(
            f"{str(row['source'])[:23]:<24}{int(row['pages']):>6}"
            + "".join(f"{int(num(row[s]) or 0):>{w}}" for s, w in zip(STAGES, (8, 8, 9, 10)))
            + (f"{1 - after / n0:>10.1%}" if n0 else f"{'-':>10}")
            + (f"{h:>8.3f}" if h is not None else f"{'-':>8}")
            + (f"{lo:>8.3f}" if lo is not None else f"{'-':>8}")
        )
    lines.append("MeMR -: the human row (MeMR compares a model with the human markup) or no page where it is defined")
    lines.append(COUNTINGS[counting])
    return "\n".join(lines)


def stage_plot(t7) -> bytes:
    """Triples kept after each agent, per source (Table 7 as lines), as PNG bytes."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    for row in t7.to_dict("records"):
        ax.plot(range(4), [num(row[s]) or 0 for s in STAGES], marker="o", label=row["source"])
    ax.set_xticks(range(4), list(STAGE_TITLES))
    ax.set_ylabel("triples kept")
    ax.set_title("Triples kept after each agent (Table 7)")
    if len(t7):
        ax.legend()
    fig.tight_layout()
    return png_bytes(fig)


def data(run: Run) -> Part:
    """Table 7 of ``run``, its plot (also a file beside the page), its console text (``text``)."""
    t7 = run.table7
    rows = table7_rows(t7)
    png = stage_plot(t7)
    name = f"triples_per_stage-{run.label}.png" if run.label else "triples_per_stage.png"
    ctx = {
        "header": TABLE7_HEADER,
        "counting": COUNTINGS[run.counting],
        "rows": rows,
        "footnotes": footnotes(rows),
        "paper_citation": paper.CITATION,
        "corrected_line": graph_correct.table7_line(run),
        "stage_plot": data_uri(png),
        "text": table7_text(t7, run.counting),
    }
    return Part(ctx, {"table7": t7}, files={name: png})
