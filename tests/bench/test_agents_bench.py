"""The agents benchmark: ground truth built from real schema.org examples, the metrics against
confusion matrices computed by hand, Cohen's kappa with the paper's tie rule, and one small run
of the embedded model through the Serve app (a handful of verdicts)."""

import json
import re

import pyarrow.parquet as pq
import pytest
from conftest import SCHEMAORG, SERVED_MODEL_ID

from udfs.agents.prompts import load_examples
from udfs.agents_bench import metrics as bm
from udfs.agents_bench.groundtruth import (
    build_ground_truth,
    embedding_distance,
    mentions,
    property_name,
    property_text,
    stratified_subset,
)
from udfs.runtime.config import load_config
from udfs.schemaorg.markup import Literal, parse_markup
from udfs.schemaorg.vocab import load_vocabulary
from udfs.scores import confusion as cm
from udfs.scores.matching import embed, normalise

# Cath's Cafe, a job posting, a run with two people, a gift shop (its text has an HTML entity),
# a recipe: short real examples with different markups.
HANDFUL = ("#eg-0382", "#eg-0285", "#eg-0135", "#eg-0015", "#eg-0100")


BENCH, SCORES = load_config().agents_bench, load_config().scores  # conf/pipeline.toml's settings


def build_gt(examples, **kw):
    """build_ground_truth with [agents_bench]'s settings and [scores]' embeddings, ``kw`` replacing some."""
    vocab = load_vocabulary()
    settings = dict(
        seed=BENCH.seed,
        distant_max=BENCH.distant_max,
        intrinsic=BENCH.intrinsic,
        max_value_chars=BENCH.max_value_chars,
        distance=embedding_distance(vocab, SCORES),
    )
    return build_ground_truth(examples, vocab, **{**settings, **kw})


@pytest.fixture(scope="module")
def handful():
    by_id = {e.id: e for e in load_examples()}
    return [by_id[i] for i in HANDFUL]


@pytest.fixture(scope="module")
def built(handful):
    return build_gt(handful, seed=7)


def rows_of(rows, example_id, kind):
    return {
        (r["property"], r["value"], r["entity_type"])
        for r in rows
        if r["example_id"] == example_id and r["kind"] == kind
    }


# ---- ground truth ------------------------------------------------------------------------------
def test_positives_are_the_triples_the_text_states(built):
    # Cath's Cafe: the name is in the text; the opening hours, telephone and menu URL are written
    # differently in the markup ("+155501003344" for "555-0100-3344") and are left out.
    assert rows_of(built.factuality, "#eg-0382", "positive") == {
        ("name", "Cath's Cafe", "Restaurant"),
        ("mainEntity", "Cath's Cafe", "WebPage"),  # a node is claimed by its name, as the evaluation asks
    }
    # the node's type goes with its name (the typed questions show it); a literal has none
    assert {
        (r["property"], r["value_type"])
        for r in built.factuality
        if r["example_id"] == "#eg-0382" and r["kind"] == "positive"
    } == {("name", None), ("mainEntity", "Restaurant")}
    # and every claim keeps its subject's other properties (the choice question's options)
    assert {
        (r["property"], tuple(r["siblings"]))
        for r in built.factuality
        if r["example_id"] == "#eg-0382" and r["kind"] == "positive"
    } == {("mainEntity", ()), ("name", ("hasMenu", "openingHours", "telephone"))}
    assert rows_of(built.factuality, "#eg-0285", "positive") == {
        ("title", "Systems Research Engineer", "JobPosting"),
        ("email", "info@example.com", "ContactPoint"),
    }
    # the contact point has no name: no claim of its own (its email is), and the rejects say so
    assert any(
        r["reason"].startswith("a node without a name")
        and r["source"] == "#eg-0285"
        and "applicationContact" in r["raw"]
        for r in built.rejects
    )
    # "&amp;" in the example's pre-markup is the "&" of the name
    assert ("name", "Beachwalk Beachwear & Giftware", "LocalBusiness") in rows_of(
        built.factuality, "#eg-0015", "positive"
    )
    # every positive is also a compliance positive (once per claim), with the property's definition
    fact_pos = [(r["property"], r["value"], r["entity_type"]) for r in built.factuality if r["kind"] == "positive"]
    assert sorted(set(fact_pos)) == sorted(
        (r["property"], r["value"], r["entity_type"]) for r in built.compliance if r["kind"] == "positive"
    )
    for rows, key in (
        (built.factuality, ("text", "property", "value", "entity_type")),
        (built.compliance, ("property", "value", "entity_type")),
    ):
        claims = [tuple(r[k] for k in key) for r in rows]
        assert len(claims) == len(set(claims)) and len({r["item_id"] for r in rows}) == len(rows)
    assert all(r["definition"] for r in built.compliance)
    reasons = {r["reason"] for r in built.rejects}
    assert "value not stated in the example text" in reasons
    c = built.counters
    assert c["triples_read"] == (
        c["factuality_positive"]
        + c["unnamed_nodes"]
        + c["duplicates"]
        + c["rejected_not_schemaorg"]
        + c["rejected_long_value"]
        + c["rejected_not_stated"]
    )


