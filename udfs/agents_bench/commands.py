"""The agents benchmark's commands as library steps; ``jobs/agents_bench.py`` parses the flags
and calls one of them:

* :func:`build`: the ground truth from schema.org examples files (``udfs.agents_bench.groundtruth``);
* :func:`run`: one verdict configuration on it (``udfs.agents_bench.runner``): seeded, stratified items per
  task, verdicts written one part per batch (a killed run resumes from its parts), then metrics,
  threshold sweep, consensus alignment, summary and plot;
* :func:`calibrate`: a run, then per agent the threshold and score-to-probability map fitted on a
  fit split of the ground truth and measured on the rest (``udfs.agents.calibration``), written to
  the calibration file the evaluation reads;
* :func:`kappa`: Cohen's kappa of MeMR against human votes (``udfs.agents_bench.metrics``).

A ground truth is the folder ``build`` writes or any Parquet file with the same columns
(:func:`load_ground_truth`).

Each step reads its inputs, replaces what it writes in the folders it is given
(``udfs.runtime.io.Folder``) and returns a :class:`Report`: counters and facts for the run record,
and the text to print. Bad input is a :class:`BenchInputError` with the message for the user. The
settings are conf/pipeline.toml's ``[agents_bench]`` (through the job's flags) and ``[scores]``:
none has a default here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ContextManager, Sequence

from udfs.agents_bench import runner as ab
from udfs.runtime.config import ScoresConf
from udfs.runtime.io import Folder
from udfs.runtime.paths import project_file, shown_path
from udfs.runtime.progress import Progress
from udfs.runtime.rejects import FIXED_RAW_CHARS, reject_row

log = logging.getLogger("llm4schema.agents_bench")

Timer = Callable[[str], ContextManager[Any]]


def _untimed(step: str) -> ContextManager[Any]:
    return contextlib.nullcontext()


class BenchInputError(ValueError):
    """An input a step cannot use (a missing examples file, a folder that is not a ground truth)."""


@dataclass
class Report:
    """What a step tells its caller: ``counters`` and ``facts`` for the run record (in order),
    ``text`` to print."""

    counters: dict[str, int | float] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)
    text: str = ""


# ---- build ---------------------------------------------------------------------------------------
def build(
    inputs: Sequence[str | Path],
    out: Folder,
    rejects: Folder,
    *,
    seed: int,
    distant_max: float,
    intrinsic: str,
    max_value_chars: int,
    require_stated: bool,
    scores: ScoresConf,
    timer: Timer = _untimed,
) -> Report:
    """Ground truth from schema.org examples files: ``out`` is replaced by factuality.parquet and
    compliance.parquet, ``rejects/build.jsonl`` lists what was left out and why. The embeddings
    that decide "semantically distant" use ``scores``' batch size and threads; ``intrinsic``
    chooses the intrinsic negatives (``udfs.agents_bench.groundtruth.INTRINSIC_CHOICES``)."""
    from udfs.agents.prompts import load_examples
    from udfs.agents_bench.groundtruth import PAPER_COUNTS, build_ground_truth, embedding_distance, property_name
    from udfs.schemaorg.vocab import load_vocabulary

    # the examples file is read as it is (resolve_inputs would take a .txt for a manifest)
    paths = [Path(x) for x in inputs]
    missing = [str(x) for x in paths if not x.is_file()]
    if missing:
        raise BenchInputError(f"--input: no such examples file: {', '.join(missing)}")
    vocab = load_vocabulary()
    report = Report()
    examples = []
    blocks = 0
    for path in paths:
        text = path.read_text(encoding="utf-8")
        blocks += sum(line.startswith("TYPES:") for line in text.splitlines())
        examples.extend(load_examples(str(path)))
    report.counters["example_blocks"] = blocks
    report.counters["examples_without_text_or_jsonld"] = blocks - len(examples)
    with timer("build"):
        built = build_ground_truth(
            examples,
            vocab,
            seed=seed,
            distant_max=distant_max,
            intrinsic=intrinsic,
            max_value_chars=max_value_chars,
            require_stated=require_stated,
            distance=embedding_distance(vocab, scores),
            name_distance=embedding_distance(vocab, scores, property_name) if intrinsic == "paper" else None,
        )
    out.rm()
    rejects.rm("build.jsonl")
    out.write_parquet("factuality.parquet", ab.to_table(built.factuality, ab.FACTUALITY_SCHEMA))
    out.write_parquet("compliance.parquet", ab.to_table(built.compliance, ab.COMPLIANCE_SCHEMA))
    if built.rejects:
        rejects.write_text("build.jsonl", "".join(json.dumps(r) + "\n" for r in built.rejects))
    report.counters.update(built.counters)
    counts = built.counts()
    report.facts["counts"] = {f"{t}/{k}": n for (t, k), n in counts.items()}
    report.facts["vocabulary"] = vocab.release
    report.facts["intrinsic"] = intrinsic
    lines = [
        f"Ground truth from {len(examples)} schema.org {vocab.release} examples (seed {seed}, "
        f"distant below cosine {distant_max}, intrinsic negatives: {intrinsic})",
        "",
        "| agent | class | items | paper |",
        "|---|---|---|---|",
    ]
    for (t, k), n in counts.items():
        lines.append(f"| {t} | {k} | {n} | {PAPER_COUNTS.get((t, k), '')} |")
    report.text = "\n".join(lines)
    return report


# ---- a ground truth, built here or brought --------------------------------------------------------
REQUIRED = ("text", "property", "value", "entity_type", "label", "kind")


@dataclass
class GroundTruth:
    """The rows per agent, where they were read from and the sha256 of the files read (in order);
    ``duplicates``: the rows left out because another row of the same agent has their ``item_id``
    (reject rows, ``udfs.runtime.rejects``: the file, the row, ``DUPLICATE_ITEM``, the item's keys),
    ``duplicate_items`` their keys (``agent/item_id``, sorted)."""

    tables: dict[str, list[dict[str, Any]]]
    source: str
    sha256: str
    duplicates: list[dict[str, Any]] = field(default_factory=list)
    duplicate_items: list[str] = field(default_factory=list)


# An item is judged and scored once: rows of one agent that share an item_id (the same claim given
# twice, or two claims under one id) cannot say which label holds, so none of them is an item.
DUPLICATE_ITEM = "item_id given by several rows of the ground truth (same agent): none is judged"


def _unique_items(rows: list[dict[str, Any]], where: str, gt: GroundTruth) -> list[dict[str, Any]]:
    """``rows`` (one file's, in its order) without those whose (agent, item_id) another row has;
    each of those is a reject of ``gt.duplicates`` (position: the row's index in the file) and its
    key one of ``gt.duplicate_items``."""
    n = Counter((r["agent"], r["item_id"]) for r in rows)
    kept = []
    for i, r in enumerate(rows):
        if n[(r["agent"], r["item_id"])] == 1:
            kept.append(r)
            continue
        keys = {k: r.get(k) for k in ("agent", "item_id", "kind", "label", "property", "value", "entity_type")}
        gt.duplicates.append(
            reject_row(where, i, DUPLICATE_ITEM, json.dumps(keys, default=str), raw_chars=FIXED_RAW_CHARS)
        )
        gt.duplicate_items.append(f"{r['agent']}/{r['item_id']}")
    return kept


def _rows(table, where: str, agent: str | None) -> list[dict[str, Any]]:
    """Rows of a brought table, checked and completed: the required columns (``text`` may be left
    out for compliance), ``label`` a boolean and ``kind`` one of its agent's; an ``item_id`` made from
    the claim where there is none, and the split's ``group``: the example whose text an item shows
    (``text_example_id``, else ``example_id``), else a hash of the text (compliance without a text:
    of the property and value)."""
    from udfs.agents_bench.groundtruth import COMPLIANCE_KINDS, FACTUALITY_KINDS, item_id

    names = set(table.schema.names)
    need = [c for c in REQUIRED if c not in names and not (c == "text" and agent == "compliance")]
    if need:
        raise BenchInputError(
            f"--input {where}: missing column{'s' if len(need) > 1 else ''} {', '.join(need)} "
            f"(a ground truth has {', '.join(REQUIRED)}, and optionally definition)"
        )
    out = []
    for i, r in enumerate(table.to_pylist()):
        a = agent or r.get("agent") or ("factuality" if r.get("text") is not None else "compliance")
        kinds = FACTUALITY_KINDS if a == "factuality" else COMPLIANCE_KINDS
        if a not in ("factuality", "compliance"):
            raise BenchInputError(f"--input {where}: row {i}: agent {a!r} is neither factuality nor compliance")
        if not isinstance(r.get("label"), bool):
            raise BenchInputError(f"--input {where}: row {i}: label {r.get('label')!r} is not true or false")
        if r.get("kind") not in kinds:
            raise BenchInputError(
                f"--input {where}: row {i}: kind {r.get('kind')!r} is not a {a} kind ({', '.join(kinds)})"
            )
        if a == "factuality" and not r.get("text"):
            raise BenchInputError(f"--input {where}: row {i}: a factuality item needs its text")
        r = {**r, "agent": a, "text": r.get("text") if a == "factuality" else None}
        r["item_id"] = r.get("item_id") or item_id(a, r["kind"], r["text"], r["property"], r["value"], r["entity_type"])
        anchor_id = r.get("text_example_id") or r.get("example_id")
        r["group"] = (
            str(anchor_id)
            if anchor_id
            else item_id("text", r["text"])
            if r["text"]
            else item_id("claim", r["property"], r["value"])
        )
        out.append(r)
    return out


def load_ground_truth(where: Folder) -> GroundTruth:
    """A ground truth: the folder ``build`` writes (factuality.parquet and / or compliance.parquet)
    or one Parquet file holding both agents' rows (an ``agent`` column, or: rows with a text are
    factuality items, rows without compliance ones). Columns ``text``, ``property``, ``value``,
    ``entity_type``, ``label`` (bool) and ``kind`` (factuality: positive / intrinsic / extrinsic;
    compliance: positive / swapped), optionally ``definition`` (compliance: judged against it
    instead of the schema.org definition), ``value_type`` (a named node's type: the typed
    questions show it), ``siblings`` (a list of the subject's other properties: the choice
    question's options), ``subject`` (which node the claim is about: the subject question says
    it), ``item_id``, ``example_id``, ``text_example_id``; others
    are kept and not read. The key is (agent, ``item_id``): rows that share one are left out, each
    a reject in ``GroundTruth.duplicates`` (``DUPLICATE_ITEM``). Anything else is a
    :class:`BenchInputError` that says what is wrong."""
    import hashlib

    import pyarrow.parquet as pq

    digest = hashlib.sha256()
    tables: dict[str, list[dict[str, Any]]] = {"factuality": [], "compliance": []}
    gt = GroundTruth(tables, str(where), "")
    if where.isdir():
        found = [a for a in tables if where.isfile(f"{a}.parquet")]
        if not found:
            raise BenchInputError(
                f"--input {where}: not a ground truth (no factuality.parquet or compliance.parquet); "
                "run build first, or give a Parquet file"
            )
        for a in found:
            data = where.read_bytes(f"{a}.parquet")
            digest.update(data)
            path = str(where / f"{a}.parquet")
            tables[a] = _unique_items(_rows(pq.read_table(pa_buffer(data)), path, a), path, gt)
    else:
        parent, name = where.parent, where.name
        if not parent.isfile(name):
            raise BenchInputError(
                f"--input {where}: no such ground truth (a folder written by build or a Parquet file)"
            )
        data = parent.read_bytes(name)
        digest.update(data)
        try:
            table = pq.read_table(pa_buffer(data))
        except Exception as exc:
            raise BenchInputError(f"--input {where}: not a Parquet file ({exc})") from exc
        for r in _unique_items(_rows(table, str(where), None), str(where), gt):
            tables[r["agent"]].append(r)
    gt.duplicate_items = sorted(set(gt.duplicate_items))
    if gt.duplicates:
        log.warning(
            "ground truth %s: %d rows share an item_id with another row of their agent, none is judged (%s%s)",
            where,
            len(gt.duplicates),
            ", ".join(gt.duplicate_items[:5]),
            f" and {len(gt.duplicate_items) - 5} more" if len(gt.duplicate_items) > 5 else "",
        )
    gt.sha256 = digest.hexdigest()
    return gt


def pa_buffer(data: bytes):
    import pyarrow as pa

    return pa.BufferReader(data)


def select_items(
    gt: GroundTruth, tasks: Sequence[str], limit: int, seed: int, after: int = 0
) -> dict[str, list[dict[str, Any]]]:
    """The items of each task: a seeded, stratified subset (``udfs.agents_bench.groundtruth.stratified_subset``);
    a task without items in the ground truth is left out. ``after``: a held-out sample instead, the
    subset drawn from the items that none of the ``after`` items per task of every task of the agent
    (the same seed) is, nor shares its example text with (a calibration's items and texts stay out)."""
    from udfs.agents_bench.groundtruth import POSITIVE, TASKS, stratified_subset

    out = {}
    for task in tasks:
        agent, neg = TASKS[task]
        rows = gt.tables[agent]
        if after:
            seen = [
                it
                for a, n in TASKS.values()
                if a == agent
                for it in stratified_subset(rows, (POSITIVE, n), after, seed)
            ]
            ids, texts = {it["item_id"] for it in seen}, {it["text"] for it in seen if it.get("text")}
            rows = [r for r in rows if r["item_id"] not in ids and not (r.get("text") and r["text"] in texts)]
        items = stratified_subset(rows, (POSITIVE, neg), limit, seed)
        if items:
            out[task] = items
        else:
            log.warning("task %s: no items in the ground truth, left out", task)
    return out


# ---- run -----------------------------------------------------------------------------------------
def run(
    ground_truth: Folder,
    out: Folder,
    cfg: ab.VerdictConfig,
    *,
    base_url: str,
    cache_path: str,
    tasks: Sequence[str],
    limit: int,
    seed: int,
    batch_size: int,
    held_out_after: int = 0,
    timeout_s: float,
    concurrency: int,
    overwrite: bool,
    timer: Timer = _untimed,
    api_key: str | None = None,
    correct: bool = False,
    scores: ScoresConf | None = None,
) -> Report:
    """Judge ``limit`` items per task (half positive; 0: all; the same seeded picks every time) of
    the ground truth (:func:`load_ground_truth`: build's folder or any Parquet file) with ``cfg`` on the service at ``base_url``, resuming from the verdict parts
    already in ``out/verdicts`` (``overwrite``: drop them first), and write the metrics, sweep,
    alignment, summary and plot to ``out``. ``held_out_after``: the held-out sample of
    :func:`select_items` instead. ``concurrency``: requests in flight per model (1: one
    claim at a time, so a verdict's latency is its own). ``api_key``: the endpoint's, as for ``LLMClient``.
    ``correct``: then GraphCorrect on every factuality item the judge flagged (:func:`_correct_flagged`,
    parts in ``out/corrections``, resumed as the verdicts are), measured per factuality task against
    the ground truth's ``true_value`` with ``scores``' value matching (``correction.parquet``, a
    section of summary.md, ``correction_<task>_*`` counters); without it, no ``correction.parquet``."""

    from udfs.agents_bench.groundtruth import TASKS

    if correct and scores is None:
        raise ValueError("run(correct=True) measures corrections with [scores]' value matching: give scores")
    t0 = time.monotonic()
    gt = load_ground_truth(ground_truth)
    task_items = select_items(gt, tasks, limit, seed, held_out_after)
    todo: dict[str, dict[str, dict]] = {"factuality": {}, "compliance": {}}
    for task, items in task_items.items():
        for it in items:
            todo[TASKS[task][0]].setdefault(it["item_id"], it)
    parts = out / "verdicts"
    done = _verdicts_done(out, overwrite)
    c = {"items": sum(len(v) for v in todo.values()), "already_judged": 0}
    c["ground_truth_duplicate_rows"] = len(gt.duplicates)
    pending = {agent: [it for iid, it in d.items() if (agent, iid) not in done] for agent, d in todo.items()}
    c["already_judged"] = c["items"] - sum(len(v) for v in pending.values())
    clients = _clients(cfg, base_url, cache_path, timeout_s, concurrency, api_key)
    report = Report()
    report.facts["benchmark"] = _benchmark_facts(cfg, gt, task_items, base_url, limit, held_out_after, seed)
    # the judge's block (udfs.runtime.judge_record): each threshold applied, once, with its origin
    report.facts["judge"] = cfg.judge.to_record()
    log.info("%d items (%d judged before) for %s", c["items"], c["already_judged"], cfg.name)
    judged = 0
    corrections: dict[str, dict[str, Any]] = {}
    loop = asyncio.new_event_loop()
    try:
        with timer("judge"):
            judged = _judge_pending(cfg, pending, parts, batch_size, loop, done)
        if correct:
            flagged = [
                it
                for iid, it in todo["factuality"].items()
                if (v := done.get(("factuality", iid))) is not None and v["passed"] is False
            ]
            with timer("correct"):
                corrections = _correct_flagged(cfg, flagged, out / "corrections", batch_size, loop, c)
    finally:
        for cl in clients.values():
            loop.run_until_complete(cl.aclose())
            if cl.cache is not None:
                cl.cache.close()
        loop.close()
    c["judged_now"] = judged
    c["no_verdict"] = sum(done[(ag, iid)]["score"] is None for ag, d in todo.items() for iid in d)
    metrics, sweep, curves = _write_metrics(cfg, task_items, done, out)
    wall = time.monotonic() - t0
    conf = _summary_conf(cfg, limit, seed)
    ab.plot_precision_recall(sweep, metrics, out / "pr.png", curves)
    md = ab.summary_markdown(conf, metrics, wall)
    if correct:
        measured = _write_correction(cfg, task_items, done, corrections, scores, out, c)
        md += "\n" + ab.correction_markdown(measured, scores.match_threshold)
        report.facts["correction"] = measured
    else:
        out.rm("correction.parquet")  # a run without --correct leaves no earlier run's figures behind
    out.write_text("summary.md", md)
    out.write_text("summary.html", ab.summary_html(conf, metrics, "pr.png", wall))
    report.counters.update(c)
    report.facts["metrics"] = metrics
    report.text = md
    return report


def _benchmark_facts(cfg: ab.VerdictConfig, gt, task_items, base_url: str, limit: int, held_out_after: int, seed: int):
    """What the run record keeps of the benchmark: where it asked, the configuration, the items."""
    return {
        "base_url": base_url,
        "config": cfg.name,
        "models": list(cfg.models),
        "judge": cfg.judge_model,
        "strategy": cfg.strategy,
        "limit_per_task": limit,
        "held_out_after": held_out_after,
        "seed": seed,
        "tasks": {t: len(v) for t, v in task_items.items()},
        "ground_truth": gt.source,
        "ground_truth_sha256": gt.sha256,
        # the items left out for a shared item_id (agent/item_id; the warning line names the first)
        "ground_truth_duplicate_items": gt.duplicate_items,
    }


def _summary_conf(cfg: ab.VerdictConfig, limit: int, seed: int) -> dict[str, Any]:
    """The configuration lines of the summary."""
    return {
        "name": cfg.name,
        "models": " + ".join(cfg.models),
        "judge": cfg.judge_model or "–",
        "strategy": cfg.strategy,
        "factuality threshold": _threshold_line(cfg, "factuality"),
        "compliance threshold": _threshold_line(cfg, "compliance"),
        "items per task": limit or "all",
        "seed": seed,
    }


def _verdicts_done(out: Folder, overwrite: bool) -> dict[tuple[str, str], dict]:
    """The verdicts an earlier run of this configuration wrote (``out/verdicts``), by (agent,
    item_id), those without a score left out (asked again); ``overwrite``: none, the earlier
    verdicts and corrections dropped."""
    parts = out / "verdicts"
    if overwrite:
        parts.rm()
        (out / "corrections").rm()
    done = {}
    if parts.ls("part-*.parquet"):
        for r in parts.read().to_pylist():
            if r["score"] is not None:
                done[(r["agent"], r["item_id"])] = r
    return done


def _clients(cfg: ab.VerdictConfig, base_url, cache_path, timeout_s, concurrency, api_key) -> dict[str, Any]:
    """One client per model that answers (the voters, and the judge model breaking their ties),
    sharing the request cache; set on ``cfg``, which the verdicts read them from."""
    from udfs.agents.verdicts import voter_model_and_strategy
    from udfs.llm.client import LLMClient

    clients = {
        m: LLMClient(
            base_url, m, cache_path=cache_path, timeout_s=timeout_s, max_concurrency=concurrency, api_key=api_key
        )
        for m in dict.fromkeys(
            voter_model_and_strategy(v, cfg.strategy)[0]
            for v in [*cfg.models, *([cfg.judge_model] if cfg.judge_model else [])]
        )
    }
    cfg.clients = clients
    cfg.one_at_a_time = concurrency <= 1
    return clients


def _judge_pending(
    cfg: ab.VerdictConfig,
    pending: dict[str, list[dict]],
    parts: Folder,
    batch_size: int,
    loop: asyncio.AbstractEventLoop,
    done: dict[tuple[str, str], dict],
) -> int:
    """Judge the items not judged before, ``batch_size`` at a time, each batch's verdicts a part of
    ``parts`` (a killed run resumes from them) and in ``done``; returns how many were judged."""
    n_part = len(parts.ls("part-*.parquet"))
    judged = 0
    with Progress(f"judge {cfg.name}", sum(len(v) for v in pending.values()), "verdicts") as progress:
        for agent, items in pending.items():
            for i in range(0, len(items), max(1, batch_size)):
                rows = loop.run_until_complete(ab.judge_items(cfg, agent, items[i : i + batch_size]))
                parts.write_parquet(f"part-{n_part:05d}.parquet", ab.to_table(rows, ab.VERDICTS_SCHEMA))
                n_part += 1
                judged += len(rows)
                for r in rows:
                    done[(agent, r["item_id"])] = r
                progress.update(len(rows), **{f"{agent} without verdict": sum(r["score"] is None for r in rows)})
    return judged


def _write_metrics(
    cfg: ab.VerdictConfig, task_items: dict[str, list[dict]], done: dict[tuple[str, str], dict], out: Folder
) -> tuple[list[dict], list[dict], dict[str, Any]]:
    """Per task, the metrics, the threshold sweep and the consensus alignment over the verdicts of
    the run's items, written to ``out`` (metrics, sweep and alignment tables); returns the metrics,
    the sweep and the precision-recall curves for the summary and its plot."""
    from udfs.agents_bench import metrics as bm
    from udfs.agents_bench.groundtruth import TASKS

    metrics, sweep, alignment, curves = [], [], [], {}
    for task, items in task_items.items():
        agent = TASKS[task][0]
        rows = [done[(agent, it["item_id"])] for it in items if (agent, it["item_id"]) in done]
        m, s, al = ab.task_metrics(cfg.name, task, agent, cfg.threshold(agent), rows, len(cfg.models) > 1)
        curves[task] = bm.precision_recall_points([bool(r["label"]) for r in rows], [r["score"] for r in rows])
        metrics.append(m)
        sweep += s
        alignment += al
    out.write_parquet("metrics.parquet", ab.to_table(metrics, ab.METRICS_SCHEMA))
    out.write_parquet("sweep.parquet", ab.to_table(sweep, ab.SWEEP_SCHEMA))
    out.write_parquet("alignment.parquet", ab.to_table(alignment, ab.ALIGNMENT_SCHEMA))
    return metrics, sweep, curves


def _write_correction(cfg, task_items, done, corrections, scores, out: Folder, c: dict[str, Any]) -> list[dict]:
    """GraphCorrect's figures per factuality task (:func:`_correction_metrics`), written to
    ``out/correction.parquet`` and counted in ``c`` (``correction_<task>_<count>``)."""
    import pyarrow as pa

    measured = _correction_metrics(cfg, task_items, done, corrections, scores)
    out.write_parquet("correction.parquet", ab.to_table(measured, ab.CORRECTION_SCHEMA))
    for r in measured:
        for f in ab.CORRECTION_SCHEMA:
            if pa.types.is_int64(f.type) and r[f.name] is not None:
                c[f"correction_{r['task']}_{f.name}"] = r[f.name]
    return measured


def _correct_flagged(
    cfg: ab.VerdictConfig,
    flagged: list[dict[str, Any]],
    parts: Folder,
    batch_size: int,
    loop: asyncio.AbstractEventLoop,
    c: dict[str, Any],
) -> dict[str, dict[str, Any]]:
    """GraphCorrect on the ``flagged`` factuality items (``udfs.agents_bench.runner.correct_items``):
    the corrections already in ``parts`` (one part per batch) are kept, the others (and the failed
    ones) asked and written as new parts. Returns every flagged item's correction by item_id (a
    kept correction over a failed one) and counts corrections_flagged, corrections_resumed,
    corrections_asked_now and corrections_failed (still failed after this run) in ``c``."""
    got: dict[str, dict[str, Any]] = {}
    if parts.ls("part-*.parquet"):
        for r in parts.read().to_pylist():
            if r["item_id"] not in got or got[r["item_id"]]["failed"]:
                got[r["item_id"]] = r
    wanted = {it["item_id"] for it in flagged}
    pending = [it for it in flagged if it["item_id"] not in got or got[it["item_id"]]["failed"]]
    c["corrections_flagged"] = len(flagged)
    c["corrections_resumed"] = len(flagged) - len(pending)
    n_part = len(parts.ls("part-*.parquet"))
    with Progress(f"correct {cfg.name}", len(pending), "corrections") as progress:
        for i in range(0, len(pending), max(1, batch_size)):
            rows = loop.run_until_complete(ab.correct_items(cfg, pending[i : i + batch_size]))
            parts.write_parquet(f"part-{n_part:05d}.parquet", ab.to_table(rows, ab.CORRECTIONS_SCHEMA))
            n_part += 1
            for r in rows:
                got[r["item_id"]] = r
            progress.update(len(rows), failed=sum(r["failed"] for r in rows))
    c["corrections_asked_now"] = len(pending)
    c["corrections_failed"] = sum(bool(got[i]["failed"]) for i in wanted)
    return {i: got[i] for i in wanted}


def _correction_metrics(
    cfg: ab.VerdictConfig,
    task_items: dict[str, list[dict[str, Any]]],
    done: dict[tuple[str, str], dict[str, Any]],
    corrections: dict[str, dict[str, Any]],
    scores: ScoresConf,
) -> list[dict[str, Any]]:
    """The ``CORRECTION_SCHEMA`` row of each factuality task, value matching by ``scores``."""
    from udfs.agents_bench.groundtruth import TASKS
    from udfs.scores import matching

    def match(pairs):
        return [m.matched for m in matching.match_pairs(pairs, **matching.settings(scores))]

    verdicts = {iid: r for (agent, iid), r in done.items() if agent == "factuality"}
    return [
        ab.correction_metrics(cfg.name, task, items, verdicts, corrections, match)
        for task, items in task_items.items()
        if TASKS[task][0] == "factuality"
    ]


# ---- calibrate -----------------------------------------------------------------------------------
def _threshold_line(cfg: ab.VerdictConfig, agent: str) -> str:
    """The summary's line for an agent's threshold: its value and where it came from."""
    t = cfg.judge.record.agents[agent].threshold
    return f"{t.value:g} ({t.origin.describe()})"


def calibrate(
    ground_truth: Folder,
    out: Folder,
    cfg: ab.VerdictConfig,
    *,
    calibration_file: str,
    install: bool = False,
    fit_fraction: float,
    tasks: Sequence[str],
    limit: int,
    seed: int,
    **run_kw: Any,
) -> Report:
    """Fit each agent's threshold and score-to-probability map on the fit split of the ground
    truth and measure them on the test split (``udfs.agents.calibration``), from the verdict scores
    of a ``run`` of ``cfg`` (run first, here: it resumes from the parts already written and asks the
    request cache before the model, so no item is asked twice). The entries (per model, agent,
    strategy and layout; the seed, fit fraction and the ground truth's sha256 with them) go to
    ``out/calibration.json``, and with ``install`` to ``calibration_file`` too (other keys there
    kept; that file, where it exists, is checked before the run: one that is not a calibration file
    is a ConfigError; without ``install`` the report says how to install them); ``out/calibration.md`` is the test-split
    table. ``run_kw``: :func:`run`'s other arguments."""
    from udfs.agents import calibration as cal
    from udfs.agents_bench.groundtruth import TASKS

    if not 0 < fit_fraction < 1:
        raise BenchInputError(f"--fit-fraction {fit_fraction}: must be between 0 and 1 (exclusive)")
    path = project_file(calibration_file)
    if install:  # the file the entries go into is checked before the run asks anything (ConfigError)
        cal.load_calibration(path, missing_ok=True)
    report = run(ground_truth, out, cfg, tasks=tasks, limit=limit, seed=seed, **run_kw)
    gt = load_ground_truth(ground_truth)
    task_items = select_items(gt, tasks, limit, seed)
    scores: dict[tuple[str, str], float | None] = {}
    for r in (out / "verdicts").read().to_pylist():  # a later answer replaces an earlier failure
        if r["score"] is not None or (r["agent"], r["item_id"]) not in scores:
            scores[(r["agent"], r["item_id"])] = r["score"]
    model = cal.model_key(list(cfg.models), cfg.judge_model)
    entries = []
    for agent in dict.fromkeys(TASKS[t][0] for t in task_items):
        items: dict[str, cal.Item] = {}
        agent_tasks = [t for t in task_items if TASKS[t][0] == agent]
        for t in agent_tasks:
            for it in task_items[t]:
                prev = items.get(it["item_id"])
                items[it["item_id"]] = cal.Item(
                    it["group"],
                    bool(it["label"]),
                    scores.get((agent, it["item_id"])),
                    (*(prev.tasks if prev else ()), t),
                )
        entries.append(
            cal.fit_entry(
                list(items.values()),
                model=model,
                agent=agent,
                strategy=cfg.strategy,
                layout=cal.layout_key(cfg.judge.key(agent)),
                seed=seed,
                fit_fraction=fit_fraction,
                ground_truth_sha256=gt.sha256,
                tasks=agent_tasks,
                prompts_sha256=cfg.judge.record.agents[agent].prompts_sha256,
            )
        )
    written = out.write_text(
        "calibration.json", json.dumps({"version": cal.VERSION, "entries": entries}, indent=1) + "\n"
    )
    if install:
        cal.write(path, entries)
    md = calibration_markdown(entries, path if install else str(written))
    out.write_text("calibration.md", md)
    if not install:
        md += (
            f"\nNot installed: {shown_path(path)} is unchanged. To install these entries there (other keys kept), "
            "run the same command again with --install (its answers come from the parts and the request cache)."
        )
    report.facts["calibration"] = {
        "file": path if install else str(written),
        "installed": install,
        "sha256": cal.sha256(path) if install else None,
        "seed": seed,
        "fit_fraction": fit_fraction,
        "ground_truth_sha256": gt.sha256,
        "entries": [{k: e[k] for k in ("model", "agent", "strategy", "layout", "threshold")} for e in entries],
    }
    for e in entries:
        report.counters[f"{e['agent']}_fit_items"] = e["fit"]["n"]
        report.counters[f"{e['agent']}_test_items"] = e["test"]["n"]
    report.text = report.text + "\n" + md
    return report


def calibration_markdown(entries: Sequence[dict[str, Any]], path: str) -> str:
    """The test-split figures of calibration entries (the fitted threshold's P / R / F1, its
    sensitivity and specificity, balanced accuracy, AUROC)."""

    def f(x):
        return "–" if x is None else f"{x:.3f}"

    lines = [
        f"Calibration written to {path}: thresholds fitted on the fit split (max F1, the two classes "
        "weighted equally), figures on the test split only (R is the sensitivity).",
        "",
        "| model | agent | task | strategy | layout | threshold | fit items | test items (true / false) | P | R "
        "| F1 | specificity | bal. acc. | AUROC |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for e in entries:
        for task, m in [("all", e["test"]), *e["test"]["tasks"].items()]:
            lines.append(
                f"| {e['model']} | {e['agent']} | {task} | {e['strategy']} | {e['layout']} | "
                f"{e['threshold']:.3f} | {e['fit']['n']} | {m['n']} ({m['positives']} / {m['negatives']}) | "
                f"{f(m['precision'])} | {f(m['recall'])} | {f(m['f1'])} | {f(m.get('specificity'))} | "
                f"{f(m.get('balanced_accuracy'))} | {f(m['auroc'])} |"
            )
    lines += [
        "",
        f"seed {entries[0]['seed'] if entries else '–'}, fit fraction "
        f"{entries[0]['fit_fraction'] if entries else '–'}, split by example text",
    ]
    return "\n".join(lines) + "\n"


# ---- kappa ---------------------------------------------------------------------------------------
DUPLICATE_VOTE = "page voted on by several rows of its group: none is counted"


def kappa(inputs: Sequence[str], out: Folder, rejects: Folder) -> Report:
    """Cohen's kappa per group of a votes table (CSV or Parquet: human_vote, and memr_choice or
    memr_h and memr_l, optionally group and page): ``out`` is replaced by kappa.parquet, a row that
    cannot be read is a line of ``rejects/kappa.jsonl`` with the reason. With a ``page`` column,
    (group, page) is the key: a page voted on by several rows of one group is counted by none of
    them, each a reject (``DUPLICATE_VOTE``), so no page weighs twice in a kappa."""
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    from udfs.agents_bench import metrics as bm
    from udfs.runtime.inputs import resolve_inputs

    rows = []
    for path in resolve_inputs(list(inputs), suffixes=(".csv", ".parquet")):
        t = pcsv.read_csv(path) if str(path).endswith(".csv") else pq.read_table(path)
        rows += [(str(path), i, r) for i, r in enumerate(t.to_pylist())]
    groups: dict[str, list[tuple[str, str]]] = {}
    rejected = []
    voted = []
    for src, i, r in rows:
        try:
            if r.get("memr_choice") not in (None, ""):
                memr = r["memr_choice"]
            elif r.get("memr_h") is not None and r.get("memr_l") is not None:
                memr = bm.memr_choice(float(r["memr_h"]), float(r["memr_l"]))
            else:
                raise ValueError("no memr_choice and no memr_h / memr_l")
            human = r.get("human_vote")
            bm.sides(memr), bm.sides(human)
        except (ValueError, TypeError) as exc:
            rejected.append(reject_row(src, i, str(exc), json.dumps(r, default=str), raw_chars=FIXED_RAW_CHARS))
            continue
        voted.append((src, i, r, str(r.get("group") or "all"), memr, human))
    n = Counter((g, r.get("page")) for _, _, r, g, _, _ in voted if r.get("page") not in (None, ""))
    for src, i, r, g, memr, human in voted:
        if n.get((g, r.get("page")), 1) > 1:
            rejected.append(reject_row(src, i, DUPLICATE_VOTE, json.dumps(r, default=str), raw_chars=FIXED_RAW_CHARS))
            continue
        groups.setdefault(g, []).append((memr, human))
    table = [{"group": g, **bm.kappa_table(v)} for g, v in sorted(groups.items())]
    out.rm()
    rejects.rm("kappa.jsonl")
    out.write_parquet("kappa.parquet", ab.to_table(table, ab.KAPPA_SCHEMA))
    if rejected:
        rejects.write_text("kappa.jsonl", "".join(json.dumps(r) + "\n" for r in rejected))
    report = Report(
        counters={
            "rows_read": len(rows),
            "rows_rejected": len(rejected),
            "rows_used": len(rows) - len(rejected),
            "duplicate_vote_rows": sum(r["reason"] == DUPLICATE_VOTE for r in rejected),
        },
        facts={"kappa": table},
    )
    if report.counters["duplicate_vote_rows"]:
        log.warning(
            "%d vote rows give a page that another row of their group gives too: none of them is counted "
            "(rejects/kappa.jsonl names them)",
            report.counters["duplicate_vote_rows"],
        )
    lines = ["| group | pages | rating pairs | MeMR ties | human ties | kappa |\n|---|---|---|---|---|---|"]
    for o in table:
        k = "–" if o["kappa"] is None else f"{o['kappa']:.3f}"
        lines.append(f"| {o['group']} | {o['pages']} | {o['pairs']} | {o['ties_memr']} | {o['ties_human']} | {k} |")
    report.text = "\n".join(lines)
    return report
