"""Quantile-stratified sample of C-sets: ``spark-submit jobs/sample.py --input OUT/csets --output OUT``.

Reads the ``csets/`` table, writes ``samples/`` (one row per drawn C-set and feature, with its
page URL and ranked replacements), ``rejects/sample/``, ``samples/_run.json`` (bounds, stratum
sizes, Spearman's rho; every input file with its rows, adding up to the C-sets read) and
``report/sample/`` (log-scale histograms). Rules: udfs/corpus/sampling.py.
"""

from __future__ import annotations

import argparse
import sys

from udfs.corpus import sample_counts as counts
from udfs.corpus import sampling
from udfs.runtime.inputs import local_name
from udfs.runtime.io import Folder
from udfs.runtime.job import SparkJob
from udfs.runtime.tables import parquet_rows


class SampleJob(SparkJob):
    input_contracts = {"input": lambda args: sampling.csets_contract(args.features)}
    name = "sample"
    table = "samples"
    # without a WARC index under the root, the index over your own WARC files comes first
    next_step = "llm4schema-warc-index --input YOUR_WARC_FILES --warc-base YOUR_WARC_FOLDER --output {output}"
    balances = counts.BALANCES
    description = __doc__
    input_help = "the csets/ table (one or more Parquet folders or files)"

    def add_arguments(self, parser):
        parser.add_argument(
            "--plots",
            action=argparse.BooleanOptionalAction,
            default=True,
            help="draw the PNG histograms; --no-plots skips them (the bins still go to the run record)",
        )

    @property
    def report_dir(self) -> Folder:
        return self.output_root / "report" / self.name

    def run(self):
        a = self.args
        self.clear_outputs()
        self.report_dir.rm()
        with self.record.time("read"):
            try:
                df = self.spark.read.parquet(*a.input)
            except Exception as exc:  # noqa: BLE001 - AnalysisException: missing path, no Parquet files
                self.fail(f"cannot read the csets table {a.input}: {str(exc).splitlines()[0]}")
        with self.record.time("sample"):
            try:
                result = sampling.sample_csets(
                    df,
                    features=a.features,
                    n_strata=a.strata,
                    per_stratum=a.per_stratum,
                    seed=a.seed,
                    replacement_urls=a.replacement_urls,
                    replacement_csets=a.replacement_csets,
                    source=",".join(a.input),
                    reject_raw_chars=a.reject_raw_chars,
                )
            except sampling.SampleError as exc:
                self.fail(str(exc))
        with self.record.time("write"):
            (
                result.samples.orderBy("feature", "stratum_index", "sample_rank")
                .coalesce(1)
                .write.mode("overwrite")
                .parquet(str(self.table_dir))
            )
            n_rejects = result.stats["counters"]["csets_rejected"]
            if n_rejects:
                result.rejects.coalesce(1).write.mode("overwrite").parquet(str(self.rejects_dir))
        stats = result.stats
        for key, value in stats.pop("counters").items():
            self.record.count(key, value)
        # every Parquet file of the table with its rows (from its footer), adding up to csets_in
        files = [local_name(f) for f in df.inputFiles()]
        self.record["inputs"] = {"files": len(files), "considered": files}
        rows_add_up = self.keep_reads(
            files, parquet_rows(files, local_name), "rows", self.record["counters"]["csets_in"]
        )
        self.record.count("rows_out", self.spark.read.parquet(str(self.table_dir)).count())
        for key, value in stats.items():
            self.record[key] = value
        self.record["histograms"] = list(result.histograms.values())
        if a.plots:
            with self.record.time("plots"):
                self.record["report"] = counts.plots(result, stats, self.record["counters"], self.report_dir)
        return counts.outcome(self.record.data, rows_add_up)

    def next_command(self) -> str:
        """The pages job over this sample: with the WARC index under the same root (and the
        ``--warc-base`` its run record holds) when one is there, else with Common Crawl's."""
        import json
        import shlex

        index = self.output_root / "warc_index"
        if not index.exists("_run.json"):
            return super().next_command()
        base = json.loads(index.read_text("_run.json")).get("config", {}).get("warc_base") or ""
        out = shlex.quote(str(self.args.output))
        command = f"llm4schema-pages --input {out}/samples --warc-index {out}/warc_index --output {out}"
        command += f" --warc-base {shlex.quote(base)}" if base else ""
        return command + super().next_command().partition(f"--output {out}")[2]


if __name__ == "__main__":
    sys.exit(SampleJob().main())
