"""Reading a job's input tables with Spark, and what each file gave, for the run record."""

from __future__ import annotations

from udfs.runtime.inputs import resolve_inputs
from udfs.runtime.io import fsspec_url


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

    from pyspark.sql import functions as F

    out: dict[str, dict[str, int]] = {}
    for r in df.groupBy(F.input_file_name().alias("f")).count().collect():
        f = unquote(urlsplit(r["f"]).path) if r["f"].startswith("file:") else r["f"]
        out.setdefault(f, {"rows": 0})["rows"] += r["count"]
    return out


def parquet_rows(files: list[str], name=lambda f: f) -> dict[str, dict[str, int]]:
    """``{name(file): {"rows": n}}`` for Parquet files (paths or URLs, ``s3a://`` included), from
    their footers only: one small read per file."""
    import fsspec
    import pyarrow.parquet as pq

    out = {}
    for f in files:
        with fsspec.open(fsspec_url(f), "rb") as fh:
            out[name(f)] = {"rows": pq.ParquetFile(fh).metadata.num_rows}
    return out
