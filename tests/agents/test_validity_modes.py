"""The validity agent's two modes (issue 21): the paper's filter, rule by rule, on constructed
markups whose expected output is worked out by hand below; the schemaorg reading's union rule and
its two fixes (URL ranges take any IRI, ``data:`` URIs stay ``data:`` URIs); retired terms; and the
comparison of the modes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from udfs.agents.validity import ModeComparison, ValidityAgent, counted_keys, paper_triples
from udfs.agents.validity.findings import (
    BLANK_PROPERTY,
    DATATYPE,
    MULTI_TYPE,
    RETIRED,
    UNDEFINED_PROPERTY,
    UNDEFINED_TYPE,
    VALUE_STRING,
    VALUE_TYPE,
)
from udfs.runtime.config import load_config
from udfs.schemaorg.markup import Ref, parse_markup

ROOT = Path(__file__).resolve().parents[2]
CONF = load_config().validity


@pytest.fixture(scope="module")
def paper():
    return ValidityAgent("compiled", CONF.strict, CONF.vocab, "paper")


@pytest.fixture(scope="module")
def schemaorg():
    return ValidityAgent("compiled", CONF.strict, CONF.vocab, "schemaorg")


def counted(agent, doc):
    """The paper's triples of one markup: {(property, value, type): (valid, cause)}."""
    res = agent.validate(doc)
    return {
        (r["property"], r["value"], r["entity_type"]): (r["valid"], r["cause"])
        for r in paper_triples(res.markup, res.verdicts)
    }


def share(rows):
    return sum(v for v, _ in rows.values()), len(rows)


# ---- the paper's rules, one constructed markup each --------------------------------------------
def test_multi_type_rule_each_type_closes_the_entity(paper, schemaorg):
    doc = {"@type": ["Recipe", "Product"], "name": "Pie", "recipeIngredient": "flour", "sku": "S1"}
    rows = counted(paper, doc)
    # 3 leaves x 2 types = 6 counted triples. recipeIngredient is no Product property and sku no
    # Recipe property: each is flagged by the other type's closed shape, its leaf removed under
    # both types (-4); name (Thing) stays under both: 6 - 4 = 2 kept.
    assert share(rows) == (2, 6)
    assert rows[("recipeIngredient", "flour", "Recipe")] == (False, MULTI_TYPE)
    assert rows[("sku", "S1", "Product")] == (False, MULTI_TYPE)
    assert rows[("name", "Pie", "Product")] == (True, None)
    # schema.org's union of the two types' properties keeps all 6.
    assert share(counted(schemaorg, doc)) == (6, 6)
    v = {(x.property, x.entity_type): x for x in schemaorg.validate(doc).verdicts}
    assert v[("sku", "Recipe")].valid and "union" in v[("sku", "Recipe")].reason


def test_value_string_removal_takes_every_equal_leaf(paper, schemaorg):
    doc = {
        "@type": "Recipe",
        "name": "Krimcode",
        "krimi": "Krimcode",
        "description": "",
        "recipeYield": "",
        "recipeCategory": "Dessert",
        "foo": "",
        "author": {"@type": "Person", "name": "", "email": ""},
    }
    rows = counted(paper, doc)
    # Counted: Recipe name, krimi, description, recipeYield, recipeCategory, foo (6) + Person name,
    # email (2) = 8; the author link is not counted. Flagged: krimi "Krimcode" and foo "" (undefined
    # properties). Every leaf equal to "Krimcode" (name, krimi) or "" (description, recipeYield,
    # foo, Person name, Person email) goes: 8 - 7 = 1 kept (recipeCategory).
    assert share(rows) == (1, 8)
    assert rows[("krimi", "Krimcode", "Recipe")] == (False, UNDEFINED_PROPERTY)
    assert rows[("name", "Krimcode", "Recipe")] == (False, VALUE_STRING)
    assert rows[("email", "", "Person")] == (False, VALUE_STRING)
    assert rows[("recipeCategory", "Dessert", "Recipe")] == (True, None)
    # schemaorg removes only the two undefined properties' triples: 8 - 2 = 6.
    assert share(counted(schemaorg, doc)) == (6, 8)


