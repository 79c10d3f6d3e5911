"""WARC files to WebDataCommons-style N-Quads: ``spark-submit jobs/extract_quads.py --input DIR --output OUT``.

Reads every HTML response of the input WARC files, extracts its JSON-LD blocks and writes them as
N-Quads the way WebDataCommons publishes them (``<s> <p> o <page-url>   .``: the page URL is the
graph term, page-scoped blank nodes, ``http://schema.org/`` IRIs), one ``quads/part-NNNNN.nq.gz``
per input file, ready for ``jobs/csets.py``. JSON-LD is converted by rdflib with the bundled
schema.org context; no context is ever fetched: a block naming another remote context, invalid
JSON or an unconvertible block is a row in ``rejects/extract_quads/`` with its reason.
Counters reconcile: blocks found = blocks converted + blocks rejected + empty blocks.
"""
from __future__ import annotations

import gzip
import io
import os
import sys

if __package__ in (None, ""):  # run as a script: make the project importable without installing
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pyspark.sql import types as T  # noqa: E402

from udfs.runtime.inputs import resolve_inputs  # noqa: E402
from udfs.runtime.job import SparkJob  # noqa: E402

WARC_SUFFIXES = (".warc.gz", ".warc", ".arc.gz")
REJECTS_SCHEMA = T.StructType([
    T.StructField("source", T.StringType(), False),
    T.StructField("position", T.LongType(), True),
    T.StructField("reason", T.StringType(), False),
    T.StructField("raw", T.StringType(), True),
])
COUNTERS = ("records", "html_responses", "skipped_not_html_response", "skipped_oversized", "pages_with_jsonld",
            "blocks", "blocks_converted", "blocks_rejected", "blocks_empty", "quads", "file_errors")


def extract_file(item):
    """Write one input file's quads; yield ("reject", row) items and one ("counters", dict)."""
    import fsspec
    from warcio.archiveiterator import ArchiveIterator

    from udfs.corpus import html as P
    from udfs.corpus.warc import WarcRecord

    index, path, out_dir, max_bytes, raw_chars, time_limit = item
    counts = dict.fromkeys(COUNTERS, 0)
    target = os.path.join(out_dir, f"part-{index:05d}.nq.gz")
    tmp = target + ".tmp"
    rejects = []
    # mtime 0 and no name in the gzip header: the same input gives the same bytes
    with fsspec.open(path, "rb") as fh, open(tmp, "wb") as raw_out, \
            gzip.GzipFile(filename="", mode="wb", fileobj=raw_out, mtime=0, compresslevel=6) as gz, \
            io.TextIOWrapper(gz, encoding="utf-8", newline="\n") as out:
        it = ArchiveIterator(fh)
        try:
            for rec in it:
                counts["records"] += 1
                http = rec.http_headers
                ctype = http.get_header("Content-Type") if http is not None else None
                info = WarcRecord(rec.rec_type, None, None, ctype, b"")
                if rec.rec_type != "response" or http is None or http.get_statuscode() != "200" or info.mime_type not in ("text/html", "application/xhtml+xml"):
                    counts["skipped_not_html_response"] += 1
                    continue
                url = rec.rec_headers.get_header("WARC-Target-URI")
                payload = rec.content_stream().read(max_bytes + 1)
                offset = it.get_record_offset()  # only after the read: asking earlier empties the stream
                if len(payload) > max_bytes:
                    counts["skipped_oversized"] += 1
                    rejects.append({"source": path, "position": offset, "reason": f"{url}: page larger than max_html_bytes={max_bytes}", "raw": None})
                    continue
                counts["html_responses"] += 1
                try:
                    html = P.run_with_time_limit(P.decode_html, time_limit, "decoding", payload, ctype)
                    blocks = P.run_with_time_limit(P.jsonld_blocks, time_limit, "JSON-LD extraction", html)
                except Exception as exc:
                    rejects.append({"source": path, "position": offset, "reason": f"{url}: HTML not readable: {exc}", "raw": None})
                    continue
                if blocks:
                    counts["pages_with_jsonld"] += 1
                for b in blocks:
                    counts["blocks"] += 1
                    if b.error is None and b.data is None:  # `null` or an empty script: nothing to say
                        counts["blocks_empty"] += 1
                        continue
                    reason = b.error
                    lines = []
                    if reason is None:
                        try:
                            lines = P.run_with_time_limit(P.jsonld_to_quads, time_limit, "JSON-LD to RDF", b.data, url,
                                                          block_index=b.index)
                        except Exception as exc:
                            reason = f"block {b.index}: {type(exc).__name__}: {str(exc)[:300]}"
                    if reason is not None:
                        counts["blocks_rejected"] += 1
                        rejects.append({"source": path, "position": offset, "reason": f"{url}: {reason}",
                                        "raw": b.raw[:raw_chars]})
                        continue
                    counts["blocks_converted"] += 1
                    counts["quads"] += len(lines)
                    for line in lines:
                        out.write(line + "\n")
        except Exception as exc:  # a cut or corrupt file: keep what was read, say where it broke
            counts["file_errors"] += 1
            rejects.append({"source": path, "position": it.offset, "reason": f"unreadable from here: {type(exc).__name__}: {exc}", "raw": None})
    os.replace(tmp, target)
    for r in rejects:
        yield ("reject", r)
    yield ("counters", counts)


