"""scores/ (+ triples/, pages/, samples/ and run records under the same root) -> report/: one
self-contained HTML page (run metadata, page funnel, the paper's Tables 7 and 8 beside its figures,
Fig. 10, rejections per property, score distributions, the agents' benchmark when one ran), the
tables as CSV and the Table 7 plot. The work: udfs/report/build.py.

    python jobs/report.py --input OUT/scores --output OUT          # pages from OUT/pages
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from udfs.runtime.job import Job  # noqa: E402


class ReportJob(Job):
    name = "report"
    table = "report"
    description = __doc__
    input_help = "the scores/ table of jobs/evaluate.py"

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("--pages", default="", help="the pages/ table (feature, stratum); default <output>/pages")

    def run(self) -> None:
        from udfs.report import build
        from udfs.runtime.io import Folder

        pages = Folder.of(self.args.pages) if self.args.pages else None
        report = build.build(self.args.input, self.output_root, pages)
        page = build.write(report, self.table_dir)
        for name, df in report.frames.items():
            self.record.count(f"{name}_rows", len(df))
        self.record["report"] = str(page)
        print(report.table7_text)
        print(f"report: {page.local_path.resolve().as_uri() if page.is_local else page.url}")


if __name__ == "__main__":
    sys.exit(ReportJob().main())
