"""The report's funnel starts at the pages given to the pages job and has a row, with its count and
share, for each way a page was lost before it was judged; the rows add up to the pages given, or
the last row says by how much they do not. A page whose markup cannot be read keeps the generator
its HTML names, and the report shows unreadable markup per generator."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from udfs.corpus import html as P
from udfs.evaluation.evaluator import page_key
from udfs.report.inputs import Sources
from udfs.report.sections import funnel as FN
from udfs.runtime.config import load_config
from udfs.runtime.io import Folder

TEXT = "A page about a mug with enough words to judge."


class FakeRun:
    """What the funnel reads of a Run: the root's tables, the evaluation's counters and record,
    and the scores' page keys."""

    def __init__(self, root: Path, counters: dict, judged: list[str]):
        self.src = Sources(Folder.of(str(root)))
        self.record = {"config": {"limit": 3}, "counters": counters}
        self._counters = counters
        self.score_rows = {"page_key": judged, "source": ["human"] * len(judged), "status": ["ok"] * len(judged)}

    def counter(self, name: str) -> int:
        return int(self._counters.get(name) or 0)


def pages_root(tmp_path: Path, rows: list[dict], input_rows: int | None, rejected: int = 0) -> Path:
    (tmp_path / "pages").mkdir()
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "pages" / "part-0.parquet")
    if input_rows is not None:
        record = {"job": "pages", "counters": {"input_rows": input_rows, "rejected_rows": rejected}}
        (tmp_path / "pages" / "_run.json").write_text(json.dumps(record))
    return tmp_path


def page(i: int, status: str, text: str | None = TEXT, generator: str | None = None, **kw) -> dict:
    return {
        "page_url": f"http://shop.example/{i}",
        "human_markup": '{"@type": "Product"}' if status == P.OK else None,
        "status": status,
        "selected": True,
        "text": text if status == P.OK else None,
        "text_chars": len(text or "") if status == P.OK else None,
        "generator": generator,
        **kw,
    }


def constructed() -> list[dict]:
    """14 input rows: 1 rejected; one selected row of each lost status; 2 unreadable; 8 ok, one
    without text, one the same page drawn again (another feature), one not selected attempt."""
    rows = [
        page(1, P.NOT_FOUND),
        page(2, P.FETCH_ERROR),
        page(3, P.TRUNCATED, generator="yoast"),
        page(4, P.PARSE_ERROR, generator="yoast"),
        page(5, P.PARSE_ERROR, generator="unknown"),
        page(6, P.NO_MATCHING_MARKUP),
        page(7, P.OK, text="   \n", generator="yoast"),
        page(8, P.OK, generator="yoast"),
        page(8, P.OK, generator="yoast"),  # the same page drawn for the second feature
        page(9, P.OK, generator="woocommerce"),
        page(10, P.OK, generator="yoast"),
        page(11, P.OK, generator="yoast"),
        page(12, P.OK, generator="yoast"),
        {**page(13, P.NOT_FOUND), "selected": False},  # an attempt a replacement took the place of
    ]
    return rows


def test_every_page_given_is_judged_or_lost_with_its_reason(tmp_path):
    root = pages_root(tmp_path, constructed(), input_rows=14, rejected=1)
    judged = [page_key(f"http://shop.example/{i}", '{"@type": "Product"}') for i in (8, 10)]
    run = FakeRun(root, {"pages_same_html": 1, "over_limit": 1, "failed": 1}, judged)
    steps = {s["step"]: s for s in FN.funnel(run)}
    got = {k: s["count"] for k, s in steps.items()}
    assert got == {
        "pages given": 14,
        "input row rejected": 1,
        "not found": 1,
        "fetch error": 1,
        "truncated": 1,
        "markup unreadable": 2,
        "no matching entity": 1,
        "fetched and read": 7,
        "no text": 1,
        "deduplicated": 1,
        "same HTML under another URL": 1,
        "over the limit": 1,
        "failed": 1,
        "judged": 2,
        "accounted for": 0,
    }
    assert steps["markup unreadable"]["share"] == 2 / 14 and steps["judged"]["share"] == 2 / 14
    lost = [s for s in steps.values() if s["kind"] == "lost"]
    assert 14 == steps["judged"]["count"] + sum(s["count"] for s in lost)


def test_counts_that_do_not_add_up_are_said(tmp_path):
    root = pages_root(tmp_path, constructed(), input_rows=14, rejected=1)
    run = FakeRun(root, {"pages_same_html": 1, "over_limit": 0, "failed": 1}, ["k1"])
    last = FN.funnel(run)[-1]
    assert last["step"] == "not accounted for" and last["count"] == 2 and last["kind"] == "check"
    assert "pages given - judged - losses = 2" in last["note"]


def test_unreadable_markup_per_generator(tmp_path):
    root = pages_root(tmp_path, constructed(), input_rows=14, rejected=1)
    table = FN.unreadable_by_generator(FakeRun(root, {}, []))
    assert table == [
        {"generator": "yoast", "pages": 8, "unreadable": 1, "share": 1 / 8},
        {"generator": "(none named)", "pages": 1, "unreadable": 0, "share": 0.0},
        {"generator": "unknown", "pages": 1, "unreadable": 1, "share": 1.0},
        {"generator": "woocommerce", "pages": 1, "unreadable": 0, "share": 0.0},
    ]
    part = FN.data(FakeRun(root, {}, []))
    assert list(part.frames["unreadable_by_generator"]["generator"])[0] == "yoast"
    assert "markup unreadable" in list(part.frames["funnel"]["step"])


def test_a_page_whose_markup_cannot_be_read_keeps_its_generator():
    """Yoast's graph whose JSON is broken: the page is a parse_error, and its generator is still
    Yoast, named by the script's own class."""
    html = (
        '<html><head><script type="application/ld+json" class="yoast-schema-graph">'
        '{"@context": "https://schema.org", "@graph": [{"@type": "WebPage",, }]}'
        "</script></head><body><p>A page about a mug.</p></body></html>"
    )
    cfg = P.PageConfig.of(load_config().pages, time_limit_s=30.0)
    row = P.process_html(html.encode(), "text/html", None, cfg)
    assert row["status"] == P.PARSE_ERROR
    assert row["generator"] == "yoast" and 'class="yoast-schema-graph"' in row["generator_evidence"]


def test_the_demo_pages_funnel_adds_up(tmp_path):
    """The pages/ table of the demo chain (the bundled quads' sample through the bundled WARCs),
    when one was written under DEMO_ROOT: its funnel's losses and judged add up before evaluation."""
    import os

    import pytest

    demo = Path(os.environ.get("DEMO_ROOT", "/tmp/wt66demo2"))
    if not (demo / "pages" / "_run.json").exists():
        pytest.skip("no demo chain's pages/ under DEMO_ROOT")
    run = FakeRun(demo, {}, [])
    steps = {s["step"]: s["count"] for s in FN.funnel(run)}
    counters = json.loads((demo / "pages" / "_run.json").read_text())["counters"]
    assert steps["pages given"] == counters["input_rows"]
    # nothing judged yet: every page given is a loss row or still to judge (fetched, with text, distinct)
    remaining = steps["fetched and read"] - steps["no text"] - steps["deduplicated"]
    assert steps.get("not accounted for", steps.get("accounted for")) == remaining > 0
    for status, label, _ in FN.LOST_STATUSES:
        assert steps[label] == counters[f"selected_{status}"]
