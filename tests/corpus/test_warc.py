"""udfs/corpus/warc.py on the bundled real Common Crawl WARC files: index, byte-range reads and every way
a read goes wrong."""

from __future__ import annotations

from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from udfs.corpus import warc as W

DATA = Path(__file__).resolve().parents[2] / "data"
EXCERPT = DATA / "warc" / "cc-main-2020-34-excerpt.warc.gz"
ONE_PAGE = DATA / "warc" / "cc-main-2024-22-one-page.warc.gz"
LIMIT = 10_000_000


def _offsets(path):
    """(record type, offset, length) of every record, straight from warcio."""
    out = []
    with open(path, "rb") as fh:
        it = ArchiveIterator(fh)
        for rec in it:
            rtype = rec.rec_type
            it.read_to_end(rec)
            out.append((rtype, it.get_record_offset(), it.get_record_length()))
    return out


def test_index_lists_every_response_and_reads_back():
    rows = list(W.index_warc(str(EXCERPT), "warc/" + EXCERPT.name))
    responses = [r for r in _offsets(EXCERPT) if r[0] == "response"]
    assert len(rows) == len(responses) == 16
    assert [(r["warc_record_offset"], r["warc_record_length"]) for r in rows] == [(o, n) for _, o, n in responses]
    for row in rows:
        rec = W.read_record(str(EXCERPT), row["warc_record_offset"], row["warc_record_length"], max_record_bytes=LIMIT)
        W.html_record_check(rec, row["url"])
        assert rec.target_uri == row["url"] and rec.http_status == 200 == row["fetch_status"]
        assert b"<html" in rec.payload[:5000].lower() or b"<!doctype" in rec.payload[:500].lower()
    charsets = {r["url"]: r["content_charset"] for r in rows}
    assert charsets["http://01spb.ru/company/"] == "windows-1251"


def test_relative_names_join_back():
    name = W.relative_name(str(ONE_PAGE), str(DATA))
    assert name == "warc/cc-main-2024-22-one-page.warc.gz"
    assert Path(W.join_location(str(DATA), name)) == ONE_PAGE
    assert (
        W.join_location("https://data.commoncrawl.org/", "crawl-data/x.warc.gz")
        == "https://data.commoncrawl.org/crawl-data/x.warc.gz"
    )
    assert W.join_location("s3://commoncrawl", "/crawl-data/x.warc.gz") == "s3://commoncrawl/crawl-data/x.warc.gz"


@pytest.fixture(scope="module")
def one_page_row():
    (row,) = list(W.index_warc(str(ONE_PAGE)))
    return row


def test_wrong_offset_is_a_fetch_error(one_page_row):
    with pytest.raises(W.WarcError) as e:
        W.read_record(
            str(ONE_PAGE),
            one_page_row["warc_record_offset"] + 7,
            one_page_row["warc_record_length"],
            max_record_bytes=LIMIT,
        )
    assert e.value.status == W.FETCH_ERROR and "neither a gzip member nor a WARC record header" in e.value.reason


def test_truncated_member_is_a_fetch_error(one_page_row):
    with pytest.raises(W.WarcError) as e:
        W.read_record(
            str(ONE_PAGE),
            one_page_row["warc_record_offset"],
            one_page_row["warc_record_length"] - 200,
            max_record_bytes=LIMIT,
        )
    assert e.value.status == W.FETCH_ERROR and "truncated gzip member" in e.value.reason


def test_range_past_the_end_and_missing_file(one_page_row):
    size = ONE_PAGE.stat().st_size
    with pytest.raises(W.WarcError) as e:
        W.read_record(str(ONE_PAGE), size - 10, 500, max_record_bytes=LIMIT)
    assert e.value.status == W.FETCH_ERROR and "short read" in e.value.reason
    with pytest.raises(W.WarcError) as e:
        W.read_record(str(DATA / "warc" / "no-such.warc.gz"), 0, 100, max_record_bytes=LIMIT)
    assert "not found" in e.value.reason


