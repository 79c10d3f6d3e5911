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
from typing import Any, Callable, Sequence

import pyarrow as pa

from udfs.agents import verdicts as agents
from udfs.agents.judge import Judge
from udfs.agents_bench import metrics as bm
from udfs.agents_bench.groundtruth import TASKS
from udfs.runtime.contracts import TableContract
from udfs.runtime.io import Folder
from udfs.scores.confusion import auroc, confusion

FACTUALITY_SCHEMA = pa.schema(
    [
        ("item_id", pa.string()),
        ("example_id", pa.string()),
        ("text_example_id", pa.string()),
        ("text", pa.string()),
        ("property", pa.string()),
        ("value", pa.string()),
        # the value the claim's property has in its text (groundtruth.py); null: none (extrinsic)
        ("true_value", pa.string()),
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
# A ground truth's contract (udfs.runtime.contracts), from the schemas build writes: the claim and
# its label are required (text too, for a factuality item: udfs.agents_bench.commands checks it
# row by row, as a compliance item may leave it out); the rest, and a one-file ground truth's
# agent column, typed where present. Key: (agent, item_id).
GROUND_TRUTH = TableContract.of_schema(
    "ground truth",
    COMPLIANCE_SCHEMA,
    required=("property", "value", "entity_type", "label", "kind"),
    key=("item_id",),
    writer="agents_bench.py build",
    extra={"agent": pa.string()},
)
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
        ("sensitivity", pa.float64()),
        ("specificity", pa.float64()),
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
# What kappa reads of a votes table (made by people, CSV or Parquet): human_vote, and memr_choice or
# both of memr_h and memr_l (numbers: float() reads an integer too); group and page of any type.
# Key: (group, page).
VOTES = TableContract(
    "votes",
    required={"human_vote": pa.string()},
    optional={
        "memr_choice": pa.string(),
        "memr_h": (pa.float64(), pa.int64()),
        "memr_l": (pa.float64(), pa.int64()),
        "group": None,  # any type: read as its text
        "page": None,
    },
    key=("group", "page"),
    one_of=(("memr_choice",), ("memr_h", "memr_l")),
    writer="a person (one row per page and group)",
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
# GraphCorrect on the flagged factuality items (run --correct): one row per item corrected, written
# one part per batch (corrections/part-*.parquet) so that a killed run resumes.
CORRECTIONS_SCHEMA = pa.schema(
    [
        ("item_id", pa.string()),
        ("kind", pa.string()),
        ("label", pa.bool_()),
        ("property", pa.string()),
        ("value", pa.string()),
        ("entity_type", pa.string()),
        ("true_value", pa.string()),
        # the value the model read off the text (null: it answered that the text states none, or failed)
        ("proposed", pa.string()),
        # Judge.correct's: the proposed value differs from the claim's and passes factuality again
        ("corrected", pa.bool_()),
        ("verdict_score", pa.float64()),
        ("error", pa.string()),
        # the correction request or its re-verification failed: asked again on a rerun
        ("failed", pa.bool_()),
        ("model", pa.string()),
    ]
)
# Per task (intrinsic, extrinsic): what GraphCorrect did to the claims the judge flagged. Shares are
# null where their count of claims is 0; the to-true-value ones are null too where the ground truth
# has no true_value column (true_value_known false: built before it kept one).
CORRECTION_SCHEMA = pa.schema(
    [
        ("config", pa.string()),
        ("task", pa.string()),
        ("true_value_known", pa.bool_()),
        # false claims the judge flagged (label false, passed false)
        ("false_flagged", pa.int64()),
        # ... split by the correction: a value proposed and re-verified, the text states none, failed
        ("false_proposed", pa.int64()),
        ("false_no_value", pa.int64()),
        ("false_failed", pa.int64()),
        # of them, those whose text has a true value for the claim (an extrinsic negative's has none)
        ("false_with_true_value", pa.int64()),
        ("to_true_exact", pa.int64()),
        ("to_true_exact_share", pa.float64()),
        ("to_true_match", pa.int64()),
        ("to_true_match_share", pa.float64()),
        # the correction passes factuality (Correction.corrected: the evaluation would keep it)
        ("false_passes", pa.int64()),
        ("false_passes_share", pa.float64()),
        # passes and is the true value (BLINKG match): a false claim mended
        ("mended", pa.int64()),
        ("mended_share", pa.float64()),
        # true claims the judge flagged (label true, passed false)
        ("true_flagged", pa.int64()),
        ("true_proposed", pa.int64()),
        ("true_no_value", pa.int64()),
        ("true_failed", pa.int64()),
        # a correction that passes and changes the value: exactly (after normalisation), by BLINKG
        ("damaged_exact", pa.int64()),
        ("damaged_exact_share", pa.float64()),
        ("damaged_match", pa.int64()),
        ("damaged_match_share", pa.float64()),
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


def claim_of(item: dict[str, Any]) -> agents.Claim:
    """The claim a ground-truth item puts to the judge."""
    return agents.Claim(
        item["property"],
        item["value"],
        item["entity_type"],
        item.get("value_type"),
        tuple(item.get("siblings") or ()),
        item.get("subject"),
    )


async def judge_items(cfg: VerdictConfig, agent: str, items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One verdict row per ground-truth item (same order); the items of one text are asked together.
    A compliance item with a ``definition`` is judged against it, one without against schema.org's."""
    groups: dict[str | None, list[int]] = {}
    for i, it in enumerate(items):
        groups.setdefault(it["text"] if agent == "factuality" else (it.get("definition") or None), []).append(i)
    claims = [claim_of(it) for it in items]
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


# Judge.correct's error for a claim whose text states no value: an answer, not a failure
NO_VALUE = "the text states no value"


async def correct_items(cfg: VerdictConfig, items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """GraphCorrect (``Judge.correct``) on factuality items the judge flagged: one
    ``CORRECTIONS_SCHEMA`` row per item, in order; the items of one text are asked together. As the
    evaluation does, the first voter (its model and strategy) is asked for the value and re-verifies
    it, with every question (early_exit False: the bench's convention). ``failed``: the request or
    the re-verification got no answer (a rerun asks again)."""
    model, strategy = agents.voter_model_and_strategy(cfg.models[0], cfg.strategy)
    groups: dict[str, list[int]] = {}
    for i, it in enumerate(items):
        groups.setdefault(it["text"], []).append(i)
    answers = await asyncio.gather(
        *(
            cfg.judge.correct(
                cfg.clients[model], [text], [claim_of(items[i]) for i in idx], early_exit=False, strategy=strategy
            )
            for text, idx in groups.items()
        )
    )
    fixes: list[Any] = [None] * len(items)
    for idx, got in zip(groups.values(), answers):
        for i, f in zip(idx, got):
            fixes[i] = f
    rows = []
    for it, f in zip(items, fixes):
        v = f.verdict
        rows.append(
            {
                **{
                    k: it.get(k) for k in ("item_id", "kind", "label", "property", "value", "entity_type", "true_value")
                },
                "proposed": f.proposed,
                "corrected": f.corrected,
                "verdict_score": v.score if v is not None else None,
                "error": f.error,
                "failed": (f.proposed is None and f.error != NO_VALUE) or (v is not None and v.score is None),
                "model": model,
            }
        )
    return rows


def exact_form(value: Any) -> str:
    """A value as the exact match compares it: casefolded, whitespace collapsed
    (``udfs.scores.matching.normalise``), surrounding punctuation stripped ("Springfield." is
    "springfield")."""
    import unicodedata

    from udfs.scores.matching import normalise

    t = normalise(value)
    i, j = 0, len(t)
    while i < j and (t[i].isspace() or unicodedata.category(t[i]).startswith("P")):
        i += 1
    while j > i and (t[j - 1].isspace() or unicodedata.category(t[j - 1]).startswith("P")):
        j -= 1
    return t[i:j]


def _share(k: int | None, n: int | None) -> float | None:
    return k / n if k is not None and n else None


def correction_metrics(
    config: str,
    task: str,
    items: Sequence[dict[str, Any]],
    verdicts: dict[str, dict[str, Any]],
    corrections: dict[str, dict[str, Any]],
    match: Callable[[Sequence[tuple[str, str]]], list[bool]],
) -> dict[str, Any]:
    """One ``CORRECTION_SCHEMA`` row: what GraphCorrect did to ``task``'s items the judge flagged
    (``verdicts`` by item_id: ``passed`` false). Every flagged item needs its row in
    ``corrections`` (by item_id), else ValueError. A false claim is corrected to its true value
    (``true_value``) exactly when both have the same :func:`exact_form`, and by value matching when
    ``match`` (BLINKG's: ``udfs.scores.matching.match_pairs`` at [scores] match_threshold) says so of
    (proposed, true value); a true claim is damaged when a correction that passes changes its value
    (not the same exact form; by matching: ``match`` of (proposed, value) false). Items without a
    ``true_value`` key (a ground truth built before it kept one) make the to-true-value figures
    null: not measurable."""
    known = all("true_value" in it for it in items)

    def flagged(label: bool) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        out = []
        for it in items:
            v = verdicts.get(it["item_id"])
            if bool(it["label"]) is label and v is not None and v["passed"] is False:
                if it["item_id"] not in corrections:
                    raise ValueError(f"task {task}: item {it['item_id']} was flagged and has no correction")
                out.append((it, corrections[it["item_id"]]))
        return out

    false, true = flagged(False), flagged(True)
    answered = [(it, c) for it, c in false if not c["failed"] and c["proposed"] is not None]
    with_tv = [(it, c) for it, c in false if it.get("true_value") is not None] if known else []
    to_true = [(it, c) for it, c in answered if it.get("true_value") is not None] if known else []
    passed_true = [(it, c) for it, c in true if c["corrected"]]
    matched = match(
        [(c["proposed"], it["true_value"]) for it, c in to_true]
        + [(c["proposed"], it["value"]) for it, c in passed_true]
    )
    to_true_match = matched[: len(to_true)]
    same_value = matched[len(to_true) :]
    n_tv = len(with_tv) if known else None

    def if_known(n: int) -> int | None:
        return n if known else None

    exact = if_known(sum(exact_form(c["proposed"]) == exact_form(it["true_value"]) for it, c in to_true))
    by_match = if_known(sum(to_true_match))
    mended = if_known(sum(m and c["corrected"] for (it, c), m in zip(to_true, to_true_match)))
    passes = sum(bool(c["corrected"]) for _, c in false)
    damaged_exact = sum(exact_form(c["proposed"]) != exact_form(it["value"]) for it, c in passed_true)
    damaged_match = sum(not m for m in same_value)
    return {
        "config": config,
        "task": task,
        "true_value_known": known,
        "false_flagged": len(false),
        "false_proposed": len(answered),
        "false_no_value": sum(not c["failed"] and c["proposed"] is None for _, c in false),
        "false_failed": sum(bool(c["failed"]) for _, c in false),
        "false_with_true_value": n_tv,
        "to_true_exact": exact,
        "to_true_exact_share": _share(exact, n_tv),
        "to_true_match": by_match,
        "to_true_match_share": _share(by_match, n_tv),
        "false_passes": passes,
        "false_passes_share": _share(passes, len(false)),
        "mended": mended,
        "mended_share": _share(mended, n_tv),
        "true_flagged": len(true),
        "true_proposed": sum(not c["failed"] and c["proposed"] is not None for _, c in true),
        "true_no_value": sum(not c["failed"] and c["proposed"] is None for _, c in true),
        "true_failed": sum(bool(c["failed"]) for _, c in true),
        "damaged_exact": damaged_exact,
        "damaged_exact_share": _share(damaged_exact, len(true)),
        "damaged_match": damaged_match,
        "damaged_match_share": _share(damaged_match, len(true)),
    }


def task_metrics(
    config: str, task: str, agent: str, threshold: float, rows: Sequence[dict[str, Any]], multi_model: bool
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """(metrics row, sweep rows, consensus alignment rows) of one task's verdict rows."""
    labels = [bool(r["label"]) for r in rows]
    scores = [r["score"] for r in rows]
    # The configured decision (``passed``) is what the agent did; for one model it equals
    # score >= threshold, for a vote it is the majority / judge's decision.
    c = confusion(labels, [r["passed"] if r["score"] is not None else None for r in rows])
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
        "auroc": auroc(labels, scores),
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


def _ratio_cell(k: int | None, n: int | None, known: bool = True) -> str:
    if not known:
        return "not measurable"
    if not n:
        return "–"
    return f"{k}/{n} ({k / n:.1%})"


CORRECTION_HEADER = (
    "task",
    "false flagged",
    "proposed / none / failed",
    "to true value (exact)",
    "to true value (BLINKG)",
    "passes factuality",
    "mended",
    "true flagged",
    "damaged (exact)",
    "damaged (BLINKG)",
)


def correction_markdown(rows: Sequence[dict[str, Any]], match_threshold: float) -> str:
    """summary.md's GraphCorrect section: one line per task of ``CORRECTION_SCHEMA`` rows, each
    share with the counts behind it."""
    lines = [
        "## GraphCorrect",
        "",
        "| " + " | ".join(CORRECTION_HEADER) + " |",
        "|" + "---|" * len(CORRECTION_HEADER),
    ]
    for r in rows:
        known = r["true_value_known"]
        n_tv = r["false_with_true_value"]
        lines.append(
            "| "
            + " | ".join(
                [
                    r["task"],
                    str(r["false_flagged"]),
                    f"{r['false_proposed']} / {r['false_no_value']} / {r['false_failed']}",
                    _ratio_cell(r["to_true_exact"], n_tv, known),
                    _ratio_cell(r["to_true_match"], n_tv, known),
                    _ratio_cell(r["false_passes"], r["false_flagged"]),
                    _ratio_cell(r["mended"], n_tv, known),
                    str(r["true_flagged"]),
                    _ratio_cell(r["damaged_exact"], r["true_flagged"]),
                    _ratio_cell(r["damaged_match"], r["true_flagged"]),
                ]
            )
            + " |"
        )
    notes = [
        "",
        "Flagged: judged non-factual. GraphCorrect asks the text for the value of each flagged claim and "
        "judges the corrected claim again (passes factuality: Correction.corrected, what the evaluation keeps). "
        "To true value: of the false claims whose text has a true value, those whose proposed value is it "
        "(exact: casefolded, whitespace collapsed, surrounding punctuation stripped; BLINKG: value matching at "
        f"{match_threshold:g}); mended: passes and BLINKG-matches the true value. Damaged: of the true claims "
        "flagged, those whose correction passes with a different value. An extrinsic negative's text is "
        "another example's: it has no true value, and the right correction is none.",
    ]
    if any(not r["true_value_known"] for r in rows):
        notes.append(
            "Not measurable: the ground truth has no true_value column (built before it kept one); build it again."
        )
    return "\n".join(lines + notes) + "\n"


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
