"""The agents benchmark around the ground truth (``udfs.agents_bench.groundtruth``) and the metrics
(``udfs.agents_bench.metrics``): table schemas, judging ground-truth items with any verdict configuration
(one model, or several voting with a judge breaking ties), the per-task metrics, the threshold
sweep, and the Markdown / HTML / plot summary. ``udfs.agents_bench.commands`` runs them as the
benchmark's steps.

Factuality items about one text go out together, so their questions share the text's prompt
prefix (the engine's prefix cache); a task's positives are judged once even when two tasks
(intrinsic, extrinsic) use them.
"""

from __future__ import annotations

import asyncio
import html
import json
from dataclasses import dataclass, field
from typing import Any, Sequence

import pyarrow as pa

from udfs.agents import verdicts as agents
from udfs.agents.judge import Judge
from udfs.agents_bench import metrics as bm
from udfs.agents_bench.groundtruth import TASKS
from udfs.runtime.io import Folder

FACTUALITY_SCHEMA = pa.schema(
    [
        ("item_id", pa.string()),
        ("example_id", pa.string()),
        ("text_example_id", pa.string()),
        ("text", pa.string()),
        ("property", pa.string()),
        ("value", pa.string()),
        ("value_kind", pa.string()),
        ("value_type", pa.string()),
        ("siblings", pa.list_(pa.string())),
        ("subject", pa.string()),
        ("entity_type", pa.string()),
        ("label", pa.bool_()),
        ("kind", pa.string()),
        ("source_property", pa.string()),
        ("cosine", pa.float64()),
        ("value_in_text", pa.bool_()),
        ("seed", pa.int64()),
    ]
)
COMPLIANCE_SCHEMA = FACTUALITY_SCHEMA.append(pa.field("definition", pa.string()))
VERDICTS_SCHEMA = pa.schema(
    [
        ("agent", pa.string()),
        ("item_id", pa.string()),
        ("kind", pa.string()),
        ("label", pa.bool_()),
        ("property", pa.string()),
        ("value", pa.string()),
        ("entity_type", pa.string()),
        ("score", pa.float64()),
        ("passed", pa.bool_()),
        ("threshold", pa.float64()),
        ("error", pa.string()),
        ("note", pa.string()),
        ("votes", pa.string()),
        ("model", pa.string()),
        ("latency_s", pa.float64()),
        ("from_cache", pa.bool_()),
        ("requests", pa.int64()),
        ("cache_hits", pa.int64()),
        ("prompt_tokens", pa.int64()),
        ("cached_prompt_tokens", pa.int64()),
        ("completion_tokens", pa.int64()),
    ]
)
METRICS_SCHEMA = pa.schema(
    [
        ("config", pa.string()),
        ("task", pa.string()),
        ("agent", pa.string()),
        ("threshold", pa.float64()),
        ("n", pa.int64()),
        ("positives", pa.int64()),
        ("negatives", pa.int64()),
        ("unanswered", pa.int64()),
        ("tp", pa.int64()),
        ("fp", pa.int64()),
        ("tn", pa.int64()),
        ("fn", pa.int64()),
        ("precision", pa.float64()),
        ("recall", pa.float64()),
        ("f1", pa.float64()),
        ("f1_true", pa.float64()),
        ("f1_false", pa.float64()),
        ("balanced_accuracy", pa.float64()),
        ("accuracy", pa.float64()),
        ("auroc", pa.float64()),
        ("best_threshold", pa.float64()),
        ("best_f1", pa.float64()),
        ("latency_iqr_mean_s", pa.float64()),
        ("latency_kept", pa.int64()),
        ("latency_dropped", pa.int64()),
        ("from_cache", pa.int64()),
        ("prompt_tokens_per_verdict", pa.float64()),
        ("cached_prompt_tokens_per_verdict", pa.float64()),
        ("completion_tokens_per_verdict", pa.float64()),
        ("consensus_alignment", pa.string()),
        ("paper_f1", pa.float64()),
    ]
)
SWEEP_SCHEMA = pa.schema(
    [
        ("config", pa.string()),
        ("task", pa.string()),
        ("threshold", pa.float64()),
        ("tp", pa.int64()),
        ("fp", pa.int64()),
        ("tn", pa.int64()),
        ("fn", pa.int64()),
        ("precision", pa.float64()),
        ("recall", pa.float64()),
        ("f1", pa.float64()),
        ("f1_false", pa.float64()),
        ("balanced_accuracy", pa.float64()),
    ]
)
ALIGNMENT_SCHEMA = pa.schema(
    [
        ("config", pa.string()),
        ("task", pa.string()),
        ("model", pa.string()),
        ("alignment", pa.float64()),
        ("items", pa.int64()),
    ]
)
KAPPA_SCHEMA = pa.schema(
    [
        ("group", pa.string()),
        ("pages", pa.int64()),
        ("pairs", pa.int64()),
        ("ties_memr", pa.int64()),
        ("ties_human", pa.int64()),
        ("agree", pa.int64()),
        ("memr_human_human_human", pa.int64()),
        ("memr_human_human_llm", pa.int64()),
        ("memr_llm_human_human", pa.int64()),
        ("memr_llm_human_llm", pa.int64()),
        ("kappa", pa.float64()),
    ]
)
# Mixtral-8x7B at threshold 0.5 in the paper (Tables 2 and 4).
PAPER_F1 = {"intrinsic": 0.901, "extrinsic": 0.945, "compliance": 0.907}


