"""Quantile-stratified sampling of C-sets (the paper's 3 strata x 2 features x 30 pages).

Every function here takes and returns Spark DataFrames (or small plain values collected from
aggregates); nothing collects the C-set table to the driver.

Sampling frame. A C-set enters the frame when it has a ``cset_id`` that no other row of the input
has and a finite value >= 0 for every feature (a feature is a count: a null, NaN, +inf, -inf or
negative value is a reject naming its cause, see ``frame_reason``). A ``cset_id`` given by several
rows (two C-set tables of one crawl, one file read twice) is a C-set whose row cannot be told: each
of those rows is a reject (``DUPLICATE_CSET_ID``), none is drawn, and ``duplicate_cset_ids`` counts
the ids; a draw never holds one C-set twice. The quantile bounds, the Spearman correlation and the
histograms are computed over the whole frame. A C-set in the frame without a usable sample URL
still counts in the distribution (it is part of the population the strata describe) but cannot be
drawn; it is written to the rejects with the reason ``no sample URL``. C-sets outside the frame
are rejects too. So ``csets_in = csets_drawable + csets_rejected``.

Quantiles are exact. For ``S`` strata and ``N`` C-sets the k-th bound is the inverse empirical CDF
``q_k = min { v : #(x <= v) * S >= k * N }`` (Hyndman & Fan type 1, what ``percentile_approx``
approximates). It is computed from an exact distributed count per distinct value and a running
sum over the sorted distinct values: only the distinct values (a few hundred for the integer
features of a C-set table) meet in one partition, never the rows.

Strata are the intervals ``(-inf, q_1], (q_1, q_2], ..., (q_{S-1}, max]``. Ties at a bound go to
the lower stratum: a C-set whose value equals ``q_k`` is in stratum ``k``. With heavy ties (most
C-sets have one instance) several bounds can be equal, and the strata between them are empty; the
stratum sizes in the run record show such an unbalanced split, and an empty stratum draws nothing.

Drawing is a seeded hash permutation, independent of partitioning: inside each
(feature, stratum), C-sets are ranked by ``sha256("<seed>:<feature>:<cset_id>")`` (the feature is
in the key so the two features' draws are independent). The first ``per_stratum`` are drawn. Each
drawn C-set's page is the first of its distinct sample URLs ranked by
``sha256("<seed>:<cset_id>:<url>")`` (the same for both features, so a C-set drawn twice is one
page). Replacement candidates, for pages the page stage cannot read: first the C-set's next URLs
in that order, then undrawn C-sets of the same stratum, continuing the permutation; the undrawn
C-sets are dealt round-robin (stratum rank ``per_stratum + i``, ``2 * per_stratum + i``, ... go to
draw ``i``), so no two draws share a replacement C-set and taking the next candidate is still a
uniform draw from the stratum.

What was never drawn. A C-set of the input is drawn (its row in ``samples/`` for at least one
feature), or never drawn for one of two reasons: its stratum was full (it is drawable, but
``per_stratum`` C-sets ranked before it in every feature's stratum) or it is not drawable (a
reject, with its reason). So ``csets_in = csets_drawn + csets_never_drawn_stratum_full +
csets_never_drawn_not_drawable``. A page is a distinct sample URL of the input's C-sets; it is
drawn when it is the ``page_url`` of a drawn row, else never drawn because another page of a
drawn C-set holding it was taken (``other_page_of_cset``), else because every drawable C-set
holding it found its stratum full (``stratum_full``), else because no C-set holding it is
drawable (``not_drawable``). So ``pages_in = pages_drawn + pages_never_drawn`` and the never drawn
pages add up over those three reasons (``never_drawn``).

Spearman's rho between two features: average ranks for ties (the same per-value running sums),
then Pearson's correlation of the ranks, summed exactly in Spark over the whole frame (so rho is
identical, to the last bit, whatever the partitioning).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, Row, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from udfs.runtime.contracts import TableContract
from udfs.runtime.io import Folder
from udfs.runtime.rejects import raw_column

CSET_COLUMNS = ("cset_id", "types", "properties", "sample_urls")
QUANTILE_METHOD = (
    "exact: q_k = min{v : #(x <= v) * S >= k * N} (inverse empirical CDF, Hyndman-Fan type 1), "
    "from an exact count per distinct value and a running sum over the sorted distinct values"
)
TIE_RULE = "a value equal to bound q_k belongs to stratum k (intervals are (q_{k-1}, q_k], first (-inf, q_1])"
DUPLICATE_CSET_ID = "cset_id given by several rows of the input: none is drawn (which row is the C-set cannot be told)"

REPLACEMENT_TYPE = T.ArrayType(
    T.StructType(
        [
            T.StructField("rank", T.IntegerType()),
            T.StructField("cset_id", T.StringType()),
            T.StructField("page_url", T.StringType()),
            T.StructField("types", T.ArrayType(T.StringType())),
        ]
    )
)

SAMPLES_SCHEMA = T.StructType(
    [
        T.StructField("feature", T.StringType()),
        T.StructField("stratum", T.StringType()),
        T.StructField("stratum_index", T.IntegerType()),
        T.StructField("lower", T.DoubleType()),
        T.StructField("upper", T.DoubleType()),
        T.StructField("value", T.DoubleType()),
        T.StructField("cset_id", T.StringType()),
        T.StructField("types", T.ArrayType(T.StringType())),
        T.StructField("properties", T.ArrayType(T.StringType())),
        T.StructField("page_url", T.StringType()),
        T.StructField("seed", T.LongType()),
        T.StructField("sample_rank", T.IntegerType()),
        T.StructField("replacements", REPLACEMENT_TYPE),
    ]
)
# The samples/ table's contract (udfs.runtime.contracts), from SAMPLES_SCHEMA: every column this
# writer writes; key (feature, stratum, sample_rank), one draw. Its reader, jobs/pages.py, also
# takes any table with a page_url column: udfs.corpus.fetch.SAMPLE_INPUT narrows it so.
SAMPLES = TableContract.of_schema(
    "samples",
    SAMPLES_SCHEMA,
    required=tuple(SAMPLES_SCHEMA.names),
    key=("feature", "stratum", "sample_rank"),
    writer="llm4schema-sample",
)


def csets_contract(features: list[str]) -> TableContract:
    """What jobs/sample.py reads of its --input: the csets/ table (``udfs.corpus.csets.CSETS``)
    with every sampled feature required too, a count column of that table as declared (int64) or
    as a double, another column of any type: ``frame_reason`` makes a value that is not a finite
    count >= 0 a reject row naming the C-set, so a table of doubles is read, not refused."""
    import pyarrow as pa

    from udfs.corpus.csets import CSETS

    contract = CSETS.requiring(*features)
    return contract.accepting(**{f: pa.float64() for f in features if f in CSETS.columns})


class SampleError(ValueError):
    """The input cannot be sampled at all (not a C-set table, bad settings)."""


def stratum_names(n_strata: int) -> list[str]:
    if n_strata < 1:
        raise SampleError(f"strata must be >= 1, got {n_strata}")
    if n_strata == 1:
        return ["all"]
    if n_strata == 2:
        return ["low", "high"]
    if n_strata == 3:
        return ["low", "medium", "high"]
    return [f"q{i}" for i in range(1, n_strata + 1)]


def check_columns(df: DataFrame, features: list[str]) -> None:
    missing = [c for c in (*CSET_COLUMNS, *features) if c not in df.columns]
    if missing:
        raise SampleError(f"input is not a csets table: missing columns {missing} (has {sorted(df.columns)})")
    numeric = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType, T.DecimalType)
    for f in features:
        if not isinstance(df.schema[f].dataType, numeric):
            raise SampleError(f"feature {f!r} is {df.schema[f].dataType.simpleString()}, not numeric")


# ---- frame, URLs and rejects --------------------------------------------------------------------


def ranked_urls(seed: int) -> Column:
    """The C-set's distinct non-empty sample URLs, ordered by sha256("<seed>:<cset_id>:<url>")."""
    urls = F.filter(
        F.array_distinct(F.coalesce(F.col("sample_urls"), F.array().cast("array<string>"))),
        lambda u: u.isNotNull() & (F.length(F.trim(u)) > 0),
    )
    keyed = F.transform(
        urls,
        lambda u: F.struct(
            F.sha2(F.concat_ws(":", F.lit(str(seed)), F.col("cset_id"), u), 256).alias("k"), u.alias("url")
        ),
    )
    return F.transform(F.array_sort(keyed), lambda s: s["url"])


