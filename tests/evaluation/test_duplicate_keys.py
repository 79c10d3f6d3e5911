"""Duplicate keys in evaluate's pages (udfs/evaluation/plan.py, "Duplicate keys"): rows of one page
(several strata) are evaluated once; a page_id whose rows name several pages, and a page whose rows
hold different texts, are never evaluated from one row picked silently: their rows are counted,
named on the console and given as rejects, and a stored markup naming them is a reject saying why.

The pages are the bundled demo pages through the pages job's own extraction, arranged as a user's
pages table can arrive: the same page in two strata, one page_id on two pages, one page in two
captures with different texts."""

from __future__ import annotations

import json
import logging

import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

from tests.conftest import demo_pages_table
from tests.evaluation.test_evaluate_parts import record, stub_server
from tests.evaluation.test_stored_markups import argv, example_markups
from udfs.evaluation import plan as P
from udfs.evaluation.evaluator import page_key


@pytest.fixture(scope="module")
def stub():
    with stub_server() as s:
        yield s


def with_text(rows: list[dict]) -> list[dict]:
    return [r for r in rows if (r["text"] or "").strip() and r["status"] == "ok"]


def pages(folder, rows: list[dict]) -> None:
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / "part-0.parquet")


@pytest.fixture(scope="module")
def demo() -> list[dict]:
    demo = with_text(demo_pages_table().to_pylist())
    assert len(demo) >= 2
    return demo


def keyed(demo: list[dict]) -> list[dict]:
    """page p0 in two strata (one page); p1 on two pages (demo[1] at two URLs: another page key);
    page p2 (demo[0] at another URL) twice, with another text the second time."""
    a, b = demo[:2]
    return [
        {"page_id": "p0", **a},
        {"page_id": "p0", **a, "stratum": "other"},
        {"page_id": "p1", **b},
        {"page_id": "p1", **b, "page_url": b["page_url"] + "?copy"},
        {"page_id": "p2", **a, "page_url": a["page_url"] + "?v=2"},
        {"page_id": "p2", **a, "page_url": a["page_url"] + "?v=2", "text": a["text"] + " Updated."},
    ]


def test_the_plan_evaluates_one_page_per_key_and_names_the_keys_that_name_none(demo, tmp_path, caplog):
    rows = keyed(demo)
    pages(tmp_path / "pages", rows)
    with caplog.at_level(logging.WARNING, logger="llm4schema.evaluate.plan"):
        plan = P.plan_pages(pads.dataset(tmp_path / "pages"), limit=0, order="sample")
    a = rows[0]
    assert plan.todo["page_key"].to_pylist() == [page_key(a["page_url"], a["human_markup"])]
    c = plan.counters
    assert (c["input_rows"], c["duplicate_rows"], c["ambiguous_page_id_rows"], c["conflicting_text_rows"]) == (
        6,
        1,
        2,
        2,
    )
    assert (
        c["input_rows"]
        == sum(
            c[k]
            for k in (
                "not_ok_or_not_selected",
                "no_text",
                "ambiguous_page_id_rows",
                "conflicting_text_rows",
                "duplicate_rows",
            )
        )
        + plan.todo.num_rows
    )
    got = [(r["position"], r["reason"], json.loads(r["raw"])["page_id"]) for r in plan.rejects]
    assert got == [
        (2, P.AMBIGUOUS_PAGE_ID.format(n=2), "p1"),
        (3, P.AMBIGUOUS_PAGE_ID.format(n=2), "p1"),
        (4, P.CONFLICTING_TEXT.format(n=2), "p2"),
        (5, P.CONFLICTING_TEXT.format(n=2), "p2"),
    ]
    assert all(r["source"].endswith("part-0.parquet") for r in plan.rejects)
    [line] = [r.getMessage() for r in caplog.records if r.name == "llm4schema.evaluate.plan"]
    p2_key = page_key(rows[4]["page_url"], rows[4]["human_markup"])
    assert line == f"4 input rows not evaluated: their key names no single page (page_id p1, page key {p2_key})"


def test_without_page_id_the_page_key_is_the_key(demo, tmp_path):
    """No page_id column: rows of one URL and human markup are one page, unless their texts differ."""
    rows = [{k: v for k, v in r.items() if k != "page_id"} for r in keyed(demo)]
    pages(tmp_path / "pages", rows)
    plan = P.plan_pages(pads.dataset(tmp_path / "pages"), limit=0, order="sample")
    assert sorted(plan.todo["page_url"].to_pylist()) == sorted(rows[i]["page_url"] for i in (0, 2, 3))
    c = plan.counters
    assert (c["duplicate_rows"], c["ambiguous_page_id_rows"], c["conflicting_text_rows"]) == (1, 0, 2)


def test_evaluate_judges_no_stored_markup_of_a_key_that_names_no_single_page(demo, stub, tmp_path, caplog):
    """The job over the same pages with stored markups keyed by page_id: p0's markup is judged once;
    p1's and p2's are rejects saying why, the run's counters reconcile and name the rows."""
    from jobs.evaluate import EvaluateJob

    pages(tmp_path / "pages", keyed(demo))
    ex = example_markups(1)[0]
    markups = tmp_path / "markups.jsonl"
    markups.write_text(
        "".join(json.dumps({"page_id": p, "source": "examples", "markup": ex}) + "\n" for p in ("p0", "p1", "p2"))
    )
    out = tmp_path / "out"
    with caplog.at_level(logging.WARNING):
        assert EvaluateJob(argv(tmp_path / "pages", out, stub.url, markups)).main() == 0
    assert any("4 input rows not evaluated: their key names no single page" in r.getMessage() for r in caplog.records)
    scores = pq.read_table(out / "scores").to_pylist()
    assert sorted((s["page_url"], s["source"]) for s in scores) == sorted(
        (demo[0]["page_url"], s) for s in ("human", "examples")
    )
    rejects = {
        r["position"]: r["reason"] for r in pq.read_table(out / "rejects" / "evaluate" / "markups.parquet").to_pylist()
    }
    assert rejects == {
        2: "2 pages of the input have this page_id (page_url or human_markup differ): none is judged",
        3: "page not evaluated: its input rows do not name one page (a page_id of several pages, or different texts)",
    }
    left = pq.read_table(out / "rejects" / "evaluate" / "duplicate_keys.parquet").to_pylist()
    assert [(r["position"], json.loads(r["raw"])["page_id"]) for r in left] == [
        (2, "p1"),
        (3, "p1"),
        (4, "p2"),
        (5, "p2"),
    ]
    c = record(out)["counters"]
    assert (c["ambiguous_page_id_rows"], c["conflicting_text_rows"], c["duplicate_rows"], c["evaluated"]) == (
        2,
        2,
        1,
        1,
    )
    assert c["markup_rows_read"] == 3 == c["markup_rows_judged"] + c["markup_rows_rejected"]
