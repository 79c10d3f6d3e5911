"""pages/ -> markups/, triples/, scores/: the agents over every usable page (Ray Data + Ray Serve).

    python jobs/evaluate.py --input OUT/pages --output OUT [--limit N] [--generators qwen2.5-coder-1.5b]

The driver plans the run from the input's small columns without holding the pages
(``udfs.evaluation.plan``: dedup of pages sampled in several strata, ``--order``, ``--limit``,
pages already done), then hands units of ``--part-pages`` pages to workers (Ray Data actors, or
this process with ``--executor local``) that read their own rows, evaluate many pages at once
with up to ``--max-in-flight`` model requests outstanding, and write each table in parts with a
completion marker (``udfs.evaluation.runner``, ``udfs.evaluation.parts``). A killed run resumes:
committed parts are kept, the parts in flight are redone with answers from the request cache
(``<output>/cache/llm.sqlite``). The run is keyed by a hash of every setting that changes an
answer; an output holding other settings' results is refused unless ``--overwrite``.

``--markups TABLE`` judges markups made elsewhere beside (or instead of) generated ones
(``udfs.evaluation.stored``; docs/jobs/evaluate.md, "Judging stored markups").
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from udfs.corpus.fetch import PAGES
from udfs.evaluation.plan import pages_contract
from udfs.evaluation.stored import STORED_MARKUPS
from udfs.runtime.job import Job

log = logging.getLogger("llm4schema.evaluate")


class EvaluateJob(Job):
    input_contracts = {"input": pages_contract(PAGES), "markups": STORED_MARKUPS}
    name = "evaluate"
    table = "scores"
    outputs = ("markups", "triples", "scores")
    next_step = "llm4schema-report --input {output}/scores --output {output}"
    description = __doc__
    input_help = "the pages/ table (jobs/pages.py), or any Parquet with page_url, text, human_markup, root_types"
    shared_sections = ("judge",)

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--markups",
            default="",
            help="stored markups to judge like generated ones: Parquet (file or folder) or JSON Lines (.jsonl) with "
            "columns page_id or page_url, source, markup (JSON-LD text). page_id joins to the pages table's page_id "
            "column where it has one, else to the page key (udfs.evaluation.evaluator.page_key(page_url, "
            "human_markup), the page_key of the outputs); without a page_id column, page_url joins to the pages' URL. "
            "Source 'human' replaces the page's own human markup. Only the pages the table names are evaluated; "
            "unusable rows go to rejects/evaluate/markups.parquet with their reason",
        )
        p.add_argument(
            "--generation",
            action=argparse.BooleanOptionalAction,
            default=True,
            help="generate model markup; --no-generation judges the human markup only",
        )
        p.add_argument(
            "--correct",
            action=argparse.BooleanOptionalAction,
            default=False,
            help="GraphCorrect: correct non-factual claims from the text and re-verify (corrected triples are marked)",
        )
        self.add_service_arguments(p)

    @staticmethod
    def add_service_arguments(p: argparse.ArgumentParser) -> None:
        """Where the model service is and how the work is spread: none of it changes an answer."""
        p.add_argument(
            "--base-url",
            default="",
            help="OpenAI-compatible endpoint; default: $OPENAI_BASE_URL, "
            "else conf/serving.toml's; serve://APP/v1 calls the Ray Serve app APP through its deployment "
            "handle, without Serve's HTTP proxy (the job joins its cluster: --ray-address)",
        )
        p.add_argument(
            "--api-key",
            default="",
            help="bearer token for a hosted endpoint; default $OPENAI_API_KEY; never written to the run record or logs",
        )
        p.add_argument(
            "--cache",
            default="",
            help="request cache (SQLite); default <output>/cache/llm.sqlite, or for a remote --output "
            "(s3://...) a local folder: $LLM4SCHEMA_STATE_DIR or ~/.cache/llm4schema, one per root",
        )
        p.add_argument("--ray-address", default="", help="existing Ray cluster; default: a local one")
        p.add_argument(
            "--overwrite",
            action=argparse.BooleanOptionalAction,
            default=False,
            help="drop earlier results instead of resuming (needed when they were made with other settings)",
        )

    def preflight(self) -> None:
        """The base's checks, and the judge's calibration file read before any model request."""
        from udfs.agents.calibration import check_calibration

        check_calibration(self.args.calibration)
        super().preflight()

    def eval_config(self, models: list[str], stored: list[str] = (), served: str | None = None):
        """The EvalConfig of this run: the flags (defaults: [evaluate], [judge]), the judge
        (``udfs.agents.judge.build_judge``: each threshold with where it came from), the validity agent
        of [validity] and the scores' settings of [scores]; ``models`` generate markup, ``stored``
        are the sources of ``--markups`` (``human`` among them replaces the human markup, not a source);
        ``served`` is the service's default model, which answers the verdicts when [judge]
        verdict_models names none (its calibration entry applies)."""
        from udfs.agents.judge import build_judge
        from udfs.evaluation.evaluator import HUMAN, EvalConfig

        a, v = self.args, self.config.validity
        try:
            judge = build_judge(
                self.sections["judge"], config_file=self.config.path, given=self.given, served_model=served
            )
            return EvalConfig(
                stages=list(a.stages),
                judge=judge,
                context_window=a.context_window,
                max_tokens=a.max_tokens,
                max_claims=a.max_claims,
                early_exit=a.early_exit,
                validity_engine=v.engine,
                validity_strict=v.strict,
                validity_vocab=v.vocab,
                validity_mode=v.mode,
                scores=self.config.scores,
                models=list(models),
                sources=[HUMAN, *models, *(s for s in stored if s != HUMAN)],
                correction=a.correct,
                repeats=a.repeats,
                temperature=a.temperature,
            )
        except ValueError as exc:
            self.fail(str(exc))

    def run(self) -> None:
        import os
        import tempfile

        from udfs.evaluation.plan import scan_pages
        from udfs.llm.client import LLMError, first_model
        from udfs.llm.serving.config import client_base_url
        from udfs.runtime.inputs import InputReport
        from udfs.runtime.io import parquet_dataset

        a = self.args
        api_key = a.api_key or os.environ.get("OPENAI_API_KEY") or ""
        url = client_base_url(a.base_url)  # --base-url, else $OPENAI_BASE_URL, else conf/serving.toml's
        if url.startswith("serve://"):  # the driver asks the app's handle too (model listing, tokenizer)
            self._ray_init()
        # --markups alone judges what it is given: models generate only when --generators is given
        generate = a.generation and (not a.markups or "generators" in self.given)
        try:
            models = [] if not generate else (a.generators or [first_model(url, timeout_s=30, api_key=api_key or None)])
        except LLMError as exc:
            self.fail(str(exc))

        report = InputReport()
        ds = parquet_dataset(a.input, report=report)
        self.keep_inputs(report)
        # The service's default model answers the verdicts when [judge] verdict_models names none,
        # generating or not: its id is what the calibration entries are keyed by.
        served = models[0] if generate and not a.generators else None
        if (
            served is None
            and not self.sections["judge"].verdict_models
            and {"factuality", "compliance"} & set(a.stages)
        ):
            try:
                served = first_model(url, timeout_s=30, api_key=api_key or None)
            except LLMError as exc:
                self.fail(str(exc))
        with tempfile.TemporaryDirectory(prefix="llm4schema-markups-") as tmp:
            with self.record.time("plan"):
                scan = scan_pages(ds, index=bool(a.markups))
                found_markups = None
                if a.markups:
                    from udfs.evaluation.stored import join_markups

                    found_markups = join_markups(
                        a.markups, scan.index, Path(tmp) / "markups.parquet", reserved=tuple(models)
                    )
                    scan.index = None  # joined: the driver keeps only the plan's rows
            return self._evaluate(scan, found_markups, models, served, url, api_key)

    def _evaluate(self, scan, found_markups, models: list[str], served: str | None, url: str, api_key: str) -> None:
        from udfs.evaluation.run import RunOptions, evaluate_pages

        a = self.args
        cfg = self.eval_config(models, found_markups.sources if found_markups else [], served=served)
        opts = RunOptions(
            limit=a.limit,
            order=a.order,
            executor=a.executor,
            workers=a.workers,
            part_pages=a.part_pages,
            part_rows=a.part_rows,
            base_url=url,
            api_key=api_key,
            timeout_s=a.timeout_s,
            max_in_flight=a.max_in_flight,
            cache=a.cache,
            overwrite=a.overwrite,
        )
        from udfs.evaluation.outcome import evaluation_outcome

        counters = evaluate_pages(
            self.output_root,
            self.rejects_dir,
            self.record,
            cfg,
            scan,
            found_markups,
            opts,
            markups_table=a.markups,
            ray_run=self._ray,
        )
        return evaluation_outcome(counters, self.record.data, self.rejects_dir)

    def _ray(self, units: list[dict], ctor: dict, progress) -> list[dict]:
        from udfs.evaluation.runner import run_ray

        self._ray_init()
        return run_ray(units, ctor, progress, workers=self.args.workers)

    def _ray_init(self) -> None:
        import ray

        if not ray.is_initialized():
            # Ray's INFO start-up lines say nothing a researcher acts on; warnings still show.
            ray.init(
                address=self.args.ray_address or None,
                include_dashboard=False,
                log_to_driver=False,
                logging_level=logging.WARNING,
                runtime_env={"env_vars": {"PYTHONPATH": str(Path(__file__).resolve().parents[1])}},
            )


if __name__ == "__main__":
    sys.exit(EvaluateJob().main())
