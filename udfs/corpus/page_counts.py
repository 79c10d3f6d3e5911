"""The pages job's account of a run, from the tables it wrote: every input row selected once or
rejected, every attempt by status, every input file with its rows and every WARC file with the
records read from it (``jobs/pages.py``; the base class reconciles and tells it)."""

from __future__ import annotations

from pyspark.sql import functions as F

from udfs.corpus import fetch
from udfs.corpus import html as P
from udfs.runtime.closing import Outcome

# Statuses of an attempt that read its WARC record.
READ = (P.OK, P.PARSE_ERROR, P.NO_MATCHING_MARKUP)
# input rows = selected rows + rejected rows = the slots filled + rejected rows
BALANCES = (("input_rows", ("selected_rows", "rejected_rows")), ("input_rows", ("distinct_slots", "rejected_rows")))


def page_outcome(spark, pages_dir: str, rejects_dir: str, n_input: int, keep_reads, input_rows: dict, files) -> Outcome:
    """The Outcome of a pages run: ``pages_dir`` and ``rejects_dir`` are the written tables,
    ``n_input`` the input rows, ``input_rows`` ``{file: {"rows": n}}`` of the input files and
    ``keep_reads`` the job's ``Job.keep_reads`` (which keeps each file's reads in the run record)."""
    pages = spark.read.parquet(pages_dir)
    rejected = {r["reason"]: r["count"] for r in spark.read.parquet(rejects_dir).groupBy("reason").count().collect()}
    agg = (
        pages.groupBy("selected", "status", (F.col("candidate_rank") > 0).alias("replacement"))
        .agg(F.count(F.lit(1)).alias("n"))
        .collect()
    )
    selected, attempts = {}, {}
    for r in agg:
        attempts[r["status"]] = attempts.get(r["status"], 0) + r["n"]
        if r["selected"]:
            selected[r["status"]] = selected.get(r["status"], 0) + r["n"]
    counters = {
        "input_rows": n_input,
        "rejected_rows": sum(rejected.values()),
        # input rows that share a key (one draw given twice): rejects, never fetched twice
        "duplicate_rows": rejected.get(fetch.DUPLICATE_DRAW, 0) + rejected.get(fetch.DUPLICATE_URL, 0),
        "selected_rows": sum(selected.values()),
        "distinct_slots": pages.where("selected").select("slot").distinct().count(),
        "attempts": sum(attempts.values()),
        "ok_by_replacement": sum(r["n"] for r in agg if r["selected"] and r["status"] == P.OK and r["replacement"]),
        **{f"selected_{s}": selected.get(s, 0) for s in P.STATUSES},
        **{f"attempts_{s}": attempts.get(s, 0) for s in P.STATUSES},
    }
    per_warc = {
        r["warc_filename"]: {"records_read": r["read"], "attempts": r["n"]}
        for r in pages.where(F.col("warc_filename").isNotNull())
        .groupBy("warc_filename")
        .agg(F.count(F.lit(1)).alias("n"), F.sum(F.col("status").isin(*READ).cast("long")).alias("read"))
        .collect()
    }
    checks = {
        "every input file's rows add up to input_rows": keep_reads(files, input_rows, "rows", n_input),
        "every WARC file's records add up to the attempts that read one": keep_reads(
            [], per_warc, "records_read", sum(attempts.get(s, 0) for s in READ), key="warc_read"
        ),
        "every status is known": set(selected) <= set(P.STATUSES),
    }
    failures = {
        f"{r['status']}: {r['reason']}"[:160]: r["n"]
        for r in pages.where("selected and status != 'ok'")
        .groupBy("status", "reason")
        .agg(F.count(F.lit(1)).alias("n"))
        .collect()
    }
    for reason, n in rejected.items():
        failures[f"rejected: {reason}"[:160]] = n
    return Outcome(
        counters=counters,
        checks=checks,
        lines=_lines(pages_dir, counters, selected, attempts),
        units="input rows",
        given=n_input,
        done=selected.get(P.OK, 0),
        failures=failures,
    )


def _lines(pages_dir: str, counters: dict, selected: dict, attempts: dict) -> list[str]:
    lines = [
        f"pages: {pages_dir}  input rows {counters['input_rows']} = selected {counters['selected_rows']} "
        f"+ rejected {counters['rejected_rows']}",
        f"selected by status: {dict(sorted(selected.items()))}  (ok through a replacement: "
        f"{counters['ok_by_replacement']})",
        f"all attempts by status: {dict(sorted(attempts.items()))}",
    ]
    if counters["duplicate_rows"]:
        lines.append(
            f"duplicate input rows: {counters['duplicate_rows']} rows share a sample row's key with another, "
            "none fetched (rejects/pages/ names them)"
        )
    return lines
