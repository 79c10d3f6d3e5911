"""WARC reading against warcio on mutated real files: plain ``.warc`` records indexed by
``jobs/warc_index.py`` read back by the pages job, a Content-Length that disagrees with its framing
a reject naming file and offset (the records after it still read), and one round of the
differential fuzzer (``testkit.fuzz.warc_index``) with every class tried."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from udfs.corpus import warc as W

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data" / "warc"
WARCS = SHARED if (SHARED / "cc-main-2020-34-excerpt.warc.gz").exists() else ROOT / "data" / "warc"
EXCERPT = WARCS / "cc-main-2020-34-excerpt.warc.gz"  # 50 records, 16 responses, one gzip member each
LIMIT = 10_000_000
_CL = re.compile(rb"(?im)^content-length:[ \t]*(\d+)\r$")


def _members() -> list[bytes]:
    """The excerpt's records, uncompressed, each with the CRLF CRLF after it."""
    from testkit.fuzz.warc_index import _records

    return [r.data for r in _records(EXCERPT)]


def _urls(records: list[bytes]) -> list[str]:
    out = []
    for r in records:
        head = r[: r.find(b"\r\n\r\n")].decode()
        if "WARC-Type: response" in head:
            out.append(re.search(r"WARC-Target-URI: (\S+)", head).group(1))
    return out


def _shift(record: bytes, delta: int) -> bytes:
    m = _CL.search(record, 0, record.find(b"\r\n\r\n"))
    return record[: m.start(1)] + str(int(m.group(1)) + delta).encode() + record[m.end(1) :]


def _scan(path: Path):
    seen = Counter()
    items = list(W.scan_warc(str(path), max_record_bytes=LIMIT, raw_chars=200, seen=seen))
    return [r for k, r in items if k == "row"], [r for k, r in items if k == "reject"], sum(seen.values())


def _response_index(records: list[bytes]) -> int:
    """The index of the 6th response record (one with records before and after it)."""
    return [i for i, r in enumerate(records) if b"WARC-Type: response" in r[:400]][5]


def test_plain_warc_records_read_back_by_the_pages_reader(tmp_path):
    plain = tmp_path / "excerpt.warc"
    plain.write_bytes(gzip.decompress(EXCERPT.read_bytes()))
    rows, rejects, seen = _scan(plain)
    assert len(rows) == 16 and not rejects and seen == 50
    for row in rows:
        rec = W.read_record(str(plain), row["warc_record_offset"], row["warc_record_length"], max_record_bytes=LIMIT)
        W.html_record_check(rec, row["url"])
        assert rec.payload
    # a wrong offset into a plain file names the cause: the offset does not match the file
    with pytest.raises(W.WarcError) as e:
        W.read_record(str(plain), rows[3]["warc_record_offset"] + 5, 1000, max_record_bytes=LIMIT)
    assert "neither a gzip member nor a WARC record header" in e.value.reason


@pytest.mark.parametrize("gz", [False, True], ids=["warc", "warc.gz"])
@pytest.mark.parametrize("delta", [400, -400, -2, -1, 1, 2, 4, 3 - 2**31, 10**15])
def test_a_content_length_off_its_framing_is_a_reject_and_the_next_records_are_read(tmp_path, gz, delta):
    records = _members()
    k = _response_index(records)
    records[k] = _shift(records[k], delta)
    path = tmp_path / ("bad.warc.gz" if gz else "bad.warc")
    path.write_bytes(b"".join(gzip.compress(r) for r in records) if gz else b"".join(records))
    offset = sum(len(gzip.compress(r)) for r in records[:k]) if gz else sum(len(r) for r in records[:k])
    rows, rejects, seen = _scan(path)
    (rej,) = rejects
    assert rej["source"] == str(path) and rej["position"] == offset and str(offset) in rej["reason"]
    # every other response, those after the damaged one included, indexed and readable
    urls = _urls(records)
    assert [r["url"] for r in rows] == urls[:5] + urls[6:] and seen == 49
    for row in rows:
        rec = W.read_record(str(path), row["warc_record_offset"], row["warc_record_length"], max_record_bytes=LIMIT)
        assert rec.target_uri == row["url"]


def test_a_record_without_the_separator_after_it_is_a_reject_and_the_next_is_read(tmp_path):
    records = _members()
    k = _response_index(records)
    records[k] = records[k].removesuffix(b"\r\n\r\n")
    path = tmp_path / "joined.warc"
    path.write_bytes(b"".join(records))
    rows, rejects, _ = _scan(path)
    (rej,) = rejects
    assert rej["position"] == sum(len(r) for r in records[:k]) and "no line break separates" in rej["reason"]
    urls = _urls(records)
    assert [r["url"] for r in rows] == urls[:5] + urls[6:]


