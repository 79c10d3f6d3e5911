"""A page judged on a truncated WARC record (issue 65: ``[pages] judge_truncated``): its pages/ row
says ``truncated``, evaluate carries the flag to every scores row of the page, and the report's
funnel counts the pages judged so. The pages are bundled demo pages (the pages job's own rows)."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from tests.evaluation.test_evaluate_parts import argv, stub_server
from tests.evaluation.test_same_html import demo, write  # noqa: F401 - the fixture
from udfs.evaluation.evaluator import page_key


@pytest.fixture(scope="module")
def stub():
    with stub_server() as s:
        yield s


def test_the_truncated_flag_reaches_scores_and_the_report(demo, stub, tmp_path):  # noqa: F811
    from jobs.evaluate import EvaluateJob
    from jobs.report import ReportJob

    a, b = demo[:2]
    rows = [{**a, "truncated": True}, {**b, "truncated": False}]
    out = tmp_path / "out"
    assert EvaluateJob(argv(write(tmp_path / "pages", rows), out, stub.url)).main() == 0
    scores = pq.read_table(out / "scores").to_pylist()
    flags = {(s["page_key"], s["truncated"]) for s in scores}
    assert flags == {
        (page_key(a["page_url"], a["human_markup"]), True),
        (page_key(b["page_url"], b["human_markup"]), False),
    }
    assert ReportJob(["--input", str(out / "scores"), "--output", str(out)]).main() == 0
    html = (out / "report" / "index.html").read_text()
    assert "1 of them judged on a truncated WARC record" in html
