"""Whether two output roots hold the same results: every verdict, score and count of ``triples/``,
``scores/`` and ``markups/``, and the report's Table 7 CSV, row by row.

    python benchmarks/same_outputs.py BEFORE_ROOT AFTER_ROOT

Rows are matched by their key (page, source, and for triples the triple itself); the columns that
say how an answer was obtained rather than what it was (latencies, wall times, whether the request
cache answered, token counts of served requests, the settings hash) are left out. Prints one line
per table (rows compared, rows equal, the first differences) and exits 1 when any differs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pyarrow.dataset as pads

# how an answer was obtained, not what it was
ACCOUNTING = ("latency_s", "wall_s", "cache_hits", "tokens", "settings_hash")
KEYS = {
    "scores": ("page_key", "source"),
    "markups": ("page_key", "source", "stage"),
    "triples": ("page_key", "source", "subject", "property", "value", "entity_type"),
}


def rows(root: Path, table: str) -> dict[tuple, dict]:
    t = pads.dataset(str(root / table), format="parquet").to_table()
    cols = [c for c in t.column_names if not any(a in c for a in ACCOUNTING)]
    out: dict[tuple, dict] = {}
    for r in t.select(cols).to_pylist():
        out.setdefault(tuple(str(r.get(k)) for k in KEYS[table]), []).append(r)
    return {k: sorted(v, key=repr) for k, v in out.items()}


def compare(before: Path, after: Path) -> bool:
    same = True
    for table in KEYS:
        b, a = rows(before, table), rows(after, table)
        keys = sorted(set(b) | set(a))
        diff = [k for k in keys if b.get(k) != a.get(k)]
        n = sum(len(v) for v in b.values())
        print(
            f"{table}: {n} rows before, {sum(len(v) for v in a.values())} after, {len(keys) - len(diff)} of {len(keys)} keys equal"
        )
        for k in diff[:3]:
            print(f"  differs at {k}:\n    before {b.get(k)}\n    after  {a.get(k)}")
        same = same and not diff
    hashes = [
        sorted(set(pads.dataset(str(r / "scores"), format="parquet").to_table(["settings_hash"])[0].to_pylist()))
        for r in (before, after)
    ]
    print(
        f"settings hashes: before {hashes[0]}, after {hashes[1]} ({'the same' if hashes[0] == hashes[1] else 'other'})"
    )
    t7b, t7a = before / "report" / "table7.csv", after / "report" / "table7.csv"
    if t7b.exists() and t7a.exists():
        eq = t7b.read_text() == t7a.read_text()
        print(f"report/table7.csv: {'equal' if eq else 'differs'}")
        same = same and eq
    return same


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("before", type=Path)
    p.add_argument("after", type=Path)
    a = p.parse_args(argv)
    return 0 if compare(a.before, a.after) else 1


if __name__ == "__main__":
    sys.exit(main())
