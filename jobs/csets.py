"""C-sets of WebDataCommons N-Quads: ``spark-submit jobs/csets.py --input DIR --output OUT``.

Streams N-Quads (plain or gzip; files, directories, globs, manifests; one file = one task) into
the ``csets/`` table: one row per characteristic set with its instances, pages, domains and a
deterministic sample of page URLs. WebDataCommons' variant, whose fifth term names the extractor,
is read (``--strict-nquads``: W3C N-Quads exactly, a fifth term is a reject). Malformed lines go
to ``rejects/csets/`` with file, line and reason; ``csets/_run.json`` holds counters that
reconcile (lines read = quads parsed + triples of the default graph, which name no page + lines
rejected + blank/comment lines skipped), the fifth term's values, and every input file with the
lines it gave and its quads, default-graph triples, rejected and skipped lines and distinct graphs
(``inputs.read``, adding up to the lines read). Blank-node labels, graph labels included, are
scoped to their file. Same file on a cluster: add ``--master`` or use spark-submit's flags.
"""

from __future__ import annotations

import argparse
import os
import sys

from pyspark import StorageLevel

from udfs.corpus import cset_counts as counts
from udfs.corpus import csets as C
from udfs.runtime.job import SparkJob
from udfs.schemaorg.vocab import load_vocabulary


class CsetsJob(SparkJob):
    name = "csets"
    table = "csets"
    next_step = "llm4schema-sample --input {output}/csets --output {output}"
    description = __doc__
    balances = counts.BALANCES
    input_help = "N-Quads inputs: files (.nq, .nq.gz, .gz), directories, globs, or manifests (.paths/.txt/.manifest or @file) listing them"

    def add_arguments(self, p):
        p.add_argument(
            "--clean",
            action=argparse.BooleanOptionalAction,
            default=True,
            help="filter the sets against the vocabulary; --no-clean keeps raw sets (schema.org terms "
            "by local name, other IRIs whole)",
        )
        p.add_argument(
            "--ignore-corrupt-files",
            action=argparse.BooleanOptionalAction,
            default=False,
            help="go on past an input that cannot be read instead of failing: a file that cannot be "
            "opened or breaks off part-way (a truncated or corrupt gzip) keeps the lines read before "
            "the damage; it, and every file that yields no line, is listed in rejects/ with the reason",
        )

    def run(self):
        a = self.args
        cfg = C.CsetConfig(
            subject_scope=a.subject_scope,
            clean=a.clean,
            sample_urls=a.sample_urls,
            reject_raw_chars=a.reject_raw_chars,
            max_line_bytes=a.max_line_bytes,
            strict_nquads=a.strict_nquads,
        )
        files = self.resolve_inputs(a.input, root=a.input_root or None)
        vocab = load_vocabulary(a.vocab)
        self.record["inputs"].update(
            {
                "files": len(files),
                "first": files[:5],
                "bytes": sum(os.path.getsize(f) for f in files if os.path.exists(f)),
            }
        )
        self.record["vocabulary"] = counts.vocabulary_facts(vocab, a.vocab)
        spark = self.spark
        self.clear_outputs()

        # The scan's rows are merged by entity on the JVM into small tallies, kept for the three
        # writers below (C-sets, rejects, counters): the input is read once.
        ep = C.entity_pages(spark, files, vocab, cfg, ignore_corrupt=a.ignore_corrupt_files)
        partitions = C.partitions_for(spark, self.record["inputs"]["bytes"])
        self.record["spark"]["sorted_pass_partitions"] = partitions
        tallies = C.tallies(ep, cfg, partitions).persist(StorageLevel.MEMORY_AND_DISK)

        with self.record.time("read, parse and merge by entity (one pass over the input)"):
            try:
                per_file = C.per_file(tallies)
            except Exception as exc:  # noqa: BLE001 - the first pass: an unreadable file is the user's
                raise counts.unreadable_input(exc) from None
        lines_read = sum(c["lines"] for c in per_file.values())

        with self.record.time("write csets"):
            C.csets(tallies).write.mode("overwrite").parquet(str(self.table_dir))
        with self.record.time("write rejects"):
            norm = {f.removeprefix("file://").removeprefix("file:"): c for f, c in per_file.items()}
            silent, damaged = counts.write_rejects(spark, tallies, cfg, files, norm, str(self.rejects_dir))

        written = spark.read.parquet(str(self.table_dir))
        with self.record.time("counters"):
            counters = C.counters(tallies, written.count(), cfg.clean)
        counters = {
            "lines_read": lines_read,
            **counters,
            "files_without_lines": len(silent),
            "files_damaged": len(damaged),
            "rejects_written": spark.read.parquet(str(self.rejects_dir)).count(),
        }
        self.record["outputs"] = {"csets": str(self.table_dir), "rejects": str(self.rejects_dir)}
        tallies.unpersist()
        return counts.outcome(counters, files, norm, damaged, self.keep_reads, counts.summary(written, counters, a.top))


def main(argv=None) -> int:
    return CsetsJob(argv).main()


if __name__ == "__main__":
    sys.exit(main())
