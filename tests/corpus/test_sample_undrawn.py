"""What the sample never drew: every C-set and page of the input is drawn or never drawn with its
reason (a stratum full, a C-set not drawable, another page of a drawn C-set taken), in the run
record's counters and the summary, on constructed tables and on the csets of the bundled WDC quads."""

from __future__ import annotations

import json

from tests.corpus.test_sample import CSETS_DDL, FEATURES, _run_job, bundled_csets, cid, draw  # noqa: F401
from udfs.corpus import sample_counts
from udfs.corpus import sampling as S


def expected_never_drawn(csets: list[dict], samples: list[dict]) -> dict[str, int]:
    """The counters computed apart from the job, from the input rows and the sample rows (a C-set
    is drawable when it is the only row of its id, has every feature >= 0 and a non-blank URL)."""
    ids = [r["cset_id"] for r in csets]
    drawn_ids = {r["cset_id"] for r in samples}
    drawn_pages = {r["page_url"] for r in samples}

    def urls(r):
        return {u for u in r["sample_urls"] or () if u is not None and u.strip()}

    def drawable(r):
        return (
            r["cset_id"] is not None
            and ids.count(r["cset_id"]) == 1
            and all(r[f] is not None and r[f] >= 0 for f in FEATURES)
            and bool(urls(r))
        )

    out = {"csets_drawn": 0, "csets_never_drawn_stratum_full": 0, "csets_never_drawn_not_drawable": 0}
    holders: dict[str, list[tuple[bool, bool]]] = {}
    for r in csets:
        is_drawn = r["cset_id"] in drawn_ids
        ok = drawable(r)
        key = (
            "csets_drawn" if is_drawn else "csets_never_drawn_stratum_full" if ok else "csets_never_drawn_not_drawable"
        )
        out[key] += 1
        for u in urls(r):
            holders.setdefault(u, []).append((is_drawn, ok))
    reasons = {"drawn": 0, **{k: 0 for k in S.PAGE_NEVER_DRAWN}}
    for u, hs in holders.items():
        if u in drawn_pages:
            reasons["drawn"] += 1
        elif any(d for d, _ in hs):
            reasons["other_page_of_cset"] += 1
        elif any(ok for _, ok in hs):
            reasons["stratum_full"] += 1
        else:
            reasons["not_drawable"] += 1
    out["csets_never_drawn"] = out["csets_never_drawn_stratum_full"] + out["csets_never_drawn_not_drawable"]
    out["pages_in"] = len(holders)
    out["pages_drawn"] = reasons.pop("drawn")
    out["pages_never_drawn"] = sum(reasons.values())
    out.update({f"pages_never_drawn_{k}": v for k, v in reasons.items()})
    return out


def counters_of(result) -> dict[str, int]:
    return {k: v for k, v in result.stats["counters"].items() if k.startswith(("csets_drawn", "csets_never", "pages_"))}


