"""Two parts of the evaluator that need no model: a triple whose value is an unnamed node follows
the verdicts of the claims inside that node (and the curated markup keeps the node exactly while
one of them stays), and the judge's thresholds (``udfs.agents.judge.build_judge``): a calibration
entry gives an agent's threshold only where the configuration leaves it "calibrated" and the entry
matches the judge, a number written on the command line or in a configuration file is never
replaced, and the run record says which applied and why the others did not."""

import dataclasses

import pytest

from tests.conftest import ROOT
from udfs.agents import calibration as cal
from udfs.agents import verdicts as agents
from udfs.agents.judge import build_judge
from udfs.agents.questions import prompt_fingerprint
from udfs.evaluation.evaluator import EvalConfig, _alive, _value_text, follow_nodes
from udfs.runtime.config import ConfigError, load_config
from udfs.runtime.judge_record import (
    CALIBRATION,
    COMMAND_LINE,
    CONFIG_FILE,
    FALLBACK,
    JudgeRecord,
    read_judge,
)
from udfs.runtime.paths import project_file, shown_path
from udfs.schemaorg.markup import parse_markup, to_jsonld

CONF = load_config()
CONF_SHOWN = shown_path(CONF.path)  # conf/pipeline.toml, as records name it

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


def judge(*, served_model=None, given=(), apply=True, config_file=None, **kw):
    """The judge of [judge] with ``kw`` over it (plain factuality question, ranged compliance, model
    "m", thresholds "calibrated" as shipped, no calibration file unless given); ``given``: the
    settings the command line gave."""
    settings = dataclasses.replace(
        CONF.judge,
        **{
            "factuality_questions": ("plain",),
            "compliance_questions": ("ranged",),
            "verdict_models": ("m",),
            "calibration": "",
            **kw,
        },
    )
    return build_judge(
        settings,
        config_file=config_file or CONF.path,
        given=given,
        served_model=served_model,
        apply_calibration=apply,
    )


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


# the layout each agent's entries are fitted for in these tests: plain factuality, ranged compliance
LAYOUTS = {"factuality": cal.SHARED_PREFIX, "compliance": cal.layout_key("ranged")}


