"""Characteristic sets (C-sets) from WDC N-Quads, as Spark DataFrame transformations.

The C-set of an entity is the set of its tokens: ``isa:<Type>`` for each rdf:type and the local
name of each other property (the LLM4Schema.org definition). Entity = subject; a blank node is
scoped to its page, an IRI is the same entity on every page (the paper's code), unless
``subject_scope="page"`` makes every (subject, page) its own entity.

The input is read once. A streaming scan on the JVM turns each file's lines into ``entity_pages``
rows (an entity on a page with its kept and dropped tokens) and emits the rejected and skipped
lines and a per-file line count in the same pass, so the counters and the rejects come from the
single pass that feeds the C-sets.

Cleaning against the vocabulary: schema.org namespace variants (http/https, ``www.``) are one
namespace; a token is dropped, with a reason, when its IRI is outside schema.org or its local name
is not a type (for ``isa:``) or a property of the release; the sets are then regrouped.
``clean=False`` keeps the raw sets (schema.org terms by local name, other IRIs in full).
"""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from udfs import jvm
from udfs import nquads as N
from udfs.vocab import Vocabulary

# Drop reasons of the cleaning step.
TYPE_NOT_SCHEMA = "type outside the schema.org namespace"
TYPE_UNKNOWN = "type not in the schema.org vocabulary"
PROPERTY_NOT_SCHEMA = "property outside the schema.org namespace"
PROPERTY_UNKNOWN = "property not in the schema.org vocabulary"

CSETS_SCHEMA = T.StructType([
    T.StructField("cset_id", T.StringType(), False),
    T.StructField("types", T.ArrayType(T.StringType()), False),
    T.StructField("properties", T.ArrayType(T.StringType()), False),
    T.StructField("n_properties", T.LongType(), False),
    T.StructField("n_instances", T.LongType(), False),
    T.StructField("n_pages", T.LongType(), False),
    T.StructField("n_domains", T.LongType(), False),
    T.StructField("sample_urls", T.ArrayType(T.StringType()), False),
])

REJECTS_SCHEMA = T.StructType([
    T.StructField("source", T.StringType(), False),
    T.StructField("position", T.LongType(), True),
    T.StructField("reason", T.StringType(), False),
    T.StructField("raw", T.StringType(), True),
])

@dataclass(frozen=True)
class CsetConfig:
    subject_scope: str = "iri"  # "iri" | "page"
    clean: bool = True
    sample_urls: int = 10
    reject_raw_chars: int = 1000

    def __post_init__(self):
        if self.subject_scope not in ("iri", "page"):
            raise ValueError(f"subject_scope must be 'iri' or 'page', not {self.subject_scope!r}")
        if self.sample_urls < 0:
            raise ValueError("sample_urls must be >= 0")


def read_lines(spark: SparkSession, files: list[str]) -> DataFrame:
    """Lines with their file; one input file is one task, its lines in order.

    A gzip file cannot be split anyway; a plain file is kept whole too (``maxPartitionBytes`` and
    ``openCostInBytes`` at 1 TiB stop both splitting and packing several files into a task), which
    is what lets the scan number the lines of a file and flush an entity when its page ends.
    """
    one_tib = str(1 << 40)
    spark.conf.set("spark.sql.files.maxPartitionBytes", one_tib)
    spark.conf.set("spark.sql.files.openCostInBytes", one_tib)
    return spark.read.text(files).select(F.col("value").alias("line"), F.input_file_name().alias("file"))


def entity_pages(lines: DataFrame, vocab: Vocabulary, cfg: CsetConfig) -> DataFrame:
    """The one pass over the input (udfs/jvm/llm4schema/EntityPageScan.java, on the JVM): rows of
    kind ``quad`` (an entity on a page: n_lines quads, kept tokens, dropped ``reason\ttoken``
    strings), ``reject`` (one malformed line, with its reason), ``skip`` (blank and comment lines,
    one row per file) and ``file`` (lines read, one row per file).

    The token of a quad is ``isa:<local name>`` of an rdf:type object and the local name of any
    other predicate; schema.org namespace variants (http/https, ``www.``) are one namespace.
    """
    scan = jvm.attach(lines.sparkSession)
    reasons = "\n".join([TYPE_NOT_SCHEMA, TYPE_UNKNOWN, PROPERTY_NOT_SCHEMA, PROPERTY_UNKNOWN])
    jdf = scan.scan(lines.select("line", "file")._jdf, "\n".join(sorted(vocab.classes)),
                    "\n".join(sorted(vocab.properties)), cfg.clean, cfg.subject_scope == "page", reasons)
    ep = DataFrame(jdf, lines.sparkSession)
    is_reject = F.col("kind") == "reject"
    return ep.select(
        "kind", "k1", "k2", "file", "n_lines", "kept", "dropped", "line_no",
        F.when(is_reject, N.reject_reason(F.col("raw"))).alias("reason"),
        F.when(is_reject, F.substring("raw", 1, cfg.reject_raw_chars)).alias("raw"),
    )


