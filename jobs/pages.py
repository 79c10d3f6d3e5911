"""Sampled pages from WARC files: ``spark-submit jobs/pages.py --input OUT/samples --warc-index IDX --warc-base BASE --output OUT``.

For every input row (a sampled page, or any table with a ``page_url`` column) it looks the page
up in a WARC index (Common Crawl's columnar index or ``jobs/warc_index.py``'s), reads that one
record by byte range (local files, ``s3://commoncrawl/``, ``https://data.commoncrawl.org/``, any
fsspec URL), extracts the JSON-LD blocks, keeps the root entity that carries the sample's C-set,
extracts the text and its language, and writes ``pages/``. When a page cannot be used, the
sample's replacement candidates are tried in order (``--replacements`` at most), so a stratum
keeps its size where the data allows. Every attempt is a row with its status and reason;
``selected`` marks the one row per input row that stands for it (the usable page, or the last
failed attempt). An input row without a page URL, and every row of a sample row given more than
once (the same feature, stratum and sample_rank; without a sample_rank, the same page_url), is a
rejected input row with its reason (``duplicate_rows`` counts the latter), never fetched twice.
Counters reconcile: input rows = selected rows + rejected input rows; the run record's
``inputs.read`` gives the rows of each input file (adding up to the input rows) and
``inputs.warc_read`` the records read from each WARC file (adding up to the attempts that read one).
The logic is udfs/corpus/fetch.py (candidates, capture choice, fetching); rules: udfs/corpus/html.py
(HTML), udfs/corpus/warc.py (records).
"""

from __future__ import annotations

import sys

from pyspark.sql import functions as F

from udfs.corpus import fetch, generators
from udfs.corpus import html as P
from udfs.corpus.main_entity import load_main_entity_rule
from udfs.corpus.page_counts import BALANCES, page_outcome
from udfs.corpus.warc import WARC_INDEX
from udfs.runtime.job import SparkJob
from udfs.runtime.tables import read_table, rows_per_file


class PagesJob(SparkJob):
    input_contracts = {"input": fetch.SAMPLE_INPUT, "warc_index": WARC_INDEX}
    name = "pages"
    table = "pages"
    next_step = "llm4schema-serve start && llm4schema-evaluate --input {output}/pages --output {output}"
    description = __doc__
    input_help = "the samples/ table, or any Parquet/CSV table with a page_url column"
    balances = BALANCES

    def preflight(self) -> None:
        """The pages' settings that name files (the generator rules, the main-entity rule) and the
        index, before the base's checks: a bad rules file fails the run here, not every page in
        its task."""
        if not self.args.warc_index:
            self.fail("--warc-index is required (or [pages] warc_index in the conf)")
        self.page_config = P.PageConfig.of(self.settings)
        generators.load_rules(self.page_config.generator_rules)
        load_main_entity_rule()
        super().preflight()

    def run(self):
        a, cfg = self.args, self.page_config
        spark = self.spark
        table, files = read_table(spark, a.input, self.resolve_inputs)
        index, index_files = read_table(
            spark, a.warc_index, lambda specs, **kw: self.resolve_inputs(specs, flag="--warc-index", **kw)
        )
        self.record["inputs"].update(
            {
                "table_files": len(files),
                "first": files[:5],
                "warc_index_files": len(index_files),
                "warc_base": a.warc_base,
            }
        )
        self.clear_outputs()
        try:
            rows = fetch.with_sample_columns(table).withColumn("slot", F.monotonically_increasing_id())
        except ValueError as exc:
            self.fail(str(exc))
        slots, bad = fetch.split_slots(rows, "input", raw_chars=a.reject_raw_chars)
        out = fetch.fetch_pages(
            slots,
            index,
            replacements=a.replacements,
            partitions=a.partitions or spark.sparkContext.defaultParallelism,
            warc_base=a.warc_base or None,
            cfg=cfg,
            max_record_bytes=a.max_record_bytes,
        )
        with self.record.time("fetch and extract"):
            out.write.mode("overwrite").parquet(str(self.table_dir))
            bad.coalesce(1).write.mode("overwrite").parquet(str(self.rejects_dir))
        self.record["outputs"] = {"pages": str(self.table_dir), "rejects": str(self.rejects_dir)}
        return page_outcome(
            spark,
            str(self.table_dir),
            str(self.rejects_dir),
            rows.count(),
            self.keep_reads,
            rows_per_file(table),
            files,
        )


def main(argv=None) -> int:
    return PagesJob(argv).main()


if __name__ == "__main__":
    sys.exit(main())
