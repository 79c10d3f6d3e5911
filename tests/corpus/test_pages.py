"""Pages: JSON-LD extraction (against extruct's own expected outputs), markup selection, text,
limits, JSON-LD to RDF, and the pages job end to end on real WARC records with every failure kind
(the WARC-to-N-Quads files: tests/corpus/test_quads.py; fetching without the job: test_fetch.py)."""

from __future__ import annotations

import io
import json
import shutil
import socket
import time
from pathlib import Path

import pytest
from extruct.jsonld import JsonLdExtractor

from udfs.corpus import html as P
from udfs.corpus import text as T
from udfs.corpus.encoding import decode_html
from udfs.corpus.wdc_quads import jsonld_to_quads
from udfs.runtime.config import load_config
from udfs.schemaorg.markup import MarkupError

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"
SAMPLES = DATA / "html" / "extruct-samples"
TOVE = SAMPLES / "songkick" / "tovestyrke.html"
CREATIVE = SAMPLES / "schema.org" / "CreativeWork.001.html"


def _expected_jsonld(html: Path):
    """extruct's expected JSON-LD output for a sample, when the samples folder has one."""
    ld = html.with_suffix(".jsonld")
    if ld.exists():
        exp = json.loads(ld.read_text(encoding="utf-8"))
        if isinstance(exp, dict) and "items" in exp:  # older layout: one list per script
            exp = [item for block in exp["items"] for item in block if item]
        return exp
    js = html.with_suffix(".json")
    if js.exists():
        exp = json.loads(js.read_text(encoding="utf-8"))
        if isinstance(exp, dict) and "json-ld" in exp:
            return exp["json-ld"]
    return None


def _cases():
    out = []
    for html in sorted(SAMPLES.rglob("*.html")):
        exp = _expected_jsonld(html)
        if exp is not None:
            out.append(pytest.param(html, exp, id=str(html.relative_to(SAMPLES))))
    return out


@pytest.mark.parametrize("html,expected", _cases())
def test_jsonld_blocks_agree_with_extruct_expected_outputs(html, expected):
    raw = html.read_bytes()
    blocks = P.jsonld_blocks(decode_html(raw, "text/html"))
    assert P.extruct_items(blocks) == expected
    assert P.extruct_items(blocks) == JsonLdExtractor().extract(raw)


def test_every_expected_output_was_compared():
    assert len(_cases()) >= 16  # the .jsonld files plus the .json files with a json-ld key


def test_invalid_samples_are_read_like_extruct():
    # comments inside <script> and raw control characters: extruct's lenient rules apply
    for name in ("JSONLD_with_JS_comment", "JSONLD_with_control_characters"):
        blocks = P.jsonld_blocks((SAMPLES / "custom.invalid" / f"{name}.html").read_text(encoding="utf-8"))
        assert blocks and all(b.error is None for b in blocks)


def _cfg(**kw):
    return P.PageConfig.of(load_config().pages, **{"time_limit_s": 30.0, **kw})


def test_selection_keeps_the_root_entity_of_the_cset():
    raw = TOVE.read_bytes()
    r = P.process_html(raw, "text/html", ["Place"], _cfg())
    assert r["status"] == P.OK and r["root_types"] == ["MusicEvent"]
    markup = json.loads(r["human_markup"])
    assert markup["@type"] == "MusicEvent" and markup["location"]["@type"] == "Place"
    assert markup["@context"] == "http://schema.org"
    assert r["language"] == "en" and "Tove Styrke" in r["text"]
    missing = P.process_html(raw, "text/html", ["Movie"], _cfg())
    assert (
        missing["status"] == P.NO_MATCHING_MARKUP and "Movie" in missing["reason"] and "MusicEvent" in missing["reason"]
    )
    assert missing["markups"] == r["markups"] and len(missing["markups"]) == 1


