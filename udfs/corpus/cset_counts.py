"""The C-sets job's account of a run (``jobs/csets.py``; the base class reconciles and tells it):
the rejects it writes for lines and for whole files, its counters, each input file's lines, and
the summary of the largest C-sets."""

from __future__ import annotations

import re

from pyspark.sql import functions as F

from udfs.corpus import csets as C
from udfs.runtime.closing import Outcome
from udfs.runtime.inputs import InputError
from udfs.runtime.rejects import REJECTS_SCHEMA

# lines read = quads + triples of the default graph (which name no page) + rejected + skipped
BALANCES = (
    (
        "lines_read",
        ("quads_parsed", "lines_default_graph", "lines_rejected", "lines_skipped_blank_or_comment"),
    ),
)


def unreadable_input(exc: Exception) -> Exception:
    """What a failed read pass is to the user: an InputError naming the file the JVM scanner could
    not read (without --ignore-corrupt-files), its one line from the task's trace; any other
    failure as it is (a bug)."""
    found = re.search(r"cannot read \S+: [^\n]*", str(exc))
    return InputError(found.group(0).rstrip()) if found else exc


def _strip(f: str) -> str:
    return f.removeprefix("file://").removeprefix("file:")


def write_rejects(spark, tallies, cfg, files: list[str], per_file: dict, rejects_dir: str) -> tuple[list[str], dict]:
    """rejects/csets/: the lines rejected, and every input file that gave no line or broke off
    (skipping corrupt files must not lose them silently: a file that broke off is named with what
    was read before the damage). ``per_file`` is ``C.per_file`` keyed by local path. Returns the
    files without a line and the damaged ones."""
    rej = C.rejects(tallies, cfg)
    silent = [f for f in files if f not in per_file or per_file[f]["lines"] == 0]
    damaged = C.damaged_files(tallies)
    files_rejected = [
        (f, damaged.get(f, "no line read (empty file, or unreadable and skipped)"))
        for f in dict.fromkeys([*silent, *damaged])
    ]
    if files_rejected:
        rej = rej.unionByName(
            spark.createDataFrame([(f, None, why, None) for f, why in files_rejected], REJECTS_SCHEMA)
        )
    rej.coalesce(1).write.mode("overwrite").parquet(rejects_dir)
    return silent, damaged


def outcome(counters: dict, files: list[str], per_file: dict, damaged: dict, keep_reads, lines: list[str]) -> Outcome:
    """The Outcome of a C-sets run: ``per_file`` is ``C.per_file`` keyed by local path, ``damaged``
    the files that broke off, ``keep_reads`` the job's ``Job.keep_reads`` (every input with the
    lines it gave, 0 and why in rejects/ for none, kept in the run record)."""
    why = {_strip(f): w for f, w in damaged.items()}
    reads = {f: {**c, **({"damaged": why[f]} if f in why else {})} for f, c in per_file.items()}
    for f in why.keys() - reads.keys():
        reads[f] = {"lines": 0, "damaged": why[f]}
    return Outcome(
        counters=counters,
        checks={
            "every file's lines = quads + default graph + rejected + skipped": all(
                r["lines"] == r["quads"] + r["default_graph"] + r["rejected"] + r["skipped"]
                for r in reads.values()
                if "quads" in r
            ),
            "every input file's lines add up to lines_read": keep_reads(files, reads, "lines", counters["lines_read"]),
        },
        lines=lines,
        units="lines",
        given=counters["lines_read"],
        done=counters["quads_parsed"] + counters["lines_default_graph"] + counters["lines_skipped_blank_or_comment"],
        failures={"rejected lines (rejects/csets/ names each)": counters["lines_rejected"]},
    )


def summary(table, counters: dict, top: int) -> list[str]:
    """The counts in one line, then the ``top`` C-sets by instances."""
    rows = table.orderBy(F.desc("n_instances"), "cset_id").limit(top).collect()
    out = [
        f"lines {counters['lines_read']:,} = quads {counters['quads_parsed']:,} + default-graph triples "
        f"(no page) {counters['lines_default_graph']:,} + rejected {counters['lines_rejected']:,} + skipped "
        f"{counters['lines_skipped_blank_or_comment']:,}; "
        f"pages {counters['pages']:,}; entities {counters['entities_before_cleaning']:,} -> "
        f"{counters['entities_after_cleaning']:,}; sets {counters['sets_before_cleaning']:,} -> "
        f"{counters['sets_after_cleaning']:,} after cleaning"
        # a byte order mark is no line: said here, since lines_read does not show it
        + (f"; byte order marks skipped {counters['byte_order_marks']:,}" if counters.get("byte_order_marks") else ""),
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
    return out


def vocabulary_facts(vocab, spec: str) -> dict:
    """The run record's ``vocabulary``: the release the tokens were cleaned against."""
    from udfs.schemaorg.vocab import resolve_vocab_path

    return {
        "release": vocab.release,
        "path": str(resolve_vocab_path(spec)),
        "types": len(vocab.classes),
        "properties": len(vocab.properties),
    }
