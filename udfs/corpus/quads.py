"""WARC files to WebDataCommons-style N-Quads: the logic of ``jobs/extract_quads.py``, callable
without a job.

``extract_file`` reads every HTML response of one WARC file, extracts its JSON-LD blocks and writes
them as N-Quads the way WebDataCommons publishes them (``<s> <p> o <page-url>   .``: the page URL
is the graph term, page-scoped blank nodes, ``http://schema.org/`` IRIs), one gzip part per input
file, ready for ``jobs/csets.py``. A block's quads are the RDF view of the JSON-LD reader that
evaluation uses (``udfs/corpus/wdc_quads.py``), the page URL its base; no context is ever
fetched. The part is byte-reproducible: the same input gives the same bytes (gzip mtime 0, no
name in the header), and it appears whole when the file is done
(``udfs.runtime.io.Folder.open``), local or remote.
"""

from __future__ import annotations

import gzip
import io
import json
import re
from dataclasses import dataclass
from typing import Any, Iterator

from udfs.corpus import html as P
from udfs.corpus.encoding import decode_html
from udfs.corpus.warc import BAD_RECORD, HTML_MIME_TYPES, OVER_BOUND, RECORD, WarcRecord, archive_iterator, walk_archive
from udfs.corpus.wdc_quads import jsonld_to_quads
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

    Never raises on bad content, and the work per record is bounded as in the pages job. The file
    is walked by the WARC index's walker (``udfs.corpus.warc.walk_archive``), with its damage
    rules: a gzip member is streamed and held only up to ``max_record_bytes`` decompressed, an
    uncompressed record read only up to it (a larger one is a reject with its first bytes,
    ``records_over_max_bytes``; a file written as one gzip member of many whole records is bounded
    as a whole, Common Crawl's files hold one record per member); a record whose declared length
    disagrees with its framing (a plain WARC that breaks off inside one included) is a reject,
    ``records_unreadable`` and ``file_errors``; damage that is no record (a member cut short, a
    corrupt deflate stream, bytes that are not gzip where a member should start, bytes between
    records) is a reject naming the file and the offset, and ``file_errors``; the walk goes on at
    the next record, as the index's does, so the index and this job give one damaged file one
    verdict. A page over ``max_html_bytes``, unreadable HTML, a block over ``max_markup_nodes``
    JSON values or ``max_markup_chars`` characters as JSON (refused before it is converted), a
    block that is not JSON-LD or not convertible and a record warcio cannot parse are reject rows
    with their reason; every step of a page (decoding, extraction, the bounds check and
    conversion) runs under ``time_limit_s``. A rejected block's text is ``raw``, cut to
    ``reject_raw_chars``. Counters reconcile (``reconciles``)."""
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
        _walk(fh, path, _Pages(path, out, counts, rejects, limits))
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


def _walk(fh, path: str, page: "_Pages") -> None:
    """The records of the file, step by step as ``walk_archive`` finds them (its rules, its
    rejects), each counted once: a framed record goes to ``page``."""
    lim, counts = page.limits, page.counts
    steps = walk_archive(
        fh, path, path, max_record_bytes=lim.max_record_bytes, raw_chars=lim.raw_chars, skipped="not read"
    )
    for step in steps:
        if step.kind == RECORD:
            _read_step(step, page)
            continue
        page.rejects.append(step.reject)
        if step.kind == OVER_BOUND:
            counts["records"] += 1
            counts["records_over_max_bytes"] += 1
            continue
        counts["file_errors"] += 1
        if step.kind == BAD_RECORD:  # a record, unreadable; other damage is bytes that are no record
            counts["records"] += 1
            counts["records_unreadable"] += 1


def _read_step(step, page: "_Pages") -> None:
    """The records warcio parses from one framed step (one record; a gzip member of a file
    compressed as one stream: several), each to ``page`` at the step's offset."""
    counts, lim = page.counts, page.limits
    it = iter(archive_iterator(io.BytesIO(step.data)))
    while True:
        try:
            rec = next(it, None)
        except Exception as exc:  # noqa: BLE001 - warcio's errors for bytes that are not a WARC record
            counts["records"] += 1
            counts["records_unreadable"] += 1
            what = (
                f"gzip member at offset {step.offset}" if step.compressed else f"{step.label} at offset {step.offset}"
            )
            page.reject(
                step.offset,
                f"{what} is not a WARC record: {type(exc).__name__}: {str(exc)[:300]}",
                step.data[: 4 * lim.raw_chars],
            )
            return
        if rec is None:
            return
        page(rec, step.offset)


def _check_and_convert(data: Any, url: str, index: int, max_nodes: int, max_chars: int) -> tuple[str | None, list[str]]:
    """(why the block is over a bound, or None; its quads: ``udfs.corpus.wdc_quads``, the RDF view
    of the reader evaluation uses). The bounds are checked before any conversion, each at a cost
    bounded by the bound or linear in the block. Raises where the block cannot be converted: a
    ValueError or MarkupError from the reader, and a ValueError for a string that holds a lone
    surrogate (JSON's ``"\\ud800"``), which is no Unicode scalar value and has no UTF-8 form."""
    from udfs.schemaorg.markup import count_json_values

    if count_json_values(data, max_nodes) > max_nodes:
        return f"block {index}: markup over max_markup_nodes={max_nodes} JSON values", []
    size = len(json.dumps(data, ensure_ascii=False))
    if size > max_chars:
        return f"block {index}: markup of {size} characters over max_markup_chars={max_chars}", []
    lines = jsonld_to_quads(data, url, block_index=index)
    for line in lines:
        bad = _LONE_SURROGATE.search(line)
        if bad:
            # checked here, not when the part is written: a failed write would end the whole file
            raise ValueError(f"a string holds the lone surrogate U+{ord(bad.group()):04X}, no Unicode scalar value")
    return None, lines


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class _Pages:
    """One WARC record after another: counted, its HTML page's blocks converted and written."""

    def __init__(self, path, out, counts, rejects, limits: _Limits):
        self.path, self.out, self.counts, self.rejects, self.limits = path, out, counts, rejects, limits

    def reject(self, offset, reason: str, raw=None) -> None:
        self.rejects.append(
            reject_row(self.path, offset, reason, raw, raw_chars=self.limits.raw_chars if raw is not None else None)
        )

    def __call__(self, rec, offset: int) -> None:
        """``offset``: the record's (its gzip member's), framed whole by the walker."""
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
                offset,
                f"{url}: record payload unreadable: {type(exc).__name__}: {str(exc)[:300]}",
            )
            return
        if len(payload) > lim.max_html_bytes:
            counts["skipped_oversized"] += 1
            self.reject(offset, f"{url}: page larger than max_html_bytes={lim.max_html_bytes}")
            return
        counts["html_responses"] += 1
        try:
            html = P.run_with_time_limit(decode_html, lim.time_limit_s, "decoding", payload, ctype)
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
