"""Markup reading on a page is bounded (issue 22): a block over ``max_markup_nodes`` or
``max_markup_chars`` is refused with a reason before it is read, markup reading runs under
``time_limit_s`` like every other step of a page, and its work grows linearly with the number of
root entities (counted in operations, n against 4n)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.schemaorg.test_markup_bounds import operations
from udfs.corpus import html as P
from udfs.corpus.wdc_quads import jsonld_to_quads
from udfs.runtime.config import load_config
from udfs.schemaorg import markup as M

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "html" / "extruct-samples"
CREATIVE = SAMPLES / "schema.org" / "CreativeWork.001.html"  # a real page: one Book-bearing block


def _cfg(**kw):
    return P.PageConfig.of(load_config().pages, **{"time_limit_s": 30.0, **kw})


def _with_block(html: str, data) -> bytes:
    script = f"<script type='application/ld+json'>{json.dumps(data)}</script>"
    return html.replace("</body>", script + "</body>", 1).encode()


def _roots(n: int) -> dict:
    return {
        "@context": "https://schema.org",
        "@graph": [{"@type": "Thing", "@id": f"http://x.example/{i}", "name": f"n{i}"} for i in range(n)],
    }


@pytest.fixture
def parsed(monkeypatch):
    """The sizes (JSON values) of every markup parse_markup is asked to read."""
    sizes: list[int] = []
    real = M.parse_markup

    def counting(markup, **kw):
        sizes.append(M.count_json_values(markup, 10**9))
        return real(markup, **kw)

    monkeypatch.setattr(M, "parse_markup", counting)
    return sizes


def test_a_markup_over_the_node_limit_is_a_reason_and_never_read(parsed):
    page = CREATIVE.read_text(encoding="utf-8")
    big = _roots(5000)  # 5000 roots: 20,004 JSON values
    cfg = _cfg(max_markup_nodes=10_000)
    r = P.process_html(_with_block(page, big), "text/html", ["Book"], cfg)
    # the real block still counts; the big one is named with the limit and the start of its text
    assert r["status"] == P.OK and r["matched_block"] == 0
    assert r["markup_errors"] == [r["markup_errors"][0]] and r["markup_errors"][0].startswith(
        'block 1: markup over max_markup_nodes=10000 JSON values (starts \'{"@context": "https://schema.org"'
    )
    assert r["reason"] == r["markup_errors"][0]
    assert len(r["markups"]) == 2 and len(r["markups"][1]) <= cfg.max_markup_chars
    # nothing of the size of the big block was parsed
    assert parsed and max(parsed) < 10_000
    # alone on a page it makes the page a parse_error with that reason
    alone = P.process_html(_with_block("<html><body></body></html>", big), "text/html", ["Thing"], cfg)
    assert alone["status"] == P.PARSE_ERROR and "max_markup_nodes=10000" in alone["reason"]
    # under the limit the same block is read, and its first Thing is the human markup
    ok = P.process_html(
        _with_block("<html><body></body></html>", big), "text/html", ["Thing"], _cfg(max_markup_nodes=30_000)
    )
    assert ok["status"] == P.OK and json.loads(ok["human_markup"])["@id"] == "http://x.example/0"


def test_a_markup_over_the_size_limit_is_a_reason_and_never_read(parsed):
    page = CREATIVE.read_text(encoding="utf-8")
    big = {"@context": "https://schema.org", "@type": "Book", "name": "x" * 5000}
    r = P.process_html(_with_block(page, big), "text/html", ["Book"], _cfg(max_markup_chars=4000))
    assert r["status"] == P.OK and r["matched_block"] == 0
    err = r["markup_errors"][0]
    assert err.startswith('block 1: markup of 5063 characters over max_markup_chars=4000 (starts \'{"@context"')
    assert len(err) < 200  # a sample of the block, not the block
    assert parsed and max(parsed) < 100  # the real block was read, the long one was not (it has 4 values)
    assert all(p != 4 for p in parsed)


def test_markup_reading_runs_under_the_time_limit(monkeypatch):
    """A markup reading that does not end is cut by the page's time limit: a parse_error row."""

    def endless(blocks, cset_types, *rest):
        end = time.monotonic() + 120
        while time.monotonic() < end:  # stands for a reading that never finishes
            pass
        return P.Selection()

    monkeypatch.setattr(P, "select_markup", endless)
    raw = CREATIVE.read_bytes()
    r = P.process_html(raw, "text/html", ["Book"], _cfg(time_limit_s=1.0))
    assert r["status"] == P.PARSE_ERROR and r["reason"] == "markup reading exceeded 1 s"


def test_reading_a_page_of_many_roots_grows_linearly():
    """The reported page (250k root entities in one block) at n and 4n roots: checking the block
    and selecting its human markup cost at most 5x for 4x the roots."""
    cfg = _cfg()

    def read(n):
        blocks = [P.JsonLdBlock(0, json.dumps(_roots(n)), _roots(n))]
        return lambda: P.read_markups(blocks, ["NoSuchType"], cfg)

    read(5)()  # caches outside the count
    small, large = operations(read(300)), operations(read(1200))
    assert large <= 5 * small, (small, large)


def test_a_block_to_quads_grows_linearly():
    """A block to WDC-style quads (udfs/corpus/wdc_quads.py: read, then written as lines), with a
    context on every node: at most 5x the work for 4x the nodes."""

    def step(doc):
        return jsonld_to_quads(doc, "http://t.example/page")

    def make(n):
        return {
            "@graph": [
                {
                    "@context": "https://schema.org",
                    "@type": "Thing",
                    "knows": {"@context": {"a": "http://a.example/"}, "name": "x"},
                }
                for _ in range(n)
            ]
        }

    step(make(5))
    small, large = make(300), make(1200)
    ops_small, ops_large = operations(lambda: step(small)), operations(lambda: step(large))
    assert ops_large <= 5 * ops_small, (ops_small, ops_large)
