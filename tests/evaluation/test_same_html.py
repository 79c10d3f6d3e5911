"""One page under several URLs (udfs/evaluation/plan.py, "One page under several URLs"): the same
HTML with the same human markup captured as ``http://example.com/a``, ``http://Example.com/a`` and
``http://example.com/a/`` is judged once; the others are rows pointing to it, counted in the run
record (``pages_same_html``) and named in the summary, and no score counts them. The same HTML
with another human markup (another entity of the page, drawn for another C-set) is another page.

The pages are bundled demo pages through the pages job's own extraction, their ``html_sha256`` the
pages job's own of the page's bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

from tests.conftest import DATA, demo_pages_table
from tests.evaluation.test_evaluate_parts import RECONCILE, argv, record, stub_server
from udfs.corpus.html import html_sha256
from udfs.evaluation import plan as P
from udfs.evaluation.evaluator import page_key

PREFIX = "http://extruct-samples.example/"


@pytest.fixture(scope="module")
def stub():
    with stub_server() as s:
        yield s


@pytest.fixture(scope="module")
def demo() -> list[dict]:
    rows = [r for r in demo_pages_table().to_pylist() if r["status"] == "ok" and (r["text"] or "").strip()]
    for r in rows:
        r["html_sha256"] = html_sha256((DATA / "html" / "extruct-samples" / r["page_url"][len(PREFIX) :]).read_bytes())
    assert len(rows) >= 2
    return rows


def three_captures(demo: list[dict]) -> list[dict]:
    """demo[0]'s HTML under three spellings of its URL, each in its own stratum, and demo[1]."""
    a, b = demo[:2]
    url = a["page_url"]
    host = url.replace("extruct-samples.example", "Extruct-Samples.example")
    return [
        {**a, "stratum": "s1"},
        {**a, "page_url": host, "stratum": "s2"},
        {**a, "page_url": url + "/", "stratum": "s3"},
        b,
    ]


def write(folder: Path, rows: list[dict]) -> Path:
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / "part-0.parquet")
    return folder


def test_three_captures_of_one_html_are_one_page(demo, tmp_path):
    rows = three_captures(demo)
    plan = P.plan_pages(pads.dataset(write(tmp_path / "pages", rows)), limit=0, order="sample")
    keys = [page_key(r["page_url"], r["human_markup"]) for r in rows]
    assert sorted(plan.todo["page_key"].to_pylist()) == sorted([keys[0], keys[3]])
    c = plan.counters
    assert c["pages_same_html"] == 2 and c["duplicate_rows"] == 0
    assert c["input_rows"] == sum(c.get(k, 0) for k in RECONCILE) + c["pages_same_html"] + plan.todo.num_rows
    same = sorted((r["page_url"], r["page_key"], r["same_page_as"], r["same_page_url"]) for r in plan.same_html)
    assert same == sorted((rows[i]["page_url"], keys[i], keys[0], rows[0]["page_url"]) for i in (1, 2))
    assert {r["row"] for r in plan.same_html} == {1, 2}


def test_the_same_html_with_another_human_markup_is_another_page(demo, tmp_path):
    """One HTML can carry several entities; the C-set route selects one per draw: each is judged."""
    a, b = demo[:2]
    rows = [a, {**a, "page_url": a["page_url"] + "?entity=2", "human_markup": b["human_markup"]}]
    plan = P.plan_pages(pads.dataset(write(tmp_path / "pages", rows)), limit=0, order="sample")
    assert plan.todo.num_rows == 2 and plan.counters["pages_same_html"] == 0


def test_without_html_sha256_or_over_stored_markups_pages_are_not_merged(demo, tmp_path):
    rows = three_captures(demo)
    bare = P.plan_pages(
        pads.dataset(write(tmp_path / "bare", [{k: v for k, v in r.items() if k != "html_sha256"} for r in rows])),
        limit=0,
        order="sample",
    )
    assert bare.todo.num_rows == 4 and bare.counters["pages_same_html"] == 0
    keys = [page_key(r["page_url"], r["human_markup"]) for r in rows]
    stored = P.plan_pages(pads.dataset(write(tmp_path / "pages", rows)), limit=0, order="sample", only=keys)
    assert stored.todo.num_rows == 4 and stored.counters["pages_same_html"] == 0


def test_evaluate_judges_one_html_once_and_says_so(demo, stub, tmp_path, capsys):
    """The job: scores for the judged pages only, a row per other capture naming the judged one,
    the counter in the run record and a line in the summary; the counters reconcile."""
    from jobs.evaluate import EvaluateJob

    rows = three_captures(demo)
    out = tmp_path / "out"
    assert EvaluateJob(argv(write(tmp_path / "pages", rows), out, stub.url, "--no-generation")).main() == 0
    keys = [page_key(r["page_url"], r["human_markup"]) for r in rows]
    scores = pq.read_table(out / "scores").to_pylist()
    assert sorted({s["page_key"] for s in scores}) == sorted([keys[0], keys[3]])
    c = record(out)["counters"]
    assert c["pages_same_html"] == 2
    assert c["input_rows"] == sum(c[k] for k in RECONCILE) + c["pages_same_html"]
    same = pq.read_table(out / "rejects" / "evaluate" / "same_html.parquet").to_pylist()
    assert sorted(r["position"] for r in same) == [1, 2]
    assert {json.loads(r["raw"])["same_page_as"] for r in same} == {keys[0]}
    assert all(keys[0] in r["reason"] and rows[0]["page_url"] in r["reason"] for r in same)
    assert "pages_same_html: 2 pages hold the same HTML" in capsys.readouterr().out
