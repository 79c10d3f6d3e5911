"""The sampling step: exact quantile bounds, ties, Spearman's rho, the seeded draw, replacements,
rejects, empty and one-row inputs, and the job on the bundled WDC quads through the csets job."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from udfs.corpus import sampling as S
from udfs.runtime.config import load_config
from udfs.runtime.rejects import REJECTS_SCHEMA

CSETS_DDL = (
    "cset_id string, types array<string>, properties array<string>, n_properties long, "
    "n_instances long, n_pages long, n_domains long, sample_urls array<string>"
)
FEATURES = ["n_instances", "n_properties"]
CONF = load_config().sample  # the settings a test does not set are conf/pipeline.toml's [sample]
SETTINGS = dict(
    n_strata=CONF.strata,
    per_stratum=CONF.per_stratum,
    seed=CONF.seed,
    replacement_urls=CONF.replacement_urls,
    replacement_csets=CONF.replacement_csets,
    reject_raw_chars=CONF.reject_raw_chars,
)


def draw(df, **kw):
    """S.sample_csets with [sample]'s settings, ``kw`` replacing some."""
    return S.sample_csets(df, **{**SETTINGS, **kw})


def cid(i) -> str:
    return hashlib.sha256(str(i).encode()).hexdigest()


def table(spark, values, urls=None):
    """A csets table from (n_instances, n_properties) pairs; C-set i has URLs http://e.org/i/0..k."""
    rows = []
    for i, (ni, npr) in enumerate(values):
        u = urls[i] if urls is not None else [f"http://e.org/{i}/{j}" for j in range(1 + i % 4)]
        rows.append((cid(i), [f"T{i % 3}"], [f"p{j}" for j in range(int(npr or 1))], npr, ni, 1, 1, u))
    return spark.createDataFrame(rows, CSETS_DDL)


def rows_of(result):
    """The sample rows, collected once per result (the sample is a lazy Spark plan)."""
    if not hasattr(result, "rows"):
        result.rows = [
            r.asDict(recursive=True)
            for r in result.samples.orderBy("feature", "stratum_index", "sample_rank").collect()
        ]
    return result.rows


def strata(result, feature):
    return [s for s in result.stats["strata_sizes"] if s["feature"] == feature]


# ---- bounds, ties and rho on hand-computed tables -----------------------------------------------


@pytest.fixture(scope="module")
def known(spark):
    """Nine C-sets; n_pages has WDC-like heavy ties, n_domains reverses n_instances, const is constant."""
    ni = [5, 1, 13, 1, 2, 1, 8, 3, 1]
    npr = [9, 1, 2, 4, 4, 3, 7, 5, 6]
    pages = [1, 1, 1, 40, 1, 1, 2, 1, 1]
    rows = [(cid(i), ["T"], ["p"], npr[i], ni[i], pages[i], 100 - ni[i], [f"http://e.org/{i}/0"]) for i in range(9)]
    df = spark.createDataFrame(rows, CSETS_DDL).withColumn("const", F.lit(4).cast("long"))
    return draw(df, features=FEATURES + ["n_pages", "n_domains", "const"], per_stratum=3, replacement_csets=1)


def test_known_tertiles_ties_go_down(known):
    res = known
    # n_instances sorted: 1 1 1 1 2 3 5 8 13. N = 9, S = 3:
    # q1 = min{v : #(x<=v)*3 >= 9} = 1 (four 1s; the fourth is past the tertile: ties go down),
    # q2 = min{v : #(x<=v)*3 >= 18} = 3. Strata (-inf,1] = 4, (1,3] = 2, (3,13] = 3.
    assert res.stats["bounds"]["n_instances"] == [1.0, 3.0]
    low, med, high = strata(res, "n_instances")
    assert (low["stratum"], low["lower"], low["upper"], low["population"]) == ("low", None, 1.0, 4)
    assert (med["stratum"], med["lower"], med["upper"], med["population"]) == ("medium", 1.0, 3.0, 2)
    assert (high["stratum"], high["lower"], high["upper"], high["population"]) == ("high", 3.0, 13.0, 3)
    assert [s["drawn"] for s in (low, med, high)] == [3, 2, 3]
    assert any("n_instances/medium: drew 2 of 3" in w for w in res.stats["warnings"])
    # n_properties sorted 1 2 3 4 4 5 6 7 9: q1 = 3 (3rd value), q2 = 5 (6th value).
    assert res.stats["bounds"]["n_properties"] == [3.0, 5.0]
    assert [s["population"] for s in strata(res, "n_properties")] == [3, 3, 3]
    # Every drawn C-set lies in its stratum's interval (lower, upper].
    for r in rows_of(res):
        assert (r["lower"] is None or r["value"] > r["lower"]) and r["value"] <= r["upper"], r


