"""Index of local (or fsspec-reachable) WARC files: ``spark-submit jobs/warc_index.py --input DIR --output OUT``.

Writes ``warc_index/``: one row per response or revisit record, with Common Crawl's columnar index
names (``url``, ``fetch_time``, ``fetch_status``, ``content_mime_type``, ``warc_filename``,
``warc_record_offset``, ``warc_record_length``), so ``jobs/pages.py`` reads your own crawl exactly
as it reads Common Crawl; ARC files (version 1, ``.arc``, ``.arc.gz``) are read too, each record
under warcio's WARC names. ``warc_filename`` is relative to ``--warc-base`` when the file is under
it (give the same base to the pages job: it reads only what lies inside it). One file = one task;
a record is held only up to ``--max-record-bytes``. A record larger than that decompressed, a
record whose Content-Length disagrees with its framing, bytes between records that are not one,
and a damaged gzip member are rows in ``rejects/warc_index/`` (file, offset, first bytes and the
reason) and the scan goes on with the next record (``udfs.corpus.warc.scan_warc``); a file that
cannot be read to its end keeps the rows read before and gets a row there too. The run record's
``inputs`` lists every file considered or skipped, and what each gave (``read``: records indexed,
rejected, and read whole of any type).
"""

from __future__ import annotations

import sys
from collections import Counter

from pyspark.sql import types as T

from udfs.corpus.warc import ARCHIVE_SUFFIXES, WarcError, relative_name, scan_warc
from udfs.runtime.job import SparkJob
from udfs.runtime.rejects import REJECTS_SCHEMA, reject_row

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
    ]
)


def _index_file(item):
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


class WarcIndexJob(SparkJob):
    name = "warc_index"
    table = "warc_index"
    next_step = "llm4schema-pages --input {output}/samples --warc-index {output}/warc_index --output {output}"
    description = __doc__
    input_help = (
        "WARC files (.warc.gz, .warc) or ARC files (.arc.gz, .arc), directories, globs or manifests listing them"
    )

    def add_arguments(self, p):
        p.add_argument(
            "--warc-base",
            help="store warc_filename relative to this folder or URL prefix "
            "(pass the same --warc-base to jobs/pages.py); empty: absolute paths",
        )
        p.add_argument(
            "--max-record-bytes",
            type=int,
            help="a record larger than this, decompressed, is a reject "
            "row (its first bytes and the reason), not indexed; records are streamed, never held whole",
        )
        p.add_argument(
            "--reject-raw-chars", type=int, help="cut a rejected record's sample to this many characters in rejects/"
        )

    def run(self):
        a = self.args
        files = self.resolve_inputs(a.input, suffixes=ARCHIVE_SUFFIXES)
        base = a.warc_base or None
        # a file outside the base keeps its absolute name, which the pages job refuses under that base
        outside = [f for f in files if base and relative_name(f, base) == f]
        self.record["inputs"].update(
            {"files": len(files), "first": files[:5], "warc_base": base, "outside_warc_base": outside}
        )
        self.clear_outputs()
        sc = self.spark.sparkContext
        items = [(f, base, a.max_record_bytes, a.reject_raw_chars) for f in files]
        pairs = sc.parallelize(items, max(1, len(files))).flatMap(_index_file).cache()
        rows = pairs.filter(lambda kv: kv[0] == "row").map(lambda kv: tuple(kv[1][c] for c in INDEX_SCHEMA.names))
        rejects = pairs.filter(lambda kv: kv[0] == "reject").map(
            lambda kv: tuple(kv[1][c] for c in REJECTS_SCHEMA.names)
        )
        with self.record.time("index"):
            self.spark.createDataFrame(rows, INDEX_SCHEMA).coalesce(max(1, min(len(files), 64))).write.mode(
                "overwrite"
            ).parquet(str(self.table_dir))
            self.spark.createDataFrame(rejects, REJECTS_SCHEMA).coalesce(1).write.mode("overwrite").parquet(
                str(self.rejects_dir)
            )
        written = self.spark.read.parquet(str(self.table_dir))
        counts = {r["warc_record_type"]: r["count"] for r in written.groupBy("warc_record_type").count().collect()}
        n_rej = self.spark.read.parquet(str(self.rejects_dir)).count()
        reads = sorted(
            pairs.filter(lambda kv: kv[0] == "read").map(lambda kv: kv[1]).collect(), key=lambda r: r["source"]
        )
        pairs.unpersist()
        # every input with the records it gave, its rejects and damage, adding up to the table's rows
        per_file_adds_up = self.keep_reads(files, {r.pop("source"): r for r in reads}, "records", sum(counts.values()))
        self.record.count("files", len(files))
        self.record.count("records_indexed", sum(counts.values()))
        for k, v in sorted(counts.items()):
            self.record.count(f"records_{k}", v)
        self.record.count("records_rejected", sum(r["records_rejected"] for r in reads))
        self.record.count("files_with_unreadable_tail", sum(r["damaged"] is not None for r in reads))
        self.record.count("files_outside_warc_base", len(outside))
        self.record.count(
            "reconciles",
            per_file_adds_up
            and n_rej == sum(r["records_rejected"] + (r["damaged"] is not None) for r in self.record["inputs"]["read"]),
        )
        self.record["outputs"] = {"warc_index": str(self.table_dir), "rejects": str(self.rejects_dir)}
        print(
            f"WARC index: {self.table_dir}  files {len(files)}  records {sum(counts.values())} {counts}  "
            f"rejects {n_rej} ({self.rejects_dir})",
            flush=True,
        )


def main(argv=None) -> int:
    return WarcIndexJob(argv).main()


if __name__ == "__main__":
    sys.exit(main())
