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
from udfs.runtime.config import ConfigError
from udfs.runtime.inputs import resolve_inputs
from udfs.runtime.job import SparkJob
from udfs.runtime.paths import project_file


def read_table(spark, specs, resolve=resolve_inputs):
    """Parquet tables (folders or files) and CSV files with a header; one DataFrame. ``resolve``
    lists the files (``Job.resolve_inputs`` keeps its account for the run record)."""
    files = resolve(specs, suffixes=(".parquet", ".csv"))
    parquet = [f for f in files if not f.endswith(".csv")]
    csv = [f for f in files if f.endswith(".csv")]
    frames = []
    if parquet:
        frames.append(spark.read.parquet(*parquet))
    if csv:
        frames.append(spark.read.option("header", True).csv(csv))
    df = frames[0]
    for other in frames[1:]:
        df = df.unionByName(other, allowMissingColumns=True)
    return df, files


def rows_per_file(df) -> dict[str, dict[str, int]]:
    """{file: {"rows": n}} for the files behind ``df`` (a table as ``read_table`` reads it), named
    as ``resolve_inputs`` names them: a local file by its path, any other by its URL."""
    from urllib.parse import unquote, urlsplit

    out: dict[str, dict[str, int]] = {}
    for r in df.groupBy(F.input_file_name().alias("f")).count().collect():
        f = unquote(urlsplit(r["f"]).path) if r["f"].startswith("file:") else r["f"]
        out.setdefault(f, {"rows": 0})["rows"] += r["count"]
    return out