def test_heavy_ties_leave_empty_strata_reported_and_undrawn(known):
    # n_pages: seven 1s, then 2 and 40 (most C-sets on one page, as in WDC): q1 = q2 = 1, so
    # "medium" = (1, 1] is empty; "high" = (1, 40] holds 2.
    res = known
    assert res.stats["bounds"]["n_pages"] == [1.0, 1.0]
    assert [(s["stratum"], s["population"], s["drawn"]) for s in strata(res, "n_pages")] == [
        ("low", 7, 3),
        ("medium", 0, 0),
        ("high", 2, 2),
    ]
    assert any("n_pages/medium" in w and "empty stratum" in w for w in res.stats["warnings"])
    assert sorted({r["stratum"] for r in rows_of(res) if r["feature"] == "n_pages"}) == ["high", "low"]
    # A constant feature: every bound is the value, everything is "low".
    assert res.stats["bounds"]["const"] == [4.0, 4.0]
    assert [s["population"] for s in strata(res, "const")] == [9, 0, 0]


def test_hand_computed_spearman_rho(known):
    rho = known.stats["spearman"]
    # Average ranks of n_instances: the four 1s share (1+2+3+4)/4 = 2.5, then 2 -> 5, 3 -> 6,
    # 5 -> 7, 8 -> 8, 13 -> 9; of n_properties: 1 -> 1, 2 -> 2, 3 -> 3, the two 4s share 4.5,
    # 5 -> 6, 6 -> 7, 7 -> 8, 9 -> 9. In row order:
    rx = [7, 2.5, 9, 2.5, 5, 2.5, 8, 6, 2.5]
    ry = [9, 1, 2, 4.5, 4.5, 3, 8, 6, 7]
    # Both rank lists have mean 5. Deviations dx = 2 -2.5 4 -2.5 0 -2.5 3 1 -2.5,
    # dy = 4 -4 -3 -0.5 -0.5 -2 3 1 2: sum dx*dy = 8+10-12+1.25+0+5+9+1-5 = 17.25,
    # sum dx^2 = 4+6.25+16+6.25+0+6.25+9+1+6.25 = 55, sum dy^2 = 16+16+9+.25+.25+4+9+1+4 = 59.5.
    assert sum(rx) / 9 == 5 and sum(ry) / 9 == 5
    expected = 17.25 / math.sqrt(55 * 59.5)
    assert expected == pytest.approx(0.30154, abs=1e-5)
    assert rho["n_instances~n_properties"]["n"] == 9
    assert rho["n_instances~n_properties"]["rho"] == pytest.approx(expected, abs=1e-12)
    # n_domains = 100 - n_instances: ranks exactly reversed, ties included.
    assert rho["n_instances~n_domains"]["rho"] == pytest.approx(-1.0, abs=1e-12)
    assert rho["n_properties~const"]["rho"] is None and "constant" in rho["n_properties~const"]["reason"]
    assert len(rho) == 10  # every pair of the five features


