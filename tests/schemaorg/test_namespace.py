"""The schema.org namespace and context pattern: one definition (udfs/schemaorg/namespace.py), the
same answers from every reader that uses it, and no second copy in the code."""

from __future__ import annotations

import ast
import json

import pytest
from conftest import ROOT, SCHEMAORG

from udfs.corpus.wdc_quads import jsonld_to_quads
from udfs.schemaorg.markup import MarkupError, parse_markup, to_jsonld
from udfs.schemaorg.namespace import (
    SCHEMA_CONTEXT_URL,
    SCHEMA_NS,
    context_document,
    is_schema_context_url,
)
from udfs.schemaorg.vocab import DEFAULT_RELEASE, schema_local_name

SCHEMA_CONTEXTS = [
    "https://schema.org",
    "http://schema.org/",
    "https://www.schema.org",
    "HTTPS://Schema.org/",
    " https://schema.org/ ",
    "https://schema.org/docs/jsonldcontext.json",
    "http://schema.org/docs/jsonldcontext.jsonld",
    "https://schema.org/docs/jsonldcontext.json/",
    "http://health-lifesci.schema.org/",
    "https://pending.schema.org",
    "http://bib.schema.org",
]
REMOTE_CONTEXTS = [
    "https://www.w3.org/ns/credentials/v2",
    "https://schema.org.example.com/",
    "https://example.org/schema.org",
    "https://schema.org/Recipe",
    "https://notschema.org/",
    "https://schema.org//",
    "ftp://schema.org/",
]


def test_the_namespace_is_the_bundled_contexts_vocabulary():
    ctx = context_document(DEFAULT_RELEASE)
    assert ctx["@vocab"] == ctx["schema"] == SCHEMA_NS
    assert json.loads((SCHEMAORG / "schemaorgcontext.jsonld").read_text(encoding="utf-8"))["@context"] == ctx
    assert is_schema_context_url(SCHEMA_CONTEXT_URL)


def test_namespace_spellings_are_one_namespace():
    for iri in (
        "http://schema.org/name",
        "https://schema.org/name",
        "https://www.schema.org/name",
        "HTTP://Schema.ORG/name",
    ):
        assert schema_local_name(iri) == "name", iri
    for iri in (
        "https://schema.org.example.com/name",
        "https://example.org/name",
        "schema.org/name",
        "https://schema.org/",
    ):
        assert schema_local_name(iri) is None, iri


@pytest.mark.parametrize("ctx", SCHEMA_CONTEXTS)
def test_schema_org_context_spellings_are_read_with_the_bundled_context(ctx):
    assert is_schema_context_url(ctx)
    doc = {"@context": ctx, "@type": "Recipe", "name": "Pie", "image": "pie.jpg"}
    markup = parse_markup(doc)
    [ent] = markup.entities.values()
    # the bundled context's coercion ("image" takes an IRI) shows the context was applied
    assert ent.types == ["Recipe"] and type(ent.properties["image"][0]).__name__ == "Ref"
    quads = jsonld_to_quads(doc, "https://example.org/page")
    assert any(f"<{SCHEMA_NS}name>" in q for q in quads)


@pytest.mark.parametrize("ctx", REMOTE_CONTEXTS)
def test_other_context_urls_are_refused_by_every_reader(ctx):
    assert not is_schema_context_url(ctx)
    doc = {"@context": ctx, "@type": "Recipe", "name": "Pie"}
    with pytest.raises(MarkupError, match="not fetched"):
        parse_markup(doc)
    with pytest.raises(MarkupError, match="not fetched"):
        jsonld_to_quads(doc, "https://example.org/page")


def test_written_markup_uses_the_namespace_constants():
    doc = to_jsonld(parse_markup({"@context": "http://www.schema.org", "@type": "Recipe", "name": "Pie"}))
    assert doc == {"@context": SCHEMA_CONTEXT_URL, "@type": "Recipe", "name": "Pie"}
    # the generated shapes (udfs/schemaorg/shapes.py writes the prefix from SCHEMA_NS)
    for name in ("schemaorg-30.0.shapes.ttl", "schemaorg-30.0.strict.shapes.ttl"):
        assert f"@prefix schema: <{SCHEMA_NS}> ." in (ROOT / "shapes" / name).read_text(encoding="utf-8")


def _schema_org_literals(path) -> list[tuple[int, str]]:
    """String constants of a Python file that spell the namespace or a context URL, or a pattern
    for them (a regex source containing ``schema\\.org``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            v = node.value
            if is_schema_context_url(v) or "schema\\.org" in v:
                found.append((node.lineno, v))
    return found


def test_the_namespace_and_the_context_pattern_are_defined_once():
    """No module but udfs/schemaorg/namespace.py spells the namespace, a schema.org context URL
    or a pattern for them. Allowed: the adversarial markup generator and the shape-comparison
    probes, whose spellings are test data (deliberate variants)."""
    allowed = {"udfs/schemaorg/namespace.py", "testkit/markup_corpus.py", "shapes/compare.py"}
    files = [p for d in ("udfs", "jobs", "shapes", "testkit") for p in sorted((ROOT / d).rglob("*.py"))]
    assert len(files) > 40
    offenders = {}
    for path in files:
        rel = path.relative_to(ROOT).as_posix()
        if rel not in allowed and (hits := _schema_org_literals(path)):
            offenders[rel] = hits
    assert offenders == {}
    assert [v for _, v in _schema_org_literals(ROOT / "udfs/schemaorg/namespace.py")] == [
        SCHEMA_NS,
        SCHEMA_CONTEXT_URL,
        "^https?://(?:www\\.)?schema\\.org/",
        "^https?://(?:[a-z0-9-]+\\.)?schema\\.org(?:/(?:docs/jsonldcontext\\.json(?:ld)?/?)?)?$",
    ]
