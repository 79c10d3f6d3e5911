"""Factuality and compliance scores per source as histograms, the applied thresholds drawn."""

from __future__ import annotations

from typing import TYPE_CHECKING

from udfs.evaluation.evaluator import HUMAN
from udfs.report.figures import png, pyplot
from udfs.report.sections import Part
from udfs.report.values import num
from udfs.runtime.judge_record import read_judge

if TYPE_CHECKING:
    from udfs.report.inputs import Run

BLOCK = "score_plot"
PER_RUN = True


def score_distribution(triples, thresholds: dict[str, float]) -> str | None:
    """Factuality and compliance scores per source as histograms, the thresholds drawn; None when
    no claim has a score (no triples/, or neither stage ran)."""
    if not any(num(r.get(c)) is not None for r in triples for c in ("factual_score", "compliant_score")):
        return None
    plt = pyplot()
    sources = sorted({r["source"] for r in triples}, key=lambda s: (s != HUMAN, s))
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, (col, stage) in zip(axes, (("factual_score", "factuality"), ("compliant_score", "compliance"))):
        for s in sources:
            vals = [v for r in triples if r["source"] == s and (v := num(r.get(col))) is not None]
            if vals:
                ax.hist(vals, bins=[i / 20 for i in range(21)], alpha=0.55, label=f"{s} ({len(vals)})")
        t = thresholds.get(stage)
        if t is not None:
            ax.axvline(t, color="black", linestyle="--", linewidth=1)
            ax.annotate(
                f"threshold {t:g}",
                (t, 0.5),
                xycoords=("data", "axes fraction"),
                xytext=(4, 0),
                textcoords="offset points",
                fontsize=8,
                va="center",
                rotation=90,
            )
        ax.set_xlim(0, 1)
        ax.set_xlabel(f"{stage} score")
        ax.set_ylabel("claims")
        ax.set_title(f"{stage}: score per judged claim")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return png(fig)


def data(run: Run) -> Part:
    judge = read_judge(run.record)
    thresholds = {a: r.threshold.value for a, r in judge.agents.items()} if judge else {}
    return Part({"plot": score_distribution(run.triples, thresholds)})
