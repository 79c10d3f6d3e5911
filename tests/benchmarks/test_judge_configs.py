"""benchmarks/judge_configs.py: the configurations made of others' answers follow the project's
rules, and the reworded questions keep the prefix the engine caches."""
from __future__ import annotations

import asyncio
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import judge_configs as J  # noqa: E402
from udfs.agents import verdicts as V  # noqa: E402

ITEM = {"item_id": "i1", "property": "name", "value": "Blue Bottle", "entity_type": "CafeOrCoffeeShop",
        "text": "Blue Bottle Coffee, 1 Ferry Building, San Francisco."}
PAIRS = [(0.9, 0.7), (0.2, 0.1), (0.7, 0.3), (0.4, 0.8), (0.5, 0.49)]


def _project_consensus(big: float, small: float) -> float:
    def voter(score):
        async def judge(claims):
            return [V.Judged(score, score >= 0.5) for _ in claims]
        return judge

    claims = [V.Claim("name", "x", "Thing")]
    out = asyncio.run(V.consensus({"1.5b": voter(big), "0.5b": voter(small)}, claims, judge=voter(big)))
    return out[0].score


def test_consensus_is_the_projects_vote_with_the_first_model_judging():
    key = ("factuality", "i1")
    for big, small in PAIRS:
        parts = {"direct": {key: {"score": big, "latency_s": 1.0, "prompt_tokens": 10}},
                 "direct-small": {key: {"score": small, "latency_s": 0.5, "prompt_tokens": 10}}}
        row = J.combine("consensus", parts)[key]
        assert row["score"] == _project_consensus(big, small)
        assert row["prompt_tokens"] == 20 and row["latency_s"] == 1.5


def test_phrasings_average_and_a_missing_part_leaves_no_score():
    a, b = ("factuality", "i1"), ("factuality", "i2")
    parts = {"direct": {a: {"score": 0.9}, b: {"score": 0.3}}, "says": {a: {"score": 0.6}, b: {"score": None}},
             "claim": {a: {"score": 0.3}}}
    out = J.combine("phrasings", parts)
    assert abs(out[a]["score"] - 0.6) < 1e-9
    assert out[b]["score"] is None


def test_reworded_questions_share_the_direct_prefix():
    direct = J.messages("direct", "factuality", ITEM)
    for config in ("says", "claim"):
        m = J.messages(config, "factuality", ITEM)
        assert m[0] == direct[0]
        text = direct[1]["content"].rsplit("\n\n", 1)[0]
        assert m[1]["content"].startswith(text) and m[1]["content"] != direct[1]["content"]
        assert "Blue Bottle" in m[1]["content"].rsplit("\n\n", 1)[1]


def test_fewshot_adds_solved_examples_to_the_guided_system_prompt():
    guided, fewshot = J.messages("guided", "factuality", ITEM), J.messages("fewshot", "factuality", ITEM)
    assert fewshot[0]["content"].startswith(guided[0]["content"]) and "Answer: yes" in fewshot[0]["content"]
    assert fewshot[1] == guided[1]


def test_compliance_is_asked_under_each_strategy_and_only_by_those():
    item = {**ITEM, "text": None, "definition": "The name of the item."}
    strategies = [c for c in J.COMPLIANCE_CONFIGS if c not in J.COMPLIANCE_ONLY]
    asked = {c: J.messages(c, "compliance", item) for c in strategies}
    assert len({m[0]["content"] for m in asked.values()}) == len(asked)  # each strategy's own system prompt
    assert all(m[-1]["content"] == asked["direct"][-1]["content"] for m in asked.values())
    assert not set(J.COMPLIANCE_CONFIGS) & {"says", "claim", "defined", "paper", "direct-small", "names"}
    # the compliance-only questions: fits rewords the question; property-of shows neither the
    # property nor its definition; neither asks factuality, and a mean with direct asks compliance only
    fits, named = J.messages("fits", "compliance", item), J.messages("property-of", "compliance", item)
    assert fits[0] == asked["direct"][0] and "The name of the item." in fits[1]["content"]
    assert "Blue Bottle" in named[1]["content"] and "The name of the item." not in str(named)
    assert not J.asks("fits", "factuality") and not J.asks("direct+property-of", "factuality")
    assert J.asks("direct+property-of", "compliance") and not J.asks("names", "compliance")
    assert "Expected type of its values: Text" in J.messages("ranged", "compliance", item)[1]["content"]
    # names shows the value over the page text, never the property; where and exemplified share
    # direct's prefix and change only its question
    names = J.messages("names", "factuality", ITEM)[1]["content"]
    assert "Blue Bottle" in names.rsplit("\n\n", 1)[1] and " name " not in names.rsplit("\n\n", 1)[1]
    direct = J.messages("direct", "factuality", ITEM)
    for c in ("where", "exemplified"):
        m = J.messages(c, "factuality", ITEM)
        assert m[0] == direct[0] and m[1]["content"].rsplit("\n\n", 1)[0] == direct[1]["content"].rsplit("\n\n", 1)[0]


