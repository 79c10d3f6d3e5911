"""The JSON-LD markup model and the validity agent: rules, readings, cleaning, command line, and
identical findings from the compiled checker and pySHACL on every markup we have."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from testkit.markup_corpus import adversarial_markups, real_markups
from udfs.agents.validity import ValidityAgent, agent, validate
from udfs.runtime.config import load_config
from udfs.schemaorg.markup import Literal, MarkupError, Ref, parse_markup, to_jsonld

ROOT = Path(__file__).resolve().parents[2]
CONF = load_config().validity  # the lenient reading and release of conf/pipeline.toml


# ---- markup model ----------------------------------------------------------------------------
def test_nesting_arrays_graph_references_and_several_types():
    m = parse_markup(
        {
            "@context": "https://schema.org/",
            "@graph": [
                {
                    "@id": "https://ex.org/r",
                    "@type": ["Recipe", "Product"],
                    "name": "Pie",
                    "author": {"@id": "https://ex.org/p"},
                    "recipeIngredient": ["flour", "sugar", None],
                    "nutrition": {"@type": "NutritionInformation", "calories": "200 kcal"},
                },
                {"@id": "https://ex.org/p", "@type": "Person", "name": "Jane"},
            ],
        }
    )
    r = m.entities["https://ex.org/r"]
    assert r.types == ["Recipe", "Product"]
    assert r.properties["recipeIngredient"] == [Literal("flour"), Literal("sugar")]  # null: no triple
    assert r.properties["author"] == [Ref("https://ex.org/p")]
    assert m.is_typed_node(Ref("https://ex.org/p")) and m.roots == ["https://ex.org/r", "https://ex.org/p"]
    triples = list(m.triples())
    assert sum(t.property == "name" and t.subject == "https://ex.org/r" for t in triples) == 2  # once per type
    assert {t.entity_type for t in triples if t.subject == "https://ex.org/r"} == {"Recipe", "Product"}


@pytest.mark.parametrize(
    "ctx",
    [
        None,
        "http://schema.org",
        "https://schema.org/",
        "http://www.schema.org",
        ["https://schema.org", {"ex": "http://example.org/"}],
        {"@vocab": "http://schema.org/"},
    ],
)
def test_schema_org_contexts_and_missing_context_read_alike(ctx):
    doc = {"@type": "Event", "name": "Gig", "url": "https://ex.org/gig", "schema:startDate": "2024-01-01"}
    if ctx is not None:
        doc["@context"] = ctx
    e = next(iter(parse_markup(doc).entities.values()))
    assert e.types == ["Event"] and e.properties["name"] == [Literal("Gig")]
    # Without the official context "schema:" is no prefix: the key is an IRI of scheme "schema".
    assert e.properties["schema:startDate" if isinstance(ctx, dict) else "startDate"] == [Literal("2024-01-01")]
    # The official context makes url an IRI; an inline @vocab alone keeps it a string.
    expect = Literal("https://ex.org/gig") if isinstance(ctx, dict) else Ref("https://ex.org/gig")
    assert e.properties["url"] == [expect]


def test_keyword_aliases_of_the_schema_org_context():
    # schema.org's context defines "type": "@type" and "id": "@id"; real examples use them.
    m = parse_markup(
        {
            "@context": "https://schema.org",
            "type": "Audiobook",
            "id": "http://x/1",
            "name": "x",
            "author": {"type": "Person", "name": "A"},
        }
    )
    got = {(t.subject, t.property, t.entity_type) for t in m.triples()}
    assert got == {
        ("http://x/1", "name", "Audiobook"),
        ("http://x/1", "author", "Audiobook"),
        ("_:b0", "name", "Person"),
    }
    local = parse_markup({"@context": {"@vocab": "http://schema.org/", "kind": "@type"}, "kind": "Book", "name": "x"})
    assert [(t.property, t.entity_type) for t in local.triples()] == [("name", "Book")]


def test_other_vocabularies_keep_full_iris():
    m = parse_markup(
        {
            "@context": {"@vocab": "http://schema.org/", "foaf": "http://xmlns.com/foaf/0.1/"},
            "@type": ["Person", "foaf:Person"],
            "foaf:nick": "jd",
            "https://schema.org/name": "J",
        }
    )
    e = next(iter(m.entities.values()))
    assert e.types == ["Person", "http://xmlns.com/foaf/0.1/Person"]
    assert set(e.properties) == {"http://xmlns.com/foaf/0.1/nick", "name"}


@pytest.mark.parametrize(
    "bad, reason",
    [
        ('{"@type": ', "not JSON"),
        ("42", "top level must be"),
        (
            '{"@context": "https://example.org/ctx.jsonld", "@type": "Thing"}',
            "remote @context not fetched: https://example.org/ctx.jsonld",
        ),
        ('{"@type": 5}', "@type values must be strings"),
        ('{"@id": 5, "name": "x"}', "@id must be a string"),
        ("[]", "no entity"),
        ('{"@type": "Thing", "about": ' * 150 + '"x"' + "}" * 150, "nesting deeper than 100 levels"),
        ("[" * 100_000, "nesting deeper than 100 levels"),
    ],
)
def test_broken_markup_raises_with_a_reason(bad, reason):
    with pytest.raises(MarkupError) as e:
        parse_markup(bad)
    assert reason in e.value.reason


def test_cycles_parse_and_serialize_once():
    doc = {
        "@id": "_:a",
        "@type": "WebPage",
        "name": "p",
        "hasPart": {"@type": "WebPageElement", "isPartOf": {"@id": "_:a"}, "name": "e"},
    }
    m = parse_markup(doc)
    assert m.entities["_:b0"].properties["isPartOf"] == [Ref("_:a")]
    out = to_jsonld(m)
    assert out["@id"] == "_:a" and out["hasPart"]["isPartOf"] == {"@id": "_:a"}
    assert parse_markup(out).entities.keys() == m.entities.keys()


def test_serializer_round_trips_and_drops_what_is_not_kept():
    doc = {
        "@context": "https://schema.org",
        "@type": "Book",
        "name": "B",
        "numberOfPages": 10,
        "inLanguage": {"@value": "en", "@language": "en"},
        "author": {"@type": "Person", "name": "A", "knows": {"@type": "Person", "name": "C"}},
    }
    m = parse_markup(doc)
    assert to_jsonld(m) == doc
    cut = to_jsonld(m, keep=lambda s, p, v: p != "author")
    assert cut == {k: v for k, v in doc.items() if k != "author"}


# ---- rules -----------------------------------------------------------------------------------
RECIPE = {
    "@context": "https://schema.org",
    "@type": "Recipe",
    "name": "Pie",
    "cookoo": "x",
    "recipeInstructions": [{"@type": "HowToStep", "text": "Bake"}, {"@type": "Person", "name": "P"}],
    "author": "Jane",
    "numberOfPages": "12",
    "ingredients": "flour",
}


def _by_prop(result):
    return {(v.property, str(v.value)): v for v in result.verdicts if v.subject == "_:b0"}


@pytest.mark.parametrize("engine", ["compiled", "pyshacl"])
def test_the_three_rules_lenient(engine):
    res = agent(engine, CONF.strict, CONF.vocab, CONF.mode).validate(dict(RECIPE, numberOfPages=None))
    v = _by_prop(res)
    assert v[("name", "Pie")].valid  # inherited from Thing
    assert (v[("cookoo", "x")].rule, v[("cookoo", "x")].reason) == (2, "cookoo is not a property of Recipe")
    assert v[("recipeInstructions", "_:b1")].valid  # HowToStep is a CreativeWork
    bad = v[("recipeInstructions", "_:b2")]
    assert (bad.valid, bad.rule) == (False, 3) and "got an entity of type Person" in bad.reason
    assert v[("author", "Jane")].valid  # a literal where only entity types are expected: lenient
    assert v[("ingredients", "flour")].valid and "superseded by recipeIngredient" in v[("ingredients", "flour")].reason
    unknown = (
        agent(engine, CONF.strict, CONF.vocab, CONF.mode)
        .validate({"@type": ["Recipee", "Recipe"], "name": "x"})
        .verdicts
    )
    assert [(x.entity_type, x.rule) for x in unknown] == [("Recipee", 1), ("Recipe", None)]
    untyped = (
        agent(engine, CONF.strict, CONF.vocab, CONF.mode)
        .validate({"@type": "Recipe", "recipeYield": {"name": "4 people"}})
        .verdicts
    )
    assert [(x.property, x.entity_type, x.rule) for x in untyped] == [("recipeYield", "Recipe", 3), ("name", None, 1)]


@pytest.mark.parametrize("engine", ["compiled", "pyshacl"])
def test_strict_reading(engine):
    strict = (
        ValidityAgent(engine, True, CONF.vocab, CONF.mode)
        if engine == "compiled"
        else agent(engine, True, CONF.vocab, CONF.mode)
    )
    v = _by_prop(strict.validate(RECIPE))
    assert v[("author", "Jane")].rule == 3  # a plain string where Person/Organization is expected
    assert v[("name", "Pie")].valid
    assert v[("cookoo", "x")].rule == 2
    offer = {"@type": "Offer", "availability": "https://schema.org/InStock", "price": "5"}
    res = {x.property: x for x in strict.validate(offer).verdicts}
    assert res["availability"].rule == 3  # enumeration members must be IRIs
    assert res["price"].valid  # price is Number or Text
    ok = strict.validate(
        {
            "@type": "Offer",
            "availability": {"@id": "schema:InStock"},
            "validFrom": "2024-01-01",
            "eligibleQuantity": {"@id": "schema:Monday"},
        }
    ).verdicts
    assert [(x.property, x.valid) for x in ok] == [
        ("availability", True),
        ("validFrom", True),
        ("eligibleQuantity", False),
    ]
    kinds = [
        (type(x.value).__name__, x.valid)
        for x in strict.validate({"@type": "Book", "numberOfPages": [12, "12"]}).verdicts
    ]
    assert kinds == [("int", True), ("str", False)]


def test_cleaned_markup_keeps_what_one_type_accepts():
    res = validate(
        {
            "@context": "https://schema.org",
            "@type": ["Product", "Offer"],
            "name": "P",
            "price": 3,
            "cookoo": 1,
            "review": {"@type": "Person", "name": "wrong type"},
        },
        CONF.engine,
        CONF.strict,
        CONF.vocab,
        CONF.mode,
    )
    assert res.cleaned == {"@context": "https://schema.org", "@type": ["Product", "Offer"], "name": "P", "price": 3}
    bad = sorted((v.property, v.entity_type, v.rule) for v in res.verdicts if not v.valid)
    # price is no Product property but an Offer one: the entity has the union of its types' properties
    assert bad == [("cookoo", "Offer", 2), ("cookoo", "Product", 2), ("review", "Offer", 3), ("review", "Product", 3)]
    assert res.n_invalid == 4
    assert validate({"@type": "Foo", "name": "x"}, CONF.engine, CONF.strict, CONF.vocab, CONF.mode).cleaned is None


# ---- command line ----------------------------------------------------------------------------
@pytest.mark.parametrize("engine", ["compiled", "pyshacl"])
def test_command_line(tmp_path, engine):
    f = tmp_path / "recipe.jsonld"
    f.write_text(json.dumps({k: v for k, v in RECIPE.items() if k != "@context"}))
    bad = tmp_path / "bad.jsonld"
    bad.write_text('{"@context": "https://evil.example/ctx", "@type": "Thing"}')
    p = subprocess.run(
        [sys.executable, "-m", "udfs.agents.validity", "--engine", engine, str(f), str(bad)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 1, p.stderr  # one file could not be read
    lines = [json.loads(x) for x in p.stdout.splitlines()]
    assert lines[-1] == {"file": str(bad), "error": "remote @context not fetched: https://evil.example/ctx"}
    rows = lines[:-1]
    assert all({"property", "value", "entity_type", "valid", "rule", "reason"} <= r.keys() for r in rows)
    assert len(rows) == 9
    assert {r["property"] for r in rows if not r["valid"]} == {"cookoo", "recipeInstructions", "numberOfPages"}


# ---- agreement -------------------------------------------------------------------------------
def _corpus():
    parsed, rejected = [], []
    for c in real_markups() + adversarial_markups(300):
        try:
            parsed.append((c.source, parse_markup(c.text)))
        except MarkupError as e:
            rejected.append((c.source, e.reason))
    return parsed, rejected


@pytest.fixture(scope="module")
def corpus():
    return _corpus()


def test_corpus_is_read_whole(corpus):
    parsed, rejected = corpus
    real = real_markups()
    assert len(real) > 480 and sum(c.source.startswith("examples:") for c in real) >= 460
    assert len(parsed) + len(rejected) == len(real) + 300
    # Only markups with a remote non-schema.org context are refused, each with its reason.
    assert rejected and all(r.startswith("remote @context not fetched") for _, r in rejected)
    assert sum(len(list(m.triples())) for _, m in parsed) > 10_000


@pytest.mark.parametrize("strict", [False, True], ids=["lenient", "strict"])
def test_compiled_and_pyshacl_agree_on_every_markup(corpus, strict):
    parsed, _ = corpus
    markups = [m for _, m in parsed]
    compiled = ValidityAgent("compiled", strict, CONF.vocab, CONF.mode).findings_many(markups)
    reference = agent("pyshacl", strict, CONF.vocab, CONF.mode).findings_many(markups)
    differ = [src for (src, _), a, b in zip(parsed, compiled, reference) if a != b]
    assert differ == []
    # The corpus exercises every rule in both engines.
    assert all(any(getattr(f, k) for f in reference) for k in ("untyped", "unknown_types", "not_allowed", "bad_values"))


def test_one_pyshacl_call_for_many_markups_gives_the_per_markup_findings(corpus):
    parsed, _ = corpus
    sample = [m for src, m in parsed if src.startswith("adversarial:")][:6] + [parsed[0][1]]
    ref = agent("pyshacl", CONF.strict, CONF.vocab, CONF.mode)
    assert ref.findings_many(sample) == [ref.findings_many([m])[0] for m in sample]
