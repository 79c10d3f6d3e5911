"""udfs/corpus/generators.py and conf/generators.toml: who wrote each JSON-LD block.

Constructed pages exercise every evidence entry of the shipped rules (a test checks that each
entry decides at least one of them on its own), ``unknown`` (nothing matches, evidence outside
its plugin's comments, a look-alike off its platform, a conflict) and two generators on one page;
real pages check the bundled data's labels (data/generators/labels.csv) and, where
``../shared/data/llm4schemaorg-pset`` is at hand, every label of the paper's pages; the pages
job's columns and evaluate's ``human_generator`` are checked on real pages too.
"""

from __future__ import annotations

import importlib.util
import json

import pytest

from tests.conftest import DATA, PSET_DATA, ROOT
from udfs.corpus import generators as G
from udfs.corpus import html as P
from udfs.runtime.config import ConfigError, load_config, read_toml

RULES_FILE = ROOT / "conf" / "generators.toml"
PLAIN = '{"@context": "https://schema.org", "@type": "Organization", "name": "Acme"}'


def _script(attrs: str = "", block: str = PLAIN) -> str:
    return f'<script type="application/ld+json"{(" " + attrs) if attrs else ""}>{block}</script>'


def _page(head: str = "", body: str = "") -> str:
    return f"<!DOCTYPE html><html><head><title>t</title>{head}</head><body><p>text</p>{body}</body></html>"


def attribute(html: str, rules: G.GeneratorRules | None = None) -> list[G.Attribution]:
    tree = P.html_tree(html)
    blocks = P.jsonld_blocks(html, tree)
    return G.attribute_page(html, tree.root, P.jsonld_scripts(tree.root), rules or G.load_rules(RULES_FILE), blocks)


WP = '<meta name="generator" content="WordPress 6.0.2" />'
YOAST_OPEN = (
    "<!-- This site is optimized with the Yoast SEO plugin v9.2.1 - https://yoast.com/wordpress/plugins/seo/ -->"
)
YOAST_CLOSE = "<!-- / Yoast SEO plugin. -->"
WOO_GRAPH = (
    '{"@context":"https:\\/\\/schema.org\\/","@graph":[{"@context":"https:\\/\\/schema.org\\/",'
    '"@type":"Product","@id":"https:\\/\\/shop.example\\/p\\/#product","name":"Mug"}]}'
)
PRETTY_GRAPH = '{\n    "@context": "https://schema.org",\n    "@graph": [\n        {\n            "@type": "WebPage"\n        }\n    ]\n}'


def _ided(at_id: str) -> str:
    return json.dumps({"@context": "https://schema.org", "@graph": [{"@type": "WebPage", "@id": at_id}]})


