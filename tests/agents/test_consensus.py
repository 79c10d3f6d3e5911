"""Several models on one embedded Serve application (conf/serving-consensus.toml: the 1.5B and
0.5B models, one deployment each behind one OpenAI ingress), and the majority vote over them with a
tie-break judge: on real claims of a schema.org example through ``agents.consensus``, and through
``jobs/evaluate.py`` on a real demo page, where every vote lands in ``triples/``. Also: a corrected
triple is marked in ``triples/`` and its corrected value is what the curated markups carry."""

import asyncio
import dataclasses
import json
import statistics

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import DATA, ROOT
from udfs.agents import prompts
from udfs.agents import verdicts as agents
from udfs.agents.judge import build_judge
from udfs.agents.verdicts import voter_model_and_strategy
from udfs.evaluation.evaluator import _with_corrections
from udfs.llm.serving.config import load_serving_conf
from udfs.runtime.config import ConfigError, load_config
from udfs.runtime.judge_record import FALLBACK, read_judge
from udfs.schemaorg.markup import parse_markup, to_jsonld

CONF = ROOT / "conf" / "serving-consensus.toml"
APP = "llm4schema-consensus"
BIG, SMALL = "qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"
EVAL = load_config().judge
THRESHOLD = 0.5
# each voter's judge: the plain question, no gate, a fixed threshold (no calibration to match)
JUDGE = build_judge(
    dataclasses.replace(
        EVAL,
        factuality_questions=("plain",),
        factuality_gate=0.0,
        factuality_threshold=THRESHOLD,
        compliance_threshold=THRESHOLD,
        calibration="",
    ),
    config_file="test.toml",
)
PAGE = DATA / "html" / "extruct-samples" / "songkick" / "elysianfields_1.html"


# ---- no model -----------------------------------------------------------------------------------
def test_models_come_from_the_list_and_inherit_the_embedded_keys():
    models = load_serving_conf(CONF).embedded.models
    assert [m.model_id for m in models] == [BIG, SMALL]
    assert all(m.n_threads == 1 and m.num_cpus == 1 for m in models)
    # without a list, [embedded] itself is the one model (the default conf, unchanged)
    (single,) = load_serving_conf().embedded.models
    assert single.model_id == BIG and single.n_threads == 2
    one = {"model": "qwen2.5-coder-0.5b-instruct-q4_k_m", "model_id": SMALL}
    with pytest.raises(ConfigError, match="unique per model; repeated: \\['qwen2.5-coder-0.5b'\\]"):
        load_serving_conf(CONF, {"embedded": {"models": [one, one]}})
    with pytest.raises(ConfigError, match=r"serving-consensus.toml: \[\[embedded.models\]\] #2 is missing key model\b"):
        load_serving_conf(CONF, {"embedded": {"models": [one, {"model_id": "x"}]}})


def test_a_voter_is_a_model_or_a_model_with_a_strategy():
    assert voter_model_and_strategy(BIG, "direct") == (BIG, "direct")
    assert voter_model_and_strategy(f"{BIG}/fewshot", "direct") == (BIG, "fewshot")
    # a slash that does not end in a strategy is part of the model id (Hugging Face style)
    assert voter_model_and_strategy("Qwen/Qwen2.5-7B", "guided") == ("Qwen/Qwen2.5-7B", "guided")


def test_corrected_literals_are_what_the_curated_markup_carries():
    human = json.loads(_page()["human_markup"])
    human["location"]["name"] = "Hotel Utah Saloon"  # another venue of the page
    markup = parse_markup(human)
    rows = [
        {
            "subject": t.subject,
            "property": t.property,
            "value": getattr(t.value, "text", None),
            "corrected": t.property == "name" and t.entity_type == "Place",
            "corrected_value": "The Owl Music Parlor",
        }
        for t in markup.triples()
    ]
    fixed, applied = _with_corrections(markup, rows)
    assert applied == {("_:b1", "name", "Hotel Utah Saloon"): "The Owl Music Parlor"}
    doc = to_jsonld(fixed)
    assert doc["location"]["name"] == "The Owl Music Parlor" and doc["name"] == "Elysian Fields"
    # everything else is the same markup; the source's markup itself is untouched
    before = to_jsonld(markup)
    assert before["location"].pop("name") == "Hotel Utah Saloon"
    doc["location"].pop("name")
    assert doc == before


# ---- the two models on one Serve application ----------------------------------------------------
@pytest.fixture(scope="module")
def two_models(service):
    """The consensus configuration as a second application on the suite's Serve instance (one Ray
    per test process; Serve has one HTTP port): route prefix /consensus. The suite's Ray has 2 CPUs
    and the default app holds them, so the models ask for none here (they are only busy while this
    module runs; one thread each, n_ctx kept small)."""
    from ray import serve

    from udfs.llm.serving.apps import build_app
    from udfs.llm.serving.process import wait_ready

    conf = load_serving_conf(CONF, {"embedded": {"n_ctx": 2048, "num_cpus": 0}})
    url = service[: -len("/v1")] + "/consensus/v1"
    serve.run(build_app(conf), name=APP, route_prefix="/consensus", blocking=False)
    try:
        wait_ready(url, 300)
        yield url
    finally:
        serve.delete(APP)


