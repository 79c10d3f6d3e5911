"""The one rejects contract (udfs/runtime/rejects.py): columns, nullability, the raw bound, and the
errors a reject without a source, a reason or a bound gets."""

from __future__ import annotations

from pathlib import Path

import pytest

from udfs.runtime import rejects as R

DATA = Path(__file__).resolve().parents[2] / "data"


def test_the_spark_schema_is_the_field_list():
    from pyspark.sql import types as T

    assert R.REJECTS_SCHEMA is R.spark_schema()  # built once
    assert [(f.name, f.dataType, f.nullable) for f in R.REJECTS_SCHEMA] == [
        ("source", T.StringType(), False),
        ("position", T.LongType(), True),
        ("reason", T.StringType(), False),
        ("raw", T.StringType(), True),
    ]
    assert tuple(R.REJECTS_SCHEMA.names) == R.COLUMNS


def test_the_committed_demo_rejects_have_the_contract_columns():
    import pyarrow.parquet as pq

    schema = pq.read_table(DATA / "demo" / "rejects" / "extract_quads").schema
    assert [(f.name, str(f.type), f.nullable) for f in schema] == [
        ("source", "string", False),
        ("position", "int64", True),
        ("reason", "string", False),
        ("raw", "string", True),
    ]


def test_raw_is_cut_to_the_bound_and_bytes_become_text():
    line = (DATA / "wdc" / "wdc-2022-12-jsonld-part00044-first10k.nq").read_text(encoding="utf-8").splitlines()[0]
    assert R.cut_raw(line, 10) == line[:10] and R.cut_raw(line, 10**6) == line
    assert R.cut_raw("é€x".encode(), 2) == "é€"
    assert R.cut_raw(b"ok\xff\xfe", 10) == "ok\ufffd\ufffd"  # undecodable bytes are replaced, not an error
    assert R.cut_raw(None, 5) is None
    with pytest.raises(ValueError, match=">= 1"):
        R.cut_raw("x", 0)


def test_a_reject_row_says_where_and_why():
    row = R.reject_row("f.warc.gz", 12, "block 1: invalid JSON", "{" * 50, raw_chars=4)
    assert list(row) == list(R.COLUMNS) and row == {
        "source": "f.warc.gz",
        "position": 12,
        "reason": "block 1: invalid JSON",
        "raw": "{{{{",
    }
    assert R.reject_row("f", None, "gone")["raw"] is None
    with pytest.raises(ValueError, match="without a source"):
        R.reject_row("", 1, "why")
    with pytest.raises(ValueError, match="without a reason"):
        R.reject_row("f", 1, "")
    with pytest.raises(ValueError, match="without a bound"):
        R.reject_row("f", 1, "why", "raw text")
