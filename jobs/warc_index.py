"""Index of local (or fsspec-reachable) WARC files: ``spark-submit jobs/warc_index.py --input DIR --output OUT``.

Writes ``warc_index/``: one row per response or revisit record, with Common Crawl's columnar index
names (``url``, ``fetch_time``, ``fetch_status``, ``content_mime_type``, ``warc_filename``,
``warc_record_offset``, ``warc_record_length``), so ``jobs/pages.py`` reads your own crawl exactly
as it reads Common Crawl. ``warc_filename`` is relative to ``--warc-base`` when the file is under
it (give the same base to the pages job). One file = one task; a file that cannot be read to its
end keeps the rows read before the damage and gets a row in ``rejects/warc_index/``.
"""
from __future__ import annotations

import os
import sys

if __package__ in (None, ""):  # run as a script: make the project importable without installing
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pyspark.sql import types as T  # noqa: E402

from udfs.runtime.inputs import resolve_inputs  # noqa: E402
from udfs.runtime.job import SparkJob  # noqa: E402
from udfs.runtime.rejects import REJECTS_SCHEMA  # noqa: E402
from udfs.corpus.warc import WARC_SUFFIXES, WarcError, index_warc, relative_name  # noqa: E402

INDEX_SCHEMA = T.StructType([
    T.StructField("url", T.StringType()),
    T.StructField("fetch_time", T.StringType()),
    T.StructField("fetch_status", T.IntegerType()),
    T.StructField("content_mime_type", T.StringType()),
    T.StructField("content_charset", T.StringType()),
    T.StructField("warc_filename", T.StringType()),
    T.StructField("warc_record_offset", T.LongType()),
    T.StructField("warc_record_length", T.LongType()),
    T.StructField("warc_record_type", T.StringType()),
])


def _index_file(item):
    """(kind, row) pairs for one file: ("row", index row) then possibly ("reject", reject row)."""
    path, base = item
    name = relative_name(path, base)
    try:
        for row in index_warc(path, name):
            yield ("row", row)
    except WarcError as exc:
        yield ("reject", {"source": path, "position": None, "reason": exc.reason, "raw": None})
    except OSError as exc:
        yield ("reject", {"source": path, "position": None, "reason": f"unreadable: {exc}", "raw": None})


class WarcIndexJob(SparkJob):
    name = "warc_index"
    table = "warc_index"
    next_step = "llm4schema-pages --input {output}/samples --warc-index {output}/warc_index --output {output}"
    description = __doc__
    input_help = "WARC files (.warc.gz, .warc), directories, globs or manifests listing them"

    def add_arguments(self, p):
        p.add_argument("--warc-base", help="store warc_filename relative to this folder or URL prefix "
                                           "(pass the same --warc-base to jobs/pages.py); empty: absolute paths")

    def run(self):
        a = self.args
        files = resolve_inputs(a.input, suffixes=WARC_SUFFIXES)
        base = a.warc_base or None
        self.record["inputs"] = {"files": len(files), "first": files[:5], "warc_base": base}
        self.clear_outputs()
        sc = self.spark.sparkContext
        pairs = sc.parallelize([(f, base) for f in files], max(1, len(files))).flatMap(_index_file).cache()
        rows = pairs.filter(lambda kv: kv[0] == "row").map(lambda kv: tuple(kv[1][c] for c in INDEX_SCHEMA.names))
        rejects = pairs.filter(lambda kv: kv[0] == "reject").map(lambda kv: tuple(kv[1][c] for c in REJECTS_SCHEMA.names))
        with self.record.time("index"):
            self.spark.createDataFrame(rows, INDEX_SCHEMA).coalesce(max(1, min(len(files), 64))) \
                .write.mode("overwrite").parquet(str(self.table_dir))
            self.spark.createDataFrame(rejects, REJECTS_SCHEMA).coalesce(1) \
                .write.mode("overwrite").parquet(str(self.rejects_dir))
        written = self.spark.read.parquet(str(self.table_dir))
        counts = {r["warc_record_type"]: r["count"] for r in written.groupBy("warc_record_type").count().collect()}
        n_rej = self.spark.read.parquet(str(self.rejects_dir)).count()
        pairs.unpersist()
        self.record.count("files", len(files))
        self.record.count("records_indexed", sum(counts.values()))
        for k, v in sorted(counts.items()):
            self.record.count(f"records_{k}", v)
        self.record.count("files_with_unreadable_tail", n_rej)
        self.record["outputs"] = {"warc_index": str(self.table_dir), "rejects": str(self.rejects_dir)}
        print(f"WARC index: {self.table_dir}  files {len(files)}  records {sum(counts.values())} {counts}  "
              f"files with errors {n_rej} ({self.rejects_dir})", flush=True)


def main(argv=None) -> int:
    return WarcIndexJob(argv).main()


if __name__ == "__main__":
    sys.exit(main())
