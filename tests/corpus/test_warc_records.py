"""Records as crawls write them (issue 65): a record that holds part of its page is never judged as
the whole page, an uppercase scheme in a target URI is read like any other, and the index and
extract_quads walk a file with one walker (udfs/corpus/warc.py walk_archive). WARC files are
built here with warcio's writer, as crawlers write them."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from pyspark.sql import Row

from udfs.corpus import fetch
from udfs.corpus import html as P
from udfs.corpus import warc as W
from udfs.runtime.config import load_config

DATA = Path(__file__).resolve().parents[2] / "data"
TEXT = "We serve food to everyone who comes by, every day of the week, from noon to midnight."
PAGE = (
    '<html><head><script type="application/ld+json">{"@context": "http://schema.org", "@type": "Restaurant", '
    '"name": "Chez Nous", "description": "' + TEXT + '"}</script></head><body><h1>Chez Nous</h1><p>' + TEXT + "</p>"
    "<p>" + TEXT + "</p></body></html>"
).encode()
CUT = PAGE[: PAGE.index(b"We serve f", PAGE.index(b"<body>")) + len(b"We serve f")]
MAX = 10_000_000


@pytest.fixture(scope="module")
def cfg():
    return P.PageConfig.of(load_config().pages, time_limit_s=30.0)


def _write(path: Path, records: list[dict], gz: bool = True) -> Path:
    """``records``: url, payload (the HTTP body as archived), http (extra HTTP headers), warc
    (extra WARC headers), status."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with open(path, "wb") as fh:
        w = WARCWriter(fh, gzip=gz)
        for r in records:
            http = StatusAndHeaders(
                r.get("status", "200 OK"),
                [("Content-Type", "text/html; charset=utf-8"), *r.get("http", [])],
                protocol="HTTP/1.1",
            )
            rec = w.create_warc_record(
                r["url"],
                "response",
                payload=io.BytesIO(r["payload"]),
                http_headers=http,
                warc_headers_dict=dict(r.get("warc", {})),
            )
            w.write_record(rec)
    return path


def _candidate(row: dict, url: str, rank: int = 0, **changes) -> dict:
    return {
        "slot": 0,
        "candidate_rank": rank,
        "page_url": url,
        "types": ["Restaurant"],
        **{
            c: row[c]
            for c in ("warc_filename", "warc_record_offset", "warc_record_length", "fetch_status", "content_mime_type")
        },
        "content_truncated": row.get("content_truncated"),
        **changes,
    }


def _index(path: Path) -> dict[str, dict]:
    return {r["url"]: r for r in W.index_warc(str(path))}


def test_a_record_marked_warc_truncated_is_a_truncated_row_and_the_index_says_so(tmp_path, cfg):
    """Common Crawl cuts a payload over its limit and marks it ``WARC-Truncated: length``; its
    columnar index carries the value in ``content_truncated``. Before: indexed without it, read
    and judged ``ok`` with its text ending mid-word ("...We serve f")."""
    f = _write(
        tmp_path / "cut.warc.gz",
        [
            {"url": "http://r.example/cut", "payload": CUT, "warc": {"WARC-Truncated": "length"}},
            {"url": "http://r.example/slow", "payload": CUT, "warc": {"WARC-Truncated": "time"}},
            {"url": "http://r.example/whole", "payload": PAGE},
        ],
    )
    idx = _index(f)
    assert [idx[u]["content_truncated"] for u in sorted(idx)] == ["length", "time", None]
    assert W.WARC_INDEX.optional["content_truncated"] is not None and "content_truncated" in W.INDEX_COLUMNS
    # read without the index's column (an older index): the record itself says so
    for url, why in (("http://r.example/cut", "length"), ("http://r.example/slow", "time")):
        out = fetch.fetch_page(_candidate(idx[url], url, content_truncated=None), None, cfg, MAX)
        assert out["status"] == P.TRUNCATED == "truncated" and out["truncated"] is True, out["reason"]
        assert out["reason"].startswith(f"WARC-Truncated: {why}") and out["text"] is None
    whole = fetch.fetch_page(_candidate(idx["http://r.example/whole"], "http://r.example/whole"), None, cfg, MAX)
    assert whole["status"] == P.OK and whole["truncated"] is False and TEXT in whole["text"]


