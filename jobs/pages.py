"""Sampled pages from WARC files: ``spark-submit jobs/pages.py --input OUT/samples --warc-index IDX --warc-base BASE --output OUT``.

For every input row (a sampled page, or any table with a ``page_url`` column) it looks the page
up in a WARC index (Common Crawl's columnar index or ``jobs/warc_index.py``'s), reads that one
record by byte range (local files, ``s3://commoncrawl/``, ``https://data.commoncrawl.org/``, any
fsspec URL), extracts the JSON-LD blocks, keeps the root entity that carries the sample's C-set,
extracts the text and its language, and writes ``pages/``. When a page cannot be used, the
sample's replacement candidates are tried in order (``--replacements`` at most), so a stratum
keeps its size where the data allows. Every attempt is a row with its status and reason;
``selected`` marks the one row per input row that stands for it (the usable page, or the last
failed attempt). Counters reconcile: input rows = selected rows + rejected input rows.
Rules: udfs/corpus/html.py (HTML), udfs/corpus/warc.py (records).
"""
from __future__ import annotations

import os
import sys

if __package__ in (None, ""):  # run as a script: make the project importable without installing
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pyspark.sql import Window  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql import types as T  # noqa: E402

from udfs.corpus import html as P  # noqa: E402
from udfs.runtime.inputs import resolve_inputs  # noqa: E402
from udfs.runtime.job import SparkJob  # noqa: E402

SAMPLE_KEYS = T.StructType([
    T.StructField("feature", T.StringType()),
    T.StructField("stratum", T.StringType()),
    T.StructField("lower", T.DoubleType()),
    T.StructField("upper", T.DoubleType()),
    T.StructField("seed", T.LongType()),
    T.StructField("sample_rank", T.IntegerType()),
])
CANDIDATE = T.StructType([
    T.StructField("rank", T.IntegerType()),
    T.StructField("cset_id", T.StringType()),
    T.StructField("page_url", T.StringType()),
    T.StructField("types", T.ArrayType(T.StringType())),
])
PAGES_SCHEMA = T.StructType([
    T.StructField("page_url", T.StringType()),
    *SAMPLE_KEYS.fields,
    T.StructField("cset_id", T.StringType()),
    T.StructField("types", T.ArrayType(T.StringType())),
    T.StructField("properties", T.ArrayType(T.StringType())),
    T.StructField("sampled_page_url", T.StringType()),
    T.StructField("sampled_cset_id", T.StringType()),
    T.StructField("candidate_rank", T.IntegerType()),
    T.StructField("selected", T.BooleanType()),
    T.StructField("status", T.StringType()),
    T.StructField("reason", T.StringType()),
    T.StructField("warc_filename", T.StringType()),
    T.StructField("warc_record_offset", T.LongType()),
    T.StructField("warc_record_length", T.LongType()),
    T.StructField("fetch_status", T.IntegerType()),
    T.StructField("content_mime_type", T.StringType()),
    T.StructField("html_sha256", T.StringType()),
    T.StructField("html_bytes", T.LongType()),
    T.StructField("text", T.StringType()),
    T.StructField("text_chars", T.LongType()),
    T.StructField("text_extractor", T.StringType()),
    T.StructField("language", T.StringType()),
    T.StructField("markups", T.ArrayType(T.StringType())),
    T.StructField("markup_errors", T.ArrayType(T.StringType())),
    T.StructField("human_markup", T.StringType()),
    T.StructField("root_types", T.ArrayType(T.StringType())),
    T.StructField("matched_block", T.IntegerType()),
    T.StructField("slot", T.LongType()),
])
REJECTS_SCHEMA = T.StructType([
    T.StructField("source", T.StringType(), False),
    T.StructField("position", T.LongType(), True),
    T.StructField("reason", T.StringType(), False),
    T.StructField("raw", T.StringType(), True),
])


def read_table(spark, specs):
    """Parquet tables (folders or files) and CSV files with a header; one DataFrame."""
    files = resolve_inputs(specs, suffixes=(".parquet", ".csv"))
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


