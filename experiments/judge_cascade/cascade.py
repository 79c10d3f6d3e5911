"""Can the judge stop after its first two questions where they make the verdict plain?
(experiments/judge_cascade/README.md)

The shipped judge asks ``plain``, then ``complies-ranged``, then the other text questions, and
stops only where the verdict is decided whatever the rest would answer (early exit: the same
verdicts as asking everything). A cascade stops earlier, with verdicts of its own: after the
first two questions a claim past the gate whose partial score sqrt(plain * complies-ranged)
(``combined_score`` of the two) is below ``lo`` or at least ``hi`` is asked nothing more and keeps
that score, and only the claims in between are asked the rest. This script replays every band on recorded answers: the
per-question runs of the agents bench (experiments/judge_gate's commands: each question of the
shipped judge asked of every item, one request cache) for F1 on the fit, test and held-out items,
and optionally the demo's claims (experiments/judge_order ``--answers``) for the questions asked
on real pages. Each band's threshold is fitted on the fit split, as ``jobs/agents_bench.py
calibrate`` fits a calibration entry. The judge, its order (``Judge.order``) and its gate are the
configuration's (``--config``, built by ``udfs.agents.judge.build_judge``); its first two questions
are ``plain`` (the gating question) and ``complies-ranged``. Counts are questions, not requests, as
in experiments/judge_order.

The same replay gives, for comparison, the judges that drop a text question for every claim
(``plain`` stays: it gates the others): each subset a judge of its own (the configuration's with
those questions), with its own fitted threshold.

    python experiments/judge_cascade/cascade.py --ground-truth $OUT/agents_bench/ground_truth \
        --runs $OUT/gate --held-out $OUT/held [--demo-answers answers.jsonl]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from experiments.judge_gate.gate import answered, f1s, gated_answers, per_question_arguments, replayed_judge
from experiments.judge_order.judge_order import replay
from udfs.agents import calibration as cal
from udfs.agents.judge import Judge, combined_score

SUBSETS = (  # the text questions after plain; extract-other asks past extract-soft-all-near's answer
    ("claim", "extract-soft-all-near"),
    ("extract-soft-all-near", "extract-other"),
    ("extract-soft-all-near",),
    ("claim",),
    (),
)


def judged(judge: Judge, answers: dict[str, float], threshold: float, band=None):
    """(questions asked, score) of one claim (``answers``: the configuration's judge's, the gate's
    zeros in) by ``judge``: its questions asked in its order with early exit, and where ``band`` =
    (lo, hi) is given, stopped after its first two questions where their partial score is outside
    it, with that score. The score does not depend on ``threshold``; the questions asked do. None:
    unanswered."""
    order = [q.name for q in judge.order()]
    answers = {q: v for q, v in answers.items() if q in order}
    lead = order[0]  # the first question about the text: it gates the others
    if lead not in answers:  # unanswered: no verdict, whatever the judge
        return 0, None
    first = {q: answers[q] for q in order[:2] if q in answers}  # complies-ranged may not apply
    if band is not None and not judge.below_gate(answers[lead]):  # the cascade acts on the claims past the gate
        partial = combined_score(first)
        if partial >= band[1] or partial < band[0]:
            return len(first), partial
    asked, _ = replay(judge, order, answers, threshold)
    return len(asked), combined_score(answers)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    per_question_arguments(p)
    p.add_argument("--demo-answers", default="", help="judge_order.py --answers of the demo's claims")
    p.add_argument("--lo", type=float, nargs="+", default=[0, 0.15, 0.2, 0.22, 0.24, 0.26, 0.28])
    p.add_argument("--hi", type=float, nargs="+", default=[0.3, 0.35, 0.4, 0.45, 0.5, 0.6, math.inf])
    a = p.parse_args()
    judge = replayed_judge(a.config)
    items, answers, held, held_answers = answered(a)
    answers = {i: gated_answers(judge, v) for i, v in answers.items()}
    held_answers = {i: gated_answers(judge, v) for i, v in held_answers.items()}
    lines = Path(a.demo_answers).read_text().splitlines() if a.demo_answers else []
    demo = [gated_answers(judge, json.loads(line)) for line in lines]
    fit = [it for it in items if it["split"] == "fit"]
    test = [it for it in items if it["split"] == "test"]
    print(
        f"{len(items)} calibration items ({len(fit)} fit, {len(test)} test); {len(held)} held-out items; "
        f"{len(demo)} demo claims; gate {judge.gate():g}"
    )

    def row(label: str, band=None, asking: Judge = judge) -> tuple[int, list[float]]:
        """Print one judge's row: its threshold fitted on the fit split (as calibrate fits an
        entry), the questions it asks of the fit items at it, F1 per task; (questions, fit F1)."""

        def run(its, ans, threshold):
            out = {it["id"]: judged(asking, ans[it["id"]], threshold, band) for it in its}
            return {i: s for i, (_, s) in out.items()}, sum(n for n, _ in out.values())

        scores, _ = run(fit, answers, 0.5)
        thr, _ = cal.fit_threshold([it["label"] for it in fit], [scores[it["id"]] for it in fit])
        n_fit = run(fit, answers, thr)[1]
        fit_f1 = f1s(fit, scores, thr)
        cells = [label, f"{thr:.3f}", str(n_fit), " / ".join(f"{x:.3f}" for x in fit_f1)]
        cells.append(" / ".join(f"{x:.3f}" for x in f1s(test, run(test, answers, thr)[0], thr)))
        if held:
            cells.append(" / ".join(f"{x:.3f}" for x in f1s(held, run(held, held_answers, thr)[0], thr)))
        if demo:
            n = sum(judged(asking, d, thr, band)[0] for d in demo)
            cells.append(f"{n} ({n / len(demo):.2f} per claim)")
        print("| " + " | ".join(cells) + " |")
        return n_fit, fit_f1

    def header(first: str) -> None:
        cols = [first, "threshold", "questions, fit items", "fit F1 (intrinsic / extrinsic)", "test F1"]
        cols += ["held-out F1"] * bool(held) + ["questions, demo claims"] * bool(demo)
        print("\n| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))

    header("band (lo, hi)")
    shipped = row("shipped: early exit only")
    rows = [(row(f"{lo:g}, {hi:g}", (lo, hi)), (lo, hi)) for lo in a.lo for hi in a.hi if lo < hi]
    # the rule, fixed before the held-out items were read: the band asking the fit items the fewest
    # questions whose fit F1 is at least the shipped judge's on both tasks
    ok = [(n, band) for (n, f1), band in rows if all(x >= b for x, b in zip(f1, shipped[1], strict=True))]
    print(f"\nrule's band: {min(ok)[1] if ok else 'none'} ({min(ok)[0] if ok else '-'} questions of the fit items)")
    header("text questions after `plain` (with `complies-ranged`)")
    for rest in SUBSETS:
        row(
            " ".join(rest) or "none",
            asking=replayed_judge(a.config, factuality_questions=("plain", *rest, "complies-ranged")),
        )


if __name__ == "__main__":
    main()