def to_table(rows: Sequence[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    return pa.Table.from_pylist([{f.name: r.get(f.name) for f in schema} for r in rows], schema=schema)


@dataclass
class VerdictConfig:
    """Who judges and how: the voters (``models``: one model, or several voting, ties to the
    judge's ``judge_model``) and the judge (``udfs.agents.judge.build_judge``: the ``[judge]``
    settings through the job's flags, built as the evaluation builds it, so the benchmark measures
    the judge that runs)."""

    models: list[str]
    judge: Judge
    one_at_a_time: bool = True  # False: every claim of a batch at once (latency then includes queueing)
    clients: dict[str, Any] = field(default_factory=dict, repr=False)  # model id -> LLMClient

    @property
    def strategy(self) -> str:
        return self.judge.strategy

    @property
    def judge_model(self) -> str | None:
        return self.judge.judge_model

    def threshold(self, agent: str) -> float:
        return self.judge.threshold(agent)

    def questions(self, agent: str) -> list[str]:
        return self.judge.questions(agent)

    @property
    def name(self) -> str:
        parts = [
            "+".join(self.models),
            self.strategy,
            f"f{self.threshold('factuality'):g}",
            f"c{self.threshold('compliance'):g}",
        ]
        if self.judge_model and len(self.models) > 1:
            parts.append(f"judge-{self.judge_model}")
        if self.questions("factuality") != ["plain"]:
            parts.append("q-" + self.judge.key("factuality"))
        parts.append("cq-" + self.judge.key("compliance"))
        return "_".join(parts).replace("/", "-")


@dataclass(frozen=True)
class _Definitions:
    """A vocabulary stand-in for compliance: every property of a group of items has the group's
    definition (the ground truth's ``definition`` column)."""

    comments: dict[str, str]


async def _judge_group(cfg: VerdictConfig, agent: str, key: str | None, claims: list[agents.Claim]):
    # factuality groups by text, compliance by the items' own definition (None: schema.org's)
    text, vocab = (
        (key, None)
        if agent == "factuality"
        else (None, _Definitions({c.property: key for c in claims}) if key else None)
    )
    # the bench measures the scores (AUROC, a calibration fitted on them): every question is asked;
    # the evaluation's early exit gives the same verdicts at a threshold
    return await cfg.judge.verdicts(
        agent, cfg.clients.__getitem__, claims, chunks=[text], early_exit=False, vocab=vocab, voters=cfg.models
    )


async def judge_items(cfg: VerdictConfig, agent: str, items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One verdict row per ground-truth item (same order); the items of one text are asked together.
    A compliance item with a ``definition`` is judged against it, one without against schema.org's."""
    groups: dict[str | None, list[int]] = {}
    for i, it in enumerate(items):
        groups.setdefault(it["text"] if agent == "factuality" else (it.get("definition") or None), []).append(i)
    claims = [
        agents.Claim(
            it["property"],
            it["value"],
            it["entity_type"],
            it.get("value_type"),
            tuple(it.get("siblings") or ()),
            it.get("subject"),
        )
        for it in items
    ]
    keys = list(groups)
    if cfg.one_at_a_time:
        # One request in flight: a verdict's latency is its own request's time, not its wait behind
        # the others (the client times a request from the moment it is issued). Claims of one text
        # still follow each other, so the engine's prefix cache serves them.
        results = []
        for k in keys:
            res = []
            for i in groups[k]:
                res += await _judge_group(cfg, agent, k, [claims[i]])
            results.append(res)
    else:
        results = await asyncio.gather(*(_judge_group(cfg, agent, k, [claims[i] for i in groups[k]]) for k in keys))
    judged: list[Any] = [None] * len(items)
    for k, res in zip(keys, results):
        for i, j in zip(groups[k], res):
            judged[i] = j
    rows = []
    for it, j in zip(items, judged):
        rows.append(
            {
                "agent": agent,
                "item_id": it["item_id"],
                "kind": it["kind"],
                "label": it["label"],
                "property": it["property"],
                "value": it["value"],
                "entity_type": it["entity_type"],
                "score": j.score,
                "passed": j.passed,
                "threshold": cfg.threshold(agent),
                "error": j.error,
                "note": j.note,
                "votes": json.dumps(j.votes, sort_keys=True) if j.votes else None,
                "model": j.model if len(cfg.models) == 1 else "consensus:" + "+".join(cfg.models),
                "latency_s": j.latency_s,
                # every answer from the request cache: no engine work, no latency to measure
                "from_cache": bool(j.requests and j.cache_hits == j.requests),
                "requests": j.requests,
                "cache_hits": j.cache_hits,
                "prompt_tokens": j.prompt_tokens,
                "cached_prompt_tokens": j.cached_prompt_tokens,
                "completion_tokens": j.completion_tokens,
            }
        )
    return rows


def task_metrics(
    config: str, task: str, agent: str, threshold: float, rows: Sequence[dict[str, Any]], multi_model: bool
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """(metrics row, sweep rows, consensus alignment rows) of one task's verdict rows."""
    labels = [bool(r["label"]) for r in rows]
    scores = [r["score"] for r in rows]
    # The configured decision (``passed``) is what the agent did; for one model it equals
    # score >= threshold, for a vote it is the majority / judge's decision.
    c = bm.confusion(labels, [r["passed"] if r["score"] is not None else None for r in rows])
    sweep = bm.threshold_sweep(labels, scores)
    best = max(sweep, key=lambda s: (s["f1"], -abs(s["threshold"] - threshold)))
    measured = [r for r in rows if r["requests"] and not r["from_cache"]]
    lat = bm.iqr_mean(r["latency_s"] for r in measured)
    n = max(1, len(rows))
    alignment = []
    if multi_model:
        votes = [json.loads(r["votes"]) if r["votes"] else {} for r in rows]
        voters = [{m: s for m, s in v.items() if not m.startswith("judge:")} for v in votes]
        ca = bm.consensus_alignment(voters, [r["passed"] for r in rows], threshold)
        alignment = [{"config": config, "task": task, "model": m, **v} for m, v in ca.items()]
    metrics = {
        "config": config,
        "task": task,
        "agent": agent,
        "threshold": threshold,
        "positives": sum(labels),
        "negatives": len(labels) - sum(labels),
        **c.as_dict(),
        "auroc": bm.auroc(labels, scores),
        "best_threshold": best["threshold"],
        "best_f1": best["f1"],
        "latency_iqr_mean_s": lat.mean,
        "latency_kept": lat.kept,
        "latency_dropped": lat.dropped,
        "from_cache": sum(bool(r["from_cache"]) for r in rows),
        "prompt_tokens_per_verdict": sum(r["prompt_tokens"] for r in rows) / n,
        "cached_prompt_tokens_per_verdict": sum(r["cached_prompt_tokens"] for r in rows) / n,
        "completion_tokens_per_verdict": sum(r["completion_tokens"] for r in rows) / n,
        "consensus_alignment": json.dumps({a["model"]: round(a["alignment"], 4) for a in alignment})
        if alignment
        else None,
        "paper_f1": PAPER_F1.get(task),
    }
    sweep_rows = [{"config": config, "task": task, **s} for s in sweep]
    return metrics, sweep_rows, alignment


def task_of(agent: str, kind: str) -> list[str]:
    """The tasks a ground-truth row belongs to: positives to every task of their agent."""
    return [t for t, (a, neg) in TASKS.items() if a == agent and kind in ("positive", neg)]


# ---- summary -----------------------------------------------------------------------------------
_COLS = [
    ("task", "task"),
    ("n", "n"),
    ("positives", "pos"),
    ("negatives", "neg"),
    ("unanswered", "no verdict"),
    ("precision", "P"),
    ("recall", "R"),
    ("f1", "F1"),
    ("paper_f1", "paper F1"),
    ("f1_false", "F1 false"),
    ("balanced_accuracy", "bal. acc."),
    ("auroc", "AUROC"),
    ("best_threshold", "best thr."),
    ("best_f1", "F1 at best"),
    ("latency_iqr_mean_s", "s/verdict (IQR)"),
    ("prompt_tokens_per_verdict", "prompt tok"),
    ("completion_tokens_per_verdict", "compl. tok"),
    ("consensus_alignment", "CA"),
]


def _fmt(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def summary_markdown(config: dict[str, Any], metrics: Sequence[dict[str, Any]], wall_s: float | None = None) -> str:
    lines = [
        f"# Agents benchmark: {config['name']}",
        "",
        ", ".join(f"{k}: {v}" for k, v in config.items() if k != "name"),
        "",
    ]
    if wall_s is not None:
        lines += [f"Wall time {wall_s:.0f} s.", ""]
    lines.append("| " + " | ".join(h for _, h in _COLS) + " |")
    lines.append("|" + "---|" * len(_COLS))
    for m in metrics:
        lines.append("| " + " | ".join(_fmt(m.get(k)) for k, _ in _COLS) + " |")
    lines += [
        "",
        "P/R/F1 of the true class at the judge's threshold (where it came from: above; paper F1: "
        "Mixtral-8x7B, Tables 2 and 4); "
        "F1 false: F1 of the false class; s/verdict: mean after dropping IQR outliers, cached answers left out.",
    ]
    return "\n".join(lines) + "\n"


def summary_html(
    config: dict[str, Any], metrics: Sequence[dict[str, Any]], plot_name: str | None, wall_s: float | None = None
) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for _, h in _COLS)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_fmt(m.get(k)))}</td>" for k, _ in _COLS) + "</tr>" for m in metrics
    )
    conf = html.escape(", ".join(f"{k}: {v}" for k, v in config.items() if k != "name"))
    img = f'<p><img src="{html.escape(plot_name)}" alt="precision-recall curves"></p>' if plot_name else ""
    wall = f"<p>Wall time {wall_s:.0f} s.</p>" if wall_s is not None else ""
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(config['name'])}</title>"
        "<style>td,th{border:1px solid #ccc;padding:2px 6px}table{border-collapse:collapse}</style></head>"
        f"<body><h1>Agents benchmark: {html.escape(config['name'])}</h1><p>{conf}</p>{wall}"
        f"<table><tr>{head}</tr>{body}</table>{img}</body></html>\n"
    )


