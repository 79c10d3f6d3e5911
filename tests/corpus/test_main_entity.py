"""The entity a page is about when the pages job is given no C-set types (udfs/corpus/html.py
``select_main_entity``, rule in conf/main_entity.toml): each branch on constructed markup, the
rule read from its file, the C-set route untouched, and real pages of extruct's samples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from udfs.corpus import html as P
from udfs.corpus import main_entity as ME
from udfs.runtime.config import ConfigError, load_config

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "data" / "html" / "extruct-samples"
URL = "https://blog.example/post/"
CTX = "https://schema.org"


def _blocks(*docs) -> list[P.JsonLdBlock]:
    html = "".join(f"<script type='application/ld+json'>{json.dumps(d)}</script>" for d in docs)
    blocks = P.jsonld_blocks(f"<html><body>{html}</body></html>")
    for b in blocks:
        P.check_block(b)
    return blocks


def _yoast(*, main_entity: bool = True, of_page: bool = False) -> dict:
    """A Yoast-like block: everything in one @graph, the site's nodes first."""
    webpage = {"@type": "WebPage", "@id": URL + "#webpage", "url": URL, "name": "A post"}
    if main_entity:
        webpage["mainEntity"] = {"@id": URL + "#article"}
    article = {"@type": "Article", "@id": URL + "#article", "headline": "A post", "author": {"@id": "#jo"}}
    if of_page:
        article["mainEntityOfPage"] = {"@id": URL + "#webpage"}
    return {
        "@context": CTX,
        "@graph": [
            {"@type": "WebSite", "@id": "https://blog.example/#website", "name": "Blog"},
            {"@type": "Organization", "@id": "https://blog.example/#org", "name": "Blog Inc"},
            webpage,
            {"@type": "BreadcrumbList", "@id": URL + "#breadcrumb", "itemListElement": []},
            {"@type": "NewsArticle", "@id": URL + "#other", "headline": "A related story"},
            article,
            {"@type": "Person", "@id": "#jo", "name": "Jo"},
        ],
    }


def _rule(tmp_path, text: str) -> ME.MainEntityRule:
    f = tmp_path / f"main_entity_{len(list(tmp_path.iterdir()))}.toml"
    f.write_text(text, encoding="utf-8")
    return ME.load_main_entity_rule(str(f))


def test_main_entity_of_the_web_page_node_decides_in_a_yoast_graph():
    sel = P.select_markup(_blocks(_yoast()), None, URL)
    assert sel.main_entity_rule == "mainEntity"
    assert sel.root_types == ["Article"] and sel.block_index == 0
    # the Article node as its own document, with the graph's context (what it references by @id
    # stays a reference, as on the C-set route)
    assert sel.human_markup["@context"] == CTX and sel.human_markup["@id"] == URL + "#article"


def test_main_entity_nested_under_the_web_page_is_kept_with_the_context():
    doc = {"@context": CTX, "@type": "ItemPage", "mainEntity": {"@type": "Product", "name": "Lamp"}}
    sel = P.select_markup(_blocks({"@context": CTX, "@type": "WebSite", "name": "s"}, doc), None)
    assert sel.main_entity_rule == "mainEntity" and sel.root_types == ["Product"] and sel.block_index == 1
    assert sel.human_markup == {"@context": CTX, "@type": "Product", "name": "Lamp"}


def test_a_list_of_main_entities_names_none():
    """An FAQPage's Questions are a section of the page, not its subject."""
    faq = {
        "@context": CTX,
        "@type": "FAQPage",
        "mainEntity": [{"@type": "Question", "name": "q1"}, {"@type": "Question", "name": "q2"}],
    }
    sel = P.select_markup(_blocks({"@context": CTX, "@type": "Product", "name": "Lamp"}, faq), None)
    assert sel.main_entity_rule == "most specific" and sel.root_types == ["Product"]


def test_main_entity_of_page_pointing_at_the_web_page_node_or_the_url():
    sel = P.select_markup(_blocks(_yoast(main_entity=False, of_page=True)), None, URL)
    assert sel.main_entity_rule == "mainEntityOfPage" and sel.root_types == ["Article"]
    # the page's URL (another spelling of it, a fragment aside): the Product, though the
    # BlogPosting's type lies deeper
    docs = (
        {"@context": CTX, "@type": "BlogPosting", "headline": "b"},
        {"@context": CTX, "@type": "Product", "name": "p", "mainEntityOfPage": "HTTPS://blog.example/post/#x"},
    )
    sel = P.select_markup(_blocks(*docs), None, URL)
    assert sel.main_entity_rule == "mainEntityOfPage" and sel.root_types == ["Product"]
    # another page's URL, or no page URL known: it points at no page of this markup
    for url in ("https://blog.example/other/", None):
        sel = P.select_markup(_blocks(*docs), None, url)
        assert sel.main_entity_rule == "most specific" and sel.root_types == ["BlogPosting"]


def test_most_specific_root_that_is_not_furniture():
    sel = P.select_markup(_blocks(_yoast(main_entity=False)), None, URL)
    # NewsArticle (Thing > CreativeWork > Article > NewsArticle) outranks Article and Person
    assert sel.main_entity_rule == "most specific" and sel.root_types == ["NewsArticle"]
    assert ME.type_depth("Thing") == 0 and ME.type_depth("Article") == 2 and ME.type_depth("NewsArticle") == 3
    assert ME.type_depth("NoSuchType") == -1
    # equal depth: document order
    docs = [{"@context": CTX, "@type": t, "name": t} for t in ("Event", "Product", "Place")]
    assert P.select_markup(_blocks(*docs), None).root_types == ["Event"]


