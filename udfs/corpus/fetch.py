"""Sampled pages fetched from WARC files: the logic of ``jobs/pages.py``, callable without a job.

Contract of the ``pages/`` table (``PAGES_SCHEMA``): one row per attempt. Every input row (a
sampled page, or any table with a ``page_url`` column; ``with_sample_columns`` gives it the sample
columns it lacks, as nulls) is a *slot*; its candidates are the sampled page (``candidate_rank``
0) and then the sample's replacement candidates in the sample's order (``candidates``; a
replacement that is another slot's sampled page in the same stratum is dropped, a page fills one
slot). Each candidate is looked up in a WARC index (``best_capture``: one capture per URL, an
HTML 200 response first; URLs compared in their normal form, ``udfs.corpus.urls``, each row
keeping its own spelling in ``page_url``), its record read by byte range and its HTML processed
(``fetch_page``, rules in ``udfs/corpus/html.py`` and ``udfs/corpus/warc.py``); a slot's candidates
are tried in order until one is ``ok`` (``process_partition``). ``selected`` marks the one row per
slot that stands for it: the usable page, or the last failed attempt. An input row without a page
URL is not a slot but a reject row (``split_slots``, contract in ``udfs/runtime/rejects.py``), and
so is every row of a sample row given more than once (the key ``SLOT_KEY``): one draw is fetched
once or, where its rows cannot be told apart, not at all, never twice.

Nothing here raises on a bad page: every failure is a row with a status of
``udfs.corpus.html.STATUSES`` and a reason.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from udfs.corpus import generators
from udfs.corpus import html as P
from udfs.corpus.sampling import REPLACEMENT_TYPE, SAMPLES
from udfs.corpus.urls import normal_url_column
from udfs.corpus.warc import HTML_MIME_TYPES
from udfs.runtime.contracts import TableContract
from udfs.runtime.rejects import raw_column

# The sample's columns a page row carries through (besides page_url, cset_id, types, properties).
SAMPLE_KEYS = T.StructType(
    [
        T.StructField("feature", T.StringType()),
        T.StructField("stratum", T.StringType()),
        T.StructField("lower", T.DoubleType()),
        T.StructField("upper", T.DoubleType()),
        T.StructField("seed", T.LongType()),
        T.StructField("sample_rank", T.IntegerType()),
    ]
)
PAGES_SCHEMA = T.StructType(
    [
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
        # the capture holds less than the page (WARC-Truncated, a body short of its Content-Length
        # or a chunked body cut): True; a capture read or indexed whole: False; null: not known.
        # Such a page is judged only under [pages] judge_truncated, else its status is truncated.
        T.StructField("truncated", T.BooleanType()),
        T.StructField("warc_filename", T.StringType()),
        T.StructField("warc_record_offset", T.LongType()),
        T.StructField("warc_record_length", T.LongType()),
        T.StructField("fetch_status", T.IntegerType()),
        T.StructField("content_mime_type", T.StringType()),
        # when the capture was made (WARC-Date): a timestamp in UTC, whether the index held a string
        # (jobs/warc_index.py) or a timestamp (Common Crawl's columnar index)
        T.StructField("fetch_time", T.TimestampType()),
        T.StructField("html_sha256", T.StringType()),
        T.StructField("html_bytes", T.LongType()),
        T.StructField("text", T.StringType()),
        T.StructField("text_chars", T.LongType()),
        T.StructField("text_extractor", T.StringType()),
        T.StructField("judge_text", T.StringType()),
        T.StructField("judge_text_extractor", T.StringType()),
        T.StructField("language", T.StringType()),
        T.StructField("markups", T.ArrayType(T.StringType())),
        T.StructField("markup_errors", T.ArrayType(T.StringType())),
        T.StructField("human_markup", T.StringType()),
        T.StructField("root_types", T.ArrayType(T.StringType())),
        T.StructField("matched_block", T.IntegerType()),
        # which branch of the main-entity rule (conf/main_entity.toml) chose human_markup when no
        # C-set types were given: mainEntity, mainEntityOfPage, most specific, first typed root;
        # null on the C-set route and when nothing was chosen. Optional: tables written before it.
        T.StructField("main_entity_rule", T.StringType()),
        # who wrote the human markup's block, and what said so (udfs/corpus/generators.py; null:
        # no human markup; "unknown": no rule of [pages] generator_rules matched)
        T.StructField("generator", T.StringType()),
        T.StructField("generator_evidence", T.StringType()),
        # the same for every block of markups, in its order
        T.StructField("markup_generators", T.ArrayType(T.StringType())),
        T.StructField("markup_generator_evidence", T.ArrayType(T.StringType())),
        T.StructField("slot", T.LongType()),
    ]
)
# The pages/ table's contract (udfs.runtime.contracts), from PAGES_SCHEMA: every column this writer
# writes (truncated optional: tables written before it read as they are), and page_id (string), the key of pages imported from the paper (udfs.corpus.pset_tables,
# whose schema is PAGES_SCHEMA and its own columns). Key: (slot, candidate_rank), one attempt.
# jobs/evaluate.py reads it narrowed to its columns (udfs.evaluation.plan.pages_contract), the
# report too: a reader's types are this writer's.
PAGES = TableContract.of_schema(
    "pages",
    PAGES_SCHEMA,
    required=tuple(n for n in PAGES_SCHEMA.names if n not in ("truncated", "main_entity_rule")),
    key=("slot", "candidate_rank"),
    writer="llm4schema-pages (or llm4schema-import-pset)",
    extra={"page_id": pa.string()},
)
# What jobs/pages.py reads of its --input: a samples/ table (udfs.corpus.sampling.SAMPLES), or any
# table with a page_url column; the sample's columns it carries through (with_sample_columns) are
# typed as the samples writer writes them where present; an int64 sample_rank or seed (a table
# written from Python ints) is read too, as with_sample_columns casts them.
SAMPLE_INPUT = SAMPLES.reading(
    "page_url", *SAMPLE_KEYS.names, "cset_id", "types", "properties", "replacements", required=("page_url",)
).accepting(sample_rank=pa.int64())
NO_PAGE_URL = "row without page_url"
# The key of an input row: a sample's draw is its feature, stratum and sample_rank; a row without
# a sample_rank (a plain table of URLs) is its page_url within its feature and stratum (null ones
# included: a plain table's are all null).
SLOT_KEY = ("feature", "stratum", "sample_rank")
DUPLICATE_DRAW = "sample row (feature, stratum, sample_rank) given by several input rows: none is fetched"
DUPLICATE_URL = "page_url given by several input rows without a sample_rank: none is fetched"


def with_sample_columns(df: DataFrame) -> DataFrame:
    """Every sample column present with its contract type; the ones a plain table lacks are null.
    A table without a ``page_url`` column is a ValueError naming the columns it has."""
    cols = set(df.columns)
    if "page_url" not in cols:
        raise ValueError(f"--input has no page_url column (columns: {sorted(cols)})")
    for f in SAMPLE_KEYS.fields + [
        T.StructField("cset_id", T.StringType()),
        T.StructField("types", T.ArrayType(T.StringType())),
        T.StructField("properties", T.ArrayType(T.StringType())),
    ]:
        df = df.withColumn(f.name, (F.col(f.name) if f.name in cols else F.lit(None)).cast(f.dataType))
    if "replacements" in cols:
        df = df.withColumn("replacements", F.col("replacements").cast(REPLACEMENT_TYPE))
    else:
        df = df.withColumn("replacements", F.lit(None).cast(REPLACEMENT_TYPE))
    return df


def split_slots(rows: DataFrame, source: str, raw_chars: int) -> tuple[DataFrame, DataFrame]:
    """``rows`` (with a ``slot`` id) as (slots, rejects): a row whose page URL is null or blank is
    a reject (``NO_PAGE_URL``), and so is each of the rows with a page URL that share one key
    (``SLOT_KEY``, or without a sample rank the page URL's normal form ``udfs.corpus.urls.
    normal_url``; ``DUPLICATE_DRAW`` or ``DUPLICATE_URL``): which of them is the draw cannot be
    told, so none is fetched. A reject row: ``source``, position = its slot id, the row as JSON cut
    to ``raw_chars``."""
    has_url = F.col("page_url").isNotNull() & (F.trim(F.col("page_url")) != "")
    ranked = F.col("sample_rank").isNotNull()
    # without a sample rank, two spellings of one URL (udfs.corpus.urls) are one page
    key = [*SLOT_KEY, F.when(~ranked, normal_url_column(F.col("page_url")))]
    # counted over the rows with a URL: a row without one is a reject of its own, not a draw
    n = F.count(F.when(has_url, F.lit(1))).over(Window.partitionBy(*key))
    reason = (
        F.when(~has_url, F.lit(NO_PAGE_URL))
        .when((n > 1) & ranked, F.lit(DUPLICATE_DRAW))
        .when(n > 1, F.lit(DUPLICATE_URL))
    )
    rows = rows.withColumn("_reason", reason)
    bad = rows.where(F.col("_reason").isNotNull())
    rejects = bad.select(
        F.lit(source).alias("source"),
        F.col("slot").alias("position"),
        F.col("_reason").alias("reason"),
        raw_column(F.to_json(F.struct(*[c for c in bad.columns if c not in ("slot", "_reason")])), raw_chars).alias(
            "raw"
        ),
    )
    return rows.where(F.col("_reason").isNull()).drop("_reason"), rejects


def candidates(slots: DataFrame, limit: int) -> DataFrame:
    """One row per (slot, candidate): the sampled page (rank 0), then up to ``limit`` replacements
    in the sample's order. A replacement that is another slot's sampled page in the same stratum
    (the same URL in its normal form, ``udfs.corpus.urls``) is dropped: a page fills one slot."""
    own = F.array(F.struct(F.lit(0).alias("rank"), F.col("cset_id"), F.col("page_url"), F.col("types")))
    spare = (
        F.slice(
            F.array_sort(
                F.coalesce(F.col("replacements"), F.array().cast(REPLACEMENT_TYPE)),
                lambda a, b: F.when(a["rank"] < b["rank"], -1).when(a["rank"] > b["rank"], 1).otherwise(0),
            ),
            1,
            max(limit, 0),
        )
        if limit > 0
        else F.array().cast(REPLACEMENT_TYPE)
    )
    exploded = slots.select(
        "*", F.posexplode(F.concat(own.cast(REPLACEMENT_TYPE), spare)).alias("candidate_rank", "cand")
    ).drop("replacements")
    primaries = slots.select("feature", "stratum", normal_url_column(F.col("page_url")).alias("_primary"))
    dup = (
        exploded.alias("c")
        .join(
            primaries.alias("p"),
            F.col("c.feature").eqNullSafe(F.col("p.feature"))
            & F.col("c.stratum").eqNullSafe(F.col("p.stratum"))
            & (normal_url_column(F.col("c.cand.page_url")) == F.col("p._primary")),
            "left_semi",
        )
        .where(F.col("candidate_rank") > 0)
    )
    keep = exploded.join(dup.select("slot", "candidate_rank"), ["slot", "candidate_rank"], "left_anti")
    return keep.select(
        "slot",
        "candidate_rank",
        *[f.name for f in SAMPLE_KEYS.fields],
        "properties",
        F.col("page_url").alias("sampled_page_url"),
        F.col("cset_id").alias("sampled_cset_id"),
        F.col("cand.page_url").alias("page_url"),
        F.col("cand.cset_id").alias("cset_id"),
        F.col("cand.types").alias("types"),
    )


def best_capture(index: DataFrame) -> DataFrame:
    """One index row per page: an HTML 200 capture first, then the latest, then a fixed order.
    Captures whose URLs have one normal form (``udfs.corpus.urls.normal_url``: ``http://Example.
    com:80/a`` and ``http://example.com/a``) are one page's; ``url_key`` is that form (the join
    key), ``url`` the chosen capture's own URL as the index wrote it."""
    rtype: Column = F.col("warc_record_type") if "warc_record_type" in index.columns else F.lit("response")
    w = Window.partitionBy("url_key").orderBy(
        F.desc(F.col("_rtype") == "response"),
        F.desc(F.col("fetch_status") == 200),
        F.desc(F.col("content_mime_type").isin(*HTML_MIME_TYPES)),
        # a whole capture before a truncated one (content_truncated, Common Crawl's column)
        F.desc(F.col("content_truncated").isNull()),
        F.desc("fetch_time"),
        "warc_filename",
        "warc_record_offset",
    )
    cols = [
        "url",
        "warc_filename",
        "warc_record_offset",
        "warc_record_length",
        "fetch_status",
        "content_mime_type",
        "fetch_time",
        "content_truncated",
    ]
    idx = index.withColumn("_rtype", rtype).select(
        *[F.col(c) if c in index.columns else F.lit(None).alias(c) for c in cols], "_rtype"
    )
    # an ISO 8601 WARC-Date ("2020-08-04T09:07:39Z") casts to the instant it names
    idx = idx.withColumn("fetch_time", F.col("fetch_time").cast("timestamp"))
    return (
        idx.where(F.col("url").isNotNull())
        .withColumn("url_key", normal_url_column(F.col("url")))
        .withColumn("_n", F.row_number().over(w))
        .where("_n = 1")
        .drop("_n", "_rtype")
        .withColumn("warc_record_offset", F.col("warc_record_offset").cast("long"))
        .withColumn("warc_record_length", F.col("warc_record_length").cast("long"))
        .withColumn("fetch_status", F.col("fetch_status").cast("int"))
        .withColumn("content_truncated", F.col("content_truncated").cast("string"))
    )


