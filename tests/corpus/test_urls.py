"""One page, one identity (udfs/corpus/urls.py): the normal form page URLs are compared in, and the
pages job's join on it (udfs/corpus/fetch.py) over the bundled WARC files: a sample row spelled
with another host case or the default port finds its capture and keeps its own spelling; a
trailing slash, a query and the order of a query's arguments name other pages."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from tests.corpus.test_fetch import TOVE, WARCS, WIKI, rep, sample_rows
from udfs.corpus import fetch
from udfs.corpus import html as P
from udfs.corpus.urls import normal_url, same_page_url
from udfs.corpus.warc import INDEX_COLUMNS, index_warc
from udfs.runtime.config import load_config

# (as given, its normal form): the cases docs/results/conformance.md ("One page, one identity") lists
CASES = [
    ("http://Example.com/a", "http://example.com/a"),
    ("HTTP://EXAMPLE.COM/a", "http://example.com/a"),
    ("http://example.com:80/a", "http://example.com/a"),
    ("https://example.com:443/a", "https://example.com/a"),
    ("https://example.com:80/a", "https://example.com:80/a"),
    ("http://example.com:8080/a", "http://example.com:8080/a"),
    ("http://example.com", "http://example.com/"),
    ("http://example.com/a/", "http://example.com/a/"),
    ("http://example.com/A", "http://example.com/A"),
    ("http://example.com/a?b=1&a=2", "http://example.com/a?b=1&a=2"),
    ("http://example.com/a?", "http://example.com/a"),
    ("http://example.com/a?q=a+b", "http://example.com/a?q=a+b"),
    ("http://example.com/a?q=a%20b", "http://example.com/a?q=a%20b"),
    ("http://example.com/a?x=%26y%3D1", "http://example.com/a?x=%26y%3D1"),
    ("http://example.com/a#top", "http://example.com/a"),
    ("http://example.com/%7Euser", "http://example.com/~user"),
    ("http://example.com/r%c3%a9sum%c3%a9", "http://example.com/r%C3%A9sum%C3%A9"),
    ("http://example.com/résumé", "http://example.com/r%C3%A9sum%C3%A9"),
    ("http://example.com/a%2Fb", "http://example.com/a%2Fb"),
    ("http://example.com/a/./b/../c", "http://example.com/a/c"),
    ("http://BÜCHER.de/", "http://xn--bcher-kva.de/"),
    ("http://xn--bcher-kva.de/", "http://xn--bcher-kva.de/"),
    ("pset:12", "pset:12"),
    ("example.com/a", "example.com/a"),
    ("  http://example.com/a \n", "http://example.com/a"),
]


@pytest.mark.parametrize("url, normal", CASES)
def test_the_normal_form(url, normal):
    assert normal_url(url) == normal
    assert normal_url(normal) == normal  # a normal form is its own


@pytest.mark.parametrize(
    "a, b, same",
    [
        ("http://example.com/a", "http://Example.com/a", True),
        ("http://example.com/a", "http://example.com:80/a", True),
        ("http://example.com/a", "http://example.com/a/", False),
        ("http://example.com/a", "http://example.com/a?x=1", False),
        ("http://example.com/a?a=1&b=2", "http://example.com/a?b=2&a=1", False),
        ("http://example.com/a", "https://example.com/a", False),
        ("http://example.com/%7Ea", "http://example.com/~a", True),
        ("http://BÜCHER.de/", "http://xn--bcher-kva.de/", True),
        (None, None, False),
        ("", " ", False),
    ],
)
def test_same_page_url(a, b, same):
    assert same_page_url(a, b) is same


def test_a_url_it_cannot_read_is_its_own_key():
    # a lone surrogate makes no IDNA host: the text is the key, the call does not raise
    assert normal_url("http://\udc80.example/a#f") == "http://\udc80.example/a"
    assert normal_url(None) is None and normal_url("  ") is None


# ---- the pages job's join ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def index_rows() -> list[dict]:
    return [r for w in WARCS for r in index_warc(str(w))]


@pytest.fixture(scope="module")
def index(spark, index_rows):
    from pyspark.sql import types as T

    kinds = {"fetch_status": T.IntegerType(), "warc_record_offset": T.LongType(), "warc_record_length": T.LongType()}
    schema = T.StructType([T.StructField(c, kinds.get(c, T.StringType())) for c in INDEX_COLUMNS])
    return spark.createDataFrame([tuple(r[c] for c in INDEX_COLUMNS) for r in index_rows], schema)


def fetched(spark, index, urls: list[str], replacements=None) -> dict[str, tuple]:
    """page_url -> (status, warc_record_offset, sampled_page_url) of the selected rows of the
    pages job's logic over one slot per URL (its own stratum: no replacement is another's)."""
    rows = sample_rows(
        spark,
        [
            {
                "page_url": u,
                "feature": "f",
                "stratum": f"s{i}",
                "cset_id": "c",
                "types": None,
                "replacements": (replacements or {}).get(u),
            }
            for i, u in enumerate(urls)
        ],
    )
    slots = fetch.with_sample_columns(rows).withColumn("slot", F.monotonically_increasing_id())
    pages = fetch.fetch_pages(
        slots,
        index,
        replacements=3,
        partitions=2,
        warc_base=None,
        cfg=P.PageConfig.of(load_config().pages, time_limit_s=30.0),
        max_record_bytes=load_config().pages.max_record_bytes,
    )
    return {r.page_url: (r.status, r.warc_record_offset, r.sampled_page_url) for r in pages.collect() if r.selected}


def test_a_sample_row_spelled_with_another_host_case_or_the_default_port_finds_its_capture(spark, index, index_rows):
    tove = next(r for r in index_rows if r["url"] == TOVE and r["warc_record_type"] == "response")
    wiki = next(r for r in index_rows if r["url"] == WIKI and r["warc_record_type"] == "response")
    spelled = {
        "http://Extruct-Samples.EXAMPLE/songkick/tovestyrke.html": tove,
        "HTTP://extruct-samples.example:80/songkick/tovestyrke.html": tove,
        "https://AN.wikipedia.org:443/wiki/Escopete#Historia": wiki,
    }
    got = fetched(spark, index, [TOVE, WIKI, *spelled])
    assert got[TOVE][0] == P.OK and got[WIKI][0] != P.NOT_FOUND
    # each row keeps the URL as the sample gave it; the capture is the one the index holds, read
    # as for the URL the index wrote
    want = {u: (got[r["url"]][0], r["warc_record_offset"], u) for u, r in spelled.items()}
    assert {u: got[u] for u in spelled} == want


def test_a_trailing_slash_or_a_query_names_another_page(spark, index):
    urls = [TOVE + "/", TOVE + "?page=2", "http://extruct-samples.example/songkick/Tovestyrke.html"]
    got = fetched(spark, index, urls)
    assert {u: s for u, (s, _, _) in got.items()} == {u: P.NOT_FOUND for u in urls}


def test_captures_of_one_normal_form_are_one_page_and_others_stay_apart(spark, index_rows):
    """best_capture over an index whose captures spell one URL three ways (and two other pages):
    one row for the three, the index's own spelling kept in url."""
    from pyspark.sql import types as T

    tove = next(r for r in index_rows if r["url"] == TOVE and r["warc_record_type"] == "response")
    spellings = {
        TOVE: "2026-01-01T00:00:00Z",
        "http://EXTRUCT-SAMPLES.example/songkick/tovestyrke.html": "2026-02-01T00:00:00Z",  # the latest
        "http://extruct-samples.example:80/songkick/tovestyrke.html": "2025-01-01T00:00:00Z",
        TOVE + "/": "2026-03-01T00:00:00Z",
        TOVE + "?a=1": "2026-03-01T00:00:00Z",
    }
    kinds = {"fetch_status": T.IntegerType(), "warc_record_offset": T.LongType(), "warc_record_length": T.LongType()}
    schema = T.StructType([T.StructField(c, kinds.get(c, T.StringType())) for c in INDEX_COLUMNS])
    rows = [tuple({**tove, "url": u, "fetch_time": t}[c] for c in INDEX_COLUMNS) for u, t in spellings.items()]
    best = fetch.best_capture(spark.createDataFrame(rows, schema)).collect()
    assert sorted((r.url_key, r.url) for r in best) == [
        (TOVE, "http://EXTRUCT-SAMPLES.example/songkick/tovestyrke.html"),
        (TOVE + "/", TOVE + "/"),
        (TOVE + "?a=1", TOVE + "?a=1"),
    ]


