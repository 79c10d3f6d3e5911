"""The sample job against a numpy reference on a real csets table with values altered
(testkit.fuzz.sample): +inf, -inf, NaN, negative and null values are reject rows naming the C-set
and the cause (before: +inf or -inf ended the job with ARITHMETIC_OVERFLOW, a negative count went
to the low stratum without a word), and the largest double no longer overflows the histogram."""

from __future__ import annotations

import json
import math
import sys

import pytest

from testkit.fuzz import sample as Z
from udfs.corpus import sampling as S


@pytest.fixture(scope="module")
def work(spark, tmp_path_factory):
    """A folder holding the csets table of the bundled WDC quads (the csets job's real output)."""
    work = tmp_path_factory.mktemp("fuzz-sample")
    Z.real_csets(work)
    return work


@pytest.fixture(scope="module")
def base(work):
    return Z.real_csets(work)


def _altered(base, changes: dict[int, tuple[str, float | int | None]]):
    """``base`` with row i's feature set to a value; the features as double."""
    rows = [dict(r) for r in base]
    for i, (f, v) in changes.items():
        rows[i][f] = v
    for r in rows:
        for f in Z.FEATURES:
            r[f] = None if r[f] is None else float(r[f])
    return rows, {f: "double" for f in Z.FEATURES}


def test_non_finite_and_negative_values_are_reject_rows_naming_the_cset(base, tmp_path):
    changes = {
        3: ("n_instances", math.inf),
        10: ("n_properties", -math.inf),
        20: ("n_instances", math.nan),
        30: ("n_instances", -2.0),
        40: ("n_properties", None),
    }
    rows, types = _altered(base, changes)
    run, samples, rejects = Z.run_job(rows, types, tmp_path)  # the real job: exit 0, reconciles
    by_id = {json.loads(r["raw"])["cset_id"]: r["reason"] for r in rejects if r["reason"] != "no sample URL"}
    assert by_id == {
        base[3]["cset_id"]: "n_instances is +inf, not a finite count",
        base[10]["cset_id"]: "n_properties is -inf, not a finite count",
        base[20]["cset_id"]: "n_instances is NaN, not a count",
        base[30]["cset_id"]: "negative n_instances: a count cannot be below 0",
        base[40]["cset_id"]: "null n_properties",
    }
    c = run["counters"]
    assert c["csets_in"] == len(base) == c["csets_drawable"] + c["csets_rejected"]
    # the negative count is in no stratum: the low stratum holds only frame rows
    frame = [r for r, why in zip(rows, map(Z.reference_reason, rows)) if why is None]
    assert sum(s["population"] for s in run["strata_sizes"] if s["feature"] == "n_instances") == len(frame)
    assert base[30]["cset_id"] not in {s["cset_id"] for s in samples}
    assert Z.compare(rows, Z.reference(rows, run["strata"]), run, samples, rejects) is None


def test_largest_double_has_a_top_histogram_bin(base):
    rows, types = _altered(base, {5: ("n_properties", sys.float_info.max), 6: ("n_properties", 1e308)})
    _, settings = Z._settings()
    result = S.sample_csets(Z.frame(rows, types), **settings)  # before: OverflowError on 2.0 ** 1024
    assert result.histograms["n_properties"]["bins"][-1] == {
        "lower": 2.0**1023,
        "upper": sys.float_info.max,
        "count": 2,
    }
    samples = [r.asDict(recursive=True) for r in result.samples.collect()]
    rejects = [r.asDict() for r in result.rejects.collect()]
    assert Z.compare(rows, Z.reference(rows, result.stats["strata"]), result.stats, samples, rejects) is None


def test_differential_round_against_numpy(work):
    tallies = Z.fuzz(work, seed=1, rounds=1)
    assert {t.cls for t in tallies} == set(Z.CLASSES)
    assert all(t.inputs >= 1 for t in tallies)
    assert [(t.cls, t.examples) for t in tallies if t.discrepancies] == []
