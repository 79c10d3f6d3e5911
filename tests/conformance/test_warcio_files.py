"""warcio's own test files (``../shared/data/conformance/warcio-test-data/test/data/``) through the
WARC index job (``jobs/warc_index.py``, one run over every file) and the pages job's record reader
(``udfs/corpus/warc.py`` ``read_record``, ``udfs/corpus/fetch.py`` ``fetch_page``, and one run of
``jobs/pages.py``), with warcio's ``ArchiveIterator`` as the independent reference.

warcio reads leniently: it reads a record whose declared length is not a number as empty, a record
cut short by the end of its file or gzip member as far as it goes, and a record not followed by a
blank line with a warning. Those records are the bad ones: each must be a reject row naming the file
and warcio's offset. Every other record warcio reads is a good one: a response or revisit is a row
at warcio's offset, read back with warcio's payload; any other type is counted, not indexed.
Where warcio stops with an error, the record it read last is bad too, and the project, which goes
on after a reject, may read records warcio never reached. Skipped where ``../shared`` is absent.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from warcio.archiveiterator import ArchiveIterator

from udfs.corpus import fetch
from udfs.corpus import html as P
from udfs.corpus import warc as W
from udfs.runtime.config import load_config

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT.parent / "shared" / "data" / "conformance" / "warcio-test-data" / "test" / "data"
FILES = sorted(p.name for p in SUITE.iterdir() if p.is_file()) if SUITE.is_dir() else []
LIMIT = 10_000_000
INDEXED_TYPES = ("response", "revisit")

pytestmark = pytest.mark.skipif(not FILES, reason=f"warcio's test files are not at {SUITE} (../shared is absent)")


@dataclass
class Ref:
    """One record as warcio reads it (``arc2warc``: an ARC record under WARC names)."""

    offset: int
    length: int
    rec_type: str
    url: str | None
    date: str | None
    status: int | None
    payload: bytes  # content_stream(): de-chunked, content-decoded
    payload_digest: str | None  # WARC-Payload-Digest as declared
    bad: str | None  # why the record is not readable as it stands, None for a good one


def warcio_records(path: Path) -> tuple[list[Ref], str | None]:
    """Every record warcio reads from ``path``, and the error it stopped on (None: it read to the end)."""
    out: list[Ref] = []
    failure = None
    # warcio writes its warnings to stderr; its err_count says the same
    with open(path, "rb") as fh, contextlib.redirect_stderr(io.StringIO()):
        it = ArchiveIterator(fh, arc2warc=True)
        try:
            for rec in it:
                declared = rec.rec_headers.get_header("Content-Length")
                code = rec.http_headers.get_statuscode() if rec.http_headers is not None else None
                payload = rec.content_stream().read()
                warnings = it.err_count
                it.read_to_end(rec)
                left = getattr(rec.raw_stream, "limit", 0) or 0
                bad = None
                if not re.fullmatch(r"[0-9]+", declared or ""):
                    bad = f"declared length {declared!r} is not a number of bytes (warcio reads the record as empty)"
                elif left:
                    bad = f"its file or gzip member ends {left} bytes before its declared length"
                elif it.err_count > warnings:
                    bad = "no blank line after its declared length (warcio: Content-Length invalid)"
                out.append(
                    Ref(
                        offset=it.get_record_offset(),
                        length=it.get_record_length(),
                        rec_type=rec.rec_type,
                        url=rec.rec_headers.get_header("WARC-Target-URI"),
                        date=rec.rec_headers.get_header("WARC-Date"),
                        status=int(code) if code and code.isdigit() else None,
                        payload=payload,
                        payload_digest=rec.rec_headers.get_header("WARC-Payload-Digest"),
                        bad=bad,
                    )
                )
        except Exception as exc:  # noqa: BLE001 - where warcio stops is part of the reference
            failure = f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
            if out and out[-1].bad is None:
                out[-1].bad = f"warcio stops right after it: {failure}"
    return out, failure


def warcio_record_at(path: Path, offset: int) -> Ref:
    """The record warcio reads from ``path`` when it starts at ``offset``."""
    with open(path, "rb") as fh, contextlib.redirect_stderr(io.StringIO()):
        fh.seek(offset)
        rec = next(iter(ArchiveIterator(fh, arc2warc=True)))
        code = rec.http_headers.get_statuscode() if rec.http_headers is not None else None
        return Ref(
            offset=offset,
            length=-1,
            rec_type=rec.rec_type,
            url=rec.rec_headers.get_header("WARC-Target-URI"),
            date=rec.rec_headers.get_header("WARC-Date"),
            status=int(code) if code and code.isdigit() else None,
            payload=rec.content_stream().read(),
            payload_digest=rec.rec_headers.get_header("WARC-Payload-Digest"),
            bad=None,
        )


def _gzipped(path: Path) -> bool:
    return path.read_bytes()[:2] == b"\x1f\x8b"


def _sha1_bytes(digest: str) -> bytes:
    """A ``sha1:`` digest as bytes, written in base32 (the standard form) or in hex."""
    value = digest.split(":", 1)[1]
    return bytes.fromhex(value) if re.fullmatch(r"[0-9a-fA-F]{40}", value) else base64.b32decode(value)


@pytest.fixture(scope="module")
def indexed(spark, tmp_path_factory):
    """One run of the WARC index job over the suite's folder, and over ``example-bad.warc.gz.bad``,
    which the folder walk skips for its name: (run record, index rows, reject rows)."""
    from jobs.warc_index import WarcIndexJob

    out = tmp_path_factory.mktemp("warcio")
    WarcIndexJob(
        [
            "--input",
            str(SUITE),
            str(SUITE / "example-bad.warc.gz.bad"),
            "--warc-base",
            str(SUITE),
            "--output",
            str(out),
        ]
    ).main()
    run = json.loads((out / "warc_index" / "_run.json").read_text())
    return run, pq.read_table(out / "warc_index").to_pylist(), pq.read_table(out / "rejects" / "warc_index").to_pylist()


def test_every_file_is_read_and_the_counts_reconcile(indexed):
    run, rows, rejects = indexed
    reads = {Path(r["source"]).name: r for r in run["inputs"]["read"]}
    assert sorted(reads) == FILES
    assert not [n for n, r in reads.items() if r["damaged"]]
    assert sum(r["records"] for r in reads.values()) == len(rows) == run["counters"]["records_indexed"]
    assert sum(r["records_rejected"] for r in reads.values()) == len(rejects) == run["counters"]["records_rejected"]
    assert run["counters"]["reconciles"] is True


@pytest.mark.parametrize("name", FILES)
def test_every_readable_record_is_indexed_at_warcios_offset(indexed, name):
    """Good responses and revisits are rows at warcio's offset, with its URL, date, status and type;
    the length is warcio's in a gzipped file (the member), and warcio's plus the line breaks after
    the record in an uncompressed one (warcio leaves them out; a byte-range read takes them)."""
    run, rows, _ = indexed
    path = SUITE / name
    refs, failure = warcio_records(path)
    reached = refs[-1].offset if failure else path.stat().st_size
    good = [r for r in refs if r.bad is None]
    mine = sorted((r for r in rows if r["warc_filename"] == name), key=lambda r: r["warc_record_offset"])
    assert [r["warc_record_offset"] for r in mine if r["warc_record_offset"] <= reached] == [
        r.offset for r in good if r.rec_type in INDEXED_TYPES
    ]
    by_offset = {r.offset: r for r in good}
    blob = path.read_bytes()
    for row in mine:
        if row["warc_record_offset"] > reached:
            continue
        ref = by_offset[row["warc_record_offset"]]
        assert (row["url"], row["fetch_time"], row["fetch_status"], row["warc_record_type"]) == (
            ref.url,
            ref.date,
            ref.status,
            ref.rec_type,
        )
        if _gzipped(path):
            assert row["warc_record_length"] == ref.length
        else:
            after = blob[ref.offset + ref.length : ref.offset + row["warc_record_length"]]
            assert after in (b"\r\n\r\n", b"\n\n", b"\n"), after
    (read,) = [r for r in run["inputs"]["read"] if Path(r["source"]).name == name]
    assert read["records"] == len(mine)
    if failure is None:  # every record warcio read whole is counted, indexed or not
        assert read["warc_records"] == len(good)
    else:
        assert read["warc_records"] >= len(good)


@pytest.mark.parametrize("name", FILES)
def test_truncated_and_bad_records_are_rejects_naming_file_and_offset(indexed, name):
    _, _, rejects = indexed
    path = SUITE / name
    refs, failure = warcio_records(path)
    bad = [r.offset for r in refs if r.bad is not None]
    mine = sorted(r["position"] for r in rejects if Path(r["source"]).resolve() == path.resolve())
    for r in rejects:
        if Path(r["source"]).resolve() == path.resolve():
            assert str(r["position"]) in r["reason"] and r["raw"], r
    if failure is None:
        assert mine == bad, [(r.offset, r.bad) for r in refs]
    else:  # past warcio's stop the project reads on: what it finds there is its own
        assert set(bad) <= set(mine) and min(mine) <= refs[-1].offset
        assert all(p > refs[-1].offset for p in set(mine) - set(bad))


def test_indexed_records_read_back_equal_through_the_pages_reader(indexed):
    """Each row read back by the pages job's reader (``fetch_page``: ``read_record`` at the row's
    offset and length, then the HTML step) gives warcio's payload for the record at that offset; a
    response's ``content_digest`` is the SHA-1 its record declares."""
    _, rows, _ = indexed
    cfg = P.PageConfig.of(load_config().pages, time_limit_s=30.0)
    html_pages = 0
    for row in rows:
        path = SUITE / row["warc_filename"]
        ref = warcio_record_at(path, row["warc_record_offset"])
        location = W.join_location(str(SUITE), row["warc_filename"])
        rec = W.read_record(location, row["warc_record_offset"], row["warc_record_length"], max_record_bytes=LIMIT)
        assert (rec.payload, rec.target_uri, rec.http_status) == (ref.payload, ref.url, ref.status), row
        if ref.rec_type == "response" and (ref.payload_digest or "").startswith("sha1:"):
            assert base64.b32decode(row["content_digest"]) == _sha1_bytes(ref.payload_digest), row
        got = fetch.fetch_page(
            {"slot": 0, "candidate_rank": 0, "page_url": row["url"], "types": None, **row}, str(SUITE), cfg, LIMIT
        )
        if ref.rec_type == "response" and ref.status == 200 and rec.mime_type in W.HTML_MIME_TYPES:
            html_pages += 1
            assert got["status"] not in (P.FETCH_ERROR, P.NOT_FOUND), got["reason"]
            assert got["html_sha256"] == hashlib.sha256(ref.payload).hexdigest()
        else:  # read, and refused by the pages job's rule for what a page is, with that reason
            assert got["status"] in (P.FETCH_ERROR, P.PARSE_ERROR) and got["html_sha256"] is None
            assert re.search(r"not a response record|HTTP status|not an HTML page", got["reason"]), got["reason"]
    assert html_pages > 0


