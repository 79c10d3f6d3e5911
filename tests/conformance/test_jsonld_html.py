"""The W3C JSON-LD 1.1 tests of JSON-LD embedded in HTML (``../shared/data/conformance/w3c-json-ld-api/
tests/html-manifest.jsonld`` and ``html/``) against the pages job's script extraction: the row of
``udfs.corpus.html.process_html`` (its ``markups``, ``markup_errors``, status and reason) and the
blocks of ``jsonld_blocks`` it is made from.

The level compared is the one the job is responsible for: which ``<script>`` blocks it reads and the
JSON documents it reads from them. A test's expected output is those documents processed (expanded,
compacted, flattened JSON-LD, or N-Quads); the job keeps its blocks as JSON and processes none, so
the documents it extracted are turned into RDF by an independent processor (rdflib's JSON-LD parser)
with the test's base IRI (its ``base`` option, else the input's URL), the expected output is turned
into RDF the same way, and the two must be isomorphic (blank nodes renamed). They are compared as the
union of their graphs: rdflib puts a script's top-level ``@graph`` in the default graph where the
API names the graph with a blank node (tr004), a matter of processing, not of extraction.

Which documents a test reads, as the JSON-LD API's document loader selects them (9.5.1): the script
a URL fragment names (``#second``: the job's block at that script's place among the page's JSON-LD
scripts, found by html5lib), else every script with ``extractAllScripts`` (arrays spliced in),
else the first. ``extractAllScripts`` is false by default except for toRdf, whose tests read every
script by default (tr006 expects an empty dataset from a page without one; w3c/json-ld-api#603).
The job itself always reads every block.

Negative tests: "invalid script element" is the job's block with an error, named in the row's
``markup_errors`` and its reason (the page a parse_error); "loading document failed" (no JSON-LD
script, or a fragment naming an element that is not one) is no block read from the page or that
element, and a row that says why (no_matching_markup, "among 0 usable JSON-LD blocks").

Tests in ``NOT_APPLICABLE`` are skipped with their group's reason. ``html/e008`` and ``e009``
(comment-wrapped scripts) are in the folder but in no manifest entry: JSON-LD 1.1 dropped the
stripping of HTML comments, so they are not tests. Skipped where ``../shared`` is absent; the
checks of the job's own rules at the end run everywhere.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from udfs.corpus import html as P
from udfs.corpus.encoding import decode_html
from udfs.runtime.config import load_config

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT.parent / "shared" / "data" / "conformance" / "w3c-json-ld-api" / "tests"
MANIFEST = SUITE / "html-manifest.jsonld"
CFG = P.PageConfig.of(load_config().pages)

NOT_APPLICABLE = {
    "fragment naming no element": {
        "tests": ["#te011", "#tr011"],
        "reason": "the API's document loader fails when the script a URL fragment names does not exist; the pages "
        "job reads every block of a page and selects none by fragment, so there is nothing to fail",
    },
    "HTML <base> element": {
        "tests": ["#te020", "#te021", "#te022", "#tr020", "#tr021", "#tr022"],
        "reason": "the expected IRIs are resolved against the page's <base href>; the pages job keeps each block "
        "as JSON and resolves no IRI (its reader and jsonld_to_quads take the page URL as the base)",
    },
}
SKIPPED = {t: group for group, g in NOT_APPLICABLE.items() for t in g["tests"]}

needs_suite = pytest.mark.skipif(not MANIFEST.is_file(), reason=f"the W3C JSON-LD tests are not at {SUITE}")


def _manifest() -> dict:
    return json.loads(MANIFEST.read_text(encoding="utf-8")) if MANIFEST.is_file() else {"sequence": []}


def _cases():
    out = []
    for t in _manifest()["sequence"]:
        marks = [pytest.mark.skip(reason=f"not applicable ({SKIPPED[t['@id']]})")] if t["@id"] in SKIPPED else []
        out.append(pytest.param(t, id=t["@id"].lstrip("#"), marks=marks))
    return out


def _target_position(payload: bytes, fragment: str) -> int | None:
    """The place, among the page's JSON-LD scripts in document order, of the one whose id is
    ``fragment`` (html5lib's parse; a script whose type is exactly application/ld+json, as the
    suite writes them); None when the element with that id is not one."""
    import html5lib

    doc = html5lib.parse(payload, treebuilder="etree", namespaceHTMLElements=False)
    scripts = [e for e in doc.iter() if e.tag == "script" and e.get("type") == P.JSONLD_MIME_TYPE]
    return next((k for k, e in enumerate(scripts) if e.get("id") == fragment), None)


def _graph(data: str, fmt: str, base: str):
    """The union of the graphs of a JSON-LD or N-Quads document, as rdflib reads it."""
    from rdflib import Dataset, Graph

    ds = Dataset()
    ds.parse(data=data, format=fmt, base=base)
    g = Graph()
    for s, p, o, _ in ds.quads((None, None, None, None)):
        g.add((s, p, o))
    return g


@needs_suite
@pytest.mark.parametrize("test", _cases())
def test_w3c_jsonld_in_html(test):
    from rdflib.compare import isomorphic

    option = test.get("option", {})
    path, _, fragment = test["input"].partition("#")
    payload = (SUITE / path).read_bytes()
    content_type = option.get("contentType", "text/html")
    base = option.get("base", _manifest()["baseIri"] + path)
    row = P.process_html(payload, content_type, None, CFG)
    blocks = P.jsonld_blocks(decode_html(payload, content_type))
    # the row carries the documents of the blocks the extraction read, in page order
    assert [json.loads(m) for m in row["markups"]] == [b.data for b in blocks if b.data is not None]
    target = _target_position(payload, fragment) if fragment else None

    if "jld:NegativeEvaluationTest" in test["@type"]:
        code = test["expectErrorCode"]
        if code == "invalid script element":
            chosen = blocks[target if fragment else 0]
            assert chosen.error is not None and chosen.data is None, chosen
            assert chosen.error in row["markup_errors"] and chosen.error in row["reason"]
            assert row["status"] == P.PARSE_ERROR
        elif code == "loading document failed":
            assert fragment == "" or target is None  # the fragment names no JSON-LD script
            assert blocks == [] and row["markups"] == []
            assert row["status"] == P.NO_MATCHING_MARKUP and "among 0 usable JSON-LD blocks" in row["reason"]
        else:
            raise AssertionError(f"error code {code!r}: no rule for it in this test")
        return

    docs = [b.data for b in blocks]
    assert all(b.error is None for b in blocks), [b.error for b in blocks]
    if fragment:
        assert target is not None, f"#{fragment} names no JSON-LD script"
        document = docs[target]
    elif option.get("extractAllScripts", "jld:ToRDFTest" in test["@type"]):
        document = [item for d in docs for item in (d if isinstance(d, list) else [d])]
    else:
        document = docs[0]
    got = _graph(json.dumps(document), "json-ld", base)
    expected_path = SUITE / test["expect"]
    fmt = "nquads" if expected_path.suffix == ".nq" else "json-ld"
    expected = _graph(expected_path.read_text(encoding="utf-8"), fmt, base)
    assert isomorphic(got, expected), (sorted(got), sorted(expected))


@needs_suite
def test_not_applicable_groups_name_tests_of_the_manifest():
    ids = {t["@id"] for t in _manifest()["sequence"]}
    assert len(ids) == len(_manifest()["sequence"]) == 50
    assert set(SKIPPED) <= ids
    assert all(g["reason"] for g in NOT_APPLICABLE.values())


# ---- the job's own rules, beyond the suite (constructed pages; run everywhere) ---------------------------

THING = '{"@context": "https://schema.org", "@type": "Thing", "name": "x"}'


def _page(script_type: str, body: str = THING) -> str:
    return f"<html><head><script type='{script_type}'>{body}</script></head><body><p>text</p></body></html>"


@pytest.mark.parametrize(
    "script_type",
    [
        "application/ld+json",
        "application/ld+json; charset=utf-8",
        'application/ld+json;profile="http://www.w3.org/ns/json-ld#compacted"',
        " Application/LD+JSON ",
    ],
)
def test_a_jsonld_mime_type_with_parameters_or_in_other_case_is_a_jsonld_script(script_type):
    """A script's type is a MIME type: its essence counts, not its spelling (before: only the exact
    string application/ld+json was read, as extruct reads)."""
    blocks = P.jsonld_blocks(_page(script_type))
    assert [b.data for b in blocks] == [json.loads(THING)]


@pytest.mark.parametrize("script_type", ["application/json", "text/ld+json", "application/ld+jsonx", "ld+json", ""])
def test_other_types_are_not_jsonld_scripts(script_type):
    assert P.jsonld_blocks(_page(script_type)) == []


@pytest.mark.parametrize(
    "body",
    [
        "//<![CDATA[\n" + THING + "\n//]]>",
        "/*<![CDATA[*/" + THING + "/*]]>*/",
        "<!-- the product -->\n" + THING,
        "// the product\n" + THING,
    ],
)
def test_commented_wrappers_of_real_pages_are_read(body):
    """XHTML-era CDATA wrappers in JavaScript comments, and a comment line before the JSON
    (extruct's rule), are read; the JSON-LD API refuses them. ``//]]>`` right before
    ``</script>`` was an error before (jstyleson leaves a final // comment without a newline)."""
    blocks = P.jsonld_blocks(_page("application/ld+json", body))
    assert [(b.data, b.error) for b in blocks] == [(json.loads(THING), None)]


@pytest.mark.parametrize("body", ["<![CDATA[" + THING + "]]>", "<!--\n" + THING + "\n-->"])
def test_bare_cdata_and_comment_wrappers_are_errors_with_a_reason(body):
    """In text/html a bare CDATA section or an HTML comment around the JSON is script text that
    is not JSON: an error, as the JSON-LD API says (invalid script element), with its reason."""
    row = P.process_html(_page("application/ld+json", body).encode(), "text/html", None, CFG)
    assert row["status"] == P.PARSE_ERROR
    assert row["reason"].startswith("invalid JSON-LD in block 0: JSONDecodeError")
