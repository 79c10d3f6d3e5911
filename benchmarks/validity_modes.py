"""The validity agent's two modes on the bundled markups: both shares, and why they differ.

    .venv/bin/python benchmarks/validity_modes.py [--strict] [--examples 5]

Markups: every readable JSON-LD markup of the schema.org examples and the extruct samples
(``udfs.bench.markup_corpus.real_markups``, the demo's pages among them). Each is read by both
modes of ``udfs.agents.validity`` and counted the paper's way (a leaf (property, value) with its
entity type, identical strings once, summed over markups); the triples on which the modes disagree
are grouped by the mode that removes them and the cause. The same comparison over files:
``python -m udfs.agents.validity --compare-modes FILE...``. Prints a Markdown table (the one in
README.md) and, per cause, a few example triples.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from udfs.agents.validity import ModeComparison, ValidityAgent  # noqa: E402
from udfs.bench.markup_corpus import real_markups  # noqa: E402
from udfs.runtime.config import load_config  # noqa: E402
from udfs.schemaorg.markup import MarkupError, parse_markup  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--strict", action=argparse.BooleanOptionalAction, default=False,
                    help="strict reading of literals in the schemaorg mode")
    ap.add_argument("--examples", type=int, default=3, help="example triples shown per cause")
    args = ap.parse_args()
    conf = load_config().validity
    agent = ValidityAgent("compiled", args.strict, conf.vocab, "schemaorg")
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
    print("| markups | n | triples | kept, paper mode | kept, schemaorg mode | "
          + " | ".join(f"removed by {m} only: {c}" for m, c in causes) + " |")
    print("|---|---:|---:|---:|---:|" + "---:|" * len(causes))
    for name, g in groups.items():
        print(f"| {name} | {g.markups} | {g.triples} | {g.kept['paper']} ({100 * g.share('paper'):.1f}%) | "
              f"{g.kept['schemaorg']} ({100 * g.share('schemaorg'):.1f}%) | "
              + " | ".join(str(g.disagreements.get(k, 0)) for k in causes) + " |")
    for m, c in causes:
        print(f"\nremoved by {m} only, {c}:")
        for r in [r for r in total.rows if (r["removed_by"], r["cause"]) == (m, c)][: args.examples]:
            print(f"  {r['file']}: {r['entity_type']} / {r['property']}: {r['value'][:60]!r} ({r['reason'][:120]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