# (case, page, the block looked at, its generator, a piece of its evidence)
CASES = [
    ("yoast class", _page(_script('class="yoast-schema-graph"')), 0, "yoast", 'class="yoast-schema-graph"'),
    (
        "yoast comments (version 9: no class)",
        _page(YOAST_OPEN + _script() + YOAST_CLOSE),
        0,
        "yoast",
        "This site is optimized with the Yoast SEO plugin",
    ),
    (
        "yoast person id",
        _page(_script(block=_ided("https://a.example/#/schema/person/" + "0a" * 16))),
        0,
        "yoast",
        "/#/schema/person/",
    ),
    ("rank math class", _page(_script('class="rank-math-schema-pro"')), 0, "rank-math", "rank-math-schema-pro"),
    (
        "rank math comments",
        _page(
            "<!-- Search Engine Optimization by Rank Math PRO - https://s.rankmath.com/home -->"
            + _script()
            + "<!-- /Rank Math WordPress SEO plugin -->"
        ),
        0,
        "rank-math",
        "Rank Math PRO",
    ),
    (
        "rank math id on WordPress",
        _page(WP + _script(block=_ided("https://a.example/p/#richSnippet"))),
        0,
        "rank-math",
        "#richSnippet",
    ),
    ("aioseo class", _page(_script('class="aioseo-schema"')), 0, "aioseo", "aioseo-schema"),
    ("aioseop class (v3)", _page(_script('class="aioseop-schema"')), 0, "aioseo", "aioseop-schema"),
    (
        "aioseo comments",
        _page("<!-- All in One SEO 4.2.5.1 - aioseo.com -->" + _script() + "<!-- All in One SEO -->"),
        0,
        "aioseo",
        "All in One SEO 4.2.5.1",
    ),
    ("saswp class", _page(_script('class="saswp-custom-schema-markup-output"')), 0, "saswp", "saswp-custom"),
    (
        "schema pro comments",
        _page(
            "<!-- breadcrumb Schema optimized by Schema Pro -->"
            + _script()
            + "<!-- / breadcrumb Schema optimized by Schema Pro -->"
        ),
        0,
        "schema-pro",
        "breadcrumb Schema optimized",
    ),
    ("schema app data-schema", _page(_script('data-schema="361-page-App"')), 0, "schema-app", "361-page-App"),
    (
        "schema app breadcrumb beside its page block",
        _page(_script('data-schema="361-page-App"') + _script('data-schema="Breadcrumb"')),
        1,
        "schema-app",
        'data-schema="361-page-App"',
    ),
    ("wpsso script id", _page(_script('id="wpsso-schema-json"')), 0, "wpsso", "wpsso-schema-json"),
    (
        "wpsso id with its generator meta",
        _page(
            '<meta name="generator" content="WPSSO Core 13.5.0/L*"/>' + _script(block=_ided("/2022/04/a/#sso/article"))
        ),
        0,
        "wpsso",
        "#sso/article",
    ),
    (
        "smartcrawl comments",
        _page("<!-- SEO meta tags powered by SmartCrawl https://wpmudev.com -->" + _script() + "<!-- /SEO -->"),
        0,
        "smartcrawl",
        "SmartCrawl",
    ),
    (
        "smartcrawl id",
        _page(_script(block=_ided("https://a.example/#schema-website"))),
        0,
        "smartcrawl",
        "#schema-website",
    ),
    (
        "the seo framework comments",
        _page(
            "<!-- The SEO Framework by Sybre Waaijer -->"
            + _script()
            + "<!-- / The SEO Framework by Sybre Waaijer | 2.10ms meta | 0.10ms boot -->"
        ),
        0,
        "the-seo-framework",
        "Sybre Waaijer",
    ),
    (
        "wp seo structured data comments",
        _page(
            "<!-- This site is optimized with Phil Singleton's WP SEO Structured Data Plugin v2.7.1 - https://kcseopro.com -->"
            + _script()
            + _script()
            + "<!-- / WP SEO Structured Data Plugin. -->"
        ),
        1,
        "wp-seo-structured-data",
        "Phil Singleton",
    ),
    (
        "schema (schema.press) comments",
        _page(
            "<!-- This site is optimized with the Schema plugin v1.7.9.6 - https://schema.press -->"
            + _script()
            + "<!-- / Schema plugin -->"
        ),
        0,
        "schema-wp",
        "Schema plugin v1.7.9.6",
    ),
    ("uschema data-id", _page(_script('data-id="uschema-generated-json-schema"')), 0, "uschema", "uschema-generated"),
    (
        "uschema comment right before",
        _page(body="<!-- Schema generated by uSchema.io plugin -->\n  " + _script()),
        0,
        "uschema",
        "uSchema.io",
    ),
    (
        "project supremacy comment right before",
        _page("<!-- Schema.org data by Project Supremacy -->" + _script()),
        0,
        "project-supremacy",
        "Project Supremacy",
    ),
    (
        "power bio box pro class",
        _page(_script('class="power-bio-box-pro-schema"')),
        0,
        "power-bio-box-pro",
        "power-bio-box",
    ),
    (
        "mediavine card after the block",
        _page(body=_script() + '\n<section class="mv-create-card mv-recipe-card"><h2>Soup</h2></section>'),
        0,
        "mediavine-create",
        "mv-create-card",
    ),
    (
        "mediavine block around the script",
        _page(body='<div class="wp-block-mv-recipe">' + _script() + "<section><h2>Soup</h2></section></div>"),
        0,
        "mediavine-create",
        "wp-block-mv-recipe",
    ),
    (
        "woocommerce graph on a WooCommerce page",
        _page('<meta name="generator" content="WooCommerce 6.8.2" />', _script(block=WOO_GRAPH)),
        0,
        "woocommerce",
        "WooCommerce 6.8.2",
    ),
    (
        "woocommerce graph with the plugin's assets",
        _page(
            '<link rel="stylesheet" href="/wp-content/plugins/woocommerce/assets/css/w.css">', _script(block=WOO_GRAPH)
        ),
        0,
        "woocommerce",
        "/plugins/woocommerce/",
    ),
    (
        "seomatic comments",
        _page("<!-- BEGIN SEOmatic rendered SEO Meta -->" + _script() + "<!-- END SEOmatic rendered SEO Meta -->"),
        0,
        "seomatic",
        "SEOmatic rendered",
    ),
    (
        "seomatic identity",
        _page('<meta name="generator" content="SEOmatic">' + _script(block=_ided("https://a.example/#identity"))),
        0,
        "seomatic",
        "#identity",
    ),
    (
        "drupal schema_metatag graph",
        _page('<meta name="Generator" content="Drupal 9 (https://www.drupal.org)" />' + _script(block=PRETTY_GRAPH)),
        0,
        "drupal-schema-metatag",
        "Drupal 9",
    ),
    (
        "microdatapro comments",
        _page(
            body="<!--microdatapro 7.0 company start [json-ld]-->"
            + _script()
            + "<!--microdatapro 7.0 company end [json-ld]-->"
        ),
        0,
        "microdatapro",
        "microdatapro 7.0",
    ),
    (
        "dotdash meredith class",
        _page(_script('class="comp mntl-schema-unified"')),
        0,
        "dotdash-meredith",
        "mntl-schema-unified",
    ),
    (
        "shopify store",
        _page('<script>var Shopify = Shopify || {};\nShopify.shop = "a.myshopify.com";</script>' + _script()),
        0,
        "shopify",
        "Shopify.shop =",
    ),
    ("wix", _page('<meta name="generator" content="Wix.com Website Builder"/>' + _script()), 0, "wix", "Wix.com"),
    (
        "squarespace",
        _page("<!-- This is Squarespace. --><!-- acme -->" + _script()),
        0,
        "squarespace",
        "This is Squarespace.",
    ),
    (
        "lightspeed",
        _page(
            "<!-- (c) 2008-2022 Lightspeed Netherlands B.V. http://www.lightspeedhq.com Generated: 03-10-2022 -->"
            + _script()
        ),
        0,
        "lightspeed",
        "Lightspeed Netherlands",
    ),
    (
        "mediawiki",
        _page('<meta name="generator" content="MediaWiki 1.43.0-wmf.5">' + _script()),
        0,
        "mediawiki",
        "MediaWiki 1.43",
    ),
    (
        "contao",
        _page('<meta name="generator" content="Contao Open Source CMS">' + _script()),
        0,
        "contao",
        "Contao Open Source",
    ),
    (
        "pressbooks",
        _page('<link rel="stylesheet" href="https://books.example/app/themes/pressbooks-book/style.css">' + _script()),
        0,
        "pressbooks",
        "pressbooks-book",
    ),
]


