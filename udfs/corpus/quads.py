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
from typing import Any, Iterator

from udfs.corpus import html as P
from udfs.corpus.warc import HTML_MIME_TYPES, WarcRecord
from udfs.runtime.io import Folder
from udfs.runtime.rejects import reject_row

COUNTERS = ("records", "html_responses", "skipped_not_html_response", "skipped_oversized", "pages_with_jsonld",
            "blocks", "blocks_converted", "blocks_rejected", "blocks_empty", "quads", "file_errors")


def extract_file(index: int, path: str, out_dir: str, *, max_html_bytes: int, reject_raw_chars: int,
                 time_limit_s: float) -> Iterator[tuple[str, dict[str, Any]]]:
    """Write the quads of the WARC file ``path`` to ``<out_dir>/part-<index:05d>.nq.gz``; yield
    ("reject", row) items (``udfs.runtime.rejects`` rows: source the file, position the record
    offset) and then one ("counters", dict of ``COUNTERS``).

    Never raises on bad content: an oversized page (over ``max_html_bytes``), unreadable HTML, a
    block that is not JSON-LD or not convertible (each step under ``time_limit_s``) and a file that
    breaks off part-way (the quads read before the damage are kept) are reject rows with their
    reason; a rejected block's text is ``raw``, cut to ``reject_raw_chars``. Counters reconcile:
    ``blocks = blocks_converted + blocks_rejected + blocks_empty`` and
    ``records = html_responses + skipped_not_html_response + skipped_oversized``."""
    import fsspec
    from warcio.archiveiterator import ArchiveIterator

    max_bytes, raw_chars, time_limit = max_html_bytes, reject_raw_chars, time_limit_s
    counts = dict.fromkeys(COUNTERS, 0)
    rejects = []
    # mtime 0 and no name in the gzip header: the same input gives the same bytes. The part appears
    # whole when the file is done (Folder.open: local rename or one object put), local or remote.
    with fsspec.open(path, "rb") as fh, Folder(out_dir).open(f"part-{index:05d}.nq.gz", "wb") as raw_out, \
            gzip.GzipFile(filename="", mode="wb", fileobj=raw_out, mtime=0, compresslevel=6) as gz, \
            io.TextIOWrapper(gz, encoding="utf-8", newline="\n") as out:
        it = ArchiveIterator(fh)
        try:
            for rec in it:
                counts["records"] += 1
                http = rec.http_headers
                ctype = http.get_header("Content-Type") if http is not None else None
                info = WarcRecord(rec.rec_type, None, None, ctype, b"")
                if rec.rec_type != "response" or http is None or http.get_statuscode() != "200" or info.mime_type not in HTML_MIME_TYPES:
                    counts["skipped_not_html_response"] += 1
                    continue
                url = rec.rec_headers.get_header("WARC-Target-URI")
                payload = rec.content_stream().read(max_bytes + 1)
                offset = it.get_record_offset()  # only after the read: asking earlier empties the stream
                if len(payload) > max_bytes:
                    counts["skipped_oversized"] += 1
                    rejects.append(reject_row(path, offset, f"{url}: page larger than max_html_bytes={max_bytes}", None,
                                              raw_chars=raw_chars))
                    continue
                counts["html_responses"] += 1
                try:
                    html = P.run_with_time_limit(P.decode_html, time_limit, "decoding", payload, ctype)
                    blocks = P.run_with_time_limit(P.jsonld_blocks, time_limit, "JSON-LD extraction", html)
                except Exception as exc:
                    rejects.append(reject_row(path, offset, f"{url}: HTML not readable: {exc}", None, raw_chars=raw_chars))
                    continue
                if blocks:
                    counts["pages_with_jsonld"] += 1
                for b in blocks:
                    counts["blocks"] += 1
                    if b.error is None and b.data is None:  # `null` or an empty script: nothing to say
                        counts["blocks_empty"] += 1
                        continue
                    reason = b.error
                    lines = []
                    if reason is None:
                        try:
                            lines = P.run_with_time_limit(P.jsonld_to_quads, time_limit, "JSON-LD to RDF", b.data, url,
                                                          block_index=b.index)
                        except Exception as exc:
                            reason = f"block {b.index}: {type(exc).__name__}: {str(exc)[:300]}"
                    if reason is not None:
                        counts["blocks_rejected"] += 1
                        rejects.append(reject_row(path, offset, f"{url}: {reason}", b.raw, raw_chars=raw_chars))
                        continue
                    counts["blocks_converted"] += 1
                    counts["quads"] += len(lines)
                    for line in lines:
                        out.write(line + "\n")
        except Exception as exc:  # a cut or corrupt file: keep what was read, say where it broke
            counts["file_errors"] += 1
            rejects.append(reject_row(path, it.offset, f"unreadable from here: {type(exc).__name__}: {exc}", None,
                                      raw_chars=raw_chars))
    for r in rejects:
        yield ("reject", r)
    yield ("counters", counts)
