"""Scores: MeMR (LLM4Schema.org), key scores (ScrapeGraphAI-100k) and value matching (BLINKG),
on the paper's worked example, crafted pairs and real schema.org example markup and values."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, SCHEMAORG

from udfs.runtime.config import load_config
from udfs.schemaorg.markup import parse_markup
from udfs.scores import keys as keyscores
from udfs.scores import matching
from udfs.scores.memr import (
    TYPE_PREDICATE,
    MarkupError,
    memr,
    memr_from_counts,
    memr_markups,
    object_counts,
)

EXAMPLES = SCHEMAORG / "schemaorg-all-examples.txt"
SCORES = load_config().scores  # conf/pipeline.toml [scores]: the settings the pipeline scores with
KEYS = dict(ignore_keys=SCORES.ignore_keys, max_order=SCORES.bleu_max_order)
MATCH = matching.settings(SCORES)
_SCRIPT = re.compile(r'<script type="application/ld\+json">(.*?)</script>', re.S)
_SCHEMA_URL = re.compile(r"^https?://(?:www\.)?schema\.org/?$")


def example_markups() -> list[tuple[str, object]]:
    """(example id, parsed JSON-LD) for every JSON-LD block of the bundled schema.org examples."""
    out = []
    for block in EXAMPLES.read_text(encoding="utf-8").split("TYPES: ")[1:]:
        eg = block.split()[0]
        for m in _SCRIPT.finditer(block):
            try:
                out.append((eg, json.loads(m.group(1))))
            except json.JSONDecodeError:
                pass  # a handful of examples carry comments or "..." placeholders
    return out


def counts(markup) -> Counter:
    return object_counts(parse_markup(markup))


# ---- MeMR ------------------------------------------------------------------------------------

# The page: schema.org's banana bread example (eg-0013). The human markup states 12 objects; the
# LLM markup 5, 3 of which the human markup lacks (a nutrition entity, its type, its calories).
HUMAN_BANANA = {
    "@context": "https://schema.org",
    "@type": "Recipe",
    "name": "Mom's World Famous Banana Bread",
    "author": "John Smith",
    "datePublished": "2009-05-08",
    "image": "bananabread.jpg",
    "description": "This classic banana bread recipe comes from my mom -- the walnuts add a nice "
    "texture and flavor to the banana bread.",
    "prepTime": "PT15M",
    "cookTime": "PT1H",
    "recipeYield": "1 loaf",
    "recipeIngredient": ["3 or 4 ripe bananas, smashed", "1 egg", "3/4 cup of sugar"],
}
LLM_BANANA = {
    "@type": "Recipe",
    "name": "Mom's World Famous Banana Bread",
    "nutrition": {"@type": "NutritionInformation", "calories": "240 calories"},
}


def test_memr_paper_worked_example():
    score = memr_markups(HUMAN_BANANA, LLM_BANANA)
    assert (score.human_total, score.model_total, score.merged_total) == (12, 5, 15)
    assert score.h == pytest.approx(0.8)
    assert score.l == pytest.approx(1 / 3)
    # Merged = per-predicate maximum: two types (Recipe from both, NutritionInformation from LLM).
    assert score.merged_counts[TYPE_PREDICATE] == 2
    assert score.merged_counts["recipeIngredient"] == 3
    assert score.merged_counts["nutrition"] == score.merged_counts["calories"] == 1


def test_memr_cli_prints_h_and_l(tmp_path):
    human, model = tmp_path / "human.jsonld", tmp_path / "model.jsonld"
    human.write_text(json.dumps(HUMAN_BANANA))
    model.write_text(json.dumps(LLM_BANANA))  # no @context: read as schema.org
    run = subprocess.run(
        [sys.executable, "-m", "udfs.scores.memr", str(human), str(model)], cwd=ROOT, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert set(out) == {"h", "l"}
    assert out["h"] == pytest.approx(0.8) and out["l"] == pytest.approx(1 / 3)


def test_memr_cli_rejects_bad_input_clearly(tmp_path):
    good, bad = tmp_path / "h.jsonld", tmp_path / "m.jsonld"
    good.write_text(json.dumps(HUMAN_BANANA))
    bad.write_text('{"@type": "Recipe", "name": ')
    run = subprocess.run(
        [sys.executable, "-m", "udfs.scores.memr", str(good), str(bad)], cwd=ROOT, capture_output=True, text=True
    )
    assert run.returncode == 2 and "m.jsonld" in run.stderr and "not JSON" in run.stderr
    missing = subprocess.run(
        [sys.executable, "-m", "udfs.scores.memr", str(good), str(tmp_path / "nope.jsonld")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 2 and "cannot read" in missing.stderr


def test_null_values_are_no_triples():
    c = counts(
        {
            "@type": "Recipe",
            "name": None,
            "description": None,
            "recipeIngredient": [None, "1 egg", None],
            "author": {"@type": "Person", "name": None},
            "nutrition": {"@value": None},
        }
    )
    assert c == Counter({TYPE_PREDICATE: 2, "recipeIngredient": 1, "author": 1})


def test_nested_entities_count_as_objects_and_their_triples_count_too():
    c = counts(
        {
            "@context": "https://schema.org",
            "@type": "Recipe",
            "author": {
                "@type": "Person",
                "name": "John Smith",
                "address": {"@type": "PostalAddress", "addressLocality": "Paris"},
            },
            "nutrition": {"@type": "NutritionInformation", "calories": "240 calories", "fatContent": "9 grams"},
        }
    )
    assert c == Counter(
        {
            TYPE_PREDICATE: 4,
            "author": 1,
            "name": 1,
            "address": 1,
            "addressLocality": 1,
            "nutrition": 1,
            "calories": 1,
            "fatContent": 1,
        }
    )


def test_arrays_are_sets_per_subject_as_in_rdf():
    c = counts(
        {
            "@type": ["Recipe", "HowTo", "Recipe"],
            "recipeIngredient": ["sugar", "sugar", "flour", ["egg", "sugar"]],
            "review": [
                {"@type": "Review", "reviewBody": "good"},
                {"@type": "Review", "reviewBody": "good"},  # two blank reviews: two objects
            ],
            "recipeYield": [8, "8", 8.0],  # a number and a string are two literals; 8 and 8.0 one
        }
    )
    assert c[TYPE_PREDICATE] == 4  # Recipe, HowTo, Review x2 (one per blank node)
    assert c["recipeIngredient"] == 3
    assert c["review"] == 2 and c["reviewBody"] == 2
    assert c["recipeYield"] == 2


def test_graph_and_id_references():
    doc = {
        "@context": "https://schema.org",
        "@graph": [
            {"@type": "Recipe", "@id": "#r", "name": "Banana bread", "author": {"@id": "#john"}},
            {"@type": "Person", "@id": "#john", "name": "John Smith"},
            {"@type": "WebPage", "mainEntity": {"@id": "#r"}, "author": {"@id": "#john"}},
            {"@type": "Person", "@id": "#john", "name": "John Smith"},  # the same node restated
        ],
    }
    c = counts(doc)
    assert c == Counter({TYPE_PREDICATE: 3, "name": 2, "author": 2, "mainEntity": 1})
    # A top-level array of markups reads the same as @graph.
    arr = [{"@context": "https://schema.org", **n} for n in doc["@graph"]]
    assert counts(arr) == c


def test_context_spellings_read_as_schema_org():
    bare = {"@type": "Recipe", "name": "Pie", "recipeIngredient": ["apples"]}
    base = counts(bare)
    for ctx in (
        "https://schema.org",
        "http://schema.org/",
        "https://www.schema.org",
        {"@vocab": "http://schema.org"},
        None,
    ):
        assert counts({"@context": ctx, **bare}) == base, ctx
    # Aliases and prefixes of the official context.
    assert counts({"type": "Recipe", "schema:name": "Pie", "https://schema.org/recipeIngredient": "apples"}) == base
    # Other vocabularies keep their IRI; a term undefined by an inline context is dropped.
    c = counts(
        {
            "@context": [{"@vocab": "http://schema.org/"}, {"og": "http://ogp.me/ns#", "internal": None}],
            "@type": "Recipe",
            "og:title": "Pie",
            "internal": "x",
        }
    )
    assert c == Counter({TYPE_PREDICATE: 1, "http://ogp.me/ns#title": 1})


def test_remote_context_is_never_fetched_and_the_markup_is_refused():
    # MeMR reads with the pipeline's reader: a markup it cannot interpret without fetching has no
    # score, rather than one counted under a guessed vocabulary.
    with pytest.raises(MarkupError, match="not fetched: https://example.org/my-context.jsonld"):
        memr_markups({"@context": "https://example.org/my-context.jsonld", "@type": "Recipe", "name": "Pie"}, [])


def test_memr_edge_cases():
    same = memr_markups(HUMAN_BANANA, HUMAN_BANANA)
    assert same.h == same.l == 1.0
    disjoint = memr_markups(
        {"@type": "Recipe", "name": "Pie"}, {"cookTime": "PT1H", "prepTime": "PT5M", "recipeYield": "1"}
    )
    assert (disjoint.h, disjoint.l) == (pytest.approx(2 / 5), pytest.approx(3 / 5))
    empty = memr_markups({"name": None}, [])
    assert (empty.h, empty.l, empty.merged_total) == (None, None, 0)
    with pytest.raises(MarkupError):
        memr_markups('{"@type": ', [])
    with pytest.raises(MarkupError):
        memr_markups('"just a string"', [])


def test_memr_from_triple_rows_matches_markup_reading():
    """Curated markups arrive as rows of the triples table (one per property value and entity
    type): counted the same way, types from entity_type."""
    rows_h = [
        {"subject": "_:r", "property": "name", "value": "Pie", "entity_type": "Recipe"},
        {"subject": "_:r", "property": "name", "value": "Pie", "entity_type": "HowTo"},
        {"subject": "_:r", "property": "recipeIngredient", "value": "apples", "entity_type": "Recipe"},
        {"subject": "_:r", "property": "recipeIngredient", "value": "apples", "entity_type": "HowTo"},
    ]
    markup_h = {"@type": ["Recipe", "HowTo"], "name": "Pie", "recipeIngredient": "apples"}
    assert object_counts(rows_h) == counts(markup_h)
    rows_l = [("_:x", "name", "Pie", "Recipe")]
    assert memr(rows_h, rows_l).as_dict() == memr_markups(markup_h, {"@type": "Recipe", "name": "Pie"}).as_dict()
    assert memr_from_counts({"a": 2}, {"a": 1, "b": 1}).as_dict() == {
        "h": pytest.approx(2 / 3),
        "l": pytest.approx(2 / 3),
    }


def _rdflib_counts(doc, context) -> Counter:
    from rdflib import RDF, Graph

    from udfs.schemaorg.vocab import schema_local_name

    def local(o):
        if isinstance(o, dict):
            return {k: (context if k == "@context" else local(v)) for k, v in o.items()}
        if isinstance(o, list):
            return [local(v) for v in o]
        return o

    g = Graph()
    g.parse(data=json.dumps(local(doc)), format="json-ld")
    return Counter("rdf:type" if p == RDF.type else (schema_local_name(str(p)) or str(p)) for _, p, _ in g)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_counts_agree_with_rdflib_on_real_schemaorg_examples():
    """The reader against a full JSON-LD processor (rdflib, fed the bundled context so nothing is
    fetched) on the schema.org examples that use the plain schema.org context. Left out: markup
    where rdflib and JSON-LD 1.1 part ways (a string under an IRI-valued property that is no IRI,
    e.g. gameLocation "Beitild's House", which rdflib collapses; "type" beside "@type", which
    JSON-LD 1.1 merges and rdflib overwrites)."""
    context = json.loads((SCHEMAORG / "schemaorgcontext.jsonld").read_text())["@context"]
    id_terms = {k for k, v in context.items() if isinstance(v, dict) and v.get("@type") == "@id"}

    def comparable(doc) -> bool:
        docs = doc if isinstance(doc, list) else [doc]
        if not all(
            isinstance(d, dict) and isinstance(d.get("@context"), str) and _SCHEMA_URL.match(d["@context"])
            for d in docs
        ):
            return False
        text = json.dumps(doc)
        if re.search(r'"@type": [^,}]*, "type"|"type": [^,}]*, "@type"', text):
            return False

        def bad_iri(o) -> bool:
            if isinstance(o, dict):
                return any(
                    (
                        k in id_terms
                        and any(
                            isinstance(x, str) and (" " in x or "'" in x) for x in (v if isinstance(v, list) else [v])
                        )
                    )
                    or bad_iri(v)
                    for k, v in o.items()
                )
            return isinstance(o, list) and any(bad_iri(x) for x in o)

        return not bad_iri(doc)

    docs = [(eg, d) for eg, d in example_markups() if comparable(d)]
    assert len(docs) > 300
    compared = 0
    for eg, doc in docs[::4]:  # a quarter of them keeps the test to seconds
        assert counts(doc) == _rdflib_counts(doc, context), eg
        compared += 1
    assert compared > 75


# ---- key scores ------------------------------------------------------------------------------


def test_flatten_dot_paths_with_array_marker():
    flat = keyscores.flatten(
        {
            "@context": "https://schema.org",
            "@type": "Recipe",
            "nutrition": {"calories": "240 calories", "fatContent": None},
            "recipeIngredient": ["bananas", "egg"],
            "review": [{"author": {"name": "Ann"}}, {"author": {"name": "Bob"}, "tags": [["x"]]}],
            "empty": [],
            "nothing": None,
        },
        SCORES.ignore_keys,
    )
    assert flat == {
        "@type": ["Recipe"],
        "nutrition.calories": ["240 calories"],
        "recipeIngredient[*]": ["bananas", "egg"],
        "review[*].author.name": ["Ann", "Bob"],
        "review[*].tags[*][*]": ["x"],
        "empty[*]": [[]],
    }
    # A model may answer with a bare value or a top-level array: still keys, never a crash.
    assert keyscores.flatten("Recipe", SCORES.ignore_keys) == {"$": ["Recipe"]}
    assert keyscores.flatten([{"name": "Pie"}, None], SCORES.ignore_keys) == {"[*].name": ["Pie"]}
    assert keyscores.key_scores({"@type": "Recipe"}, '"Recipe"', **KEYS).key_f1 == 0.0


def test_key_precision_recall_f1_with_arrays():
    reference = {
        "@context": "https://schema.org",
        "@type": "Recipe",
        "name": "Mom's World Famous Banana Bread",
        "recipeIngredient": ["3 or 4 ripe bananas, smashed", "1 egg", "3/4 cup of sugar"],
        "nutrition": {"@type": "NutritionInformation", "calories": "240 calories", "fatContent": "9 grams"},
        "review": [{"@type": "Review", "author": "Ellie", "reviewRating": {"ratingValue": 1}}],
    }
    prediction = {
        "@type": "Recipe",
        "name": "Banana Bread",
        "recipeIngredient": ["1 egg", "3 or 4 ripe bananas, smashed", "3/4 cup of sugar"],
        "nutrition": {"@type": "NutritionInformation", "calories": "240 calories"},
        "review": [{"@type": "Review", "author": "Ellie"}, {"@type": "Review", "author": "Lucy"}],
        "cookTime": "PT1H",
    }
    s = keyscores.key_scores(json.dumps(reference), json.dumps(prediction), **KEYS)
    # reference keys: @type name recipeIngredient[*] nutrition.@type nutrition.calories
    # nutrition.fatContent review[*].@type review[*].author review[*].reviewRating.ratingValue = 9
    # predicted keys: the same minus fatContent and ratingValue, plus cookTime = 8; shared = 7
    assert (s.n_reference_keys, s.n_predicted_keys, s.n_shared_keys) == (9, 8, 7)
    assert s.key_precision == pytest.approx(7 / 8) and s.key_recall == pytest.approx(7 / 9)
    assert s.key_f1 == pytest.approx(2 * (7 / 8) * (7 / 9) / (7 / 8 + 7 / 9))
    assert s.missing_keys == ["nutrition.fatContent", "review[*].reviewRating.ratingValue"]
    assert s.extra_keys == ["cookTime"]
    v = s.value_scores
    assert v["recipeIngredient[*]"] == 1.0  # set equality: order does not matter
    assert v["review[*].author"] == 0.0  # {Ellie} != {Ellie, Lucy}
    assert v["nutrition.calories"] == 1.0 and v["@type"] == 1.0
    # "Banana Bread" vs "Mom's World Famous Banana Bread": unigrams 2/2, bigrams (1+1)/(1+1), BP e^(1-7/2)
    assert v["name"] == pytest.approx(math.exp(1 - 7 / 2))
    assert s.value_score == pytest.approx(sum(v.values()) / 7)
    assert s.valid_json and 0 < s.json_bleu < 1


def test_value_scores_are_type_aware():
    def vs(reference, prediction, array):
        return keyscores.value_score(reference, prediction, array, SCORES.bleu_max_order)

    assert vs([True], [True], False) == 1.0 and vs([True], [False], False) == 0.0
    assert vs([1], [True], False) == 0.0  # a boolean is not the number 1
    assert vs([8], [8.0], False) == 1.0 and vs([8], ["8"], False) == 0.0 and vs([4.5], [4.6], False) == 0.0
    assert vs(["a", "b"], ["b", "a", "a"], True) == 1.0 and vs(["a", "b"], ["a"], True) == 0.0
    assert vs(["9 grams"], ["9 grams"], False) == 1.0


def test_sentence_bleu_hand_computed():
    def b(hypothesis, reference):
        return keyscores.sentence_bleu(hypothesis, reference, max_order=4)  # the order computed by hand below

    assert b("the cat sat on the mat", "the cat sat on the mat") == pytest.approx(1.0)
    # p1 = 5/6, p2..p4 add-one smoothed: (3+1)/(5+1), (1+1)/(4+1), (0+1)/(3+1); equal lengths, BP 1
    assert b("the cat sat on the mat", "the cat is on the mat") == pytest.approx(
        (5 / 6 * 4 / 6 * 2 / 5 * 1 / 4) ** 0.25
    )
    assert b("Fit", "Fit") == 1.0 and b("", "") == 1.0 and b("x", "") == 0.0 and b("walnuts", "bananas") == 0.0


def test_invalid_prediction_is_a_score_not_an_error():
    s = keyscores.key_scores(HUMAN_BANANA, '{"@type": "Recipe", "name": "Banana', **KEYS)
    assert not s.valid_json and s.key_f1 == 0.0 and "not valid JSON" in s.error
    assert len(s.missing_keys) == s.n_reference_keys == 10  # @context is no key
    with pytest.raises(ValueError, match="reference"):
        keyscores.key_scores("{", "{}", **KEYS)


def test_key_scores_on_real_examples_identity_and_variants():
    """Every real example scored against itself is perfect; against its own copy with one
    property dropped, exactly that key (or those under it) go missing."""
    docs = [d for _, d in example_markups() if isinstance(d, dict) and len(d) > 3][:60]
    assert len(docs) == 60
    for doc in docs:
        s = keyscores.key_scores(doc, doc, **KEYS)
        assert (s.key_f1, s.value_score, s.json_bleu) == (1.0, 1.0, pytest.approx(1.0))
        prop = next(k for k in reversed(list(doc)) if not k.startswith("@"))
        cut = {k: v for k, v in doc.items() if k != prop}
        s = keyscores.key_scores(doc, cut, **KEYS)
        assert s.key_precision == 1.0 and s.missing_keys and all(k.startswith(prop) for k in s.missing_keys)
        assert not s.extra_keys


# ---- BLINKG matching -------------------------------------------------------------------------


def test_levenshtein_on_real_values():
    lev = matching.levenshtein_similarity
    # eg-0013's recipe name against a copy missing its apostrophe: 1 edit in 31 characters.
    assert lev("Mom's World Famous Banana Bread", "Moms World Famous Banana Bread") == pytest.approx(1 - 1 / 31)
    assert lev("Cath's Cafe", "CATH'S  CAFE ") == 1.0  # case and spacing are normalised away
    assert lev("PT1H", "1 hour") == 0.0


def test_blinkg_matches_on_real_schemaorg_values():
    values = EXAMPLES.read_text(encoding="utf-8")
    pairs = [
        # (value from the examples, a rewording, expected match)
        ("Mom's World Famous Banana Bread", "Moms World Famous Banana Bread", True),  # Levenshtein
        ("Hiking Boots", "boots for hiking", True),  # embeddings only
        ("John Smith", "Smith, John", True),  # embeddings only
        (
            "Preheat the oven to 350 degrees. Mix in the ingredients in a bowl. Add the flour last. "
            "Pour the mixture into a loaf pan and bake for one hour.",
            "Heat the oven to 350 degrees, mix the ingredients in a bowl, add flour at the end, pour "
            "into a loaf pan and bake 1 hour.",
            True,
        ),
        ("Mom's World Famous Banana Bread", "The Eiffel Tower", False),
        ("Daily from 11:00am till 8pm", "Mo,Tu,We,Th,Fr,Sa,Su 11:00-20:00", False),
        ("PT1H", "1 hour", False),
    ]
    for original, _, _ in pairs:
        assert original in values or original.split(". ")[0] in values, original
    got = matching.match_pairs([(a, b) for a, b, _ in pairs], **MATCH)
    assert [m.matched for m in got] == [e for _, _, e in pairs]
    assert got[0].levenshtein >= 0.8
    for m in got[1:3]:
        assert m.levenshtein < 0.8 <= m.cosine and m.score == m.cosine
    assert got[4].cosine < 0.3  # a banana bread is not the Eiffel Tower
    assert matching.model_load_seconds() is not None
    # Identical texts need no model and score 1.
    same = matching.match("240 calories", "240 Calories", **MATCH)
    assert (same.levenshtein, same.cosine, same.matched) == (1.0, 1.0, True)
    # The threshold is a parameter: at 0.99 the reworded names no longer match.
    assert not matching.match("Hiking Boots", "boots for hiking", **{**MATCH, "threshold": 0.99}).matched


def test_match_property_values_one_to_one():
    reference = [
        ("name", "Mom's World Famous Banana Bread"),
        ("author", "John Smith"),
        ("recipeIngredient", "3 or 4 ripe bananas, smashed"),
        ("recipeIngredient", "1 egg"),
    ]
    predicted = [
        ("name", "Moms World Famous Banana Bread"),
        ("author", "Smith, John"),
        ("recipeIngredient", "1 egg"),
        ("recipeIngredient", "1 egg"),  # one reference egg only
        ("description", "John Smith"),
    ]  # right value, wrong property: no match
    r = matching.match_property_values(predicted, reference, **MATCH)
    assert (r.matched, r.n_predicted, r.n_reference) == (3, 5, 4)
    assert r.precision == pytest.approx(3 / 5) and r.recall == pytest.approx(3 / 4)
    assert {(i, j) for i, j, _ in r.pairs} == {(0, 0), (1, 1), (2, 3)}


def test_scores_conf_section_drives_the_scores():
    """conf/pipeline.toml [scores] holds the scores' settings (the code has no default for them);
    each one is a parameter of the score it names, and a different value gives a different score."""
    s = keyscores.key_scores(HUMAN_BANANA, LLM_BANANA, **KEYS)
    assert SCORES.ignore_keys == ("@context",)
    assert "@context" not in s.missing_keys and s.n_shared_keys == 2  # @type, name
    kept = keyscores.key_scores(HUMAN_BANANA, LLM_BANANA, ignore_keys=(), max_order=SCORES.bleu_max_order)
    assert "@context" in kept.missing_keys and kept.key_recall < s.key_recall
    unigram = keyscores.key_scores(HUMAN_BANANA, LLM_BANANA, ignore_keys=SCORES.ignore_keys, max_order=1)
    assert unigram.json_bleu != s.json_bleu
    from threadpoolctl import threadpool_info

    m = matching.match_pairs([("1 egg", "1 egg"), ("Hiking Boots", "boots for hiking")], **MATCH)
    assert [x.matched for x in m] == [True, True]
    # the BLAS library of numpy's matrix products (others a test loads later keep their own)
    numpy_dir = str(Path(np.__file__).resolve().parent)
    blas = [
        p["num_threads"]
        for p in threadpool_info()
        if p["user_api"] == "blas" and p["filepath"].startswith((numpy_dir, numpy_dir + ".libs"))
    ]
    assert blas and set(blas) == {SCORES.embedding_threads}  # set when the model embedded
    strict = matching.match_pairs(
        [("Hiking Boots", "boots for hiking")], **{**MATCH, "threshold": (m[1].score + 1) / 2}
    )
    assert not strict[0].matched
