"""In which order should the judge ask its questions? (experiments/judge_order/README.md)

Early exit stops asking a claim once its verdict is decided whatever the questions left would
answer (``udfs.agents.judge.decided``), so every order gives the same verdicts and only the
number of questions asked differs. This script runs ``jobs/evaluate.py`` in this process with
every question asked (``--no-early-exit``, the shipped judge and its calibration otherwise),
keeps the judge the run built and records the answers each claim's score combines
(``combined_score``'s argument), and then replays every order of that judge's questions on those
answers at its threshold: the questions a claim is asked before its verdict is decided, plus the
compliance request a claim that passes factuality needs where the order left ``complies-ranged``
unasked. The gate keeps its meaning in every order (``Judge.gating``: the first question about the
text gates the others), and ``extract-other`` follows the question that reads the value off; the
judge's own order is ``Judge.order``. Counts are questions, not requests: a question that asks
again (``extract-soft-all-near``) counts once, and answers the request cache gives count as asked.

    python experiments/judge_order/judge_order.py --input $OUT/pages --output $OUT/judge_order --limit 2 [--answers FILE]
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

from udfs.agents import judge as judging
from udfs.agents.judge import GATED, Judge, combined_score, decided
from udfs.agents.questions import FACTUALITY


def record_answers(argv: list[str]) -> tuple[Judge, list[dict[str, float]]]:
    """The judge an evaluate run in this process built (``udfs.agents.judge.build_judge``, from
    its configuration and calibration) and each claim's full answers (question -> score: what
    its ``combined_score`` combined)."""
    from jobs.evaluate import EvaluateJob

    built: list[Judge] = []
    seen: list[dict[str, float]] = []
    combine = judging.combined_score

    class Recording(EvaluateJob):
        def eval_config(self, *args, **kwargs):
            cfg = super().eval_config(*args, **kwargs)
            built.append(cfg.judge)
            return cfg

    def recording(scores: dict[str, float]) -> float:
        seen.append(dict(scores))
        return combine(scores)

    judging.combined_score = recording
    try:
        if Recording(argv).main() != 0:
            raise SystemExit("the evaluate run failed")
    finally:
        judging.combined_score = combine
    return built[-1], seen


def replay(judge: Judge, order: list[str], answers: dict[str, float], threshold: float) -> tuple[list[str], bool]:
    """(the questions asked, whether the claim passes at ``threshold``) when ``judge``'s questions
    are asked in ``order`` with early exit (``decided``), its gate keeping its meaning: once its
    gating question has scored below the gate, the text questions left score 0 unasked (``GATED``)
    and one that asks past a value read off does not apply."""
    gating = judge.gating()
    below = gating is not None and judge.below_gate(answers.get(gating.name))
    asked: dict[str, tuple] = {}
    for n, q in enumerate(order):
        got, rest = dict(asked), [FACTUALITY[r] for r in order[n:]]
        gated = below and gating.name in asked
        if gated:
            got |= {r.name: GATED for r in rest if judge.gate_zeroes(r)}
            rest = [r for r in rest if r.fits]
        if decided(got, rest, threshold):
            break
        if q in answers and not (gated and not FACTUALITY[q].fits):
            asked[q] = (answers[q], None, None)
    return list(asked), combined_score(answers) >= threshold


def orders(judge: Judge) -> list[list[str]]:
    """Every order ``judge`` could ask its questions in: a question that asks past a value read off
    after the question that reads it, and the gating question the first about the text."""
    out = []
    gating = judge.gating()
    for order in itertools.permutations(judge.questions("factuality")):
        qs = [FACTUALITY[q] for q in order]
        if any(q.asks_past and not any(r.reads_value for r in qs[:k]) for k, q in enumerate(qs)):
            continue  # it asks past the value another question reads off
        if gating is not None and next(q for q in qs if not q.fits) is not gating:
            continue  # the gating question is the first about the text
        out.append(list(order))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input", required=True, help="a pages table (jobs/pages.py's output)")
    ap.add_argument(
        "--output", required=True, help="the evaluate run's output root (replaced; its request cache is reused)"
    )
    ap.add_argument("--limit", default="2", help="pages evaluated (jobs/evaluate.py --limit)")
    ap.add_argument("--answers", help="also write each claim's recorded answers here (JSON lines: question -> score)")
    a = ap.parse_args(argv)
    judge, answers = record_answers(
        [
            "--input",
            a.input,
            "--output",
            a.output,
            "--limit",
            a.limit,
            "--no-early-exit",
            "--executor",
            "local",
            "--overwrite",
        ]
    )
    if a.answers:
        Path(a.answers).write_text("".join(json.dumps(v) + "\n" for v in answers))
    threshold, gate = judge.threshold("factuality"), judge.gate()
    shipped_order = [q.name for q in judge.order()]
    rows, fewest = [], [None] * len(answers)
    for order in orders(judge):
        replayed = [replay(judge, order, v, threshold) for v in answers]
        asked = sum(len(qs) for qs, _ in replayed)
        # compliance is asked of the claims that pass; its question is complies-ranged's request
        compliance = sum(1 for qs, passed in replayed if passed and not any(FACTUALITY[q].fits for q in qs))
        rows.append((asked + compliance, asked, compliance, order))
        for k, (qs, passed) in enumerate(replayed):
            cost = len(qs) + (passed and not any(FACTUALITY[q].fits for q in qs))
            fewest[k] = cost if fewest[k] is None else min(fewest[k], cost)
    print(f"{len(answers)} claims judged by {a.output}; threshold {threshold:g}, gate {gate:g}")
    print("| order | questions asked | compliance asked after | total | per claim |")
    print("|---|---|---|---|---|")
    for total, asked, compliance, order in sorted(rows, key=lambda r: (r[0], r[3])):
        print(f"| {' '.join(order)} | {asked} | {compliance} | {total} | {total / len(answers):.2f} |")
    # a bound on any order, even one chosen per claim knowing its answers
    best = sum(fewest)
    print(f"| each claim's own best order (a bound) | | | {best} | {best / len(answers):.2f} |")
    # a floor for any judge that asks plain and complies-ranged of each claim the gate lets past
    # (another judge, with verdicts of its own): every claim stops after them
    two = sum(min(len(replay(judge, shipped_order, v, threshold)[0]), 2) for v in answers)
    print(
        f"| `plain` and `complies-ranged` only (a floor; not these verdicts) | | | {two} | {two / len(answers):.2f} |"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