def test_the_index_column_skips_the_record_without_reading_it(tmp_path, cfg):
    """``content_truncated`` from the index (Common Crawl's, or ours): the record is not read; the
    file named does not even exist here."""
    row = {
        "warc_filename": str(tmp_path / "nowhere.warc.gz"),
        "warc_record_offset": 0,
        "warc_record_length": 100,
        "fetch_status": 200,
        "content_mime_type": "text/html",
    }
    out = fetch.fetch_page(_candidate(row, "http://r.example/cut", content_truncated="length"), None, cfg, MAX)
    assert (out["status"], out["truncated"]) == (P.TRUNCATED, True)
    assert out["reason"] == "WARC-Truncated: length (from the WARC index); not read"


def test_a_body_shorter_than_its_content_length_is_truncated_where_the_comparison_means_something(tmp_path, cfg):
    """An HTTP body of N bytes under ``Content-Length: M > N``, stored as sent: truncated, the
    reason naming both counts. Under a Content-Encoding the stored bytes need not be the sent
    ones, so no verdict is drawn from the lengths there."""
    declared = len(PAGE)
    f = _write(
        tmp_path / "short.warc.gz",
        [
            {"url": "http://r.example/short", "payload": CUT, "http": [("Content-Length", str(declared))]},
            {"url": "http://r.example/exact", "payload": PAGE, "http": [("Content-Length", str(declared))]},
        ],
    )
    idx = _index(f)
    out = fetch.fetch_page(_candidate(idx["http://r.example/short"], "http://r.example/short"), None, cfg, MAX)
    assert out["status"] == P.TRUNCATED and out["truncated"] is True
    assert out["reason"].startswith(f"HTTP body {len(CUT)} bytes of Content-Length {declared}")
    exact = fetch.fetch_page(_candidate(idx["http://r.example/exact"], "http://r.example/exact"), None, cfg, MAX)
    assert exact["status"] == P.OK and exact["truncated"] is False

    class Http:
        def __init__(self, headers):
            self.h = {k.lower(): v for k, v in headers}

        def get_header(self, name):
            return self.h.get(name.lower())

    assert W.truncation(None, Http([("Content-Length", "999")]), b"x" * 10, b"x" * 10) is not None
    assert W.truncation(None, Http([("Content-Length", "999"), ("Content-Encoding", "gzip")]), b"x", b"x") is None
    assert W.truncation(None, Http([("Content-Length", "10")]), b"x" * 12, b"x" * 12) is None


def test_judge_truncated_judges_the_record_and_flags_it(tmp_path, cfg):
    """With ``[pages] judge_truncated`` on, the record is read and judged like any other, its row
    flagged ``truncated``."""
    f = _write(
        tmp_path / "cut.warc.gz",
        [{"url": "http://r.example/cut", "payload": CUT, "warc": {"WARC-Truncated": "length"}}],
    )
    idx = _index(f)
    judging = P.PageConfig.of(load_config().pages, time_limit_s=30.0, judge_truncated=True)
    out = fetch.fetch_page(_candidate(idx["http://r.example/cut"], "http://r.example/cut"), None, judging, MAX)
    assert out["status"] == P.OK and out["truncated"] is True and out["text"].rstrip().endswith("We serve f")
    assert load_config().pages.judge_truncated is False


def test_the_next_candidate_is_tried_after_a_truncated_one(tmp_path, cfg):
    """A slot whose sampled page is truncated is filled by its replacement, as for any unusable page."""
    f = _write(
        tmp_path / "two.warc.gz",
        [
            {"url": "http://r.example/cut", "payload": CUT, "warc": {"WARC-Truncated": "length"}},
            {"url": "http://r.example/whole", "payload": PAGE},
        ],
    )
    idx = _index(f)
    rows = [
        Row(**_candidate(idx["http://r.example/cut"], "http://r.example/cut", rank=0)),
        Row(**_candidate(idx["http://r.example/whole"], "http://r.example/whole", rank=1)),
    ]
    out = list(fetch.process_partition(rows, None, cfg, MAX))
    assert [(r["status"], r["selected"]) for r in out] == [(P.TRUNCATED, False), (P.OK, True)]


