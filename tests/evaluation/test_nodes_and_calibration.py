"""Two parts of the evaluator that need no model: a triple whose value is an unnamed node follows
the verdicts of the claims inside that node (and the curated markup keeps the node exactly while
one of them stays), and the calibration file replaces the configured thresholds only where an
entry matches the verdict models and strategy, saying so for the run record."""
import pytest

from udfs.agents import verdicts as agents
from udfs.evaluation.evaluator import EvalConfig, _alive, _value_text, follow_nodes
from udfs.runtime.config import load_config
from udfs.schemaorg.markup import parse_markup, to_jsonld
from udfs.scores import calibration as cal

CONF = load_config()

PRODUCT = {"@context": "https://schema.org", "@type": "Product", "name": "Shoe",
           "offers": {"@type": "Offer", "price": "30", "priceCurrency": "USD",
                      "seller": {"@type": "Organization", "url": "https://shop.example"}},
           "aggregateRating": {"@type": "AggregateRating", "ratingValue": 4.5, "reviewCount": 12}}


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
    verdicts = {"name": True, "price": True, "priceCurrency": False, "url": False, "ratingValue": False,
                "reviewCount": False}
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
    rows, inside = rows_with(m, {"name": True, "price": True, "priceCurrency": True, "url": True,
                                 "ratingValue": True, "reviewCount": True})
    offers = next(r for r in rows if r["property"] == "offers")
    offers["valid"] = False
    follow_nodes(rows, inside, "factuality", "validity")
    assert "factual" not in offers and not _alive(offers, "factuality")


def config(**kw):
    ev = CONF.evaluate
    base = dict(stages=["validity", "factuality", "compliance"], strategy="direct", factuality_threshold=0.5,
                compliance_threshold=0.5, verdict_models=["m"], context_window=ev.context_window,
                max_tokens=ev.max_tokens, max_claims=0, validity_engine="compiled", validity_strict=False,
                validity_vocab=CONF.validity.vocab, validity_mode="schemaorg", scores=CONF.scores)
    return EvalConfig(**{**base, **kw})


def entry(agent, threshold, model="m", strategy="direct"):
    return {"model": model, "agent": agent, "strategy": strategy, "layout": cal.SHARED_PREFIX,
            "threshold": threshold, "knots": {"x": [0.1, 0.9], "y": [0.0, 1.0]}, "seed": 1, "fit_fraction": 0.5,
            "ground_truth_sha256": "g", "fit": {"n": 10}, "test": {"n": 10, "tp": 4, "fn": 1, "tn": 4, "fp": 1,
                                                                 "precision": 0.8, "recall": 0.8, "f1": 0.8,
                                                                 "auroc": 0.9, "tasks": {}}}


def test_the_calibration_replaces_thresholds_only_where_it_matches(tmp_path):
    path = str(tmp_path / "calibration.json")
    cal.write(path, [entry("factuality", 0.31), entry("compliance", 0.27), entry("factuality", 0.7, model="other")])
    cfg = config(calibration=path)
    assert (cfg.factuality_threshold, cfg.compliance_threshold) == (0.31, 0.27)
    rec = cfg.calibration_applied
    assert rec["file"] == path and rec["sha256"] == cal.sha256(path)
    assert rec["agents"]["factuality"]["matched"] and rec["configured_thresholds"] == {"factuality": 0.5,
                                                                                    "compliance": 0.5}
    assert rec["maps"]["factuality"] == {"x": [0.1, 0.9], "y": [0.0, 1.0]}
    # resolved once: a copy of the config keeps what it took
    import dataclasses

    assert dataclasses.replace(cfg).calibration_applied == rec
    # another strategy, an unknown model, the service's default model unnamed, no file
    for other in (config(calibration=path, strategy="guided"), config(calibration=path, verdict_models=["x"]),
                  config(calibration=path, verdict_models=[]), config()):
        assert (other.factuality_threshold, other.compliance_threshold) == (0.5, 0.5)
        assert not other.calibration_applied["agents"]["factuality"]["matched"]
    # the default generator is the service's first model: named, it matches
    assert config(calibration=path, verdict_models=[], served_model="m").factuality_threshold == 0.31
    assert cal.apply_map(cfg.calibration_applied["maps"]["factuality"], 0.5) == pytest.approx(0.5)
    # an entry fitted on other prompts is not taken; one fitted on these is
    stale = str(tmp_path / "stale.json")
    cal.write(stale, [{**entry("factuality", 0.31), "prompts_sha256": "0" * 16},
                      {**entry("compliance", 0.27), "prompts_sha256": agents.prompt_fingerprint("compliance", "direct")}])
    cfg = config(calibration=stale)
    assert (cfg.factuality_threshold, cfg.compliance_threshold) == (0.5, 0.27)
    assert "other prompts" in cfg.calibration_applied["note"]