def with_sample_columns(df):
    """Every sample column present with its contract type; the ones a plain table lacks are null."""
    cols = set(df.columns)
    if "page_url" not in cols:
        raise SystemExit(f"--input has no page_url column (columns: {sorted(cols)})")
    for f in SAMPLE_KEYS.fields + [T.StructField("cset_id", T.StringType()),
                                   T.StructField("types", T.ArrayType(T.StringType())),
                                   T.StructField("properties", T.ArrayType(T.StringType()))]:
        df = df.withColumn(f.name, (F.col(f.name) if f.name in cols else F.lit(None)).cast(f.dataType))
    if "replacements" in cols:
        df = df.withColumn("replacements", F.col("replacements").cast(T.ArrayType(CANDIDATE)))
    else:
        df = df.withColumn("replacements", F.lit(None).cast(T.ArrayType(CANDIDATE)))
    return df


def candidates(slots, limit):
    """One row per (slot, candidate): the sampled page (rank 0), then up to ``limit`` replacements
    in the sample's order. A replacement that is another slot's sampled page in the same stratum is
    dropped: a page fills one slot."""
    own = F.array(F.struct(F.lit(0).alias("rank"), F.col("cset_id"), F.col("page_url"), F.col("types")))
    spare = F.slice(F.array_sort(F.coalesce(F.col("replacements"), F.array().cast(T.ArrayType(CANDIDATE))),
                                 lambda a, b: F.when(a["rank"] < b["rank"], -1).when(a["rank"] > b["rank"], 1).otherwise(0)),
                    1, max(limit, 0)) if limit > 0 else F.array().cast(T.ArrayType(CANDIDATE))
    exploded = (slots.select("*", F.posexplode(F.concat(own.cast(T.ArrayType(CANDIDATE)), spare)).alias("candidate_rank", "cand"))
                .drop("replacements"))
    primaries = slots.select("feature", "stratum", F.col("page_url").alias("_primary"))
    dup = (exploded.alias("c").join(primaries.alias("p"),
                                    F.col("c.feature").eqNullSafe(F.col("p.feature"))
                                    & F.col("c.stratum").eqNullSafe(F.col("p.stratum"))
                                    & (F.col("c.cand.page_url") == F.col("p._primary")), "left_semi")
           .where(F.col("candidate_rank") > 0))
    keep = exploded.join(dup.select("slot", "candidate_rank"), ["slot", "candidate_rank"], "left_anti")
    return keep.select(
        "slot", "candidate_rank", *[f.name for f in SAMPLE_KEYS.fields], "properties",
        F.col("page_url").alias("sampled_page_url"), F.col("cset_id").alias("sampled_cset_id"),
        F.col("cand.page_url").alias("page_url"), F.col("cand.cset_id").alias("cset_id"),
        F.col("cand.types").alias("types"),
    )


def best_capture(index):
    """One index row per URL: an HTML 200 capture first, then the latest, then a fixed order."""
    rtype = F.col("warc_record_type") if "warc_record_type" in index.columns else F.lit("response")
    w = Window.partitionBy("url").orderBy(
        F.desc(F.col("_rtype") == "response"),
        F.desc(F.col("fetch_status") == 200),
        F.desc(F.col("content_mime_type").isin("text/html", "application/xhtml+xml")),
        F.desc("fetch_time"), "warc_filename", "warc_record_offset")
    cols = ["url", "warc_filename", "warc_record_offset", "warc_record_length", "fetch_status", "content_mime_type"]
    idx = index.withColumn("_rtype", rtype).select(
        *[F.col(c) if c in index.columns else F.lit(None).alias(c) for c in cols + ["fetch_time"]], "_rtype")
    return (idx.where(F.col("url").isNotNull())
            .withColumn("_n", F.row_number().over(w)).where("_n = 1").drop("_n", "fetch_time", "_rtype")
            .withColumn("warc_record_offset", F.col("warc_record_offset").cast("long"))
            .withColumn("warc_record_length", F.col("warc_record_length").cast("long"))
            .withColumn("fetch_status", F.col("fetch_status").cast("int")))