def test_flagged_blank_node_removes_the_property_from_every_node(paper, schemaorg):
    doc = {
        "@type": "Recipe",
        "name": "Pie",
        "author": {"@type": "Place", "name": "Paris"},
        "review": {"@type": "Review", "reviewBody": "Good", "author": {"@type": "Person", "name": "Ann"}},
    }
    rows = counted(paper, doc)
    # Counted: Recipe name Pie, Place name Paris, Review reviewBody Good, Person name Ann = 4.
    # The Recipe's author is a Place (author expects Person or Organization): a flagged blank node,
    # so author goes from every node with its subtrees: the Place and, through the Review's author,
    # the Person: 4 - 2 = 2 kept.
    assert share(rows) == (2, 4)
    assert rows[("name", "Paris", "Place")] == (False, VALUE_TYPE)
    assert rows[("name", "Ann", "Person")] == (False, BLANK_PROPERTY)
    # schemaorg removes the wrong author only, with its subtree (the Place: its own verdict stays
    # valid, the cleaned markup and the comparison lose it): 4 - 1 = 3.
    cmp = ModeComparison()
    cmp.add(parse_markup(doc), schemaorg.findings_many([parse_markup(doc)])[0], schemaorg.model)
    assert cmp.disagreements == {("paper", BLANK_PROPERTY): 1}
    assert (cmp.share("paper"), cmp.share("schemaorg")) == (2 / 4, 3 / 4)


def test_an_entity_of_an_undefined_type_is_removed_whole(paper):
    doc = {
        "@graph": [
            {"@type": "Recipee", "name": "Pie", "author": {"@type": "Person", "name": "Jane"}},
            {"@type": "Book", "name": "Pie"},
        ]
    }
    rows = counted(paper, doc)
    # Counted: (name, Pie, Recipee), (name, Jane, Person), (name, Pie, Book) = 3. Recipee is no
    # schema.org type: the entity goes whole, and with it the Person nested under it; an undefined
    # type flags no value, so Book's equal "Pie" stays: 3 - 2 = 1 kept.
    assert share(rows) == (1, 3)
    assert rows[("name", "Pie", "Recipee")] == (False, UNDEFINED_TYPE)
    assert rows[("name", "Jane", "Person")] == (False, UNDEFINED_TYPE)
    assert rows[("name", "Pie", "Book")] == (True, None)
    # One undefined type among several is enough (schemaorg keeps what the other type accepts).
    rows = counted(paper, {"@type": ["Recipe", "Cookbook"], "name": "Pie"})
    assert share(rows) == (0, 2)  # (name, Pie, Recipe), (name, Pie, Cookbook), both removed


def test_a_json_number_where_only_text_is_expected(paper, schemaorg):
    doc = {"@type": "Book", "name": "Ann", "numberOfPages": 224, "bookEdition": "2", "isbn": 12345, "abstract": "12345"}
    rows = counted(paper, doc)
    # Counted: name, numberOfPages, bookEdition, isbn, abstract = 5. isbn expects Text only: the
    # JSON integer 12345 is flagged; the value string "12345" also removes abstract. The integer 224
    # fits numberOfPages (Integer) and the string "2" passes (every range accepts a string):
    # 5 - 2 = 3 kept.
    assert share(rows) == (3, 5)
    assert rows[("isbn", "12345", "Book")] == (False, DATATYPE)
    assert rows[("abstract", "12345", "Book")] == (False, VALUE_STRING)
    assert share(counted(schemaorg, doc)) == (5, 5)  # lenient literals: nothing removed


def test_a_json_number_where_the_range_names_quantitative_value(paper):
    # The paper's shapes give a range naming Number, Float, Integer, QuantitativeValue or
    # QualitativeValue the numeric datatypes (found on its own human markups: an ImageObject's width
    # as a JSON integer, kept by its filter).
    doc = {"@type": "ImageObject", "width": 180, "height": 111.5, "caption": 7, "contentUrl": "https://ex.org/a.png"}
    rows = counted(paper, doc)
    # Counted: width, height, caption, contentUrl = 4. width and height (Distance or
    # QuantitativeValue) take the integer and the float; caption (MediaObject or Text) names none of
    # those types, so the JSON integer 7 is flagged; contentUrl is an IRI where URL is expected:
    # 4 - 1 = 3 kept.
    assert share(rows) == (3, 4)
    assert rows[("width", "180", "ImageObject")] == (True, None)
    assert rows[("height", "111.5", "ImageObject")] == (True, None)
    assert rows[("caption", "7", "ImageObject")] == (False, DATATYPE)