def test_negatives_are_well_formed(built, handful):
    vocab = load_vocabulary()
    by_id = {e.id: e for e in handful}
    values_of = {
        e.id: {
            (t.property, normalise(t.value.text))
            for t in parse_markup(e.jsonld).triples()
            if isinstance(t.value, Literal)
        }
        for e in handful
    }
    intrinsic = [r for r in built.factuality if r["kind"] == "intrinsic"]
    extrinsic = [r for r in built.factuality if r["kind"] == "extrinsic"]
    swapped = [r for r in built.compliance if r["kind"] == "swapped"]
    assert intrinsic and extrinsic and swapped
    assert not any(r["label"] for r in intrinsic + extrinsic + swapped)
    # extrinsic: another example's text, which does not state the value
    for r in extrinsic:
        assert r["text_example_id"] != r["example_id"]
        assert not mentions(r["text"], r["value"]) and not r["value_in_text"]
    # intrinsic and swapped: a value of a distant property of the same markup, not a value the
    # markup gives the property itself; distance recomputed here from the embeddings
    pairs = {(r["property"], r["source_property"]) for r in intrinsic + swapped}
    props = sorted({p for pair in pairs for p in pair})
    vec = dict(
        zip(
            props,
            embed(
                [property_text(p, vocab) for p in props],
                batch_size=SCORES.embedding_batch_size,
                threads=SCORES.embedding_threads,
            ),
        )
    )
    for r in intrinsic + swapped:
        cos = float(vec[r["property"]] @ vec[r["source_property"]])
        assert cos < BENCH.distant_max and r["cosine"] == pytest.approx(cos, abs=1e-3)
        assert (r["source_property"], normalise(r["value"])) in values_of[r["example_id"]]
        assert (r["property"], normalise(r["value"])) not in values_of[r["example_id"]]
        assert r["text"] == by_id[r["example_id"]].text.replace("&amp;", "&")
    # the job posting's title and email are swapped both ways
    assert {("title", "info@example.com"), ("email", "Systems Research Engineer")} <= {
        (r["property"], r["value"]) for r in swapped if r["example_id"] == "#eg-0285"
    }
    for r in swapped:
        assert "Text" in vocab.ranges[r["property"]] and "Text" in vocab.ranges[r["source_property"]]


def test_paper_intrinsic_negatives_take_the_furthest_name_of_the_same_kind(built, handful):
    # The authors' rule, checked against a reference computed here: the candidates of a claim are
    # the literal values of the example's other properties that its text states (the positives),
    # of the same kind (both properties take Text, or both values numbers, or both strings);
    # the one chosen is of the property whose name embeds furthest from the claim's.
    vocab = load_vocabulary()
    paper = build_gt(handful, seed=7, intrinsic="paper", name_distance=embedding_distance(vocab, SCORES, property_name))
    literal = {
        e.id: {(t.property, t.value.text) for t in parse_markup(e.jsonld).triples() if isinstance(t.value, Literal)}
        for e in handful
    }
    stated = {(r["example_id"], r["property"], r["value"]) for r in paper.factuality if r["kind"] == "positive"}
    intrinsic = [r for r in paper.factuality if r["kind"] == "intrinsic"]
    assert intrinsic and all(not r["label"] for r in intrinsic)
    props = sorted({p for e in handful for p, _ in literal[e.id]})
    vec = dict(
        zip(
            props,
            embed(
                [" ".join(w.lower() for w in re.findall(r"[A-Z]?[a-z0-9]+", p)) for p in props],
                batch_size=SCORES.embedding_batch_size,
                threads=SCORES.embedding_threads,
            ),
        )
    )

    def kind(v):
        try:
            float(v)
            return "number"
        except ValueError:
            return "string"

    def same_kind(p, v, q, w):
        return ("Text" in vocab.ranges.get(p, ()) and "Text" in vocab.ranges.get(q, ())) or kind(v) == kind(w)

    for r in intrinsic:
        ex = r["example_id"]
        own = next(v for p, v in literal[ex] if p == r["property"] and (ex, p, v) in stated)
        cands = {
            (q, w)
            for q, w in literal[ex]
            if q != r["property"] and (ex, q, w) in stated and same_kind(r["property"], own, q, w)
        }
        assert (r["source_property"], r["value"]) in cands
        cos = {q: float(vec[r["property"]] @ vec[q]) for q, _ in cands}
        assert r["cosine"] == pytest.approx(cos[r["source_property"]], abs=1e-3)
        assert cos[r["source_property"]] <= min(cos.values()) + 1e-6
    with pytest.raises(ValueError, match="name_distance"):
        build_gt(handful, intrinsic="paper")
    with pytest.raises(ValueError, match="one of distant, paper"):
        build_gt(handful, intrinsic="furthest")


