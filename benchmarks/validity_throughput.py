"""Validity agent throughput: markups per second per core, compiled checker vs pySHACL, same markups.

    .venv/bin/python benchmarks/validity_throughput.py [--strict] [--pyshacl-single 20] [--repeat 5]

Markups: every readable JSON-LD markup of the schema.org examples and the extruct samples (the
"typical" markups: a handful of entities, tens of triples each). Everything runs in this one
process on one core, side by side:

* compiled: the whole agent (parse the JSON text, findings, verdicts, cleaned markup), repeated
  ``--repeat`` times over the corpus;
* pySHACL, batched: the same agent with the reference engine, all markups merged into one data
  graph per call (the agreement test's way);
* pySHACL, one call per markup (the way the paper's pipeline called it) on the first
  ``--pyshacl-single`` markups.

Both pySHACL figures exclude loading the shapes graph (done once, reported separately). Rates
are given per CPU second of this process (what one core delivers, robust to other load on a
shared machine) and per wall second.
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager

from testkit.markup_corpus import real_markups
from udfs.agents.validity import ValidityAgent
from udfs.runtime.cli import ArgumentParser
from udfs.schemaorg.markup import MarkupError, parse_markup


class Clock:
    def __init__(self) -> None:
        self.cpu = self.wall = 0.0


@contextmanager
def timed():
    c = Clock()
    c0, w0 = time.process_time(), time.perf_counter()
    yield c
    c.cpu, c.wall = time.process_time() - c0, time.perf_counter() - w0


def main() -> int:
    ap = ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--strict", action="store_true", help="strict reading of values")
    ap.add_argument("--repeat", type=int, default=5, help="passes of the compiled checker over the corpus")
    ap.add_argument("--pyshacl-single", type=int, default=20, help="markups validated one pySHACL call each")
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core, honestly

    texts = []
    for c in real_markups():
        try:
            parse_markup(c.text)
            texts.append(c.text)
        except MarkupError:
            pass
    n = len(texts)
    n_triples = sum(len(list(parse_markup(t).triples())) for t in texts)
    reading = "strict" if args.strict else "lenient"
    print(f"corpus: {n} markups, {n_triples} triples ({n_triples / n:.1f} per markup), {reading} reading, 1 core")

    compiled = ValidityAgent("compiled", args.strict, None, "schemaorg")
    compiled.validate_many(texts[:10])  # warm the vocabulary and model caches
    with timed() as tc:
        for _ in range(args.repeat):
            c_results = compiled.validate_many(texts)
    with timed() as tl:
        reference = ValidityAgent("pyshacl", args.strict, None, "schemaorg")
    with timed() as tb:
        p_results = reference.validate_many(texts)
    k = min(args.pyshacl_single, n)
    with timed() as ts:
        singles = [reference.validate(t) for t in texts[:k]]
    rows = [
        ("compiled", n * args.repeat, tc),
        ("pyshacl batched (1 call)", n, tb),
        (f"pyshacl 1 call/markup ({k})", k, ts),
    ]
    same = sum(a.verdicts == b.verdicts for a, b in zip(c_results, p_results))
    same += 0 if all(a.verdicts == b.verdicts for a, b in zip(p_results[:k], singles)) else -n
    print(f"pySHACL shapes load: {tl.cpu:.2f} s CPU, {tl.wall:.2f} s wall (once per process)")
    print(f"{'engine':<28}{'markups/CPU-s':>15}{'markups/wall-s':>16}{'CPU ms/markup':>15}{'triples/CPU-s':>15}")
    rate = {}
    for name, count, c in rows:
        rate[name] = count / c.cpu
        print(
            f"{name:<28}{count / c.cpu:>15.1f}{count / c.wall:>16.1f}{1000 * c.cpu / count:>15.3f}{count / c.cpu * n_triples / n:>15.0f}"
        )
    r = list(rate.values())
    print(
        f"speed-up compiled / pyshacl batched: {r[0] / r[1]:.0f}x; / pyshacl one call per markup: {r[0] / r[2]:.0f}x (CPU time)"
    )
    print(f"identical verdicts: {same}/{n} markups")
    return 0 if same == n else 1


if __name__ == "__main__":
    sys.exit(main())