@pytest.mark.parametrize("name,html,block,generator,evidence", CASES, ids=[c[0] for c in CASES])
def test_each_rule_names_its_generator_with_the_evidence(name, html, block, generator, evidence):
    found = attribute(html)[block]
    assert found.generator == generator, found
    assert evidence in found.evidence


def test_every_evidence_entry_of_the_shipped_rules_decides_a_constructed_page_alone():
    """Each entry of conf/generators.toml, as the only rule, names its generator on one of CASES:
    no entry is untested, and none holds only with another's help."""
    data = read_toml(RULES_FILE)
    untested = []
    for entry in data["generator"]:
        for e, item in enumerate(entry["evidence"]):
            alone = G.parse_rules({"generator": [{**entry, "evidence": [item]}]}, "one entry")
            if not any(g == entry["id"] and attribute(html, alone)[b].generator == g for _, html, b, g, _ in CASES):
                untested.append(f"{entry['id']} evidence[{e}]")
    assert untested == []


def test_a_block_no_rule_matches_is_unknown_without_evidence():
    assert attribute(_page(WP + _script())) == [G.Attribution("unknown", None)]


def test_a_block_outside_its_plugins_comments_is_unknown():
    # the plugin's section has closed: a block after it is not the plugin's
    found = attribute(_page(YOAST_OPEN + _script('class="yoast-schema-graph"') + YOAST_CLOSE + _script()))
    assert [f.generator for f in found] == ["yoast", "unknown"]
    # All in One SEO 4 closes its section with "All in One SEO", which must not open another
    aioseo = _page("<!-- All in One SEO 4.1.3.4 -->" + "<!-- All in One SEO -->" + _script())
    assert attribute(aioseo)[0].generator == "unknown"