def frame_reason(features: list[str]) -> Column:
    """Why a row is outside the sampling frame (null when it is inside): no ``cset_id``, or a
    feature value that cannot be binned, ranked or divided as a count. Every feature must be a
    finite number >= 0 (``-0.0`` is 0): a null, NaN, +inf or -inf, or a negative value is the
    row's reject reason (the first feature that fails names it). So the bounds, the log2 bins and
    the ranks only ever see finite values >= 0, and no row lands in a stratum by accident."""
    reason = F.when(F.col("cset_id").isNull() | (F.length(F.trim(F.col("cset_id"))) == 0), F.lit("missing cset_id"))
    for f in features:
        v = F.col(f).cast("double")
        reason = (
            reason.when(F.col(f).isNull(), F.lit(f"null {f}"))
            .when(F.isnan(v), F.lit(f"{f} is NaN, not a count"))
            .when(v == F.lit(math.inf), F.lit(f"{f} is +inf, not a finite count"))
            .when(v == F.lit(-math.inf), F.lit(f"{f} is -inf, not a finite count"))
            .when(v < 0, F.lit(f"negative {f}: a count cannot be below 0"))
        )
    return reason


def prepare(df: DataFrame, features: list[str], seed: int) -> DataFrame:
    """Adds ``urls`` (ranked) and ``reject_reason`` (null for drawable C-sets): a missing
    ``cset_id`` first, then a ``cset_id`` that several rows give (``DUPLICATE_CSET_ID``), then the
    features' reasons, then no sample URL."""
    missing = F.col("cset_id").isNull() | (F.length(F.trim(F.col("cset_id"))) == 0)
    out = df.withColumn("urls", ranked_urls(seed)).withColumn(
        "_id_rows", F.count(F.lit(1)).over(Window.partitionBy("cset_id"))
    )
    reason = F.when(~missing & (F.col("_id_rows") > 1), F.lit(DUPLICATE_CSET_ID)).otherwise(
        frame_reason(features).when(F.size("urls") == 0, F.lit("no sample URL"))
    )
    return out.withColumn("reject_reason", reason).drop("_id_rows")


