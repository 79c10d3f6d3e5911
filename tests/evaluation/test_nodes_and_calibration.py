"""Two parts of the evaluator that need no model: a triple whose value is an unnamed node follows
the verdicts of the claims inside that node (and the curated markup keeps the node exactly while
one of them stays), and the calibration file replaces the configured thresholds only where an
entry matches the verdict models and strategy, saying so for the run record."""

import dataclasses

import pytest

from udfs.agents import verdicts as agents
from udfs.evaluation.evaluator import EvalConfig, _alive, _value_text, follow_nodes
from udfs.runtime.config import load_config
from udfs.schemaorg.markup import parse_markup, to_jsonld
from udfs.scores import calibration as cal

CONF = load_config()

PRODUCT = {
    "@context": "https://schema.org",
    "@type": "Product",
    "name": "Shoe",
    "offers": {
        "@type": "Offer",
        "price": "30",
        "priceCurrency": "USD",
        "seller": {"@type": "Organization", "url": "https://shop.example"},
    },
    "aggregateRating": {"@type": "AggregateRating", "ratingValue": 4.5, "reviewCount": 12},
}


def rows_with(markup, factual: dict[str, bool]):
    """The evaluator's rows of ``markup`` after validity (all valid), with the factuality verdict
    ``factual[property]`` on each claim row (the verdicts are the input here, not a model's)."""
    claims = agents.claims_of(markup)
    rows = []
    for t, c in zip(markup.triples(), claims):
        r = {"subject": t.subject, "property": t.property, "value": _value_text(t.value), "valid": True, "_claim": c}
        if c is not None:
            r["factual"], r["factual_error"] = factual[t.property], None
        rows.append(r)
    return rows, agents.nested_claims(markup, claims)


def curated(markup, rows, stage):
    alive = {(r["subject"], r["property"], r["value"]) for r in rows if _alive(r, stage)}
    return to_jsonld(markup, keep=lambda s, p, v: (s, p, _value_text(v)) in alive)


def test_a_node_stays_while_a_claim_inside_it_does():
    m = parse_markup(PRODUCT)
    # the price is stated, the currency and the seller's URL are not; no rating claim holds
    verdicts = {
        "name": True,
        "price": True,
        "priceCurrency": False,
        "url": False,
        "ratingValue": False,
        "reviewCount": False,
    }
    rows, inside = rows_with(m, verdicts)
    follow_nodes(rows, inside, "factuality", "validity")
    fate = {r["property"]: r.get("factual") for r in rows}
    assert fate["offers"] is True and fate["aggregateRating"] is False
    assert fate["seller"] is False  # its only claim (url) failed
    doc = curated(m, rows, "factuality")
    assert doc["offers"] == {"@type": "Offer", "price": "30"} and "aggregateRating" not in doc
    # nothing inside the offer holds: the offer goes too
    rows, inside = rows_with(m, {**verdicts, "price": False})
    follow_nodes(rows, inside, "factuality", "validity")
    assert "offers" not in curated(m, rows, "factuality")
    # a deeper claim keeps the chain of nodes above it
    rows, inside = rows_with(m, {**verdicts, "price": False, "url": True})
    follow_nodes(rows, inside, "factuality", "validity")
    assert curated(m, rows, "factuality")["offers"]["seller"]["url"] == {"@id": "https://shop.example"}


def test_a_node_that_did_not_reach_the_stage_is_left_alone():
    m = parse_markup(PRODUCT)
    rows, inside = rows_with(
        m, {"name": True, "price": True, "priceCurrency": True, "url": True, "ratingValue": True, "reviewCount": True}
    )
    offers = next(r for r in rows if r["property"] == "offers")
    offers["valid"] = False
    follow_nodes(rows, inside, "factuality", "validity")
    assert "factual" not in offers and not _alive(offers, "factuality")


CONFIGURED = {f"{a}_threshold": "conf/pipeline.toml [judge]" for a in ("factuality", "compliance")}


def judge(*, served_model=None, origin=CONFIGURED, apply=True, **kw):
    """The resolved judge of [judge] with ``kw`` over it (plain questions, model "m", no calibration
    unless given), its thresholds configured by the file unless ``origin`` says a flag gave them."""
    from udfs.agents.questions import identities

    settings = dataclasses.replace(
        CONF.judge,
        **{
            "factuality_questions": ("plain",),
            "compliance_questions": ("plain",),
            "verdict_models": ("m",),
            "calibration": "",
            **kw,
        },
    )
    return cal.resolve_judge(settings, identities(settings), served_model=served_model, origin=origin, apply=apply)


def config(**kw):
    ev = CONF.evaluate
    return EvalConfig(
        stages=["validity", "factuality", "compliance"],
        judge=judge(**kw),
        context_window=ev.context_window,
        max_tokens=ev.max_tokens,
        max_claims=0,
        early_exit=True,
        validity_engine="compiled",
        validity_strict=False,
        validity_vocab=CONF.validity.vocab,
        validity_mode="schemaorg",
        scores=CONF.scores,
    )


def entry(agent, threshold, model="m", strategy="direct"):
    return {
        "model": model,
        "agent": agent,
        "strategy": strategy,
        "layout": cal.SHARED_PREFIX,
        "threshold": threshold,
        "knots": {"x": [0.1, 0.9], "y": [0.0, 1.0]},
        "seed": 1,
        "fit_fraction": 0.5,
        "ground_truth_sha256": "g" * 64,
        "fit": {"n": 10, "groups": 4},
        "created_at": "2026-12-01T00:00:00+00:00",
        "test": {
            "n": 10,
            "tp": 4,
            "fn": 1,
            "tn": 4,
            "fp": 1,
            "precision": 0.8,
            "recall": 0.8,
            "f1": 0.8,
            "auroc": 0.9,
            "tasks": {},
        },
    }


