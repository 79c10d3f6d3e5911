"""Pages extraction against html5lib (testkit.fuzz.pages) and its limits on real pages made deep:
nesting past lxml's depth limits is a parse_error naming the limit (before: what lay below depth 256
was dropped without a word: ``ok`` with text_chars 0 when the JSON-LD sat above the cut, else
``no_matching_markup``), a block after ``</html>`` is read, a block inside ``<svg>`` is refused with a
reason, and an ``ok`` page with no text says so."""

from __future__ import annotations

import re
from pathlib import Path

import lxml.html
import pytest

from testkit.fuzz import pages as Z
from udfs.corpus import html as P
from udfs.corpus.encoding import decode_html
from udfs.runtime.config import load_config

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "html" / "extruct-samples"
CREATIVE = SAMPLES / "schema.org" / "CreativeWork.001.html"
CONF = load_config().pages


def _cfg(**kw) -> P.PageConfig:
    return P.PageConfig.of(CONF, **{"time_limit_s": 30.0, **kw})


def _wrapped(n: int) -> bytes:
    """The real page with its body's content (its JSON-LD block included) inside ``n`` <div>s."""
    page = CREATIVE.read_bytes()
    j = Z._body_at(page)
    end = page.lower().rfind(b"</body>")
    return page[:j] + b"<div>" * n + page[j:end] + b"</div>" * n + page[end:]


def test_max_html_depth_is_where_lxml_stops():
    """The configured depth is lxml's own limit (libxml2 without huge_tree, as trafilatura parses):
    a tree 256 deep parses whole, 257 deep is cut with ERR_RESOURCE_LIMIT and no exception."""
    assert CONF.max_html_depth == P.LXML_DEPTH_LIMIT == 256
    for n, depth, cut in ((250, 256, False), (251, 257, True)):
        parser = lxml.html.HTMLParser(encoding="UTF-8")
        lxml.html.fromstring(_wrapped(n), parser=parser)
        assert any("Excessive depth" in e.message for e in parser.error_log) is cut
        assert P.html_tree(_wrapped(n)).depth == depth


@pytest.mark.parametrize("n", [251, 300, 1000])
def test_nesting_past_lxml_limit_is_a_parse_error_not_an_empty_success(n):
    row = P.process_html(_wrapped(n), "text/html", ["Book"], _cfg())
    assert row["status"] == P.PARSE_ERROR, row
    assert row["reason"] == f"HTML nested {n + 6} elements deep, over max_html_depth=256; not read"
    assert row["text"] is None and row["markups"] == []


def test_nesting_under_the_limit_reads_text_and_markup():
    row = P.process_html(_wrapped(250), "text/html", ["Book"], _cfg())
    assert row["status"] == P.OK and row["text_chars"] > 300 and row["root_types"] == ["WebPage"]


def test_nesting_past_the_huge_tree_limit_names_it():
    row = P.process_html(_wrapped(3000), "text/html", ["Book"], _cfg(max_html_depth=5000))
    assert row["status"] == P.PARSE_ERROR
    assert row["reason"].startswith("HTML nested deeper than 2048 elements: lxml's parser stops there")


def test_html2text_alone_reads_past_trafilaturas_limit_when_allowed():
    """With html2text as both extractors and a higher max_html_depth, a 1,006-deep page is read
    (html2text does not use lxml); with trafilatura the same page is a parse_error naming it."""
    deep = _wrapped(1000)
    row = P.process_html(
        deep,
        "text/html",
        ["Book"],
        _cfg(max_html_depth=2000, text_extractor="html2text", judge_text_extractor="html2text"),
    )
    assert row["status"] == P.OK and row["text_chars"] > 300
    row = P.process_html(deep, "text/html", ["Book"], _cfg(max_html_depth=2000))
    assert row["status"] == P.PARSE_ERROR and "trafilatura's lxml parser stops at 256" in row["reason"]


def test_block_after_the_html_end_tag_is_read():
    """libxml2 drops everything after </html>; HTML5 parsers put it in the body (before: 1 block)."""
    extra = b'<script type="application/ld+json">{"@context": "https://schema.org", "@type": "Thing", "name": "late"}</script>'
    page = CREATIVE.read_bytes() + extra + b"<p>after the end</p>"
    blocks = P.jsonld_blocks(decode_html(page, "text/html"))
    assert [b.data.get("name") for b in blocks] == [None, "late"]
    assert [b.raw for b in blocks] == Z.reference_blocks(page, "text/html")[0]
    # an end tag inside a script's text is not a tag: left as it is
    inside = b'<html><body><script type="application/ld+json">{"name": "</html>"}</script></body></html>'
    assert P.jsonld_blocks(inside)[0].data == {"name": "</html>"}


def test_block_inside_svg_is_refused_with_a_reason():
    page = CREATIVE.read_bytes()
    j = Z._body_at(page)
    svg = b'<svg><script type="application/ld+json">{"@type": "Thing", "name": "a</b>c"}</script></svg>'
    row = P.process_html(page[:j] + svg + page[j:], "text/html", ["Book"], _cfg())
    assert row["status"] == P.OK
    assert any(re.match(r"block 0: a JSON-LD script inside <svg>: HTML5 parsers read", e) for e in row["markup_errors"])


def test_ok_page_without_text_says_so():
    """A real page's JSON-LD with no text around it: ok, and the reason says the text is empty."""
    page = CREATIVE.read_text(encoding="utf-8")
    block = re.search(r"<script type=\"application/ld\+json\">.*?</script>", page, re.S).group()
    row = P.process_html(f"<html><body>{block}</body></html>".encode(), "text/html", ["Book"], _cfg())
    assert row["status"] == P.OK and row["text_chars"] == 0
    assert "empty text: trafilatura extracted no text from the page" in row["reason"]


def test_differential_round_against_html5lib(tmp_path):
    tallies = Z.fuzz(tmp_path, seed=1, rounds=1)
    assert {t.cls for t in tallies} == set(Z.CLASSES)
    assert all(t.inputs >= Z.PAGES_PER_CLASS for t in tallies)
    assert [(t.cls, t.examples) for t in tallies if t.discrepancies] == []
