"""The validity agent's two modes on the bundled markups: both shares, and why they differ.

    .venv/bin/python experiments/validity_modes/validity_modes.py [--strict] [--examples 5]
    .venv/bin/python experiments/validity_modes/validity_modes.py --paper-data data/llm4schemaorg

Markups: every readable JSON-LD markup of the schema.org examples and the extruct samples
(``testkit.markup_corpus.real_markups``, the demo's pages among them). Each is read by both
modes of ``udfs.agents.validity`` and counted the paper's way (a leaf (property, value) with its
entity type, identical strings once, summed over markups); the triples on which the modes disagree
are grouped by the mode that removes them and the cause. The same comparison over files:
``python -m udfs.agents.validity --compare-modes FILE...``. Prints a Markdown table (the one in
README.md) and, per cause, a few example triples.

``--paper-data FOLDER``: the paper's own markups instead (``FOLDER/manifest.tsv``, the files
fetched under ``FOLDER/cache`` by ``FOLDER/fetch.py``): per document, the triples our paper mode
keeps beside those the paper's filtered output (``*_shacl_*_filtered.jsonld``) holds, both counted
the paper's way, and whether they are the same set; then per source the kept shares (the paper's
own filter, also without the files the manifest marks ``unfiltered``, where that filter was a
no-op; our paper mode; our schemaorg mode) beside Table 7's.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from testkit.markup_corpus import real_markups
from udfs.agents.validity import ModeComparison, ValidityAgent, counted_keys, paper_triples
from udfs.runtime.config import load_config
from udfs.schemaorg.markup import MarkupError, parse_markup


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--strict",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="strict reading of literals in the schemaorg mode",
    )
    ap.add_argument("--examples", type=int, default=3, help="example triples shown per cause")
    ap.add_argument(
        "--paper-data",
        type=Path,
        default=None,
        metavar="FOLDER",
        help="compare with the paper's own filtered markups listed in FOLDER/manifest.tsv",
    )
    args = ap.parse_args()
    conf = load_config().validity
    agent = ValidityAgent("compiled", args.strict, conf.vocab, "schemaorg")
    if args.paper_data is not None:
        return paper_data(args.paper_data, agent, ValidityAgent("compiled", args.strict, conf.vocab, "paper"))
    groups = {"schema.org examples": ModeComparison(), "extruct samples": ModeComparison()}
    refused = 0
    for c in real_markups():
        try:
            m = parse_markup(c.text)
        except MarkupError:
            refused += 1
            continue
        cmp = groups["schema.org examples" if c.source.startswith("examples:") else "extruct samples"]
        cmp.add(m, agent.findings_many([m])[0], agent.model, c.source)
    total = ModeComparison()
    for g in groups.values():
        total.markups += g.markups
        total.triples += g.triples
        for k in total.kept:
            total.kept[k] += g.kept[k]
        for k, n in g.disagreements.items():
            total.disagreements[k] = total.disagreements.get(k, 0) + n
        total.rows += g.rows
    groups["all"] = total
    causes = sorted(total.disagreements)
    print(f"{refused} markups refused (unreadable: remote context or not JSON)\n")
    print(
        "| markups | n | triples | kept, paper mode | kept, schemaorg mode | "
        + " | ".join(f"removed by {m} only: {c}" for m, c in causes)
        + " |"
    )
    print("|---|---:|---:|---:|---:|" + "---:|" * len(causes))
    for name, g in groups.items():
        print(
            f"| {name} | {g.markups} | {g.triples} | {g.kept['paper']} ({100 * g.share('paper'):.1f}%) | "
            f"{g.kept['schemaorg']} ({100 * g.share('schemaorg'):.1f}%) | "
            + " | ".join(str(g.disagreements.get(k, 0)) for k in causes)
            + " |"
        )
    for m, c in causes:
        print(f"\nremoved by {m} only, {c}:")
        for r in [r for r in total.rows if (r["removed_by"], r["cause"]) == (m, c)][: args.examples]:
            print(f"  {r['file']}: {r['entity_type']} / {r['property']}: {r['value'][:60]!r} ({r['reason'][:120]})")
    return 0


def paper_data(folder: Path, schemaorg: ValidityAgent, paper: ValidityAgent) -> int:
    """The ``--paper-data`` comparison; 1 when a file of the manifest is not in the cache."""
    import csv

    from udfs.report.paper import TABLE7

    with open(folder / "manifest.tsv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    missing = [r[c] for r in rows for c in ("markup", "filtered") if not (folder / "cache" / r[c]).exists()]
    if missing:
        print(
            f"validity_modes.py: error: {len(missing)} files not in {folder / 'cache'}: run {folder / 'fetch.py'}",
            file=sys.stderr,
        )
        return 1
    by_source: dict[str, dict] = {}
    print("| source | document | triples | kept, the paper's filter | kept, our paper mode | same triples | expected |")
    print("|---|---|---:|---:|---:|---|---|")
    for r in rows:
        m = parse_markup((folder / "cache" / r["markup"]).read_text(encoding="utf-8"))
        res = paper.validate(m)
        counted = paper_triples(m, res.verdicts)
        ours = {(x["property"], x["value"], x["entity_type"] or "") for x in counted if x["valid"]}
        theirs = counted_keys(parse_markup((folder / "cache" / r["filtered"]).read_text(encoding="utf-8")))
        s = by_source.setdefault(
            r["source"], {"docs": 0, "agree": 0, "theirs": 0, "ran": [0, 0], "cmp": ModeComparison()}
        )
        s["docs"] += 1
        s["agree"] += ours == theirs
        s["theirs"] += len(theirs)
        if r["expect"] != "unfiltered":  # the paper's filter ran: its share without its no-op files
            s["ran"][0] += len(theirs)
            s["ran"][1] += len(counted)
        s["cmp"].add(m, schemaorg.findings_many([m])[0], schemaorg.model, r["document"])
        print(
            f"| {r['source']} | {r['document'][:40]} | {len(counted)} | {len(theirs)} | {len(ours)} | "
            f"{'yes' if ours == theirs else 'no'} | {r['expect']} |"
        )
    print(
        "\n| source | documents | triples | kept, the paper's filter | kept, the paper's filter where it ran "
        "| kept, our paper mode | kept, our schemaorg mode | Table 7 (180 pages) "
        "| same triples as the paper's filter |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for src, s in by_source.items():
        c = s["cmp"]
        t7 = TABLE7.get(src)
        ran = f"{s['ran'][0]} of {s['ran'][1]} ({s['ran'][0] / s['ran'][1]:.1%})" if s["ran"][1] else "-"
        print(
            f"| {src} | {s['docs']} | {c.triples} | {s['theirs']} ({s['theirs'] / c.triples:.1%}) | {ran} | "
            f"{c.kept['paper']} ({c.share('paper'):.1%}) | {c.kept['schemaorg']} ({c.share('schemaorg'):.1%}) | "
            + (f"{t7[1]:,} of {t7[0]:,} ({t7[1] / t7[0]:.1%})" if t7 else "-")
            + f" | {s['agree']} of {s['docs']} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