def plot_precision_recall(
    sweep: Sequence[dict[str, Any]],
    metrics: Sequence[dict[str, Any]],
    path,
    curves: dict[str, Sequence[dict[str, float]]] | None = None,
) -> None:
    """Precision against recall, as a PNG at ``path`` (a local path, a URL or a Folder: written
    through the IO layer, atomically): per task the full curve over every distinct score
    (``curves``, ``udfs.agents_bench.metrics.precision_recall_points``) when given, the threshold sweep's
    points on it, and the configured decision as a cross."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    for m in metrics:
        pts = [s for s in sweep if s["task"] == m["task"] and (s["tp"] + s["fp"]) > 0]
        curve = (curves or {}).get(m["task"]) or []
        if curve:
            (line,) = ax.plot(
                [p["recall"] for p in curve], [p["precision"] for p in curve], drawstyle="steps-post", label=m["task"]
            )
            if pts:
                ax.plot(
                    [s["recall"] for s in pts], [s["precision"] for s in pts], ls="", marker=".", color=line.get_color()
                )
        elif pts:
            ax.plot([s["recall"] for s in pts], [s["precision"] for s in pts], marker=".", label=m["task"])
        ax.scatter([m["recall"]], [m["precision"]], marker="x", color="black")
    ax.set_xlabel("recall")
    ax.set_ylabel("precision")
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.02)
    ax.set_title("precision-recall (dots: sweep, x: configured threshold)")
    ax.legend(loc="lower left")
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=100)
    plt.close(fig)
    target = Folder.of(path)
    target.parent.write_bytes(target.name, png.getvalue())
