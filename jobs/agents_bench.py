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

build writes OUT/agents_bench/ground_truth/; run writes OUT/agents_bench/results/<config>/ (verdicts in
parts: a killed run resumes, answers come from the request cache; metrics, sweep, summary, with
--correct GraphCorrect against the true values); calibrate fits each agent's threshold and isotonic
map on a seeded fit split (figures on the test split), --install writes them into --calibration;
kappa writes OUT/agents_bench/kappa/. The judge is [judge]'s, built as jobs/evaluate.py builds it.
docs/jobs/agents-bench.md says more.
"""

from __future__ import annotations

import argparse
import logging
import sys

from udfs.agents_bench import setup
from udfs.agents_bench.runner import GROUND_TRUTH, VOTES
from udfs.llm.endpoint import add_endpoint_arguments
from udfs.runtime.io import Folder
from udfs.runtime.job import Job

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
        add_endpoint_arguments(run, overwrite_help="drop this configuration's earlier verdicts")
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

    verdicts = None  # the verdict configuration a run settled on, once it asked the service

    def verdict_config(self, models: list[str] | None = None):
        """The verdict configuration of the flags (``udfs.agents_bench.setup``); once a run has asked
        the service for its model, that configuration (and results folder) is the run's."""
        return self.verdicts if models is None and self.verdicts is not None else setup.verdict_config(self, models)

    def run(self) -> None:
        from udfs.agents_bench.commands import BenchInputError

        logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request drowns the progress
        try:
            report = setup.run_step(self)
        except BenchInputError as exc:
            self.fail(str(exc))
        for k, v in report.counters.items():
            self.record.count(k, v)
        for k, v in report.facts.items():
            self.record[k] = v
        print(report.text)


if __name__ == "__main__":
    sys.exit(AgentsBenchJob().main())
