"""Characteristic sets (C-sets) from WDC N-Quads, as Spark DataFrame transformations.

The C-set of an entity is the set of its tokens: ``isa:<Type>`` for each rdf:type and the local
name of each other property (the LLM4Schema.org definition). Entity = subject; a blank node is
scoped to its page, an IRI is the same entity on every page (the paper's code), unless
``subject_scope="page"`` makes every (subject, page) its own entity.

The input is read once, and every per-quad step runs on the JVM (udfs/corpus/jvm/llm4schema/):
1. ``entity_pages``: a streaming scan turns each file's lines into entity-page rows (an entity on
   a page with its kept and dropped tokens), plus the rejected and skipped lines and a per-file
   line count;
2. ``tallies``: those rows, partitioned and sorted by a 64-bit group (the page's hash for its
   blank nodes, the IRI's for an IRI), are merged entity by entity into (C-set, page) pairs and
   per-partition counts (EntityMerge); the pairs, partitioned by C-set and sorted by a key of
   C-set, domain and page hashes, then give each C-set's instances, distinct pages, domains and
   URL sample in one pass (CsetPages); the rejects and line counts pass through both;
3. ``csets``, ``rejects``, ``counters``: the tables and the run record, from the tallies.
Both sorts are radix sorts of one long: no string comparisons; colliding hashes only share a run,
where names tell the entities (or C-sets, domains, pages) apart, so every count is exact.
The tallies are small (a row per C-set, file, rejected line and partition counter) and the job
keeps them for its three writers; the (C-set, page) pairs, about one per entity, stream through.

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

from udfs.corpus import nquads as N
from udfs.corpus import scanner as jvm
from udfs.runtime import lines as L
from udfs.runtime.config import CsetsConf
from udfs.runtime.contracts import TableContract
from udfs.runtime.rejects import raw_column
from udfs.schemaorg.vocab import Vocabulary

# Drop reasons of the cleaning step.
TYPE_NOT_SCHEMA = "type outside the schema.org namespace"
TYPE_UNKNOWN = "type not in the schema.org vocabulary"
PROPERTY_NOT_SCHEMA = "property outside the schema.org namespace"
PROPERTY_UNKNOWN = "property not in the schema.org vocabulary"

CSETS_SCHEMA = T.StructType(
    [
        T.StructField("cset_id", T.StringType(), False),
        T.StructField("types", T.ArrayType(T.StringType()), False),
        T.StructField("properties", T.ArrayType(T.StringType()), False),
        T.StructField("n_properties", T.LongType(), False),
        T.StructField("n_instances", T.LongType(), False),
        T.StructField("n_pages", T.LongType(), False),
        T.StructField("n_domains", T.LongType(), False),
        T.StructField("sample_urls", T.ArrayType(T.StringType()), False),
    ]
)
# The csets/ table's contract (udfs.runtime.contracts), from CSETS_SCHEMA: the columns every reader
# of a C-set needs are required (jobs/sample.py also requires its --features:
# udfs.corpus.sampling.csets_contract); the counts are typed where present. Key: cset_id.
CSETS = TableContract.of_schema(
    "csets",
    CSETS_SCHEMA,
    required=("cset_id", "types", "properties", "sample_urls"),
    key=("cset_id",),
    writer="llm4schema-csets",
)


@dataclass(frozen=True)
class CsetConfig:
    """How C-sets are built. The settings are conf/pipeline.toml's ``[csets]`` (through
    jobs/csets.py's flags, or :meth:`of`): no default here; ``clean`` is a switch of one run."""

    subject_scope: str  # "iri" | "page"
    sample_urls: int
    reject_raw_chars: int
    max_line_bytes: int  # a longer line is a reject holding its first characters, never buffered whole
    strict_nquads: bool  # True: a fifth term is a reject (W3C N-Quads); False: WDC's fifth term is read
    clean: bool = True

    @classmethod
    def of(cls, conf: CsetsConf, clean: bool = True) -> "CsetConfig":
        """The config of a ``[csets]`` section."""
        return cls(
            subject_scope=conf.subject_scope,
            sample_urls=conf.sample_urls,
            reject_raw_chars=conf.reject_raw_chars,
            max_line_bytes=conf.max_line_bytes,
            strict_nquads=conf.strict_nquads,
            clean=clean,
        )

    def __post_init__(self):
        if self.subject_scope not in ("iri", "page"):
            raise ValueError(f"subject_scope must be 'iri' or 'page', not {self.subject_scope!r}")
        if self.sample_urls < 0:
            raise ValueError("sample_urls must be >= 0")
        if self.max_line_bytes < 1:
            raise ValueError("max_line_bytes must be >= 1")