def test_graph_and_several_blocks():
    block = json.loads(json.dumps(P.extruct_items(P.jsonld_blocks(TOVE.read_text(encoding="utf-8")))[0]))
    ctx = block.pop("@context")
    graph = {"@context": ctx, "@graph": [{"@type": "WebSite", "name": "x"}, block]}
    html = (
        '<html><body><script type=\'application/ld+json\'>{"@context": "https://schema.org", "@type": "Organization", "name": "o"}</script>'
        f"<script type='application/ld+json'>{json.dumps(graph)}</script><p>Tove Styrke live</p></body></html>"
    ).encode()
    r = P.process_html(html, "text/html", ["GeoCoordinates"], _cfg(text_extractor="html2text"))
    assert r["status"] == P.OK and r["root_types"] == ["MusicEvent"] and r["matched_block"] == 1
    assert json.loads(r["human_markup"])["@context"] == ctx  # the root keeps its block's context
    assert len(r["markups"]) == 2 and "Tove Styrke live" in r["text"]


def test_a_typed_graph_holder_is_a_root_of_its_own():
    """A top-level object holding @graph and describing a node itself is one root among the @graph's,
    as the reader reads it: its own types, its own values, without the @graph."""
    block = {
        "@context": "https://schema.org",
        "@type": "WebSite",
        "name": "w",
        "@graph": [{"@type": "Person", "name": "p"}],
    }
    html = f"<html><body><script type='application/ld+json'>{json.dumps(block)}</script></body></html>".encode()
    r = P.process_html(html, "text/html", ["WebSite"], _cfg(text_extractor="html2text"))
    assert r["status"] == P.OK and r["root_types"] == ["WebSite"]
    assert json.loads(r["human_markup"]) == {"@context": "https://schema.org", "@type": "WebSite", "name": "w"}
    r = P.process_html(html, "text/html", ["Person"], _cfg(text_extractor="html2text"))
    assert r["status"] == P.OK and r["root_types"] == ["Person"]
    assert json.loads(r["human_markup"]) == {"@context": "https://schema.org", "@type": "Person", "name": "p"}


def test_invalid_jsonld_is_a_reason_and_other_blocks_still_count():
    good = CREATIVE.read_text(encoding="utf-8")
    broken = good.replace('"@type": "WebPage",', '"@type": "WebPage",,,', 1)
    assert broken != good
    r = P.process_html(broken.encode(), "text/html", ["Book"], _cfg())
    assert r["status"] == P.PARSE_ERROR and "invalid JSON-LD in block 0" in r["reason"]
    both = broken.replace(
        "</body>",
        f"<script type='application/ld+json'>{json.dumps({'@context': 'http://schema.org', '@type': 'Book', 'name': 'b'})}</script></body>",
    )
    r2 = P.process_html(both.encode(), "text/html", ["Book"], _cfg())
    assert r2["status"] == P.OK and r2["matched_block"] == 1 and "invalid JSON-LD in block 0" in r2["reason"]


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("a network connection was attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def test_remote_context_is_never_fetched(no_network):
    html = CREATIVE.read_text(encoding="utf-8").replace(
        '"@context": "http://schema.org"', '"@context": "https://example.org/remote-context.jsonld"', 1
    )
    r = P.process_html(html.encode(), "text/html", ["Book"], _cfg())
    assert r["status"] == P.PARSE_ERROR and "https://example.org/remote-context.jsonld" in r["reason"]
    block = P.jsonld_blocks(html)[0].data
    with pytest.raises(MarkupError, match="https://example.org/remote-context.jsonld"):
        jsonld_to_quads(block, "http://extruct-samples.example/x.html")
    # the schema.org context is understood without a fetch too
    ok = P.jsonld_blocks(CREATIVE.read_text(encoding="utf-8"))[0].data
    assert jsonld_to_quads(ok, "http://extruct-samples.example/x.html")


def test_oversized_page_and_time_limit():
    raw = TOVE.read_bytes()
    r = P.process_html(raw, "text/html", None, _cfg(max_html_bytes=1000))
    assert r["status"] == P.PARSE_ERROR and "oversized" in r["reason"] and r["html_sha256"]
    with pytest.raises(P.ExtractionTimeout):
        P.run_with_time_limit(time.sleep, 0.2, "sleep", 30)
    # off the main thread the work is abandoned rather than waited for
    import concurrent.futures as cf

    with cf.ThreadPoolExecutor(1) as ex:
        fut = ex.submit(P.run_with_time_limit, time.sleep, 0.2, "sleep", 5)
        with pytest.raises(P.ExtractionTimeout):
            fut.result()


def test_text_extractors():
    raw = (SAMPLES / "songkick" / "elysianfields.html").read_bytes()
    t1 = P.process_html(raw, "text/html", ["MusicEvent"], _cfg())
    t2 = P.process_html(raw, "text/html", ["MusicEvent"], _cfg(text_extractor="html2text"))
    assert t1["status"] == t2["status"] == P.OK
    assert "Elysian Fields" in t1["text"] and "Elysian Fields" in t2["text"]
    assert t1["text"] != t2["text"] and t1["language"] == t2["language"] == "en"
    with pytest.raises(ValueError):
        T.extract_text("<p>x</p>", "nope")


def test_microdata_by_flag():
    raw = (SAMPLES / "schema.org" / "Event.001.html").read_bytes()
    assert P.process_html(raw, "text/html", ["Event"], _cfg())["status"] == P.NO_MATCHING_MARKUP
    r = P.process_html(raw, "text/html", ["Event"], _cfg(microdata=True))
    assert r["status"] == P.OK and r["root_types"] == ["Event"]


# ---- the job, end to end ---------------------------------------------------------------------------


def _warc_with(pages: list[tuple[str, str, bytes]], path: Path) -> None:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with open(path, "wb") as fh:
        w = WARCWriter(fh, gzip=True)
        for url, ctype, body in pages:
            http = StatusAndHeaders("200 OK", [("Content-Type", ctype)], protocol="HTTP/1.1")
            w.write_record(w.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http))


