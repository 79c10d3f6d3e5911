"""Can the vocabulary answer the compliance question where a property's range decides it?
(experiments/vocabulary_compliance/README.md)

The judge asked ``complies-ranged`` of every claim past the gate: one request and about 70
uncached prompt tokens per claim, with no page text to share. Where a property's range holds
datatypes and no Text (``startDate``: Date or DateTime; ``reviewCount``: Integer), a fitting value
is one of those datatypes' lexical forms, which a rule reads exactly
(:func:`udfs.schemaorg.ranges.range_fits`); and a property whose definition admits any text
(``name``: "The name of the item.", the bench's ``GENERIC_PROPERTIES``) might be taken to fit every
value. This script replays, on answers recorded with every claim asked, judges whose
``complies-ranged`` answer is a rule's where the rule decides (1: fits, 0: does not), so the
question is not asked of those claims:

* ``range``: ``range_fits``, the judge's since;
* ``range+generic``: also 1 for the generic properties.

The answers are the per-question runs of the agents bench (experiments/judge_gate's commands) for
F1 on the fit, test and held-out items, and the demo's claims (experiments/judge_order
``--answers``, with the demo's ``triples`` table for their properties and values, in the same
order) for the questions asked on real pages. Each judge's threshold is fitted on the fit split as
``calibrate`` fits an entry; questions are counted with early exit at it (a rule's answer is not a
question: a claim whose value fails its range is decided with none).

    python experiments/vocabulary_compliance/vocabulary_compliance.py --ground-truth $OUT/agents_bench/ground_truth \
        --runs $OUT/gate --held-out $OUT/held [--demo-answers answers.jsonl --demo-triples $OUT/demo_run/triples]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pyarrow.parquet as pq

from experiments.judge_cascade.cascade import ORDER
from experiments.judge_gate.gate import answered, f1s, gated_answers, per_question_arguments
from experiments.judge_order.judge_order import replay
from udfs.agents.verdicts import combined_score
from udfs.bench.groundtruth import GENERIC_PROPERTIES
from udfs.bench.runner import VALUE_KINDS
from udfs.schemaorg.ranges import LITERAL, range_fits
from udfs.scores import calibration as cal

RULES = ("range", "range+generic")


def rule_answer(rule: str, prop: str, value: str, value_kind: str) -> float | None:
    """A rule's ``complies-ranged`` answer for one ground-truth item (its property, value and
    value kind), or None where the question is asked: ``range``, the judge's
    (:func:`udfs.schemaorg.ranges.range_fits`); ``range+generic``, also 1 for the generic properties."""
    if rule == "range+generic" and prop in GENERIC_PROPERTIES:
        return 1.0
    fits = range_fits(prop, value, VALUE_KINDS.get(value_kind, LITERAL))
    return None if fits is None else float(fits)


def judged(answers: dict[str, float], rule_fits: float | None, threshold: float, gate: float) -> tuple[int, float]:
    """(questions asked, score) of one claim under early exit; ``rule_fits``: the rule's answer
    to ``complies-ranged`` (known before any question), None: the shipped judge's."""
    if rule_fits is None:
        asked, _ = replay(list(ORDER), answers, threshold, gate)
        return len(asked), combined_score(answers)
    answers = answers | {"complies-ranged": rule_fits}
    order = ["complies-ranged", *(q for q in ORDER if q != "complies-ranged")]
    asked, _ = replay(order, answers, threshold, gate)
    return len(asked) - ("complies-ranged" in asked), combined_score(answers)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    per_question_arguments(p)
    p.add_argument("--demo-answers", default="", help="judge_order.py --answers of the demo's claims")
    p.add_argument("--demo-triples", default="", help="the same run's triples table (properties and values)")
    p.add_argument("--gate", type=float, default=0.1, help="[judge] factuality_gate")
    a = p.parse_args()
    items, answers, held, held_answers = answered(a)
    gt = {r["item_id"]: r for r in pq.read_table(Path(a.ground_truth) / "factuality.parquet").to_pylist()}
    answers = {i: gated_answers(v, a.gate) for i, v in answers.items()}
    held_answers = {i: gated_answers(v, a.gate) for i, v in held_answers.items()}
    demo: list[tuple[dict, tuple]] = []
    if a.demo_answers:
        claims = [
            r
            for r in pq.read_table(a.demo_triples).to_pylist()
            if r["factual_score"] is not None and r["factual_score"] == r["factual_score"]
        ]
        lines = Path(a.demo_answers).read_text().splitlines()
        if len(claims) != len(lines):
            raise SystemExit(f"{len(lines)} demo answers, {len(claims)} judged triples: not the same run")
        demo = [
            (gated_answers(json.loads(line), a.gate), (r["property"], r["value"], r["value_kind"]))
            for line, r in zip(lines, claims, strict=True)
        ]
    fit = [it for it in items if it["split"] == "fit"]
    test = [it for it in items if it["split"] == "test"]
    print(
        f"{len(items)} calibration items ({len(fit)} fit, {len(test)} test); {len(held)} held-out items; {len(demo)} demo claims"
    )

    def key(i):
        r = gt[i]
        return r["property"], r["value"], r["value_kind"]

    cols = ["rule", "threshold", "rule-decided (fit items)", "questions, fit items", "fit F1", "test F1"]
    cols += ["held-out F1"] * bool(held) + ["questions, demo claims"] * bool(demo)
    print("\n| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))
    for rule in (None, *RULES):

        def fits(k):
            return None if rule is None else rule_answer(rule, *k)

        def run(its, ans, threshold):
            out = {it["id"]: judged(ans[it["id"]], fits(key(it["id"])), threshold, a.gate) for it in its}
            return {i: s for i, (_, s) in out.items()}, sum(n for n, _ in out.values())

        scores, _ = run(fit, answers, 0.5)
        thr, _ = cal.fit_threshold([it["label"] for it in fit], [scores[it["id"]] for it in fit])
        decided = sum(fits(key(it["id"])) is not None for it in fit)
        cells = [rule or "none (every claim asked)", f"{thr:.3f}", str(decided)]
        cells += [str(run(fit, answers, thr)[1]), " / ".join(f"{x:.3f}" for x in f1s(fit, scores, thr))]
        cells.append(" / ".join(f"{x:.3f}" for x in f1s(test, run(test, answers, thr)[0], thr)))
        if held:
            cells.append(" / ".join(f"{x:.3f}" for x in f1s(held, run(held, held_answers, thr)[0], thr)))
        if demo:
            n = sum(judged(d, fits(k), thr, a.gate)[0] for d, k in demo)
            cells.append(f"{n} ({n / len(demo):.2f} per claim)")
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