def rejects(prepared: DataFrame, source: str, raw_chars: int) -> DataFrame:
    """The rows of ``prepared`` that cannot be drawn, as rejects (``udfs.runtime.rejects``): the
    C-set table has no line or record number, so ``position`` is null and the C-set is named by
    ``raw``, its row as JSON, whose first key is ``cset_id`` (so a cut row still names it)."""
    cols = ["cset_id", *(c for c in prepared.columns if c not in ("cset_id", "urls", "reject_reason"))]
    raw = F.to_json(F.struct(*[F.col(c) for c in cols]))
    return prepared.where(F.col("reject_reason").isNotNull()).select(
        F.lit(source).alias("source"),
        F.lit(None).cast("bigint").alias("position"),
        F.col("reject_reason").alias("reason"),
        raw_column(raw, raw_chars).alias("raw"),
    )


def in_frame(prepared: DataFrame) -> DataFrame:
    return prepared.where(F.col("reject_reason").isNull() | (F.col("reject_reason") == "no sample URL"))


# ---- distribution: per-value counts, quantiles, ranks, histograms -------------------------------


def value_counts(frame: DataFrame, features: list[str]) -> DataFrame:
    """One row per (feature, distinct value): ``n`` C-sets, ``n_drawable`` of them drawable, ``cum``
    (#x <= value) and ``avg_rank`` (1-based; ties share the mean of their ranks). Values are
    doubles so that features of any numeric type share one table."""
    parts = [
        frame.select(
            F.lit(f).alias("feature"),
            F.col(f).cast("double").alias("value"),
            F.col("reject_reason").isNull().cast("int").alias("drawable"),
        )
        for f in features
    ]
    rows = parts[0]
    for p in parts[1:]:
        rows = rows.unionByName(p)
    g = rows.groupBy("feature", "value").agg(F.count(F.lit(1)).alias("n"), F.sum("drawable").alias("n_drawable"))
    # Only a feature's distinct values meet in one window partition, never the rows.
    w = Window.partitionBy("feature").orderBy("value").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    g = g.withColumn("cum", F.sum("n").over(w))
    return g.withColumn("avg_rank", (F.col("cum") - F.col("n")).cast("double") + (F.col("n") + 1) / 2.0)


