"""Reading WARC records: one gzip member by byte range, parsed with warcio.

Common Crawl stores every record as its own gzip member, and its index gives each record's file,
offset and length; a reader therefore never needs more than ``length`` bytes of one file. The
same code reads a local file (tests, the bundled demo), ``s3://commoncrawl/...`` or
``https://data.commoncrawl.org/...``: fsspec resolves the location, we ask for one byte range.

Every way a read can go wrong ends as a ``WarcError`` with a status (``fetch_error`` or
``parse_error``, the ``pages/`` vocabulary) and a reason a person can act on.
"""
from __future__ import annotations

import io
import posixpath
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from warcio.archiveiterator import ArchiveIterator

FETCH_ERROR = "fetch_error"
PARSE_ERROR = "parse_error"

HTML_MIME_TYPES = ("text/html", "application/xhtml+xml")
# The file names the jobs read as WARC input (resolve_inputs suffixes).
WARC_SUFFIXES = (".warc.gz", ".warc", ".arc.gz")


class WarcError(Exception):
    """A record that could not be read; ``status`` is the ``pages/`` status it maps to."""

    def __init__(self, status: str, reason: str):
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass
class WarcRecord:
    rec_type: str
    target_uri: str | None
    http_status: int | None
    content_type: str | None  # the HTTP Content-Type header as sent
    payload: bytes
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def mime_type(self) -> str | None:
        if not self.content_type:
            return None
        return self.content_type.split(";", 1)[0].strip().lower() or None

    @property
    def charset(self) -> str | None:
        if not self.content_type:
            return None
        for part in self.content_type.split(";")[1:]:
            key, _, value = part.partition("=")
            if key.strip().lower() == "charset" and value.strip():
                return value.strip().strip("\"'")
        return None


def join_location(base: str | None, filename: str) -> str:
    """Where a record's file lives: ``filename`` as it is when absolute or a URL, else under ``base``.

    A relative name that climbs out of ``base`` (``../``) is a fetch error: ``relative_name``
    never writes one, so it comes from a damaged or crafted index, and reading it would read a
    file the operator did not point the job at.
    """
    if "://" in filename or not base:
        return filename
    if "://" in base:
        rel = filename.lstrip("/")
        _inside_base(rel, base)
        return base.rstrip("/") + "/" + rel
    if Path(filename).is_absolute():
        return filename
    _inside_base(filename, base)
    return str(Path(base) / filename)


def _inside_base(rel: str, base: str) -> None:
    norm = posixpath.normpath(rel.replace("\\", "/"))
    if norm == ".." or norm.startswith("../"):
        raise WarcError(FETCH_ERROR, f"warc_filename {rel[:300]!r} climbs out of --warc-base {base!r}; not read")


def read_range(location: str, offset: int, length: int) -> bytes:
    """``length`` bytes of ``location`` from ``offset``, through fsspec (local, s3, https, ...)."""
    import fsspec

    if offset < 0 or length <= 0:
        raise WarcError(FETCH_ERROR, f"bad byte range offset={offset} length={length}")
    try:
        fs, path = fsspec.core.url_to_fs(location)
        data = fs.cat_file(path, start=offset, end=offset + length)
    except FileNotFoundError:
        raise WarcError(FETCH_ERROR, f"WARC file not found: {location}") from None
    except Exception as exc:  # network, permissions: the page is lost, the job goes on
        raise WarcError(FETCH_ERROR, f"reading {location}@{offset}+{length}: {type(exc).__name__}: {exc}") from None
    if len(data) < length:
        raise WarcError(FETCH_ERROR, f"short read: {len(data)} of {length} bytes at offset {offset} of {location}")
    return data


def gunzip_member(data: bytes, max_bytes: int) -> bytes:
    """The decompressed content of the single gzip member ``data``, at most ``max_bytes`` of it.

    A wrong offset shows as bytes that are not a gzip header; a wrong (short) length as a member
    without its end; both are fetch errors: the index or the file is wrong, not the page.
    """
    if data[:2] != b"\x1f\x8b":
        raise WarcError(FETCH_ERROR, f"no gzip member at this offset (first bytes {data[:8]!r}): wrong offset?")
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = d.decompress(data, max_bytes + 1)
    except zlib.error as exc:
        raise WarcError(FETCH_ERROR, f"corrupt gzip member: {exc}") from None
    if len(out) > max_bytes:
        raise WarcError(PARSE_ERROR, f"record larger than max_record_bytes={max_bytes} when decompressed")
    if not d.eof:
        raise WarcError(FETCH_ERROR, f"truncated gzip member: {len(data)} bytes end before the member does")
    return out