def test_non_html_records_are_refused():
    request = next((o, n) for t, o, n in _offsets(ONE_PAGE) if t == "request")
    rec = W.read_record(str(ONE_PAGE), *request, max_record_bytes=LIMIT)
    with pytest.raises(W.WarcError) as e:
        W.html_record_check(rec)
    assert e.value.status == W.PARSE_ERROR and "'request'" in e.value.reason
    warcinfo = _offsets(ONE_PAGE)[0]
    rec = W.read_record(str(ONE_PAGE), warcinfo[1], warcinfo[2], max_record_bytes=LIMIT)
    assert rec.rec_type == "warcinfo"


def test_record_over_the_bound_is_not_fetched(one_page_row):
    with pytest.raises(W.WarcError) as e:
        W.read_record(
            str(ONE_PAGE), one_page_row["warc_record_offset"], one_page_row["warc_record_length"], max_record_bytes=1000
        )
    assert e.value.status == W.FETCH_ERROR and "not fetched" in e.value.reason
    # compressed size under the bound, decompressed over it: refused after inflating at most the bound
    with pytest.raises(W.WarcError) as e:
        W.read_record(
            str(ONE_PAGE),
            one_page_row["warc_record_offset"],
            one_page_row["warc_record_length"],
            max_record_bytes=one_page_row["warc_record_length"] + 10,
        )
    assert e.value.status == W.PARSE_ERROR and "decompressed" in e.value.reason


def test_cut_file_keeps_the_records_before_the_damage(tmp_path):
    data = EXCERPT.read_bytes()
    cut = tmp_path / "cut.warc.gz"
    sixth = [o for t, o, _ in _offsets(EXCERPT) if t == "response"][5]
    cut.write_bytes(data[: sixth + 5000])  # inside the 6th response record
    rows = []
    with pytest.raises(W.WarcError) as e:
        for r in W.index_warc(str(cut)):
            rows.append(r)
    assert len(rows) == 5 and e.value.status == W.PARSE_ERROR
    assert f"offset {sixth} is cut" in e.value.reason


# ---- bounded records: streamed, never held whole ------------------------------------------------


def _zeros_member(n: int) -> bytes:
    """One gzip member of ``n`` zero bytes, compressed in steps (never ``n`` bytes in memory)."""
    import zlib

    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    step = b"\0" * (1 << 20)
    parts = [c.compress(step) for _ in range(n >> 20)]
    return b"".join(parts) + c.flush()


def _record_member(url: str, payload_bytes: int) -> bytes:
    """A well-formed gzip-per-record WARC response whose payload is ``payload_bytes`` zero bytes."""
    import io

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    buf = io.BytesIO()
    w = WARCWriter(buf, gzip=False)
    http = StatusAndHeaders(
        "200 OK", [("Content-Type", "text/html"), ("Content-Length", str(payload_bytes))], protocol="HTTP/1.1"
    )
    w.write_record(
        w.create_warc_record(url, "response", payload=io.BytesIO(b"\0" * payload_bytes), length=None, http_headers=http)
    )
    return gzip_compress(buf.getvalue())


def gzip_compress(data: bytes) -> bytes:
    import gzip

    return gzip.compress(data, compresslevel=9)


BOUND = 1 << 20  # the test's [warc_index] max_record_bytes


def test_a_member_inflating_past_the_bound_is_a_reject_and_the_scan_goes_on(tmp_path):
    one = ONE_PAGE.read_bytes()
    bomb = _zeros_member(64 << 20)  # 64 MiB of zeros in about 64 kB
    big = _record_member("http://t.example/big", 3 * BOUND)  # a well-formed record over the bound
    path = tmp_path / "bomb.warc.gz"
    path.write_bytes(one + bomb + big + one)
    got = list(W.scan_warc(str(path), "bomb.warc.gz", max_record_bytes=BOUND, raw_chars=40))
    kinds = [(k, r.get("url") or r["position"]) for k, r in got]
    wiki = "https://an.wikipedia.org/wiki/Escopete"
    assert kinds == [("row", wiki), ("reject", len(one)), ("reject", len(one) + len(bomb)), ("row", wiki)]
    (_, bomb_reject), (_, big_reject) = got[1], got[2]
    assert f"inflates to {64 << 20} bytes, over max_record_bytes={BOUND}" in bomb_reject["reason"]
    assert bomb_reject["raw"] == "\0" * 40 and bomb_reject["source"] == str(path)
    assert big_reject["raw"].startswith("WARC/1.0") and len(big_reject["raw"]) == 40
    # the records after the rejects are indexed at their true offsets and read back
    last = got[3][1]
    assert last["warc_record_offset"] == len(one) + len(bomb) + len(big) + got[0][1]["warc_record_offset"]
    rec = W.read_record(str(path), last["warc_record_offset"], last["warc_record_length"], max_record_bytes=LIMIT)
    W.html_record_check(rec, wiki)
    # the same record under the bound is a row, with its payload digest computed as it streamed by
    import base64
    import hashlib

    small = tmp_path / "small.warc.gz"
    small.write_bytes(_record_member("http://t.example/small", 1000))
    (row,) = list(W.index_warc(str(small), max_record_bytes=BOUND))
    assert row["url"] == "http://t.example/small"
    assert row["content_digest"] == base64.b32encode(hashlib.sha1(b"\0" * 1000).digest()).decode()
    # rows only: the reject is an error after the rows before it, never a silent gap
    rows = []
    with pytest.raises(W.WarcError, match="over max_record_bytes"):
        for r in W.index_warc(str(path), max_record_bytes=BOUND):
            rows.append(r)
    assert len(rows) == 1