def test_a_chunked_body_cut_before_its_last_chunk_is_truncated(tmp_path, cfg):
    """A case of our own: a chunked body (stored as sent) that ends inside a chunk, or after a whole
    chunk but before the zero-size one, with no WARC-Truncated header. warcio de-chunks it
    without a word (it stops at the cut); the framing says the page is not all there."""

    def chunks(body: bytes, size: int = 100) -> bytes:
        return b"".join(
            b"%x\r\n%s\r\n" % (len(body[i : i + size]), body[i : i + size]) for i in range(0, len(body), size)
        )

    whole = chunks(PAGE) + b"0\r\n\r\n"
    te = [("Transfer-Encoding", "chunked")]
    f = _write(
        tmp_path / "chunked.warc.gz",
        [
            {"url": "http://r.example/inside", "payload": whole[: len(whole) // 2], "http": te},
            {"url": "http://r.example/between", "payload": chunks(PAGE), "http": te},
            {"url": "http://r.example/whole", "payload": whole, "http": te},
        ],
    )
    idx = _index(f)
    got = {u: fetch.fetch_page(_candidate(idx[u], u), None, cfg, MAX) for u in idx}
    assert got["http://r.example/inside"]["status"] == P.TRUNCATED
    assert got["http://r.example/inside"]["reason"].startswith("chunked HTTP body ends inside its chunk")
    assert got["http://r.example/between"]["status"] == P.TRUNCATED
    assert "before its last, zero-size chunk" in got["http://r.example/between"]["reason"]
    assert got["http://r.example/whole"]["status"] == P.OK and TEXT in got["http://r.example/whole"]["text"]


def test_an_uppercase_scheme_in_the_target_uri_is_read_like_any_other(tmp_path, cfg):
    """``HTTP://EXAMPLE.COM/a``: warcio parsed the HTTP headers only after a URI starting with a
    lower-case ``http:`` (recordloader.HTTP_SCHEMES, str.startswith), so the record indexed with no
    status and read as "HTTP status None in the WARC record". Schemes are case-insensitive
    (RFC 3986 3.1): its status, type and page are read; the URI stays as written."""
    url = "HTTP://EXAMPLE.COM/a"
    f = _write(
        tmp_path / "upper.warc.gz", [{"url": url, "payload": PAGE}, {"url": "HTTPS://Example.com/b", "payload": PAGE}]
    )
    idx = _index(f)
    assert (idx[url]["fetch_status"], idx[url]["content_mime_type"]) == (200, "text/html")
    assert idx["HTTPS://Example.com/b"]["fetch_status"] == 200
    out = fetch.fetch_page(_candidate(idx[url], url), None, cfg, MAX)
    assert out["status"] == P.OK and TEXT in out["text"], out["reason"]
    rec = W.read_record(str(f), idx[url]["warc_record_offset"], idx[url]["warc_record_length"], max_record_bytes=MAX)
    assert rec.target_uri == url and rec.http_status == 200


def test_the_index_and_extract_quads_give_a_damaged_file_one_verdict(tmp_path):
    """One walker: the demo WARC with a member's deflate data overwritten, its Content-Length off
    in another, a 3 MB member over the bound and a cut at the end. The index's rejects and
    extract_quads's are at the same offsets, and extract_quads reads exactly the records the
    index reads (before: extract_quads stopped at the first damage, 30 of 58 records)."""
    import gzip

    from tests.conftest import gzip_member_offsets
    from udfs.corpus.quads import extract_file, reconciles

    demo = (DATA / "demo" / "extruct-samples.warc.gz").read_bytes()
    starts = gzip_member_offsets(demo)
    mid = (starts[30] + starts[31]) // 2
    bad_length = gzip.decompress(demo[starts[40] : starts[41]]).replace(b"Content-Length: ", b"Content-Length: 1", 1)
    data = (
        demo[:mid]
        + bytes(20)
        + demo[mid + 20 : starts[40]]
        + gzip.compress(bad_length)
        + gzip.compress(b"WARC/1.0\r\n" + bytes(3_000_000))
        + demo[starts[41] : (starts[50] + starts[51]) // 2]
    )
    f = tmp_path / "damaged.warc.gz"
    f.write_bytes(data)
    seen = __import__("collections").Counter()
    index = list(W.scan_warc(str(f), max_record_bytes=1_000_000, raw_chars=200, seen=seen))
    items = list(
        extract_file(
            0,
            str(f),
            str(tmp_path / "out"),
            max_html_bytes=5_000_000,
            max_record_bytes=1_000_000,
            max_markup_chars=1_000_000,
            max_markup_nodes=200_000,
            reject_raw_chars=200,
            time_limit_s=30.0,
        )
    )
    counts = items[-1][1]
    walk_rejects = [r for k, r in items if k == "reject" and not r["reason"].startswith("http")]
    index_rejects = [r for k, r in index if k == "reject"]
    assert len(index_rejects) == 4
    assert [r["position"] for r in walk_rejects] == [r["position"] for r in index_rejects]
    assert counts["records"] - counts["records_over_max_bytes"] - counts["records_unreadable"] == sum(seen.values())
    # 58 members less the deflate-damaged one and the ones after the cut (50 of them read), plus the bomb
    assert counts["records"] == 50 and counts["file_errors"] == 3 and reconciles(counts)
