"""How far each verdict agent can be trusted: ground truth from the schema.org examples, and the
precision / recall / F1 of any verdict configuration on it (the paper's Tables 1-4), plus Cohen's
kappa of MeMR against human votes (Table 9).

    python jobs/agents_bench.py build --input data/schemaorg-30.0/schemaorg-all-examples.txt --output OUT
    python jobs/agents_bench.py run   --input OUT/agents_bench/ground_truth --output OUT [--limit 40]
           [--models m1 [m2 m3 --judge-model j]] [--strategy direct|guided|fewshot]
           [--factuality-threshold 0.5] [--compliance-threshold 0.5]
    python jobs/agents_bench.py kappa --input votes.csv --output OUT

build: OUT/agents_bench/ground_truth/{factuality,compliance}.parquet (udfs/bench/groundtruth.py).
run: OUT/agents_bench/results/<config>/ verdicts/ (one part per batch: a killed run resumes from
its parts, and answers come from the request cache OUT/cache/llm.sqlite), metrics.parquet,
sweep.parquet, alignment.parquet, summary.md, summary.html, pr.png. --limit N takes N items per
task, half positives and half negatives, the same seeded picks every time.
kappa: a votes table (CSV or Parquet) with human_vote (human | llm | tie) and either memr_choice
(human | llm | tie) or memr_h and memr_l, optionally group (e.g. the model) and page; a tie counts
for both sides. Writes OUT/agents_bench/kappa/kappa.parquet.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from udfs.runtime.job import Job  # noqa: E402

log = logging.getLogger("llm4schema.agents_bench")
COMMANDS = ("build", "run", "kappa")


class AgentsBenchJob(Job):
    name = "agents_bench"
    table = "agents_bench"
    description = __doc__
    input_help = ("build: the schema.org examples file; run: the ground_truth folder written by build; "
                  "kappa: a votes table (CSV or Parquet)")

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("command", choices=COMMANDS)
        g = p.add_argument_group("build")
        g.add_argument("--seed", type=int, default=42, help="seed of every choice (negatives, subsets)")
        g.add_argument("--distant-max", type=float, default=0.25,
                       help="two properties are semantically distant below this embedding cosine")
        g.add_argument("--max-value-chars", type=int, default=300, help="longer values are rejected")
        g.add_argument("--keep-unstated", dest="require_stated", action="store_false",
                       help="positives also where the example text does not state the value verbatim")
        g = p.add_argument_group("run")
        g.add_argument("--tasks", nargs="+", default=["intrinsic", "extrinsic", "compliance"],
                       choices=["intrinsic", "extrinsic", "compliance"])
        g.add_argument("--limit", type=int, default=40, help="items per task, half positive (0: all)")
        g.add_argument("--models", nargs="*", default=[], help="verdict models; several vote (majority); "
                       "empty: the first model the service lists")
        g.add_argument("--judge-model", default=None, help="breaks ties between several --models")
        g.add_argument("--strategy", default="direct", choices=["direct", "guided", "fewshot"])
        g.add_argument("--factuality-threshold", type=float, default=0.5)
        g.add_argument("--compliance-threshold", type=float, default=0.5)
        g.add_argument("--batch-size", type=int, default=8, help="items judged per results part")
        g.add_argument("--base-url", default="", help="OpenAI-compatible endpoint; default: conf/serving.toml's")
        g.add_argument("--cache", default="", help="request cache (SQLite); default <output>/cache/llm.sqlite")
        g.add_argument("--timeout-s", type=float, default=600.0, help="per model request")
        g.add_argument("--concurrency", type=int, default=1,
                       help="requests in flight per model; 1 asks one claim at a time so latency_s is the time "
                       "of one verdict (with more, it includes the wait behind the others); more suits a "
                       "batching engine (vLLM on a GPU)")
        g.add_argument("--overwrite", action="store_true", help="drop this configuration's earlier verdicts")

    @property
    def table_dir(self) -> Path:
        root = self.output_root / self.table
        cmd = self.args.command
        if cmd == "build":
            return root / "ground_truth"
        if cmd == "kappa":
            return root / "kappa"
        return root / "results" / self._config_name

    def run(self) -> None:
        logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request drowns the progress
        getattr(self, f"_{self.args.command}")()

    # ---- build ---------------------------------------------------------------------------------
    def _build(self) -> None:
        import pyarrow.parquet as pq

        from udfs.agents.verdicts import load_examples
        from udfs.bench.runner import COMPLIANCE_SCHEMA, FACTUALITY_SCHEMA, to_table
        from udfs.bench.groundtruth import PAPER_COUNTS, build_ground_truth
        from udfs.schemaorg.vocab import load_vocabulary

        a = self.args
        # the examples file is read as it is (resolve_inputs would take a .txt for a manifest)
        paths = [Path(x) for x in a.input]
        missing = [str(x) for x in paths if not x.is_file()]
        if missing:
            raise SystemExit(f"--input: no such examples file: {', '.join(missing)}")
        vocab = load_vocabulary()
        examples = []
        for path in paths:
            text = Path(path).read_text(encoding="utf-8")
            self.record.count("example_blocks", self.record["counters"].get("example_blocks", 0)
                              + sum(line.startswith("TYPES:") for line in text.splitlines()))
            examples.extend(load_examples(str(path)))
        self.record.count("examples_without_text_or_jsonld", self.record["counters"]["example_blocks"] - len(examples))
        with self.record.time("build"):
            built = build_ground_truth(examples, vocab, seed=a.seed, distant_max=a.distant_max,
                                       max_value_chars=a.max_value_chars, require_stated=a.require_stated)
        self.clear_outputs()
        (self.rejects_dir / "build.jsonl").unlink(missing_ok=True)
        self.table_dir.mkdir(parents=True, exist_ok=True)
        pq.write_table(to_table(built.factuality, FACTUALITY_SCHEMA), self.table_dir / "factuality.parquet")
        pq.write_table(to_table(built.compliance, COMPLIANCE_SCHEMA), self.table_dir / "compliance.parquet")
        if built.rejects:
            self.rejects_dir.mkdir(parents=True, exist_ok=True)
            with open(self.rejects_dir / "build.jsonl", "w") as fh:
                for r in built.rejects:
                    fh.write(json.dumps(r) + "\n")
        for k, v in built.counters.items():
            self.record.count(k, v)
        counts = built.counts()
        self.record["counts"] = {f"{t}/{k}": n for (t, k), n in counts.items()}
        self.record["vocabulary"] = vocab.release
        lines = [f"Ground truth from {len(examples)} schema.org {vocab.release} examples (seed {a.seed}, "
                 f"distant below cosine {a.distant_max})", "",
                 "| agent | class | items | paper |", "|---|---|---|---|"]
        for (t, k), n in counts.items():
            lines.append(f"| {t} | {k} | {n} | {PAPER_COUNTS.get((t, k), '')} |")
        print("\n".join(lines))

    # ---- run -----------------------------------------------------------------------------------
    @property
    def _config_name(self) -> str:
        if not hasattr(self, "_cfg_name"):
            from udfs.bench.runner import VerdictConfig

            a = self.args
            self._cfg_name = VerdictConfig(a.models or ["default"], a.strategy, a.factuality_threshold,
                                           a.compliance_threshold, a.judge_model).name
        return self._cfg_name

    def _run(self) -> None:
        import pyarrow.dataset as pads
        import pyarrow.parquet as pq

        from udfs.bench import runner as ab
        from udfs.bench.groundtruth import TASKS, stratified_subset
        from udfs.agents.verdicts import voter_model_and_strategy
        from udfs.llm.client import LLMClient
        from udfs.llm.serving import base_url, load_serving_conf

        a = self.args
        t0 = time.monotonic()
        url = a.base_url or base_url(load_serving_conf())
        models = a.models or [_first_model(url)]
        cfg = ab.VerdictConfig(models, a.strategy, a.factuality_threshold, a.compliance_threshold, a.judge_model)
        self._cfg_name = cfg.name  # the results folder names the model actually asked
        if len(models) > 1 and not a.judge_model:
            log.warning("several models and no --judge-model: ties stay undecided (no verdict)")
        cache = a.cache or str(self.output_root / "cache" / "llm.sqlite")
        gt = Path(a.input[0])
        missing = [str(gt / f"{t}.parquet") for t in ("factuality", "compliance") if not (gt / f"{t}.parquet").is_file()]
        if missing:
            raise SystemExit(f"--input {gt}: not a ground_truth folder (no {', '.join(missing)}); run build first")
        tables = {agent: pads.dataset(str(gt / f"{agent}.parquet"), format="parquet").to_table().to_pylist()
                  for agent in ("factuality", "compliance")}
        # The items of each task (a seeded, stratified subset), then each agent's distinct items.
        task_items: dict[str, list[dict]] = {}
        for task in a.tasks:
            agent, neg = TASKS[task]
            task_items[task] = stratified_subset(tables[agent], ("positive", neg), a.limit, a.seed)
        todo: dict[str, dict[str, dict]] = {"factuality": {}, "compliance": {}}
        for task, items in task_items.items():
            for it in items:
                todo[TASKS[task][0]].setdefault(it["item_id"], it)
        out = self.table_dir
        parts = out / "verdicts"
        if a.overwrite and parts.exists():
            import shutil

            shutil.rmtree(parts)
        parts.mkdir(parents=True, exist_ok=True)
        done = {}
        if any(parts.glob("part-*.parquet")):
            for r in pads.dataset(str(parts), format="parquet").to_table().to_pylist():
                if r["score"] is not None:
                    done[(r["agent"], r["item_id"])] = r
        c = {"items": sum(len(v) for v in todo.values()), "already_judged": 0}
        pending = {agent: [it for iid, it in d.items() if (agent, iid) not in done] for agent, d in todo.items()}
        c["already_judged"] = c["items"] - sum(len(v) for v in pending.values())
        clients = {m: LLMClient(url, m, cache_path=cache, timeout_s=a.timeout_s,
                                max_concurrency=a.concurrency)
                   for m in dict.fromkeys(voter_model_and_strategy(v, a.strategy)[0]
                                          for v in [*models, *([a.judge_model] if a.judge_model else [])])}
        cfg.clients = clients
        cfg.one_at_a_time = a.concurrency <= 1
        self.record["benchmark"] = {"base_url": url, "config": cfg.name, "models": models, "judge": a.judge_model,
                                    "strategy": a.strategy, "limit_per_task": a.limit, "seed": a.seed,
                                    "tasks": {t: len(v) for t, v in task_items.items()}}
        log.info("%d items (%d judged before) for %s", c["items"], c["already_judged"], cfg.name)
        n_part = len(list(parts.glob("part-*.parquet")))
        judged = 0
        with self.record.time("judge"):
            loop = asyncio.new_event_loop()
            try:
                for agent, items in pending.items():
                    for i in range(0, len(items), max(1, a.batch_size)):
                        batch = items[i:i + a.batch_size]
                        rows = loop.run_until_complete(ab.judge_items(cfg, agent, batch))
                        tmp = parts / f".part-{n_part:05d}.parquet.tmp"
                        pq.write_table(ab.to_table(rows, ab.VERDICTS_SCHEMA), tmp)
                        os.replace(tmp, parts / f"part-{n_part:05d}.parquet")
                        n_part += 1
                        judged += len(rows)
                        for r in rows:
                            done[(agent, r["item_id"])] = r
                        log.info("%s: %d/%d judged", agent, min(i + a.batch_size, len(items)), len(items))
            finally:
                for cl in clients.values():
                    loop.run_until_complete(cl.aclose())
                    if cl.cache is not None:
                        cl.cache.close()
                loop.close()
        c["judged_now"] = judged
        c["no_verdict"] = sum(done[(ag, iid)]["score"] is None for ag, d in todo.items() for iid in d)
        # metrics per task over the rows of this run's items
        metrics, sweep, alignment = [], [], []
        verdict_rows = []
        for task, items in task_items.items():
            agent = TASKS[task][0]
            rows = [done[(agent, it["item_id"])] for it in items if (agent, it["item_id"]) in done]
            verdict_rows += [{**r, "task": task} for r in rows]
            m, s, al = ab.task_metrics(cfg.name, task, agent, cfg.threshold(agent), rows, len(models) > 1)
            metrics.append(m)
            sweep += s
            alignment += al
        pq.write_table(ab.to_table(metrics, ab.METRICS_SCHEMA), out / "metrics.parquet")
        pq.write_table(ab.to_table(sweep, ab.SWEEP_SCHEMA), out / "sweep.parquet")
        pq.write_table(ab.to_table(alignment, ab.ALIGNMENT_SCHEMA), out / "alignment.parquet")
        wall = time.monotonic() - t0
        conf = {"name": cfg.name, "models": " + ".join(models), "judge": a.judge_model or "–",
                "strategy": a.strategy, "factuality threshold": a.factuality_threshold,
                "compliance threshold": a.compliance_threshold, "items per task": a.limit or "all", "seed": a.seed}
        ab.plot_precision_recall(sweep, metrics, out / "pr.png")
        md = ab.summary_markdown(conf, metrics, wall)
        (out / "summary.md").write_text(md)
        (out / "summary.html").write_text(ab.summary_html(conf, metrics, "pr.png", wall))
        for k, v in c.items():
            self.record.count(k, v)
        self.record["metrics"] = metrics
        print(md)

    # ---- kappa ---------------------------------------------------------------------------------
    def _kappa(self) -> None:
        import pyarrow.csv as pcsv
        import pyarrow.parquet as pq

        from udfs.bench import metrics as bm
        from udfs.bench.runner import KAPPA_SCHEMA, to_table
        from udfs.runtime.inputs import resolve_inputs

        rows = []
        for path in resolve_inputs(self.args.input, suffixes=(".csv", ".parquet")):
            t = pcsv.read_csv(path) if str(path).endswith(".csv") else pq.read_table(path)
            rows += [(str(path), i, r) for i, r in enumerate(t.to_pylist())]
        groups: dict[str, list[tuple[str, str]]] = {}
        rejects = []
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
                rejects.append({"source": src, "position": i, "reason": str(exc), "raw": json.dumps(r, default=str)[:1000]})
                continue
            groups.setdefault(str(r.get("group") or "all"), []).append((memr, human))
        out = [{"group": g, **bm.kappa_table(v)} for g, v in sorted(groups.items())]
        self.clear_outputs()
        (self.rejects_dir / "kappa.jsonl").unlink(missing_ok=True)
        self.table_dir.mkdir(parents=True, exist_ok=True)
        pq.write_table(to_table(out, KAPPA_SCHEMA), self.table_dir / "kappa.parquet")
        if rejects:
            self.rejects_dir.mkdir(parents=True, exist_ok=True)
            with open(self.rejects_dir / "kappa.jsonl", "w") as fh:
                for r in rejects:
                    fh.write(json.dumps(r) + "\n")
        self.record.count("rows_read", len(rows))
        self.record.count("rows_rejected", len(rejects))
        self.record.count("rows_used", len(rows) - len(rejects))
        self.record["kappa"] = out
        print("| group | pages | rating pairs | MeMR ties | human ties | kappa |\n|---|---|---|---|---|---|")
        for o in out:
            k = "–" if o["kappa"] is None else f"{o['kappa']:.3f}"
            print(f"| {o['group']} | {o['pages']} | {o['pairs']} | {o['ties_memr']} | {o['ties_human']} | {k} |")

    def clear_outputs(self) -> None:
        # Only this subcommand's folder: the ground truth, results and kappa share the job's root.
        import shutil

        if self.table_dir.exists():
            shutil.rmtree(self.table_dir)


def _first_model(url: str) -> str:
    import httpx

    data = httpx.get(f"{url}/models", timeout=30).json().get("data") or []
    if not data:
        raise SystemExit(f"{url}/models lists no model: start the service (python -m udfs.llm.serving start)")
    return data[0]["id"]


if __name__ == "__main__":
    sys.exit(AgentsBenchJob().main())
