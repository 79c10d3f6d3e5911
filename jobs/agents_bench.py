"""How far each verdict agent can be trusted: ground truth from the schema.org examples, and the
precision / recall / F1 of any verdict configuration on it (the paper's Tables 1-4), plus Cohen's
kappa of MeMR against human votes (Table 9).

    python jobs/agents_bench.py build --input data/schemaorg-30.0/schemaorg-all-examples.txt --output OUT
           [--intrinsic distant|paper]
    python jobs/agents_bench.py run   --input OUT/agents_bench/ground_truth --output OUT [--limit 40] [--correct]
           [--verdict-models m1 [m2 m3 --judge-model j]] [--strategy direct|guided|fewshot]
           [--factuality-threshold 0.5] [--compliance-threshold 0.5] [--calibration conf/calibration.json]
    python jobs/agents_bench.py calibrate --input OUT/agents_bench/ground_truth --output OUT [run's flags]
           [--fit-fraction 0.5] [--calibration conf/calibration.json] [--install]
    python jobs/agents_bench.py kappa --input votes.csv --output OUT

build: OUT/agents_bench/ground_truth/{factuality,compliance}.parquet (udfs/agents_bench/groundtruth.py);
--intrinsic paper makes the intrinsic negatives by the paper authors' rule.
run: OUT/agents_bench/results/<config>/ verdicts/ (one part per batch: a killed run resumes from
its parts, and answers come from the request cache OUT/cache/llm.sqlite), metrics.parquet,
sweep.parquet, alignment.parquet, summary.md, summary.html, pr.png; with --correct, GraphCorrect on
every factuality item the judge flagged (parts in corrections/, resumed the same way) measured against
the ground truth's true_value: correction.parquet and a section of summary.md. --limit N takes N items per
task, half positives and half negatives, the same seeded picks every time. The judge is [judge]'s,
built as jobs/evaluate.py builds it (udfs.agents.judge.build_judge), so the benchmark measures the
judge the evaluation runs; the run record's judge block says where each threshold came from.
calibrate: a run (resumed: nothing asked twice), then per agent the threshold (max F1) and an
isotonic score-to-probability map fitted on a seeded fit split of the example texts, P/R/F1/AUROC
on the test split, from the raw scores (its run takes no calibration entry); the entries go to
results/<config>/calibration.{json,md}, and with --install into --calibration too (the file
jobs/evaluate.py reads; other entries there kept); without it the command that installs them is
printed.
run and calibrate take the folder build writes or any Parquet file with text, property, value,
entity_type, label (bool), kind and optionally definition.
kappa: a votes table (CSV or Parquet) with human_vote (human | llm | tie) and either memr_choice
(human | llm | tie) or memr_h and memr_l, optionally group (e.g. the model) and page; a tie counts
for both sides. Writes OUT/agents_bench/kappa/kappa.parquet.
"""

from __future__ import annotations

import argparse
import logging
import sys

from udfs.agents_bench.runner import GROUND_TRUTH, VOTES
from udfs.runtime.io import Folder, local_state_dir
from udfs.runtime.job import Job

log = logging.getLogger("llm4schema.agents_bench")
COMMANDS = ("build", "run", "calibrate", "kappa")
USAGE = __doc__  # the module's: inside the class body __doc__ is the class's own


