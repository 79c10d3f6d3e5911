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
from pyspark.sql import functions as F

from udfs.corpus import csets as C
from udfs.runtime.job import SparkJob
from udfs.runtime.rejects import REJECTS_SCHEMA
from udfs.schemaorg.vocab import load_vocabulary, resolve_vocab_path


class CsetsJob(SparkJob):
    name = "csets"
    table = "csets"
    next_step = "llm4schema-sample --input {output}/csets --output {output}"
    description = __doc__
    input_help = "N-Quads inputs: files (.nq, .nq.gz, .gz), directories, globs, or manifests (.paths/.txt/.manifest or @file) listing them"

    def add_arguments(self, p):
        p.add_argument(
            "--subject-scope",
            choices=["iri", "page"],
            help="iri: blank nodes scoped to their page, an IRI is one entity everywhere; "
            "page: every (subject, page) is its own entity",
        )
        p.add_argument("--sample-urls", type=int, help="K, page URLs kept per C-set in sample_urls")
        p.add_argument("--vocab", help="schema.org release: a bundled name (30.0), a folder or an .nt file")
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
        p.add_argument(
            "--input-root",
            nargs="+",
            help="confine inputs: local files and manifest lines must resolve (symlinks included) "
            "under one of these folders; empty: not confined",
        )
        p.add_argument("--reject-raw-chars", type=int, help="cut raw lines to this many characters in rejects/")
        p.add_argument(
            "--max-line-bytes",
            type=int,
            help="a longer line is rejected (its first characters kept in rejects/), never read whole",
        )
        p.add_argument(
            "--strict-nquads",
            action=argparse.BooleanOptionalAction,
            help="W3C N-Quads exactly: a fifth term is a reject; --no-strict-nquads reads WebDataCommons' "
            "variant, whose fifth term names the extractor (<ex:html-microdata>), counted in fifth_term",
        )
        p.add_argument("--top", type=int, help="C-sets shown in the summary printed at the end")

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
        self.record["vocabulary"] = {
            "release": vocab.release,
            "path": str(resolve_vocab_path(a.vocab)),
            "types": len(vocab.classes),
            "properties": len(vocab.properties),
        }
        spark = self.spark
        self.clear_outputs()

        # The scan's rows are merged by entity on the JVM into small tallies, kept for the three
        # writers below (C-sets, rejects, counters): the input is read once.
        ep = C.entity_pages(spark, files, vocab, cfg, ignore_corrupt=a.ignore_corrupt_files)
        partitions = C.partitions_for(spark, self.record["inputs"]["bytes"])
        self.record["spark"]["sorted_pass_partitions"] = partitions
        tallies = C.tallies(ep, cfg, partitions).persist(StorageLevel.MEMORY_AND_DISK)

        with self.record.time("read, parse and merge by entity (one pass over the input)"):
            per_file = C.per_file(tallies)
        lines_read = sum(c["lines"] for c in per_file.values())

        with self.record.time("write csets"):
            C.csets(tallies).write.mode("overwrite").parquet(str(self.table_dir))
        with self.record.time("write rejects"):
            norm = {f.removeprefix("file://").removeprefix("file:"): c for f, c in per_file.items()}
            silent, damaged = self._write_rejects(tallies, cfg, files, norm)

        written = spark.read.parquet(str(self.table_dir))
        n_csets = written.count()
        with self.record.time("counters"):
            counters = C.counters(tallies, n_csets, cfg.clean)
        counters = {
            "lines_read": lines_read,
            **counters,
            "files_without_lines": len(silent),
            "files_damaged": len(damaged),
            "rejects_written": spark.read.parquet(str(self.rejects_dir)).count(),
        }
        counters["reconciles"] = self._reconciles(files, norm, damaged, counters)
        for k, v in counters.items():
            self.record.count(k, v)
        self.record["outputs"] = {"csets": str(self.table_dir), "rejects": str(self.rejects_dir)}
        tallies.unpersist()
        if not counters["reconciles"]:
            raise RuntimeError(f"counters do not reconcile: {counters}")
        self.summary(written, counters, a.top)

    def _write_rejects(self, tallies, cfg, files: list[str], norm: dict[str, dict]) -> tuple[list[str], dict]:
        """rejects/csets/: the lines rejected, and every input file that gave no line or broke off
        (skipping corrupt files must not lose them silently: a file that broke off is named with
        what was read before the damage). Returns the files without a line and the damaged ones."""
        rej = C.rejects(tallies, cfg)
        silent = [f for f in files if f not in norm or norm[f]["lines"] == 0]
        damaged = C.damaged_files(tallies)
        files_rejected = [
            (f, damaged.get(f, "no line read (empty file, or unreadable and skipped)"))
            for f in dict.fromkeys([*silent, *damaged])
        ]
        if files_rejected:
            rej = rej.unionByName(
                self.spark.createDataFrame([(f, None, why, None) for f, why in files_rejected], REJECTS_SCHEMA)
            )
        rej.coalesce(1).write.mode("overwrite").parquet(str(self.rejects_dir))
        return silent, damaged

    def _reconciles(self, files: list[str], norm: dict[str, dict], damaged: dict, counters: dict) -> bool:
        """Whether the counts add up: the lines read = quads + default-graph triples + rejected +
        skipped, in all and per input file; and every input with the lines it gave (0: none, and why
        in rejects/) kept in the run record, adding up to lines_read."""
        strip = lambda f: f.removeprefix("file://").removeprefix("file:")  # noqa: E731
        why = {strip(f): w for f, w in damaged.items()}
        reads = {f: {**c, **({"damaged": why[f]} if f in why else {})} for f, c in norm.items()}
        for f in why.keys() - reads.keys():
            reads[f] = {"lines": 0, "damaged": why[f]}
        per_file_reconciles = all(
            r["lines"] == r["quads"] + r["default_graph"] + r["rejected"] + r["skipped"]
            for r in reads.values()
            if "quads" in r
        )
        lines_read = counters["lines_read"]
        per_file_adds_up = self.keep_reads(files, reads, "lines", lines_read)
        return (
            (
                lines_read
                == counters["quads_parsed"]
                + counters["lines_default_graph"]
                + counters["lines_rejected"]
                + counters["lines_skipped_blank_or_comment"]
            )
            and per_file_adds_up
            and per_file_reconciles
        )

    def summary(self, table, counters, top):
        rows = table.orderBy(F.desc("n_instances"), "cset_id").limit(top).collect()
        out = [
            f"lines {counters['lines_read']:,} = quads {counters['quads_parsed']:,} + default-graph triples "
            f"(no page) {counters['lines_default_graph']:,} + rejected {counters['lines_rejected']:,} + skipped "
            f"{counters['lines_skipped_blank_or_comment']:,}; "
            f"pages {counters['pages']:,}; entities {counters['entities_before_cleaning']:,} -> "
            f"{counters['entities_after_cleaning']:,}; sets {counters['sets_before_cleaning']:,} -> "
            f"{counters['sets_after_cleaning']:,} after cleaning",
            f"top {len(rows)} C-sets by instances:",
            f"{'instances':>9} {'pages':>6} {'domains':>7} {'props':>5}  tokens",
        ]
        for r in rows:
            tokens = ["isa:" + t for t in r["types"]] + list(r["properties"])
            text = " ".join(tokens)
            out.append(
                f"{r['n_instances']:>9,} {r['n_pages']:>6,} {r['n_domains']:>7,} {r['n_properties']:>5}  "
                f"{text[:110] + ('...' if len(text) > 110 else '')}"
            )
        print("\n".join(out), flush=True)


def main(argv=None) -> int:
    return CsetsJob(argv).main()


if __name__ == "__main__":
    sys.exit(main())
