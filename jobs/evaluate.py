"""pages/ -> markups/, triples/, scores/: the agents over every usable page (Ray Data + Ray Serve).

    python jobs/evaluate.py --input OUT/pages --output OUT [--limit N] [--generators qwen2.5-coder-1.5b]

The driver plans the run from the input's small columns (``udfs.evaluation.plan``) and hands
units of ``--part-pages`` pages to workers (Ray Data actors, or ``--executor local``) that write
each table in parts with a completion marker: a killed run resumes, answers come from the request
cache. The run is keyed by a hash of every setting that changes an answer; an output holding other
settings' results is refused unless ``--overwrite``. ``--markups TABLE`` judges markups made
elsewhere (docs/jobs/evaluate.md, "Judging stored markups").
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from udfs.agents.calibration import check_calibration
from udfs.corpus.fetch import PAGES
from udfs.evaluation import setup
from udfs.evaluation.plan import pages_contract
from udfs.evaluation.runner import init_ray, run_ray
from udfs.evaluation.stored import STORED_MARKUPS
from udfs.llm.client import LLMError
from udfs.llm.endpoint import add_endpoint_arguments, api_key
from udfs.runtime.inputs import InputReport
from udfs.runtime.io import parquet_dataset
from udfs.runtime.job import Job


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
            help="stored markups judged like generated ones: Parquet or JSON Lines with page_id or page_url, source, "
            "markup; only the pages it names are evaluated (docs/jobs/evaluate.md, 'Judging stored markups')",
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
        add_endpoint_arguments(
            p,
            overwrite_help="drop earlier results instead of resuming (needed when they were made with other settings)",
        )
        p.add_argument("--ray-address", default="", help="existing Ray cluster; default: a local one")

    def preflight(self) -> None:
        """The base's checks, and the judge's calibration file read before any model request."""
        check_calibration(self.args.calibration)
        super().preflight()

    def eval_config(self, models: list[str], stored=(), served: str | None = None):
        """The EvalConfig of this run (``udfs.evaluation.setup.eval_config``)."""
        return setup.eval_config(self, models, list(stored), served)

    def begin_writing(self, digest: str) -> None:
        """The run's settings are known and its writing begins: the lease names the hash."""
        self.writing = True
        self.lease.update(settings_hash=digest)

    def run(self):
        from udfs.evaluation.outcome import evaluation_outcome
        from udfs.evaluation.plan import scan_pages
        from udfs.evaluation.run import evaluate_pages
        from udfs.evaluation.stored import join_markups
        from udfs.llm.serving.config import client_base_url

        a, key = self.args, api_key(self.args)
        url = client_base_url(a.base_url)  # --base-url, else $OPENAI_BASE_URL, else conf/serving.toml's
        if url.startswith("serve://"):  # the driver asks the app's handle too (model listing, tokenizer)
            init_ray(a.ray_address)
        try:
            models, served = setup.endpoint_models(a, self.given, self.sections["judge"], url, key)
        except LLMError as exc:
            self.fail(str(exc))
        report = InputReport()
        ds = parquet_dataset(a.input, report=report)
        self.keep_inputs(report)
        with tempfile.TemporaryDirectory(prefix="llm4schema-markups-") as tmp:
            with self.record.time("plan"):
                scan, found = scan_pages(ds, index=bool(a.markups)), None
                if a.markups:
                    found = join_markups(a.markups, scan.index, Path(tmp) / "markups.parquet", reserved=tuple(models))
                    scan.index = None  # joined: the driver keeps only the plan's rows
            cfg = self.eval_config(models, found.sources if found else [], served=served)
            opts = setup.run_options(a, url, key)
            counters = evaluate_pages(
                self.output_root, self.rejects_dir, self.record, cfg, scan, found, opts, markups_table=a.markups,
                ray_run=self._ray, on_settings=self.begin_writing,
            )  # fmt: skip
        return evaluation_outcome(counters, self.record.data, self.rejects_dir)

    def _ray(self, units: list[dict], ctor: dict, progress) -> list[dict]:
        init_ray(self.args.ray_address)
        return run_ray(units, ctor, progress, workers=self.args.workers)


if __name__ == "__main__":
    sys.exit(EvaluateJob().main())