def fetch_page(row: dict, warc_base: str | None, cfg: P.PageConfig, max_record_bytes: int) -> dict:
    """One candidate: read its record and extract what pages/ needs; never raises."""
    from udfs.corpus import warc as W

    out = dict(row)
    out.update(
        {
            k: None
            for k in (
                "status",
                "reason",
                "html_sha256",
                "html_bytes",
                "text",
                "text_chars",
                "judge_text",
                "language",
                "human_markup",
                "root_types",
                "matched_block",
                "main_entity_rule",
            )
        }
    )
    out.update(
        markups=[], markup_errors=[], text_extractor=cfg.text_extractor, judge_text_extractor=cfg.judge_text_extractor
    )
    out.update(generators.empty_columns())
    if row["warc_filename"] is None:
        out.update(status=P.NOT_FOUND, reason="page URL not in the WARC index")
        return out
    indexed_cut = row.get("content_truncated")
    out["truncated"] = True if indexed_cut is not None else None
    if indexed_cut is not None and not cfg.judge_truncated:
        # the index says so (Common Crawl's content_truncated): the record is not read
        out.update(
            status=P.TRUNCATED, reason=f"WARC-Truncated: {indexed_cut or '(empty)'} (from the WARC index); not read"
        )
        return out
    try:
        location = W.join_location(warc_base, row["warc_filename"])
        rec = W.read_record(
            location, int(row["warc_record_offset"]), int(row["warc_record_length"]), max_record_bytes=max_record_bytes
        )
        # the record must be the capture the index located (its URL as the index wrote it)
        W.html_record_check(rec, row.get("capture_url") or row["page_url"])
    except W.WarcError as exc:
        out.update(status=exc.status, reason=exc.reason)
        return out
    out["truncated"] = rec.truncated is not None or indexed_cut is not None
    if rec.truncated is not None and not cfg.judge_truncated:
        out.update(status=P.TRUNCATED, reason=f"{rec.truncated}: the record holds part of the page; not judged")
        return out
    try:
        found = P.process_html(rec.payload, rec.content_type, row["types"], cfg, row["page_url"])
    except Exception as exc:  # noqa: BLE001 - a bug or an unforeseen page: this row says so, the task goes on
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