def test_building_is_deterministic_for_a_seed(built, handful):
    again = build_gt(list(reversed(handful)), seed=7)
    key = lambda rows: sorted(json.dumps(r, sort_keys=True) for r in rows)  # noqa: E731
    assert key(again.factuality) == key(built.factuality) and key(again.compliance) == key(built.compliance)
    sub = stratified_subset(built.factuality, ("positive", "extrinsic"), 6, seed=7)
    assert [r["kind"] for r in sub].count("positive") == 3 and len(sub) == 6
    # the two factuality tasks pick the same positives (they are judged once)
    sub2 = stratified_subset(built.factuality, ("positive", "intrinsic"), 6, seed=7)
    assert [r["item_id"] for r in sub if r["label"]] == [r["item_id"] for r in sub2 if r["label"]]


# ---- metrics -----------------------------------------------------------------------------------
def test_metrics_match_a_confusion_matrix_computed_by_hand():
    labels = [True] * 4 + [False] * 6
    preds = [True, True, True, False, True, False, False, False, False, None]
    c = cm.confusion(labels, preds)
    assert (c.tp, c.fn, c.fp, c.tn, c.unanswered) == (3, 1, 1, 4, 1)
    assert c.precision == pytest.approx(3 / 4) and c.recall == pytest.approx(3 / 4)
    assert c.f1 == pytest.approx(0.75)
    assert c.f1_false == pytest.approx(2 * 4 / (2 * 4 + 1 + 1))  # 0.8
    assert c.balanced_accuracy == pytest.approx((3 / 4 + 4 / 5) / 2)
    # nothing predicted true: precision and F1 are 0, not an error
    none = cm.confusion([True, False], [False, False])
    assert (none.precision, none.f1, none.f1_false) == (0.0, 0.0, pytest.approx(2 / 3))

    scores = [0.9, 0.8, 0.4, 0.2, 0.6, 0.1, 0.3]
    y = [True, True, True, True, False, False, False]
    at = cm.at_threshold(y, scores, 0.5)
    assert (at.tp, at.fn, at.fp, at.tn) == (2, 2, 1, 2)
    sweep = {s["threshold"]: s for s in bm.threshold_sweep(y, scores, [0.15, 0.5, 0.85])}
    assert (sweep[0.15]["tp"], sweep[0.15]["fp"]) == (4, 2) and (sweep[0.85]["tp"], sweep[0.85]["fp"]) == (1, 0)
    # AUROC: of the 12 (positive, negative) pairs the positive scores higher in 3 + 3 + 2 + 1
    assert cm.auroc(y, scores) == pytest.approx(9 / 12)
    assert cm.auroc([True, False], [0.5, 0.5]) == 0.5


def test_iqr_mean_and_consensus_alignment():
    m = bm.iqr_mean([1.0, 2.0, 3.0, 4.0, 100.0, None])
    # Q1 = 2, Q3 = 4, fences [-1, 7]: 100 is dropped
    assert (m.mean, m.kept, m.dropped, m.low, m.high) == (2.5, 4, 1, -1.0, 7.0)
    votes = [{"a": 0.9, "b": 0.8, "c": 0.1}, {"a": 0.2, "b": 0.7, "c": 0.3}, {"a": 0.6, "b": None, "c": 0.9}]
    ca = bm.consensus_alignment(votes, [True, False, True], threshold=0.5)
    assert ca == {
        "a": {"alignment": 1.0, "items": 3},
        "b": {"alignment": 0.5, "items": 2},
        "c": {"alignment": 2 / 3, "items": 3},
    }


