"""The pages job's logic without the job (udfs/corpus/fetch.py): input rows to slots and rejects,
candidates in the sample's order, the capture chosen per URL, one candidate fetched, a slot's
candidates tried until one is ok; on the bundled WARC files (data/warc, data/demo)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import Row
from pyspark.sql import functions as F

from udfs.corpus import fetch
from udfs.corpus import html as P
from udfs.corpus.sampling import REPLACEMENT_TYPE
from udfs.corpus.warc import INDEX_COLUMNS, index_warc
from udfs.runtime.config import load_config
from udfs.runtime.rejects import REJECTS_SCHEMA

DATA = Path(__file__).resolve().parents[2] / "data"
WARCS = [
    DATA / "warc" / "cc-main-2020-34-excerpt.warc.gz",
    DATA / "warc" / "cc-main-2024-22-one-page.warc.gz",
    DATA / "warc" / "warcio-example.warc.gz",
    DATA / "demo" / "extruct-samples.warc.gz",
]
WIKI = "https://an.wikipedia.org/wiki/Escopete"
TOVE = "http://extruct-samples.example/songkick/tovestyrke.html"
BIG = "http://01spb.ru/company/"  # 104,567 bytes of HTML


@pytest.fixture(scope="module")
def index_rows() -> list[dict]:
    """The index rows of the bundled WARC files, absolute file names (no base)."""
    return [r for w in WARCS for r in index_warc(str(w))]


@pytest.fixture(scope="module")
def index(spark, index_rows):
    from pyspark.sql import types as T

    kinds = {"fetch_status": T.IntegerType(), "warc_record_offset": T.LongType(), "warc_record_length": T.LongType()}
    schema = T.StructType([T.StructField(c, kinds.get(c, T.StringType())) for c in INDEX_COLUMNS])
    return spark.createDataFrame([tuple(r[c] for c in INDEX_COLUMNS) for r in index_rows], schema)


@pytest.fixture(scope="module")
def cfg():
    return P.PageConfig.of(load_config().pages, time_limit_s=30.0)


def located(index_rows, url: str, **changes) -> dict:
    """A candidate row as fetch_page sees it: the capture of ``url`` (response record)."""
    r = next(r for r in index_rows if r["url"] == url and r["warc_record_type"] == "response")
    return {
        "slot": 0,
        "candidate_rank": 0,
        "page_url": url,
        "types": None,
        **{
            c: r[c]
            for c in ("warc_filename", "warc_record_offset", "warc_record_length", "fetch_status", "content_mime_type")
        },
        **changes,
    }


def rep(rank: int, url: str, cset: str = "c", types=("Thing",)) -> dict:
    return {"rank": rank, "cset_id": cset, "page_url": url, "types": list(types)}


def sample_rows(spark, rows: list[dict]):
    """A samples-like table: page_url, feature, stratum, cset_id, types and replacements."""
    from pyspark.sql import types as T

    schema = T.StructType(
        [
            T.StructField("page_url", T.StringType()),
            T.StructField("feature", T.StringType()),
            T.StructField("stratum", T.StringType()),
            T.StructField("cset_id", T.StringType()),
            T.StructField("types", T.ArrayType(T.StringType())),
            T.StructField("replacements", REPLACEMENT_TYPE),
        ]
    )
    return spark.createDataFrame([tuple(r.get(f.name) for f in schema.fields) for r in rows], schema)


# ---- input rows -------------------------------------------------------------------------------------


def test_a_table_without_page_url_is_an_error_naming_its_columns(spark):
    with pytest.raises(ValueError, match=r"no page_url column.*\['url'\]"):
        fetch.with_sample_columns(spark.createDataFrame([Row(url="http://a.example/")]))


def test_plain_table_gets_null_sample_columns_and_rows_without_url_are_rejects(spark):
    table = spark.createDataFrame(
        [Row(page_url=WIKI, note="x" * 50), Row(page_url="  ", note="blank"), Row(page_url=None, note="none")]
    )
    rows = fetch.with_sample_columns(table).withColumn("slot", F.monotonically_increasing_id())
    assert {f.name for f in fetch.SAMPLE_KEYS.fields} <= set(rows.columns)
    assert dict(rows.dtypes)["replacements"] == REPLACEMENT_TYPE.simpleString()
    slots, rejects = fetch.split_slots(rows, "samples.parquet", raw_chars=10)
    assert [r.page_url for r in slots.collect()] == [WIKI]
    assert [(f.name, f.dataType) for f in rejects.schema] == [(f.name, f.dataType) for f in REJECTS_SCHEMA]
    rej = sorted(rejects.collect(), key=lambda r: r.raw)
    assert [r.reason for r in rej] == [fetch.NO_PAGE_URL] * 2 and {r.source for r in rej} == {"samples.parquet"}
    assert all(len(r.raw) == 10 and r.raw.startswith("{") for r in rej)  # the row as JSON, cut to the bound
    assert {r.position for r in rej} == {r.slot for r in rows.collect() if r.page_url != WIKI}


def test_a_sample_row_given_twice_is_a_reject_each_time_and_no_slot(spark):
    """The samples table read twice (or two samples of other seeds mixed): the draw (f, low, 1) is
    in two rows, one with another URL; a plain URL twice in one stratum. Before, each was a slot and
    fetched twice. Now every row of such a key is a reject naming why, and the other rows stay
    slots: the same URL in another stratum, or drawn at another rank, is another draw."""
    given = [
        (WIKI, "f", "low", 1),
        (TOVE, "f", "low", 1),
        (WIKI, "f", "low", 1),
        (WIKI, "f", "high", 1),
        (BIG, None, None, None),
        (BIG, None, None, None),
        (None, "f", "high", 2),
    ]
    table = spark.createDataFrame(
        [(*r, i) for i, r in enumerate(given)],
        "page_url string, feature string, stratum string, sample_rank int, slot long",
    )
    rows = fetch.with_sample_columns(table)
    slots, rejects = fetch.split_slots(rows, "samples.parquet", raw_chars=1000)
    assert sorted((r.page_url, r.stratum, r.sample_rank) for r in slots.collect()) == [(WIKI, "high", 1)]
    rej = {r.position: r for r in rejects.collect()}
    assert {p: r.reason for p, r in rej.items()} == {
        0: fetch.DUPLICATE_DRAW,
        1: fetch.DUPLICATE_DRAW,
        2: fetch.DUPLICATE_DRAW,
        4: fetch.DUPLICATE_URL,
        5: fetch.DUPLICATE_URL,
        6: fetch.NO_PAGE_URL,
    }
    assert json.loads(rej[4].raw)["page_url"] == BIG and json.loads(rej[1].raw)["page_url"] == TOVE
    assert slots.count() + rejects.count() == rows.count()


# ---- candidates and captures ------------------------------------------------------------------------


def test_candidates_follow_the_sample_order_and_a_page_fills_one_slot(spark):
    rows = sample_rows(
        spark,
        [
            {
                "page_url": "http://a.example/",
                "feature": "f",
                "stratum": "low",
                "cset_id": "a",
                "types": ["Place"],
                # out of order on purpose; b is another slot's sampled page in this stratum
                "replacements": [
                    rep(3, "http://r3.example/"),
                    rep(1, "http://b.example/"),
                    rep(2, "http://r2.example/"),
                ],
            },
            {
                "page_url": "http://b.example/",
                "feature": "f",
                "stratum": "low",
                "cset_id": "b",
                "types": ["Event"],
                "replacements": None,
            },
            # same page as a replacement in another stratum: allowed there
            {
                "page_url": "http://c.example/",
                "feature": "f",
                "stratum": "high",
                "cset_id": "c",
                "types": None,
                "replacements": [rep(1, "http://b.example/")],
            },
        ],
    ).withColumn("slot", F.col("cset_id"))
    got = {}
    for r in fetch.candidates(fetch.with_sample_columns(rows), 2).collect():
        got.setdefault(r.sampled_cset_id, []).append((r.candidate_rank, r.page_url))
    got = {k: sorted(v) for k, v in got.items()}
    # limit 2 takes ranks 1 and 2; rank 1 (b) is dropped, so a gets its sampled page and r2 only
    assert got["a"] == [(0, "http://a.example/"), (2, "http://r2.example/")]
    assert got["b"] == [(0, "http://b.example/")]
    assert got["c"] == [(0, "http://c.example/"), (1, "http://b.example/")]
    assert {r.page_url for r in fetch.candidates(fetch.with_sample_columns(rows), 0).collect()} == {
        "http://a.example/",
        "http://b.example/",
        "http://c.example/",
    }


def test_best_capture_is_one_row_per_url_and_prefers_the_response(index, index_rows):
    best = fetch.best_capture(index).collect()
    assert len(best) == len({r["url"] for r in index_rows}) and len({r.url for r in best}) == len(best)
    # example.com has a response and a later revisit: the response is the one to read
    (ex,) = [r for r in best if r.url == "http://example.com/"]
    (resp,) = [r for r in index_rows if r["url"] == "http://example.com/" and r["warc_record_type"] == "response"]
    assert (ex.warc_record_offset, ex.warc_record_length) == (resp["warc_record_offset"], resp["warc_record_length"])
    assert dict(fetch.best_capture(index).dtypes)["warc_record_offset"] == "bigint"
    # the WARC-Date string of the index becomes the instant it names (the session is in UTC)
    assert dict(fetch.best_capture(index).dtypes)["fetch_time"] == "timestamp"
    assert ex.fetch_time.isoformat() + "Z" == resp["fetch_time"]


# ---- one candidate ---------------------------------------------------------------------------------


def test_fetch_page_reads_the_record_and_extracts_the_page(index_rows, cfg):
    row = located(index_rows, WIKI, types=["Organization"])
    out = fetch.fetch_page(row, None, cfg, load_config().pages.max_record_bytes)
    assert out["status"] == P.OK and out["reason"] is None
    assert out["root_types"] == ["Article"] and out["language"] == "an" and out["text_extractor"] == cfg.text_extractor
    assert (
        len(out["html_sha256"]) == 64
        and out["text_chars"] > 100
        and json.loads(out["human_markup"])["@type"] == "Article"
    )
    assert out["page_url"] == WIKI and out["slot"] == 0  # the candidate's own columns pass through


@pytest.mark.parametrize(
    "change,status,reason",
    [
        ({"warc_filename": None}, P.NOT_FOUND, "not in the WARC index"),
        ({"shift": 3}, P.FETCH_ERROR, "neither a gzip member nor a WARC record header"),
        ({"cut": 300}, P.FETCH_ERROR, "truncated gzip member"),
    ],
)
def test_fetch_page_failures_are_rows_with_a_status(index_rows, cfg, change, status, reason):
    row = located(index_rows, WIKI, types=["Organization"])
    if "shift" in change:
        row["warc_record_offset"] += change["shift"]
    elif "cut" in change:
        row["warc_record_length"] -= change["cut"]
    else:
        row.update(change)
    out = fetch.fetch_page(row, None, cfg, load_config().pages.max_record_bytes)
    assert out["status"] == status and reason in out["reason"] and out["markups"] == []


def test_an_oversized_page_is_a_parse_error(index_rows, cfg):
    small = P.PageConfig.of(load_config().pages, time_limit_s=30.0, max_html_bytes=100_000)
    out = fetch.fetch_page(located(index_rows, BIG), None, small, load_config().pages.max_record_bytes)
    assert out["status"] == P.PARSE_ERROR and "oversized" in out["reason"]


# ---- a slot's candidates ---------------------------------------------------------------------------


def test_candidates_are_tried_until_one_is_ok_and_the_last_attempt_is_selected(index_rows, cfg):
    slot0 = [
        located(index_rows, WIKI, candidate_rank=0, warc_filename=None),  # not found
        located(index_rows, TOVE, candidate_rank=1, types=["Place"]),  # ok: the slot stops here
        located(index_rows, WIKI, candidate_rank=2),
    ]  # never fetched
    slot1 = [located(index_rows, WIKI, slot=1, candidate_rank=0, warc_filename=None)]  # only a failure
    out = list(
        fetch.process_partition([Row(**r) for r in slot0 + slot1], None, cfg, load_config().pages.max_record_bytes)
    )
    assert [(o["slot"], o["candidate_rank"], o["status"], o["selected"]) for o in out] == [
        (0, 0, P.NOT_FOUND, False),
        (0, 1, P.OK, True),
        (1, 0, P.NOT_FOUND, True),
    ]
    assert out[1]["root_types"] == ["MusicEvent"]


def test_fetch_pages_locates_fetches_and_selects(spark, index, index_rows, cfg, tmp_path):
    rows = sample_rows(
        spark,
        [
            {
                "page_url": "http://not-crawled.example/",
                "feature": "f",
                "stratum": "low",
                "cset_id": "a",
                "types": ["Place"],
                "replacements": [rep(1, TOVE, "a", ["Place"])],
            },
            {
                "page_url": "http://example.com/",
                "feature": "f",
                "stratum": "low",
                "cset_id": "b",
                "types": ["Movie"],
                "replacements": None,
            },
        ],
    )
    slots = fetch.with_sample_columns(rows).withColumn("slot", F.monotonically_increasing_id())
    pages = fetch.fetch_pages(
        slots,
        index,
        replacements=3,
        partitions=2,
        warc_base=None,
        cfg=cfg,
        max_record_bytes=load_config().pages.max_record_bytes,
    )
    assert pages.schema == fetch.PAGES_SCHEMA
    got = sorted((r.sampled_page_url, r.candidate_rank, r.status, r.selected) for r in pages.collect())
    assert got == [
        ("http://example.com/", 0, P.NO_MATCHING_MARKUP, True),
        ("http://not-crawled.example/", 0, P.NOT_FOUND, False),
        ("http://not-crawled.example/", 1, P.OK, True),
    ]
    # written as the pages job writes it, fetch_time reads back as an Arrow timestamp in UTC: the
    # capture's WARC-Date for a located page, null for one the index does not hold
    pages.write.mode("overwrite").parquet(str(tmp_path / "pages"))
    import pyarrow.dataset as pads

    table = pads.dataset(str(tmp_path / "pages")).to_table()
    assert str(table.schema.field("fetch_time").type) == "timestamp[us, tz=UTC]"
    when = {(r["page_url"], r["candidate_rank"]): r["fetch_time"] for r in table.to_pylist()}
    (tove,) = [r for r in index_rows if r["url"] == TOVE and r["warc_record_type"] == "response"]
    assert when[(TOVE, 1)].isoformat().replace("+00:00", "Z") == tove["fetch_time"]
    assert when[("http://not-crawled.example/", 0)] is None