def gzip_damage(content: bytes, chunk: int = 1 << 20) -> str | None:
    """Why a gzip file is damaged (None: sound), decompressing it as a stream (every member of a
    multi-member file) and counting the lines that came out before the damage."""
    import zlib

    lines, view, pos = 0, memoryview(content), 0
    while pos < len(view):
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            while not d.eof and pos < len(view):
                lines += d.decompress(view[pos:pos + chunk]).count(b"\n")
                pos = min(pos + chunk, len(view))
            if not d.eof:
                return f"truncated gzip: the data ends inside a member, after {lines:,} lines"
        except zlib.error as e:
            return f"corrupt gzip ({e}) after {lines:,} lines"
        pos -= len(d.unused_data)  # the next member starts right after this one
        if not content[pos:].strip(b"\0"):
            break  # trailing zero padding, as some writers leave
    return None


def damaged_gzip_files(spark: SparkSession, files: list[str]) -> dict[str, str]:
    """{file: reason} for the gzip inputs that do not decompress to their end. Spark's
    ignoreCorruptFiles ends such a file silently after the lines before the damage; this second,
    per-file read (one Python call per file, not per line) is what reports it."""
    gz = [f for f in files if f.endswith(".gz")]
    if not gz:
        return {}
    found = (spark.read.format("binaryFile").load(gz).select("path", "content").rdd
             .map(lambda r: (r["path"], gzip_damage(bytes(r["content"])))).filter(lambda x: x[1]).collect())
    return {p.removeprefix("file://").removeprefix("file:"): why for p, why in found}


def rejects(ep: DataFrame) -> DataFrame:
    return ep.filter(F.col("kind") == "reject").select(
        F.regexp_replace("file", "^file:(//)?", "").alias("source"),
        F.col("line_no").cast("long").alias("position"),
        F.col("reason"),
        F.col("raw"),
    )


def lines_per_file(ep: DataFrame) -> dict[str, int]:
    """Lines read per input file (one small row per file: safe to collect at 10^4 files)."""
    return {r["file"]: int(r["n"]) for r in ep.filter(F.col("kind") == "file").groupBy("file").agg(
        F.sum("n_lines").alias("n")).collect()}


def entities(ep: DataFrame) -> DataFrame:
    """One row per entity: its sorted kept tokens and the raw tokens it had before cleaning."""
    quads = ep.filter(F.col("kind") == "quad")
    dropped_tokens = F.transform(F.col("dropped_all"), lambda d: F.substring_index(d, "\t", -1))
    return (
        quads.groupBy(F.col("k1").alias("entity"))
        .agg(
            F.array_sort(F.array_distinct(F.flatten(F.collect_list("kept")))).alias("tokens"),
            F.array_distinct(F.flatten(F.collect_list("dropped"))).alias("dropped_all"),
        )
        .select(
            "entity",
            "tokens",
            F.array_sort(F.array_union(F.col("tokens"), F.array_distinct(dropped_tokens))).alias("raw_tokens"),
            F.col("dropped_all").alias("dropped"),
        )
    )


def _cset_id(tokens: Column) -> Column:
    return F.sha2(F.concat_ws(" ", tokens), 256)


def page_domain(url: Column) -> Column:
    """Host of a page URL, lower-cased, without a leading ``www.``."""
    host = F.lower(F.parse_url(url, F.lit("HOST")))
    return F.regexp_replace(host, r"^www\.", "")


def cset_pages(ep: DataFrame, ents: DataFrame) -> DataFrame:
    """Distinct (cset_id, page_url) pairs: the one join of entity-page rows with the entities'
    C-sets. Used twice by ``csets`` (page counts and the URL sample): persist it around that."""
    ent_cset = ents.filter(F.size("tokens") > 0).select("entity", _cset_id(F.col("tokens")).alias("cset_id"))
    return (
        ep.filter(F.col("kind") == "quad")
        .select(F.col("k1").alias("entity"), F.col("k2").alias("page_url"))
        .join(ent_cset, "entity")
        .select("cset_id", "page_url")
        .distinct()
    )