def parse_record(raw: bytes) -> WarcRecord:
    """The first WARC record in ``raw`` (uncompressed bytes), with its HTTP payload de-chunked."""
    try:
        it = ArchiveIterator(io.BytesIO(raw), no_record_parse=False, arc2warc=True)
        rec = next(iter(it), None)
        if rec is None:
            raise WarcError(FETCH_ERROR, "no WARC record at this offset")
        http = rec.http_headers
        status = None
        ctype = None
        if http is not None:
            code = http.get_statuscode()
            status = int(code) if code and code.isdigit() else None
            ctype = http.get_header("Content-Type")
        payload = rec.content_stream().read()
        headers = dict(rec.rec_headers.headers)
        return WarcRecord(
            rec_type=rec.rec_type,
            target_uri=rec.rec_headers.get_header("WARC-Target-URI"),
            http_status=status,
            content_type=ctype,
            payload=payload,
            headers=headers,
        )
    except WarcError:
        raise
    except Exception as exc:  # warcio's own errors for a record that is not a WARC record
        raise WarcError(FETCH_ERROR, f"not a WARC record at this offset: {type(exc).__name__}: {exc}") from None


def read_record(location: str, offset: int, length: int, *, max_record_bytes: int) -> WarcRecord:
    """Fetch, decompress and parse the record at ``location``/``offset``/``length``.

    Memory is bounded by ``max_record_bytes`` both before (the compressed range) and after
    decompression.
    """
    if length > max_record_bytes:
        raise WarcError(FETCH_ERROR, f"record length {length} exceeds max_record_bytes={max_record_bytes}; not fetched")
    data = read_range(location, offset, length)
    return parse_record(gunzip_member(data, max_record_bytes))


def html_record_check(rec: WarcRecord, expected_url: str | None = None) -> None:
    """Raise unless ``rec`` is the 200 HTML response we came for."""
    if rec.rec_type != "response":
        raise WarcError(PARSE_ERROR, f"not a response record but {rec.rec_type!r}")
    if expected_url and rec.target_uri and rec.target_uri != expected_url:
        raise WarcError(FETCH_ERROR, f"record is for {rec.target_uri!r}, not {expected_url!r}: wrong offset?")
    if rec.http_status != 200:
        raise WarcError(FETCH_ERROR, f"HTTP status {rec.http_status} in the WARC record")
    if rec.mime_type not in HTML_MIME_TYPES:
        raise WarcError(PARSE_ERROR, f"not an HTML page: Content-Type {rec.content_type!r}")


# ---- indexing local files --------------------------------------------------------------------

INDEX_COLUMNS = (
    "url", "fetch_time", "fetch_status", "content_mime_type", "content_charset",
    "warc_filename", "warc_record_offset", "warc_record_length", "warc_record_type",
)


def index_warc(path: str, warc_filename: str | None = None) -> Iterator[dict]:
    """One index row per response / revisit record of a local or remote WARC file.

    Offsets and lengths are those of the gzip members, as Common Crawl's columnar index gives them,
    so ``read_record`` reads exactly one record back. An unreadable tail (a cut file) ends the
    iteration with a ``WarcError`` after the good records have been yielded.
    """
    import fsspec

    name = warc_filename or path
    pending = None
    with fsspec.open(path, "rb") as fh:
        it = ArchiveIterator(fh)
        try:
            for rec in it:
                if rec.rec_type not in ("response", "revisit"):
                    continue
                http = rec.http_headers
                ctype = http.get_header("Content-Type") if http is not None else None
                code = http.get_statuscode() if http is not None else None
                # the length is known only once the record's content has been read
                rec.content_stream().read()
                row = {
                    "url": rec.rec_headers.get_header("WARC-Target-URI"),
                    "fetch_time": rec.rec_headers.get_header("WARC-Date"),
                    "fetch_status": int(code) if code and code.isdigit() else None,
                    "content_mime_type": ctype.split(";", 1)[0].strip().lower() if ctype else None,
                    "content_charset": WarcRecord("", None, None, ctype, b"").charset,
                    "warc_filename": name,
                    "warc_record_offset": it.get_record_offset(),
                    "warc_record_length": None,
                    "warc_record_type": rec.rec_type,
                }
                it.read_to_end(rec)
                row["warc_record_length"] = it.get_record_length()
                if pending is not None:
                    yield pending
                pending = row
        except Exception as exc:
            raise WarcError(PARSE_ERROR, f"{name}: unreadable after offset {it.offset}: {type(exc).__name__}: {exc}") from None
    if pending is not None:
        # warcio ends quietly on a file cut inside its last gzip member; reading that member back
        # tells a complete record from a cut one
        try:
            gunzip_member(read_range(path, pending["warc_record_offset"], pending["warc_record_length"]), 1 << 40)
        except WarcError as exc:
            raise WarcError(PARSE_ERROR, f"{name}: last record at offset {pending['warc_record_offset']} "
                                         f"is cut ({exc.reason}); not indexed") from None
        yield pending


def relative_name(path: str, base: str | None) -> str:
    """``path`` relative to ``base`` (how the index names files), or as given when outside it."""
    if not base:
        return path
    if "://" in path or "://" in base:
        b = base.rstrip("/") + "/"
        return path[len(b):] if path.startswith(b) else path
    try:
        return Path(path).resolve().relative_to(Path(base).resolve()).as_posix()
    except ValueError:
        return path


__all__ = [
    "FETCH_ERROR", "PARSE_ERROR", "WarcError", "WarcRecord", "join_location", "read_range",
    "gunzip_member", "parse_record", "read_record", "html_record_check", "index_warc",
    "relative_name", "INDEX_COLUMNS",
]