def test_a_look_alike_off_its_platform_is_unknown():
    """Rank Math's graph shape (#person, #website, #webpage) on a page that is not WordPress: the
    shape alone names nobody; a WooCommerce-spelled graph on a page without WooCommerce neither."""
    graph = json.dumps(
        {
            "@context": "https://schema.org",
            "@graph": [
                {"@type": ["Person", "Organization"], "@id": "https://a.example/#person"},
                {"@type": "WebSite", "@id": "https://a.example/m/#website"},
                {"@type": "CollectionPage", "@id": "https://a.example/m#webpage"},
            ],
        }
    )
    assert attribute(_page(_script(block=graph)))[0].generator == "unknown"
    assert attribute(_page(_script(block=WOO_GRAPH)))[0].generator == "unknown"
    # page-level evidence names only the platforms whose own code writes markup: a WordPress or
    # WooCommerce page's hand-written block stays unknown
    woo_page = _page(WP + '<meta name="generator" content="WooCommerce 6.8.2" />' + _script())
    assert attribute(woo_page)[0].generator == "unknown"


def test_equally_strong_evidence_for_two_generators_is_unknown_and_says_so():
    found = attribute(_page(_script('class="yoast-schema-graph rank-math-schema"')))[0]
    assert found.generator == "unknown"
    assert found.evidence.startswith("conflicting evidence: ")
    assert "yoast: " in found.evidence and "rank-math: " in found.evidence


def test_the_strongest_evidence_decides():
    # a saswp script inside Yoast's comment section: the script's own class is the stronger
    found = attribute(_page(YOAST_OPEN + _script('class="saswp-schema-markup-output"') + YOAST_CLOSE))[0]
    assert found.generator == "saswp"
    # a Shopify store's page-level evidence gives way to a block's own (an app's script class)
    shop = '<script>Shopify.shop = "a.myshopify.com";</script>'
    found = attribute(_page(shop + _script('class="yoast-schema-graph"') + _script()))
    assert [f.generator for f in found] == ["yoast", "shopify"]


def test_two_generators_on_one_page_each_get_their_own():
    html = _page(
        WP + '<meta name="generator" content="WooCommerce 6.8.2" />' + _script('class="yoast-schema-graph"'),
        _script(block=WOO_GRAPH),
    )
    found = attribute(html)
    assert [f.generator for f in found] == ["yoast", "woocommerce"]
    assert 'class="yoast-schema-graph"' in found[0].evidence and "WooCommerce 6.8.2" in found[1].evidence