def _dechunk(body: bytes) -> bytes:
    """HTTP/1.1 chunked transfer coding undone (RFC 9112 7.1), apart from warcio's reader."""
    out, pos = bytearray(), 0
    while True:
        eol = body.index(b"\r\n", pos)
        size = int(body[pos:eol].split(b";")[0], 16)
        if size == 0:
            return bytes(out)
        out += body[eol + 2 : eol + 2 + size]
        assert body[eol + 2 + size : eol + 4 + size] == b"\r\n"
        pos = eol + 4 + size


def test_chunked_payloads_are_decoded(indexed):
    """Every indexed response sent with ``Transfer-Encoding: chunked`` reads back de-chunked: equal
    to the chunks of the archived body joined (decoded here, apart from warcio)."""
    _, rows, _ = indexed
    chunked = 0
    for row in rows:
        path = SUITE / row["warc_filename"]
        with open(path, "rb") as fh:
            fh.seek(row["warc_record_offset"])
            rec = next(iter(ArchiveIterator(fh, arc2warc=True)))
            if rec.http_headers is None or rec.http_headers.get_header("Transfer-Encoding", "").lower() != "chunked":
                continue
            archived = rec.raw_stream.read()  # the body after the HTTP headers, as archived
        chunked += 1
        got = W.read_record(str(path), row["warc_record_offset"], row["warc_record_length"], max_record_bytes=LIMIT)
        assert re.match(rb"[0-9a-fA-F]+\r\n", archived) and got.payload != archived
        assert got.payload == _dechunk(archived) and got.payload.lstrip().lower().startswith(b"<!doctype html")
    assert chunked == 1  # example-iana.org-chunked.warc