def test_each_cset_and_page_never_drawn_has_its_reason(spark):
    """One stratum of two draws over nine C-sets: four drawable C-sets for two places (two
    stratum full), one without a URL, one with a negative count, two rows of one cset_id (not
    drawable); a page shared by a drawn and an undrawn C-set is drawn once; a drawn C-set's other
    URLs are never drawn for that reason; a page only an undrawable C-set holds says so."""
    rows = [
        (cid(0), ["T"], ["p"], 1, 1, 1, 1, ["http://a.org/0", "http://a.org/0b", "http://a.org/0c"]),
        (cid(1), ["T"], ["p"], 1, 2, 1, 1, ["http://a.org/1", "http://a.org/shared"]),
        (cid(2), ["T"], ["p"], 1, 3, 1, 1, ["http://a.org/2", "http://a.org/shared"]),
        (cid(3), ["T"], ["p"], 1, 4, 1, 1, ["http://a.org/3"]),
        (cid(4), ["T"], ["p"], 1, 5, 1, 1, ["  ", None]),
        (cid(5), ["T"], ["p"], 1, -1, 1, 1, ["http://a.org/5", "http://a.org/3"]),
        (cid(6), ["T"], ["p"], 1, 6, 1, 1, ["http://a.org/6"]),
        (cid(6), ["T"], ["p"], 1, 6, 1, 1, ["http://a.org/6"]),
        (None, ["T"], ["p"], 1, 7, 1, 1, ["http://a.org/7"]),
    ]
    df = spark.createDataFrame(rows, CSETS_DDL)
    result = draw(df, features=FEATURES, n_strata=1, per_stratum=2)
    samples = [r.asDict() for r in result.samples.collect()]
    got = counters_of(result)
    assert got == expected_never_drawn([r.asDict() for r in df.collect()], samples)
    # 4 drawable C-sets, 2 drawn per feature (the same two or not: each feature draws apart)
    drawn = {r["cset_id"] for r in samples}
    assert got["csets_drawn"] == len(drawn) and 2 <= len(drawn) <= 4
    c = result.stats["counters"]
    assert (
        c["csets_in"]
        == 9
        == c["csets_drawn"] + c["csets_never_drawn_stratum_full"] + c["csets_never_drawn_not_drawable"]
    )
    assert c["csets_never_drawn_stratum_full"] == 4 - len(drawn)
    # 10 distinct non-blank URLs: a.org/5 and a.org/7 are held only by C-sets that cannot be drawn
    assert c["pages_in"] == 10 and c["pages_in"] == c["pages_drawn"] + c["pages_never_drawn"]
    assert c["pages_never_drawn_not_drawable"] == 3  # a.org/5, a.org/6, a.org/7
    lines = sample_counts.summary({**result.stats, "counters": {**c, "rows_out": len(samples)}})
    assert (
        f"  never drawn: {c['pages_never_drawn']} of 10 pages, {c['csets_never_drawn']} of 9 C-sets "
        f"(stratum full {4 - len(drawn)}, not drawable 5)"
    ) in lines


def test_nothing_drawable_is_all_never_drawn(spark):
    rows = [(cid(i), ["T"], ["p"], 1, None, 1, 1, [f"http://b.org/{i}"]) for i in range(3)]
    result = draw(spark.createDataFrame(rows, CSETS_DDL), features=FEATURES)
    c = result.stats["counters"]
    assert (c["csets_drawn"], c["csets_never_drawn_not_drawable"], c["csets_never_drawn_stratum_full"]) == (0, 3, 0)
    assert (c["pages_in"], c["pages_never_drawn"], c["pages_never_drawn_not_drawable"]) == (3, 3, 3)


def test_the_job_on_the_bundled_wdc_csets_says_what_it_never_drew(spark, bundled_csets, tmp_path, capsys):  # noqa: F811
    """The csets of the bundled WDC quads: the run record's counters agree with a count made apart
    from the job, reconcile, and the summary line says them."""
    out = bundled_csets
    assert _run_job(["--input", str(out / "csets"), "--output", str(tmp_path), "--no-plots"]) == 0
    printed = capsys.readouterr().out
    c = json.loads((tmp_path / "samples" / "_run.json").read_text())["counters"]
    csets = [r.asDict() for r in spark.read.parquet(str(out / "csets")).collect()]
    samples = [r.asDict() for r in spark.read.parquet(str(tmp_path / "samples")).collect()]
    assert {k: c[k] for k in expected_never_drawn(csets, samples)} == expected_never_drawn(csets, samples)
    assert c["reconciles"] is True and c["pages_never_drawn"] > 0 and c["csets_never_drawn_stratum_full"] > 0
    assert c["pages_in"] == len({u for r in csets for u in r["sample_urls"] or () if u and u.strip()})
    assert (
        f"  never drawn: {c['pages_never_drawn']} of {c['pages_in']} pages, {c['csets_never_drawn']} of "
        f"{c['csets_in']} C-sets (stratum full {c['csets_never_drawn_stratum_full']}, "
        f"not drawable {c['csets_never_drawn_not_drawable']})"
    ) in printed.splitlines()
