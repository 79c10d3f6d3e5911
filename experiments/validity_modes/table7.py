"""Both validity modes over every markup of the paper's Table 7, against the paper's own outputs.

    python experiments/validity_modes/table7.py ../shared/data/llm4schemaorg-pset

Reads the paper's ``results.csv`` at the last commit of its ``data/WDC/Pset`` (a checkout or the
bundle, :func:`udfs.corpus.pset.open_pset`). Per source: triples in and kept, counted the paper's
way, by the paper (results.csv), by our paper mode and by the schemaorg mode; then, per markup,
whether each mode keeps exactly the triples of the paper's ``*_shacl_*_filtered.jsonld``, the
markups that differ classed by the first cause that applies: ``unfiltered`` (the paper's filter
left the markup whole), ``removed by ours: <cause>`` (the cause of most triples only ours removes),
``kept by ours only``. Prints Markdown tables.
"""

from __future__ import annotations

import argparse
import collections

from udfs.agents.validity import ValidityAgent, counted_keys, paper_triples
from udfs.corpus.pset import open_pset, results_rows
from udfs.runtime.config import load_config
from udfs.schemaorg.markup import parse_markup


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("source", help="the paper's checkout or pset-history.bundle")
    args = ap.parse_args()
    conf = load_config().validity
    src = open_pset(args.source)
    rows = results_rows(src)
    agents = {m: ValidityAgent("compiled", conf.strict, conf.vocab, m) for m in ("paper", "schemaorg")}
    sums = collections.defaultdict(lambda: [0, 0, 0, 0, 0])
    classes = {m: collections.defaultdict(collections.Counter) for m in agents}
    for r in rows:
        m = parse_markup(src.read(r.markup).decode("utf-8"))
        theirs = counted_keys(parse_markup(src.read(r.filtered).decode("utf-8")))
        s = sums[r.source]
        s[0] += r.triples_in
        s[1] += r.triples_kept
        for i, (mode, agent) in enumerate(agents.items()):
            res = agent.validate(m)
            counted = {(x["property"], x["value"], x["entity_type"] or ""): x for x in paper_triples(m, res.verdicts)}
            ours = {k for k, x in counted.items() if x["valid"]}
            if mode == "paper":
                s[2] += len(counted)
            s[3 + i] += len(ours)
            if ours == theirs:
                cls = "same triples"
            elif theirs == counted_keys(m) and ours < theirs:
                cls = "unfiltered"
            elif theirs - ours:
                cls = (
                    "removed by ours: "
                    + collections.Counter(
                        counted[k]["cause"] if k in counted else "not counted by ours" for k in theirs - ours
                    ).most_common(1)[0][0]
                )
            else:
                cls = "kept by ours only"
            classes[mode][r.source][cls] += 1
    print(
        "| source | markups | triples in, paper | kept, paper | triples in, ours | kept, paper mode | kept, schemaorg mode |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for source, (pin, pkept, oin, okp, oks) in sums.items():
        n = sum(classes["paper"][source].values())
        print(
            f"| {source} | {n} | {pin:,} | {pkept:,} ({pkept / pin:.1%}) | {oin:,} | {okp:,} ({okp / oin:.1%}) "
            f"| {oks:,} ({oks / oin:.1%}) |"
        )
    for mode in agents:
        print(f"\n{mode} mode against the paper's filtered markups:\n")
        names = sorted({c for per in classes[mode].values() for c in per})
        print("| source | " + " | ".join(names) + " |")
        print("|---|" + "---:|" * len(names))
        for source, per in classes[mode].items():
            print(f"| {source} | " + " | ".join(str(per[c]) for c in names) + " |")


if __name__ == "__main__":
    main()
