"""Does asking the other text questions only where ``plain`` finds support keep the judge's F1?
(experiments/judge_gate/README.md)

From the per-question runs of the agents bench (``jobs/agents_bench.py run --factuality-questions
Q`` for each question of the shipped judge, one request cache, so every run has the answers the
judge had), the shipped judge's score of every item is recomputed under a gate: where ``plain``
scores below it, ``claim`` and ``extract-soft-all-near`` count 0 and ``extract-other`` does not
apply (``udfs.agents.verdicts.judge_factuality``'s ``gate``). For each gate it prints the threshold
fitted on the fit split of the calibration items (the calibration's own fit, seed and fraction),
F1 per task on both splits, the other fold (fitted on the test split, measured on the fit split) and
the items gated; with ``--held-out``, F1 on that sample at each gate's fitted threshold.
"""

from __future__ import annotations

import argparse
import collections
from pathlib import Path

import pyarrow.parquet as pq

from udfs.agents.verdicts import combined_score
from udfs.agents_bench.commands import load_ground_truth, select_items
from udfs.runtime.io import Folder
from udfs.scores import calibration as cal

QUESTIONS = ("plain", "claim", "extract-soft-all-near", "extract-other", "complies-ranged")
GATED = ("claim", "extract-soft-all-near")  # score 0 below the gate (extract-other does not apply)
TASKS = ("intrinsic", "extrinsic")


def per_question(runs: Path) -> dict[str, dict[str, float | None]]:
    """item id -> question -> score, from ``runs/<question>``'s verdicts."""
    out: dict[str, dict[str, float | None]] = collections.defaultdict(dict)
    for q in QUESTIONS:
        (results,) = (runs / q / "agents_bench" / "results").iterdir()
        for r in pq.read_table(results / "verdicts").to_pylist():
            out[r["item_id"]][q] = r["score"]
    return out


def gated_answers(scores: dict[str, float | None], gate: float) -> dict[str, float]:
    """The answers the shipped judge combines under ``gate`` (0: the ungated judge): those that
    apply, and below the gate its zeros."""
    s = {q: v for q, v in scores.items() if v is not None}
    if gate > 0 and s.get("plain") is not None and s["plain"] < gate:
        s = {q: v for q, v in s.items() if q != "extract-other"} | dict.fromkeys(GATED, 0.0)
    return s


def gated_score(scores: dict[str, float | None], gate: float) -> float | None:
    """The shipped judge's score of an item under ``gate`` (0: the ungated judge)."""
    s = gated_answers(scores, gate)
    return combined_score(s) if s else None


def items_of(ground_truth: str, limit: int, seed: int, fit_fraction: float, after: int = 0) -> list[dict]:
    """The bench's items (each once, with its tasks and split), as ``calibrate`` draws them."""
    items: dict[str, dict] = {}
    for task, its in select_items(load_ground_truth(Folder(ground_truth)), TASKS, limit, seed, after).items():
        for it in its:
            prev = items.get(it["item_id"])
            items[it["item_id"]] = {
                "id": it["item_id"],
                "label": bool(it["label"]),
                "tasks": (*(prev["tasks"] if prev else ()), task),
                "split": cal.split_of(it["group"], seed, fit_fraction),
            }
    return list(items.values())


def f1s(items: list[dict], scores: dict[str, float | None], threshold: float) -> list[float]:
    """F1 per task of ``items`` at ``threshold``."""
    out = []
    for t in TASKS:
        sub = [it for it in items if t in it["tasks"]]
        out.append(cal.measure([it["label"] for it in sub], [scores[it["id"]] for it in sub], threshold)["f1"])
    return out


def per_question_arguments(p: argparse.ArgumentParser) -> None:
    """The flags naming the per-question runs and the items they answered (see :func:`answered`)."""
    p.add_argument("--ground-truth", required=True, help="the agents bench's ground truth folder")
    p.add_argument("--runs", required=True, help="folder of the per-question runs on the calibration items")
    p.add_argument("--held-out", default="", help="folder of the per-question runs on --held-out-after 400")
    p.add_argument("--limit", type=int, default=400)
    p.add_argument("--held-out-limit", type=int, default=200)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--fit-fraction", type=float, default=0.5)


def answered(a: argparse.Namespace) -> tuple[list[dict], dict, list[dict], dict]:
    """(calibration items, their answers, held-out items, theirs) named by the flags of
    :func:`per_question_arguments`; no held-out runs: both empty."""
    items = items_of(a.ground_truth, a.limit, a.seed, a.fit_fraction)
    held = items_of(a.ground_truth, a.held_out_limit, a.seed, a.fit_fraction, a.limit) if a.held_out else []
    return items, per_question(Path(a.runs)), held, per_question(Path(a.held_out)) if a.held_out else {}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    per_question_arguments(p)
    p.add_argument("--gates", type=float, nargs="+", default=[0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5])
    a = p.parse_args()
    items, answers, held, held_answers = answered(a)
    fit = [it for it in items if it["split"] == "fit"]
    test = [it for it in items if it["split"] == "test"]
    print(f"{len(items)} calibration items ({len(fit)} fit, {len(test)} test); {len(held)} held-out items")
    print(
        "| gate | items gated | threshold | fit F1 (intrinsic / extrinsic) | test F1 | other fold F1 |"
        + (" held-out F1 |" if held else "")
    )
    print("|---|---|---|---|---|---|" + ("---|" if held else ""))
    for gate in a.gates:
        s = {i: gated_score(sc, gate) for i, sc in answers.items()}
        thr, _ = cal.fit_threshold([it["label"] for it in fit], [s[it["id"]] for it in fit])
        other, _ = cal.fit_threshold([it["label"] for it in test], [s[it["id"]] for it in test])
        gated = sum(1 for it in items if (answers[it["id"]].get("plain") or 0) < gate)
        row = [f"{gate:g}", str(gated), f"{thr:.3f}"]
        row += [" / ".join(f"{x:.3f}" for x in f1s(part, s, t)) for part, t in ((fit, thr), (test, thr), (fit, other))]
        if held:
            hs = {i: gated_score(sc, gate) for i, sc in held_answers.items()}
            row.append(" / ".join(f"{x:.3f}" for x in f1s(held, hs, thr)))
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
