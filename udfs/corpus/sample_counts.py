"""The sample job's account of a run (``jobs/sample.py``; the base class reconciles and tells it):
its counters, every input file's rows, and the summary of strata, bounds and correlations."""

from __future__ import annotations

from udfs.corpus import sampling
from udfs.runtime.closing import Outcome

# every C-set read is drawable or rejected with its reason; drawn or never drawn, with the reason
# (udfs.corpus.sampling.never_drawn); every page of the input drawn or never drawn, with the reason
BALANCES = (
    ("csets_in", ("csets_drawable", "csets_rejected")),
    ("csets_in", ("csets_drawn", "csets_never_drawn_stratum_full", "csets_never_drawn_not_drawable")),
    ("csets_never_drawn", ("csets_never_drawn_stratum_full", "csets_never_drawn_not_drawable")),
    ("pages_in", ("pages_drawn", "pages_never_drawn")),
    ("pages_never_drawn", tuple(f"pages_never_drawn_{k}" for k in sampling.PAGE_NEVER_DRAWN)),
)


def outcome(record: dict, rows_add_up: bool) -> Outcome:
    """The Outcome of a sample run from its run record's data (``record``: counters, bounds, strata,
    Spearman's rho, warnings) and whether every input file's rows add up to the C-sets read."""
    c = record["counters"]
    return Outcome(
        counters={},  # already in the record: sample_csets counts them
        checks={"every input file's rows add up to csets_in": rows_add_up},
        lines=summary(record),
        units="C-sets",
        given=c["csets_in"],
        done=c["csets_drawable"],
        failures={str(k): v for k, v in c["rejects_by_reason"].items()},
    )


def summary(r: dict) -> list[str]:
    c = r["counters"]
    lines = [
        f"sample: {c['csets_in']} C-sets in, {c['csets_drawable']} drawable, "
        f"{c['csets_rejected']} rejected, {c['rows_out']} sample rows"
    ]
    lines.append(
        f"  never drawn: {c['pages_never_drawn']} of {c['pages_in']} pages, {c['csets_never_drawn']} of "
        f"{c['csets_in']} C-sets (stratum full {c['csets_never_drawn_stratum_full']}, "
        f"not drawable {c['csets_never_drawn_not_drawable']})"
    )
    if c["pages_never_drawn"]:
        lines.append(
            f"    pages never drawn: {c['pages_never_drawn_other_page_of_cset']} another page of their drawn C-set "
            f"taken, {c['pages_never_drawn_stratum_full']} stratum full, "
            f"{c['pages_never_drawn_not_drawable']} in no drawable C-set"
        )
    if c["duplicate_cset_ids"]:
        lines.append(
            f"  duplicate cset_id: {c['duplicate_cset_ids']} ids given by "
            f"{c['rejects_by_reason'][sampling.DUPLICATE_CSET_ID]} rows, none drawn (rejects/sample/ names them)"
        )
    if r.get("empty_reason"):
        lines.append(f"  empty sample: {r['empty_reason']}")
    for f, bounds in r["bounds"].items():
        lines.append(f"  {f}: bounds {bounds}")
    for s in r["strata_sizes"]:
        lines.append(
            f"    {s['feature']}/{s['stratum']} ({s['lower']}, {s['upper']}]: "
            f"population {s['population']}, drawable {s['drawable']}, drawn {s['drawn']}"
        )
    for k, v in r["spearman"].items():
        lines.append(f"  spearman {k}: {v['rho']}" + (f" ({v['reason']})" if v.get("reason") else ""))
    for w in r["warnings"]:
        lines.append(f"  warning: {w}")
    return lines


def plots(result, stats: dict, counters: dict, report_dir) -> list[str]:
    """The histogram of each feature with its strata's bounds and Spearman's rho, as PNGs in
    ``report_dir`` (report/sample/); their locations."""
    rho = {k: v["rho"] for k, v in stats["spearman"].items()}
    pngs = []
    for f, hist in result.histograms.items():
        title = f"{f}, {counters['csets_in_frame']} C-sets" + "".join(
            f", rho({k})={v:.3f}" for k, v in rho.items() if v is not None and f in k.split("~")
        )
        pngs.append(str(sampling.plot_histogram(hist, stats["bounds"][f], report_dir / f"hist_{f}.png", title)))
    return pngs