@pytest.mark.model
def test_both_models_are_listed_routed_by_name_and_an_unknown_one_is_a_404(two_models):
    import httpx
    from ray import serve

    deployments = serve.status().applications[APP].deployments
    assert {d: s.status for d, s in deployments.items()} == {
        "OpenAIIngress": "HEALTHY",
        f"EmbeddedLLM-{BIG}": "HEALTHY",
        f"EmbeddedLLM-{SMALL}": "HEALTHY",
    }
    listed = httpx.get(f"{two_models}/models").json()["data"]
    assert [m["id"] for m in listed] == [BIG, SMALL] and all(m["max_model_len"] == 2048 for m in listed)
    ask = [{"role": "user", "content": "What is the capital of France? One word."}]
    for model in (BIG, SMALL, None):
        body = {"messages": ask, "max_tokens": 4, **({"model": model} if model else {})}
        resp = httpx.post(f"{two_models}/chat/completions", json=body, timeout=120).json()
        assert resp["model"] == (model or BIG) and "Paris" in resp["choices"][0]["message"]["content"]
    resp = httpx.post(f"{two_models}/chat/completions", json={"model": "gpt-4", "messages": ask}, timeout=30)
    assert resp.status_code == 404
    err = resp.json()["error"]
    assert err["code"] == "model_not_found" and err["param"] == "model" and err["type"] == "invalid_request_error"
    assert "'gpt-4'" in err["message"] and BIG in err["message"] and SMALL in err["message"]


def _example(eid: str) -> prompts.Example:
    return next(e for e in prompts.load_examples() if e.id == eid)


def majority(votes: dict[str, float | None], voters: list[str], threshold: float = THRESHOLD) -> bool | None:
    """The verdict recomputed from the kept votes: the majority of the voters that answered."""
    yes = sum(votes[v] is not None and votes[v] >= threshold for v in voters)
    no = sum(votes[v] is not None and votes[v] < threshold for v in voters)
    return None if yes == no else yes > no


@pytest.mark.model
def test_majority_vote_on_real_claims_keeps_every_vote_and_ties_go_to_the_judge(two_models):
    from udfs.llm.client import LLMClient

    ex = _example("#eg-0013")  # a real recipe: its text and its markup
    doc = ex.jsonld
    # true: values of the example's own markup; false: values of other real examples
    true = [agents.Claim("name", doc["name"], "Recipe"), agents.Claim("recipeYield", doc["recipeYield"], "Recipe")]
    false = [
        agents.Claim("name", _example("#eg-0335").jsonld["name"], "Recipe"),
        agents.Claim("author", "Lupo's Heartbreak Hotel", "Recipe"),
    ]
    claims = true + false
    seen: dict[str, list[agents.Judged]] = {}

    def voter(name, client, strategy=EVAL.strategy):
        async def judge(cl):
            seen[name] = await JUDGE.factuality(client, [ex.text], cl, early_exit=False, strategy=strategy)
            return seen[name]

        return judge

    async def vote():
        big, small = LLMClient(two_models, BIG, timeout_s=600), LLMClient(two_models, SMALL, timeout_s=600)
        try:
            # the judge asks the strong model differently (few-shot) from its direct vote
            return await agents.consensus(
                {BIG: voter(BIG, big), SMALL: voter(SMALL, small)},
                claims,
                judge=voter("judge", big, "fewshot"),
                judge_name=f"judge:{BIG}/fewshot",
            )
        finally:
            await big.aclose()
            await small.aclose()

    out = asyncio.run(vote())
    judge_key = f"judge:{BIG}/fewshot"
    for c, j in zip(claims, out):  # shown with -s: what each model said
        print(f"{c.property}={c.value!r}: votes {j.votes} -> {j.passed} ({j.note or 'majority'})")
    ties = 0
    for k, j in enumerate(out):
        # each voter's own answer, from its own model, is kept as its vote
        for name in (BIG, SMALL):
            assert seen[name][k].error is None and seen[name][k].model == name
            assert j.votes[name] == seen[name][k].score
        decided = majority(j.votes, [BIG, SMALL])
        if decided is None:  # a tie: the judge decided, and the votes and the note say so
            ties += 1
            assert j.votes[judge_key] is not None and j.passed == (j.votes[judge_key] >= THRESHOLD)
            assert agents.TIE_NOTE in j.note
        else:
            assert j.passed == decided and judge_key not in j.votes and not j.note
            assert j.score == pytest.approx(sum(j.votes[v] >= THRESHOLD for v in (BIG, SMALL)) / 2)
        assert j.requests == 2 + (decided is None)
    # the judge was asked about the ties only, in one batch
    assert ties >= 1 and len(seen["judge"]) == ties
    assert seen["judge"][0].model == BIG
    # the strong model separates the true claims from the false ones
    assert statistics.mean(j.votes[BIG] for j in out[:2]) > statistics.mean(j.votes[BIG] for j in out[2:])
    assert not any(j.passed for j in out[2:])


