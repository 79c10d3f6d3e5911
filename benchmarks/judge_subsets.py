"""Which mean of factuality questions to make the default, chosen on the fit split alone.

    .venv/bin/python benchmarks/judge_subsets.py --ground-truth OUT/agents_bench/ground_truth \\
        --work OUT/jc --limit 400 [--questions direct says claim extract complies complies-ranged excerpt]

Reads the answers ``benchmarks/judge_configs.py`` logged in ``--work/<question>.jsonl`` (ask them
there first, with the same ``--limit`` and ``--seed``: nothing here calls a model) and scores, for
every subset of ``--questions`` that holds at least one question about the text, the mean of the
scores of the questions that apply to an item (as ``udfs.agents.verdicts.judge_factuality``
did before it combined the text questions with the questions about the property geometrically;
``benchmarks/judge_combinations.py`` compares the two). Each mean gets one threshold fitted on the fit split of both factuality tasks together
(``udfs.scores.calibration.fit_threshold``, as ``calibrate`` fits it). The ranking uses fit-split
figures only: the smaller of intrinsic F1 / 0.90 and extrinsic F1 / 0.95 (the issue's targets),
so the test split, printed beside, plays no part in the choice. ``direct`` is the agent's
``plain`` question.
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

import judge_configs as J
from udfs.bench import metrics as bm
from udfs.scores import calibration as cal

TARGETS = {"intrinsic": 0.90, "extrinsic": 0.95}
# Questions that read the page text: a mean needs one (the compliance questions alone judge the
# value against the property's definition, not the text).
TEXT_QUESTIONS = ("direct", "says", "claim", "defined", "where", "exemplified", "extract", "excerpt", "names",
                  "typed", "claim-typed")


def mean_score(answers: dict[str, dict], questions, item_id: str) -> float | None:
    """The mean of the scores of ``questions`` that apply to the item (a ``not_asked`` answer does
    not); None when one that applies has no score, or none applies."""
    rows = [answers[q].get(item_id) for q in questions]
    if any(r is None for r in rows):
        return None
    scores = [r["score"] for r in rows if not r.get("not_asked")]
    if not scores or any(s is None for s in scores):
        return None
    return sum(scores) / len(scores)


def figures(items: dict[str, dict], split: dict[str, str], score) -> dict:
    """Threshold fitted on the fit split (both tasks' items together), then F1 and AUROC per split
    and task at that threshold."""
    fit = [i for i in items if split[i] == "fit" and score(i) is not None]
    thr = cal.fit_threshold([bool(items[i]["label"]) for i in fit], [score(i) for i in fit])[0]
    out = {"threshold": thr}
    for part in ("fit", "test"):
        for task in TARGETS:
            ids = [i for i in items if split[i] == part and items[i]["kind"] in ("positive", task)
                   and score(i) is not None]
            y, s = [bool(items[i]["label"]) for i in ids], [score(i) for i in ids]
            out[part, task] = (bm.at_threshold(y, s, thr).f1, bm.auroc(y, s))
    return out


def rank(items: dict[str, dict], split: dict[str, str], answers: dict[str, dict], questions) -> list[tuple]:
    """(questions, figures) for every subset with a text question, best first by the fit split's
    smaller ratio of F1 to target (ties: fewer questions first)."""
    out = []
    for k in range(1, len(questions) + 1):
        for qs in itertools.combinations(questions, k):
            if not set(qs) & set(TEXT_QUESTIONS):
                continue
            f = figures(items, split, lambda i, qs=qs: mean_score(answers, qs, i))
            out.append((qs, f))
    return sorted(out, key=lambda r: (-min((r[1]["fit", t][0] or 0.0) / TARGETS[t] for t in TARGETS), len(r[0])))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ground-truth", required=True, help="the folder jobs/agents_bench.py build writes")
    ap.add_argument("--work", required=True, help="judge_configs.py's --work: the answers per question (JSONL)")
    ap.add_argument("--limit", type=int, default=400, help="items per task, as judge_configs.py was run")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--fit-fraction", type=float, default=0.5)
    ap.add_argument("--questions", nargs="+", default=["direct", "says", "claim", "extract", "complies",
                                                         "complies-ranged", "excerpt"], choices=J.MODEL_CONFIGS)
    ap.add_argument("--top", type=int, default=10, help="rows to print (the previous default is printed too)")
    args = ap.parse_args(argv)

    task_items = J.load_items(Path(args.ground_truth), args.limit, args.seed, list(TARGETS))
    items = {it["item_id"]: it for t in task_items.values() for it in t}
    split = {i: J.split_of(it, args.seed, args.fit_fraction) for i, it in items.items()}
    answers = {}
    for q in args.questions:
        log = Path(args.work) / f"{q}.jsonl"
        rows = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
        answers[q] = {r["item_id"]: r for r in rows if r["agent"] == "factuality"}
        missing = len(set(items) - set(answers[q]))
        if missing:
            print(f"{q}: {missing} of {len(items)} items unanswered: ask them with judge_configs.py first",
                  file=sys.stderr)
            return 3
    ranked = rank(items, split, answers, args.questions)
    print(f"{len(ranked)} means, {len(items)} items ({args.limit} per task, seed {args.seed}); threshold and "
          f"ranking on the fit split only; test split beside\n")
    print("| rank | questions | threshold | fit: intrinsic F1 / AUROC | fit: extrinsic F1 / AUROC "
          "| test: intrinsic F1 / AUROC | test: extrinsic F1 / AUROC |")
    print("|---|---|---|---|---|---|---|")

    def cell(v):
        return " / ".join("–" if x is None else f"{x:.3f}" for x in v)

    previous = ("direct", "says", "claim", "extract", "complies")
    for n, (qs, f) in enumerate(ranked, 1):
        if n <= args.top or qs == previous:
            print(f"| {n} | {' '.join(qs)} | {f['threshold']:.3f} | {cell(f['fit', 'intrinsic'])} "
                  f"| {cell(f['fit', 'extrinsic'])} | {cell(f['test', 'intrinsic'])} | {cell(f['test', 'extrinsic'])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
