"""WARC files to WebDataCommons-style N-Quads: the logic of ``jobs/extract_quads.py``, callable
without a job.

``extract_file`` reads every HTML response of one WARC file, extracts its JSON-LD blocks and writes
them as N-Quads the way WebDataCommons publishes them (``<s> <p> o <page-url>   .``: the page URL
is the graph term, page-scoped blank nodes, ``http://schema.org/`` IRIs), one gzip part per input
file, ready for ``jobs/csets.py``. JSON-LD is converted by rdflib with the bundled schema.org
context (``udfs/corpus/html.py``); no context is ever fetched. The part is byte-reproducible: the
same input gives the same bytes (gzip mtime 0, no name in the header), and it appears whole when
the file is done (``udfs.runtime.io.Folder.open``), local or remote.
"""

from __future__ import annotations

import gzip
import io
import json
from dataclasses import dataclass
from typing import Any, Iterator

from warcio.archiveiterator import ArchiveIterator

from udfs.corpus import html as P
from udfs.corpus.warc import HTML_MIME_TYPES, WarcError, WarcRecord, gzip_members
from udfs.runtime.io import Folder
from udfs.runtime.rejects import reject_row

COUNTERS = (
    "records",
    "html_responses",
    "skipped_not_html_response",
    "skipped_oversized",
    "records_over_max_bytes",
    "records_unreadable",
    "pages_with_jsonld",
    "blocks",
    "blocks_converted",
    "blocks_rejected",
    "blocks_over_limits",
    "blocks_empty",
    "quads",
    "file_errors",
)


def reconciles(counts: dict[str, int]) -> bool:
    """The counters' identities: every block and every record is accounted for once."""
    return (
        counts["blocks"] == counts["blocks_converted"] + counts["blocks_rejected"] + counts["blocks_empty"]
        and counts["records"]
        == counts["html_responses"]
        + counts["skipped_not_html_response"]
        + counts["skipped_oversized"]
        + counts["records_over_max_bytes"]
        + counts["records_unreadable"]
    )