def _page() -> dict:
    """The page's first typed root, its MusicEvent (not the MusicGroup the main-entity rule keeps)."""
    from udfs.corpus.html import PageConfig, process_html
    from udfs.corpus.main_entity import FIRST_TYPED_ROOT_ONLY

    cfg = PageConfig.of(load_config().pages)
    return process_html(PAGE.read_bytes(), "text/html", None, cfg, main_entity=FIRST_TYPED_ROOT_ONLY)


@pytest.mark.model
def test_evaluate_job_writes_every_vote_and_curates_corrected_values(two_models, tmp_path):
    from jobs.evaluate import EvaluateJob

    page = _page()
    human = json.loads(page["human_markup"])
    wrong = "Elysian Woods"  # an intrinsic error: the page's event is Elysian Fields
    human["name"] = wrong
    pages = tmp_path / "pages"
    pages.mkdir()
    pq.write_table(
        pa.Table.from_pylist(
            [
                {
                    "page_url": "http://extruct-samples.example/songkick/elysianfields_1.html",
                    "status": page["status"],
                    "text": page["text"],
                    "human_markup": json.dumps(human),
                    "root_types": page["root_types"],
                }
            ]
        ),
        pages / "part-0.parquet",
    )
    out = tmp_path / "out"
    assert (
        EvaluateJob(
            [
                "--input",
                str(pages),
                "--output",
                str(out),
                "--base-url",
                two_models,
                "--limit",
                "1",
                "--no-generation",
                "--max-claims",
                "1",
                "--context-window",
                "2048",
                "--correct",
                "--verdict-models",
                BIG,
                SMALL,
                "--judge-model",
                BIG,
                "--executor",
                "local",
                "--timeout-s",
                "600",
            ]
        ).main()
        == 0
    )
    run = json.loads((out / "scores" / "_run.json").read_text())
    judge = read_judge(run)
    assert judge.verdict_models == (BIG, SMALL) and judge.judge_model == BIG and run["counters"]["evaluated"] == 1
    # no calibration entry is fitted for these two models voting: each agent's threshold is the fallback
    factual = judge.agents["factuality"].threshold
    assert factual.origin.kind == FALLBACK and factual.value == EVAL.fallback_threshold
    thresholds = {"factual": factual.value, "compliant": judge.threshold("compliance")}
    triples = pq.read_table(out / "triples").to_pylist()
    (score,) = pq.read_table(out / "scores").to_pylist()
    assert pq.read_schema(next((out / "triples").glob("part-*.parquet"))).field("factual_votes").type == pa.map_(
        pa.string(), pa.float64()
    )
    judged = {"factual": 0, "compliant": 0}
    for t in triples:
        for col in judged:
            # a row whose value is an unnamed node is not asked: its verdict follows the claims
            # inside the node, so it has no score and no votes of its own
            if t[col] is None or t[f"{col}_score"] is None:
                continue
            votes = dict(t[f"{col}_votes"] or [])
            print(f"{col} {t['property']}={t['value']!r}: votes {votes} -> {t[col]}, corrected {t['corrected']}")
            judged[col] += 1
            decided = majority(votes, [BIG, SMALL], thresholds[col])
            assert votes[BIG] is not None and votes[SMALL] is not None
            if decided is None:
                assert votes[f"judge:{BIG}"] is not None
                # a corrected claim is re-verified; otherwise the judge's vote is the verdict
                assert t[col] == (votes[f"judge:{BIG}"] >= thresholds[col]) or (col == "factual" and t["corrected"])
            else:
                assert f"judge:{BIG}" not in votes and (t[col] == decided or (col == "factual" and t["corrected"]))
    # the first distinct claim (the event's name) judged by each agent, as asked (the cap keeps the
    # test short); the tie mark is not an undefined-property note
    assert judged == {"factual": 1, "compliant": 1}
    assert score["n_undefined_properties"] == sum(bool(t["compliant_note"]) for t in triples)
    assert all("tie" not in (t["compliant_note"] or "") for t in triples)
    # the wrong name: judged non-factual, corrected from the text, re-verified, marked ...
    (row,) = [t for t in triples if t["property"] == "name" and t["entity_type"] == "MusicEvent"]
    assert row["value"] == wrong and row["corrected"] is True and row["factual"] is True
    assert row["corrected_value"] == "Elysian Fields" and row["corrected_value"] in page["text"]
    assert score["n_corrected"] == sum(bool(t["corrected"]) for t in triples) >= 1
    # ... and the curated markups (from factuality on) carry the corrected value, not the wrong one
    markups = {m["stage"]: json.loads(m["markup"]) for m in pq.read_table(out / "markups").to_pylist() if m["markup"]}
    assert markups["raw"]["name"] == wrong and markups["validity"]["name"] == wrong
    assert markups["factuality"]["name"] == row["corrected_value"]
    if row["compliant"]:
        assert markups["compliance"]["name"] == row["corrected_value"]
    else:
        assert "name" not in markups.get("compliance", {})
