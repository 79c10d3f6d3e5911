"""The agents benchmark's three commands as library steps; ``jobs/agents_bench.py`` parses the flags
and calls one of them:

* :func:`build`: the ground truth from schema.org examples files (``udfs.bench.groundtruth``);
* :func:`run`: one verdict configuration on it (``udfs.bench.runner``): seeded, stratified items per
  task, verdicts written one part per batch (a killed run resumes from its parts), then metrics,
  threshold sweep, consensus alignment, summary and plot;
* :func:`kappa`: Cohen's kappa of MeMR against human votes (``udfs.bench.metrics``).

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ContextManager, Sequence

from udfs.bench import runner as ab
from udfs.runtime.config import ScoresConf
from udfs.runtime.io import Folder
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
def build(inputs: Sequence[str | Path], out: Folder, rejects: Folder, *, seed: int, distant_max: float,
          max_value_chars: int, require_stated: bool, scores: ScoresConf, timer: Timer = _untimed) -> Report:
    """Ground truth from schema.org examples files: ``out`` is replaced by factuality.parquet and
    compliance.parquet, ``rejects/build.jsonl`` lists what was left out and why. The embeddings
    that decide "semantically distant" use ``scores``' batch size and threads."""
    from udfs.agents.prompts import load_examples
    from udfs.bench.groundtruth import PAPER_COUNTS, build_ground_truth, embedding_distance
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
        built = build_ground_truth(examples, vocab, seed=seed, distant_max=distant_max,
                                   max_value_chars=max_value_chars, require_stated=require_stated,
                                   distance=embedding_distance(vocab, scores))
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
    lines = [f"Ground truth from {len(examples)} schema.org {vocab.release} examples (seed {seed}, "
             f"distant below cosine {distant_max})", "",
             "| agent | class | items | paper |", "|---|---|---|---|"]
    for (t, k), n in counts.items():
        lines.append(f"| {t} | {k} | {n} | {PAPER_COUNTS.get((t, k), '')} |")
    report.text = "\n".join(lines)
    return report