def test_rows_without_a_sample_rank_spelling_one_url_twice_are_duplicates(spark):
    rows = spark.createDataFrame(
        [("http://Example.com/a",), ("http://example.com:80/a",), ("http://example.com/a/",)], "page_url string"
    )
    rows = fetch.with_sample_columns(rows).withColumn("slot", F.monotonically_increasing_id())
    slots, rejects = fetch.split_slots(rows, "urls.csv", raw_chars=100)
    assert [r.page_url for r in slots.collect()] == ["http://example.com/a/"]
    assert sorted(r.reason for r in rejects.collect()) == [fetch.DUPLICATE_URL] * 2


def test_a_replacement_spelling_another_slots_page_is_dropped(spark):
    rows = sample_rows(
        spark,
        [
            {
                "page_url": "http://a.example/",
                "feature": "f",
                "stratum": "low",
                "cset_id": "a",
                "types": None,
                "replacements": [rep(1, "HTTP://B.example:80/"), rep(2, "http://b.example/x")],
            },
            {
                "page_url": "http://b.example/",
                "feature": "f",
                "stratum": "low",
                "cset_id": "b",
                "types": None,
                "replacements": None,
            },
        ],
    )
    got = fetch.candidates(fetch.with_sample_columns(rows).withColumn("slot", F.col("cset_id")), 3).collect()
    assert sorted(r.page_url for r in got) == ["http://a.example/", "http://b.example/", "http://b.example/x"]
