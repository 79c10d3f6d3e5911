"""Reading WARC records: one gzip member (or one record of an uncompressed file) by byte range,
parsed with warcio; indexing local files with every record's framing checked.

Common Crawl stores every record as its own gzip member, and its index gives each record's file,
offset and length; a reader therefore never needs more than ``length`` bytes of one file. The
same code reads a local file (tests, the bundled demo), ``s3://commoncrawl/...`` or
``https://data.commoncrawl.org/...``: fsspec resolves the location, we ask for one byte range.

Every way a read can go wrong ends as a ``WarcError`` with a status (``fetch_error`` or
``parse_error``, the ``pages/`` vocabulary) and a reason a person can act on.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import posixpath
import re
import typing
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator
from urllib.parse import unquote, urlsplit

import pyarrow as pa
from warcio.archiveiterator import ArchiveIterator
from warcio.recordloader import ArcWarcRecordLoader

from udfs.runtime.contracts import TableContract
from udfs.runtime.rejects import FIXED_RAW_CHARS, reject_row

FETCH_ERROR = "fetch_error"
PARSE_ERROR = "parse_error"
NOT_FOUND = "not_found"

HTML_MIME_TYPES = ("text/html", "application/xhtml+xml")
# The file names the jobs read as WARC input (resolve_inputs suffixes).
WARC_SUFFIXES = (".warc.gz", ".warc", ".arc.gz")
# ... and the ones the index job reads: uncompressed ARC files too (scan_warc reads ARC version 1)
ARCHIVE_SUFFIXES = (*WARC_SUFFIXES, ".arc")

# The warc_index/ table's contract (udfs.runtime.contracts): Common Crawl's columnar index names,
# which jobs/warc_index.py writes (its INDEX_SCHEMA) and jobs/pages.py --warc-index reads
# (udfs.corpus.fetch.best_capture). Where a location is, required; what picks among captures of a
# URL, optional. Common Crawl's own index reads as it is: its int32 offsets and lengths and int16
# status widen, its fetch_time is a timestamp where ours is the record's WARC-Date text (the reader
# casts either). Key: (warc_filename, warc_record_offset), one record.
WARC_INDEX = TableContract(
    "warc_index",
    required={
        "url": pa.string(),
        "warc_filename": pa.string(),
        "warc_record_offset": pa.int64(),
        "warc_record_length": pa.int64(),
    },
    optional={
        "fetch_time": (pa.string(), pa.timestamp("us", tz="UTC")),
        # an int64 status too (index_warc's rows as Python ints): best_capture casts it
        "fetch_status": (pa.int32(), pa.int64()),
        "content_mime_type": pa.string(),
        "content_charset": pa.string(),
        "warc_record_type": pa.string(),
        "content_digest": pa.string(),
        # the record's WARC-Truncated value (length, time, disconnect, unspecified; null: whole), as
        # Common Crawl's index names it: the pages job skips such a capture without reading it
        "content_truncated": pa.string(),
    },
    key=("warc_filename", "warc_record_offset"),
    writer="llm4schema-warc-index (or Common Crawl's columnar index)",
)

# The trust boundary of a WARC index: its warc_filename values come from a table anyone may have
# built (or damaged), so a name is read only where --warc-base says files live.
ROOT_RULE = (
    "an index entry is read only if it resolves, symlinks followed, inside --warc-base "
    "(for a URL base: same scheme, host and path prefix)"
)
# percent-encoded dots, slashes and backslashes, a query or fragment, control characters: ways a
# server or fsspec could read a name other than the one checked
_URL_TRICKS = re.compile(r"%(2e|2f|5c|00)|[?#\x00-\x1f\x7f]", re.I)


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
    # why the record holds less than the page (``truncation``): None when it holds it whole
    truncated: str | None = None

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
    """Where a record's file lives: ``filename`` under ``base``, or a ``not_found`` WarcError.

    With a ``base`` (``--warc-base``), a name is read only if it resolves inside it
    (``ROOT_RULE``): a local base admits relative names and absolute paths or ``file://`` URLs whose
    real path (symlinks followed, ``..`` applied) lies in the base's real path; a URL base
    (``s3://commoncrawl/``, ``https://data.commoncrawl.org/``) admits relative names that do not
    climb out of it and URLs on the same scheme and host under the same path prefix. Anything else
    (``..`` out of the base, an absolute path or URL elsewhere, a symlink leading out) is refused
    before anything is opened or requested, and the reason names the rule, never the file's bytes.
    Without a base the index is the operator's own and its names are read as they are.
    """
    if not base:
        return filename
    if base.startswith("file://"):
        base = unquote(urlsplit(base).path) or "/"
    if "://" in base:
        return _under_url_base(base, filename)
    return _under_local_base(base, filename)


def _refuse(filename: str, base: str, why: str) -> typing.NoReturn:
    raise WarcError(
        NOT_FOUND,
        f"refused: warc_filename {filename[:300]!r} {why}; the rule: {ROOT_RULE} (--warc-base {base!r}); not read",
    )


def _climbs(rel: str) -> bool:
    norm = posixpath.normpath(rel.replace("\\", "/"))
    return norm == ".." or norm.startswith("../")


def _under_url_base(base: str, filename: str) -> str:
    b = urlsplit(base)
    prefix = b.path.rstrip("/") + "/"
    rel = filename
    if "://" in filename:
        u = urlsplit(filename)
        if (u.scheme.lower(), u.netloc.lower()) != (b.scheme.lower(), b.netloc.lower()):
            _refuse(filename, base, "is a URL on another scheme or host than --warc-base")
        if u.query or u.fragment or not u.path.startswith(prefix):
            _refuse(filename, base, "is a URL outside --warc-base's path prefix")
        rel = u.path[len(prefix) :]
    if _URL_TRICKS.search(rel):
        _refuse(filename, base, "holds an encoded separator, a query or a control character")
    rel = rel.replace("\\", "/").lstrip("/")
    if _climbs(rel):
        _refuse(filename, base, "climbs out of --warc-base")
    norm = posixpath.normpath(rel) if rel else "."
    if norm == ".":
        _refuse(filename, base, "names no file under --warc-base")
    return base.rstrip("/") + "/" + norm


def _under_local_base(base: str, filename: str) -> str:
    name = filename
    if "://" in name:
        u = urlsplit(name)
        if u.scheme.lower() != "file" or u.netloc not in ("", "localhost") or u.query or u.fragment:
            _refuse(filename, base, "is a URL, and --warc-base is a local folder")
        name = unquote(u.path)
    if "\x00" in name:
        _refuse(filename, base, "holds a NUL character")
    absolute = os.path.isabs(name)
    if not absolute and _climbs(name):
        _refuse(filename, base, "climbs out of --warc-base")
    root = os.path.realpath(base)
    real = os.path.realpath(name if absolute else os.path.join(root, name))
    if real == root or not real.startswith(root.rstrip(os.sep) + os.sep):
        lexical = os.path.normpath(name if absolute else os.path.join(root, name))
        if real == root:
            why = "names --warc-base itself, not a file in it"
        elif lexical.startswith(root.rstrip(os.sep) + os.sep):
            why = "leads out of --warc-base through a symlink"
        elif absolute:
            why = "is an absolute path outside --warc-base"
        else:
            why = "climbs out of --warc-base"
        _refuse(filename, base, why)
    return real


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
    except Exception as exc:  # noqa: BLE001 - network, permissions: the page is lost, the job goes on
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


class _RecordLoader(ArcWarcRecordLoader):
    """warcio's record loader, reading the HTTP headers of a record whose target URI's scheme is
    written in any case: warcio reads them only after a URI starting ``http:`` or ``https:``,
    compared case-sensitively, where RFC 3986 (3.1) makes the scheme case-insensitive, so
    ``HTTP://EXAMPLE.COM/a`` was a record without an HTTP status. The URI itself stays as written."""

    def load_http_headers(self, rec_type, uri, stream, length):
        scheme, sep, rest = (uri or "").partition(":")
        if sep and scheme.lower() in ("http", "https") and scheme not in ("http", "https"):
            uri = scheme.lower() + sep + rest
        return super().load_http_headers(rec_type, uri, stream, length)


def archive_iterator(stream, **kwargs) -> ArchiveIterator:
    """warcio's ``ArchiveIterator`` over ``stream`` (its keyword arguments), with the loader that
    reads HTTP headers whatever the case of the scheme (``_RecordLoader``): every record the
    project parses goes through here."""
    it = ArchiveIterator(stream, **kwargs)
    it.loader = _RecordLoader(verify_http=kwargs.get("verify_http", False), arc2warc=kwargs.get("arc2warc", False))
    return it


def truncation(warc_truncated: str | None, http, body: bytes, payload: bytes) -> str | None:
    """Why a response record holds less than its page, or None: a ``WARC-Truncated`` header (any
    value: ``length``, ``time``, ``disconnect``, ``unspecified``; the reason names the header), an
    HTTP body shorter than its own ``Content-Length`` (compared only where the body is stored as
    sent: no ``Transfer-Encoding``, no ``Content-Encoding`` but ``identity``), or a chunked body
    (``Transfer-Encoding: chunked``) that ends before its last, zero-size chunk. ``body``: the
    HTTP body as archived; ``payload``: as warcio decoded it (de-chunked), which a chunked body
    that warcio reads past a cut (it stops quietly) shows no sign of."""
    if warc_truncated is not None:
        return f"WARC-Truncated: {warc_truncated.strip() or '(empty)'}"
    if http is None:
        return None
    te = (http.get_header("Transfer-Encoding") or "").strip().lower()
    ce = (http.get_header("Content-Encoding") or "").strip().lower()
    declared = (http.get_header("Content-Length") or "").strip()
    if not te and ce in ("", "identity") and declared.isdigit() and len(body) < int(declared):
        return f"HTTP body {len(body)} bytes of Content-Length {int(declared)}"
    if te == "chunked":
        return _chunked_cut(body)
    return None


def _chunked_cut(body: bytes) -> str | None:
    """Why the chunked ``body`` ends before its last chunk, or None (whole, or not chunk-framed at
    all: a body stored de-chunked under its old header, which warcio then reads as it is)."""
    pos = n = 0
    while True:
        if pos >= len(body) and n:
            return f"chunked HTTP body ends after {n} chunks ({len(body)} bytes), before its last, zero-size chunk"
        eol = body.find(b"\r\n", pos, pos + 64)
        if eol < 0:
            return None
        size_text = body[pos:eol].split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            return None
        if size == 0:
            return None
        start = eol + 2
        if start + size > len(body):
            return (
                f"chunked HTTP body ends inside its chunk {n + 1}: {len(body) - start} of its {size} bytes, "
                f"{len(body)} bytes in all"
            )
        pos = start + size + 2
        n += 1


def parse_record(raw: bytes) -> WarcRecord:
    """The first WARC record in ``raw`` (uncompressed bytes), with its HTTP payload de-chunked and
    its ``truncated`` reason (``truncation``)."""
    try:
        it = archive_iterator(io.BytesIO(raw), no_record_parse=False, arc2warc=True)
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
        # the body as archived, then decoded from those bytes: its length is what it holds
        body = rec.raw_stream.read()
        rec.raw_stream = io.BytesIO(body)
        payload = rec.content_stream().read()
        headers = dict(rec.rec_headers.headers)
        return WarcRecord(
            rec_type=rec.rec_type,
            target_uri=rec.rec_headers.get_header("WARC-Target-URI"),
            http_status=status,
            content_type=ctype,
            payload=payload,
            headers=headers,
            truncated=truncation(rec.rec_headers.get_header("WARC-Truncated"), http, body, payload),
        )
    except WarcError:
        raise
    except Exception as exc:  # noqa: BLE001 - warcio's own errors for a record that is not a WARC record
        raise WarcError(FETCH_ERROR, f"not a WARC record at this offset: {type(exc).__name__}: {exc}") from None


def read_record(location: str, offset: int, length: int, *, max_record_bytes: int) -> WarcRecord:
    """Fetch, decompress and parse the record at ``location``/``offset``/``length``: one gzip member
    (a ``.warc.gz`` or ``.arc.gz``) or the record's own bytes (an uncompressed ``.warc`` or ``.arc``),
    told apart by their first bytes; anything else is a ``fetch_error`` saying the offset does not
    match the file. The bytes must hold exactly one record whose declared length ends where they
    end (``one_record``).

    Memory is bounded by ``max_record_bytes`` both before (the compressed range) and after
    decompression.
    """
    if length > max_record_bytes:
        raise WarcError(FETCH_ERROR, f"record length {length} exceeds max_record_bytes={max_record_bytes}; not fetched")
    data = read_range(location, offset, length)
    if data[:2] == b"\x1f\x8b":
        raw = gunzip_member(data, max_record_bytes)
    elif data[:5] == b"WARC/" or _arc_header(data) is not None:
        raw = data  # a record of an uncompressed .warc or .arc: the range is the record itself
    else:
        raise WarcError(
            FETCH_ERROR,
            f"neither a gzip member nor a WARC record header nor an ARC header line at offset {offset} of "
            f"{location} (first bytes {data[:8]!r}): the index's offset does not match the file",
        )
    try:
        one_record(raw, "the bytes read")
    except ValueError as exc:
        raise WarcError(
            FETCH_ERROR, f"record at offset {offset} of {location} ({length} bytes as indexed): {exc}"
        ) from None
    return parse_record(raw)


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


# ---- framing: a record's declared Content-Length against the bytes around it -----------------

# A WARC header block (version line to the blank line) longer than this is not one: the scan looks
# for the next record instead of reading on.
_MAX_HEADER_BYTES = 1 << 16
_BLANK_LINE = re.compile(rb"\r?\n\r?\n")
_VERSION_LINE = re.compile(rb"WARC/\d+\.\d+\r?\n")
_DECIMAL = re.compile(rb"[0-9]{1,18}")


def record_framing(head: bytes) -> tuple[int, int]:
    """(header bytes, declared block bytes) of the record ``head`` starts with: its version line,
    header lines up to the blank line, and a Content-Length of decimal digits. A ValueError says
    what is wrong (no version line, no blank line within ``_MAX_HEADER_BYTES``, a Content-Length
    missing, repeated, negative, not a number or beyond any file)."""
    if not _VERSION_LINE.match(head):
        raise ValueError(f"not a WARC record header (first bytes {head[:16]!r})")
    blank = _BLANK_LINE.search(head, 0, _MAX_HEADER_BYTES)
    if blank is None:
        raise ValueError(f"no blank line ends the WARC header within {_MAX_HEADER_BYTES} bytes")
    values = []
    for line in head[: blank.start()].split(b"\n")[1:]:
        key, sep, value = line.partition(b":")
        if sep and key.strip().lower() == b"content-length":
            values.append(value.strip())
    if len(values) != 1:
        raise ValueError(f"{len(values)} Content-Length headers, not one")
    if not _DECIMAL.fullmatch(values[0]):
        raise ValueError(f"Content-Length {values[0][:40]!r} is not a decimal number of bytes")
    return blank.end(), int(values[0])


class _NoSeparator(ValueError):
    """The next record's version line right where a block ends."""


def _separator(tail: bytes, at_end: bool) -> int:
    """The length of the record separator ``tail`` (the bytes after a block, up to the end of the
    file or member when ``at_end``) starts with: CRLF CRLF (LF LF from a writer of bare line
    feeds), followed by the next version line or the end. A ValueError when the block's declared
    length disagrees with that framing: a length one to four bytes off leaves a separator cut or
    grown, so nothing else is taken for one."""
    for sep in (b"\r\n\r\n", b"\n\n"):
        rest = tail[len(sep) :]
        if tail.startswith(sep) and ((at_end and not rest) or rest.startswith(b"WARC/")):
            return len(sep)
    raise ValueError(
        f"its block is not followed by CRLF CRLF and the next record (after it: {tail[:24]!r}): the declared "
        "length disagrees with the framing"
    )


def _next_version_line(fh, start: int, size: int) -> int:
    """The offset of the next WARC version line (``WARC/1.0`` and its line break, wherever it
    starts: a damaged separator may leave no line break before it) at or after ``start``, ``size``
    if none; read in steps."""
    pos = start
    while pos < size:
        fh.seek(pos)
        chunk = fh.read(_READ_CHUNK + 32)
        at_end = pos + len(chunk) >= size
        i = chunk.find(b"WARC/")
        while i >= 0 and (at_end or i + 32 <= len(chunk)):
            if _VERSION_LINE.match(chunk, i):
                return pos + i
            i = chunk.find(b"WARC/", i + 1)
        if at_end:
            break
        pos += i if i >= 0 else len(chunk) - 32
    return size


# ---- ARC (version 1, the one warcio reads) -------------------------------------------------
# A record is a header line "URL IP-address Archive-date Content-type Archive-length", the block of
# Archive-length bytes, and one line feed; the file's first record (URL filedesc://...) describes it.

_ARC_DATE = re.compile(rb"[0-9]{14,}")


def _arc_header(head: bytes) -> list[bytes] | None:
    """The five fields of the ARC header line ``head`` starts with (up to its line feed), split from
    the right as warcio splits them, so that a URL may hold spaces; None unless the fields are there
    and the date is 14 or more digits. The length is not checked here: ``arc_framing`` says what is
    wrong with it."""
    end = head.find(b"\n", 0, _MAX_HEADER_BYTES)
    if end < 0:
        return None
    parts = head[:end].rsplit(b" ", 4)
    if len(parts) != 5 or not all(parts) or parts[0][:1].isspace() or not _ARC_DATE.fullmatch(parts[2]):
        return None
    return parts


def arc_framing(head: bytes) -> tuple[int, int]:
    """(header line bytes, declared block bytes) of the ARC record ``head`` starts with. A
    ValueError says what is wrong (no header line, an Archive-length that is not a decimal number:
    warcio reads such a record as empty)."""
    parts = _arc_header(head)
    if parts is None:
        raise ValueError(f"not an ARC record header line (first bytes {head[:16]!r})")
    if not _DECIMAL.fullmatch(parts[4]):
        raise ValueError(f"Archive-length {parts[4][:40]!r} is not a decimal number of bytes")
    return head.index(b"\n") + 1, int(parts[4])


def _arc_separator(tail: bytes, at_end: bool, filedesc: bool = False) -> int:
    """The length of the line feed that ends an ARC record: ``tail`` (the bytes after its block, up
    to the end of the file or member when ``at_end``) is one line feed, then the end or the next
    record's first byte; after the ``filedesc`` record, whose version block writers end with a blank
    line they do not count, two line feeds too. A ValueError when the block's declared length
    disagrees with that: a length one byte off leaves no line feed, or one too many, so nothing else
    is taken for one."""
    n = 2 if filedesc and tail.startswith(b"\n\n") else 1
    # what follows is the end (at_end: nothing) or the next record's first byte, never a line break
    if tail[:n] == b"\n" * n and tail[n : n + 1] not in (b"\n", b"\r"):
        return n
    raise ValueError(
        f"its block is not followed by one line feed and the next record (after it: {tail[:24]!r}): the "
        "declared Archive-length disagrees with the framing"
    )


def one_record(raw: bytes, what: str) -> None:
    """A ValueError unless ``raw`` (a gzip member's content, or the bytes an index gives for one
    record; ``what`` names them in the message) holds exactly one record whose declared length
    ends at its separator and the end of ``raw``: a WARC record (``record_framing``, ``_separator``)
    or an ARC record (``arc_framing``, ``_arc_separator``). Bytes that start as neither are left to
    warcio, which says whether they are a record."""
    if raw.startswith(b"WARC/"):
        header_len, block_len = record_framing(raw)
        separator = _separator
    elif _arc_header(raw) is not None:
        header_len, block_len = arc_framing(raw)

        def separator(tail: bytes, at_end: bool) -> int:
            return _arc_separator(tail, at_end, filedesc=raw.startswith(b"filedesc://"))

    else:
        return
    end = header_len + block_len
    if end > len(raw):
        raise ValueError(f"its declared block runs {end - len(raw)} bytes past the end of {what}")
    if end + separator(raw[end:], at_end=True) < len(raw):
        raise ValueError(f"more than one record in {what} (one record per gzip member is what a byte-range read needs)")


def _next_arc_header(fh, start: int, size: int) -> int:
    """The offset of the next ARC header line (``_arc_header``) that starts after a line feed at or
    after ``start``, ``size`` if none; read in steps."""
    pos = start
    while pos < size:
        fh.seek(pos)
        chunk = fh.read(_READ_CHUNK)
        if not chunk:
            break
        i = chunk.find(b"\n")
        if i < 0:
            pos += len(chunk)
            continue
        while i >= 0:
            j = chunk.find(b"\n", i + 1)
            if j < 0:
                break  # the line after i runs past this step (or is the file's last, without a line feed)
            if _arc_header(chunk[i + 1 : j + 1]) is not None:
                return pos + i + 1
            i = j
        if pos + len(chunk) >= size:
            break
        pos += max(i, 1)  # read on from the line feed before the unfinished line
    return size


# ---- indexing local files --------------------------------------------------------------------

INDEX_COLUMNS = (
    "url",
    "fetch_time",
    "fetch_status",
    "content_mime_type",
    "content_charset",
    "warc_filename",
    "warc_record_offset",
    "warc_record_length",
    "warc_record_type",
    "content_digest",
    "content_truncated",
)
# Compressed bytes read per call, and decompressed bytes produced per call: what one step of the
# scan holds besides the record it keeps (at most max_record_bytes).
_READ_CHUNK = 1 << 16
_INFLATE_STEP = 1 << 20


@dataclass
class GzipMember:
    offset: int  # of the gzip member in the file
    length: int  # compressed bytes
    size: int  # decompressed bytes, all counted
    data: bytes | None  # the decompressed member, None when size > the bound
    head: bytes  # its first bytes (the reject's sample when data is None)
    damage: str | None = None  # what is wrong with the bytes (gzip_members with resync), then data is None


def gzip_members(fh, max_bytes: int, name: str, head_bytes: int, *, resync: bool = False) -> Iterator[GzipMember]:
    """The gzip members of ``fh``, one at a time, streamed: a member's decompressed bytes are
    kept only up to ``max_bytes`` (then only counted, never held), so a member that inflates to
    any size costs at most ``max_bytes`` + one step of memory.

    Damage (a member cut short, bytes that are not a gzip member where one should start, a corrupt
    deflate stream or checksum) ends the scan with a ``WarcError``; with ``resync`` (``fh``
    seekable) it is a ``GzipMember`` whose ``damage`` says what and where, spanning the bytes up to
    the next offset where a gzip member starts and inflates without error (``length``), and the
    scan goes on from there."""
    size_of_file = None
    pos = 0
    pending = b""
    while True:
        while len(pending) < 2:
            more = fh.read(_READ_CHUNK)
            if not more:
                break
            pending += more
        if not pending:
            return
        try:
            member, pending = _one_member(fh, pending, pos, max_bytes, name, head_bytes)
        except WarcError as exc:
            if not resync:
                raise
            if size_of_file is None:
                size_of_file = fh.seek(0, 2)
            nxt = _next_gzip_member(fh, pos + 1, size_of_file)
            fh.seek(pos)
            head = fh.read(min(head_bytes, nxt - pos))
            yield GzipMember(pos, nxt - pos, 0, None, head, damage=exc.reason)
            fh.seek(nxt)
            pos, pending = nxt, b""
            continue
        if member.size:
            yield member
        pos += member.length


def _one_member(fh, pending: bytes, pos: int, max_bytes: int, name: str, head_bytes: int):
    """(the gzip member at ``pos``, the bytes read after it) or a ``WarcError`` for damage."""
    if pending[:2] != b"\x1f\x8b":
        raise WarcError(
            PARSE_ERROR,
            f"{name}: unreadable after offset {pos}: not a gzip member there "
            f"({len(pending)} bytes that are not a gzip header)",
        )
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    kept = bytearray()
    head = b""
    size = used = 0
    full = False  # the last step filled its output: the decompressor may hold more
    while not d.eof:
        if not pending and not full:
            pending = fh.read(_READ_CHUNK)
            if not pending:
                raise WarcError(
                    PARSE_ERROR,
                    f"{name}: last record at offset {pos} is cut (truncated gzip "
                    "member: the file ends before the member does)",
                )
        fed = pending
        try:
            out = d.decompress(fed, _INFLATE_STEP)
        except zlib.error as exc:
            raise WarcError(PARSE_ERROR, f"{name}: unreadable after offset {pos}: corrupt gzip member: {exc}") from None
        pending = d.unused_data if d.eof else d.unconsumed_tail
        used += len(fed) - len(pending)
        full = len(out) == _INFLATE_STEP
        if len(head) < head_bytes:
            head += out[: head_bytes - len(head)]
        size += len(out)
        if size <= max_bytes:
            kept += out
        elif kept:
            kept = bytearray()  # over the bound: from here on only counted
    return GzipMember(pos, used, size, bytes(kept) if size <= max_bytes else None, head), pending


def _next_gzip_member(fh, start: int, size: int) -> int:
    """The first offset at or after ``start`` where a gzip member starts (magic and deflate method)
    and its first ``_READ_CHUNK`` bytes inflate without error; ``size`` when there is none."""
    pos = start
    while pos < size:
        fh.seek(pos)
        chunk = fh.read(_READ_CHUNK + 2)
        i = chunk.find(b"\x1f\x8b\x08")
        if i < 0:
            if len(chunk) < 3:
                return size
            pos += len(chunk) - 2
            continue
        cand = pos + i
        fh.seek(cand)
        try:
            zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(fh.read(_READ_CHUNK), _INFLATE_STEP)
        except zlib.error:
            pos = cand + 1
            continue
        return cand
    return size


def _payload_digest(stream) -> tuple[int, str]:
    """(bytes, base32 SHA-1) of a record's payload as archived, read in steps (Common Crawl's
    ``content_digest`` form)."""
    h = hashlib.sha1()
    n = 0
    while True:
        chunk = stream.read(_READ_CHUNK)
        if not chunk:
            return n, base64.b32encode(h.digest()).decode()
        n += len(chunk)
        h.update(chunk)


def _row(rec, name: str) -> dict:
    http = rec.http_headers
    ctype = http.get_header("Content-Type") if http is not None else None
    code = http.get_statuscode() if http is not None else None
    return {
        "url": rec.rec_headers.get_header("WARC-Target-URI"),
        "fetch_time": rec.rec_headers.get_header("WARC-Date"),
        "fetch_status": int(code) if code and code.isdigit() else None,
        "content_mime_type": ctype.split(";", 1)[0].strip().lower() if ctype else None,
        "content_charset": WarcRecord("", None, None, ctype, b"").charset,
        "warc_filename": name,
        "warc_record_offset": None,
        "warc_record_length": None,
        "warc_record_type": rec.rec_type,
        "content_digest": None,
        # the WARC-Truncated value as written (length, time, disconnect, unspecified), as Common
        # Crawl's columnar index gives it
        "content_truncated": rec.rec_headers.get_header("WARC-Truncated"),
    }


# ---- one walker: where the records of a file are, and what is damage ---------------------------

RECORD, OVER_BOUND, BAD_RECORD, DAMAGE = "record", "over_bound", "bad_record", "damage"


@dataclass
class Step:
    """One step of ``walk_archive``. ``kind``: ``RECORD`` (``data`` holds a framed record: a gzip
    member's content, or an uncompressed record's own bytes), ``OVER_BOUND`` (a record larger than
    ``max_record_bytes``, never held), ``BAD_RECORD`` (a record whose declared length disagrees
    with its framing, or a gzip member that is not one record) or ``DAMAGE`` (bytes that are not a
    record: a damaged gzip member, bytes between records); all but ``RECORD`` carry their
    ``reject`` row. ``offset``/``length``: the bytes in the file (a gzip member's, or the record
    and the line breaks after it); ``compressed``: a gzip member; ``label``: "record" or "ARC
    record"; ``head``: the first bytes; ``several``: a gzip member holding several whole records
    (each framed), which a byte-range read cannot read: the reason why, else None."""

    kind: str
    offset: int
    length: int
    compressed: bool
    head: bytes
    data: bytes | None = None
    reject: dict | None = None
    label: str = "record"
    several: str | None = None


def walk_archive(
    fh, path: str, name: str, *, max_record_bytes: int, raw_chars: int, skipped: str = "not indexed"
) -> Iterator[Step]:
    """The records of the WARC or ARC file open as ``fh`` (seekable; ``path`` its location, which
    rejects name as their source, ``name`` the one their reasons say), one ``Step`` each, with one
    set of damage rules: the one walker the index (``scan_warc``) and ``extract_quads``
    (``udfs.corpus.quads``) both read. ``skipped`` ends a reject's reason ("not indexed", "not
    read"). warcio parses what a ``RECORD`` step holds; the rules are ``scan_warc``'s."""
    magic = fh.read(5)
    fh.seek(0)
    # the first bytes say which; when they are damaged, the name does
    if magic[:2] == b"\x1f\x8b" or (magic != b"WARC/" and path.endswith(".gz")):
        yield from _walk_gzip(fh, name, path, max_record_bytes, raw_chars, skipped)
    else:
        yield from _walk_plain(fh, name, path, max_record_bytes, raw_chars, skipped)


def scan_warc(
    path: str,
    warc_filename: str | None = None,
    *,
    max_record_bytes: int,
    raw_chars: int,
    seen: Counter | None = None,
) -> Iterator[tuple[str, dict]]:
    """The index of one WARC (or ARC) file as ``("row", index row)`` and ``("reject", reject row)`` pairs.

    One row per response or revisit record, offset and length those of its gzip member in a
    ``.warc.gz`` (as Common Crawl's columnar index gives them) or of the record itself with the
    line breaks after it in an uncompressed ``.warc`` (warcio's length leaves those out), so
    ``read_record`` reads one record back. An ARC file (version 1; its first record ``filedesc://``)
    is read the same way, its records under warcio's WARC names (``arc2warc``: a response with
    ``WARC-Target-URI`` and ``WARC-Date``), its Archive-length checked as a Content-Length is
    (``arc_framing``: the block, then one line feed), a bad one a reject;
    ``content_digest`` the base32 SHA-1 of the payload as archived; ``content_truncated`` the
    record's ``WARC-Truncated`` value (null: none). ``seen`` (when given) counts
    every record read, by WARC-Type, indexed or not.

    Every record's declared Content-Length is checked against its framing (``record_framing``,
    ``_separator``): the block must be followed by CRLF CRLF (LF LF) and then the member's end
    (gzip), or the next ``WARC/`` version line or the file's end (plain). A record that disagrees
    (too long, too short, not a number, negative, past the end, no separator), a member that is not
    one record, bytes between records that are not a record, and a record larger than
    ``max_record_bytes`` are reject rows (position: the offset; raw: the first bytes, cut to
    ``raw_chars``), and the scan goes on: with the next gzip member, or in a plain file at the next
    ``WARC/`` version line after the bad record's own. A record whose Content-Length swallows whole the records
    after it and ends on a record boundary is framed consistently and cannot be told from one whose
    block holds them. In an ARC file the scan goes on at the next line that is an ARC header line
    (``_next_arc_header``). Damage to the gzip framing (a cut or corrupt member, a bad checksum, bytes
    that are not gzip) is a reject row too, spanning the bytes up to the next offset where a gzip
    member starts and inflates (``gzip_members`` with ``resync``), and the scan goes on there.
    Memory: a record is held only up to ``max_record_bytes`` (a gzip member is streamed). The
    walking and its rules are ``walk_archive``'s.
    """
    import fsspec

    name = warc_filename or path
    seen = Counter() if seen is None else seen
    with fsspec.open(path, "rb") as fh:
        for step in walk_archive(fh, path, name, max_record_bytes=max_record_bytes, raw_chars=raw_chars):
            if step.kind != RECORD:
                yield "reject", step.reject
                continue
            try:
                if step.several:
                    raise ValueError(step.several)
                yield from _record_items(step.data, name, step.offset, step.length, seen)
            except Exception as exc:  # noqa: BLE001 - warcio's errors for a record it cannot parse
                yield "reject", _unreadable(step, path, name, exc, raw_chars)


def _unreadable(step: Step, path: str, name: str, exc: Exception, raw_chars: int) -> dict:
    """The reject row of a framed record (``step``) that warcio cannot read as one record."""
    if step.compressed:
        reason = (
            f"gzip member at offset {step.offset} is not one WARC or ARC record: {type(exc).__name__}: {str(exc)[:300]}"
        )
    else:
        reason = f"{name}: {step.label} at offset {step.offset} is not readable: {type(exc).__name__}: {str(exc)[:300]}"
    return reject_row(path, step.offset, reason, step.head, raw_chars=raw_chars)


def _record_items(data: bytes, name: str, offset: int, length: int, seen: Counter) -> Iterator[tuple[str, dict]]:
    """The row of the one record ``data`` holds (framing already checked), if it is indexed."""
    # arc2warc: an ARC record's URL and date under the WARC names the index reads
    it = iter(archive_iterator(io.BytesIO(data), arc2warc=True))
    rec = next(it, None)
    if rec is None:
        raise ValueError("no WARC record in it")
    row = None
    if rec.rec_type in ("response", "revisit"):
        row = _row(rec, name)
        _, row["content_digest"] = _payload_digest(rec.raw_stream)
        row["warc_record_offset"], row["warc_record_length"] = offset, length
    if next(it, None) is not None:  # bytes one_record left to warcio, holding two records
        raise ValueError("more than one record (one record per gzip member is what a byte-range read needs)")
    seen[rec.rec_type] += 1
    if row is not None:
        yield "row", row


def _several_records(data: bytes, path: str) -> bool:
    """Whether ``data`` (a gzip member's content that is not one record) is several whole records,
    each framed by the plain walker's rules: a file compressed as one gzip stream."""
    steps = _walk_plain(io.BytesIO(data), path, path.removesuffix(".gz"), len(data), 1, "")
    n = 0
    for step in steps:
        if step.kind != RECORD:
            return False
        n += 1
    return n > 1


def _walk_gzip(fh, name, path, max_record_bytes, raw_chars, skipped):
    size = fh.seek(0, 2)
    fh.seek(0)
    for m in gzip_members(fh, max_record_bytes, name, head_bytes=4 * raw_chars, resync=True):
        if m.damage is not None:
            after = m.offset + m.length
            reason = (
                f"{m.damage}; {m.length} bytes skipped to "
                + (f"the next gzip member at offset {after}" if after < size else "the end of the file")
                + f"; {skipped}"
            )
            yield Step(
                DAMAGE, m.offset, m.length, True, m.head, reject=_reject(path, m.offset, reason, m.head, raw_chars)
            )
            continue
        if m.data is None:
            reason = (
                f"record at offset {m.offset} ({m.length} bytes compressed) "
                f"inflates to {m.size} bytes, over max_record_bytes={max_record_bytes}; {skipped}"
            )
            yield Step(
                OVER_BOUND, m.offset, m.length, True, m.head, reject=_reject(path, m.offset, reason, m.head, raw_chars)
            )
            continue
        try:
            one_record(m.data, "the member")
        except ValueError as exc:
            if str(exc).startswith("more than one record") and _several_records(m.data, path):
                yield Step(RECORD, m.offset, m.length, True, m.head, data=m.data, several=str(exc))
                continue
            reason = (
                f"gzip member at offset {m.offset} is not one WARC or ARC record: {type(exc).__name__}: "
                f"{str(exc)[:300]}"
            )
            yield Step(
                BAD_RECORD, m.offset, m.length, True, m.head, reject=_reject(path, m.offset, reason, m.head, raw_chars)
            )
            continue
        yield Step(RECORD, m.offset, m.length, True, m.head, data=m.data)


def _reject(path, offset, reason, raw, raw_chars) -> dict:
    return reject_row(path, offset, reason, raw, raw_chars=raw_chars)


def _walk_plain(fh, name, path, max_record_bytes, raw_chars, skipped):
    size = fh.seek(0, 2)
    pos = 0
    arc = None  # an ARC file, told by its first record (filedesc://), or by its name when that is damaged
    while pos < size:
        fh.seek(pos)
        head = fh.read(min(_MAX_HEADER_BYTES, size - pos))
        gap = len(head) - len(head.lstrip(b"\r\n"))
        if gap:  # line breaks between records (or before the first)
            pos += gap
            continue
        if arc is None:
            arc = head.startswith(b"filedesc://") or (not head.startswith(b"WARC/") and path.lower().endswith(".arc"))
        kind, length_field = ("ARC record", "Archive-length") if arc else ("record", "Content-Length")
        try:
            header_len, block_len = arc_framing(head) if arc else record_framing(head)
        except ValueError as exc:
            nxt = _next_arc_header(fh, pos, size) if arc else _next_version_line(fh, pos + 1, size)
            is_record = _arc_header(head) if arc else _VERSION_LINE.match(head)
            reason = (
                f"{name}: {kind} at offset {pos}: {exc}; {skipped}, skipped to the next record at offset {nxt}"
                if is_record
                else f"{name}: bytes at offset {pos} ({nxt - pos} up to the next record) are not a readable "
                f"{'ARC' if arc else 'WARC'} record: {exc}; skipped to offset {nxt}"
            )
            yield Step(
                BAD_RECORD if is_record else DAMAGE,
                pos,
                nxt - pos,
                False,
                head,
                reject=_reject(path, pos, reason, head, raw_chars),
                label=kind,
            )
            pos = nxt
            continue
        end = pos + header_len + block_len
        try:
            if end > size:
                raise ValueError(f"its declared block runs {end - size} bytes past the end of the file")
            fh.seek(end)
            tail = fh.read(_READ_CHUNK)
            if arc:
                after = _arc_separator(tail, at_end=end + len(tail) >= size, filedesc=head.startswith(b"filedesc://"))
            elif tail.startswith(b"WARC/"):
                raise _NoSeparator
            else:
                after = _separator(tail, at_end=end + len(tail) >= size)
        except _NoSeparator:
            # the next version line right at the block's end: the separator missing, or a length
            # that swallowed it; the record after is whole and read
            reason = (
                f"{name}: record at offset {pos} declares Content-Length {block_len}, and no line break "
                f"separates its block from the next record at offset {end}: the length counts the "
                f"separator, or the separator is missing; {skipped}"
            )
            yield Step(BAD_RECORD, pos, end - pos, False, head, reject=_reject(path, pos, reason, head, raw_chars))
            pos = end
            continue
        except ValueError as exc:
            nxt = _next_arc_header(fh, pos, size) if arc else _next_version_line(fh, pos + 1, size)
            reason = (
                f"{name}: {kind} at offset {pos} declares {length_field} {block_len}, and {exc}; "
                f"{skipped}, skipped to the next record at offset {nxt}"
            )
            yield Step(
                BAD_RECORD, pos, nxt - pos, False, head, reject=_reject(path, pos, reason, head, raw_chars), label=kind
            )
            pos = nxt
            continue
        nxt = end + after
        if block_len > max_record_bytes:
            reason = (
                f"{kind} at offset {pos} has a {block_len}-byte block, over max_record_bytes={max_record_bytes}; "
                f"{skipped}"
            )
            yield Step(OVER_BOUND, pos, nxt - pos, False, head, reject=_reject(path, pos, reason, head, raw_chars))
        else:
            fh.seek(pos)
            data = fh.read(end - pos)
            yield Step(RECORD, pos, nxt - pos, False, head[:raw_chars], data=data, label=kind)
        pos = nxt


def index_warc(path: str, warc_filename: str | None = None, *, max_record_bytes: int | None = None) -> Iterator[dict]:
    """The index rows of ``scan_warc`` (``max_record_bytes`` None: no bound), for callers that
    want rows only: a reject (a record over the bound, a member that is not a record) is a
    ``WarcError`` here, after the rows before it, never a silent gap."""
    bound = (1 << 62) if max_record_bytes is None else max_record_bytes
    for kind, row in scan_warc(path, warc_filename, max_record_bytes=bound, raw_chars=FIXED_RAW_CHARS):
        if kind == "reject":
            raise WarcError(PARSE_ERROR, f"{warc_filename or path}: {row['reason']}")
        yield row


def relative_name(path: str, base: str | None) -> str:
    """``path`` relative to ``base`` (how the index names files), or as given when outside it."""
    if not base:
        return path
    if "://" in path or "://" in base:
        b = base.rstrip("/") + "/"
        return path[len(b) :] if path.startswith(b) else path
    try:
        return Path(path).resolve().relative_to(Path(base).resolve()).as_posix()
    except ValueError:
        return path


__all__ = [
    "FETCH_ERROR",
    "PARSE_ERROR",
    "NOT_FOUND",
    "ROOT_RULE",
    "WarcError",
    "WarcRecord",
    "join_location",
    "read_range",
    "gunzip_member",
    "parse_record",
    "read_record",
    "html_record_check",
    "scan_warc",
    "walk_archive",
    "Step",
    "archive_iterator",
    "truncation",
    "index_warc",
    "relative_name",
    "INDEX_COLUMNS",
    "ARCHIVE_SUFFIXES",
    "arc_framing",
    "one_record",
    "GzipMember",
    "gzip_members",
]
