"""Can the property's range answer the question about the property where it decides?
(experiments/vocabulary_compliance/README.md)

The judge asks ``complies-ranged`` of every claim past the gate: one request and about 70 uncached
prompt tokens a claim, with no page text to share. Where a property's range holds datatypes and no
Text (``startDate``: Date or DateTime; ``reviewCount``: Integer; ``url``: URL), whether a value
fits is a reading of its lexical form (:func:`range_fits`). This script replays, on answers
recorded with every question asked, the configuration's judge (``--config``, built by
``udfs.agents.judge.build_judge``: its questions, order and gate) taking the range's answer
instead of asking where it decides: 0 where the value is not of the range's datatypes (no
question at all: the score is 0), and where it is, one of

* ``1``: the question answered "fits" for sure;
* ``not applying``: the question left out, as for a property schema.org does not define (the
  claim's score is the text questions' mean);
* ``fit positives' median``: the model's median ``complies-ranged`` answer over the fit split's
  positives (a constant fitted with the threshold);

and, for comparison, ``1`` for the generic properties too (``name``: "The name of the item.", the
bench's ``GENERIC_PROPERTIES``, which its compliance negatives leave out).

The answers are the per-question runs of the agents bench (experiments/judge_gate's commands) for
F1 on the fit, test and held-out items, and the demo's claims (experiments/judge_order
``--answers``, with the same run's ``triples`` table for their properties and values, in the same
order) for the questions asked on real pages and the verdicts that change. Each judge's threshold
is fitted on the fit split as ``calibrate`` fits an entry; questions are counted with early exit at
it (the range's answer is no question). ``--check`` first compares :func:`range_fits` with Python's
own readers of the datatypes over the literals of schema.org's examples.

    python experiments/vocabulary_compliance/vocabulary_compliance.py --check --ground-truth $OUT/agents_bench/ground_truth \\
        --runs $OUT/gate --held-out $OUT/held --demo-answers $OUT/answers.jsonl --demo-triples $OUT/judge_order/triples
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import re
import statistics
import urllib.parse
from pathlib import Path

import pyarrow.parquet as pq

from experiments.judge_gate.gate import answered, f1s, gated_answers, per_question_arguments, replayed_judge
from experiments.judge_order.judge_order import replay
from udfs.agents import calibration as cal
from udfs.agents import prompts
from udfs.agents.judge import combined_score
from udfs.agents_bench.groundtruth import GENERIC_PROPERTIES
from udfs.schemaorg.markup import Literal, MarkupError, parse_markup
from udfs.schemaorg.shapes import ABSOLUTE_URL, LITERAL_FAMILIES, build_model

# Lexical forms as markup writes them, looser than the strict SHACL reading's (which also checks
# the RDF datatype): JSON-LD numbers often come as strings ("224"), dates at ISO 8601's reduced
# precision ("1998", as schema.org's examples write them), and a date where a date-time is asked.
_NUMBER = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"
_DAY = r"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$"
LEXICAL_FORMS = {
    f: re.compile(p)
    for f, p in {
        **{f: p for f, (_, p) in LITERAL_FAMILIES.items() if p},
        "Integer": r"^[+-]?[0-9]+$",
        "Number": _NUMBER,
        "Float": _NUMBER,
        "Boolean": r"^(?i:true|false)$",
        "Date": r"^[0-9]{4}(-(0[1-9]|1[0-2]))?$|" + _DAY,
        "DateTime": f"(?:{LITERAL_FAMILIES['DateTime'][1]})|(?:{_DAY})",
        "URL": ABSOLUTE_URL,
    }.items()
}
NODE_KINDS = {"entity", "node"}  # the bench's and the triples table's value kinds of a node of the markup
FITS = "complies-ranged"  # the judge's question about the property, which the range's answer stands for


def range_fits(prop: str, text: str, kind: str) -> bool | None:
    """Whether a value fits ``prop`` where the range alone decides, else None: only a range with
    datatypes and no Text decides; a literal of one of their lexical forms fits, an IRI fits where
    URL is in the range, another literal does not unless the range also takes a URL (a relative
    reference) or an entity type (the literal may name it); a node is left to the model."""
    spec = build_model().ranges.get(prop)
    if spec is None or not spec.literal_families or "Text" in spec.literal_families or kind in NODE_KINDS:
        return None
    if kind == "iri":
        return True if spec.link else None
    if any(LEXICAL_FORMS[f].search(text.strip()) for f in spec.literal_families):
        return True
    return None if spec.link or spec.isa else False


def python_reads(family: str, text: str) -> bool:
    """Whether Python's standard library reads ``text`` as a value of a schema.org datatype
    (Time in schema.org's form, hh:mm[:ss])."""
    parsers = {
        "Integer": [int],
        "Number": [float],
        "Float": [float],
        "Boolean": [lambda t: {"true": 1, "false": 0}[t.lower()]],
        "Date": [
            dt.date.fromisoformat,
            lambda t: dt.datetime.strptime(t, "%Y-%m"),
            lambda t: dt.datetime.strptime(t, "%Y"),
        ],
        "DateTime": [dt.datetime.fromisoformat],
        "Time": [lambda t: dt.time.fromisoformat(t if ":" in t else "no colon")],
        "URL": [lambda t: urllib.parse.urlsplit(t).scheme or int("no scheme")],
    }[family]
    for parse in parsers:
        try:
            parse(text)
            return text.lower() not in ("nan", "inf", "-inf", "infinity")
        except (ValueError, KeyError):
            continue
    return False


def check() -> None:
    """range_fits against Python's readers: every literal of a datatype-only property in schema.org's
    examples, judged against every such property (its own and swapped, as the bench swaps values)."""
    ranges = build_model().ranges
    values = set()
    for ex in prompts.load_examples():
        try:
            markup = parse_markup(ex.jsonld)
        except MarkupError:
            continue
        for t in markup.triples():
            spec = ranges.get(t.property)
            if isinstance(t.value, Literal) and spec and spec.literal_families and "Text" not in spec.literal_families:
                values.add((t.property, t.value.text.strip()))
    own = sum(range_fits(p, t, "literal") is True for p, t in values)
    pairs = agree = 0
    for prop in sorted({p for p, _ in values}):
        spec = ranges[prop]
        for text in sorted({t for _, t in values}):
            reads = any(python_reads(f, text) for f in spec.literal_families)
            expected = True if reads else (None if spec.link or spec.isa else False)
            pairs += 1
            agree += range_fits(prop, text, "literal") is expected
    print(f"the examples' {len(values)} literals of datatype-only properties: {own} fit their own property; ")
    print(f"against every such property, {agree} of {pairs} pairs as Python's readers say")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    per_question_arguments(p)
    p.add_argument("--demo-answers", default="", help="judge_order.py --answers of the demo's claims")
    p.add_argument("--demo-triples", default="", help="the same run's triples table (properties and values)")
    p.add_argument("--check", action="store_true", help="first compare range_fits with Python's readers")
    a = p.parse_args()
    if a.check:
        check()
    judge = replayed_judge(a.config)
    order = [q.name for q in judge.order()]
    items, answers, held, held_answers = answered(a)
    gt = {r["item_id"]: r for r in pq.read_table(Path(a.ground_truth) / "factuality.parquet").to_pylist()}
    answers = {i: gated_answers(judge, v) for i, v in answers.items()}
    held_answers = {i: gated_answers(judge, v) for i, v in held_answers.items()}
    fit = [it for it in items if it["split"] == "fit"]
    test = [it for it in items if it["split"] == "test"]
    demo: list[tuple[dict, tuple, str]] = []
    if a.demo_answers:
        # the judged claims: a score that is neither null nor NaN
        rows = pq.read_table(a.demo_triples).to_pylist()
        claims = [r for r in rows if r["factual_score"] is not None and not math.isnan(r["factual_score"])]
        lines = Path(a.demo_answers).read_text().splitlines()
        if len(claims) != len(lines):
            raise SystemExit(f"{len(lines)} demo answers, {len(claims)} judged triples: not the same run")
        demo = [
            (
                gated_answers(judge, json.loads(line)),
                (r["property"], r["value"], r["value_kind"]),
                f"{r['source']} {r['entity_type']} {r['property']} {r['value'][:40]!r}",
            )
            for line, r in zip(lines, claims, strict=True)
        ]
    median = statistics.median(answers[it["id"]][FITS] for it in fit if it["label"] and FITS in answers[it["id"]])
    print(
        f"{len(items)} calibration items ({len(fit)} fit, {len(test)} test); {len(held)} held-out; {len(demo)} demo claims"
    )

    def rule_fits(key: tuple, rule: str) -> bool | None:
        """What ``rule`` says of a claim's value (property, value, kind), None: the model is asked."""
        if rule == "range and generic, 1" and key[0] in GENERIC_PROPERTIES:
            return True
        return None if rule == "none" else range_fits(*key)

    def judged(ans: dict, key: tuple, rule: str, threshold: float) -> tuple[int, float]:
        """(questions asked, score) of one claim under the judge's early exit with ``rule``'s
        answer: the judge's order, and where the rule answers, that answer first (no question)."""
        fits = rule_fits(key, rule)
        asking = list(order)
        if fits and rule == "range, not applying":
            ans = {q: s for q, s in ans.items() if q != FITS}
            asking.remove(FITS)
        elif fits is not None:
            ans = ans | {FITS: (median if rule == "range, fit positives' median" else 1.0) if fits else 0.0}
            asking = [FITS, *(q for q in order if q != FITS)]
        asked, _ = replay(judge, asking, ans, threshold)
        return len(asked) - (fits is not None and FITS in asked), combined_score(ans)

    def key(i: str) -> tuple:
        return gt[i]["property"], gt[i]["value"], gt[i]["value_kind"]

    cols = ["rule", "threshold", "claims it decides (fit)", "questions, fit items", "fit F1", "test F1", "held-out F1"]
    cols += ["questions, demo claims", "demo verdicts that change"] * bool(demo)
    print(
        f"\nfit positives' median complies-ranged: {median:.3f}\n\n| " + " | ".join(cols) + " |\n|" + "---|" * len(cols)
    )
    base = None
    for rule in ("none", "range, 1", "range, not applying", "range, fit positives' median", "range and generic, 1"):

        def run(its, ans, threshold):
            out = {it["id"]: judged(ans[it["id"]], key(it["id"]), rule, threshold) for it in its}
            return {i: s for i, (_, s) in out.items()}, sum(n for n, _ in out.values())

        scores, _ = run(fit, answers, 0.5)
        thr, _ = cal.fit_threshold([it["label"] for it in fit], [scores[it["id"]] for it in fit])
        decided = sum(rule_fits(key(it["id"]), rule) is not None for it in fit)
        cells = [rule, f"{thr:.4f}", str(decided), str(run(fit, answers, thr)[1])]
        cells += [
            " / ".join(f"{x:.3f}" for x in f1s(part, run(part, ans, thr)[0], thr))
            for part, ans in ((fit, answers), (test, answers), (held, held_answers))
        ]
        if demo:
            got = [judged(d, k, rule, thr) for d, k, _ in demo]
            passes = [s >= thr for _, s in got]
            base = base or passes
            n = sum(q for q, _ in got)
            changed = [
                f"{label}: {'pass' if now else 'fail'}"
                for (_, _, label), was, now in zip(demo, base, passes)
                if was != now
            ]
            cells += [f"{n} ({n / len(demo):.2f} per claim)", "; ".join(changed) or "none"]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