def fetch_page(row: dict, warc_base: str | None, cfg: P.PageConfig, max_record_bytes: int) -> dict:
    """One candidate: read its record and extract what pages/ needs; never raises."""
    from udfs.corpus import warc as W

    out = dict(row)
    out.update({k: None for k in ("status", "reason", "html_sha256", "html_bytes", "text", "text_chars",
                                  "language", "human_markup", "root_types", "matched_block")})
    out.update(markups=[], markup_errors=[], text_extractor=cfg.text_extractor)
    if row["warc_filename"] is None:
        out.update(status=P.NOT_FOUND, reason="page URL not in the WARC index")
        return out
    try:
        location = W.join_location(warc_base, row["warc_filename"])
        rec = W.read_record(location, int(row["warc_record_offset"]), int(row["warc_record_length"]),
                            max_record_bytes=max_record_bytes)
        W.html_record_check(rec, row["page_url"])
    except W.WarcError as exc:
        out.update(status=exc.status, reason=exc.reason)
        return out
    try:
        found = P.process_html(rec.payload, rec.content_type, row["types"], cfg)
    except Exception as exc:  # a bug or an unforeseen page: this row says so, the task goes on
        out.update(status=P.PARSE_ERROR, reason=f"extraction failed: {type(exc).__name__}: {str(exc)[:300]}")
        return out
    out.update({k: v for k, v in found.items() if k in out})
    return out


def process_partition(rows, warc_base, cfg, max_record_bytes):
    """Candidates of each slot arrive together, in rank order: try them until one is ok."""
    current, done, last = None, False, None
    for r in rows:
        row = r.asDict()
        if row["slot"] != current:
            if last is not None:
                last["selected"] = True
                yield last
            current, done, last = row["slot"], False, None
        if done:
            continue
        if last is not None:
            yield last
        last = fetch_page(row, warc_base, cfg, max_record_bytes)
        last["selected"] = False
        if last["status"] == P.OK:
            done = True
    if last is not None:
        last["selected"] = True
        yield last