def test_counting_leaves_once_without_links_types_or_ids(paper):
    doc = {
        "@graph": [
            {"@id": "http://ex.org/a", "@type": "Person", "name": "Ann", "knows": {"@id": "http://ex.org/b"}},
            {"@id": "http://ex.org/b", "@type": "Person", "name": "Ann", "sameAs": "http://ex.org/ann"},
        ]
    }
    rows = counted(paper, doc)
    # Leaves: (name, Ann, Person) twice -> once; (sameAs, http://ex.org/ann, Person) an outside IRI.
    # The knows link to a described node, @type and @id are not counted: 2 triples, both kept.
    assert share(rows) == (2, 2)


def test_untyped_entities_are_targeted_by_no_shape(paper):
    rows = counted(paper, {"name": "Orphan", "cookoo": "x"})
    # No type, no closed shape: neither leaf is flagged; 2 counted, 2 kept.
    assert share(rows) == (2, 2)


def test_command_line_paper_mode_lines_are_the_papers_count(tmp_path):
    f = tmp_path / "m.json"
    f.write_text(json.dumps({"@type": ["Recipe", "Product"], "name": "Pie", "recipeIngredient": "flour", "sku": "S1"}))
    run = subprocess.run(
        [sys.executable, "-m", "udfs.agents.validity", "--validity-mode", "paper", str(f)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    lines = [json.loads(x) for x in run.stdout.splitlines()]
    assert (sum(x["valid"] for x in lines), len(lines)) == (2, 6)  # as in the multi-type test
    run = subprocess.run(
        [sys.executable, "-m", "udfs.agents.validity", "--compare-modes", str(f)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    *rows, last = [json.loads(x) for x in run.stdout.splitlines()]
    s = last["summary"]
    assert (s["triples"], s["kept_paper"], s["kept_schemaorg"]) == (6, 2, 6)
    assert s["disagreements"] == {f"removed by paper: {MULTI_TYPE}": 4} and len(rows) == 4


# ---- the paper's own outputs ------------------------------------------------------------------
PAPER_DATA = ROOT / "data" / "llm4schemaorg"


@pytest.fixture(scope="module")
def paper_cache(pset, tmp_path_factory):
    """The manifest's files in a temporary cache, filled offline from the paper's bundle by
    ``data/llm4schemaorg/fetch.py --from`` (its ``fill_cache``); skips without the bundle."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("llm4schemaorg_fetch", PAPER_DATA / "fetch.py")
    fetch = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fetch)
    cache = tmp_path_factory.mktemp("llm4schemaorg-cache")
    assert fetch.fill_cache(cache, pset) == []
    return cache


def test_paper_mode_keeps_what_the_papers_filter_kept(paper, paper_cache):
    """On the paper's markups (data/llm4schemaorg/manifest.tsv: human, GPT-3.5 and GPT-4 markups of
    its corpus with the filtered outputs its pipeline wrote), our paper mode keeps exactly the
    triples the paper's filtered markup holds, counted the paper's way. The exceptions the manifest
    names: ``unfiltered``, the paper's filter left the markup whole although its validation log
    flags triples (the log's keys are joined with "|", the filter splits them on another delimiter,
    so no key matched); ``untyped``, the paper's
    filter kept an untyped blank node that its own (older) log flags and ours flags for its type, so
    ours removes exactly that node's triples besides."""
    import csv

    with open(PAPER_DATA / "manifest.tsv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    assert {r["source"] for r in rows} == {"human", "GPT-3.5", "GPT-4"}
    for r in rows:
        m = parse_markup((paper_cache / r["markup"]).read_text(encoding="utf-8"))
        res = paper.validate(m)
        counted_rows = {(x["property"], x["value"], x["entity_type"] or ""): x for x in paper_triples(m, res.verdicts)}
        ours = {k for k, x in counted_rows.items() if x["valid"]}
        theirs = counted_keys(parse_markup((paper_cache / r["filtered"]).read_text(encoding="utf-8")))
        if r["expect"] == "agree":
            assert ours == theirs, (r["document"], sorted(ours ^ theirs)[:5])
        elif r["expect"] == "unfiltered":
            assert theirs == counted_keys(m) and ours < theirs, r["document"]
        else:
            assert r["expect"] == "untyped", r["expect"]
            assert ours < theirs and {counted_rows[k]["cause"] for k in theirs - ours} == {VALUE_TYPE}, r["document"]


# ---- the schemaorg reading's fixes -------------------------------------------------------------
def test_url_range_takes_any_iri_also_a_typed_nodes_id(schemaorg):
    doc = {
        "@context": "https://schema.org",
        "@type": "Article",
        "headline": "H",
        "url": "https://ex.org/a",
        "mainEntityOfPage": {"@type": "WebPage", "@id": "https://ex.org/a"},
    }
    v = {(x.property, x.value): x for x in schemaorg.validate(doc).verdicts}
    assert v[("url", "https://ex.org/a")].valid  # rejected before the fix (a WebPage is no URL)
    # a typed blank node is still no URL
    bad = {"@type": "Article", "url": {"@type": "WebPage", "name": "x"}}
    assert not next(x for x in schemaorg.validate(bad).verdicts if x.property == "url").valid


def test_compiled_and_pyshacl_agree_on_the_url_fix():
    doc = {
        "@context": "https://schema.org",
        "@type": "Article",
        "url": "https://ex.org/a",
        "mainEntityOfPage": {"@type": "WebPage", "@id": "https://ex.org/a"},
    }
    m = parse_markup(doc)
    a = ValidityAgent("compiled", False, CONF.vocab, "schemaorg").findings_many([m])
    b = ValidityAgent("pyshacl", False, CONF.vocab, "schemaorg").findings_many([m])
    assert a == b and not a[0].bad_values


def test_data_uris_stay_data_uris():
    png = "data:image/png;base64,iVBORw0KGgo="
    m = parse_markup({"@context": "https://schema.org", "@type": "ImageObject", "contentUrl": png, "image": png})
    (e,) = m.entities.values()
    assert e.properties["image"] == [Ref(png)]  # was http://schema.org/dataimage/png;base64,...
    # a term whose IRI ends in a delimiter is still a prefix
    m = parse_markup({"@context": "https://schema.org", "@type": "Thing", "sameAs": "schema:Thing"})
    assert next(iter(m.entities.values())).properties["sameAs"] == [Ref("http://schema.org/Thing")]


def test_retired_terms_are_named_as_such(schemaorg, paper):
    doc = {
        "@type": "Product",
        "name": "Shoe",
        "hasProductReturnPolicy": {"@type": "ProductReturnPolicy", "productReturnDays": 30},
    }
    v = [x for x in schemaorg.validate(doc).verdicts if x.property == "hasProductReturnPolicy"]
    assert [(x.valid, x.cause) for x in v] == [(False, RETIRED)] and "attic" in v[0].reason
    rows = counted(paper, doc)
    # Counted: (name, Shoe, Product), (productReturnDays, 30, ProductReturnPolicy) = 2. The paper's
    # vocabulary still held the attic: the retired property and type pass, a retired type's shape
    # holds the retired properties: both kept. A current property outside Thing's goes.
    assert share(rows) == (2, 2)
    doc["hasProductReturnPolicy"]["refundType"] = "FullRefund"  # MerchantReturnPolicy's, not the attic type's
    rows = counted(paper, doc)
    assert share(rows) == (2, 3) and rows[("refundType", "FullRefund", "ProductReturnPolicy")] == (
        False,
        UNDEFINED_PROPERTY,
    )


def test_the_evaluation_validity_stage_follows_the_mode():
    from udfs.evaluation.evaluator import EvalConfig, PageEvaluator

    conf = load_config()
    doc = {
        "@context": "https://schema.org",
        "@type": ["Recipe", "Product"],
        "name": "Pie",
        "sku": "S1",
        "author": {"@type": "Person", "name": "Ann"},
    }
    page = {"page_key": "k", "page_url": "http://ex.org/pie", "text": "Pie", "human_markup": json.dumps(doc)}
    kept = {}
    for mode in ("schemaorg", "paper"):
        cfg = EvalConfig(
            stages=["validity"],
            judge=configured_judge(conf),
            context_window=conf.evaluate.context_window,
            max_tokens=conf.evaluate.max_tokens,
            max_claims=0,
            early_exit=True,
            validity_engine="compiled",
            validity_strict=False,
            validity_vocab=CONF.vocab,
            validity_mode=mode,
            scores=conf.scores,
        )
        # validity only, human markup only: no model is asked (the address is never reached)
        out = PageEvaluator("http://127.0.0.1:9/v1", cfg, use_served_tokenizer=False).evaluate(page)
        (score,) = out["scores"]
        kept[mode] = (
            score["n_valid"],
            score["n_triples"],
            score.get("n_valid_paper"),
            score.get("n_triples_paper"),
            score.get("n_compliant_paper"),
            json.loads(next(m["markup"] for m in out["markups"] if m["stage"] == "validity")),
        )
    # Rows: name, sku, author x 2 types (Recipe, Product) + the Person's name = 7. Counted the paper's
    # way: the author links are not leaves: (name, Pie) and (sku, S1) under both types + (name, Ann,
    # Person) = 5. The union keeps all 7 rows (no paper counting in the schemaorg mode).
    assert kept["schemaorg"][:5] == (7, 7, None, None, None)
    # The paper's Recipe shape flags sku (the "S1" leaves go under both types) and its Product shape
    # flags author, a blank node: the property goes with the Person under it. Rows: the two name
    # rows are left, 2 of 7; counted the paper's way: (name, Pie) under both types, 2 of 5; no later
    # stage ran, so 2 are left after compliance too.
    assert kept["paper"][:5] == (2, 7, 2, 5, 2)
    assert "sku" not in kept["paper"][5] and kept["schemaorg"][5]["sku"] == "S1"


def test_report_table7_says_which_counting_it_shows(tmp_path):
    """The report's Table 7 over scores of the paper mode counts the paper's way (the n_*_paper
    columns), over the schemaorg mode's the rows, and says which, on a real page's markup."""
    import duckdb
    import pyarrow as pa
    import pyarrow.parquet as pq

    from udfs.evaluation.evaluator import SCORES_SCHEMA, EvalConfig, PageEvaluator, to_table
    from udfs.report.build import COUNTINGS, table7_text, tables, triple_counting

    conf = load_config()
    markup = (
        ROOT
        / "data"
        / "html"
        / "extruct-samples"
        / "songkick"
        / "Elysian Fields Brooklyn Tickets, The Owl Music Parlor, 31 Oct 2015.jsonld"
    ).read_text()
    page = {"page_key": "k", "page_url": "http://ex.org/owl", "text": "", "human_markup": markup}
    for mode in ("paper", "schemaorg"):
        cfg = EvalConfig(
            stages=["validity"],
            judge=configured_judge(conf),
            context_window=conf.evaluate.context_window,
            max_tokens=conf.evaluate.max_tokens,
            max_claims=0,
            early_exit=True,
            validity_engine="compiled",
            validity_strict=False,
            validity_vocab=CONF.vocab,
            validity_mode=mode,
            scores=conf.scores,
        )
        (score,) = PageEvaluator("http://127.0.0.1:9/v1", cfg, use_served_tokenizer=False).evaluate(page)["scores"]
        pq.write_table(to_table([score], SCORES_SCHEMA), tmp_path / f"{mode}.parquet")
        con = duckdb.connect()
        con.register("scores", pq.read_table(tmp_path / f"{mode}.parquet"))
        con.register("strata", pa.table({"page_key": ["k"], "feature": ["f"], "stratum": ["low"]}))
        counting = triple_counting(con)
        (row,) = tables(con, counting)["table7"].to_dict("records")
        if mode == "paper":
            # the validity module's own paper count of the same markup: an independent path
            agent = ValidityAgent("compiled", False, CONF.vocab, "paper")
            res = agent.validate(json.loads(markup)[0] if markup.lstrip().startswith("[") else json.loads(markup))
            rows = paper_triples(res.markup, res.verdicts)
            assert counting == "paper" and score["n_triples_paper"] < score["n_triples"]
            assert (row["triples_in"], row["after_validity"]) == (len(rows), sum(r["valid"] for r in rows))
        else:
            assert counting == "rows" and score.get("n_triples_paper") is None
            assert (row["triples_in"], row["after_validity"]) == (score["n_triples"], score["n_valid"])
        assert table7_text(tables(con, counting)["table7"], counting).endswith(COUNTINGS[counting])


def configured_judge(conf):
    """The judge of [judge] (validity asks no model: no calibration entry is taken)."""
    from udfs.agents.judge import build_judge

    return build_judge(conf.judge, config_file=conf.path, apply_calibration=False)