# ---- the draw -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def population(spark):
    """150 C-sets with skewed features, 30 without a usable URL; one without n_instances, one
    without cset_id."""
    vals, urls = [], []
    for i in range(150):
        vals.append((1 + (i * 7919) % 97 // (1 + i % 5), 1 + (i * 104729) % 23))
        urls.append(
            []
            if i % 10 == 3
            else [" "]
            if i % 10 == 7
            else [f"http://e.org/{i}/{j}" for j in range(1 + i % 4)] + [f"http://e.org/{i}/0"]
        )
    bad = spark.createDataFrame(
        [
            (cid(1000), ["A"], ["p"], 2, None, 1, 1, ["http://e.org/1000"]),
            (None, ["A"], ["p"], 2, 3, 1, 1, ["http://e.org/1001"]),
        ],
        CSETS_DDL,
    )
    return table(spark, vals, urls).unionByName(bad)


@pytest.fixture(scope="module")
def drawn(population):
    return draw(
        population.repartition(1), features=FEATURES, per_stratum=6, seed=7, replacement_urls=2, replacement_csets=3
    )


def test_same_seed_same_sample_whatever_the_partitioning(population, drawn):
    shuffled = population.repartition(7, "n_properties").sortWithinPartitions("cset_id", ascending=False)
    again = draw(shuffled, features=FEATURES, per_stratum=6, seed=7, replacement_urls=2, replacement_csets=3)
    assert rows_of(again) == rows_of(drawn)
    assert again.stats["bounds"] == drawn.stats["bounds"]
    assert again.stats["strata_sizes"] == drawn.stats["strata_sizes"]
    assert again.stats["spearman"] == drawn.stats["spearman"]
    other = draw(population, features=FEATURES, per_stratum=6, seed=8, replacement_urls=2, replacement_csets=3)
    assert {r["cset_id"] for r in rows_of(other)} != {r["cset_id"] for r in rows_of(drawn)}


def test_draw_contract_strata_urls_and_replacements(population, drawn):
    by_id = {r["cset_id"]: r.asDict() for r in population.collect()}
    rows = rows_of(drawn)
    assert len(rows) == sum(s["drawn"] for s in drawn.stats["strata_sizes"]) == 36
    bounds = drawn.stats["bounds"]
    for r in rows:
        src = by_id[r["cset_id"]]
        assert r["seed"] == 7 and r["types"] == src["types"] and r["properties"] == src["properties"]
        assert r["value"] == src[r["feature"]]
        assert S.stratum_names(3)[r["stratum_index"] - 1] == r["stratum"]
        idx = 1 + sum(r["value"] > q for q in bounds[r["feature"]])
        assert idx == r["stratum_index"]
        assert r["page_url"] in src["sample_urls"] and r["page_url"].strip()
    for feature, stratum in {(r["feature"], r["stratum"]) for r in rows}:
        group = [r for r in rows if (r["feature"], r["stratum"]) == (feature, stratum)]
        assert [r["sample_rank"] for r in group] == list(range(1, len(group) + 1))
        drawn_ids = {r["cset_id"] for r in group}
        assert len(drawn_ids) == len(group)
        seen_other = set()
        for r in group:
            reps = r["replacements"]
            assert [c["rank"] for c in reps] == list(range(1, len(reps) + 1))
            own = [c for c in reps if c["cset_id"] == r["cset_id"]]
            others = [c for c in reps if c["cset_id"] != r["cset_id"]]
            assert reps[: len(own)] == own, "own URLs come first"
            own_urls = set(by_id[r["cset_id"]]["sample_urls"])
            assert len(own) == min(2, len(own_urls) - 1)
            assert {c["page_url"] for c in own} <= own_urls - {r["page_url"]}
            for c in others:
                assert c["cset_id"] not in drawn_ids and c["cset_id"] not in seen_other
                seen_other.add(c["cset_id"])
                src = by_id[c["cset_id"]]
                assert c["page_url"] in src["sample_urls"] and c["types"] == src["types"]
                assert 1 + sum(src[feature] > q for q in bounds[feature]) == r["stratum_index"]
            assert len(others) <= 3
    # The stratum's undrawn drawable C-sets are dealt out as replacements, none left out up to 3 each.
    for s in drawn.stats["strata_sizes"]:
        group = [r for r in rows if (r["feature"], r["stratum"]) == (s["feature"], s["stratum"])]
        n_other = sum(1 for r in group for c in r["replacements"] if c["cset_id"] != r["cset_id"])
        assert n_other == min(s["drawable"] - s["drawn"], 3 * 6)


def test_rejects_reconcile_and_unusable_csets_still_count_in_the_distribution(drawn):
    c = drawn.stats["counters"]
    assert c["csets_in"] == 152
    assert c["rejects_by_reason"] == {"no sample URL": 30, "null n_instances": 1, "missing cset_id": 1}
    assert c["csets_in"] == c["csets_drawable"] + c["csets_rejected"] == 120 + 32
    # Without a URL a C-set cannot be drawn but is still part of the distribution.
    assert c["csets_in_frame"] == 150
    assert sum(s["population"] for s in strata(drawn, "n_instances")) == 150
    assert sum(s["drawable"] for s in strata(drawn, "n_instances")) == 120
    rejected = drawn.rejects.collect()
    assert len(rejected) == 32
    # the one rejects contract: same columns and types as every other job's rejects
    assert [(f.name, f.dataType) for f in drawn.rejects.schema] == [(f.name, f.dataType) for f in REJECTS_SCHEMA]
    assert sorted(r.reason for r in rejected).count("no sample URL") == 30
    # A C-set row has no line number: position is null and raw (its row, cset_id first) names it.
    assert all(r.position is None and r.raw.startswith('{"cset_id"') for r in rejected if r.reason != "missing cset_id")
    named = {json.loads(r.raw).get("cset_id") for r in rejected}
    assert {json.loads(r.raw)["cset_id"] for r in rejected if r.reason == "null n_instances"} == {cid(1000)}
    assert not named & {r["cset_id"] for r in rows_of(drawn)}


def test_a_cset_id_given_twice_is_never_drawn_twice_and_each_of_its_rows_is_a_reject(spark):
    """Two C-set tables of one crawl read together: C-set 3 is in both (the same row) and C-set 5
    twice with other counts. Before, C-set 3 was drawn twice in one stratum; now none of those rows
    is drawn or counted in the distribution, each is a reject naming its cset_id, and the run's
    counters say how many ids."""
    first = table(spark, [(i + 1, 5) for i in range(8)])
    second = first.where(F.col("cset_id").isin(cid(3), cid(5))).withColumn(
        "n_instances", F.when(F.col("cset_id") == cid(5), F.lit(40)).otherwise(F.col("n_instances"))
    )
    res = draw(first.unionByName(second), features=FEATURES, per_stratum=30)
    rows = rows_of(res)
    per_stratum = [(r["feature"], r["stratum"], r["cset_id"]) for r in rows]
    assert len(per_stratum) == len(set(per_stratum))
    assert not {r["cset_id"] for r in rows} & {cid(3), cid(5)}
    assert {r["cset_id"] for r in rows} == {cid(i) for i in range(8)} - {cid(3), cid(5)}
    c = res.stats["counters"]
    assert c["duplicate_cset_ids"] == 2 and c["rejects_by_reason"] == {S.DUPLICATE_CSET_ID: 4}
    assert c["csets_in"] == 10 == c["csets_drawable"] + c["csets_rejected"] and c["csets_in_frame"] == 6
    rejected = res.rejects.collect()
    assert sorted(json.loads(r.raw)["cset_id"] for r in rejected) == sorted([cid(3), cid(3), cid(5), cid(5)])
    assert {r.reason for r in rejected} == {S.DUPLICATE_CSET_ID}


# ---- degenerate inputs --------------------------------------------------------------------------


def test_one_row_input_draws_it_in_the_lowest_stratum(spark):
    res = draw(table(spark, [(3, 5)]), features=FEATURES, per_stratum=30)
    assert res.stats["bounds"] == {"n_instances": [3.0, 3.0], "n_properties": [5.0, 5.0]}
    rows = rows_of(res)
    assert [(r["feature"], r["stratum"], r["page_url"], r["replacements"]) for r in rows] == [
        ("n_instances", "low", "http://e.org/0/0", []),
        ("n_properties", "low", "http://e.org/0/0", []),
    ]
    assert res.stats["spearman"]["n_instances~n_properties"]["reason"] == "fewer than 2 C-sets"


def test_bad_inputs_and_settings_are_clear_errors(spark):
    df = table(spark, [(1, 1)])
    with pytest.raises(S.SampleError, match="missing columns"):
        draw(df.drop("sample_urls"), features=FEATURES)
    with pytest.raises(S.SampleError, match="not numeric"):
        draw(df, features=["cset_id"])
    with pytest.raises(S.SampleError, match="strata must be >= 1"):
        draw(df, features=FEATURES, n_strata=0)
    assert S.stratum_names(5) == ["q1", "q2", "q3", "q4", "q5"]


# ---- the job on the bundled WDC quads -----------------------------------------------------------


def _run_job(argv):
    from jobs.sample import SampleJob

    return SampleJob(argv).main()


def test_job_on_empty_and_missing_inputs(spark, tmp_path, capsys):
    empty = tmp_path / "csets"
    spark.createDataFrame([], CSETS_DDL).write.parquet(str(empty))
    assert _run_job(["--input", str(empty), "--output", str(tmp_path), "--no-plots"]) == 0
    run = json.loads((tmp_path / "samples" / "_run.json").read_text())
    assert run["empty_reason"] == "no C-sets in the input" and run["counters"]["rows_out"] == 0
    assert run["bounds"] == {"n_instances": [], "n_properties": []}
    assert run["spearman"]["n_instances~n_properties"] == {"rho": None, "n": 0, "reason": "fewer than 2 C-sets"}
    written = spark.read.parquet(str(tmp_path / "samples"))
    assert written.count() == 0 and written.columns == S.SAMPLES_SCHEMA.fieldNames()
    with pytest.raises(SystemExit) as exc:
        _run_job(["--input", str(tmp_path / "nowhere"), "--output", str(tmp_path)])
    # a missing table is a usage error: one line in argparse's style, exit status 2
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        exc.value.code == 2 and err[-1].startswith("sample.py: error: --input ") and "no such file or folder" in err[-1]
    )


def test_job_names_a_cset_id_given_by_two_input_tables(spark, tmp_path, capsys):
    first = table(spark, [(i + 1, 5) for i in range(6)])
    first.write.parquet(str(tmp_path / "crawl_a"))
    first.where(F.col("cset_id") == cid(2)).write.parquet(str(tmp_path / "crawl_b"))
    argv = ["--input", str(tmp_path / "crawl_a"), str(tmp_path / "crawl_b"), "--output", str(tmp_path), "--no-plots"]
    assert _run_job(argv) == 0
    assert (
        # the job's own summary lines go to stdout, before the common block (udfs.runtime.closing)
        "duplicate cset_id: 1 ids given by 2 rows, none drawn (rejects/sample/ names them)" in capsys.readouterr().out
    )
    c = json.loads((tmp_path / "samples" / "_run.json").read_text())["counters"]
    assert c["duplicate_cset_ids"] == 1 and c["rejects_by_reason"] == {S.DUPLICATE_CSET_ID: 2} and c["reconciles"]
    drawn = [r.cset_id for r in spark.read.parquet(str(tmp_path / "samples")).collect()]
    assert cid(2) not in drawn and len(drawn) == 2 * 5
    rejects = spark.read.parquet(str(tmp_path / "rejects" / "sample")).collect()
    assert [json.loads(r.raw)["cset_id"] for r in rejects] == [cid(2), cid(2)]


@pytest.fixture(scope="module")
def bundled_csets(spark, tmp_path_factory, wdc_sample):
    """The csets table of the bundled 10k WDC quads, written by the csets job."""
    csets_job = Path(__file__).resolve().parents[2] / "jobs" / "csets.py"
    if not csets_job.exists():
        pytest.skip("jobs/csets.py has not landed yet")
    from jobs.csets import CsetsJob

    out = tmp_path_factory.mktemp("wdc")
    assert CsetsJob(["--input", str(wdc_sample), "--output", str(out)]).main() == 0
    return out


def test_job_on_the_bundled_wdc_quads(spark, bundled_csets):
    out = bundled_csets
    assert _run_job(["--input", str(out / "csets"), "--output", str(out), "--seed", "42"]) == 0
    run = json.loads((out / "samples" / "_run.json").read_text())
    csets = spark.read.parquet(str(out / "csets"))
    total = csets.count()
    c = run["counters"]
    assert c["csets_in"] == total > 100
    # every part of the table with its rows (from the footers), adding up to csets_in
    parts = sorted(str(p) for p in (out / "csets").glob("*.parquet"))
    assert len(parts) > 1 and sorted(r["source"] for r in run["inputs"]["read"]) == parts
    assert sum(r["rows"] for r in run["inputs"]["read"]) == total and c["reconciles"] is True
    assert c["csets_in"] == c["csets_drawable"] + c["csets_rejected"]
    samples = [r.asDict(recursive=True) for r in spark.read.parquet(str(out / "samples")).collect()]
    assert c["rows_out"] == len(samples) == sum(s["drawn"] for s in run["strata_sizes"])

    # Independent check of the exact bounds and rho on this small table (pandas, test side only).
    pdf = csets.select("cset_id", "n_instances", "n_properties", "sample_urls").toPandas()
    for f in FEATURES:
        xs = sorted(pdf[f])
        expected = [float(xs[math.ceil(k * len(xs) / 3) - 1]) for k in (1, 2)]
        assert run["bounds"][f] == expected
        sizes = [s["population"] for s in run["strata_sizes"] if s["feature"] == f]
        lo, hi = expected
        assert sizes == [sum(x <= lo for x in xs), sum(lo < x <= hi for x in xs), sum(x > hi for x in xs)]
    rho = pdf["n_instances"].corr(pdf["n_properties"], method="spearman")
    assert run["spearman"]["n_instances~n_properties"]["rho"] == pytest.approx(rho, abs=1e-9)

    urls = dict(zip(pdf["cset_id"], pdf["sample_urls"]))
    for r in samples:
        assert r["page_url"] in list(urls[r["cset_id"]])
        assert (r["lower"] is None or r["value"] > r["lower"]) and r["value"] <= r["upper"]
    for path in run["report"]:
        assert Path(path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
