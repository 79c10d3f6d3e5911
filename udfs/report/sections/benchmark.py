"""How far to trust the agents: each agents-benchmark configuration under the output root's
``agents_bench/results`` (what ``jobs/agents_bench.py run`` writes), its per-task metrics and its
precision-recall plot."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from udfs.report.figures import data_uri
from udfs.report.sections import Part
from udfs.report.values import fmt_score
from udfs.runtime.io import Folder

if TYPE_CHECKING:
    from udfs.report.inputs import Run

BLOCK = "benchmark"
PER_RUN = False


def benchmark(root: Folder) -> list[dict[str, Any]]:
    """Each agents-benchmark configuration under ``root/agents_bench/results``: its per-task
    metrics and the precision-recall plot."""
    import pyarrow.parquet as pq

    results = root / "agents_bench" / "results"
    out = []
    if not results.isdir():
        return out
    for name in sorted(results.ls("*")):
        conf = results / name
        if not conf.isfile("metrics.parquet"):
            continue
        with conf.open("metrics.parquet") as fh:
            metrics = pq.read_table(fh).to_pylist()
        src = None
        if conf.isfile("pr.png"):
            src = data_uri(conf.read_bytes("pr.png"))
        rows = [
            {
                "task": m["task"],
                "agent": m["agent"],
                "n": m["n"],
                "threshold": fmt_score(m["threshold"]),
                "precision": fmt_score(m["precision"]),
                "recall": fmt_score(m["recall"]),
                "f1": fmt_score(m["f1"]),
                "auroc": fmt_score(m["auroc"]),
                "unanswered": m.get("unanswered", 0),
            }
            for m in metrics
        ]
        out.append({"config": conf.name, "metrics": rows, "plot": src})
    return out


def data(run: Run) -> Part:
    return Part({"benchmarks": benchmark(run.src.root), "root": str(run.src.root / "agents_bench")})
