"""pages/ -> markups/, triples/, scores/: the agents over every usable page (Ray Data + Ray Serve).

    python jobs/evaluate.py --input OUT/pages --output OUT [--limit N] [--generators qwen2.5-coder-1.5b]

Each page (a ``page_key``: page URL + human markup) is evaluated by ``udfs.evaluation.evaluator`` and
written as its own Parquet part in each table, scores last; a page whose scores part exists is
skipped, so a killed run resumes where it stopped, and model answers come from the request cache
(``<output>/cache/llm.sqlite``). ``--executor local`` runs the same code in this process without
Ray (debugging, tiny runs).
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from udfs.agents.prompts import STRATEGIES  # noqa: E402
from udfs.runtime.io import Folder  # noqa: E402
from udfs.runtime.job import Job  # noqa: E402
from udfs.runtime.progress import Progress, quiet_ray_data  # noqa: E402
from udfs.runtime.rejects import FIXED_RAW_CHARS, reject_row  # noqa: E402

log = logging.getLogger("llm4schema.evaluate")
TABLES = ("markups", "triples", "scores")


class EvaluatePages:
    """Ray Data ``map_batches`` callable: evaluates each page of the batch, writes its parts, and
    returns one summary row per page (key, status, seconds) for progress and the run record."""

    def __init__(self, output: str, base_url: str, cfg, cache_path: str, client_kwargs: dict):
        from udfs.evaluation.evaluator import PageEvaluator

        self.output = Folder(output)
        self.evaluator = PageEvaluator(base_url, cfg, cache_path=cache_path, client_kwargs=client_kwargs)

    def __call__(self, batch: dict) -> dict:
        import time

        keys = list(batch["page_key"])
        statuses, reasons, seconds, triples = [], [], [], []
        for i in range(len(keys)):
            page = {k: _plain(batch[k][i]) for k in batch}
            t0 = time.monotonic()
            try:
                result = self.evaluator.evaluate(page)
                write_page(self.output, page["page_key"], result)
                statuses.append("ok")
                triples.append(len(result["triples"]))
                reasons.append(";".join(f"{s['source']}:{s['status']}" for s in result["scores"]))
            except Exception as exc:  # one page's failure is that page's record, not the run's end
                log.exception("page %s failed", page["page_url"])
                statuses.append("error")
                triples.append(0)
                reasons.append(f"{type(exc).__name__}: {str(exc)[:500]}")
            seconds.append(time.monotonic() - t0)
        return {"page_key": keys, "page_url": list(batch["page_url"]), "status": statuses,
                "reason": reasons, "seconds": seconds, "triples": triples}


def _plain(v):
    return v.tolist() if hasattr(v, "tolist") else v


def write_page(output: Folder, key: str, result: dict) -> None:
    """One part per page per table under the output root (local or remote), each written atomically
    (Folder.write_parquet); scores last, so a scores part means the page is complete (the resume
    test)."""
    from udfs.evaluation.evaluator import MARKUPS_SCHEMA, SCORES_SCHEMA, TRIPLES_SCHEMA, to_table

    for table, schema in (("markups", MARKUPS_SCHEMA), ("triples", TRIPLES_SCHEMA), ("scores", SCORES_SCHEMA)):
        (Folder.of(output) / table).write_parquet(f"part-{key}.parquet", to_table(result[table], schema))


class EvaluateJob(Job):
    name = "evaluate"
    table = "scores"
    outputs = ("markups", "triples", "scores")
    next_step = "llm4schema-report --input {output}/scores --output {output}"
    description = __doc__
    input_help = "the pages/ table (jobs/pages.py), or any Parquet with page_url, text, human_markup, root_types"

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("--limit", type=int, help="pages evaluated at most, in --order (0: all)")
        p.add_argument("--order", choices=["sample", "shortest"],
                       help="which pages a --limit keeps: sample order (rank, feature, stratum), or shortest "
                       "text first (a bounded CPU demo)")
        p.add_argument("--generators", nargs="*", help="model ids on the service that generate markup "
                       "(each is a source beside 'human'); empty: the first model the service lists")
        p.add_argument("--generation", action=argparse.BooleanOptionalAction, default=True,
                       help="generate model markup; --no-generation judges the human markup only")
        p.add_argument("--stages", nargs="+", help="agents run, in this order of the pipeline")
        p.add_argument("--strategy", choices=STRATEGIES,
                       help="FactCheck verdict strategy")
        p.add_argument("--factuality-threshold", type=float, help="a claim is factual at this score or above")
        p.add_argument("--compliance-threshold", type=float, help="a claim is compliant at this score or above")
        p.add_argument("--verdict-models", nargs="*",
                       help="models that judge; several: majority vote with --judge-model breaking ties")
        p.add_argument("--judge-model", default=None, help="breaks ties between several --verdict-models")
        p.add_argument("--context-window", type=int, help="tokens per request (the served n_ctx)")
        p.add_argument("--max-tokens", type=int, help="most tokens of one generated markup")
        p.add_argument("--max-claims", type=int,
                       help="distinct claims judged per markup and agent (0: all); the rest are recorded as not judged")
        p.add_argument("--correct", action=argparse.BooleanOptionalAction, default=False, help="GraphCorrect: correct non-factual claims "
                       "from the text and re-verify (corrected triples are marked)")
        p.add_argument("--base-url", default="", help="OpenAI-compatible endpoint; default: conf/serving.toml's")
        p.add_argument("--cache", default="", help="request cache (SQLite); default <output>/cache/llm.sqlite, or for a remote --output "
                       "(s3://...) a local folder: $LLM4SCHEMA_STATE_DIR or ~/.cache/llm4schema, one per root")
        p.add_argument("--executor", choices=["ray", "local"], help="ray: Ray Data actors; local: this process")
        p.add_argument("--workers", type=int, help="concurrent page evaluators (Ray actors)")
        p.add_argument("--ray-address", default="", help="existing Ray cluster; default: a local one")
        p.add_argument("--overwrite", action=argparse.BooleanOptionalAction, default=False,
                       help="drop earlier results instead of resuming")
        p.add_argument("--timeout-s", type=float, help="per model request")

    def eval_config(self, models: list[str]):
        """The EvalConfig of this run: the flags (defaults: [evaluate]), the validity agent of
        [validity] and the scores' settings of [scores]; ``models`` generate markup."""
        from udfs.evaluation.evaluator import HUMAN, EvalConfig

        a, v = self.args, self.config.validity
        return EvalConfig(stages=list(a.stages), strategy=a.strategy, factuality_threshold=a.factuality_threshold,
                          compliance_threshold=a.compliance_threshold, verdict_models=list(a.verdict_models),
                          context_window=a.context_window, max_tokens=a.max_tokens, max_claims=a.max_claims,
                          validity_engine=v.engine, validity_strict=v.strict, validity_vocab=v.vocab,
                          validity_mode=v.mode,
                          scores=self.config.scores, models=list(models), sources=[HUMAN, *models],
                          judge_model=a.judge_model, correction=a.correct)

    def run(self) -> None:
        import dataclasses

        from udfs.evaluation.evaluator import page_key
        from udfs.runtime.inputs import InputReport
        from udfs.runtime.io import local_state_dir, parquet_dataset
        from udfs.llm.client import LLMError, first_model
        from udfs.llm.serving import base_url, load_serving_conf

        a = self.args
        if a.overwrite:
            for t in TABLES:
                (self.output_root / t).rm()
        url = a.base_url or base_url(load_serving_conf())
        try:
            models = [] if not a.generation else (a.generators or [first_model(url, timeout_s=30)])
        except LLMError as exc:
            self.fail(str(exc), code=1)
        cfg = self.eval_config(models)
        self.record["evaluation"] = {"base_url": url, **dataclasses.asdict(cfg)}

        cols = ["page_url", "status", "text", "human_markup", "root_types"]
        report = InputReport()
        ds = parquet_dataset(a.input, report=report)
        self.keep_inputs(report)
        names = set(ds.schema.names)
        extra = [c for c in ("selected", "feature", "stratum", "sample_rank") if c in names]
        rows = ds.to_table(columns=[c for c in cols if c in names] + extra).to_pylist()
        c = {"input_rows": len(rows)}
        usable = [r for r in rows if r.get("status", "ok") == "ok" and r.get("selected", True) is not False]
        c["not_ok_or_not_selected"] = len(rows) - len(usable)
        # Nothing to generate from or check against: a reject with its reason, not a page of "no"s.
        no_text = [r for r in usable if not (r.get("text") or "").strip()]
        c["no_text"] = len(no_text)
        if no_text:
            self.rejects_dir.write_text("no_text.jsonl", "".join(
                json.dumps(reject_row(r["page_url"], None, "page has no text")) + "\n" for r in no_text))
        usable = [r for r in usable if (r.get("text") or "").strip()]
        usable.sort(key=lambda r: (r.get("sample_rank") or 0, r.get("feature") or "", r.get("stratum") or "",
                                   r["page_url"]))
        if a.order == "shortest":
            usable.sort(key=lambda r: len(r.get("text") or ""))
        units: dict[str, dict] = {}
        for r in usable:
            k = page_key(r["page_url"], r.get("human_markup"))
            units.setdefault(k, {"page_key": k, "page_url": r["page_url"], "text": r.get("text") or "",
                                 "human_markup": r.get("human_markup"),
                                 "root_types": list(r.get("root_types") or [])})
        c["duplicate_rows"] = len(usable) - len(units)
        todo = list(units.values())
        if a.limit:
            c["over_limit"] = max(0, len(todo) - a.limit)
            todo = todo[: a.limit]
        done = {n[len("part-"):-len(".parquet")] for n in (self.output_root / "scores").ls("part-*.parquet")}
        c["already_scored"] = sum(u["page_key"] in done for u in todo)
        todo = [u for u in todo if u["page_key"] not in done]
        log.info("%d pages to evaluate (%d already scored) against %s, sources %s",
                 len(todo), c["already_scored"], url, cfg.sources)
        # SQLite needs a real disk: under a remote root the cache is a local folder (local_state_dir)
        cache = a.cache or str(local_state_dir(self.output_root, "cache") / "llm.sqlite")
        ctor = dict(output=self.output_root.url, base_url=url, cfg=cfg, cache_path=cache,
                    client_kwargs={"timeout_s": a.timeout_s, "max_concurrency": 4})
        summary = []
        if todo:
            with self.record.time("evaluate"):
                summary = self._local(todo, ctor) if a.executor == "local" else self._ray(todo, ctor)
        failed = [s for s in summary if s["status"] != "ok"]
        c["evaluated"] = len(summary) - len(failed)
        c["failed"] = len(failed)
        if failed:
            self.rejects_dir.append_text("failed_pages.jsonl", "".join(
                json.dumps(reject_row(s["page_url"], None, s["reason"], s["page_key"], raw_chars=FIXED_RAW_CHARS)) + "\n"
                for s in failed))
        for k, v in c.items():
            self.record.count(k, v)
        log.info("counters: %s", c)

    def _local(self, todo: list[dict], ctor: dict) -> list[dict]:
        fn = EvaluatePages(**ctor)
        out = []
        with Progress("evaluate", len(todo), "pages") as progress:
            for i, u in enumerate(todo, 1):
                res = fn({k: [u[k]] for k in u})
                row = {k: v[0] for k, v in res.items()}
                self._page_done(progress, i, len(todo), row)
                out.append(row)
        fn.evaluator.close()
        return out

    @staticmethod
    def _page_done(progress: Progress, i: int, n: int, row: dict) -> None:
        """One page's line as it finishes, and the progress display."""
        log.info("[%d/%d] %s %s (%.1f s, %d triples)", i, n, row["status"], row["page_url"], row["seconds"],
                 row["triples"])
        progress.update(1, triples=int(row["triples"]), failed=int(row["status"] != "ok"))

    def _ray(self, todo: list[dict], ctor: dict) -> list[dict]:
        import ray

        if not ray.is_initialized():
            # Ray's INFO start-up lines say nothing a researcher acts on; warnings still show.
            ray.init(address=self.args.ray_address or None, include_dashboard=False, log_to_driver=False,
                     logging_level=logging.WARNING,
                     runtime_env={"env_vars": {"PYTHONPATH": str(Path(__file__).resolve().parents[1])}})
        quiet_ray_data()
        ds = ray.data.from_items(todo).map_batches(
            EvaluatePages, fn_constructor_kwargs=ctor, batch_size=1, num_cpus=0,
            compute=ray.data.ActorPoolStrategy(size=self.args.workers))
        out = []
        # Summary rows only (key, status, seconds): the pages' data stay in their Parquet parts.
        # Each output block (one page: batch_size=1) as it streams out: iter_rows' prefetching
        # held a page's line back until the next page had finished too.
        with Progress("evaluate", len(todo), "pages") as progress:
            for batch in ds.iter_batches(batch_size=None, prefetch_batches=0, batch_format="numpy"):
                for j in range(len(batch["page_key"])):
                    row = {k: _plain(v[j]) for k, v in batch.items()}
                    out.append(row)
                    self._page_done(progress, len(out), len(todo), row)
        return out


if __name__ == "__main__":
    sys.exit(EvaluateJob().main())
