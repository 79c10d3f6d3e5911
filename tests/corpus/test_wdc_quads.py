"""``extract_quads`` makes its quads from the reader evaluation uses: on the demo's real pages, the
quads of every block are the RDF view of ``parse_markup`` (``rdf_triples``, the page URL as base),
and the cases where rdflib's JSON-LD parser, the converter before, wrote other triples: a date,
a relative IRI, a lone surrogate (udfs/corpus/wdc_quads.py, udfs/corpus/quads.py)."""

from __future__ import annotations

import gzip
import io
import json
import re
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from udfs.corpus.encoding import decode_html
from udfs.corpus.html import jsonld_blocks
from udfs.corpus.quads import extract_file
from udfs.schemaorg.markup import parse_markup, rdf_triples

DATA = Path(__file__).resolve().parents[2] / "data"
DEMO = DATA / "demo" / "extruct-samples.warc.gz"
LIMITS = {
    "max_html_bytes": 5_000_000,
    "max_record_bytes": 10_000_000,
    "max_markup_chars": 1_000_000,
    "max_markup_nodes": 200_000,
    "reject_raw_chars": 200,
    "time_limit_s": 30.0,
}
XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
RDF_LANGSTRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
_LINE = re.compile(r"^(\S+) <([^>]*)> (.+) <([^>]*)>   \.$")
_LITERAL = re.compile(r'^"((?:[^"\\]|\\.)*)"(?:@(\S+)|\^\^<([^>]*)>)?$')
_UNESCAPE = {"n": "\n", "r": "\r", '"': '"', "\\": "\\"}


def quads(tmp_path: Path, warc: Path) -> tuple[list[str], list[dict]]:
    items = list(extract_file(0, str(warc), str(tmp_path / "out"), **LIMITS))
    lines = gzip.decompress((tmp_path / "out" / "part-00000.nq.gz").read_bytes()).decode("utf-8").splitlines()
    return lines, [row for kind, row in items if kind == "reject"]


def term(text: str, block_label: re.Pattern) -> tuple:
    """A quad's term as ``rdf_triples`` gives it: an IRI, ``_:<the reader's label>``, or
    (lexical, datatype, language)."""
    if text.startswith("<"):
        return text[1:-1]
    if text.startswith("_:"):
        return "_:" + block_label.sub("", text[2:])
    m = _LITERAL.match(text)
    assert m, text
    lexical = re.sub(r"\\(.)", lambda e: _UNESCAPE[e.group(1)], m.group(1))
    if m.group(2):
        return (lexical, RDF_LANGSTRING, m.group(2))
    return (lexical, m.group(3) or XSD_STRING, None)


def by_page(lines: list[str]) -> dict[str, set]:
    """The triples of every page URL, blank nodes by the reader's label (the label of a block's
    blank node without its page and block part)."""
    label = re.compile(r"^n[0-9a-f]{16}x\d+")
    out: dict[str, set] = {}
    for line in lines:
        m = _LINE.match(line)
        assert m, line
        s, p, o, url = m.groups()
        out.setdefault(url, set()).add((term(s, label), p, term(o, label)))
    return out


def test_the_quads_of_real_pages_are_the_rdf_view_of_the_reader(tmp_path):
    """Every page of the demo's WARC file (the extruct samples): its quads are
    ``rdf_triples(parse_markup(block, base=page URL))`` of its blocks, triple for triple."""
    from warcio.archiveiterator import ArchiveIterator

    lines, _ = quads(tmp_path, DEMO)
    want: dict[str, set] = {}
    with open(DEMO, "rb") as fh:
        for rec in ArchiveIterator(fh):
            if rec.rec_type != "response":
                continue
            url = rec.rec_headers.get_header("WARC-Target-URI")
            for b in jsonld_blocks(
                decode_html(rec.content_stream().read(), rec.http_headers.get_header("Content-Type"))
            ):
                if b.error is None and isinstance(b.data, (dict, list)):
                    markup = parse_markup(b.data, allow_empty=True, base=url)
                    want.setdefault(url, set()).update(
                        (s, p, tuple(o) if isinstance(o, tuple) else o) for s, p, o in rdf_triples(markup)
                    )
    want = {url: triples for url, triples in want.items() if triples}
    assert by_page(lines) == want
    assert len(want) > 10 and len(lines) > 3000