def entry(agent, threshold, model="m", strategy="direct", layout=None):
    return {
        "model": model,
        "agent": agent,
        "strategy": strategy,
        "layout": layout or LAYOUTS[agent],
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


def thresholds(j):
    return (j.threshold("factuality"), j.threshold("compliance"))


def applied(j, agent="factuality"):
    """The agent's threshold as applied: (value, origin, {source kind: why it did not apply})."""
    t = j.record.agents[agent].threshold
    return t.value, t.origin, {p.kind: p.why for p in t.passed_over}


def test_the_calibration_gives_the_thresholds_only_where_it_matches_and_says_where_each_came_from(tmp_path):
    path = str(tmp_path / "calibration.json")
    cal.write(path, [entry("factuality", 0.31), entry("compliance", 0.27), entry("factuality", 0.7, model="other")])
    j = config(calibration=path).judge
    assert thresholds(j) == (0.31, 0.27)
    value, origin, over = applied(j)
    assert origin.kind == CALIBRATION and origin.file == path and origin.entry == "m factuality direct shared_prefix"
    assert origin.fit["n"] == 10 and origin.fit["groups"] == 4 and origin.fit["ground_truth_sha256"] == "g" * 64
    assert origin.describe() == (
        f"calibration entry m factuality direct shared_prefix of {path}, fitted on 10 items in "
        "4 groups of ground truth gggggggggggg, created 2026-12-01T00:00:00+00:00"
    )
    # why the sources above it did not apply: no flag, the configuration left it to the calibration
    assert over == {COMMAND_LINE: "not given", CONFIG_FILE: f'{CONF_SHOWN} [judge] factuality_threshold = "calibrated"'}
    rec = j.record
    assert rec.calibration_file == path
    assert rec.agents["factuality"].entry["id"] == "m factuality direct shared_prefix"
    assert rec.agents["factuality"].entry["test"]["tp"] == 4
    assert rec.agents["compliance"].entry["id"] == "m compliance direct shared_prefix:ranged"
    assert j.maps["factuality"] == {"x": [0.1, 0.9], "y": [0.0, 1.0]}
    assert cal.apply_map(j.maps["factuality"], 0.5) == pytest.approx(0.5)
    # the record holds each applied value once, and reads back as written
    assert JudgeRecord.from_dict(j.to_record()) == rec
    # another strategy, an unknown model, the service's default model unnamed, no file: the fallback,
    # and why the calibration gave nothing
    for other, why in (
        (judge(calibration=path, strategy="guided"), f"no entry m factuality guided shared_prefix in {path}"),
        (judge(calibration=path, verdict_models=("x",)), f"no entry x factuality direct shared_prefix in {path}"),
        (judge(calibration=path, verdict_models=()), "the verdict model is the service's default"),
        (judge(), "no calibration file configured"),
    ):
        assert thresholds(other) == (CONF.judge.fallback_threshold,) * 2 == (0.5, 0.5)
        value, origin, over = applied(other)
        assert origin.kind == FALLBACK and origin.setting == "[judge] fallback_threshold"
        assert why in over[CALIBRATION] and not other.maps
        assert all(a.entry is None for a in other.record.agents.values())
    # a calibration file named that is not there is an error naming it, never the fallback
    with pytest.raises(ConfigError, match=f"calibration file {tmp_path / 'none.json'} not found"):
        judge(calibration=str(tmp_path / "none.json"))
    # the default generator is the service's first model: named, it matches
    assert judge(calibration=path, verdict_models=(), served_model="m").threshold("factuality") == 0.31
    # an entry fitted on other prompts is not taken; one fitted on these is
    stale = str(tmp_path / "stale.json")
    cal.write(
        stale,
        [
            {**entry("factuality", 0.31), "prompts_sha256": "0" * 16},
            {
                **entry("compliance", 0.27),
                "prompts_sha256": prompt_fingerprint("compliance", "direct", None, ["ranged"]),
            },
        ],
    )
    j = judge(calibration=stale)
    assert thresholds(j) == (0.5, 0.27)
    assert "other prompts" in applied(j)[2][CALIBRATION] and applied(j, "compliance")[1].kind == CALIBRATION


def test_build_judge_takes_the_command_line_then_the_config_file_then_the_calibration_then_the_fallback(tmp_path):
    """The precedence of each threshold, per agent: a flag, a number written in the configuration
    file (the shipped one or a user's own), the calibration entry where the file says
    "calibrated", the fallback. A value written anywhere is never replaced by an entry, and the
    record says which applied and why the others did not."""
    path = str(tmp_path / "calibration.json")
    cal.write(path, [entry("factuality", 0.31), entry("compliance", 0.27)])
    # the command line gives a number: it wins over the matching entry
    j = judge(calibration=path, factuality_threshold=0.5, given={"factuality_threshold"})
    assert thresholds(j) == (0.5, 0.27)
    value, origin, over = applied(j)
    assert origin.kind == COMMAND_LINE and origin.flag == "--factuality-threshold"
    assert over == {
        CONFIG_FILE: f"{CONF_SHOWN} [judge] factuality_threshold: the command line wins",
        CALIBRATION: "entry m factuality direct shared_prefix matched; a written threshold wins",
    }
    # nor its map or its test counts: they describe another threshold (the corrected rates need them)
    assert "factuality" not in j.maps and j.record.agents["factuality"].entry is None
    assert j.record.agents["compliance"].entry["id"] == "m compliance direct shared_prefix:ranged"
    # "calibrated" on the command line leaves it to the calibration
    j = judge(calibration=path, given={"factuality_threshold"})
    value, origin, over = applied(j)
    assert (value, origin.kind, over[COMMAND_LINE]) == (0.31, CALIBRATION, "given as calibrated")
    # a number in a configuration file is used as written, whichever file it is
    j = judge(calibration=path, compliance_threshold=0.6)
    value, origin, over = applied(j, "compliance")
    assert (value, origin.kind, origin.file, origin.setting) == (
        0.6,
        CONFIG_FILE,
        CONF_SHOWN,
        "[judge] compliance_threshold",
    )
    assert over[CALIBRATION] == "entry m compliance direct shared_prefix:ranged matched; a written threshold wins"
    assert "compliance" not in j.maps and j.threshold("factuality") == 0.31
    # a calibration run fits the thresholds: it takes no entry, whatever the file holds
    raw = judge(calibration=path, apply=False)
    assert thresholds(raw) == (0.5, 0.5) and not raw.maps
    value, origin, over = applied(raw)
    assert origin.kind == FALLBACK
    assert over[CALIBRATION] == "not applied: calibrate fits thresholds on the raw scores"
    assert all(a.entry is None for a in raw.record.agents.values())


def test_a_threshold_in_a_users_own_config_file_survives_a_matching_calibration_entry(tmp_path):
    """A user's --config file (conf/pipeline.toml copied, factuality_threshold = 0.42): the entry
    for that judge matches and is not taken; the record names the user's file, and says the entry
    matched. A flag wins over both; the agent left "calibrated" takes its entry."""
    from udfs.runtime.config import load_config

    shipped = (ROOT / "conf" / "pipeline.toml").read_text()
    calibration = str(tmp_path / "calibration.json")
    for line in ('factuality_threshold = "calibrated"', 'calibration = "conf/calibration.json"'):
        assert shipped.count(f"\n{line}\n") == 1, line
    own = tmp_path / "my.toml"
    own.write_text(
        shipped.replace('\nfactuality_threshold = "calibrated"\n', "\nfactuality_threshold = 0.42\n").replace(
            '\ncalibration = "conf/calibration.json"\n', f'\ncalibration = "{calibration}"\n'
        )
    )
    user = load_config(own)
    assert user.judge.factuality_threshold == 0.42 and user.judge.calibration == calibration
    # entries fitted for exactly this judge (its questions, gate and prompts) and the model that serves
    keys = build_judge(dataclasses.replace(user.judge, calibration=""), config_file=user.path)
    cal.write(
        calibration,
        [
            {
                **entry(a, t, layout=cal.layout_key(keys.key(a))),
                "prompts_sha256": keys.record.agents[a].prompts_sha256,
            }
            for a, t in (("factuality", 0.31), ("compliance", 0.27))
        ],
    )
    fitted = build_judge(
        dataclasses.replace(user.judge, factuality_threshold="calibrated"), config_file=user.path, served_model="m"
    )
    assert thresholds(fitted) == (0.31, 0.27)  # the entries match this judge
    j = build_judge(user.judge, config_file=user.path, served_model="m")
    assert thresholds(j) == (0.42, 0.27)
    value, origin, over = applied(j)
    assert (origin.kind, origin.file, origin.setting) == (CONFIG_FILE, str(own), "[judge] factuality_threshold")
    factuality_entry = applied(fitted)[1].entry
    assert over == {
        COMMAND_LINE: "not given",
        CALIBRATION: f"entry {factuality_entry} matched; a written threshold wins",
    }
    assert "factuality" not in j.maps and j.record.agents["factuality"].entry is None
    assert applied(j, "compliance")[1].kind == CALIBRATION
    # the run record's block says the same when read back (the reader of the summary and the report)
    assert (
        read_judge({"evaluation": {"judge": j.to_record()}}).agents["factuality"].threshold.origin.kind == CONFIG_FILE
    )
    # a flag wins over both the user's file and the entry
    flagged = build_judge(
        dataclasses.replace(user.judge, factuality_threshold=0.6),
        config_file=user.path,
        given={"factuality_threshold"},
        served_model="m",
    )
    value, origin, over = applied(flagged)
    assert (value, origin.kind) == (0.6, COMMAND_LINE) and CALIBRATION in over
    # calibrate takes no entry: the user's number, and the other agent's fallback
    raw = build_judge(user.judge, config_file=user.path, served_model="m", apply_calibration=False)
    assert thresholds(raw) == (0.42, 0.5) and applied(raw, "compliance")[1].kind == FALLBACK


def test_the_shipped_calibration_gives_the_default_and_the_cheap_judge_their_thresholds():
    """[judge] as shipped, the embedded model serving: both agents take conf/calibration.json's
    entry for the default questions, and the cheap judge (plain alone) its own; the file holds no
    entry that neither takes (a prompt edit without a new calibration fails here)."""
    model = next(e["model"] for e in cal.read(project_file(CONF.judge.calibration))["entries"])
    j = build_judge(CONF.judge, config_file=CONF.path, served_model=model)
    assert (round(j.threshold("factuality"), 3), round(j.threshold("compliance"), 3)) == (0.282, 0.318)
    value, origin, over = applied(j)
    assert origin.kind == CALIBRATION and origin.file == "conf/calibration.json"
    assert origin.entry == (
        "qwen2.5-coder-1.5b factuality direct "
        "shared_prefix:plain+claim+extract-soft-all-near+extract-other^complies-ranged@0.1"
    )
    assert (origin.fit["n"], origin.fit["groups"]) == (297, 121)
    assert applied(j, "compliance")[1].entry == "qwen2.5-coder-1.5b compliance direct shared_prefix:ranged"
    cheap = build_judge(
        dataclasses.replace(CONF.judge, factuality_questions=("plain",)), config_file=CONF.path, served_model=model
    )
    assert applied(cheap)[1].entry == "qwen2.5-coder-1.5b factuality direct shared_prefix"
    assert round(cheap.threshold("factuality"), 3) == 0.288
    taken = {a.entry["id"] for judge_ in (j, cheap) for a in judge_.record.agents.values()}
    assert taken == {cal.entry_id(e) for e in cal.read(project_file(CONF.judge.calibration))["entries"]}


def test_the_judges_identity_names_the_model_that_answers():
    """Where [judge] names no verdict model the service's first answers: another served model is
    another judge (a resume must not mix their verdicts), recorded as such."""
    from udfs.agents.judge import build_judge

    conf = dataclasses.replace(CONF.judge, calibration="")
    a = build_judge(conf, config_file=CONF.path, served_model="model-a")
    b = build_judge(conf, config_file=CONF.path, served_model="model-b")
    assert a.identity() != b.identity() and a.record.served_model == "model-a"
    named = build_judge(dataclasses.replace(conf, verdict_models=("model-a",)), config_file=CONF.path, served_model="x")
    assert named.record.served_model is None and named.record.verdict_models == ("model-a",)