def entity_pages(
    spark: SparkSession, files: list[str], vocab: Vocabulary, cfg: CsetConfig, ignore_corrupt: bool = False
) -> DataFrame:
    """The one pass over the input (udfs/corpus/jvm/llm4schema/EntityPageScan.java, on the JVM): one task
    per file, which it reads itself (a gzip file cannot be split anyway; a plain file is kept whole
    so its lines are numbered and its pages end where they end). Rows of kind ``quad`` (an entity
    on a page: n_lines quads, kept tokens and dropped ``reason\ttoken`` strings, each sorted and
    joined by a newline), ``reject`` (one malformed line; ``reject:<reason>`` when the scan gives
    the reason: a line that is not UTF-8, or one over ``cfg.max_line_bytes``, whose ``raw`` is its
    first characters; a fifth term under ``cfg.strict_nquads``), ``skip`` (blank and comment lines,
    one row per file), ``file`` (lines read, one row per file), ``default_graph`` (triples without
    a graph term: valid N-Quads, but no page, hence no entity; one row per file that has them),
    ``byte_order_mark`` (n 1: the file began with a UTF-8 byte order mark, skipped; one that starts a
    later line is a reject, as is an escape that is no Unicode scalar value: udfs/runtime/lines.py),
    ``fifth_term`` (k1 a value of WDC's fifth term, k2 the file, n_lines its lines; past
    ``FIFTH_TERM_VALUES`` distinct values in a file the rest are counted as ``(other values)``)
    and, with ``ignore_corrupt``, ``damage`` (a file that broke off part-way, a damaged later gzip
    member included: its lines before the damage are kept, ``raw`` says why).

    The token of a quad is ``isa:<local name>`` of an rdf:type object and the local name of any
    other predicate; schema.org namespace variants (http/https, ``www.``) are one namespace.
    """
    scan = jvm.attach(spark, "llm4schema.EntityPageScan")
    reasons = "\n".join(
        [
            TYPE_NOT_SCHEMA,
            TYPE_UNKNOWN,
            PROPERTY_NOT_SCHEMA,
            PROPERTY_UNKNOWN,
            N.REASON_UNDECODABLE,
            N.REASON_TOO_LONG,
            N.REASON_FIFTH_TERM_STRICT,
            L.REASON_BOM_INSIDE,
            L.REASON_SURROGATE,
            L.REASON_ABOVE_MAX,
        ]
    )
    paths = spark.sparkContext._gateway.new_array(spark.sparkContext._jvm.java.lang.String, len(files))
    for i, f in enumerate(files):
        paths[i] = f
    jdf = scan.scan(
        spark._jsparkSession,
        paths,
        "\n".join(sorted(vocab.classes)),
        "\n".join(sorted(vocab.properties)),
        cfg.clean,
        cfg.subject_scope == "page",
        reasons,
        ignore_corrupt,
        cfg.max_line_bytes,
        4 * cfg.reject_raw_chars,  # a character is at most 4 UTF-8 bytes
        cfg.strict_nquads,
    )
    return DataFrame(jdf, spark)


# About 3.7 bytes of (entity, page) rows reach the merge's sort per byte of gzip input. At 32 MiB
# of input per partition a task sorts about 120 MB, within a local task's share of a 2 GB driver:
# 64M quads (1 GB) in the default 8 partitions spilled 3 GB to disk and took 14 s longer.
INPUT_BYTES_PER_PARTITION = 32 << 20


