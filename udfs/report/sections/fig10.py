"""Fig. 10: per feature, the log-log histogram of C-sets with each stratum shaded and labelled,
from the sample job's run record (samples/_run.json under the output root)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from udfs.report.figures import png, pyplot
from udfs.report.sections import Part

if TYPE_CHECKING:
    from udfs.report.inputs import Run

BLOCK = "fig10"
PER_RUN = False
STRATUM_COLOURS = {"low": "#dbe9f6", "medium": "#fde9c9", "high": "#f6d5d5"}


def _shade_strata(ax, feat: str, bins, bounds, names, sizes) -> None:
    """Each stratum of ``feat`` as a shaded span of the axis, labelled with its bounds and size."""
    lo_all = min(b["lower"] for b in bins)
    hi_all = max(b["upper"] for b in bins)
    # The features are counts: stratum k holds the integers of (q_{k-1}, q_k], drawn as
    # [q_{k-1} + 1, q_k + 1) on the axis, where a log2 bin [lower, upper) holds lower..upper-1.
    qs = [q for q in bounds.get(feat, [])]
    edges = [lo_all, *[q + 1 for q in qs], hi_all]
    for k, name in enumerate(names[: len(edges) - 1]):
        a, b = max(edges[k], lo_all), min(edges[k + 1], hi_all)
        if b <= a:
            continue
        ax.axvspan(a, b, color=STRATUM_COLOURS.get(name, "#eeeeee"), zorder=0)
        s = sizes.get((feat, name), {})
        lo_v = "min" if k == 0 else f">{qs[k - 1]:g}"
        hi_v = f"≤{qs[k]:g}" if k < len(qs) else "max"
        ax.text(
            math.sqrt(a * b),
            0.97 - 0.13 * k,
            f"{name} ({lo_v}..{hi_v})\n{s.get('population', '?')} C-sets",
            transform=ax.get_xaxis_transform(),
            ha="center",
            va="top",
            fontsize=8,
            bbox={"facecolor": "white", "alpha": 0.7, "edgecolor": "none", "pad": 1},
        )


def histogram_figures(sample_record: dict[str, Any] | None) -> list[dict[str, str]]:
    """Fig. 10 from the sample run record: per feature, the log-log histogram of C-sets with each
    stratum shaded and labelled (its bounds and how many C-sets it holds)."""
    if not sample_record or not sample_record.get("histograms"):
        return []
    plt = pyplot()
    bounds = sample_record.get("bounds", {})
    names = sample_record.get("stratum_names") or ["low", "medium", "high"]
    sizes = {(s["feature"], s["stratum"]): s for s in sample_record.get("strata_sizes", [])}
    out = []
    for hist in sample_record["histograms"]:
        feat = hist["feature"]
        bins = hist.get("bins") or []
        fig, ax = plt.subplots(figsize=(6.5, 3.8))
        if bins:
            _shade_strata(ax, feat, bins, bounds, names, sizes)
            ax.bar(
                [b["lower"] for b in bins],
                [b["count"] for b in bins],
                width=[b["upper"] - b["lower"] for b in bins],
                align="edge",
                color="#4c72b0",
                edgecolor="white",
                zorder=2,
            )
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_ylim(top=max(b["count"] for b in bins) * 40)
        else:
            ax.text(0.5, 0.5, "no positive values", ha="center", va="center", transform=ax.transAxes)
        ax.set_xlabel(f"{feat} (log2 bins)")
        ax.set_ylabel("C-sets (log)")
        ax.set_title(f"Fig. 10: {feat}, strata bounds {bounds.get(feat, [])}", fontsize=10)
        fig.tight_layout()
        out.append({"feature": feat, "src": png(fig)})
    return out


def data(run: Run) -> Part:
    return Part({"histograms": histogram_figures(run.src.run_record("samples"))})
