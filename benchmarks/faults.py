"""The fault-injection table: runs tests/jobs/test_faults.py (local Spark standalone cluster, two Ray
nodes with the Serve app, loopback only; and hostile inputs, a row per class of issue 22) and
prints, for each injected fault, what was injected, what survived and how many rows were lost
(must be 0). ``-k "not executor_killed and not serve_replica and not evaluation_killed"`` runs
the faults that need neither cluster nor model.

    python benchmarks/faults.py [--json out.json] [-k EXPR]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from udfs.runtime.cli import ArgumentParser

ROOT = Path(__file__).resolve().parents[1]


def table(rows: list[dict]) -> str:
    out = ["| fault | injected | survived | expected | out | lost |", "|---|---|---|---|---|---|"]
    for r in rows:
        out.append(
            f"| {r['fault']} | {r['injected']} | {r['survived']} | {r['expected']:,} {r['unit']} | "
            f"{r['out']:,} | {r['lost']} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", help="also write the rows here")
    p.add_argument("-k", default="", help="pytest -k expression (a subset of the faults)")
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "faults.json"
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            str(ROOT / "tests" / "jobs" / "test_faults.py"),
            "-q",
            "-p",
            "no:cacheprovider",
        ]
        if a.k:
            cmd += ["-k", a.k]
        rc = subprocess.run(cmd, cwd=str(ROOT), env={**os.environ, "FAULTS_REPORT": str(path)}).returncode
        rows = json.loads(path.read_text()) if path.exists() else []
    print(table(rows))
    lost = sum(r["lost"] for r in rows)
    print(f"\n{len(rows)} faults injected, rows lost: {lost}; tests exit status {rc}")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=2) + "\n")
    return rc or (1 if lost else 0)


if __name__ == "__main__":
    sys.exit(main())
