"""Differential fuzzing of the jobs (``testkit.fuzz``): mutated real inputs, each job's per-file
counts against an independent reader's. Prints one row per job and class: inputs tried, differences
explained by a reject row naming file and cause, unexplained discrepancies (exit 1 if any).

    python benchmarks/fuzz.py [--job csets --job pages ...] [--minutes 10] [--seed 1] [--json out.json]
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from testkit.fuzz import JOBS, job_module
from udfs.runtime.cli import ArgumentParser


def table(rows) -> str:
    out = [
        "| job | class | reference reader | inputs | explained (reject rows) | discrepancies |",
        "|---|---|---|---|---|---|",
    ]
    for t in rows:
        out.append(f"| {t.job} | {t.cls} | {t.reference} | {t.inputs:,} | {t.explained:,} | {t.discrepancies:,} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--job", action="append", choices=list(JOBS), help="a job to fuzz (repeat; default all)")
    p.add_argument("--minutes", type=float, default=10.0, help="time per job (default 10)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", help="also write the rows here")
    a = p.parse_args(argv)
    rows = []
    for job in a.job or list(JOBS):
        start = time.monotonic()
        with tempfile.TemporaryDirectory(prefix=f"fuzz-{job}-") as tmp:
            rows += job_module(job).fuzz(Path(tmp), seed=a.seed, budget_s=a.minutes * 60)
        print(f"{job}: {time.monotonic() - start:.0f} s", file=sys.stderr, flush=True)
    print(table(rows))
    bad = [t for t in rows if t.discrepancies]
    for t in bad:
        for e in t.examples:
            print(f"discrepancy {t.job}/{t.cls}: {e}")
    print(f"\n{sum(t.inputs for t in rows):,} inputs, {sum(t.discrepancies for t in rows)} unexplained discrepancies")
    if a.json:
        Path(a.json).write_text(json.dumps([asdict(t) for t in rows], indent=2) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