def quantile_bounds(counts: DataFrame, n_strata: int, total: int) -> dict[str, dict[str, Any]]:
    """Exact bounds q_1..q_{S-1} and the min and max of every feature, from ``value_counts``."""
    if total == 0:
        return {}
    aggs = [
        F.min(F.when(F.col("cum") * n_strata >= k * total, F.col("value"))).alias(f"q{k}") for k in range(1, n_strata)
    ]
    rows = (
        counts.groupBy("feature")
        .agg(F.min("value").alias("min"), F.max("value").alias("max"), F.count(F.lit(1)).alias("distinct"), *aggs)
        .collect()
    )
    return {
        r["feature"]: {
            "bounds": [float(r[f"q{k}"]) for k in range(1, n_strata)],
            "min": float(r["min"]),
            "max": float(r["max"]),
            "distinct": r["distinct"],
        }
        for r in rows
    }


def stratum_index(value: Column, bounds: list[float]) -> Column:
    """1-based stratum of a value; equal to a bound counts as below it (ties go down)."""
    idx = F.lit(1)
    for q in bounds:
        idx = idx + F.when(value.cast("double") > F.lit(q), 1).otherwise(0)
    return idx.cast("int")


def strata_table(feature: str, bounds: list[float], vmax: float) -> list[dict[str, Any]]:
    names = stratum_names(len(bounds) + 1)
    out = []
    for i, name in enumerate(names):
        out.append(
            {
                "feature": feature,
                "stratum": name,
                "stratum_index": i + 1,
                "lower": None if i == 0 else bounds[i - 1],
                "upper": bounds[i] if i < len(bounds) else vmax,
            }
        )
    return out


def log2_bin(value: Column) -> Column:
    """floor(log2(value)) for value > 0, corrected for floating error at exact powers of two."""
    v = value.cast("double")
    b0 = F.floor(F.log2(v))
    return (
        F.when(v <= 0, F.lit(None))
        .when(F.pow(F.lit(2.0), b0 + 1) <= v, b0 + 1)
        .when(F.pow(F.lit(2.0), b0) > v, b0 - 1)
        .otherwise(b0)
    ).cast("int")


def strata_and_bins(counts: DataFrame, bounds: dict[str, list[float]]) -> list[Row]:
    """Counts per (feature, stratum_index, log2 bin), from ``value_counts``: both marginals, stratum
    sizes and histogram bins, in one small aggregate."""
    idx = None
    for f, b in bounds.items():
        e = stratum_index(F.col("value"), b)
        idx = F.when(F.col("feature") == f, e) if idx is None else idx.when(F.col("feature") == f, e)
    return (
        counts.groupBy("feature", idx.alias("stratum_index"), log2_bin(F.col("value")).alias("bin"))
        .agg(F.sum("n").alias("n"), F.sum("n_drawable").alias("n_drawable"))
        .collect()
    )


def histogram(rows: list[Row], feature: str) -> dict[str, Any]:
    """Counts in power-of-two bins [2^b, 2^(b+1)); values <= 0 counted apart."""
    per_bin: dict[int, int] = {}
    nonpositive = 0
    for r in rows:
        if r["feature"] != feature:
            continue
        if r["bin"] is None:
            nonpositive += r["n"]
        else:
            per_bin[r["bin"]] = per_bin.get(r["bin"], 0) + r["n"]
    # 2^1024 is past the largest double: the top bin [2^1023, max] ends at the largest double
    bins = [
        {"lower": 2.0**b, "upper": 2.0 ** (b + 1) if b < 1023 else sys.float_info.max, "count": per_bin[b]}
        for b in sorted(per_bin)
    ]
    return {"feature": feature, "bins": bins, "nonpositive": nonpositive}


BROADCAST_RANKS = 1_000_000  # distinct values of a feature up to which its rank table is broadcast