def test_first_typed_root_when_every_root_is_furniture():
    docs = (
        {"@context": CTX, "name": "untyped"},
        {"@context": CTX, "@type": "WebSite", "name": "s"},
        {"@context": CTX, "@type": "Organization", "name": "o"},
    )
    sel = P.select_markup(_blocks(*docs), None)
    assert sel.main_entity_rule == "first typed root" and sel.root_types == ["WebSite"] and sel.block_index == 1
    nothing = P.select_markup(_blocks({"@context": CTX, "name": "untyped"}), None)
    assert nothing.human_markup is None and nothing.main_entity_rule is None


def test_the_rule_is_read_from_its_file(tmp_path):
    blocks = _blocks(_yoast(main_entity=False))
    assert P.select_markup(blocks, None, URL).root_types == ["NewsArticle"]
    # NewsArticle made furniture: the Article is the most specific root left (WebSite and WebPage,
    # as deep, are furniture too and come first)
    rule = _rule(
        tmp_path,
        'branches = ["most specific"]\nfurniture = ["NewsArticle", "BreadcrumbList", "WebSite"]\n'
        'furniture_with_subtypes = ["WebPage"]\n',
    )
    sel = P.select_markup(blocks, None, URL, rule)
    assert sel.root_types == ["Article"] and sel.main_entity_rule == "most specific"
    # nothing is furniture: Organization's subtree is no deeper, BreadcrumbList (Thing > Intangible >
    # ItemList > BreadcrumbList) is
    sel = P.select_markup(blocks, None, URL, _rule(tmp_path, 'branches = ["most specific"]\n'))
    assert sel.root_types == ["BreadcrumbList"]
    # only the old branch: the first typed root, the site's node
    sel = P.select_markup(_blocks(_yoast()), None, URL, _rule(tmp_path, 'branches = ["first typed root"]\n'))
    assert sel.root_types == ["WebSite"] and sel.main_entity_rule == "first typed root"
    for bad in ('branches = ["largest"]\n', 'branches = ["mainEntity", "mainEntity"]\n', "furniture = 3\n", "x = 1\n"):
        with pytest.raises(ConfigError):
            _rule(tmp_path, bad)


def test_the_project_rule_lists_site_furniture():
    rule = ME.load_main_entity_rule()
    assert rule.branches == ME.MAIN_ENTITY_BRANCHES
    assert rule.is_furniture(["WebSite"]) and rule.is_furniture(["CollectionPage"])  # a WebPage subtype
    assert not rule.is_furniture(["Article"]) and not rule.is_furniture(["Organization", "LocalBusiness"])
    assert not rule.is_furniture(["http://example.org/Thing"])


def test_the_cset_route_ignores_the_rule():
    blocks = _blocks(_yoast())
    sel = P.select_markup(blocks, ["WebSite"], URL)
    assert sel.root_types == ["WebSite"] and sel.main_entity_rule is None
    # the first root whose entities (IRI references followed) hold a Person: the WebPage, through
    # its mainEntity the Article and the Article's author, where the rule would keep the Article
    sel = P.select_markup(blocks, ["Person"], URL)
    assert sel.root_types == ["WebPage"] and sel.main_entity_rule is None
    # a rule that fails on every branch would leave a page without C-set types unmatched
    assert P.select_markup(blocks, ["Organization"], URL, object()).root_types == ["Organization"]


def _cfg(**kw):
    return P.PageConfig.of(load_config().pages, **{"time_limit_s": 30.0, "text_extractor": "html2text", **kw})


def test_real_page_names_its_main_entity():
    """extruct's CreativeWork sample: a WebPage whose mainEntity is the book the page presents."""
    raw = (SAMPLES / "schema.org" / "CreativeWork.001.html").read_bytes()
    r = P.process_html(raw, "text/html", None, _cfg())
    assert r["status"] == P.OK and r["main_entity_rule"] == "mainEntity" and r["root_types"] == ["Book"]
    assert json.loads(r["human_markup"])["@type"] == "Book"
    cset = P.process_html(raw, "text/html", ["Book"], _cfg())
    assert cset["root_types"] == ["WebPage"] and cset["main_entity_rule"] is None


def test_real_tour_page_is_about_the_band():
    """A Songkick tour page: four MusicEvent roots, then the MusicGroup the page is about."""
    raw = (SAMPLES / "songkick" / "elysianfields.html").read_bytes()
    r = P.process_html(raw, "text/html", None, _cfg())
    assert r["main_entity_rule"] == "most specific" and r["root_types"] == ["MusicGroup"]


def test_pages_contract_has_the_rule_column_optional():
    from udfs.corpus.fetch import PAGES, PAGES_SCHEMA

    assert "main_entity_rule" in PAGES_SCHEMA.names
    assert "main_entity_rule" in PAGES.optional and "main_entity_rule" not in PAGES.required


def test_the_pages_job_refuses_a_bad_rule_file_before_any_work(tmp_path, monkeypatch, capsys):
    """A rule file the loader refuses stops the pages job in its preflight: one line, exit 2,
    nothing under the output (not one parse_error row per page, after Spark's work)."""
    from jobs.pages import PagesJob

    bad = tmp_path / "main_entity.toml"
    bad.write_text('branches = ["mainEntity", "nonsense"]\n')
    monkeypatch.setattr(ME, "MAIN_ENTITY_RULE_FILE", str(bad))
    urls = tmp_path / "urls.csv"
    urls.write_text("page_url\nhttp://extruct-samples.example/songkick/elysianfields_1.html\n")
    out = tmp_path / "out"
    argv = ["--input", str(urls), "--warc-index", str(urls), "--output", str(out)]
    with pytest.raises(SystemExit) as stop:
        PagesJob(argv).main()
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "main_entity.toml: branches must name" in err, err
    assert len(err.strip().splitlines()) == 1 and not out.exists()
