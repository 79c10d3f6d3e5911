"""In which order should the judge ask its questions? (experiments/judge_order/README.md)

Early exit stops asking a claim once its verdict is decided whatever the questions left would
answer (``udfs.agents.verdicts.decided``), so every order gives the same verdicts and only the
number of questions asked differs. This script runs ``jobs/evaluate.py`` in this process with
every question asked (``--no-early-exit``, the shipped judge and its calibration otherwise),
records the answers each claim's score combines (``combined_score``'s argument), and then replays
every order of the shipped questions on those answers: the questions a claim is asked before its
verdict is decided, plus the compliance request a claim that passes factuality needs where the
order left ``complies-ranged`` unasked. The gate keeps its meaning in every order (the first
question about the text gates the others), and ``extract-other`` follows a question that reads
the value off. Counts are questions, not requests: a question that asks again
(``extract-soft-all-near``) counts once, and answers the request cache gives count as asked.

    python experiments/judge_order/judge_order.py --input $OUT/pages --output $OUT/judge_order --limit 2 [--answers FILE]
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

from experiments.judge_gate.gate import GATED  # score 0 below the gate; extract-other does not apply
from udfs.agents import verdicts
from udfs.agents.questions import FACTUALITY


def record_answers(argv: list[str]) -> list[dict[str, float]]:
    """Each claim's full answers (question -> score) from an evaluate run in this process."""
    from jobs.evaluate import EvaluateJob

    seen: list[dict[str, float]] = []
    combine = verdicts.combined_score

    def recording(scores: dict[str, float]) -> float:
        seen.append(dict(scores))
        return combine(scores)

    verdicts.combined_score = recording
    try:
        if EvaluateJob(argv).main() != 0:
            raise SystemExit("the evaluate run failed")
    finally:
        verdicts.combined_score = combine
    return seen


def replay(order: list[str], answers: dict[str, float], threshold: float, gate: float) -> tuple[list[str], bool]:
    """(the questions asked, whether the claim passes) when ``order`` is asked with early exit."""
    first = next(q for q in order if not FACTUALITY[q].fits)
    gated = gate > 0 and answers[first] < gate
    asked: dict[str, tuple] = {}
    for n, q in enumerate(order):
        got, rest = dict(asked), [FACTUALITY[r] for r in order[n:]]
        if gated and first in asked:
            got |= {r: verdicts.GATED for r in order[n:] if r in GATED}
            rest = [r for r in rest if r.fits]
        if verdicts.decided(got, rest, threshold):
            break
        if q in answers and not (gated and first in asked and not FACTUALITY[q].fits):
            asked[q] = (answers[q], None, None)
    return list(asked), verdicts.combined_score(answers) >= threshold


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input", required=True, help="a pages table (jobs/pages.py's output)")
    ap.add_argument(
        "--output", required=True, help="the evaluate run's output root (replaced; its request cache is reused)"
    )
    ap.add_argument("--limit", default="2", help="pages evaluated (jobs/evaluate.py --limit)")
    ap.add_argument("--answers", help="also write each claim's recorded answers here (JSON lines: question -> score)")
    a = ap.parse_args(argv)
    answers = record_answers(
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
    judge = json.loads((Path(a.output) / "scores" / "_run.json").read_text())["evaluation"]["judge"]
    threshold, gate = judge["factuality_threshold"], judge["settings"]["factuality_gate"]
    shipped = judge["settings"]["factuality_questions"]
    stated = [q for q in shipped if not FACTUALITY[q].fits]
    shipped_order = [stated[0], *[q for q in shipped if FACTUALITY[q].fits], *stated[1:]]
    rows, fewest = [], [None] * len(answers)
    for order in itertools.permutations(shipped):
        order = list(order)
        if "extract-other" in order and order.index("extract-other") < order.index("extract-soft-all-near"):
            continue  # it asks past the value another question reads off
        if [q for q in order if q in stated][0] != stated[0]:
            continue  # the gating question is the first about the text
        replayed = [replay(order, v, threshold, gate) for v in answers]
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
    two = sum(min(len(replay(shipped_order, v, threshold, gate)[0]), 2) for v in answers)
    print(
        f"| `plain` and `complies-ranged` only (a floor; not these verdicts) | | | {two} | {two / len(answers):.2f} |"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