class PagesJob(SparkJob):
    name = "pages"
    table = "pages"
    next_step = "llm4schema-serve start && llm4schema-evaluate --input {output}/pages --output {output}"
    description = __doc__
    input_help = "the samples/ table, or any Parquet/CSV table with a page_url column"

    def add_arguments(self, p):
        p.add_argument(
            "--warc-index",
            nargs="+",
            help="WARC index table(s): Parquet with url, warc_filename, "
            "warc_record_offset, warc_record_length (fetch_status, content_mime_type, fetch_time if present)",
        )
        p.add_argument(
            "--warc-base",
            help="prefix of relative warc_filename values: a folder, s3://commoncrawl/, "
            "https://data.commoncrawl.org/; an index entry is read only if it resolves inside it "
            "(symlinks followed; a URL base: same scheme, host and path prefix), else it is a "
            "not_found row saying so; empty: the index's names are read as they are",
        )
        p.add_argument("--replacements", type=int, help="replacement candidates tried per input row, in order")
        p.add_argument(
            "--text-extractor", choices=list(P.TEXT_EXTRACTORS), help="extractor of the text generation reads (text)"
        )
        p.add_argument(
            "--judge-text-extractor",
            choices=list(P.TEXT_EXTRACTORS),
            help="extractor of the text factuality judges against (judge_text)",
        )
        p.add_argument(
            "--microdata",
            action=__import__("argparse").BooleanOptionalAction,
            help="also read microdata as markup blocks",
        )
        p.add_argument(
            "--generator-rules", help="rules naming each markup block's generator (conf/generators.toml's format)"
        )
        p.add_argument("--max-record-bytes", type=int, help="larger WARC records are not fetched (fetch_error)")
        p.add_argument("--max-html-bytes", type=int, help="larger pages are not parsed (parse_error)")
        p.add_argument(
            "--max-text-chars", type=int, help="page text is cut to this length (text_chars keeps the full length)"
        )
        p.add_argument(
            "--max-markup-chars",
            type=int,
            help="a markup longer than this as JSON is an error (not read); markups are cut to this length",
        )
        p.add_argument("--max-markup-nodes", type=int, help="a markup with more JSON values is an error (not read)")
        p.add_argument(
            "--max-html-depth", type=int, help="a page nesting elements deeper than this is a parse_error (not read)"
        )
        p.add_argument("--time-limit-s", type=float, help="time limit per page and extraction step")
        p.add_argument("--partitions", type=int, help="tasks for fetching (0: default parallelism)")
        p.add_argument(
            "--reject-raw-chars", type=int, help="cut input rows without a page URL to this many characters in rejects/"
        )

    def run(self):
        a = self.args
        if not a.warc_index:
            self.fail("--warc-index is required (or [pages] warc_index in the conf)")
        spark = self.spark
        cfg = P.PageConfig(
            text_extractor=a.text_extractor,
            judge_text_extractor=a.judge_text_extractor,
            max_html_bytes=a.max_html_bytes,
            max_text_chars=a.max_text_chars,
            time_limit_s=a.time_limit_s,
            max_markup_chars=a.max_markup_chars,
            max_markup_nodes=a.max_markup_nodes,
            max_html_depth=a.max_html_depth,
            microdata=bool(a.microdata),
            generator_rules=project_file(a.generator_rules),
        )
        try:  # a bad rules file fails the run here, not every page in its task
            generators.load_rules(cfg.generator_rules)
        except ConfigError as exc:
            self.fail(str(exc))
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

        self._count(rows, table, files)

    def _count(self, rows, table, files: list[str]) -> None:
        """The run record's counters from the written table and rejects, which reconcile: input rows
        = selected + rejected = the slots filled + rejected; every input file with its rows and every
        WARC file with the records read from it. Raises where they do not reconcile."""
        spark = self.spark
        pages = spark.read.parquet(str(self.table_dir))
        n_input = rows.count()
        rejected = {
            r["reason"]: r["count"]
            for r in spark.read.parquet(str(self.rejects_dir)).groupBy("reason").count().collect()
        }
        n_rejected = sum(rejected.values())
        # input rows that share a key (one draw given twice): rejects, never fetched twice
        n_duplicate = rejected.get(fetch.DUPLICATE_DRAW, 0) + rejected.get(fetch.DUPLICATE_URL, 0)
        # one pass over the written table for every counter
        agg = (
            pages.groupBy("selected", "status", (F.col("candidate_rank") > 0).alias("replacement"))
            .agg(F.count(F.lit(1)).alias("n"))
            .collect()
        )
        selected, attempts = {}, {}
        for r in agg:
            attempts[r["status"]] = attempts.get(r["status"], 0) + r["n"]
            if r["selected"]:
                selected[r["status"]] = selected.get(r["status"], 0) + r["n"]
        slots_filled = pages.where("selected").select("slot").distinct().count()  # one selected row per slot
        replaced = sum(r["n"] for r in agg if r["selected"] and r["status"] == P.OK and r["replacement"])
        counters = {
            "input_rows": n_input,
            "rejected_rows": n_rejected,
            "duplicate_rows": n_duplicate,
            "selected_rows": sum(selected.values()),
            "distinct_slots": slots_filled,
            "attempts": sum(attempts.values()),
            "ok_by_replacement": replaced,
            **{f"selected_{s}": selected.get(s, 0) for s in P.STATUSES},
            **{f"attempts_{s}": attempts.get(s, 0) for s in P.STATUSES},
        }
        # every input file with the rows it gave, and every WARC file with the records read from it
        rows_add_up = self.keep_reads(files, rows_per_file(table), "rows", n_input)
        read = (P.OK, P.PARSE_ERROR, P.NO_MATCHING_MARKUP)  # statuses of an attempt that read its record
        per_warc = {
            r["warc_filename"]: {"records_read": r["read"], "attempts": r["n"]}
            for r in pages.where(F.col("warc_filename").isNotNull())
            .groupBy("warc_filename")
            .agg(F.count(F.lit(1)).alias("n"), F.sum(F.col("status").isin(*read).cast("long")).alias("read"))
            .collect()
        }
        records_add_up = self.keep_reads(
            [], per_warc, "records_read", sum(attempts.get(s, 0) for s in read), key="warc_read"
        )
        counters["reconciles"] = (
            n_input == counters["selected_rows"] + n_rejected == slots_filled + n_rejected
            and set(selected) <= set(P.STATUSES)
            and rows_add_up
            and records_add_up
        )
        for k, v in counters.items():
            self.record.count(k, v)
        self.record["outputs"] = {"pages": str(self.table_dir), "rejects": str(self.rejects_dir)}
        self._print_counts(counters, selected, attempts)
        if not counters["reconciles"]:
            raise RuntimeError(f"counters do not reconcile: {counters}")

    def _print_counts(self, counters: dict, selected: dict, attempts: dict) -> None:
        n_input, n_rejected = counters["input_rows"], counters["rejected_rows"]
        replaced, n_duplicate = counters["ok_by_replacement"], counters["duplicate_rows"]
        print(
            f"pages: {self.table_dir}  input rows {n_input} = selected {counters['selected_rows']} + rejected {n_rejected}\n"
            f"selected by status: {dict(sorted(selected.items()))}  (ok through a replacement: {replaced})\n"
            f"all attempts by status: {dict(sorted(attempts.items()))}"
            + (
                f"\nduplicate input rows: {n_duplicate} rows share a sample row's key with another, none fetched "
                f"(rejects/pages/ names them)"
                if n_duplicate
                else ""
            ),
            flush=True,
        )


def main(argv=None) -> int:
    return PagesJob(argv).main()


if __name__ == "__main__":
    sys.exit(main())
