"""Throughput of the scores on real schema.org example markup and values; prints figures.

    .venv/bin/python benchmarks/bench_scores.py [--pairs 2000] [--batch-size 64]

Measures, in one run: the embedding model's load time; BLINKG matches per second with batched
embeddings against one embedding call per pair (the ratio is what batching buys); Levenshtein
alone; MeMR and key scores per markup pair.
"""

from __future__ import annotations

import json
import os
import random
import re
import time

from udfs.runtime.cli import ArgumentParser
from udfs.runtime.config import load_config
from udfs.runtime.paths import DATA_DIR
from udfs.scores import keys as keyscores
from udfs.scores import matching
from udfs.scores.memr import MarkupError, memr_markups

EXAMPLES = DATA_DIR / "schemaorg-30.0" / "schemaorg-all-examples.txt"


def example_markups() -> list:
    out = []
    for m in re.finditer(r'<script type="application/ld\+json">(.*?)</script>', EXAMPLES.read_text(), re.S):
        try:
            out.append(json.loads(m.group(1)))
        except json.JSONDecodeError:
            pass
    return out


def string_values(doc, out: list) -> list:
    if isinstance(doc, dict):
        for k, v in doc.items():
            if not k.startswith("@"):
                string_values(v, out)
    elif isinstance(doc, list):
        for v in doc:
            string_values(v, out)
    elif isinstance(doc, str) and doc.strip():
        out.append(doc)
    return out


def main() -> None:
    ap = ArgumentParser()
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--unbatched", type=int, default=100, help="pairs for the one-call-per-pair run")
    conf = load_config().scores
    ap.add_argument("--batch-size", type=int, default=conf.embedding_batch_size)
    args = ap.parse_args()
    match = {**matching.settings(conf), "batch_size": args.batch_size}

    docs = example_markups()
    values = sorted({v for d in docs for v in string_values(d, [])})
    rng = random.Random(7)
    pairs = [(rng.choice(values), rng.choice(values)) for _ in range(args.pairs)]
    print(f"real data: {len(docs)} example markups, {len(values)} distinct string values, {len(pairs)} value pairs")

    t = time.perf_counter()
    matching.load_model(conf.embedding_threads)
    print(f"embedding model load: {time.perf_counter() - t:.2f} s (all-MiniLM-L6-v2 in numpy, CPU)")
    matching.match_pairs(pairs[:8], **match)  # first-call warm-up outside the timings

    t = time.perf_counter()
    for a, b in pairs:
        matching.levenshtein_similarity(a, b)
    lev_s = time.perf_counter() - t

    by_threads = {}
    for threads in (2, 1):  # the default (1) last, so the runs below use it
        t = time.perf_counter()
        got = matching.match_pairs(pairs, **{**match, "threads": threads})
        by_threads[threads] = time.perf_counter() - t
    batched_s = by_threads[1]

    few = pairs[: args.unbatched]
    t = time.perf_counter()
    for a, b in few:
        matching.match(a, b, **match)
    unbatched_s = time.perf_counter() - t

    batched_rate = len(pairs) / batched_s
    unbatched_rate = len(few) / unbatched_s
    print(f"Levenshtein only: {len(pairs) / lev_s:,.0f} pairs/s")
    print(
        f"BLINKG match, batched (batch {args.batch_size}, distinct texts embedded once): {batched_rate:,.0f} pairs/s "
        f"({sum(m.matched for m in got)} of {len(got)} matched)"
    )
    print(f"BLINKG match, one call per pair: {unbatched_rate:,.1f} pairs/s over {len(few)} pairs")
    print(f"batched / one call per pair: {batched_rate / unbatched_rate:.1f}x")
    print(
        f"batched with 2 BLAS threads: {len(pairs) / by_threads[2]:,.0f} pairs/s; "
        f"1 thread / 2 threads: {by_threads[2] / by_threads[1]:.2f}x (load average now {os.getloadavg()[0]:.1f})"
    )

    # MeMR and key scores on neighbouring example pairs (a stand-in for human vs model markup);
    # the few examples with a remote @context, which no reader fetches, have no MeMR.
    readable = []
    for d in docs:
        try:
            memr_markups(d, [])
            readable.append(d)
        except MarkupError:
            pass
    markup_pairs = list(zip(readable, readable[1:]))
    t = time.perf_counter()
    for human, model in markup_pairs:
        memr_markups(human, model)
    memr_s = time.perf_counter() - t
    t = time.perf_counter()
    for human, model in markup_pairs:
        keyscores.key_scores(human, model, ignore_keys=conf.ignore_keys, max_order=conf.bleu_max_order)
    key_s = time.perf_counter() - t
    print(
        f"MeMR: {len(markup_pairs) / memr_s:,.0f} markup pairs/s; key scores: {len(markup_pairs) / key_s:,.0f} markup pairs/s "
        f"({len(markup_pairs)} pairs)"
    )


if __name__ == "__main__":
    main()
