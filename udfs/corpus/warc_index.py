"""The warc_index/ table: its schema, the rows one WARC (or ARC) file gives, and the index job's
account of a run (``jobs/warc_index.py``; the base class reconciles and tells it).

One row per response or revisit record, with Common Crawl's columnar index names, so the pages
job reads your own crawl exactly as it reads Common Crawl's (its reader's contract is
``udfs.corpus.warc.WARC_INDEX``).
"""

from __future__ import annotations

from collections import Counter

from pyspark.sql import types as T

from udfs.corpus.warc import WarcError, relative_name, scan_warc
from udfs.runtime.closing import Outcome
from udfs.runtime.rejects import reject_row

INDEX_SCHEMA = T.StructType(
    [
        T.StructField("url", T.StringType()),
        T.StructField("fetch_time", T.StringType()),
        T.StructField("fetch_status", T.IntegerType()),
        T.StructField("content_mime_type", T.StringType()),
        T.StructField("content_charset", T.StringType()),
        T.StructField("warc_filename", T.StringType()),
        T.StructField("warc_record_offset", T.LongType()),
        T.StructField("warc_record_length", T.LongType()),
        T.StructField("warc_record_type", T.StringType()),
        # base32 SHA-1 of the payload as archived (Common Crawl's content_digest), computed as it streams by
        T.StructField("content_digest", T.StringType()),
        # the record's WARC-Truncated value (null: none), as Common Crawl's columnar index names it
        T.StructField("content_truncated", T.StringType()),
    ]
)


def index_file(item):
    """(kind, row) pairs for one file: ("row", index row) and ("reject", reject row) as the scan
    finds them (a record over the bound, a member that is not one record), a ("reject", ...) for
    damage that ends the file, and last ("read", what the file gave)."""
    path, base, max_record_bytes, raw_chars = item
    counts = {"row": 0, "reject": 0}
    seen = Counter()
    damaged = None
    try:
        for kind, row in scan_warc(
            path, relative_name(path, base), max_record_bytes=max_record_bytes, raw_chars=raw_chars, seen=seen
        ):
            counts[kind] += 1
            yield kind, row
    except WarcError as exc:
        damaged = exc.reason
    except OSError as exc:
        damaged = f"unreadable: {exc}"
    if damaged is not None:
        yield "reject", reject_row(path, None, damaged)
    yield (
        "read",
        {
            "source": path,
            "records": counts["row"],
            "records_rejected": counts["reject"],
            "warc_records": sum(seen.values()),
            "damaged": damaged,
        },
    )


def outcome(
    counts: dict[str, int], reads: list[dict], n_rejects: int, files: list[str], outside: list[str], keep_reads
) -> Outcome:
    """The Outcome of an index run: ``counts`` the rows by record type, ``reads`` what each file
    gave (``index_file``'s last item), ``n_rejects`` the rows of rejects/warc_index/, ``outside``
    the files outside --warc-base, ``keep_reads`` the job's ``Job.keep_reads``."""
    indexed = sum(counts.values())
    counters = {
        "files": len(files),
        "records_indexed": indexed,
        **{f"records_{k}": v for k, v in sorted(counts.items())},
        "records_rejected": sum(r["records_rejected"] for r in reads),
        "files_with_unreadable_tail": sum(r["damaged"] is not None for r in reads),
        "files_outside_warc_base": len(outside),
    }
    by_file = {r["source"]: {k: v for k, v in r.items() if k != "source"} for r in reads}
    return Outcome(
        counters=counters,
        checks={
            # every input with the records it gave, its rejects and damage, adding up to the rows
            "every input file's records add up to records_indexed": keep_reads(files, by_file, "records", indexed),
            "rejects/ holds every rejected record and damaged file": n_rejects
            == sum(r["records_rejected"] + (r["damaged"] is not None) for r in reads),
        },
        units="files",
        given=len(files),
        done=sum(1 for r in reads if r["records"]),
        failures=Counter(r["damaged"] or "no response or revisit record" for r in reads if not r["records"]),
    )