class AgentsBenchJob(Job):
    """Flags and wiring only: each subcommand is one step of ``udfs.agents_bench.commands``."""

    name = "agents_bench"
    input_contracts = {
        "input": lambda args: {"run": GROUND_TRUTH, "calibrate": GROUND_TRUTH, "kappa": VOTES}.get(args.command)
    }
    table = "agents_bench"
    description = USAGE
    input_help = (
        "build: the schema.org examples file; run, calibrate: the ground_truth folder written by "
        "build, or any Parquet ground truth; kappa: a votes table (CSV or Parquet)"
    )
    shared_sections = ("judge",)

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "command",
            choices=COMMANDS,
            help="build the ground truth, run a verdict configuration "
            "on it, calibrate its thresholds on a fit split (figures on the test split), or compute "
            "MeMR's kappa against human votes",
        )
        build, run = self.argument_group(p, "build"), self.argument_group(p, "run")
        build.add_argument(
            "--keep-unstated",
            action=argparse.BooleanOptionalAction,
            default=False,
            help="positives also where the example text does not state the value verbatim",
        )
        run.add_argument(
            "--correct",
            action=argparse.BooleanOptionalAction,
            default=False,
            help="run: then GraphCorrect (the evaluation's --correct) on every factuality item the judge flagged, "
            "measured against the ground truth's true values: correction.parquet, a section of summary.md",
        )
        run.add_argument(
            "--base-url",
            default="",
            help="OpenAI-compatible endpoint; default: $OPENAI_BASE_URL, else conf/serving.toml's service",
        )
        run.add_argument(
            "--api-key",
            default=None,
            help="the endpoint's key, sent as a bearer token and never "
            "written (run record, logs, cache); default: $OPENAI_API_KEY",
        )
        run.add_argument(
            "--cache",
            default="",
            help="request cache (SQLite); default <output>/cache/llm.sqlite, or for a remote --output "
            "(s3://...) a local folder: $LLM4SCHEMA_STATE_DIR or ~/.cache/llm4schema, one per root",
        )
        run.add_argument(
            "--overwrite",
            action=argparse.BooleanOptionalAction,
            default=False,
            help="drop this configuration's earlier verdicts",
        )
        self.argument_group(p, "calibrate (and every run flag)").add_argument(
            "--install",
            action=argparse.BooleanOptionalAction,
            default=False,
            help="also write the fitted entries into --calibration (replacing entries of the same key, keeping "
            "the others); without it they go to the results folder only, and the command to install them is printed",
        )

    @property
    def table_dir(self) -> Folder:
        root = self.output_root / self.table
        cmd = self.args.command
        if cmd == "build":
            return root / "ground_truth"
        if cmd == "kappa":
            return root / "kappa"
        return root / "results" / self.verdict_config().name

    def run(self) -> None:
        from udfs.agents_bench.commands import BenchInputError

        logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request drowns the progress
        try:
            report = getattr(self, f"_{self.args.command}")()
        except BenchInputError as exc:
            self.fail(str(exc))
        for k, v in report.counters.items():
            self.record.count(k, v)
        for k, v in report.facts.items():
            self.record[k] = v
        print(report.text)

    def _build(self):
        from udfs.agents_bench import commands

        a = self.args
        return commands.build(
            a.input,
            self.table_dir,
            self.rejects_dir,
            seed=a.seed,
            distant_max=a.distant_max,
            intrinsic=a.intrinsic,
            max_value_chars=a.max_value_chars,
            require_stated=not a.keep_unstated,
            scores=self.config.scores,
            timer=self.record.time,
        )

    def verdict_config(self, models: list[str] | None = None):
        """The verdict configuration of the flags; ``models`` replaces --verdict-models. ``run``
        judges with the judge the evaluation builds (the benchmark measures the judge that runs);
        ``calibrate`` with no calibration entry taken (it fits the thresholds on the raw scores). Once a run has asked the service for its model, that
        configuration (and results folder) is the run's."""
        from udfs.agents.judge import build_judge
        from udfs.agents_bench.runner import VerdictConfig

        if models is None and getattr(self, "_verdicts", None) is not None:
            return self._verdicts
        a = self.args
        voters = models or a.verdict_models or ["default"]
        try:
            judge = build_judge(
                self.sections["judge"],
                config_file=self.config.path,
                given=self.given,
                served_model=voters[0],
                apply_calibration=a.command == "run",
            )
        except ValueError as exc:
            self.fail(str(exc))
        return VerdictConfig(list(voters), judge)

    def _run(self):
        from udfs.agents_bench import commands

        kw = self._run_arguments()
        return commands.run(
            kw.pop("ground_truth"),
            kw.pop("out"),
            kw.pop("cfg"),
            held_out_after=self.args.held_out_after,
            correct=self.args.correct,
            scores=self.config.scores,
            **kw,
        )

    def _run_arguments(self) -> dict:
        """The arguments of ``udfs.agents_bench.commands.run`` from the flags (asking the service for its
        model when no --verdict-models names one)."""
        from udfs.llm.client import LLMError, first_model
        from udfs.llm.serving.config import client_base_url

        a = self.args
        url = client_base_url(a.base_url)
        try:
            self._verdicts = self.verdict_config(
                a.verdict_models or [first_model(url, timeout_s=30, api_key=a.api_key)]
            )
        except LLMError as exc:
            self.fail(str(exc))
        if len(self._verdicts.models) > 1 and not a.judge_model:
            log.warning("several models and no --judge-model: ties stay undecided (no verdict)")
        # SQLite needs a real disk: under a remote root the cache is a local folder (local_state_dir)
        cache = a.cache or str(local_state_dir(self.output_root, "cache") / "llm.sqlite")
        return dict(
            ground_truth=Folder(a.input[0]),
            out=self.table_dir,
            cfg=self._verdicts,
            base_url=url,
            cache_path=cache,
            tasks=a.tasks,
            limit=a.limit,
            seed=a.seed,
            batch_size=a.batch_size,
            timeout_s=a.timeout_s,
            concurrency=a.concurrency,
            overwrite=a.overwrite,
            timer=self.record.time,
            api_key=a.api_key,
        )

    def _calibrate(self):
        from udfs.agents_bench import commands

        if not self.args.calibration:
            self.fail('calibrate writes its entries to --calibration: give a file ("" names none)')
        if self.args.held_out_after:
            self.fail("--held-out-after is run's: calibrate fits and measures on its own --limit items")
        if self.args.correct:
            self.fail("--correct is run's: calibrate fits the thresholds, it measures no correction")
        kw = self._run_arguments()
        return commands.calibrate(
            kw.pop("ground_truth"),
            kw.pop("out"),
            kw.pop("cfg"),
            calibration_file=self.args.calibration,
            install=self.args.install,
            fit_fraction=self.args.fit_fraction,
            **kw,
        )

    def _kappa(self):
        from udfs.agents_bench import commands

        return commands.kappa(self.args.input, self.table_dir, self.rejects_dir)


if __name__ == "__main__":
    sys.exit(AgentsBenchJob().main())