def test_pages_job_statuses_reconcile(spark, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from jobs.pages import PagesJob
    from jobs.warc_index import WarcIndexJob

    creative = CREATIVE.read_text(encoding="utf-8")
    remote = creative.replace('"@context": "http://schema.org"', '"@context": "https://example.org/ctx.jsonld"', 1)
    invalid = creative.replace('"@type": "WebPage",', '"@type": "WebPage",,,', 1)
    crawl = tmp_path / "crawl"
    crawl.mkdir()
    _warc_with(
        [
            ("http://t.example/remote", "text/html", remote.encode()),
            ("http://t.example/invalid", "text/html", invalid.encode()),
            ("http://t.example/image", "image/png", b"\x89PNG\r\n\x1a\n" + b"0" * 100),
            ("http://t.example/creative", "text/html; charset=utf-8", creative.encode()),
        ],
        crawl / "t.warc.gz",
    )
    # the bundled WARC files are copied under the base: the pages job reads nothing outside it
    bundled = tmp_path / "bundled"
    bundled.mkdir()
    for f in [*(DATA / "warc").glob("*.warc.gz"), *(DATA / "demo").glob("*.warc.gz")]:
        shutil.copy(f, bundled / f.name)
    out = tmp_path / "out"
    WarcIndexJob(["--input", str(bundled), str(crawl), "--warc-base", str(tmp_path), "--output", str(out)]).main()
    # every WARC file with the records it gave, adding up to the index's rows
    indexed = json.loads((out / "warc_index" / "_run.json").read_text())
    assert indexed["counters"]["reconciles"] is True and len(indexed["inputs"]["read"]) == 5
    assert (
        sum(r["records"] for r in indexed["inputs"]["read"])
        == indexed["counters"]["records_indexed"]
        == sum(pq.read_metadata(f).num_rows for f in (out / "warc_index").glob("*.parquet"))
    )
    # names relative to the base
    index = pq.read_table(out / "warc_index").to_pylist()
    by_url = {r["url"]: r for r in index if r["warc_record_type"] == "response"}
    assert by_url["http://t.example/creative"]["warc_filename"] == "crawl/t.warc.gz"
    tove_url = "http://extruct-samples.example/songkick/tovestyrke.html"
    wiki = "https://an.wikipedia.org/wiki/Escopete"
    big = "http://01spb.ru/company/"  # 104,567 bytes of HTML
    # hand-made index rows for a wrong offset and a cut member, pointing at the real one-page WARC
    w = by_url[wiki]
    extra = [
        dict(w, url="http://t.example/wrong-offset", warc_record_offset=w["warc_record_offset"] + 3),
        dict(w, url="http://t.example/truncated", warc_record_length=w["warc_record_length"] - 300),
    ]
    pq.write_table(pa.Table.from_pylist(index + extra), tmp_path / "index.parquet")

    rep = pa.struct(
        [("rank", pa.int32()), ("cset_id", pa.string()), ("page_url", pa.string()), ("types", pa.list_(pa.string()))]
    )
    rows = [
        # a sampled page that is not in the index, replaced by its first usable candidate
        {
            "page_url": "http://not-crawled.example/",
            "feature": "n_instances",
            "stratum": "low",
            "types": ["Place"],
            "cset_id": "c1",
            "sample_rank": 1,
            "replacements": [
                {"rank": 1, "cset_id": "c1", "page_url": "http://t.example/truncated", "types": ["Place"]},
                {"rank": 2, "cset_id": "c1", "page_url": tove_url, "types": ["Place"]},
                {"rank": 3, "cset_id": "c1", "page_url": wiki, "types": ["Organization"]},
            ],
        },
        {
            "page_url": wiki,
            "feature": "n_instances",
            "stratum": "low",
            "types": ["Organization"],
            "cset_id": "c2",
            "sample_rank": 2,
            "replacements": [],
        },
        {"page_url": "http://t.example/wrong-offset", "types": ["Article"]},
        {"page_url": "http://t.example/remote", "types": ["Book"]},
        {"page_url": "http://t.example/invalid", "types": ["Book"]},
        {"page_url": "http://t.example/image", "types": None},
        {"page_url": "http://t.example/creative", "types": ["Book"]},
        {"page_url": big, "types": None},
        {"page_url": "http://example.com/", "types": ["Movie"]},
        {"page_url": None, "types": None},
    ]
    schema = pa.schema(
        [
            ("page_url", pa.string()),
            ("feature", pa.string()),
            ("stratum", pa.string()),
            ("types", pa.list_(pa.string())),
            ("cset_id", pa.string()),
            ("sample_rank", pa.int32()),
            ("replacements", pa.list_(rep)),
        ]
    )
    # two input files: the run record gives the rows of each
    (tmp_path / "samples").mkdir()
    pq.write_table(pa.Table.from_pylist(rows[:4], schema), tmp_path / "samples" / "part-0.parquet")
    pq.write_table(pa.Table.from_pylist(rows[4:], schema), tmp_path / "samples" / "part-1.parquet")

    PagesJob(
        [
            "--input",
            str(tmp_path / "samples"),
            "--warc-index",
            str(tmp_path / "index.parquet"),
            "--warc-base",
            str(tmp_path),
            "--max-html-bytes",
            "100000",
            "--replacements",
            "3",
            "--output",
            str(out),
        ]
    ).main()
    pages = pq.read_table(out / "pages").to_pylist()
    sel = {r["sampled_page_url"]: r for r in pages if r["selected"]}
    assert len(sel) == 9
    slot1 = sorted(
        (r for r in pages if r["sampled_page_url"] == "http://not-crawled.example/"), key=lambda r: r["candidate_rank"]
    )
    # the wiki page is another slot's sampled page in this stratum: never a replacement here
    assert [(r["candidate_rank"], r["status"]) for r in slot1] == [(0, "not_found"), (1, "fetch_error"), (2, "ok")]
    assert "truncated gzip member" in slot1[1]["reason"] and slot1[2]["page_url"] == tove_url
    assert slot1[2]["root_types"] == ["MusicEvent"] and slot1[2]["selected"]
    assert sel[wiki]["status"] == "ok" and sel[wiki]["root_types"] == ["Article"] and sel[wiki]["language"] == "an"
    assert sel[wiki]["warc_filename"].endswith("cc-main-2024-22-one-page.warc.gz")
    assert sel["http://t.example/wrong-offset"]["status"] == "fetch_error"
    assert "neither a gzip member nor a WARC record header" in sel["http://t.example/wrong-offset"]["reason"]
    assert sel["http://t.example/remote"]["status"] == "parse_error"
    assert "https://example.org/ctx.jsonld" in sel["http://t.example/remote"]["reason"]
    assert (
        sel["http://t.example/invalid"]["status"] == "parse_error"
        and "invalid JSON-LD" in sel["http://t.example/invalid"]["reason"]
    )
    assert (
        sel["http://t.example/image"]["status"] == "parse_error"
        and "image/png" in sel["http://t.example/image"]["reason"]
    )
    c = sel["http://t.example/creative"]
    assert (
        c["status"] == "ok"
        and c["root_types"] == ["WebPage"]
        and json.loads(c["human_markup"])["mainEntity"]["@type"] == "Book"
    )
    assert len(c["html_sha256"]) == 64 and c["text_extractor"] == "trafilatura"
    assert c["judge_text_extractor"] == "main+rest" and c["judge_text"].startswith(c["text"])
    assert sel[big]["status"] == "parse_error" and "oversized" in sel[big]["reason"]
    assert sel["http://example.com/"]["status"] == "no_matching_markup"  # the response, not the revisit
    record = json.loads((out / "pages" / "_run.json").read_text())
    run = record["counters"]
    assert run["input_rows"] == 10 and run["rejected_rows"] == 1 and run["selected_rows"] == 9 and run["reconciles"]
    assert [(Path(r["source"]).name, r["rows"]) for r in record["inputs"]["read"]] == [
        ("part-0.parquet", 4),
        ("part-1.parquet", 6),
    ]
    # the records read from each WARC file: every attempt that got past the index and the byte range
    warc_read = {r["source"]: r for r in record["inputs"]["warc_read"]}
    read_statuses = ("ok", "parse_error", "no_matching_markup")
    assert {f: r["records_read"] for f, r in warc_read.items()} == {
        f: sum(p["status"] in read_statuses for p in pages if p["warc_filename"] == f) for f in warc_read
    }
    assert sum(r["attempts"] for r in warc_read.values()) == sum(p["warc_filename"] is not None for p in pages)
    assert warc_read["crawl/t.warc.gz"]["records_read"] == 4  # remote, invalid, image, creative
    assert run["ok_by_replacement"] == 1 and run["attempts"] == len(pages) == 11
    assert sum(run[f"selected_{s}"] for s in P.STATUSES) == 9
    assert pq.read_table(out / "rejects" / "pages").num_rows == 1


def test_pages_job_fetches_a_sample_row_given_twice_never(spark, tmp_path, capsys):
    """The samples table read twice over one draw: before, the page was fetched twice and the
    stratum held it twice; now both rows are rejects naming the draw, counted and said."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from jobs.pages import PagesJob
    from udfs.corpus import fetch
    from udfs.corpus.warc import index_warc

    wiki = "https://an.wikipedia.org/wiki/Escopete"
    tove = "http://extruct-samples.example/songkick/tovestyrke.html"
    warcs = [DATA / "warc" / "cc-main-2024-22-one-page.warc.gz", DATA / "demo" / "extruct-samples.warc.gz"]
    pq.write_table(pa.Table.from_pylist([r for w in warcs for r in index_warc(str(w))]), tmp_path / "index.parquet")
    draw = {"feature": "n_instances", "stratum": "low", "cset_id": "c1", "types": ["Organization"], "sample_rank": 1}
    rows = [{**draw, "page_url": wiki}, {**draw, "page_url": wiki}]
    rows.append({**draw, "page_url": tove, "cset_id": "c2", "types": ["Place"], "sample_rank": 2})
    (tmp_path / "samples").mkdir()
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "samples" / "part-0.parquet")
    out = tmp_path / "out"
    argv = ["--input", str(tmp_path / "samples"), "--warc-index", str(tmp_path / "index.parquet")]
    assert PagesJob([*argv, "--warc-base", "", "--output", str(out)]).main() == 0
    assert "duplicate input rows: 2 rows share a sample row's key with another, none fetched" in capsys.readouterr().out
    pages = pq.read_table(out / "pages").to_pylist()
    assert [(p["page_url"], p["status"]) for p in pages if p["selected"]] == [(tove, "ok")]
    assert wiki not in {p["page_url"] for p in pages}
    rejects = pq.read_table(out / "rejects" / "pages").to_pylist()
    assert [(r["reason"], json.loads(r["raw"])["page_url"]) for r in rejects] == [(fetch.DUPLICATE_DRAW, wiki)] * 2
    c = json.loads((out / "pages" / "_run.json").read_text())["counters"]
    assert (c["input_rows"], c["selected_rows"], c["rejected_rows"], c["duplicate_rows"]) == (3, 1, 2, 2)
    assert c["reconciles"]
