"""Quantile-stratified sample of C-sets: ``spark-submit jobs/sample.py --input OUT/csets --output OUT``.

Reads the ``csets/`` table, writes ``samples/`` (one row per drawn C-set and feature, with its
page URL and ranked replacements), ``rejects/sample/``, ``samples/_run.json`` (bounds, stratum
sizes, Spearman's rho; every input file with its rows, adding up to the C-sets read) and
``report/sample/`` (log-scale histograms). Rules: udfs/corpus/sampling.py.
"""

from __future__ import annotations

import argparse
import logging
import sys

from udfs.corpus import sampling
from udfs.runtime.inputs import local_name
from udfs.runtime.io import Folder, fsspec_url
from udfs.runtime.job import SparkJob

log = logging.getLogger("llm4schema.sample")


def parquet_rows(files: list[str]) -> dict[str, dict[str, int]]:
    """``{file: {"rows": n}}`` for Parquet files (paths or URLs, ``s3a://`` included), from their
    footers only: one small read per file. Files are named by ``local_name``."""
    import fsspec
    import pyarrow.parquet as pq

    out = {}
    for f in files:
        with fsspec.open(fsspec_url(f), "rb") as fh:
            out[local_name(f)] = {"rows": pq.ParquetFile(fh).metadata.num_rows}
    return out


class SampleJob(SparkJob):
    name = "sample"
    table = "samples"
    next_step = (
        "llm4schema-pages --input {output}/samples --warc-index WARC_INDEX --output {output}"
        "  (WARC_INDEX: Common Crawl's columnar index, or llm4schema-warc-index over your WARCs)"
    )
    description = __doc__
    input_help = "the csets/ table (one or more Parquet folders or files)"

    def add_arguments(self, parser):
        parser.add_argument("--features", nargs="+", help="numeric csets columns, each sampled independently")
        parser.add_argument("--strata", type=int, help="quantile strata per feature")
        parser.add_argument("--per-stratum", type=int, help="C-sets drawn per stratum")
        parser.add_argument("--seed", type=int, help="seed of the hash permutation")
        parser.add_argument(
            "--replacement-urls", type=int, help="replacement candidates from the drawn C-set's other sample URLs"
        )
        parser.add_argument(
            "--replacement-csets", type=int, help="replacement candidates from undrawn C-sets of the same stratum"
        )
        parser.add_argument("--reject-raw-chars", type=int, help="raw row cut in rejects/")
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
        self.record.count(
            "reconciles", self.keep_reads(files, parquet_rows(files), "rows", self.record["counters"]["csets_in"])
        )
        self.record.count("rows_out", self.spark.read.parquet(str(self.table_dir)).count())
        for key, value in stats.items():
            self.record[key] = value
        self.record["histograms"] = list(result.histograms.values())
        if a.plots:
            with self.record.time("plots"):
                rho = {k: v["rho"] for k, v in stats["spearman"].items()}
                pngs = []
                for f, hist in result.histograms.items():
                    title = f"{f}, {self.record['counters']['csets_in_frame']} C-sets" + "".join(
                        f", rho({k})={v:.3f}" for k, v in rho.items() if v is not None and f in k.split("~")
                    )
                    pngs.append(
                        str(sampling.plot_histogram(hist, stats["bounds"][f], self.report_dir / f"hist_{f}.png", title))
                    )
                self.record["report"] = pngs
        self._summary()

    def _summary(self):
        r = self.record.data
        lines = [
            f"sample: {r['counters']['csets_in']} C-sets in, {r['counters']['csets_drawable']} drawable, "
            f"{r['counters']['csets_rejected']} rejected, {r['counters']['rows_out']} sample rows"
        ]
        if r["counters"]["duplicate_cset_ids"]:
            lines.append(
                f"  duplicate cset_id: {r['counters']['duplicate_cset_ids']} ids given by "
                f"{r['counters']['rejects_by_reason'][sampling.DUPLICATE_CSET_ID]} rows, none drawn "
                "(rejects/sample/ names them)"
            )
        if r.get("empty_reason"):
            lines.append(f"  empty sample: {r['empty_reason']}")
        for f, bounds in r["bounds"].items():
            lines.append(f"  {f}: bounds {bounds}")
        for s in r["strata_sizes"]:
            lines.append(
                f"    {s['feature']}/{s['stratum']} ({s['lower']}, {s['upper']}]: "
                f"population {s['population']}, drawable {s['drawable']}, drawn {s['drawn']}"
            )
        for k, v in r["spearman"].items():
            lines.append(f"  spearman {k}: {v['rho']}" + (f" ({v['reason']})" if v.get("reason") else ""))
        for w in r["warnings"]:
            lines.append(f"  warning: {w}")
        print("\n".join(lines), file=sys.stderr)


if __name__ == "__main__":
    sys.exit(SampleJob().main())