def test_arc_files_are_read_under_warc_names(indexed):
    """The ARC files' good responses are rows (their URL as warcio writes it, spaces escaped), and
    the pages reader reads them; what is wrong in them is a reject that says ARC."""
    _, rows, rejects = indexed
    arcs = [n for n in FILES if n.endswith((".arc", ".arc.gz"))]
    good = {
        (n, r.offset) for n in arcs for r in warcio_records(SUITE / n)[0] if r.bad is None and r.rec_type == "response"
    }
    assert {(r["warc_filename"], r["warc_record_offset"]) for r in rows if r["warc_filename"] in arcs} == good
    assert len(good) == 3
    arc_rejects = [r for r in rejects if Path(r["source"]).name in arcs]
    assert arc_rejects and all("ARC record" in r["reason"] for r in arc_rejects)


def test_the_pages_job_reads_the_captures_it_picks(spark, indexed, tmp_path):
    """One run of the pages job over the whole index, one input row per indexed URL: every row's
    record is read (no fetch_error, no not_found), and a page's HTML is warcio's payload of the
    capture the job picked."""
    from jobs.pages import PagesJob

    _, rows, _ = indexed
    urls = sorted({r["url"] for r in rows})
    (tmp_path / "samples").mkdir()
    pq.write_table(
        pa.Table.from_pylist([{"page_url": u} for u in urls], pa.schema([("page_url", pa.string())])),
        tmp_path / "samples" / "part-0.parquet",
    )
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "index.parquet")
    out = tmp_path / "out"
    job = PagesJob(
        [
            "--input",
            str(tmp_path / "samples"),
            "--warc-index",
            str(tmp_path / "index.parquet"),
            "--warc-base",
            str(SUITE),
            "--replacements",
            "0",
            "--output",
            str(out),
        ]
    )
    # warcio's files hold no HTML page: every record is read, none is a usable page, and a run in
    # which nothing succeeded does not exit 0 (issue 64); its table still says why, row by row
    with pytest.raises(SystemExit) as stop:
        job.main()
    assert stop.value.code == 2
    pages = pq.read_table(out / "pages").to_pylist()
    assert sorted(p["page_url"] for p in pages) == urls
    html = set()
    for p in pages:
        assert p["status"] not in (P.FETCH_ERROR, P.NOT_FOUND), (p["page_url"], p["reason"])
        ref = warcio_record_at(SUITE / p["warc_filename"], p["warc_record_offset"])
        if p["html_sha256"] is not None:
            assert p["html_sha256"] == hashlib.sha256(ref.payload).hexdigest()
            html.add(p["page_url"])
        else:
            assert p["reason"].startswith("not an HTML page"), p["reason"]
    html_captured = {
        r["url"]
        for r in rows
        if r["warc_record_type"] == "response"
        and r["fetch_status"] == 200
        and r["content_mime_type"] in W.HTML_MIME_TYPES
    }
    assert html == html_captured and html
