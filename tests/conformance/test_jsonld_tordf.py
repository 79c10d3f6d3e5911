"""The W3C JSON-LD 1.1 toRdf tests (``../shared/data/conformance/w3c-json-ld-api/tests``, 467 tests of
``toRdf-manifest.jsonld``) against the JSON-LD reader that verdicts and MeMR stand on,
``udfs.schemaorg.markup.parse_markup``. Skipped where ``../shared`` is absent.

Each test reads its input with the reader (base IRI: the manifest's ``baseIri`` and the input's path,
or the test's ``base`` option), as the pipeline reads markup (schema.org defaults on):

* positive evaluation tests: the reader's triples in RDF (``rdf_triples``) are the expected N-Quads,
  up to blank-node renaming (``rdflib.compare.isomorphic``). Two documented readings of the reader
  (``udfs/schemaorg/markup.py``) are applied to the expected graph first, and counted apart:
  ``@list`` is read as plain values (the members themselves are the values, nested lists flattened,
  no ``rdf:first``/``rdf:rest`` nodes), and the named graphs are merged into one graph;
* negative evaluation tests: a ``MarkupError`` whose ``code`` is the test's JSON-LD error code;
* positive syntax tests: read without error.

The tests that do not apply are listed in ``NOT_APPLICABLE``, one group per reason, and each group's
claim is checked too (a remote context is refused, a test of the schema.org defaults passes with
the defaults off, ...); ``test_every_test_is_counted`` counts every test of the manifest in one row
of the table in docs/results/conformance.md (``-s`` prints the rows).
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from pathlib import Path

import pytest

from udfs.schemaorg.markup import MarkupError, RdfLiteral, parse_markup, rdf_triples

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT.parent / "shared" / "data" / "conformance" / "w3c-json-ld-api" / "tests"
MANIFEST = SUITE / "toRdf-manifest.jsonld"

pytestmark = pytest.mark.skipif(not MANIFEST.is_file(), reason=f"the W3C suite is not at {SUITE}")

# Tests of schema.org defaults: under JSON-LD's empty initial context their terms are undefined and
# dropped, or their context is an error; the reader reads a term no context defines in schema.org
# (``@vocab`` http://schema.org/ under every inline context, the schema.org context where there is
# none), so it keeps the property or defines the term. Each passes with schema_defaults=False.
SCHEMA_DEFAULTS = (
    "#tc014 #tc018 #tc032 #tc033 #te003 #te016 #te029 #te057 #te060 #te062 #te065 #te092 #te110 #te112 #ter20 #ter23"
    " #ter50 #tpr06 #tpr19 #tpr36 #tpr38"
).split()

# One group per reason a test does not apply; the first group whose predicate holds takes the test.
NOT_APPLICABLE: dict[str, str] = {
    "input not bundled": "the input file is not in the bundled copy of the suite (it lies in the suite's expand/ folder)",
    "JSON-LD 1.0 only": "the test is for a JSON-LD 1.0 processor or runs in processing mode json-ld-1.0; the reader is "
    "a JSON-LD 1.1 processor and has no 1.0 mode",
    "API options": "the test sets an option of the JSON-LD API the pipeline never sets (produceGeneralizedRdf: "
    "blank-node predicates; rdfDirection: @direction as RDF; expandContext: a context document given beside the "
    "input); the reader gives standard RDF, keeps no base direction and takes its contexts from the markup",
    "remote documents": "the test needs a remote document (a context URL or @import); the reader "
    "never fetches one but schema.org's own context, bundled: it refuses the markup with a reason naming the URL "
    "(checked)",
    "schema.org defaults": "a term no context defines is read in schema.org (http://schema.org/ as @vocab; the "
    "schema.org context when the markup has none), where JSON-LD drops it: the paper's and the models' markup "
    "often omit @context. Each passes with parse_markup(..., schema_defaults=False) (checked)",
    "non-object in @graph": "a top-level @graph item that is not an object refuses the markup (as a top-level array "
    "item that is not one), where JSON-LD drops it (checked)",
}


def _tests() -> list[dict]:
    if not MANIFEST.is_file():
        return []
    man = json.loads(MANIFEST.read_text(encoding="utf-8"))
    return [{**t, "baseIri": man["baseIri"]} for t in man["sequence"]]


TESTS = _tests()


def _input(t: dict):
    return json.loads((SUITE / t["input"]).read_text(encoding="utf-8"))


def _remote(t: dict) -> bool:
    """Does the test's input name a context document to load: a string in ``@context`` or
    ``@import`` that is one of the suite's files (a JSON literal may hold a string there too)?"""
    from udfs.schemaorg.jsonld import resolve_iri

    base = _base(t)

    def names_a_file(ref) -> bool:
        iri = resolve_iri(base, ref) if isinstance(ref, str) else ""
        return iri.startswith(t["baseIri"]) and (SUITE / iri[len(t["baseIri"]) :]).is_file()

    def walk(node) -> bool:
        if isinstance(node, list):
            return any(walk(x) for x in node)
        if not isinstance(node, dict):
            return False
        for k, v in node.items():
            if k == "@context" and any(names_a_file(c) for c in (v if isinstance(v, list) else [v])):
                return True
            if k == "@import" and names_a_file(v):
                return True
            if walk(v):
                return True
        return False

    return walk(_input(t))


def not_applicable(t: dict) -> str | None:
    """The group of ``NOT_APPLICABLE`` that takes test ``t``, None when it applies."""
    opt = t.get("option", {})
    if not (SUITE / t["input"]).is_file():
        return "input not bundled"
    if opt.get("specVersion") == "json-ld-1.0" or opt.get("processingMode") == "json-ld-1.0":
        return "JSON-LD 1.0 only"
    if opt.get("produceGeneralizedRdf") or "rdfDirection" in opt or "expandContext" in opt:
        return "API options"
    if _remote(t):
        return "remote documents"
    if t["@id"] in SCHEMA_DEFAULTS:
        return "schema.org defaults"
    if t["@id"] == "#te046":
        return "non-object in @graph"
    return None


