"""How a judge's factuality questions are best combined: the mean of all, or the text questions'
mean and the property questions' mean combined geometrically (``udfs.agents.verdicts.combined_score``).

    for q in plain claim extract extract-soft extract-soft-all extract-soft-all-near extract-other \\
             complies-ranged choice; do
        .venv/bin/python jobs/agents_bench.py run --input OUT/agents_bench/ground_truth --output OUT \\
            --limit 400 --tasks intrinsic extrinsic --factuality-questions $q --cache OUT/llm.sqlite
    done
    .venv/bin/python benchmarks/judge_combinations.py --ground-truth OUT/agents_bench/ground_truth \\
        --results OUT/agents_bench/results --limit 400 \\
        [--judge plain claim extract-soft-all-near extract-other complies-ranged] \\
        [--questions plain claim extract complies-ranged choice]

Reads the verdicts of those single-question runs (nothing here calls a model; with a request cache
that holds a judge's answers the runs take seconds; ``extract-other`` alone asks ``extract-soft``'s
request too, for the answer it asks past, so run it after ``extract-soft``) and, for the same
seeded items and the split ``calibrate`` makes (by example text, ``--seed``, ``--fit-fraction``), fits one threshold per
combination on one side (``udfs.scores.calibration.fit_threshold``, both factuality tasks together)
and measures it on the other, in both directions ("folds"). Prints the ``--judge`` questions under
both combinations, then every subset of ``--questions`` that holds both kinds: how often the
combination does better on the held-out side by the smaller of intrinsic F1 / 0.90 and extrinsic
F1 / 0.95 (the issue's targets, ``judge_subsets.py``'s ranking). Between the two, how many
items of each kind the ``--judge`` questions, combined, get wrong over both sides at the first
fold's threshold: the errors to read, not a result; and, per fold, the best any one threshold
does on the held-out side itself (``ceiling``, a bound, not a result): where it is no better than
the fitted threshold, what the judge lacks is ranking, not calibration.
"""
from __future__ import annotations

import argparse
import glob
import itertools
import sys
from pathlib import Path
from typing import Callable

import pyarrow.parquet as pq

from udfs.agents.prompts import FITS_ASKS
from udfs.agents.verdicts import combined_score
from udfs.bench.commands import load_ground_truth, select_items
from udfs.bench.runner import VerdictConfig
from udfs.runtime.io import Folder
from udfs.scores import calibration as cal

TARGETS = {"intrinsic": 0.90, "extrinsic": 0.95}
TASKS = ("intrinsic", "extrinsic")


def mean(scores: dict[str, float]) -> float:
    return sum(scores.values()) / len(scores)


COMBINATIONS: dict[str, Callable[[dict[str, float]], float]] = {"mean": mean, "combined": combined_score}


def question_scores(results: Path, question: str, model: str, strategy: str,
                    compliance_questions: list[str]) -> dict[str, float | None]:
    """item_id -> factuality score of the single-question run's verdicts (the runner names its folder)."""
    name = VerdictConfig([model], strategy, 0.5, 0.5, factuality_questions=[question],
                         compliance_questions=compliance_questions).name
    parts = sorted(glob.glob(str(results / name / "verdicts" / "*.parquet")))
    if not parts:
        raise SystemExit(f"judge_combinations.py: no verdicts under {results / name}: run --factuality-questions "
                         f"{question} first (module docstring)")
    out: dict[str, float | None] = {}
    for p in parts:
        for r in pq.read_table(p, columns=["agent", "item_id", "score"]).to_pylist():
            if r["agent"] == "factuality" and (r["score"] is not None or r["item_id"] not in out):
                out[r["item_id"]] = r["score"]
    return out


def score_of(answers: dict[str, dict[str, float | None]], questions, how: str, item_id: str) -> float | None:
    """The item's score under a combination of the questions that apply to it (a question not asked,
    e.g. ``choice`` for a subject with no other property, is left out, as the agent does); None when
    a question has no verdict for the item."""
    got = {}
    for q in questions:
        if item_id not in answers[q]:
            return None
        if answers[q][item_id] is not None:
            got[q] = answers[q][item_id]
    return COMBINATIONS[how](got) if got else None


def fold(items: dict[str, dict], side: dict[str, str], score) -> dict:
    """Threshold fitted on the items ``side`` marks "fit", measured per task on the others."""
    fit = [i for i in items if side[i] == "fit" and score(i) is not None]
    threshold = cal.fit_threshold([items[i]["label"] for i in fit], [score(i) for i in fit])[0]
    out = {"threshold": threshold}
    for task in (*TASKS, "both"):
        ids = [i for i in items if side[i] == "test" and (task == "both" or task in items[i]["tasks"])]
        out[task] = cal.measure([items[i]["label"] for i in ids], [score(i) for i in ids], threshold)
    out["criterion"] = min(out[t]["f1"] / TARGETS[t] for t in TASKS)
    return out


