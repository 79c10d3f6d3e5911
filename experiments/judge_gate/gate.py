"""Does asking the other text questions only where ``plain`` finds support keep the judge's F1?
(experiments/judge_gate/README.md)

From the per-question runs of the agents bench (``jobs/agents_bench.py run --factuality-questions
Q`` for each question of the shipped judge, one request cache, so every run has the answers the
judge had), the shipped judge's score of every item is recomputed under a gate. The judge is the
configuration's (``--config``, ``udfs.agents.judge.build_judge``) at each gate: where its gating
question (``Judge.gating``, the first about the text) scores below the gate (``Judge.below_gate``),
the text questions after it count 0 and a question that asks past a value read off does not
apply, as the judge scores them. For each gate it prints the threshold fitted on the fit split of
the calibration items (the calibration's own fit, seed and fraction), F1 per task on both splits,
the other fold (fitted on the test split, measured on the fit split) and the items gated; with
``--held-out``, F1 on that sample at each gate's fitted threshold.

The other replays over these runs (judge_order, judge_cascade, vocabulary_compliance,
judge_likelihood) read them and the judge through :func:`answered` and :func:`replayed_judge`.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
from pathlib import Path
from typing import Sequence

import pyarrow.parquet as pq

from udfs.agents import calibration as cal
from udfs.agents.judge import GATED, Judge, build_judge, combined_score
from udfs.agents.questions import FACTUALITY
from udfs.agents_bench.commands import load_ground_truth, select_items
from udfs.runtime.config import load_config
from udfs.runtime.io import Folder
from udfs.runtime.paths import DEFAULT_CONF

TASKS = ("intrinsic", "extrinsic")


def replayed_judge(config: str, **changes) -> Judge:
    """The judge of ``config``'s ``[judge]`` (with ``changes`` to its fields, e.g. another gate),
    made as every job makes it (``udfs.agents.judge.build_judge``). No calibration entry is taken:
    a replay fits its thresholds on the items' scores, as ``calibrate`` does."""
    conf = dataclasses.replace(load_config(config).judge, **changes)
    return build_judge(conf, config_file=config, apply_calibration=False)


def per_question(runs: Path, questions: Sequence[str]) -> dict[str, dict[str, float | None]]:
    """item id -> question -> score, from ``runs/<question>``'s verdicts."""
    out: dict[str, dict[str, float | None]] = collections.defaultdict(dict)
    for q in questions:
        (results,) = (runs / q / "agents_bench" / "results").iterdir()
        for r in pq.read_table(results / "verdicts").to_pylist():
            out[r["item_id"]][q] = r["score"]
    return out


def gated_answers(judge: Judge, scores: dict[str, float | None]) -> dict[str, float]:
    """The answers ``judge`` combines: those that apply, and where its gating question scores
    below the gate, what the judge gives the questions it then leaves unasked (``GATED``: the text
    questions after it score 0; one that asks past a value read off does not apply)."""
    s = {q: v for q, v in scores.items() if v is not None}
    gating = judge.gating()
    if gating is not None and judge.below_gate(s.get(gating.name)):
        order = judge.order()
        unasked = order[order.index(gating) + 1 :]
        s = {q: v for q, v in s.items() if not FACTUALITY[q].asks_past}
        s |= {q.name: GATED[0] for q in unasked if not q.fits and not q.asks_past}
    return s


def gated_score(judge: Judge, scores: dict[str, float | None]) -> float | None:
    """``judge``'s score of an item from its questions' recorded answers (None: none applies)."""
    s = gated_answers(judge, scores)
    return combined_score(s) if s else None


def combined(judge: Judge, text: Sequence[float], fits: float | None) -> float:
    """``judge``'s ``combined_score`` of scores that stand for its questions: ``text`` for its
    questions about the text (at most as many), ``fits`` for its question about the property
    (None: none applies). A study's own score (a batched answer, a likelihood) is combined with
    the judge's answers so, as the judge combines its questions'."""
    order = judge.order()
    stated = [q.name for q in order if not q.fits]
    if len(text) > len(stated):
        raise ValueError(f"{len(text)} text scores: the judge asks {len(stated)} questions about the text")
    scores = dict(zip(stated, text))
    if fits is not None:
        scores[next(q.name for q in order if q.fits)] = fits
    return combined_score(scores)


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
    """The flags naming the per-question runs, the items they answered and the judge they are
    replayed for (see :func:`answered`)."""
    p.add_argument("--ground-truth", required=True, help="the agents bench's ground truth folder")
    p.add_argument("--runs", required=True, help="folder of the per-question runs on the calibration items")
    p.add_argument("--held-out", default="", help="folder of the per-question runs on --held-out-after 400")
    p.add_argument("--limit", type=int, default=400)
    p.add_argument("--held-out-limit", type=int, default=200)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--fit-fraction", type=float, default=0.5)
    p.add_argument(
        "--config",
        default=str(DEFAULT_CONF),
        help="the configuration whose [judge] the runs answered (its questions: one run each) and the replay is of",
    )


def answered(a: argparse.Namespace) -> tuple[list[dict], dict, list[dict], dict]:
    """(calibration items, their answers, held-out items, theirs) named by the flags of
    :func:`per_question_arguments`, one run per question of the configuration's judge; no
    held-out runs: both empty."""
    questions = replayed_judge(a.config).questions("factuality")
    items = items_of(a.ground_truth, a.limit, a.seed, a.fit_fraction)
    held = items_of(a.ground_truth, a.held_out_limit, a.seed, a.fit_fraction, a.limit) if a.held_out else []
    held_answers = per_question(Path(a.held_out), questions) if a.held_out else {}
    return items, per_question(Path(a.runs), questions), held, held_answers


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
        judge = replayed_judge(a.config, factuality_gate=gate)
        gating = judge.gating()
        s = {i: gated_score(judge, sc) for i, sc in answers.items()}
        thr, _ = cal.fit_threshold([it["label"] for it in fit], [s[it["id"]] for it in fit])
        other, _ = cal.fit_threshold([it["label"] for it in test], [s[it["id"]] for it in test])
        # an item without the gating question's answer counts as gated, as one it scores 0
        gated = sum(
            1 for it in items if gating is not None and judge.below_gate(answers[it["id"]].get(gating.name) or 0)
        )
        row = [f"{gate:g}", str(gated), f"{thr:.3f}"]
        row += [" / ".join(f"{x:.3f}" for x in f1s(part, s, t)) for part, t in ((fit, thr), (test, thr), (fit, other))]
        if held:
            hs = {i: gated_score(judge, sc) for i, sc in held_answers.items()}
            row.append(" / ".join(f"{x:.3f}" for x in f1s(held, hs, thr)))
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