def test_task_metrics_of_a_vote():
    from udfs.agents_bench.runner import task_metrics

    def row(label, passed, score, votes, latency, cached=False):
        return {
            "label": label,
            "passed": passed,
            "score": score,
            "votes": json.dumps(votes),
            "requests": 3,
            "from_cache": cached,
            "latency_s": latency,
            "prompt_tokens": 300,
            "cached_prompt_tokens": 100,
            "completion_tokens": 3,
        }

    rows = [
        row(True, True, 1.0, {"a": 0.9, "b": 0.8, "c": 0.7}, 3.0),
        row(True, False, 1 / 3, {"a": 0.6, "b": 0.2, "c": 0.1}, 4.0),
        row(False, False, 0.5, {"a": 0.9, "b": 0.1, "judge:j": 0.2}, 5.0),  # a tie the judge broke
        row(False, False, 0.0, {"a": 0.1, "b": 0.3, "c": 0.2}, 0.0, cached=True),
    ]
    m, sweep, alignment = task_metrics("cfg", "intrinsic", "factuality", 0.5, rows, multi_model=True)
    assert (m["tp"], m["fn"], m["fp"], m["tn"]) == (1, 1, 0, 2) and m["f1"] == pytest.approx(2 / 3)
    # the cached answer took no time: left out of the latency
    assert (m["latency_iqr_mean_s"], m["latency_kept"], m["from_cache"]) == (4.0, 3, 1)
    assert m["prompt_tokens_per_verdict"] == 300 and m["paper_f1"] == 0.901
    ca = {a["model"]: (a["alignment"], a["items"]) for a in alignment}
    assert ca == {"a": (pytest.approx(2 / 4), 4), "b": (1.0, 4), "c": (1.0, 3)}  # the judge is not a voter
    assert len(sweep) == 19 and json.loads(m["consensus_alignment"])["a"] == 0.5


def test_kappa_counts_a_tie_for_both_sides():
    rows = [("human", "human")] * 3 + [("llm", "llm")] * 2 + [("human", "llm"), ("llm", "tie")]
    pairs = bm.rating_pairs(rows)
    # the tie becomes (llm, human) and (llm, llm): 8 pairs, 6 agreements; both marginals 4/4
    assert len(pairs) == 8 and sum(a == b for a, b in pairs) == 6
    assert bm.cohen_kappa(pairs) == pytest.approx((6 / 8 - 0.5) / (1 - 0.5))
    # 18 pages, one tie where MeMR chose the LLM: the table behind a kappa of 0.895
    paper = [("human", "human")] * 9 + [("llm", "llm")] * 8 + [("llm", "tie")]
    assert round(bm.kappa_table(paper)["kappa"], 3) == 0.895
    assert bm.memr_choice(0.8, 0.33) == "human" and bm.memr_choice(0.5, 0.5) == "tie"
    with pytest.raises(ValueError, match="unknown choice"):
        bm.sides("both")


def test_kappa_job_reads_a_votes_table_and_rejects_bad_rows(tmp_path):
    from jobs.agents_bench import AgentsBenchJob

    votes = tmp_path / "votes.csv"
    votes.write_text(
        "page,group,memr_h,memr_l,human_vote\n"
        "p1,gpt4,0.9,0.1,human\np2,gpt4,0.2,0.7,llm\np3,gpt4,0.5,0.6,tie\np4,gpt4,0.3,0.8,human\n"
        "p5,gpt35,0.6,0.4,human\np6,gpt35,0.1,0.9,llm\np7,gpt35,0.4,0.2,maybe\n"
    )
    assert AgentsBenchJob(["kappa", "--input", str(votes), "--output", str(tmp_path / "out")]).main() == 0
    out = {r["group"]: r for r in pq.read_table(tmp_path / "out/agents_bench/kappa/kappa.parquet").to_pylist()}
    # gpt4: pairs HH, LL, (L,H), (L,L), (L,H) -> po 3/5, pe (1*3 + 4*2)/25
    assert out["gpt4"]["pairs"] == 5 and out["gpt4"]["kappa"] == pytest.approx((3 / 5 - 11 / 25) / (1 - 11 / 25))
    assert out["gpt35"]["pages"] == 2 and out["gpt35"]["kappa"] == 1.0
    rej = [json.loads(line) for line in (tmp_path / "out/rejects/agents_bench/kappa.jsonl").read_text().splitlines()]
    assert len(rej) == 1 and "maybe" in rej[0]["reason"]
    run = json.loads((tmp_path / "out/agents_bench/kappa/_run.json").read_text())["counters"]
    assert run == {"rows_read": 7, "rows_rejected": 1, "rows_used": 6, "duplicate_vote_rows": 0}