def csets(ents: DataFrame, pages: DataFrame, cfg: CsetConfig) -> DataFrame:
    """The C-sets table (``CSETS_SCHEMA``) from the entities and ``cset_pages``."""
    base = ents.filter(F.size("tokens") > 0).groupBy(_cset_id(F.col("tokens")).alias("cset_id")).agg(
        F.first("tokens").alias("tokens"),
        F.count(F.lit(1)).alias("n_instances"),
    )
    # Pages per domain first, then per C-set: two plain aggregations instead of a count-distinct.
    page_stats = (
        pages.groupBy("cset_id", page_domain(F.col("page_url")).alias("domain")).agg(F.count(F.lit(1)).alias("n"))
        .groupBy("cset_id").agg(F.sum("n").alias("n_pages"), F.count(F.lit(1)).alias("n_domains"))
    )
    # Deterministic, spread-out choice of K pages: smallest (hash, url); no dependence on
    # partitioning. row_number <= K lets Spark keep only K rows per C-set before the shuffle.
    ranked = pages.withColumn("h", F.xxhash64("page_url")).withColumn(
        "r", F.row_number().over(Window.partitionBy("cset_id").orderBy("h", "page_url"))
    )
    samples = (
        ranked.filter(F.col("r") <= cfg.sample_urls)
        .groupBy("cset_id")
        .agg(F.array_sort(F.collect_list(F.struct("r", "page_url"))).alias("s"))
        .select("cset_id", F.transform("s", lambda x: x["page_url"]).alias("sample_urls"))
    )
    types = F.transform(F.filter("tokens", lambda t: t.startswith("isa:")), lambda t: F.substring(t, 5, 1 << 20))
    props = F.filter("tokens", lambda t: ~t.startswith("isa:"))
    out = (
        base.join(page_stats, "cset_id")
        .join(samples, "cset_id", "left")
        .select(
            "cset_id",
            F.array_sort(types).alias("types"),
            F.array_sort(props).alias("properties"),
            F.size("tokens").cast("long").alias("n_properties"),
            F.col("n_instances").cast("long"),
            F.col("n_pages").cast("long"),
            F.col("n_domains").cast("long"),
            F.coalesce("sample_urls", F.array().cast("array<string>")).alias("sample_urls"),
        )
    )
    return conform(out, CSETS_SCHEMA)


def conform(df: DataFrame, schema: T.StructType) -> DataFrame:
    """Cast to the explicit schema (nullability included) so every writer agrees on the table."""
    cols = [F.col(f.name).cast(f.dataType).alias(f.name) for f in schema.fields]
    return df.select(*cols)


def counters(ep: DataFrame, ents: DataFrame, n_csets: int, clean: bool) -> dict:
    """Counters that reconcile: lines = quads + rejected + skipped; entities and sets before and
    after cleaning; dropped (entity, token) pairs by reason with the most frequent tokens."""
    rows = ep.groupBy("kind", "reason").agg(F.sum("n_lines").alias("lines"), F.count(F.lit(1)).alias("rows")).collect()
    by_kind: dict[str, dict] = {}
    for r in rows:
        k = by_kind.setdefault(r["kind"], {"lines": 0, "rows": 0})
        k["lines"] += int(r["lines"])
        k["rows"] += int(r["rows"])
    lines_quad = by_kind.get("quad", {}).get("lines", 0)
    lines_reject = by_kind.get("reject", {}).get("lines", 0)
    lines_skip = by_kind.get("skip", {}).get("lines", 0)
    reasons = {r["reason"]: int(r["lines"]) for r in rows if r["kind"] == "reject"}
    ent = ents.agg(
        F.count(F.lit(1)).alias("entities"),
        F.sum(F.when(F.size("tokens") > 0, 1).otherwise(0)).alias("kept"),
        F.countDistinct(F.concat_ws(" ", "raw_tokens")).alias("raw_sets"),
    ).collect()[0]
    out = {
        "quads_parsed": lines_quad,
        "lines_rejected": lines_reject,
        "lines_skipped_blank_or_comment": lines_skip,
        "lines_read_by_kind_sum": lines_quad + lines_reject + lines_skip,
        "rejected_by_reason": dict(sorted(reasons.items())),
        # An (entity, page) whose lines are not contiguous in its file may count twice here.
        "entity_page_rows": by_kind.get("quad", {}).get("rows", 0),
        "pages": ep.filter(F.col("kind") == "quad").select("k2").distinct().count(),
        "entities_before_cleaning": int(ent["entities"]),
        "sets_before_cleaning": int(ent["raw_sets"]),
        "entities_after_cleaning": int(ent["kept"] or 0),
        "entities_emptied_by_cleaning": int(ent["entities"]) - int(ent["kept"] or 0),
        "sets_after_cleaning": n_csets,
        "cleaning": clean,
    }
    if clean:
        dropped = ents.select(F.explode("dropped").alias("d")).select(
            F.substring_index("d", "\t", 1).alias("reason"), F.substring_index("d", "\t", -1).alias("token"))
        by_reason = dropped.groupBy("reason").agg(
            F.count(F.lit(1)).alias("n"), F.countDistinct("token").alias("distinct")).collect()
        top = dropped.groupBy("reason", "token").count()
        top = top.withColumn("r", F.row_number().over(Window.partitionBy("reason").orderBy(F.desc("count"), "token")))
        tops: dict[str, list] = {}
        for r in top.filter(F.col("r") <= 5).orderBy("reason", "r").collect():
            tops.setdefault(r["reason"], []).append([r["token"], int(r["count"])])
        out["tokens_dropped_by_reason"] = {
            r["reason"]: {"entity_tokens": int(r["n"]), "distinct_tokens": int(r["distinct"]), "top": tops.get(r["reason"], [])}
            for r in sorted(by_reason, key=lambda r: r["reason"])
        }
    return out
