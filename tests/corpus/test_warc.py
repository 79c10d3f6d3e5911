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
    assert W.join_location("https://data.commoncrawl.org/", "crawl-data/x.warc.gz") == "https://data.commoncrawl.org/crawl-data/x.warc.gz"
    assert W.join_location("s3://commoncrawl", "/crawl-data/x.warc.gz") == "s3://commoncrawl/crawl-data/x.warc.gz"


@pytest.fixture(scope="module")
def one_page_row():
    (row,) = list(W.index_warc(str(ONE_PAGE)))
    return row


def test_wrong_offset_is_a_fetch_error(one_page_row):
    with pytest.raises(W.WarcError) as e:
        W.read_record(str(ONE_PAGE), one_page_row["warc_record_offset"] + 7, one_page_row["warc_record_length"], max_record_bytes=LIMIT)
    assert e.value.status == W.FETCH_ERROR and "no gzip member" in e.value.reason


def test_truncated_member_is_a_fetch_error(one_page_row):
    with pytest.raises(W.WarcError) as e:
        W.read_record(str(ONE_PAGE), one_page_row["warc_record_offset"], one_page_row["warc_record_length"] - 200, max_record_bytes=LIMIT)
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
        W.read_record(str(ONE_PAGE), one_page_row["warc_record_offset"], one_page_row["warc_record_length"], max_record_bytes=1000)
    assert e.value.status == W.FETCH_ERROR and "not fetched" in e.value.reason
    # compressed size under the bound, decompressed over it: refused after inflating at most the bound
    with pytest.raises(W.WarcError) as e:
        W.read_record(str(ONE_PAGE), one_page_row["warc_record_offset"], one_page_row["warc_record_length"],
                      max_record_bytes=one_page_row["warc_record_length"] + 10)
    assert e.value.status == W.PARSE_ERROR and "decompressed" in e.value.reason


def test_cut_file_keeps_the_records_before_the_damage(tmp_path):
    data = EXCERPT.read_bytes()
    cut = tmp_path / "cut.warc.gz"
    sixth = [o for t, o, _ in _offsets(EXCERPT) if t == "response"][5]
    cut.write_bytes(data[:sixth + 5000])  # inside the 6th response record
    rows = []
    with pytest.raises(W.WarcError) as e:
        for r in W.index_warc(str(cut)):
            rows.append(r)
    assert len(rows) == 5 and e.value.status == W.PARSE_ERROR
    assert f"offset {sixth} is cut" in e.value.reason