def spearman(
    frame: DataFrame, pairs: list[tuple[str, str]], counts: DataFrame, distinct: dict[str, int] | None = None
) -> dict[str, float | None]:
    """Spearman's rho of each pair: Pearson's correlation of average ranks over the whole frame.

    Twice an average rank is an integer (2 * cum - n + 1), so Spark sums exact decimals
    (n, sum x, sum y, sum x^2, sum y^2, sum xy of doubled ranks) and the driver only applies the
    formula to those six numbers: the result does not depend on partitioning or summation order.
    """
    if not pairs:
        return {}
    features = list(dict.fromkeys(f for pair in pairs for f in pair))
    ranked = frame.select(*[F.col(f).cast("double").alias(f"_v{i}") for i, f in enumerate(features)])
    big = T.DecimalType(38, 0)
    for i, f in enumerate(features):
        r = counts.where(F.col("feature") == f).select(
            F.col("value").alias(f"_v{i}"), (2 * F.col("cum") - F.col("n") + 1).cast(big).alias(f"_r{i}")
        )
        # Integer features have few distinct values: ship the rank table, do not shuffle the frame.
        if distinct is not None and distinct.get(f, BROADCAST_RANKS + 1) <= BROADCAST_RANKS:
            r = F.broadcast(r)
        ranked = ranked.join(r, f"_v{i}")
    pos = {f: i for i, f in enumerate(features)}
    aggs = [F.count(F.lit(1)).alias("n")]
    for i in range(len(features)):
        aggs += [F.sum(f"_r{i}").alias(f"s{i}"), F.sum(F.col(f"_r{i}") * F.col(f"_r{i}")).alias(f"q{i}")]
    for x, y in pairs:
        aggs.append(F.sum(F.col(f"_r{pos[x]}") * F.col(f"_r{pos[y]}")).alias(f"p{pos[x]}_{pos[y]}"))
    row = ranked.agg(*aggs).first()
    n = int(row["n"])
    out: dict[str, float | None] = {}
    for x, y in pairs:
        i, j = pos[x], pos[y]
        sx, sy, qx, qy = (int(row[k]) for k in (f"s{i}", f"s{j}", f"q{i}", f"q{j}"))
        num = n * int(row[f"p{i}_{j}"]) - sx * sy
        vx, vy = n * qx - sx * sx, n * qy - sy * sy
        out[f"{x}~{y}"] = None if vx == 0 or vy == 0 else max(-1.0, min(1.0, num / (math.sqrt(vx) * math.sqrt(vy))))
    return out