def extract_file(
    index: int,
    path: str,
    out_dir: str,
    *,
    max_html_bytes: int,
    max_record_bytes: int,
    max_markup_chars: int,
    max_markup_nodes: int,
    reject_raw_chars: int,
    time_limit_s: float,
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Write the quads of the WARC file ``path`` to ``<out_dir>/part-<index:05d>.nq.gz``; yield
    ("reject", row) items (``udfs.runtime.rejects`` rows: source the file, position the record's
    offset) and then one ("counters", dict of ``COUNTERS``).

    Never raises on bad content, and the work per record is bounded as in the pages job: a gzip
    member is streamed and held only up to ``max_record_bytes`` decompressed (a larger one is a
    reject with its first bytes; a file written as one gzip member of many records is bounded as
    a whole, Common Crawl's files hold one record per member); a page over ``max_html_bytes``,
    unreadable HTML, a block over ``max_markup_nodes`` JSON values or ``max_markup_chars``
    characters as JSON (refused before it is converted), a block that is not JSON-LD or not
    convertible and a member that is not a WARC record are reject rows with their reason; every
    step of a page (decoding, extraction, the bounds check and conversion) runs under
    ``time_limit_s``. Damage after which the next record cannot be found (a member cut short, a
    corrupt deflate stream, bytes that are not gzip where a member should start, a plain WARC
    that breaks off) is a reject row naming the file and the offset where the readable part
    ends, and ``file_errors``: never a silent end; the quads read before it are kept. A
    rejected block's text is ``raw``, cut to ``reject_raw_chars``. Counters reconcile
    (``reconciles``)."""
    import fsspec

    counts = dict.fromkeys(COUNTERS, 0)
    rejects: list[dict] = []
    limits = _Limits(
        max_html_bytes, max_record_bytes, max_markup_chars, max_markup_nodes, reject_raw_chars, time_limit_s
    )
    # mtime 0 and no name in the gzip header: the same input gives the same bytes. The part appears
    # whole when the file is done (Folder.open: local rename or one object put), local or remote.
    with (
        fsspec.open(path, "rb") as fh,
        Folder(out_dir).open(f"part-{index:05d}.nq.gz", "wb") as raw_out,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw_out, mtime=0, compresslevel=6) as gz,
        io.TextIOWrapper(gz, encoding="utf-8", newline="\n") as out,
    ):
        page = _Pages(path, out, counts, rejects, limits)
        magic = fh.read(2)
        fh.seek(0)
        if magic == b"\x1f\x8b":
            _read_members(fh, path, page)
        else:
            _read_plain(fh, path, page)
    for r in rejects:
        yield ("reject", r)
    yield ("counters", counts)


@dataclass
class _Limits:
    max_html_bytes: int
    max_record_bytes: int
    max_markup_chars: int
    max_markup_nodes: int
    raw_chars: int
    time_limit_s: float


def _read_members(fh, path: str, page: "_Pages") -> None:
    """A gzipped WARC, member by member (``gzip_members``: streamed, bounded, damage raised)."""
    lim, counts = page.limits, page.counts
    readable_to = 0  # the end of the last whole member: where damage starts
    try:
        for m in gzip_members(fh, lim.max_record_bytes, path, head_bytes=4 * lim.raw_chars):
            readable_to = m.offset + m.length
            if m.data is None:
                counts["records"] += 1
                counts["records_over_max_bytes"] += 1
                page.reject(
                    m.offset,
                    f"record at offset {m.offset} ({m.length} bytes compressed) inflates to "
                    f"{m.size} bytes, over max_record_bytes={lim.max_record_bytes}; not read",
                    m.head,
                )
                continue
            it = iter(ArchiveIterator(io.BytesIO(m.data)))
            while True:
                try:
                    rec = next(it, None)
                except Exception as exc:  # noqa: BLE001 - warcio's errors for bytes that are not a WARC record
                    counts["records"] += 1
                    counts["records_unreadable"] += 1
                    page.reject(
                        m.offset,
                        f"gzip member at offset {m.offset} is not a WARC record: "
                        f"{type(exc).__name__}: {str(exc)[:300]}",
                        m.data[: 4 * lim.raw_chars],
                    )
                    break
                if rec is None:
                    break
                page(rec, m.offset)
    except WarcError as exc:
        counts["file_errors"] += 1
        page.reject(readable_to, f"{exc.reason}; the records before offset {readable_to} were read")


def _read_plain(fh, path: str, page: "_Pages") -> None:
    """An uncompressed WARC, read by warcio (payloads read only up to the page bound)."""
    it = ArchiveIterator(fh)
    try:
        for rec in it:
            if rec.length is None and rec.format.startswith("warc"):  # Content-Length is mandatory
                page.counts["records"] += 1
                page.counts["records_unreadable"] += 1
                page.counts["file_errors"] += 1
                offset = it.get_record_offset()
                page.reject(
                    offset,
                    f"{path}: unreadable after offset {offset}: the record there has no "
                    "Content-Length (its headers are cut or damaged)",
                )
                continue
            page(rec, None, it)
            it.read_to_end(rec)
            if _left(rec) and not page.cut_reported:  # a record the page step did not read, cut short
                page.counts["file_errors"] += 1
                page.reject(it.get_record_offset(), _cut_reason(path, it.get_record_offset(), rec))
    except Exception as exc:  # noqa: BLE001 - a cut or corrupt file: keep what was read, say where it broke
        page.counts["file_errors"] += 1
        page.reject(
            it.offset,
            f"{path}: unreadable after offset {it.offset}: {type(exc).__name__}: "
            f"{str(exc)[:300]}; the records before it were read",
        )


def _left(rec) -> int:
    """Bytes of the record's declared length the file did not hold (0: the record is whole)."""
    return max(0, getattr(rec.raw_stream, "limit", 0) or 0)


def _cut_reason(path: str, offset: int, rec) -> str:
    return (
        f"{path}: unreadable after offset {offset}: the record there is cut (the file ends {_left(rec)} bytes "
        "before the record does); the records before it were read"
    )


def _check_and_convert(data: Any, url: str, index: int, max_nodes: int, max_chars: int) -> tuple[str | None, list[str]]:
    """(why the block is over a bound, or None; its quads). The bounds are checked before any
    conversion, each at a cost bounded by the bound or linear in the block."""
    from udfs.schemaorg.markup import count_json_values

    if count_json_values(data, max_nodes) > max_nodes:
        return f"block {index}: markup over max_markup_nodes={max_nodes} JSON values", []
    size = len(json.dumps(data, ensure_ascii=False))
    if size > max_chars:
        return f"block {index}: markup of {size} characters over max_markup_chars={max_chars}", []
    return None, P.jsonld_to_quads(data, url, block_index=index)


class _Pages:
    """One WARC record after another: counted, its HTML page's blocks converted and written."""

    def __init__(self, path, out, counts, rejects, limits: _Limits):
        self.path, self.out, self.counts, self.rejects, self.limits = path, out, counts, rejects, limits
        self.cut_reported = False

    def reject(self, offset, reason: str, raw=None) -> None:
        self.rejects.append(
            reject_row(self.path, offset, reason, raw, raw_chars=self.limits.raw_chars if raw is not None else None)
        )

    def __call__(self, rec, offset: int | None, it=None) -> None:
        """``offset``: the record's (its gzip member's); None: ask ``it`` once the payload is read."""
        counts, lim = self.counts, self.limits
        counts["records"] += 1
        http = rec.http_headers
        ctype = http.get_header("Content-Type") if http is not None else None
        info = WarcRecord(rec.rec_type, None, None, ctype, b"")
        if (
            rec.rec_type != "response"
            or http is None
            or http.get_statuscode() != "200"
            or info.mime_type not in HTML_MIME_TYPES
        ):
            counts["skipped_not_html_response"] += 1
            return
        url = rec.rec_headers.get_header("WARC-Target-URI")
        try:
            payload = rec.content_stream().read(lim.max_html_bytes + 1)
        except Exception as exc:  # noqa: BLE001 - a payload that cannot be de-chunked or decoded
            counts["records_unreadable"] += 1
            self.reject(
                offset if it is None else it.get_record_offset(),
                f"{url}: record payload unreadable: {type(exc).__name__}: {str(exc)[:300]}",
            )
            return
        if offset is None:
            offset = it.get_record_offset()  # only after the read: asking earlier empties the stream
            if _left(rec):  # a plain WARC that ends inside this record: its page is not whole
                counts["records_unreadable"] += 1
                counts["file_errors"] += 1
                self.cut_reported = True
                self.reject(offset, _cut_reason(self.path, offset, rec))
                return
        if len(payload) > lim.max_html_bytes:
            counts["skipped_oversized"] += 1
            self.reject(offset, f"{url}: page larger than max_html_bytes={lim.max_html_bytes}")
            return
        counts["html_responses"] += 1
        try:
            html = P.run_with_time_limit(P.decode_html, lim.time_limit_s, "decoding", payload, ctype)
            blocks = P.run_with_time_limit(P.jsonld_blocks, lim.time_limit_s, "JSON-LD extraction", html)
        except Exception as exc:  # noqa: BLE001 - a page whose HTML cannot be read is a reject row
            self.reject(offset, f"{url}: HTML not readable: {exc}")
            return
        if blocks:
            counts["pages_with_jsonld"] += 1
        for b in blocks:
            counts["blocks"] += 1
            if b.error is None and b.data is None:  # `null` or an empty script: nothing to say
                counts["blocks_empty"] += 1
                continue
            reason = b.error
            lines: list[str] = []
            if reason is None:
                try:
                    reason, lines = P.run_with_time_limit(
                        _check_and_convert,
                        lim.time_limit_s,
                        "JSON-LD to RDF",
                        b.data,
                        url,
                        b.index,
                        lim.max_markup_nodes,
                        lim.max_markup_chars,
                    )
                    if reason is not None:
                        counts["blocks_over_limits"] += 1
                except Exception as exc:  # noqa: BLE001 - a block that cannot be converted is a reject row with its reason
                    reason = f"block {b.index}: {type(exc).__name__}: {str(exc)[:300]}"
            if reason is not None:
                counts["blocks_rejected"] += 1
                self.reject(offset, f"{url}: {reason}", b.raw)
                continue
            counts["blocks_converted"] += 1
            counts["quads"] += len(lines)
            for line in lines:
                self.out.write(line + "\n")