class ExtractQuadsJob(SparkJob):
    name = "extract_quads"
    table = "quads"
    description = __doc__
    input_help = "WARC files (.warc.gz, .warc), directories, globs or manifests listing them"

    def add_arguments(self, p):
        p.add_argument("--max-html-bytes", type=int, help="pages larger than this are rejected, not parsed")
        p.add_argument("--time-limit-s", type=float, help="per page and step (HTML, JSON-LD, RDF) time limit")
        p.add_argument("--reject-raw-chars", type=int, help="cut JSON-LD blocks to this many characters in rejects/")

    def run(self):
        a = self.args
        files = resolve_inputs(a.input, suffixes=WARC_SUFFIXES)
        self.record["inputs"] = {"files": len(files), "first": files[:5]}
        self.clear_outputs()
        self.table_dir.mkdir(parents=True, exist_ok=True)
        out_dir = str(self.table_dir.resolve())
        items = [(i, f, out_dir, a.max_html_bytes, a.reject_raw_chars, a.time_limit_s) for i, f in enumerate(files)]
        sc = self.spark.sparkContext
        results = sc.parallelize(items, max(1, len(items))).flatMap(extract_file).cache()
        with self.record.time("extract"):
            rejects = results.filter(lambda kv: kv[0] == "reject").map(lambda kv: tuple(kv[1][c] for c in REJECTS_SCHEMA.names))
            self.spark.createDataFrame(rejects, REJECTS_SCHEMA).coalesce(1).write.mode("overwrite").parquet(str(self.rejects_dir))
            per_file = results.filter(lambda kv: kv[0] == "counters").map(lambda kv: kv[1]).collect()  # one small dict per file
        results.unpersist()
        totals = {k: sum(c[k] for c in per_file) for k in COUNTERS}
        totals["files"] = len(files)
        totals["rejects_written"] = self.spark.read.parquet(str(self.rejects_dir)).count()
        totals["reconciles"] = (totals["blocks"] == totals["blocks_converted"] + totals["blocks_rejected"] + totals["blocks_empty"]
                                and totals["records"] == totals["html_responses"] + totals["skipped_not_html_response"] + totals["skipped_oversized"])
        for k, v in totals.items():
            self.record.count(k, v)
        self.record["outputs"] = {"quads": out_dir, "rejects": str(self.rejects_dir)}
        print(f"N-Quads: {out_dir}  " + "  ".join(f"{k} {v}" for k, v in totals.items()), flush=True)
        if not totals["reconciles"]:
            raise RuntimeError(f"counters do not reconcile: {totals}")


def main(argv=None) -> int:
    return ExtractQuadsJob(argv).main()


if __name__ == "__main__":
    sys.exit(main())