# ---- run -----------------------------------------------------------------------------------------
def run(ground_truth: Folder, out: Folder, cfg: ab.VerdictConfig, *, base_url: str, cache_path: str,
        tasks: Sequence[str], limit: int, seed: int, batch_size: int, timeout_s: float, concurrency: int,
        overwrite: bool, timer: Timer = _untimed) -> Report:
    """Judge ``limit`` items per task (half positive; 0: all; the same seeded picks every time) of
    the ground truth with ``cfg`` on the service at ``base_url``, resuming from the verdict parts
    already in ``out/verdicts`` (``overwrite``: drop them first), and write the metrics, sweep,
    alignment, summary and plot to ``out``. ``concurrency``: requests in flight per model (1: one
    claim at a time, so a verdict's latency is its own)."""
    from udfs.agents.verdicts import voter_model_and_strategy
    from udfs.bench import metrics as bm
    from udfs.bench.groundtruth import TASKS, stratified_subset
    from udfs.llm.client import LLMClient

    t0 = time.monotonic()
    models = list(cfg.models)
    missing = [str(ground_truth / f"{t}.parquet") for t in ("factuality", "compliance")
               if not ground_truth.isfile(f"{t}.parquet")]
    if missing:
        raise BenchInputError(f"--input {ground_truth}: not a ground_truth folder (no {', '.join(missing)}); "
                              "run build first")
    tables = {agent: ground_truth.read(f"{agent}.parquet").to_pylist() for agent in ("factuality", "compliance")}
    # The items of each task (a seeded, stratified subset), then each agent's distinct items.
    task_items: dict[str, list[dict]] = {}
    for task in tasks:
        agent, neg = TASKS[task]
        task_items[task] = stratified_subset(tables[agent], ("positive", neg), limit, seed)
    todo: dict[str, dict[str, dict]] = {"factuality": {}, "compliance": {}}
    for task, items in task_items.items():
        for it in items:
            todo[TASKS[task][0]].setdefault(it["item_id"], it)
    parts = out / "verdicts"
    if overwrite:
        parts.rm()
    done = {}
    if parts.ls("part-*.parquet"):
        for r in parts.read().to_pylist():
            if r["score"] is not None:
                done[(r["agent"], r["item_id"])] = r
    c = {"items": sum(len(v) for v in todo.values()), "already_judged": 0}
    pending = {agent: [it for iid, it in d.items() if (agent, iid) not in done] for agent, d in todo.items()}
    c["already_judged"] = c["items"] - sum(len(v) for v in pending.values())
    clients = {m: LLMClient(base_url, m, cache_path=cache_path, timeout_s=timeout_s, max_concurrency=concurrency)
               for m in dict.fromkeys(voter_model_and_strategy(v, cfg.strategy)[0]
                                      for v in [*models, *([cfg.judge] if cfg.judge else [])])}
    cfg.clients = clients
    cfg.one_at_a_time = concurrency <= 1
    report = Report()
    report.facts["benchmark"] = {"base_url": base_url, "config": cfg.name, "models": models, "judge": cfg.judge,
                                 "strategy": cfg.strategy, "limit_per_task": limit, "seed": seed,
                                 "tasks": {t: len(v) for t, v in task_items.items()}}
    log.info("%d items (%d judged before) for %s", c["items"], c["already_judged"], cfg.name)
    n_part = len(parts.ls("part-*.parquet"))
    judged = 0
    with timer("judge"), Progress(f"judge {cfg.name}", sum(len(v) for v in pending.values()), "verdicts") as progress:
        loop = asyncio.new_event_loop()
        try:
            for agent, items in pending.items():
                for i in range(0, len(items), max(1, batch_size)):
                    batch = items[i:i + batch_size]
                    rows = loop.run_until_complete(ab.judge_items(cfg, agent, batch))
                    parts.write_parquet(f"part-{n_part:05d}.parquet", ab.to_table(rows, ab.VERDICTS_SCHEMA))
                    n_part += 1
                    judged += len(rows)
                    for r in rows:
                        done[(agent, r["item_id"])] = r
                    progress.update(len(rows), **{f"{agent} without verdict": sum(r["score"] is None for r in rows)})
        finally:
            for cl in clients.values():
                loop.run_until_complete(cl.aclose())
                if cl.cache is not None:
                    cl.cache.close()
            loop.close()
    c["judged_now"] = judged
    c["no_verdict"] = sum(done[(ag, iid)]["score"] is None for ag, d in todo.items() for iid in d)
    # metrics per task over the rows of this run's items
    metrics, sweep, alignment, curves = [], [], [], {}
    for task, items in task_items.items():
        agent = TASKS[task][0]
        rows = [done[(agent, it["item_id"])] for it in items if (agent, it["item_id"]) in done]
        m, s, al = ab.task_metrics(cfg.name, task, agent, cfg.threshold(agent), rows, len(models) > 1)
        curves[task] = bm.precision_recall_points([bool(r["label"]) for r in rows], [r["score"] for r in rows])
        metrics.append(m)
        sweep += s
        alignment += al
    out.write_parquet("metrics.parquet", ab.to_table(metrics, ab.METRICS_SCHEMA))
    out.write_parquet("sweep.parquet", ab.to_table(sweep, ab.SWEEP_SCHEMA))
    out.write_parquet("alignment.parquet", ab.to_table(alignment, ab.ALIGNMENT_SCHEMA))
    wall = time.monotonic() - t0
    conf = {"name": cfg.name, "models": " + ".join(models), "judge": cfg.judge or "–",
            "strategy": cfg.strategy, "factuality threshold": cfg.factuality_threshold,
            "compliance threshold": cfg.compliance_threshold, "items per task": limit or "all", "seed": seed}
    ab.plot_precision_recall(sweep, metrics, out / "pr.png", curves)
    md = ab.summary_markdown(conf, metrics, wall)
    out.write_text("summary.md", md)
    out.write_text("summary.html", ab.summary_html(conf, metrics, "pr.png", wall))
    report.counters.update(c)
    report.facts["metrics"] = metrics
    report.text = md
    return report


# ---- kappa ---------------------------------------------------------------------------------------
def kappa(inputs: Sequence[str], out: Folder, rejects: Folder) -> Report:
    """Cohen's kappa per group of a votes table (CSV or Parquet: human_vote, and memr_choice or
    memr_h and memr_l, optionally group): ``out`` is replaced by kappa.parquet, a row that cannot be
    read is a line of ``rejects/kappa.jsonl`` with the reason."""
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    from udfs.bench import metrics as bm
    from udfs.runtime.inputs import resolve_inputs

    rows = []
    for path in resolve_inputs(list(inputs), suffixes=(".csv", ".parquet")):
        t = pcsv.read_csv(path) if str(path).endswith(".csv") else pq.read_table(path)
        rows += [(str(path), i, r) for i, r in enumerate(t.to_pylist())]
    groups: dict[str, list[tuple[str, str]]] = {}
    rejected = []
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
        groups.setdefault(str(r.get("group") or "all"), []).append((memr, human))
    table = [{"group": g, **bm.kappa_table(v)} for g, v in sorted(groups.items())]
    out.rm()
    rejects.rm("kappa.jsonl")
    out.write_parquet("kappa.parquet", ab.to_table(table, ab.KAPPA_SCHEMA))
    if rejected:
        rejects.write_text("kappa.jsonl", "".join(json.dumps(r) + "\n" for r in rejected))
    report = Report(counters={"rows_read": len(rows), "rows_rejected": len(rejected),
                              "rows_used": len(rows) - len(rejected)},
                    facts={"kappa": table})
    lines = ["| group | pages | rating pairs | MeMR ties | human ties | kappa |\n|---|---|---|---|---|---|"]
    for o in table:
        k = "–" if o["kappa"] is None else f"{o['kappa']:.3f}"
        lines.append(f"| {o['group']} | {o['pages']} | {o['pairs']} | {o['ties_memr']} | {o['ties_human']} | {k} |")
    report.text = "\n".join(lines)
    return report
