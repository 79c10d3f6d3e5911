"""scores/ (+ triples/, pages/, samples/ and run records under the same root) -> report/: one
self-contained HTML page (run metadata, page funnel, the paper's Tables 7 and 8 beside its figures,
Fig. 10, rejections per property, score distributions, the agents' benchmark when one ran), the
tables as CSV and the Table 7 plot. The work: udfs/report/build.py.

    python jobs/report.py --input OUT/scores --output OUT          # pages from OUT/pages
    python jobs/report.py --input OUT/scores --output OUT --paper BUNDLE   # + the paper's pages
    python jobs/report.py --input A/scores B/scores --output OUT --compare-settings  # each settings hash on its own
"""

from __future__ import annotations

import argparse
import sys

from udfs.corpus.fetch import PAGES
from udfs.evaluation.evaluator import SCORES
from udfs.runtime.closing import Outcome
from udfs.runtime.inputs import InputReport
from udfs.runtime.io import Folder, parquet_dataset
from udfs.runtime.job import Job


class ReportJob(Job):
    input_contracts = {
        "input": SCORES.requiring("n_triples", "n_valid", "n_factual", "n_compliant"),
        "pages": PAGES.reading("page_url", "human_markup", "feature", "stratum", "status", "selected", "text_chars"),
    }
    name = "report"
    table = "report"
    description = __doc__
    input_help = "the scores/ table of jobs/evaluate.py"

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("--pages", default="", help="the pages/ table (feature, stratum); default <output>/pages")
        p.add_argument(
            "--paper",
            default="",
            help="the paper's folder the pages were imported from (jobs/import_pset.py --input: the bundle or a "
            "checkout): adds the section comparing the run with the paper's verdicts, counts and MeMR",
        )
        p.add_argument(
            "--compare-settings",
            action=argparse.BooleanOptionalAction,
            default=False,
            help="scores of several settings hashes (several --input run folders): report each hash on its own "
            "(the run table: a column per hash; every other table: one per hash); without it they are refused",
        )

    def run(self) -> Outcome:
        from udfs.report import build

        rows_add_up = self.count_scores_rows()
        pages = Folder.of(self.args.pages) if self.args.pages else None
        report = build.build(
            self.args.input,
            self.output_root,
            pages,
            self.args.paper,
            group_width=self.args.group_interval_width,
            compare=self.args.compare_settings,
        )
        page = build.write(report, self.table_dir)
        self.record["report"] = str(page)
        return Outcome(
            counters={f"{name}_rows": len(df) for name, df in report.frames.items()},
            checks={"every scores file's rows add up to scores_rows": rows_add_up},
            lines=[report.table7_text, f"report: {page.local_path.resolve().as_uri() if page.is_local else page.url}"],
        )

    def count_scores_rows(self) -> bool:
        """The run record's inputs: every scores file considered or skipped, and the rows of each
        (from its footer); whether they add up to the rows of the scores table (``scores_rows``)."""
        found = InputReport()
        ds = parquet_dataset(self.args.input, report=found)
        self.keep_inputs(found)
        reads = {f.path: {"rows": f.metadata.num_rows} for f in ds.get_fragments()}
        self.record["inputs"]["files"] = len(reads)
        self.record.count("scores_rows", ds.count_rows())
        return self.keep_reads([], reads, "rows", self.record["counters"]["scores_rows"])


if __name__ == "__main__":
    sys.exit(ReportJob().main())
