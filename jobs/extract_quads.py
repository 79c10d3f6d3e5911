"""WARC files to WebDataCommons-style N-Quads: ``spark-submit jobs/extract_quads.py --input DIR --output OUT``.

Reads every HTML response of the input WARC files, extracts its JSON-LD blocks and writes them as
N-Quads the way WebDataCommons publishes them (``<s> <p> o <page-url>   .``: the page URL is the
graph term, page-scoped blank nodes, ``http://schema.org/`` IRIs), one ``quads/part-NNNNN.nq.gz``
per input file, ready for ``jobs/csets.py``. JSON-LD is converted by rdflib with the bundled
schema.org context; no context is ever fetched: a block naming another remote context, invalid
JSON or an unconvertible block is a row in ``rejects/extract_quads/`` with its reason. Work per
record is bounded as in the pages job (``--max-record-bytes``, ``--max-html-bytes``,
``--max-markup-chars``, ``--max-markup-nodes``, ``--time-limit-s``: a record or block over a bound
is a reject row), and a file that breaks off (a cut or damaged gzip member) is a reject row naming
the file and the offset. Counters reconcile: blocks found = blocks converted + blocks rejected +
empty blocks, records = pages + records skipped or rejected, and the run record's ``inputs.read``
lists every input file with the records it gave, adding up to ``records``.
The logic is udfs/corpus/quads.py; this file is flags and wiring.
"""

from __future__ import annotations

import dataclasses
import sys

from udfs.corpus.quads import COUNTERS, extract_file, reconciles
from udfs.corpus.warc import WARC_SUFFIXES
from udfs.runtime.closing import Outcome
from udfs.runtime.job import SparkJob
from udfs.runtime.rejects import REJECTS_SCHEMA


class ExtractQuadsJob(SparkJob):
    name = "extract_quads"
    table = "quads"
    next_step = "llm4schema-csets --input {output}/quads --output {output}"
    description = __doc__
    input_help = "WARC files (.warc.gz, .warc), directories, globs or manifests listing them"

    def run(self):
        a = self.args
        files = self.resolve_inputs(a.input, suffixes=WARC_SUFFIXES)
        self.record["inputs"].update({"files": len(files), "first": files[:5]})
        self.clear_outputs()
        # an absolute path or a URL: the executors write the parts there (Folder)
        out_dir = self.table_dir.url
        items = list(enumerate(files))
        limits = dataclasses.asdict(self.settings)  # [extract_quads]: the page limits and the rejects' cut
        sc = self.spark.sparkContext
        results = sc.parallelize(items, max(1, len(items))).flatMap(lambda item: _tagged(item, out_dir, limits)).cache()
        with self.record.time("extract"):
            rejects = results.filter(lambda kv: kv[0] == "reject").map(
                lambda kv: tuple(kv[1][c] for c in REJECTS_SCHEMA.names)
            )
            self.spark.createDataFrame(rejects, REJECTS_SCHEMA).coalesce(1).write.mode("overwrite").parquet(
                str(self.rejects_dir)
            )
            per_file = (
                results.filter(lambda kv: kv[0] == "counters").map(lambda kv: kv[1]).collect()
            )  # one small dict per file
        results.unpersist()
        totals = {k: sum(c[k] for c in per_file) for k in COUNTERS}
        totals["files"] = len(files)
        totals["rejects_written"] = self.spark.read.parquet(str(self.rejects_dir)).count()
        # every input with the records it gave (and its quads, rejects, damage), adding up to records
        reads = {c["source"]: {k: c[k] for k in ("records", "quads", "file_errors")} for c in per_file}
        self.record["outputs"] = {"quads": out_dir, "rejects": str(self.rejects_dir)}
        return Outcome(
            counters=totals,
            checks={
                "every block and record is accounted for once": reconciles(totals),
                "every input file's records add up to records": self.keep_reads(
                    files, reads, "records", totals["records"]
                ),
            },
            lines=[f"N-Quads: {out_dir}  " + "  ".join(f"{k} {v}" for k, v in totals.items())],
            units="files",
            given=len(files),
            done=sum(1 for c in per_file if c["records"]),
            failures={"no record read": sum(1 for c in per_file if not c["records"])},
        )


def _tagged(item, out_dir, limits):
    """``extract_file``'s items for one (index, path), its counters naming the file."""
    index, path = item
    for kind, value in extract_file(index, path, out_dir, **limits):
        yield (kind, {**value, "source": path} if kind == "counters" else value)


def main(argv=None) -> int:
    return ExtractQuadsJob(argv).main()


if __name__ == "__main__":
    sys.exit(main())
