"""The rejects contract: one row per input the pipeline could not use, written to
``rejects/<job>/`` next to the job's table (``docs/architecture.md``: bad input is never dropped
silently, it becomes a reject row with a reason).

Every rejects table, whichever job or library writes it, has exactly these columns:

* ``source`` (string, never null): the input it came from (a file, a table, a URL);
* ``position`` (int64, null when the whole source is rejected): where in the source (a line
  number, a record offset, a row or C-set id);
* ``reason`` (string, never null): why, in one line;
* ``raw`` (string, null when there is nothing to show): the rejected input itself, cut to the
  job's ``reject_raw_chars`` so one huge line cannot blow up the table.

``FIELDS`` is the one definition; ``REJECTS_SCHEMA`` is its Spark form (built on first use, so
modules that never touch Spark do not import pyspark). Python writers build rows with
``reject_row``; Spark writers cut ``raw`` with ``raw_column``.
"""

from __future__ import annotations

from typing import Any

# (name, type, nullable); the type names are Spark SQL's.
FIELDS: tuple[tuple[str, str, bool], ...] = (
    ("source", "string", False),
    ("position", "bigint", True),
    ("reason", "string", False),
    ("raw", "string", True),
)
COLUMNS: tuple[str, ...] = tuple(name for name, _, _ in FIELDS)
# The raw bound of the writers that have no ``reject_raw_chars`` setting of their own (evaluate,
# agents_bench kappa); the jobs that have one (csets, sample, extract_quads, pages) take it from the conf.
FIXED_RAW_CHARS = 1000


def cut_raw(raw: str | bytes | None, chars: int) -> str | None:
    """``raw`` as text of at most ``chars`` characters (bytes decoded as UTF-8, undecodable bytes
    replaced); None stays None. ``chars`` must be positive: a reject without its input is what
    ``raw=None`` says, not a zero bound."""
    if chars < 1:
        raise ValueError(f"reject raw bound must be >= 1 character, got {chars}")
    if raw is None:
        return None
    if isinstance(raw, (bytes, bytearray)):
        raw = bytes(raw[: chars * 4]).decode("utf-8", errors="replace")
    return raw[:chars]


def reject_row(
    source: str, position: int | None, reason: str, raw: str | bytes | None = None, *, raw_chars: int | None = None
) -> dict[str, Any]:
    """One reject row of the contract (a dict keyed by ``COLUMNS``), ``raw`` cut to ``raw_chars``
    (needed only when there is a ``raw``). An empty ``source`` or ``reason``, or a ``raw`` without
    a bound, is a ValueError: a reject must say where and why, and its raw must stay bounded."""
    if not source:
        raise ValueError(f"reject without a source (reason: {reason!r})")
    if not reason:
        raise ValueError(f"reject without a reason (source: {source!r})")
    if raw is not None and raw_chars is None:
        raise ValueError(f"reject raw without a bound (source: {source!r}): pass raw_chars")
    return {
        "source": source,
        "position": None if position is None else int(position),
        "reason": reason,
        "raw": None if raw is None else cut_raw(raw, raw_chars),
    }


def raw_column(col, chars: int):
    """Spark: the string column ``col`` cut to ``chars`` characters (null stays null)."""
    from pyspark.sql import functions as F

    if chars < 1:
        raise ValueError(f"reject raw bound must be >= 1 character, got {chars}")
    return F.substring(col, 1, chars)


def spark_schema():
    """The contract as a Spark ``StructType`` (one object per process)."""
    global _SPARK_SCHEMA
    if _SPARK_SCHEMA is None:
        from pyspark.sql import types as T

        kinds = {"string": T.StringType(), "bigint": T.LongType()}
        _SPARK_SCHEMA = T.StructType([T.StructField(n, kinds[k], nullable) for n, k, nullable in FIELDS])
    return _SPARK_SCHEMA


_SPARK_SCHEMA = None


def __getattr__(name: str):
    # ``from udfs.runtime.rejects import REJECTS_SCHEMA`` builds the Spark form on first use.
    if name == "REJECTS_SCHEMA":
        return spark_schema()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