def test_every_mean_of_prompts_names_asked_configurations():
    for name, parts in J.COMBOS.items():
        assert set(parts) <= set(J.MODEL_CONFIGS), name
    a = ("factuality", "i1")
    parts = {p: {a: {"score": s}} for p, s in zip(J.parts_of("phrasings+defined"), (0.9, 0.5, 0.3, 0.1))}
    assert abs(J.combine("phrasings+defined", parts)[a]["score"] - 0.45) < 1e-9


def test_extraction_asks_for_the_property_without_showing_the_value():
    m = J.messages("extract", "factuality", ITEM)
    question = m[1]["content"].rsplit("\n\n", 1)[1]
    assert "name" in question and "CafeOrCoffeeShop" in question and "Blue Bottle" not in question
    assert "Blue Bottle Coffee" in m[1]["content"]  # the page text is there to read it from
    assert "extract" not in J.COMPLIANCE_CONFIGS and J.parts_of("direct+extract") == ("direct", "extract")


def test_any_plus_joined_configurations_are_a_mean_of_those_that_apply():
    assert J.parts_of("phrasings+extract+excerpt") == ("direct", "says", "claim", "extract", "excerpt")
    assert J.parts_of("direct+complies-ranged") == ("direct", "complies-ranged")
    for bad in ("direct+bogus", "bogus", "direct+consensus"):
        try:
            J.parts_of(bad)
        except ValueError as exc:
            assert "bogus" in str(exc) or "vote" in str(exc)
        else:
            raise AssertionError(f"{bad} accepted")
    # excerpt does not apply where the text does not state the value: the mean of the others,
    # as the agent scores it; a part that applies but has no answer still leaves no score
    a, b = ("factuality", "i1"), ("factuality", "i2")
    parts = {"direct": {a: {"score": 0.8}, b: {"score": 0.2}},
             "excerpt": {a: {"score": None, "not_asked": True}, b: {"score": None}}}
    out = J.combine("direct+excerpt", parts)
    assert abs(out[a]["score"] - 0.8) < 1e-9 and out[b]["score"] is None
    # the excerpt question shows the stretch of the text around the value, and none without it
    m = J.messages("excerpt", "factuality", ITEM)
    assert "Blue Bottle Coffee" in m[1]["content"] and "Blue Bottle is the name of this CafeOrCoffeeShop" in \
        m[1]["content"]
    assert J.messages("excerpt", "factuality", {**ITEM, "value": "Green Jar"}) is None


def test_stacking_fits_weights_on_the_fit_split_that_separate_constructed_items():
    """Two parts, the first informative and the second noise: the stacked model weighs the first
    and ranks the test items perfectly, whatever the noise says."""
    import random

    rnd = random.Random(3)
    items, parts = [], {"direct": {}, "says": {}}
    for k in range(200):
        label = k % 2 == 0
        it = {"item_id": f"i{k}", "text_example_id": f"ex{k}", "label": label,
              "kind": "positive" if label else ("intrinsic" if k % 4 == 1 else "extrinsic")}
        items.append(it)
        parts["direct"][("factuality", it["item_id"])] = {"score": (0.8 if label else 0.2) + rnd.uniform(-0.1, 0.1)}
        parts["says"][("factuality", it["item_id"])] = {"score": rnd.uniform(0.05, 0.95)}
    task_items = {"intrinsic": [i for i in items if i["kind"] != "extrinsic"],
                  "extrinsic": [i for i in items if i["kind"] != "intrinsic"]}
    rows = J.stacked(task_items, parts, 42, 0.5, "direct+says")
    weights = rows[-1]["weights"]["direct+says+stacked"]
    assert abs(weights["direct"]) > 3 * abs(weights["says"])
    for r in rows[:-1]:
        assert r["config"] == "direct+says+stacked" and r["auroc"] == 1.0 and r["f1_fit"] == 1.0