# ---- a small real run --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def examples_file(tmp_path_factory):
    """A real examples file cut to the handful (the blocks as the schema.org file has them)."""
    raw = (SCHEMAORG / "schemaorg-all-examples.txt").read_text(encoding="utf-8")
    blocks = raw.split("TYPES:")[1:]
    keep = [b for b in blocks if b.split()[0] in HANDFUL]
    assert len(keep) == len(HANDFUL)
    path = tmp_path_factory.mktemp("examples") / "examples.txt"
    path.write_text("".join("TYPES:" + b for b in keep), encoding="utf-8")
    return path


def test_build_job_writes_the_tables_and_prints_counts(examples_file, tmp_path, capsys):
    from jobs.agents_bench import AgentsBenchJob

    assert (
        AgentsBenchJob(["build", "--input", str(examples_file), "--output", str(tmp_path), "--seed", "7"]).main() == 0
    )
    gt = tmp_path / "agents_bench/ground_truth"
    fact, comp = pq.read_table(gt / "factuality.parquet"), pq.read_table(gt / "compliance.parquet")
    assert {"text", "property", "value", "entity_type", "label", "kind"} <= set(fact.schema.names)
    assert "definition" in comp.schema.names and fact.schema.field("label").type == "bool"
    printed = capsys.readouterr().out
    n_pos = sum(k == "positive" for k in fact.column("kind").to_pylist())
    assert f"| factuality | positive | {n_pos} | 785 |" in printed
    run = json.loads((gt / "_run.json").read_text())
    assert run["counters"]["example_blocks"] == len(HANDFUL) and run["counts"]["factuality/positive"] == n_pos


@pytest.mark.model
def test_a_small_run_of_the_embedded_model_writes_the_result_tables(service, examples_file, tmp_path):
    from jobs.agents_bench import AgentsBenchJob

    AgentsBenchJob(["build", "--input", str(examples_file), "--output", str(tmp_path), "--seed", "7"]).main()
    argv = [
        "run",
        "--input",
        str(tmp_path / "agents_bench/ground_truth"),
        "--output",
        str(tmp_path),
        "--base-url",
        service,
        "--verdict-models",
        SERVED_MODEL_ID,
        "--limit",
        "2",
        "--seed",
        "7",
    ]
    assert AgentsBenchJob(argv).main() == 0
    out = next((tmp_path / "agents_bench/results").iterdir())
    assert out.name.startswith(SERVED_MODEL_ID)
    verdicts = pq.read_table(out / "verdicts").to_pylist()
    # 1 positive + 1 intrinsic + 1 extrinsic (the positive shared) + 1 compliance positive + 1 swap
    assert len(verdicts) == 5 and all(0.0 <= v["score"] <= 1.0 for v in verdicts)
    assert all(v["model"] == SERVED_MODEL_ID for v in verdicts)
    # tokens are the engine's work: none for a verdict every answer of which the request cache gave
    # (the compliance question is the factuality judge's complies-ranged request, asked before)
    assert all((v["prompt_tokens"] > 0) == (v["cache_hits"] < v["requests"]) for v in verdicts)
    assert any(v["from_cache"] for v in verdicts) and sum(v["prompt_tokens"] for v in verdicts) > 0
    metrics = {m["task"]: m for m in pq.read_table(out / "metrics.parquet").to_pylist()}
    assert set(metrics) == {"intrinsic", "extrinsic", "compliance"}
    for m in metrics.values():
        assert (m["positives"], m["negatives"], m["n"]) == (1, 1, 2)
        assert m["tp"] + m["fn"] == 1 and m["fp"] + m["tn"] == 1
    assert len(pq.read_table(out / "sweep.parquet")) == 3 * 19
    assert (out / "pr.png").stat().st_size > 0 and "| intrinsic |" in (out / "summary.md").read_text()
    assert "<table>" in (out / "summary.html").read_text()
    # a second run resumes: nothing is asked again and the figures are the same
    first = json.loads((out / "_run.json").read_text())
    assert AgentsBenchJob(argv).main() == 0
    second = json.loads((out / "_run.json").read_text())
    assert first["counters"]["judged_now"] == 5 and second["counters"]["judged_now"] == 0
    assert second["counters"]["already_judged"] == 5
    assert pq.read_table(out / "metrics.parquet").to_pylist() == list(metrics.values())
