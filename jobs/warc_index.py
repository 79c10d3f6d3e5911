"""Index of local (or fsspec-reachable) WARC files: ``spark-submit jobs/warc_index.py --input DIR --output OUT``.

Writes ``warc_index/``: one row per response or revisit record, with Common Crawl's columnar index
names (``url``, ``fetch_time``, ``fetch_status``, ``content_mime_type``, ``warc_filename``,
``warc_record_offset``, ``warc_record_length``, ``content_truncated``: a record's
``WARC-Truncated`` value), so ``jobs/pages.py`` reads your own crawl exactly
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

from udfs.corpus import warc_index as index
from udfs.corpus.warc import ARCHIVE_SUFFIXES, relative_name
from udfs.runtime.job import SparkJob
from udfs.runtime.rejects import REJECTS_SCHEMA


class WarcIndexJob(SparkJob):
    name = "warc_index"
    table = "warc_index"
    next_step = (
        "llm4schema-pages --input {output}/samples --warc-index {output}/warc_index --warc-base {warc_base} "
        "--output {output}"
    )
    description = __doc__
    input_help = (
        "WARC files (.warc.gz, .warc) or ARC files (.arc.gz, .arc), directories, globs or manifests listing them"
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
        pairs = sc.parallelize(items, max(1, len(files))).flatMap(index.index_file).cache()
        rows = pairs.filter(lambda kv: kv[0] == "row").map(lambda kv: tuple(kv[1][c] for c in index.INDEX_SCHEMA.names))
        rejects = pairs.filter(lambda kv: kv[0] == "reject").map(
            lambda kv: tuple(kv[1][c] for c in REJECTS_SCHEMA.names)
        )
        with self.record.time("index"):
            self.spark.createDataFrame(rows, index.INDEX_SCHEMA).coalesce(max(1, min(len(files), 64))).write.mode(
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
        self.record["outputs"] = {"warc_index": str(self.table_dir), "rejects": str(self.rejects_dir)}
        result = index.outcome(counts, reads, n_rej, files, outside, self.keep_reads)
        result.lines = [
            f"WARC index: {self.table_dir}  files {len(files)}  records {sum(counts.values())} {counts}  "
            f"rejects {n_rej} ({self.rejects_dir})"
        ]
        return result

    def next_command(self) -> str:
        """The pages job over the sample under the same root, with this run's --warc-base; without
        a sample there, N-Quads from the same WARC files, for the C-sets and a sample of your own."""
        import shlex

        out = shlex.quote(str(self.args.output))
        if not (self.output_root / "samples").exists("_run.json"):
            inputs = " ".join(shlex.quote(i) for i in self.args.input)
            return (
                f"llm4schema-extract-quads --input {inputs} --output {out}"
                + super().next_command().partition(f"--output {out}")[2]
            )
        return super().next_command()


def main(argv=None) -> int:
    return WarcIndexJob(argv).main()


if __name__ == "__main__":
    sys.exit(main())