def test_a_cut_gzip_member_is_a_reject_and_the_members_after_it_are_read(tmp_path):
    records = _members()
    k = _response_index(records)
    members = [gzip.compress(r) for r in records]
    members[k] = members[k][: len(members[k]) // 2]
    path = tmp_path / "cut.warc.gz"
    path.write_bytes(b"".join(members))
    rows, rejects, _ = _scan(path)
    (rej,) = rejects
    offset = sum(len(m) for m in members[:k])
    assert rej["position"] == offset and f"next gzip member at offset {offset + len(members[k])}" in rej["reason"]
    urls = _urls(records)
    assert [r["url"] for r in rows] == urls[:5] + urls[6:]


def test_damaged_first_bytes_and_a_damaged_separator_cost_one_record_each(tmp_path):
    records = _members()
    gz = bytearray(b"".join(gzip.compress(r) for r in records))
    gz[0] ^= 0xFF  # the first member's magic: the name says gzip, the scan finds the next member
    (tmp_path / "head.warc.gz").write_bytes(bytes(gz))
    rows, rejects, seen = _scan(tmp_path / "head.warc.gz")
    assert [r["position"] for r in rejects] == [0] and seen == 49
    assert [r["url"] for r in rows] == _urls(records)  # the first record is the warcinfo
    k = _response_index(records)
    records[k] = records[k][:-1] + b"\x0c"  # no line break left before the next version line
    (tmp_path / "sep.warc").write_bytes(b"".join(records))
    rows, rejects, seen = _scan(tmp_path / "sep.warc")
    assert [r["position"] for r in rejects] == [sum(len(r) for r in records[:k])] and seen == 49
    urls = _urls(records)
    assert [r["url"] for r in rows] == urls[:5] + urls[6:]


def test_the_jobs_count_the_hidden_record_and_the_pages_job_reads_plain_records(spark, tmp_path):
    """The real jobs: warc_index over a plain and a gzipped WARC, each with a Content-Length 400
    bytes too long; the run record counts the reject (no ``records_rejected 0``), and the pages
    job reads every record indexed from the plain file."""
    from jobs.pages import PagesJob
    from jobs.warc_index import WarcIndexJob

    records = _members()
    k = _response_index(records)
    crawl = tmp_path / "crawl"
    crawl.mkdir()
    (crawl / "plain.warc").write_bytes(gzip.decompress(EXCERPT.read_bytes()))
    bad = records[:k] + [_shift(records[k], 400)] + records[k + 1 :]
    (crawl / "long.warc").write_bytes(b"".join(bad))
    (crawl / "long.warc.gz").write_bytes(b"".join(gzip.compress(r) for r in bad))
    out = tmp_path / "out"
    WarcIndexJob(["--input", str(crawl), "--warc-base", str(crawl), "--output", str(out)]).main()
    run = json.loads((out / "warc_index" / "_run.json").read_text())
    reads = {Path(r["source"]).name: r for r in run["inputs"]["read"]}
    assert reads["plain.warc"] == {
        "source": str(crawl / "plain.warc"),
        "records": 16,
        "records_rejected": 0,
        "warc_records": 50,
        "damaged": None,
    }
    for name in ("long.warc", "long.warc.gz"):
        assert (reads[name]["records"], reads[name]["records_rejected"], reads[name]["warc_records"]) == (15, 1, 49)
    assert run["counters"]["records_rejected"] == 2 and run["counters"]["reconciles"] is True
    rejects = pq.read_table(out / "rejects" / "warc_index").to_pylist()
    assert sorted(Path(r["source"]).name for r in rejects) == ["long.warc", "long.warc.gz"]

    index = pq.read_table(out / "warc_index").to_pylist()
    plain_urls = [r["url"] for r in index if r["warc_filename"] == "plain.warc"]
    assert len(plain_urls) == 16
    (tmp_path / "samples").mkdir()
    pq.write_table(
        pa.Table.from_pylist([{"page_url": u} for u in plain_urls], pa.schema([("page_url", pa.string())])),
        tmp_path / "samples" / "part-0.parquet",
    )
    # the plain file's rows only: the same URLs are in the other files too
    pq.write_table(
        pa.Table.from_pylist([r for r in index if r["warc_filename"] == "plain.warc"]), tmp_path / "index.parquet"
    )
    job = PagesJob(
        [
            "--input",
            str(tmp_path / "samples"),
            "--warc-index",
            str(tmp_path / "index.parquet"),
            "--warc-base",
            str(crawl),
            "--replacements",
            "0",
            "--output",
            str(out),
        ]
    )
    # the records carry no schema.org markup: every one is read, none is a usable page, and a run in
    # which nothing succeeded exits 2 (issue 64); its table says why, row by row
    with pytest.raises(SystemExit) as stop:
        job.main()
    assert stop.value.code == 2
    pages = pq.read_table(out / "pages").to_pylist()
    assert len(pages) == 16 and not [r["reason"] for r in pages if r["status"] in ("fetch_error", "not_found")]
    prun = json.loads((out / "pages" / "_run.json").read_text())
    assert prun["inputs"]["warc_read"] == [{"source": "plain.warc", "records_read": 16, "attempts": 16}]


def test_one_round_of_the_differential_fuzzer_finds_no_discrepancy(tmp_path):
    from testkit.fuzz.warc_index import CLASSES, fuzz

    tallies = fuzz(tmp_path, seed=7, rounds=1)
    assert [t.cls for t in tallies] == list(CLASSES)
    assert all(t.inputs > 0 for t in tallies), [(t.cls, t.inputs) for t in tallies]
    assert sum(t.explained for t in tallies) > 0  # the mutations do reach the reject paths
    assert [e for t in tallies for e in t.examples] == []