def plot_histogram(hist: dict[str, Any], bounds: list[float], path: str | Path | Folder, title: str = "") -> Folder:
    """The paper's Figure 10 for one feature: log-log histogram with the stratum bounds, written as
    a PNG to ``path`` (a local path or a URL: it goes through the Folder IO layer, atomically);
    returns where it was written."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    target = Folder.of(path)
    fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
    bins = hist["bins"]
    if bins:
        ax.bar(
            [b["lower"] for b in bins],
            [b["count"] for b in bins],
            width=[b["upper"] - b["lower"] for b in bins],
            align="edge",
            color="#4c72b0",
            edgecolor="white",
        )
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        for k, q in enumerate(bounds, 1):
            if q > 0:
                ax.axvline(q, color="#c44e52", linestyle="--", linewidth=1)
                ax.annotate(
                    f"q{k}={q:g}",
                    (q, 0.97 - 0.06 * (k - 1)),
                    xycoords=("data", "axes fraction"),
                    xytext=(3, 0),
                    textcoords="offset points",
                    va="top",
                    color="#c44e52",
                    fontsize=8,
                )
    else:
        ax.text(0.5, 0.5, "no positive values", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel(f"{hist['feature']} (log2 bins)")
    ax.set_ylabel("C-sets (log)")
    ax.set_title(title or hist["feature"], fontsize=10)
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png")
    plt.close(fig)
    return target.parent.write_bytes(target.name, png.getvalue())


# ---- the draw -----------------------------------------------------------------------------------


def draw(
    drawable: DataFrame, feature: str, bounds: list[float], per_stratum: int, replacement_csets: int, seed: int
) -> DataFrame:
    """Ranks each stratum by the seeded hash and keeps the draw plus its replacement pool:
    columns feature, stratum_index, value, cset_id, types, properties, urls, pos."""
    keep = per_stratum * (1 + replacement_csets)
    ranked = drawable.select(
        F.lit(feature).alias("feature"),
        stratum_index(F.col(feature), bounds).alias("stratum_index"),
        F.col(feature).cast("double").alias("value"),
        "cset_id",
        "types",
        "properties",
        "urls",
        F.sha2(F.concat_ws(":", F.lit(str(seed)), F.lit(feature), F.col("cset_id")), 256).alias("draw_key"),
    )
    # row_number <= literal lets Spark keep a per-partition top-k before the shuffle.
    w = Window.partitionBy("feature", "stratum_index").orderBy("draw_key", "cset_id")
    return ranked.withColumn("pos", F.row_number().over(w)).where(F.col("pos") <= keep).drop("draw_key")


def assemble(
    pool: DataFrame, per_stratum: int, replacement_urls: int, seed: int, strata: list[dict[str, Any]]
) -> DataFrame:
    """Turns the ranked pool of every (feature, stratum) into ``samples/`` rows."""
    n = per_stratum
    drawn = pool.where(F.col("pos") <= n)
    spare = (
        pool.where(F.col("pos") > n)
        .select(
            "feature",
            "stratum_index",
            (((F.col("pos") - n - 1) % n) + 1).alias("sample_rank"),
            F.struct(
                ((F.col("pos") - n - 1) / n).cast("int").alias("order"),
                "cset_id",
                F.col("urls")[0].alias("page_url"),
                "types",
            ).alias("cand"),
        )
        .groupBy("feature", "stratum_index", "sample_rank")
        .agg(F.array_sort(F.collect_list("cand")).alias("cands"))
    )
    own_urls = F.slice(F.col("urls"), 2, replacement_urls) if replacement_urls > 0 else F.array().cast("array<string>")
    own = F.transform(
        own_urls,
        lambda u: F.struct(F.col("cset_id").alias("cset_id"), u.alias("page_url"), F.col("types").alias("types")),
    )
    others = F.transform(
        F.coalesce(
            F.col("cands"),
            F.array().cast("array<struct<order:int,cset_id:string,page_url:string,types:array<string>>>"),
        ),
        lambda c: F.struct(c["cset_id"].alias("cset_id"), c["page_url"].alias("page_url"), c["types"].alias("types")),
    )
    replacements = F.transform(
        F.concat(own, others),
        lambda c, i: F.struct(
            (i + 1).cast("int").alias("rank"),
            c["cset_id"].alias("cset_id"),
            c["page_url"].alias("page_url"),
            c["types"].alias("types"),
        ),
    )
    spark = pool.sparkSession
    bounds = spark.createDataFrame(
        [(s["feature"], s["stratum_index"], s["stratum"], s["lower"], s["upper"]) for s in strata],
        "feature string, stratum_index int, stratum string, lower double, upper double",
    )
    out = (
        drawn.withColumn("sample_rank", F.col("pos").cast("int"))
        .join(spare, ["feature", "stratum_index", "sample_rank"], "left")
        .join(bounds, ["feature", "stratum_index"], "left")
        .select(
            "feature",
            "stratum",
            "stratum_index",
            "lower",
            "upper",
            "value",
            "cset_id",
            "types",
            "properties",
            F.col("urls")[0].alias("page_url"),
            F.lit(seed).cast("long").alias("seed"),
            "sample_rank",
            replacements.cast(REPLACEMENT_TYPE).alias("replacements"),
        )
    )
    return out


# Why a page of the input was never drawn (``never_drawn``), in the order a page is given one.
PAGE_NEVER_DRAWN = ("other_page_of_cset", "stratum_full", "not_drawable")


def never_drawn(prepared: DataFrame, pool: DataFrame | None, per_stratum: int) -> dict[str, int]:
    """The C-sets and pages of the input drawn and never drawn, with the reason (the module
    docstring): counters ``csets_drawn``, ``csets_never_drawn`` (``_stratum_full``,
    ``_not_drawable``), ``pages_in``, ``pages_drawn`` and ``pages_never_drawn`` (one counter per
    reason of :data:`PAGE_NEVER_DRAWN`). ``prepared``: :func:`prepare`'s rows; ``pool``: the
    features' ranked pools (:func:`draw`), None when nothing could be drawn. One aggregate for the
    C-sets and one for the pages: nothing is collected but the counts."""
    spark = prepared.sparkSession
    if pool is None:
        drawn = spark.createDataFrame([], "cset_id string, page_url string")
    else:
        drawn = pool.where(F.col("pos") <= per_stratum).select("cset_id", F.col("urls")[0].alias("page_url"))
    drawn_ids = drawn.select("cset_id").distinct().withColumn("_drawn", F.lit(True))
    drawn_pages = drawn.select("page_url").distinct().withColumn("_page_drawn", F.lit(True))
    # a duplicate cset_id is never drawable, so a drawn id names one row of the input
    per_cset = prepared.select("cset_id", "urls", F.col("reject_reason").isNull().alias("_drawable")).join(
        drawn_ids, "cset_id", "left"
    )
    per_cset = per_cset.withColumn("_drawn", F.coalesce(F.col("_drawn"), F.lit(False))).persist()
    c = per_cset.agg(
        F.count(F.lit(1)).alias("n"),
        F.sum(F.col("_drawn").cast("long")).alias("drawn"),
        F.sum((F.col("_drawable") & ~F.col("_drawn")).cast("long")).alias("full"),
        F.sum((~F.col("_drawable")).cast("long")).alias("not_drawable"),
    ).first()
    pages = (
        per_cset.select(F.explode("urls").alias("page_url"), "_drawn", "_drawable")
        .groupBy("page_url")
        .agg(
            F.max(F.col("_drawn").cast("int")).alias("in_drawn"),
            F.max(F.col("_drawable").cast("int")).alias("in_drawable"),
        )
        .join(drawn_pages, "page_url", "left")
    )
    why = (
        F.when(F.col("_page_drawn"), F.lit("drawn"))
        .when(F.col("in_drawn") == 1, F.lit(PAGE_NEVER_DRAWN[0]))
        .when(F.col("in_drawable") == 1, F.lit(PAGE_NEVER_DRAWN[1]))
        .otherwise(F.lit(PAGE_NEVER_DRAWN[2]))
    )
    by_why = {r["why"]: r["n"] for r in pages.groupBy(why.alias("why")).agg(F.count(F.lit(1)).alias("n")).collect()}
    per_cset.unpersist()
    out = {
        "csets_drawn": int(c["drawn"] or 0),
        "csets_never_drawn": int(c["full"] or 0) + int(c["not_drawable"] or 0),
        "csets_never_drawn_stratum_full": int(c["full"] or 0),
        "csets_never_drawn_not_drawable": int(c["not_drawable"] or 0),
        "pages_in": sum(by_why.values()),
        "pages_drawn": by_why.get("drawn", 0),
        "pages_never_drawn": sum(v for k, v in by_why.items() if k != "drawn"),
    }
    out.update({f"pages_never_drawn_{k}": by_why.get(k, 0) for k in PAGE_NEVER_DRAWN})
    return out


@dataclass
class SampleResult:
    samples: DataFrame
    rejects: DataFrame
    stats: dict[str, Any] = field(default_factory=dict)
    histograms: dict[str, dict[str, Any]] = field(default_factory=dict)


def _strata_of(f: str, cells, dist_f: dict[str, Any], per_stratum: int, warnings: list[str]) -> list[dict[str, Any]]:
    """Feature ``f``'s strata with their population, drawable and drawn C-sets; a stratum that
    cannot give ``per_stratum`` says why in ``warnings``."""
    f_strata = strata_table(f, dist_f["bounds"], dist_f["max"])
    for s in f_strata:
        mine = [c for c in cells if c["feature"] == f and c["stratum_index"] == s["stratum_index"]]
        s["population"] = sum(c["n"] for c in mine)
        s["drawable"] = sum(c["n_drawable"] for c in mine)
        s["drawn"] = min(per_stratum, s["drawable"])
        if s["drawn"] < per_stratum:
            why = (
                "empty stratum (equal bounds from ties)"
                if s["population"] == 0
                else f"only {s['drawable']} drawable C-sets"
            )
            warnings.append(f"{f}/{s['stratum']}: drew {s['drawn']} of {per_stratum}: {why}")
    return f_strata


def _spearman_entries(frame, features: list[str], counts, dist, n_frame: int) -> dict[str, dict[str, Any]]:
    """Spearman's rho of every pair of features over the frame, each with its method or the reason
    it has none."""
    out: dict[str, dict[str, Any]] = {}
    pairs = list(combinations(features, 2))
    method = "Pearson correlation of average ranks (ties share the mean rank), in Spark"
    rhos = spearman(frame, pairs, counts, {f: d["distinct"] for f, d in dist.items()}) if n_frame >= 2 else {}
    for fx, fy in pairs:
        key = f"{fx}~{fy}"
        if n_frame < 2:
            out[key] = {"rho": None, "n": n_frame, "reason": "fewer than 2 C-sets"}
            continue
        entry: dict[str, Any] = {"rho": rhos[key], "n": n_frame, "method": method}
        if rhos[key] is None:
            entry["reason"] = "undefined: a feature is constant over the frame"
        out[key] = entry
    return out


def sample_csets(
    df: DataFrame,
    *,
    features: list[str],
    n_strata: int,
    per_stratum: int,
    seed: int,
    replacement_urls: int,
    replacement_csets: int,
    reject_raw_chars: int,
    source: str = "",
) -> SampleResult:
    """The whole sampling step. Collects only aggregates (counts, bounds, rho, histogram bins).
    The settings are conf/pipeline.toml's ``[sample]`` (through jobs/sample.py's flags; ``n_strata``
    is its ``strata``): no default here."""
    features = list(dict.fromkeys(features))
    if not features:
        raise SampleError("at least one feature is needed")
    if per_stratum < 1:
        raise SampleError(f"per_stratum must be >= 1, got {per_stratum}")
    if replacement_urls < 0 or replacement_csets < 0:
        raise SampleError("replacement counts must be >= 0")
    names = stratum_names(n_strata)
    check_columns(df, features)

    prepared = prepare(df, features, seed).persist()
    reason_counts = {
        r["reject_reason"]: r["n"]
        for r in prepared.groupBy("reject_reason").agg(F.count(F.lit(1)).alias("n")).collect()
    }
    n_in = sum(reason_counts.values())
    n_drawable = reason_counts.pop(None, 0)
    n_frame = n_drawable + reason_counts.get("no sample URL", 0)
    frame = in_frame(prepared)
    drawable = prepared.where(F.col("reject_reason").isNull())

    stats: dict[str, Any] = {
        "features": features,
        "strata": n_strata,
        "stratum_names": names,
        "per_stratum": per_stratum,
        "seed": seed,
        "replacement_urls": replacement_urls,
        "replacement_csets": replacement_csets,
        "quantiles": {"method": QUANTILE_METHOD, "relative_error": 0.0},
        "ties": TIE_RULE,
        "counters": {
            "csets_in": n_in,
            "csets_in_frame": n_frame,
            "csets_drawable": n_drawable,
            "csets_rejected": sum(reason_counts.values()),
            "rejects_by_reason": reason_counts,
            "duplicate_cset_ids": (
                prepared.where(F.col("reject_reason") == DUPLICATE_CSET_ID).select("cset_id").distinct().count()
                if reason_counts.get(DUPLICATE_CSET_ID)
                else 0
            ),
        },
        "bounds": {},
        "feature_range": {},
        "strata_sizes": [],
        "spearman": {},
        "warnings": [],
    }
    if n_frame == 0:
        stats["empty_reason"] = "no C-sets in the input" if n_in == 0 else "no C-set has a cset_id and every feature"

    counts = value_counts(frame, features).persist()
    dist = quantile_bounds(counts, n_strata, n_frame)
    for f in features:
        stats["bounds"][f] = dist[f]["bounds"] if f in dist else []
        stats["feature_range"][f] = (
            {"min": dist[f]["min"], "max": dist[f]["max"]} if f in dist else {"min": None, "max": None}
        )
    strata: list[dict[str, Any]] = []
    pools = []
    histograms = {}
    if n_frame:
        cells = strata_and_bins(counts, {f: dist[f]["bounds"] for f in features})
        for f in features:
            f_strata = _strata_of(f, cells, dist[f], per_stratum, stats["warnings"])
            strata.extend(f_strata)
            histograms[f] = histogram(cells, f)
            pools.append(draw(drawable, f, dist[f]["bounds"], per_stratum, replacement_csets, seed))
    stats["strata_sizes"] = strata
    stats["spearman"] = _spearman_entries(frame, features, counts, dist, n_frame)

    spark = df.sparkSession
    pool = None
    if pools:
        pool = pools[0]
        for p in pools[1:]:
            pool = pool.unionByName(p)
        samples = assemble(pool, per_stratum, replacement_urls, seed, strata)
    else:
        samples = spark.createDataFrame([], SAMPLES_SCHEMA)
    stats["counters"].update(never_drawn(prepared, pool, per_stratum))
    samples = samples.select(*[F.col(fld.name).cast(fld.dataType) for fld in SAMPLES_SCHEMA.fields])
    return SampleResult(
        samples=samples, rejects=rejects(prepared, source, reject_raw_chars), stats=stats, histograms=histograms
    )
