"""Repeated runs (``evaluate --repeats``): Table 7's rejection rates over the repeats of each
source, as the mean, standard deviation and range, and their plot."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from udfs.evaluation.evaluator import HUMAN, source_repeat
from udfs.report.figures import data_uri, png_bytes, pyplot
from udfs.report.sections import Part
from udfs.report.values import num

if TYPE_CHECKING:
    from udfs.report.inputs import Run

BLOCK = "repeats"
PER_RUN = True

# Table 7's rates over the repeats of a run: the share of a stage's input it rejected, and overall
REPEAT_RATES = (
    ("validity", "triples_in", "after_validity"),
    ("factuality", "after_validity", "after_factuality"),
    ("compliance", "after_factuality", "after_compliance"),
    ("overall", "triples_in", "after_compliance"),
)


def repeat_rates(t7) -> dict[str, dict[str, list[float | None]]]:
    """Per source of a run with repeats (names ``source#r``, ``udfs.evaluation.evaluator.
    source_repeat``), per rate of :data:`REPEAT_RATES`, the rate of each repeat in repeat order
    (None where the stage had no input); {} for a run without repeats."""
    by: dict[str, dict[int, dict[str, Any]]] = {}
    for row in t7.to_dict("records"):
        base, r = source_repeat(row["source"])
        if r is not None:
            by.setdefault(base, {})[r] = row
    out: dict[str, dict[str, list[float | None]]] = {}
    for base, reps in by.items():
        rows = [reps[r] for r in sorted(reps)]
        out[base] = {
            name: [(1 - row[b] / row[a]) if num(row[a]) else None for row in rows] for name, a, b in REPEAT_RATES
        }
    return out


def repeats_table(rates: dict[str, dict[str, list[float | None]]]) -> list[dict[str, Any]]:
    """Table 7's rejection rates per source as the mean over its repeats, the sample standard
    deviation and the range (min to max), with the repeats counted; a rate no repeat could have
    (no input at that stage) says so."""
    out = []
    for base in sorted(rates, key=lambda b: (b != HUMAN, b)):
        for name, values in rates[base].items():
            xs = [x for x in values if x is not None]
            row = {"source": base, "rate": name, "repeats": len(values), "with_input": len(xs)}
            if xs:
                mean = sum(xs) / len(xs)
                sd = (sum((x - mean) ** 2 for x in xs) / (len(xs) - 1)) ** 0.5 if len(xs) > 1 else None
                row.update(
                    mean=f"{mean:.1%}",
                    sd="–" if sd is None else f"{sd:.1%}",
                    range=f"{min(xs):.1%} – {max(xs):.1%}",
                    values=", ".join(f"{x:.1%}" for x in xs),
                )
            else:
                row.update(mean="no input", sd="–", range="–", values="–")
            out.append(row)
    return out


def repeats_plot(rates: dict[str, dict[str, list[float | None]]]) -> bytes:
    """Each source's rejection rates per repeat (dots) beside their mean (a bar), per rate."""
    plt = pyplot()
    names = [n for n, _, _ in REPEAT_RATES]
    bases = sorted(rates, key=lambda b: (b != HUMAN, b))
    fig, ax = plt.subplots(figsize=(7, 3.6))
    width = 0.8 / max(1, len(bases))
    for k, base in enumerate(bases):
        for i, name in enumerate(names):
            xs = [x for x in rates[base][name] if x is not None]
            if not xs:
                continue
            at = i + (k - (len(bases) - 1) / 2) * width
            ax.bar(at, sum(xs) / len(xs), width * 0.9, color=f"C{k}", alpha=0.35, label=base if i == 0 else None)
            ax.plot([at] * len(xs), xs, "o", color=f"C{k}", markersize=4)
    ax.set_xticks(range(len(names)), names)
    ax.set_ylabel("rejected (share of the stage's input)")
    ax.set_title("Rejection rates per repeat (dots) and their mean (bars)")
    if bases:
        ax.legend()
    fig.tight_layout()
    return png_bytes(fig)


def data(run: Run) -> Part:
    """The repeats' table and plot; None for both in a run without repeats."""
    import pandas as pd

    rates = repeat_rates(run.table7)
    if not rates:
        return Part({"rows": None, "plot": None})
    rows = repeats_table(rates)
    return Part({"rows": rows, "plot": data_uri(repeats_plot(rates))}, {"repeats": pd.DataFrame(rows)})