@pytest.fixture
def no_network(monkeypatch):
    """Any network connection fails the test."""
    import socket

    def refuse(*a, **k):
        raise AssertionError("a network connection was attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def test_nothing_of_the_page_is_fetched_or_run(no_network):
    """A page whose scripts, links and @ids point elsewhere is read as it is: no request is made
    (the no_network fixture fails any connection), no script run."""
    block = json.dumps({"@context": "https://example.org/remote-context.jsonld", "@id": "https://example.org/#x"})
    html = _page(
        '<script src="https://example.org/app.js"></script><link rel="stylesheet" href="https://example.org/a.css">'
        + _script('class="yoast-schema-graph" src="https://example.org/x.json"', block)
    )
    assert attribute(html)[0].generator == "yoast"


# ---- the rules file ------------------------------------------------------------------------------


def _rules(*entries: dict) -> dict:
    return {"generator": list(entries)}


GOOD = {"id": "acme", "name": "Acme SEO", "evidence": [{"script_attribute": "class", "script_value": "acme"}]}


@pytest.mark.parametrize(
    "data,message",
    [
        ({"generator": []}, "no [[generator]] entries"),
        ({"generators": [GOOD]}, "unknown top-level key generators"),
        (_rules(GOOD, GOOD), "[[generator]] 'acme' is given twice"),
        (_rules({**GOOD, "name": ""}), "[[generator]] 'acme' name must be a non-empty string"),
        (_rules({**GOOD, "id": "unknown"}), "[[generator]] 'unknown' id must be lowercase words"),
        (_rules({**GOOD, "id": "Acme SEO"}), "[[generator]] 'Acme SEO' id must be lowercase words"),
        (_rules({**GOOD, "colour": "red"}), "[[generator]] 'acme' has unknown key colour"),
        (_rules({**GOOD, "evidence": []}), "[[generator]] 'acme' evidence must be a non-empty list"),
        (
            _rules({**GOOD, "evidence": [{"raw": "("}]}),
            "[[generator]] 'acme' evidence[0] raw is not a regular expression",
        ),
        (_rules({**GOOD, "evidence": [{"rawtext": "x"}]}), "[[generator]] 'acme' evidence[0] has unknown key rawtext"),
        (_rules({**GOOD, "evidence": [{"raw": 3}]}), "[[generator]] 'acme' evidence[0] raw must be a string"),
        (_rules({**GOOD, "evidence": [{}]}), "[[generator]] 'acme' evidence[0] gives no condition"),
        (
            _rules({**GOOD, "evidence": [{"script_attribute": "class"}]}),
            "script_attribute and script_value go together",
        ),
        (_rules({**GOOD, "evidence": [{"section_start": "x"}]}), "evidence[0] section_start needs a section_end"),
        (_rules({"name": "no id", "evidence": GOOD["evidence"]}), "[[generator]] #1 id must be a non-empty string"),
    ],
)
def test_a_bad_rules_file_is_an_error_naming_the_entry(data, message):
    with pytest.raises(ConfigError) as err:
        G.parse_rules(data, "rules.toml")
    assert str(err.value).startswith("rules.toml: ") and message in str(err.value)


def test_a_missing_rules_file_is_an_error_naming_it(tmp_path):
    with pytest.raises(ConfigError, match="no such configuration file"):
        G.load_rules(tmp_path / "none.toml")


def test_the_pages_job_stops_on_a_bad_rules_file_before_any_page(spark, tmp_path, capsys):
    from jobs.pages import PagesJob

    bad = tmp_path / "rules.toml"
    bad.write_text('[[generator]]\nid = "acme"\nname = "Acme"\nevidence = [{ raw = "(" }]\n')
    (tmp_path / "in.csv").write_text("page_url\nhttp://a.example/\n")
    argv = [
        "--input",
        str(tmp_path / "in.csv"),
        "--warc-index",
        str(tmp_path / "in.csv"),
        "--output",
        str(tmp_path / "out"),
    ]
    with pytest.raises(SystemExit) as stop:
        PagesJob([*argv, "--generator-rules", str(bad)]).main()
    assert stop.value.code == 2
    assert "'acme' evidence[0] raw is not a regular expression" in capsys.readouterr().err
    assert not (tmp_path / "out" / "pages").exists()


# ---- pages/ and evaluate --------------------------------------------------------------------------


def _cfg(**kw):
    return P.PageConfig.of(load_config().pages, **{"time_limit_s": 30.0, **kw})


def test_process_html_gives_the_human_markups_generator_and_every_blocks():
    """The human markup comes from WooCommerce's block (the C-set is the Product); a broken block
    between is no entry of markups, and the generator lists follow markups."""
    yoast = json.dumps(
        {"@context": "https://schema.org", "@graph": [{"@type": "WebPage", "@id": "https://shop.example/p/"}]}
    )
    html = _page(
        WP + '<meta name="generator" content="WooCommerce 6.8.2" />' + _script('class="yoast-schema-graph"', yoast),
        _script(block='{"@context": "https://schema.org", "@type": "Thing",,}') + _script(block=WOO_GRAPH),
    )
    row = P.process_html(html.encode(), "text/html", ["Product"], _cfg())
    assert row["status"] == "ok" and row["matched_block"] == 2
    assert row["generator"] == "woocommerce" and "WooCommerce 6.8.2" in row["generator_evidence"]
    assert len(row["markups"]) == 2
    assert row["markup_generators"] == ["yoast", "woocommerce"]
    assert 'class="yoast-schema-graph"' in row["markup_generator_evidence"][0]
    # a page without a human markup: the lists still, no generator
    none = P.process_html(html.encode(), "text/html", ["Recipe"], _cfg())
    assert none["status"] == "no_matching_markup" and none["generator"] is None
    assert none["markup_generators"] == ["yoast", "woocommerce"]


def test_microdata_items_take_only_page_level_evidence():
    item = '<div itemscope itemtype="https://schema.org/Product"><span itemprop="name">Mug</span></div>'
    shop = '<script>Shopify.shop = "a.myshopify.com";</script>'
    row = P.process_html(
        _page(shop + _script('class="yoast-schema-graph"'), item).encode(), "text/html", None, _cfg(microdata=True)
    )
    assert row["markup_generators"] == ["yoast", "shopify"]
    plain = P.process_html(
        _page(_script('class="yoast-schema-graph"'), item).encode(), "text/html", None, _cfg(microdata=True)
    )
    assert plain["markup_generators"] == ["yoast", "unknown"]


def _record(path, url):
    """(payload, Content-Type) of the response record of ``url`` in the WARC file ``path``."""
    from warcio.archiveiterator import ArchiveIterator

    with open(path, "rb") as fh:
        for rec in ArchiveIterator(fh):
            if rec.rec_type == "response" and rec.rec_headers.get_header("WARC-Target-URI") == url:
                return rec.content_stream().read(), rec.http_headers.get_header("Content-Type")
    raise AssertionError(f"{url} not in {path}")


WIKI = (DATA / "warc" / "cc-main-2024-22-one-page.warc.gz", "https://an.wikipedia.org/wiki/Escopete")


def test_a_real_mediawiki_page_names_mediawiki():
    payload, ctype = _record(*WIKI)
    row = P.process_html(payload, ctype, None, _cfg())
    assert row["status"] == "ok" and row["generator"] == "mediawiki"
    assert row["generator_evidence"] == '<meta name="generator" content="MediaWiki 1.43.0-wmf.5">'


def _benchmark():
    spec = importlib.util.spec_from_file_location("benchmark_generators", ROOT / "benchmarks" / "generators.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _disagreements(source: str) -> tuple[int, list[str]]:
    """(labelled blocks, the ones where the rules disagree with the label) of one source's pages."""
    bench = _benchmark()
    labels = {k: v for k, v in bench.read_labels(bench.LABELS, "all").items() if k[0] == source}
    wanted = {p for _, p in labels}
    pages = bench.pset_pages(PSET_DATA, wanted) if source == "pset" else bench.warc_pages(source, wanted)
    rules, n, wrong = G.load_rules(RULES_FILE), 0, []
    for (_, page), blocks in sorted(labels.items()):
        found = bench.attribute(*pages[page], rules)
        for block, (label, _) in blocks.items():
            n += 1
            if found[block].generator != label:
                wrong.append(f"{page} #{block}: {label} labelled, {found[block]}")
    return n, wrong


@pytest.mark.parametrize("source", ["demo", "warc"])
def test_the_bundled_pages_agree_with_their_labels(source):
    n, wrong = _disagreements(source)
    assert n > 0 and wrong == []


def test_the_papers_pages_agree_with_their_labels():
    if not (PSET_DATA / "pset-history.bundle").is_file():
        pytest.skip(f"the paper's data is not at {PSET_DATA} (no licence: never bundled)")
    n, wrong = _disagreements("pset")
    assert n == 415 and wrong == []


def test_evaluate_carries_the_human_markups_generator_to_every_row(tmp_path):
    """Two real pages through the pages job's extraction, evaluated (validity only, no model): every
    triples/ and scores/ row of a page says who wrote its human markup."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from jobs.evaluate import EvaluateJob
    from tests.evaluation.test_evaluate_parts import stub_server, table

    rows = []
    song = ("demo", "extruct-samples.warc.gz", "http://extruct-samples.example/songkick/tovestyrke.html")
    for path, url in (WIKI, (DATA / song[0] / song[1], song[2])):
        payload, ctype = _record(path, url)
        out = P.process_html(payload, ctype, None, _cfg())
        rows.append(
            {
                "page_url": url,
                "selected": True,
                **{k: out[k] for k in ("status", "text", "judge_text", "human_markup", "root_types", "generator")},
            }
        )
    assert [r["generator"] for r in rows] == ["mediawiki", "unknown"]
    (tmp_path / "pages").mkdir()
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "pages" / "part-0.parquet")
    out = tmp_path / "out"
    with stub_server() as stub:
        argv = ["--input", str(tmp_path / "pages"), "--output", str(out), "--base-url", stub.url, "--no-generation"]
        argv += ["--stages", "validity", "--executor", "local", "--limit", "0", "--timeout-s", "30"]
        assert EvaluateJob(argv).main() == 0
    want = {r["page_url"]: r["generator"] for r in rows}
    triples, scores = table(out / "triples"), table(out / "scores")
    assert triples and {r["page_url"] for r in scores} == set(want)
    assert all(r["human_generator"] == want[r["page_url"]] for r in triples + scores)