def ceiling(items: dict[str, dict], side: dict[str, str], score) -> dict:
    """The best any one threshold does on the held-out side itself, by the targets' criterion:
    every held-out score tried as the threshold. A bound chosen with the answers it is read on, so
    never a result; it tells a gap that a better fitted threshold could close (calibration) from
    one that it could not (ranking)."""
    held = [i for i in items if side[i] == "test" and score(i) is not None]
    per_task = {t: ([items[i]["label"] for i in held if t in items[i]["tasks"]],
                    [score(i) for i in held if t in items[i]["tasks"]]) for t in TASKS}
    best: dict = {"criterion": -1.0}
    for threshold in sorted({score(i) for i in held}):
        f1 = {t: cal.measure(labels, scores, threshold)["f1"] for t, (labels, scores) in per_task.items()}
        criterion = min(f1[t] / TARGETS[t] for t in TASKS)
        if criterion > best["criterion"]:
            best = {"criterion": criterion, "threshold": threshold, **f1}
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ground-truth", required=True)
    ap.add_argument("--results", required=True, help="agents_bench's results folder (OUT/agents_bench/results)")
    ap.add_argument("--limit", type=int, default=400)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--fit-fraction", type=float, default=0.5)
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--strategy", default="direct")
    ap.add_argument("--compliance-questions", nargs="+", default=["ranged"])
    ap.add_argument("--judge", nargs="+", default=["plain", "claim", "extract-soft-all-near", "extract-other",
                                                   "complies-ranged"])
    ap.add_argument("--questions", nargs="+", default=None, help="the subsets' pool (default: --judge's)")
    a = ap.parse_args(argv)
    pool = a.questions or a.judge

    gt = load_ground_truth(Folder(a.ground_truth))
    items: dict[str, dict] = {}
    for task, picked in select_items(gt, TASKS, a.limit, a.seed).items():
        for it in picked:
            items.setdefault(it["item_id"], {"label": bool(it["label"]), "group": it["group"], "tasks": ()})
            items[it["item_id"]]["tasks"] += (task,)
    answers = {q: question_scores(Path(a.results), q, a.model, a.strategy, a.compliance_questions)
               for q in dict.fromkeys([*a.judge, *pool])}
    first = {i: cal.split_of(d["group"], a.seed, a.fit_fraction) for i, d in items.items()}
    sides = {"fit -> test": first, "test -> fit": {i: "test" if s == "fit" else "fit" for i, s in first.items()}}

    print(f"{len(items)} items, {sum(d['label'] for d in items.values())} true; judge {' '.join(a.judge)}\n")
    print("| combination | fold | threshold | intrinsic P / R / F1 | extrinsic P / R / F1 | both: bal. acc. / AUROC "
          "| AUROC intrinsic / extrinsic |\n|---|---|---|---|---|---|---|")
    folds = {}
    for how in COMBINATIONS:
        for name, side in sides.items():
            f = folds[how, name] = fold(items, side, lambda i, how=how: score_of(answers, a.judge, how, i))
            i_, e_, b_ = f["intrinsic"], f["extrinsic"], f["both"]
            print(f"| {how} | {name} | {f['threshold']:.3f} | {i_['precision']:.3f} / {i_['recall']:.3f} / "
                  f"{i_['f1']:.3f} | {e_['precision']:.3f} / {e_['recall']:.3f} / {e_['f1']:.3f} | "
                  f"{b_['balanced_accuracy']:.3f} / {b_['auroc']:.3f} | {i_['auroc']:.3f} / {e_['auroc']:.3f} |")

    # Where the judge errs, over both sides at the first fold's threshold (its errors to read, not a result).
    threshold = folds["combined", "fit -> test"]["threshold"]
    scored = {i: score_of(answers, a.judge, "combined", i) for i in items}
    wrong = {i for i, s in scored.items() if s is not None and (s >= threshold) != items[i]["label"]}
    counts = [("positives rejected", lambda d: d["label"])] + [
        (f"{t} negatives passed", lambda d, t=t: not d["label"] and t in d["tasks"]) for t in TASKS]
    print(f"\ncombined at {threshold:.3f}, both sides: " + "; ".join(
        f"{name} {sum(1 for i in wrong if keep(items[i]))} of {sum(1 for i in items if keep(items[i]))}"
        for name, keep in counts))
    # The fitted threshold against the best any threshold does on the held-out side (a bound, not a result).
    for name, side in sides.items():
        c = ceiling(items, side, lambda i: scored[i])
        f = folds["combined", name]
        print(f"combined, {name}: fitted {f['threshold']:.3f} gives intrinsic / extrinsic F1 "
              f"{f['intrinsic']['f1']:.3f} / {f['extrinsic']['f1']:.3f}; the best threshold on the held-out side "
              f"itself, {c['threshold']:.3f}, {c['intrinsic']:.3f} / {c['extrinsic']:.3f}")

    mixed = [qs for k in range(2, len(pool) + 1) for qs in itertools.combinations(pool, k)
             if set(qs) & set(FITS_ASKS) and set(qs) - set(FITS_ASKS)]
    if not mixed:
        return 0
    print("\n| questions | fold | held-out criterion: mean / combined | intrinsic F1 | extrinsic F1 |\n|---|---|---|---|---|")
    wins = {name: 0 for name in sides}
    for qs in mixed:
        for name, side in sides.items():
            m, c = (fold(items, side, lambda i, how=how: score_of(answers, qs, how, i)) for how in COMBINATIONS)
            wins[name] += c["criterion"] > m["criterion"]
            print(f"| {' '.join(qs)} | {name} | {m['criterion']:.3f} / {c['criterion']:.3f} | "
                  f"{m['intrinsic']['f1']:.3f} / {c['intrinsic']['f1']:.3f} | "
                  f"{m['extrinsic']['f1']:.3f} / {c['extrinsic']['f1']:.3f} |")
    print("\n" + "; ".join(f"{name}: combined better in {w} of {len(mixed)}" for name, w in wins.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