def test_the_calibration_gives_the_thresholds_only_where_it_matches_and_says_where_each_came_from(tmp_path):
    path = str(tmp_path / "calibration.json")
    cal.write(path, [entry("factuality", 0.31), entry("compliance", 0.27), entry("factuality", 0.7, model="other")])
    j = config(calibration=path).judge
    assert (j.factuality_threshold, j.compliance_threshold) == (0.31, 0.27)
    assert j.provenance["factuality"] == (
        f"0.31 from {path}, entry shared_prefix (m, direct), fitted on 10 items in "
        "4 groups of ground truth gggggggggggg, created 2026-12-01T00:00:00+00:00"
    )
    rec = j.calibration
    assert rec["file"] == path and rec["sha256"] == cal.sha256(path)
    assert rec["agents"]["factuality"]["matched"] and rec["agents"]["compliance"]["matched"]
    assert j.maps["factuality"] == {"x": [0.1, 0.9], "y": [0.0, 1.0]}
    assert cal.apply_map(j.maps["factuality"], 0.5) == pytest.approx(0.5)
    # the configured settings are kept as they were written
    assert (j.settings.factuality_threshold, j.settings.compliance_threshold) == (0.5, 0.5)
    # another strategy, an unknown model, the service's default model unnamed, no file
    for other in (
        judge(calibration=path, strategy="guided"),
        judge(calibration=path, verdict_models=("x",)),
        judge(calibration=path, verdict_models=()),
        judge(),
    ):
        assert (other.factuality_threshold, other.compliance_threshold) == (0.5, 0.5)
        assert not other.calibration["agents"]["factuality"]["matched"] and not other.maps
        assert other.provenance["factuality"].startswith("0.5 from conf/pipeline.toml [judge]; calibration: ")
    assert judge().provenance["compliance"] == (
        "0.5 from conf/pipeline.toml [judge]; calibration: no calibration file configured: the configured thresholds"
    )
    # the default generator is the service's first model: named, it matches
    assert judge(calibration=path, verdict_models=(), served_model="m").factuality_threshold == 0.31
    # an entry fitted on other prompts is not taken; one fitted on these is
    stale = str(tmp_path / "stale.json")
    cal.write(
        stale,
        [
            {**entry("factuality", 0.31), "prompts_sha256": "0" * 16},
            {**entry("compliance", 0.27), "prompts_sha256": agents.prompt_fingerprint("compliance", "direct")},
        ],
    )
    j = judge(calibration=stale)
    assert (j.factuality_threshold, j.compliance_threshold) == (0.5, 0.27)
    assert "other prompts" in j.calibration["note"] and "other prompts" in j.provenance["factuality"]


def test_a_threshold_the_command_line_gives_wins_over_the_calibration(tmp_path):
    path = str(tmp_path / "calibration.json")
    cal.write(path, [entry("factuality", 0.31), entry("compliance", 0.27)])
    j = judge(
        calibration=path,
        factuality_threshold=0.5,
        origin={**CONFIGURED, "factuality_threshold": "--factuality-threshold"},
    )
    assert (j.factuality_threshold, j.compliance_threshold) == (0.5, 0.27)
    assert j.provenance["factuality"].startswith(
        "0.5 from --factuality-threshold (the calibration entry shared_prefix not taken"
    )
    # nor its map or its test counts: they describe another threshold (the corrected rates need them)
    assert "factuality" not in j.maps and not j.calibration["agents"]["factuality"]["matched"]
    assert j.calibration["agents"]["compliance"]["matched"]
    # a calibration run fits the thresholds: it judges at the configured ones, whatever the file holds
    raw = judge(calibration=path, apply=False)
    assert (raw.factuality_threshold, raw.compliance_threshold) == (0.5, 0.5) and not raw.maps
    assert raw.provenance["factuality"] == (
        "0.5 from conf/pipeline.toml [judge]; calibration: not applied: calibrate fits the thresholds on the raw scores"
    )


def test_the_shipped_calibration_gives_the_default_judge_its_thresholds():
    """[judge] as shipped, the embedded model serving: both agents take conf/calibration.json's
    entry for the default questions (a prompt edit without a new calibration fails here)."""
    from udfs.agents.questions import identities
    from udfs.runtime.paths import project_file

    settings = dataclasses.replace(CONF.judge, calibration=project_file(CONF.judge.calibration))
    model = next(e["model"] for e in cal.read(settings.calibration)["entries"])
    j = cal.resolve_judge(settings, identities(settings), served_model=model, origin=CONFIGURED)
    assert (round(j.factuality_threshold, 3), round(j.compliance_threshold, 3)) == (0.282, 0.318)
    assert j.provenance["factuality"].startswith(
        "0.282352 from conf/calibration.json, entry shared_prefix:plain+claim+extract-soft-all-near+extract-other"
        "^complies-ranged@0.1 (qwen2.5-coder-1.5b, direct), fitted on 297 items in 121 groups of ground truth "
    )
    assert j.provenance["compliance"].startswith("0.317921 from conf/calibration.json, entry shared_prefix:ranged")