def fetch_pages(
    slots: DataFrame,
    index: DataFrame,
    *,
    replacements: int,
    partitions: int,
    warc_base: str | None,
    cfg: P.PageConfig,
    max_record_bytes: int,
) -> DataFrame:
    """The ``pages/`` rows (``PAGES_SCHEMA``) of ``slots``: candidates located in ``index`` (a
    WARC index table; a candidate's URL and a capture's are compared in their normal form,
    ``udfs.corpus.urls``, the row keeping the candidate's own), each slot's candidates fetched in
    rank order by one task (``partitions`` tasks), until one is ok."""
    spark = slots.sparkSession
    # joined on the URLs' normal form; page_url stays the sample's, capture_url is the index's
    # (what the record's target URI must be)
    cands = candidates(slots, replacements).withColumn("url_key", normal_url_column(F.col("page_url")))
    located = cands.join(best_capture(index).withColumnRenamed("url", "capture_url"), "url_key", "left").drop("url_key")
    ordered = located.repartition(partitions, "slot").sortWithinPartitions("slot", "candidate_rank")
    names = PAGES_SCHEMA.names
    out = ordered.rdd.mapPartitions(lambda it: process_partition(it, warc_base, cfg, max_record_bytes)).map(
        lambda d: tuple(d.get(c) for c in names)
    )
    return spark.createDataFrame(out, PAGES_SCHEMA)
