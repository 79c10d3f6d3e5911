"""The text the judge reads: ``main+rest`` (trafilatura's main text, then the page's other lines)
on real bundled pages, the two texts of pages/ (``text`` for generation, ``judge_text`` for
factuality), and ``main_and_rest``'s rules on constructed texts."""

from __future__ import annotations

from pathlib import Path

from udfs.agents_bench.groundtruth import mentions
from udfs.corpus import html as P
from udfs.corpus import text as T
from udfs.runtime.config import load_config

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "html" / "extruct-samples"
RECIPES = SAMPLES / "songkick" / "jsonld_empty_item_test.html"  # an ItemList of recipes, despite the folder
CREATIVE = SAMPLES / "schema.org" / "CreativeWork.001.html"


def _cfg(**kw) -> P.PageConfig:
    return P.PageConfig.of(load_config().pages, **kw)


def test_main_and_rest_adds_what_the_main_text_drops():
    html = RECIPES.read_text(encoding="utf-8")
    texts = T.extract_texts(html, T.TEXT_EXTRACTORS)
    main, whole, both = texts["trafilatura"], texts["html2text"], texts["main+rest"]
    # the main text comes first, whole, then the rest
    assert both.startswith(main + T.REST_SEPARATOR)
    # the ItemList's author is in the page's byline, which the main-content heuristic drops
    assert not mentions(main, "Rashanda Cobbins")
    assert mentions(both, "Rashanda Cobbins") and mentions(whole, "Rashanda Cobbins")
    # every line of the whole-page text is held by the main text or is a line of the rest
    held = " ".join(main.split()).casefold().translate(T._QUOTES)
    rest = {T._line_key(line) for line in both[len(main) :].splitlines()}
    for line in whole.splitlines():
        key = T._line_key(line)
        assert not key or T._holds(held, key) or key in rest, line


def test_creativework_page_text_is_the_visible_text():
    """The issue's CreativeWork.001 page: the visible text (both books' microdata) is in every
    extractor's text, "Translator: Robert Martin Adams" included; the JSON-LD's Book ("The Catcher
    in the Rye") is stated nowhere on the page, so no extractor can hold it."""
    html = CREATIVE.read_text(encoding="utf-8")
    for name, text in T.extract_texts(html, T.TEXT_EXTRACTORS).items():
        assert mentions(text, "Robert Martin Adams") and mentions(text, "Rouge et le noir"), name
        assert not mentions(text, "The Catcher in the Rye") and not mentions(text, "Little, Brown"), name


def test_pages_row_carries_both_texts():
    raw = RECIPES.read_bytes()
    r = P.process_html(raw, "text/html", None, _cfg(text_extractor="trafilatura", judge_text_extractor="main+rest"))
    assert r["status"] == P.OK
    assert r["text"] == T.extract_text(raw.decode("utf-8"), "trafilatura")
    assert r["judge_text"].startswith(r["text"]) and len(r["judge_text"]) > len(r["text"])
    assert r["text_chars"] == len(r["text"])
    # one extractor for both: the same text twice
    same = P.process_html(raw, "text/html", None, _cfg(text_extractor="html2text", judge_text_extractor="html2text"))
    assert same["judge_text"] == same["text"]
    # both texts are cut to max_text_chars, the judge's keeping the main text first
    cut = P.process_html(raw, "text/html", None, _cfg(judge_text_extractor="main+rest", max_text_chars=500))
    assert cut["judge_text"] == r["judge_text"][:500] and cut["text"] == r["text"][:500]


def test_the_default_judge_text_is_main_and_rest():
    conf = load_config().pages
    assert conf.judge_text_extractor == "main+rest" and conf.text_extractor == "trafilatura"


def test_main_and_rest_rules():
    main = "Rouge et le noir\nAuthor:\nStendhal\nPrice: 2024 EUR"
    whole = "# Rouge et le noir\n\nAuthor: **Stendhal**\n\n* Home\n* Home\nRating 4\n\n2024\n4"
    out = T.main_and_rest(main, whole)
    # held lines (Markdown marks, case and line breaks aside) are left out, the rest kept once,
    # in page order; "4" is not held by "2024"
    assert out == main + T.REST_SEPARATOR + "* Home\nRating 4\n4"
    assert T.main_and_rest(main, "Author: Stendhal") == main
    assert T.main_and_rest("", "a line\nanother") == "a line\nanother"
    assert T._holds("x 2024 y", "2024") and not T._holds("x 2024 y", "4") and T._holds("4.5/5", "4.5")


def test_unknown_extractor_is_named():
    import pytest

    with pytest.raises(ValueError, match="main\\+rest"):
        T.extract_texts("<p>x</p>", ["trafilatura", "nope"])