def test_payload_digest_is_the_archived_payload_digest():
    from warcio.archiveiterator import ArchiveIterator

    with open(EXCERPT, "rb") as fh:
        declared = {
            r.rec_headers.get_header("WARC-Target-URI"): r.rec_headers.get_header("WARC-Payload-Digest")
            for r in ArchiveIterator(fh)
            if r.rec_type == "response"
        }
    rows = list(W.index_warc(str(EXCERPT)))
    assert len(rows) == 16 and all("sha1:" + r["content_digest"] == declared[r["url"]] for r in rows)


def test_uncompressed_records_over_the_bound_are_rejects(tmp_path):
    import gzip

    plain = tmp_path / "plain.warc"
    plain.write_bytes(
        gzip.decompress(_record_member("http://t.example/big", 3 * BOUND))
        + gzip.decompress(_record_member("http://t.example/small", 10))
    )
    got = list(W.scan_warc(str(plain), max_record_bytes=BOUND, raw_chars=40))
    assert [k for k, _ in got] == ["reject", "row"]
    assert "over max_record_bytes" in got[0][1]["reason"] and got[1][1]["url"] == "http://t.example/small"


def test_warc_index_job_writes_the_reject_with_the_bound_of_its_config(spark, tmp_path):
    import json

    import pyarrow.parquet as pq

    from jobs.warc_index import WarcIndexJob
    from udfs.runtime.paths import DEFAULT_CONF

    crawl = tmp_path / "crawl"
    crawl.mkdir()
    one = ONE_PAGE.read_bytes()
    bomb = _zeros_member(64 << 20)
    (crawl / "bomb.warc.gz").write_bytes(one + bomb + one)
    text = DEFAULT_CONF.read_text()
    assert "\n[warc_index]\n" in text and "max_record_bytes = 10000000\n" in text.split("\n[warc_index]\n")[1]
    conf = tmp_path / "pipeline.toml"
    head, sep, rest = text.partition("\n[warc_index]\n")
    conf.write_text(head + sep + rest.replace("max_record_bytes = 10000000\n", f"max_record_bytes = {BOUND}\n", 1))
    out = tmp_path / "out"
    WarcIndexJob(
        ["--input", str(crawl), "--warc-base", str(tmp_path), "--config", str(conf), "--output", str(out)]
    ).main()
    index = pq.read_table(out / "warc_index").to_pylist()
    offsets = sorted(r["warc_record_offset"] for r in index)
    assert offsets == [offsets[0], len(one) + len(bomb) + offsets[0]]
    (rej,) = pq.read_table(out / "rejects" / "warc_index").to_pylist()
    assert rej["position"] == len(one) and f"over max_record_bytes={BOUND}" in rej["reason"]
    assert rej["raw"] and set(rej["raw"]) == {"\0"}
    run = json.loads((out / "warc_index" / "_run.json").read_text())
    assert run["config"]["max_record_bytes"] == BOUND
    assert run["counters"]["records_rejected"] == 1 and run["counters"]["records_indexed"] == 2
    (read,) = run["inputs"]["read"]
    assert read == {
        "source": str(crawl / "bomb.warc.gz"),
        "records": 2,
        "records_rejected": 1,
        "warc_records": 8,
        "damaged": None,
    }
