"""Differential fuzzing of the sample job: a real ``csets/`` table with feature values mutated,
against a reference computed directly with numpy.

The table is the csets job's output over the bundled 10k WDC quads (``data/wdc``), made once per
``work`` folder. Each input replaces some rows' values of one feature (or of both, class
``mixed``) and runs the job's own step (``udfs.corpus.sampling.sample_csets``) in-process; once
per round the ``mixed`` input also goes through the real job (``jobs/sample.py``: Parquet in,
``samples/``, ``rejects/sample/`` and ``_run.json`` out).

The reference, written from the documented rules and nothing of the job's code: a row is outside
the frame when its ``cset_id`` is null or blank or a feature is null, NaN, infinite or negative
(the first feature that fails names the cause); inside the frame, bounds are numpy's
``inverted_cdf`` quantiles (Hyndman-Fan type 1) and a value's stratum is one plus the number of
bounds below it. An input matches when the job's bounds and stratum populations equal the
reference's, every drawn row is a frame row of the stratum the reference puts its value in, every
row the reference leaves out is a reject row naming it (its ``cset_id``, the first key of ``raw``)
with the reference's cause, and ``csets_in = csets_drawable + csets_rejected``. A difference
explained by reject rows is a mutated row the job rejected for the reference's cause; anything
else (an exception such as ``ARITHMETIC_OVERFLOW`` included) is a discrepancy.
"""

from __future__ import annotations

import json
import math
import random
import re
import time
from pathlib import Path
from typing import Any

import numpy as np

from testkit.fuzz import Tally

JOB = "sample"
FEATURES = ["n_instances", "n_properties"]
REFERENCE = f"numpy {np.__version__} inverted_cdf quantiles over the finite, non-negative rows"
CLASSES = {
    "pos_inf": "+inf in a feature (the column as double)",
    "neg_inf": "-inf in a feature (the column as double)",
    "nan": "NaN in a feature (the column as double)",
    "negative": "negative counts: -1, -2^62 (long) or -1e-300 (double)",
    "huge": "huge finite values: 2^62 and 2^63-1 (long), 1e308 and the largest double",
    "zero": "0 and -0.0 in a feature",
    "ties": "a third of the rows set to one value of the table (heavy ties at a bound)",
    "null": "null feature values, null and blank cset_id",
    "mixed": "all of the above in one table (also run through the real job once per round)",
}
CSETS_DDL_COLUMNS = (
    ("cset_id", "string"),
    ("types", "array<string>"),
    ("properties", "array<string>"),
    ("n_properties", "long"),
    ("n_instances", "long"),
    ("n_pages", "long"),
    ("n_domains", "long"),
    ("sample_urls", "array<string>"),
)
_ID_IN_RAW = re.compile(r'^\{"cset_id":"([^"\\]*)"')


def _spark():
    from udfs.runtime.job import build_spark

    return build_spark(
        "fuzz-sample",
        master="local[2]",
        extra=["spark.sql.shuffle.partitions=4", "spark.ui.showConsoleProgress=false"],
    )


def real_csets(work: Path) -> list[dict[str, Any]]:
    """The rows of the csets table of the bundled WDC quads, written by the csets job into ``work``
    once (reused when present)."""
    from udfs.runtime.paths import PROJECT_ROOT

    out = work / "wdc"
    if not (out / "csets" / "_SUCCESS").exists():
        from testkit.fuzz import run_job

        quads = PROJECT_ROOT / "data" / "wdc" / "wdc-2022-12-jsonld-part00044-first10k.nq"
        if run_job("csets", "--input", str(quads), "--output", str(out)) != 0:
            raise RuntimeError(f"the csets job failed on {quads}")
    df = _spark().read.parquet(str(out / "csets"))
    cols = [c for c, _ in CSETS_DDL_COLUMNS]
    return [{c: r[c] for c in cols} for r in df.select(*cols).orderBy("cset_id").collect()]


# ---- mutations -----------------------------------------------------------------------------------