def _base(t: dict) -> str:
    return t.get("option", {}).get("base", t["baseIri"] + t["input"])


def _read(t: dict, **kw):
    return parse_markup(_input(t), base=_base(t), allow_empty=True, **kw)


def _graph(markup):
    import rdflib

    def term(x):
        if isinstance(x, RdfLiteral):
            if x.language:
                return rdflib.Literal(x.lexical, lang=x.language)
            if x.datatype == str(rdflib.XSD.string):
                return rdflib.Literal(x.lexical)
            return rdflib.Literal(x.lexical, datatype=rdflib.URIRef(x.datatype))
        return rdflib.BNode(x[2:]) if x.startswith("_:") else rdflib.URIRef(x)

    g = rdflib.Graph()
    for spo in rdf_triples(markup):
        g.add(tuple(term(x) for x in spo))
    return g


def expected(t: dict):
    """(the expected triples as one graph with the reader's documented readings applied, how:
    a set of "lists as plain values" and "named graphs merged")."""
    import rdflib

    ds = rdflib.Dataset()
    logging.disable(logging.WARNING)  # rdflib warns on the suite's deliberately bad IRIs
    try:
        ds.parse(data=(SUITE / t["expect"]).read_text(encoding="utf-8"), format="nquads")
    finally:
        logging.disable(logging.NOTSET)
    g = rdflib.Graph()
    how: set[str] = set()
    for s, p, o, c in ds.quads((None, None, None, None)):
        if c is not None and c != rdflib.graph.DATASET_DEFAULT_GRAPH_ID:
            how.add("named graphs merged")
        g.add((s, p, o))
    if any(p in (rdflib.RDF.first, rdflib.RDF.rest) or o == rdflib.RDF.nil for _, p, o in g):
        how.add("lists as plain values")
        g = _lists_as_values(g)
    return g, how


def _lists_as_values(g):
    """``s p <list>`` becomes ``s p m`` for each member ``m`` (nested lists flattened, ``rdf:nil``
    nothing), and the list nodes go: the reader's reading of ``@list``."""
    import rdflib

    RDF = rdflib.RDF
    cells = set(g.subjects(RDF.first, None)) | set(g.subjects(RDF.rest, None))

    def members(node, seen):
        if node == RDF.nil:
            return []
        if node not in cells:
            return [node]
        out = []
        while node not in (RDF.nil, None) and node not in seen:
            seen.add(node)
            for first in g.objects(node, RDF.first):
                out.extend(members(first, seen))
            node = g.value(node, RDF.rest)
        return out

    out = rdflib.Graph()
    for s, p, o in g:
        if s in cells:
            continue
        for m in members(o, set()) if (o in cells or o == RDF.nil) else [o]:
            out.add((s, p, m))
    return out


def _kind(t: dict) -> str:
    types = t["@type"]
    if "jld:PositiveEvaluationTest" in types:
        return "positive evaluation"
    if "jld:NegativeEvaluationTest" in types:
        return "negative evaluation"
    return "positive syntax"


def check(t: dict, **kw) -> str:
    """Run test ``t`` with the reader; the outcome: "passed" (with the readings applied, when any)
    or why it failed."""
    from rdflib.compare import isomorphic

    kind = _kind(t)
    try:
        markup = _read(t, **kw)
    except MarkupError as e:
        if kind == "negative evaluation":
            code = t["expectErrorCode"]
            return "passed" if e.code == code else f"failed: wanted {code!r}, got {e.code!r} ({e.reason[:120]})"
        return f"failed: refused ({e.reason[:160]})"
    if kind == "negative evaluation":
        return f"failed: read without the error {t['expectErrorCode']!r}"
    if kind == "positive syntax":
        return "passed"
    want, how = expected(t)
    got = _graph(markup)
    if not isomorphic(got, want):
        return f"failed: {len(got)} triples, not the {len(want)} expected"
    return "passed" + "".join(f", {h}" for h in sorted(how))


@pytest.mark.parametrize("t", TESTS, ids=[t["@id"] for t in TESTS])
def test_tordf(t):
    group = not_applicable(t)
    if group is None:
        assert check(t).startswith("passed"), (t["@id"], t["name"], check(t))
    elif group == "remote documents":
        with pytest.raises(MarkupError, match="not fetched"):
            _read(t)
    elif group == "schema.org defaults":
        assert check(t, schema_defaults=False).startswith("passed")
        assert not check(t).startswith("passed")  # the defaults are why: no stale entry in the list
    elif group == "non-object in @graph":
        with pytest.raises(MarkupError, match="must be an object"):
            _read(t)
    else:
        assert group in NOT_APPLICABLE


def test_every_test_is_counted(capsys):
    """The table of docs/results/conformance.md: every test of the manifest in exactly one row."""
    rows: Counter = Counter()
    for t in TESTS:
        group = not_applicable(t)
        if group is not None:
            rows[f"not applicable: {group}"] += 1
            continue
        outcome = check(t)
        rows[f"{_kind(t)}: {outcome if outcome.startswith('passed') else 'failed'}"] += 1
    assert sum(rows.values()) == len(TESTS) == 467
    assert set(k.split(": ", 1)[1] for k in rows if k.startswith("not applicable")) <= set(NOT_APPLICABLE)
    with capsys.disabled():
        print()
        for k, n in sorted(rows.items()):
            print(f"| {k} | {n} |")
    assert not [k for k in rows if k.endswith("failed")], rows