def warc_of(tmp_path: Path, pages: dict[str, str]) -> Path:
    """A WARC file of one HTTP 200 HTML response per (URL, HTML)."""
    path = tmp_path / "pages.warc.gz"
    with open(path, "wb") as fh:
        w = WARCWriter(fh, gzip=True)
        for url, html in pages.items():
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
            w.write_record(
                w.create_warc_record(url, "response", payload=io.BytesIO(html.encode("utf-8")), http_headers=http)
            )
    return path


def page(*blocks: str) -> str:
    scripts = "".join(f'<script type="application/ld+json">{b}</script>' for b in blocks)
    return f"<html><head>{scripts}</head><body><p>x</p></body></html>"


def test_a_date_is_the_plain_string_the_markup_wrote(tmp_path):
    """The bundled context coerces ``datePublished`` to ``schema:Date``; the reader leaves the
    coercion out (no RDF datatype, and the validity rules check a date's form on the string): the
    quad is what a verdict reads. rdflib wrote ``"2006-05-04"^^<http://schema.org/Date>``."""
    doc = {"@context": "https://schema.org", "@type": "Book", "name": "B", "datePublished": "2006-05-04"}
    lines, rejects = quads(tmp_path, warc_of(tmp_path, {"http://a.example/book": page(json.dumps(doc))}))
    assert rejects == []
    [date] = [ln for ln in lines if "<http://schema.org/datePublished>" in ln]
    assert date.split(" ")[2] == '"2006-05-04"'


def test_relative_iris_are_resolved_against_the_page_and_no_iri_is_made_up(tmp_path):
    """``url`` takes an IRI (the bundled context): a relative one is resolved against the page URL
    (RFC 3986); one with a space is no IRI, and no quad holds it, as in JSON-LD's RDF conversion
    (rdflib wrote the page's own URL there, a value the markup never gave)."""
    doc = {
        "@context": "https://schema.org",
        "@type": "Organization",
        "name": "O",
        "url": "../about/",
        "logo": "/img/logo b.png",
        "sameAs": "#org",
    }
    url = "http://a.example/shop/item/page.html?id=1"
    lines, rejects = quads(tmp_path, warc_of(tmp_path, {url: page(json.dumps(doc))}))
    assert rejects == []
    objects = {ln.split(" ")[1]: ln.split(" ")[2] for ln in lines}
    assert objects["<http://schema.org/url>"] == "<http://a.example/shop/about/>"
    assert objects["<http://schema.org/sameAs>"] == "<http://a.example/shop/item/page.html?id=1#org>"
    assert "<http://schema.org/logo>" not in objects
    assert not any(f"<{url}> <{url}>" in ln or ln.split(" ")[2] == f"<{url}>" for ln in lines)


def test_a_lone_surrogate_is_a_reject_and_the_file_goes_on(tmp_path):
    """A JSON string may escape half a surrogate pair (``"\\ud800"``): it is no Unicode scalar value
    and has no UTF-8 form. The block is a reject row saying so; the page's other block and the
    next page are written. Before, the write failed and ended the whole file."""
    bad = '{"@context": "https://schema.org", "@type": "Thing", "name": "a\\ud800b"}'
    good = json.dumps({"@context": "https://schema.org", "@type": "Thing", "name": "fine"})
    pages = {"http://a.example/1": page(bad, good), "http://a.example/2": page(good)}
    lines, rejects = quads(tmp_path, warc_of(tmp_path, pages))
    assert [r["reason"] for r in rejects] == [
        "http://a.example/1: block 0: ValueError: a string holds the lone surrogate U+D800, no Unicode scalar value"
    ]
    assert sorted(_LINE.match(ln).group(4) for ln in lines if '"fine"' in ln) == [
        "http://a.example/1",
        "http://a.example/2",
    ]