def partitions_for(spark: SparkSession, input_bytes: int) -> int:
    """Partitions of the two sorted passes: ``spark.sql.shuffle.partitions``, or more when the
    input (its gzip bytes; plain files count in full, which only errs on the side of more) needs
    them to sort in memory."""
    return max(int(spark.conf.get("spark.sql.shuffle.partitions")), -(-input_bytes // INPUT_BYTES_PER_PARTITION))


def tallies(ep: DataFrame, cfg: CsetConfig, partitions: int | None = None) -> DataFrame:
    """Entity-page rows to the job's tallies, in two passes on the JVM. EntityMerge
    (udfs/corpus/jvm/llm4schema/EntityMerge.java): the rows, partitioned and sorted by their group ``h``,
    so that each entity's rows are in one run and its C-set is the union of their tokens, become
    (C-set, page) pairs and per-partition counts. CsetPages (udfs/corpus/jvm/llm4schema/CsetPages.java):
    the pairs, partitioned by C-set and sorted by C-set, domain and page hashes, become one row per
    C-set. Kinds: ``cset`` (k1 the C-set key, n instances, n_pages, n_domains, sample_urls),
    ``raw`` (k1 a key before cleaning), ``dropped`` (k1 ``reason\ttoken``), ``count`` (k1 a
    counter: entities, entities_kept, quad_lines, entity_page_rows, pages), all with n summed over
    partitions; and the scan's ``reject``, ``skip``, ``file`` and ``damage`` rows (k1 the file). A
    C-set key is its sorted tokens joined by a newline. ``partitions``: of both passes (default
    ``spark.sql.shuffle.partitions``; see ``partitions_for``); the tallies themselves are
    gathered into one partition per core, so that the queries over them stay a few tasks."""
    spark = ep.sparkSession
    merge = jvm.attach(spark, "llm4schema.EntityMerge")
    cset_pages = jvm.attach(spark, "llm4schema.CsetPages")
    n = partitions or partitions_for(spark, 0)
    out = DataFrame(cset_pages.tallies(merge.merge(ep._jdf, n), n, cfg.sample_urls), spark)
    # A small shuffle, not a coalesce: CsetPages keeps its n tasks.
    return out.repartition(max(1, spark.sparkContext.defaultParallelism))


def _reject_rows(t: DataFrame) -> DataFrame:
    kind = F.col("kind")
    return t.filter(kind.startswith("reject")).select(
        F.regexp_replace("k1", "^file:(//)?", "").alias("source"),
        F.col("line_no").cast("long").alias("position"),
        # "reject:<reason>": the scan gave the reason (it saw the bytes); "reject": from the line.
        F.when(kind == "reject", N.reject_reason(F.col("raw")))
        .otherwise(F.substring(kind, 8, 1 << 20))
        .alias("reason"),
        F.col("raw"),
    )


def rejects(t: DataFrame, cfg: CsetConfig) -> DataFrame:
    return _reject_rows(t).withColumn("raw", raw_column("raw", cfg.reject_raw_chars))


def damaged_files(t: DataFrame) -> dict[str, str]:
    """{file: why} for the files that broke off part-way (read with ``ignore_corrupt``)."""
    return {r["k1"]: r["raw"] for r in t.filter(F.col("kind") == "damage").select("k1", "raw").collect()}


def lines_per_file(t: DataFrame) -> dict[str, int]:
    """Lines read per input file (one small row per file: safe to collect at 10^4 files)."""
    return {f: c["lines"] for f, c in per_file(t).items()}


# The scan's per-file rows and the name of their count in the run record's inputs.read.
_PER_FILE = {
    "file": "lines",
    "file_quads": "quads",
    "default_graph": "default_graph",
    "skip": "skipped",
    "file_graphs": "graphs",
    "byte_order_mark": "byte_order_marks",
}
_PER_FILE_COUNTS = ("lines", "quads", "default_graph", "rejected", "skipped", "graphs", "byte_order_marks")


def per_file(t: DataFrame) -> dict[str, dict[str, int]]:
    """What each input file gave: ``{file: {"lines", "quads", "default_graph", "rejected",
    "skipped", "graphs", "byte_order_marks"}}``, where lines = quads + default_graph + rejected +
    skipped, graphs is the distinct graph terms (pages) of its quads and byte_order_marks 1 when the
    file began with one (skipped: no line holds it). A few small rows per file: safe to collect at
    10^4 files."""
    kind = F.col("kind")
    rows = (
        t.filter(kind.isin(*_PER_FILE) | kind.startswith("reject"))
        .select("k1", F.when(kind.startswith("reject"), "rejected").otherwise(kind).alias("kind"), "n")
        .groupBy("k1", "kind")
        .agg(F.sum("n").alias("n"))
        .collect()
    )
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        name = "rejected" if r["kind"] == "rejected" else _PER_FILE[r["kind"]]
        out.setdefault(r["k1"], dict.fromkeys(_PER_FILE_COUNTS, 0))[name] = int(r["n"])
    return out


# The fifth-term values the run record lists one by one, most frequent first; the rest are summed
# as OTHER_FIFTH, so that a damaged input cannot make the record as long as its lines.
FIFTH_TERM_VALUES_SHOWN = 100
OTHER_FIFTH = "(other values)"


def fifth_terms(t: DataFrame) -> dict[str, int]:
    """Lines read with WDC's fifth term (the extractor, ``<ex:html-microdata>``), by its value."""
    rows = (
        t.filter(F.col("kind") == "fifth_term")
        .groupBy("k1")
        .agg(F.sum("n").alias("n"))
        .orderBy(F.desc("n"), "k1")
        .collect()
    )
    out = {r["k1"]: int(r["n"]) for r in rows[:FIFTH_TERM_VALUES_SHOWN] if r["k1"] != OTHER_FIFTH}
    rest = sum(int(r["n"]) for r in rows if r["k1"] not in out)
    return {**out, OTHER_FIFTH: rest} if rest else out


def csets(t: DataFrame) -> DataFrame:
    """The C-sets table (``CSETS_SCHEMA``) from the tallies' ``cset`` rows."""
    stats = t.filter(F.col("kind") == "cset").select(
        F.col("k1").alias("key"), F.col("n").alias("n_instances"), "n_pages", "n_domains", "sample_urls"
    )
    tokens = F.split(F.col("key"), "\n")
    types = F.transform(F.filter(tokens, lambda t: t.startswith("isa:")), lambda t: F.substring(t, 5, 1 << 20))
    props = F.filter(tokens, lambda t: ~t.startswith("isa:"))
    out = stats.select(
        F.sha2(F.translate("key", "\n", " "), 256).alias("cset_id"),
        F.array_sort(types).alias("types"),
        F.array_sort(props).alias("properties"),
        F.size(tokens).cast("long").alias("n_properties"),
        "n_instances",
        "n_pages",
        "n_domains",
        "sample_urls",
    )
    return conform(out, CSETS_SCHEMA)


def conform(df: DataFrame, schema: T.StructType) -> DataFrame:
    """Cast to the explicit schema (nullability included) so every writer agrees on the table."""
    cols = [F.col(f.name).cast(f.dataType).alias(f.name) for f in schema.fields]
    return df.select(*cols)


# Why a triple of the default graph is counted, not read: the counter's explanation in the record.
DEFAULT_GRAPH_WHY = (
    "triples without a graph term (N-Quads' default graph): valid, but they name no page, so no "
    "entity of a C-set is made of them"
)


def counters(t: DataFrame, n_csets: int, clean: bool) -> dict:
    """Counters that reconcile: lines = quads + default-graph triples + rejected + skipped;
    entities and sets before and after cleaning; WDC's fifth term by value; dropped (entity,
    token) pairs by reason with the most frequent tokens."""
    kind = F.col("kind")

    def total(k: str, name: str | None = None) -> Column:
        hit = (kind == k) if name is None else (kind == k) & (F.col("k1") == name)
        return F.coalesce(F.sum(F.when(hit, F.col("n"))), F.lit(0)).alias(name or k)

    # One query for every scalar counter (the tallies are cached: this reads no input).
    c = t.agg(
        total("skip"),
        total("default_graph"),
        total("byte_order_mark"),
        total("count", "entities"),
        total("count", "entities_kept"),
        total("count", "quad_lines"),
        total("count", "entity_page_rows"),
        total("count", "pages"),
        F.count_distinct(F.when(kind == "raw", F.col("k1"))).alias("raw_sets"),
    ).collect()[0]
    reasons = {
        r["reason"]: int(r["n"]) for r in _reject_rows(t).groupBy("reason").agg(F.count(F.lit(1)).alias("n")).collect()
    }
    lines_reject = sum(reasons.values())
    lines_quad, lines_skip, lines_default = int(c["quad_lines"]), int(c["skip"]), int(c["default_graph"])
    entities, kept = int(c["entities"]), int(c["entities_kept"])
    out = {
        "quads_parsed": lines_quad,
        "lines_default_graph": lines_default,
        "lines_default_graph_why": DEFAULT_GRAPH_WHY,
        "lines_rejected": lines_reject,
        "lines_skipped_blank_or_comment": lines_skip,
        # files that began with a UTF-8 byte order mark, skipped (no line holds it)
        "byte_order_marks": int(c["byte_order_mark"]),
        "lines_read_by_kind_sum": lines_quad + lines_default + lines_reject + lines_skip,
        "fifth_term": fifth_terms(t),
        "rejected_by_reason": dict(sorted(reasons.items())),
        # An (entity, page) whose lines are not contiguous in its file may count twice here.
        "entity_page_rows": int(c["entity_page_rows"]),
        "pages": int(c["pages"]),
        "entities_before_cleaning": entities,
        "sets_before_cleaning": int(c["raw_sets"]),
        "entities_after_cleaning": kept,
        "entities_emptied_by_cleaning": entities - kept,
        "sets_after_cleaning": n_csets,
        "cleaning": clean,
    }
    if clean:
        dropped = (
            t.filter(kind == "dropped")
            .groupBy("k1")
            .agg(F.sum("n").alias("count"))
            .select(
                F.substring_index("k1", "\t", 1).alias("reason"),
                F.expr("substring(k1, instr(k1, '\t') + 1)").alias("token"),
                "count",
            )
        )
        ranked = dropped.withColumn(
            "r", F.row_number().over(Window.partitionBy("reason").orderBy(F.desc("count"), "token"))
        )
        by_reason: dict[str, dict] = {}
        for r in (
            ranked.groupBy("reason")
            .agg(
                F.sum("count").alias("n"),
                F.count(F.lit(1)).alias("distinct"),
                F.array_sort(F.collect_list(F.when(F.col("r") <= 5, F.struct("r", "token", "count")))).alias("top"),
            )
            .collect()
        ):
            by_reason[r["reason"]] = {
                "entity_tokens": int(r["n"]),
                "distinct_tokens": int(r["distinct"]),
                "top": [[x["token"], int(x["count"])] for x in r["top"]],
            }
        out["tokens_dropped_by_reason"] = dict(sorted(by_reason.items()))
    return out