def mutate(rows: list[dict[str, Any]], cls: str, rng: random.Random) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """A copy of ``rows`` with some values replaced by class ``cls`` and the column types it needs:
    ``{feature: "double" | "long"}`` for the features that changed type."""
    rows = [dict(r) for r in rows]
    types: dict[str, str] = {}
    classes = [c for c in CLASSES if c != "mixed"] if cls == "mixed" else [cls]
    for c in classes:
        f = rng.choice(FEATURES)
        picked = rng.sample(range(len(rows)), rng.randint(1, 5))
        if c in ("pos_inf", "neg_inf", "nan"):
            types[f] = "double"
            value = {"pos_inf": math.inf, "neg_inf": -math.inf, "nan": math.nan}[c]
            for i in picked:
                rows[i][f] = value
        elif c == "negative":
            double = rng.random() < 0.5
            if double:
                types[f] = "double"
            for i in picked:
                rows[i][f] = -1e-300 if double else rng.choice([-1, -(2**62)])
        elif c == "huge":
            double = rng.random() < 0.5
            if double:
                types[f] = "double"
            for i in picked:
                rows[i][f] = rng.choice([1e308, 1.7976931348623157e308]) if double else rng.choice([2**62, 2**63 - 1])
        elif c == "zero":
            if rng.random() < 0.5:
                types[f] = "double"
            for i in picked:
                rows[i][f] = rng.choice([0, -0.0])
        elif c == "ties":
            value = rows[rng.randrange(len(rows))][f]
            for i in rng.sample(range(len(rows)), len(rows) // 3):
                rows[i][f] = value
        elif c == "null":
            for i in picked:
                kind = rng.choice(["feature", "feature", "id_null", "id_blank"])
                if kind == "feature":
                    rows[i][f] = None
                else:
                    rows[i]["cset_id"] = None if kind == "id_null" else "  "
    # a long column keeps ints, a double column gets floats
    for f, t in types.items():
        for r in rows:
            if r[f] is not None:
                r[f] = float(r[f]) if t == "double" else r[f]
    for f in FEATURES:
        if types.get(f) != "double":
            for r in rows:
                if isinstance(r[f], float):
                    r[f] = int(r[f])
    return rows, types


def frame(rows: list[dict[str, Any]], types: dict[str, str]):
    ddl = ", ".join(f"{c} {types.get(c, t)}" for c, t in CSETS_DDL_COLUMNS)
    return _spark().createDataFrame([tuple(r[c] for c, _ in CSETS_DDL_COLUMNS) for r in rows], ddl)


# ---- the reference ---------------------------------------------------------------------------------


def reference_reason(row: dict[str, Any]) -> str | None:
    """Why the reference leaves a row out of the frame (None: in the frame)."""
    cid = row["cset_id"]
    if cid is None or not cid.strip():
        return "missing cset_id"
    for f in FEATURES:
        v = row[f]
        if v is None:
            return f"null {f}"
        v = float(v)
        if math.isnan(v):
            return f"{f} is NaN, not a count"
        if math.isinf(v):
            return f"{f} is {'+' if v > 0 else '-'}inf, not a finite count"
        if v < 0:
            return f"negative {f}: a count cannot be below 0"
    return None


def has_url(row: dict[str, Any]) -> bool:
    return any(u is not None and u.strip() for u in row["sample_urls"] or [])


def reference(rows: list[dict[str, Any]], n_strata: int) -> dict[str, Any]:
    """Bounds, stratum of every frame row per feature and the expected rejects, from the rules."""
    reasons = [reference_reason(r) for r in rows]
    kept = [r for r, why in zip(rows, reasons) if why is None]
    ref: dict[str, Any] = {"bounds": {}, "stratum": {}, "population": {}, "rejects": []}
    for r, why in zip(rows, reasons):
        if why is not None:
            ref["rejects"].append((r["cset_id"], why))
        elif not has_url(r):
            ref["rejects"].append((r["cset_id"], "no sample URL"))
    for f in FEATURES:
        x = np.array([float(r[f]) for r in kept], dtype=np.float64)
        if not len(x):
            ref["bounds"][f] = []
            continue
        bounds = [float(np.quantile(x, k / n_strata, method="inverted_cdf")) for k in range(1, n_strata)]
        strata = np.searchsorted(np.array(bounds), x, side="left") + 1
        ref["bounds"][f] = bounds
        ref["stratum"][f] = {r["cset_id"]: int(s) for r, s in zip(kept, strata)}
        ref["population"][f] = [int((strata == k).sum()) for k in range(1, n_strata + 1)]
    return ref


# ---- the comparison --------------------------------------------------------------------------------


def compare(
    rows: list[dict[str, Any]], ref: dict[str, Any], stats: dict[str, Any], samples: list[dict], rejects: list[dict]
) -> str | None:
    """The first way the job's output differs from the reference (None: it does not)."""
    c = stats["counters"]
    if c["csets_in"] != len(rows) or c["csets_in"] != c["csets_drawable"] + c["csets_rejected"]:
        return f"counters do not reconcile: {c}"
    if c["csets_rejected"] != len(ref["rejects"]) or len(rejects) != len(ref["rejects"]):
        return f"{len(rejects)} reject rows ({c['csets_rejected']} counted), the reference {len(ref['rejects'])}"
    got = []
    for rj in rejects:
        m = _ID_IN_RAW.match(rj["raw"] or "")
        got.append((m.group(1) if m else None, rj["reason"]))
    want = [(cid if cid is not None else None, why) for cid, why in ref["rejects"]]
    if sorted(got, key=repr) != sorted(want, key=repr):
        extra = sorted(set(got) - set(want), key=repr)[:2]
        missing = sorted(set(want) - set(got), key=repr)[:2]
        return f"reject rows differ: job only {extra}, reference only {missing}"
    for f in FEATURES:
        if stats["bounds"][f] != ref["bounds"][f]:
            return f"{f}: bounds {stats['bounds'][f]}, reference {ref['bounds'][f]}"
        pops = [s["population"] for s in stats["strata_sizes"] if s["feature"] == f]
        if ref["bounds"][f] and pops != ref["population"][f]:
            return f"{f}: stratum populations {pops}, reference {ref['population'][f]}"
    by_id = {r["cset_id"]: r for r in rows if r["cset_id"] is not None}
    for s in samples:
        f, cid = s["feature"], s["cset_id"]
        want_stratum = ref["stratum"].get(f, {}).get(cid)
        if want_stratum is None:
            return f"drawn C-set {cid} ({f}) is outside the reference frame"
        if s["stratum_index"] != want_stratum:
            return f"drawn C-set {cid}: {f}={s['value']} in stratum {s['stratum_index']}, reference {want_stratum}"
        if float(s["value"]) != float(by_id[cid][f]):
            return f"drawn C-set {cid}: value {s['value']}, input {by_id[cid][f]}"
        if s["page_url"] not in (by_id[cid]["sample_urls"] or []):
            return f"drawn C-set {cid}: page {s['page_url']!r} is not one of its sample URLs"
    return None


# ---- running the job ---------------------------------------------------------------------------------


def _settings():
    from udfs.runtime.config import load_config

    conf = load_config().sample
    return conf, dict(
        features=FEATURES,
        n_strata=conf.strata,
        per_stratum=conf.per_stratum,
        seed=conf.seed,
        replacement_urls=conf.replacement_urls,
        replacement_csets=conf.replacement_csets,
        reject_raw_chars=conf.reject_raw_chars,
    )


def run_step(rows, types) -> tuple[dict, list[dict], list[dict]]:
    """The job's sampling step in-process: stats, sample rows, reject rows."""
    from udfs.corpus.sampling import sample_csets

    _, settings = _settings()
    result = sample_csets(frame(rows, types), **settings, source="fuzz")
    samples = [r.asDict(recursive=True) for r in result.samples.collect()]
    rejects = [r.asDict() for r in result.rejects.collect()]
    return result.stats, samples, rejects


def run_job(rows, types, out: Path) -> tuple[dict, list[dict], list[dict]]:
    """The real job (jobs/sample.py) over the rows written as Parquet: its run record, its
    ``samples/`` and ``rejects/sample/`` rows."""
    from testkit.fuzz import run_job

    table = out / "csets"
    frame(rows, types).write.mode("overwrite").parquet(str(table))
    rc = run_job("sample", "--input", str(table), "--output", str(out), "--no-plots", "--features", *FEATURES)
    record = out / "samples" / "_run.json"
    run = json.loads(record.read_text()) if record.exists() else {}
    # no drawable C-set at all: the run exits 2 (nothing succeeded, issue 64), its tables still written
    if rc != 0 and not (rc == 2 and run.get("status", "").startswith("failed: no ")):
        raise RuntimeError("jobs/sample.py exited non-zero")
    if run["counters"]["reconciles"] is not True:
        raise RuntimeError(f"run record does not reconcile: {run['inputs']}")
    spark = _spark()
    samples = [r.asDict(recursive=True) for r in spark.read.parquet(str(out / "samples")).collect()]
    rej_dir = out / "rejects" / "sample"
    rejects = [r.asDict() for r in spark.read.parquet(str(rej_dir)).collect()] if rej_dir.exists() else []
    return run, samples, rejects


def fuzz(work: Path, *, seed: int, rounds: int | None = None, budget_s: float | None = None) -> list[Tally]:
    """Rounds of one input per class (see the module's docstring) until ``rounds`` or ``budget_s``."""
    start = time.monotonic()
    work.mkdir(parents=True, exist_ok=True)
    base = real_csets(work)
    conf, _ = _settings()
    tallies = {c: Tally(JOB, c, REFERENCE) for c in CLASSES}
    rng = random.Random(seed)
    done = 0
    while (rounds is None or done < rounds) and (budget_s is None or time.monotonic() - start < budget_s):
        for cls in CLASSES:
            rows, types = mutate(base, cls, rng)
            ref = reference(rows, conf.strata)
            runs = [("step", run_step)]
            if cls == "mixed":
                runs.append(("job", lambda r, t: run_job(r, t, work / f"job-{done}")))
            for how, fn in runs:
                try:
                    diff = compare(rows, ref, *fn(rows, types))
                except Exception as exc:  # noqa: BLE001 - a job that fails on an input is a discrepancy
                    diff = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"
                mutated = [r for r in ref["rejects"] if r[1] != "no sample URL"]
                tallies[cls].add(
                    explained=bool(mutated), discrepancy=None if diff is None else f"{how}, round {done}: {diff}"
                )
        done += 1
    return list(tallies.values())