class PagesJob(SparkJob):
    name = "pages"
    table = "pages"
    description = __doc__
    input_help = "the samples/ table, or any Parquet/CSV table with a page_url column"

    def add_arguments(self, p):
        p.add_argument("--warc-index", nargs="+", help="WARC index table(s): Parquet with url, warc_filename, "
                       "warc_record_offset, warc_record_length (fetch_status, content_mime_type, fetch_time if present)")
        p.add_argument("--warc-base", help="prefix of relative warc_filename values: a folder, s3://commoncrawl/, "
                       "https://data.commoncrawl.org/")
        p.add_argument("--replacements", type=int, help="replacement candidates tried per input row, in order")
        p.add_argument("--text-extractor", choices=list(P.TEXT_EXTRACTORS), help="page text extractor")
        p.add_argument("--microdata", action=__import__("argparse").BooleanOptionalAction,
                       help="also read microdata as markup blocks")
        p.add_argument("--max-record-bytes", type=int, help="larger WARC records are not fetched (fetch_error)")
        p.add_argument("--max-html-bytes", type=int, help="larger pages are not parsed (parse_error)")
        p.add_argument("--max-text-chars", type=int, help="page text is cut to this length (text_chars keeps the full length)")
        p.add_argument("--max-markup-chars", type=int, help="each markup JSON string is cut to this length")
        p.add_argument("--time-limit-s", type=float, help="time limit per page and extraction step")
        p.add_argument("--partitions", type=int, help="tasks for fetching (0: default parallelism)")

    def run(self):
        a = self.args
        if not a.warc_index:
            raise SystemExit("--warc-index is required (or [pages] warc_index in the conf)")
        spark = self.spark
        cfg = P.PageConfig(text_extractor=a.text_extractor, max_html_bytes=a.max_html_bytes,
                           max_text_chars=a.max_text_chars, time_limit_s=a.time_limit_s,
                           max_markup_chars=a.max_markup_chars, microdata=bool(a.microdata))
        table, files = read_table(spark, a.input)
        index, index_files = read_table(spark, a.warc_index)
        self.record["inputs"] = {"table_files": len(files), "first": files[:5], "warc_index_files": len(index_files),
                                 "warc_base": a.warc_base}
        self.clear_outputs()

        rows = with_sample_columns(table).withColumn("slot", F.monotonically_increasing_id())
        bad = rows.where(F.col("page_url").isNull() | (F.trim(F.col("page_url")) == ""))
        slots = rows.where(F.col("page_url").isNotNull() & (F.trim(F.col("page_url")) != ""))
        cands = candidates(slots, a.replacements)
        located = cands.join(best_capture(index).withColumnRenamed("url", "page_url"), "page_url", "left")
        n_parts = a.partitions or spark.sparkContext.defaultParallelism
        ordered = located.repartition(n_parts, "slot").sortWithinPartitions("slot", "candidate_rank")
        base, max_rec = a.warc_base or None, a.max_record_bytes
        out = ordered.rdd.mapPartitions(lambda it: process_partition(it, base, cfg, max_rec)) \
            .map(lambda d: tuple(d.get(c) for c in PAGES_SCHEMA.names))
        with self.record.time("fetch and extract"):
            spark.createDataFrame(out, PAGES_SCHEMA).write.mode("overwrite").parquet(str(self.table_dir))
            (bad.select(F.lit("input").alias("source"), F.col("slot").alias("position"),
                        F.lit("row without page_url").alias("reason"),
                        F.substring(F.to_json(F.struct(*[c for c in bad.columns if c != "slot"])), 1, 1000).alias("raw"))
             .coalesce(1).write.mode("overwrite").parquet(str(self.rejects_dir)))

        pages = spark.read.parquet(str(self.table_dir))
        n_input = rows.count()
        n_rejected = spark.read.parquet(str(self.rejects_dir)).count()
        # one pass over the written table for every counter
        agg = (pages.groupBy("selected", "status", (F.col("candidate_rank") > 0).alias("replacement"))
               .agg(F.count(F.lit(1)).alias("n")).collect())
        selected, attempts = {}, {}
        for r in agg:
            attempts[r["status"]] = attempts.get(r["status"], 0) + r["n"]
            if r["selected"]:
                selected[r["status"]] = selected.get(r["status"], 0) + r["n"]
        slots_filled = pages.where("selected").select("slot").distinct().count()  # one selected row per slot
        replaced = sum(r["n"] for r in agg if r["selected"] and r["status"] == P.OK and r["replacement"])
        counters = {"input_rows": n_input, "rejected_rows": n_rejected, "selected_rows": sum(selected.values()),
                    "distinct_slots": slots_filled, "attempts": sum(attempts.values()), "ok_by_replacement": replaced,
                    **{f"selected_{s}": selected.get(s, 0) for s in P.STATUSES},
                    **{f"attempts_{s}": attempts.get(s, 0) for s in P.STATUSES}}
        counters["reconciles"] = (n_input == counters["selected_rows"] + n_rejected == slots_filled + n_rejected
                                  and set(selected) <= set(P.STATUSES))
        for k, v in counters.items():
            self.record.count(k, v)
        self.record["outputs"] = {"pages": str(self.table_dir), "rejects": str(self.rejects_dir)}
        print(f"pages: {self.table_dir}  input rows {n_input} = selected {counters['selected_rows']} + rejected {n_rejected}\n"
              f"selected by status: {dict(sorted(selected.items()))}  (ok through a replacement: {replaced})\n"
              f"all attempts by status: {dict(sorted(attempts.items()))}", flush=True)
        if not counters["reconciles"]:
            raise RuntimeError(f"counters do not reconcile: {counters}")


def main(argv=None) -> int:
    return PagesJob(argv).main()


if __name__ == "__main__":
    sys.exit(main())
