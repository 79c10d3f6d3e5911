"""jobs/evaluate.py and jobs/report.py on real demo pages with the embedded model behind the Ray
Serve app (started once for the module): a run killed mid-way resumes with no duplicate rows and
reuses cached answers, the Ray Data path, generation with MeMR and key scores, the report."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import ROOT, demo_pages_table

pytestmark = pytest.mark.model
MODEL_ID = "qwen2.5-coder-1.5b"


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> Path:
    """A pages/ table of real demo pages, built with the pages job's own extraction."""
    table = demo_pages_table()
    assert table.column("status").to_pylist() == ["ok", "ok", "ok"]
    folder = tmp_path_factory.mktemp("out") / "pages"
    folder.mkdir()
    pq.write_table(table, folder / "part-0.parquet")
    return folder


def evaluate_argv(pages: Path, out: Path, url: str, *extra: str) -> list[str]:
    return [
        "--input",
        str(pages),
        "--output",
        str(out),
        "--base-url",
        url,
        "--limit",
        "2",
        "--order",
        "shortest",
        "--context-window",
        "2048",
        "--timeout-s",
        "900",
        *extra,
    ]


def read(folder: Path):
    return pq.read_table(sorted(folder.glob("part-*.parquet"))).to_pylist() if folder.exists() else []


def test_killed_run_resumes_without_duplicates_and_reuses_answers(service, pages, tmp_path):
    out = tmp_path / "out"
    argv = evaluate_argv(
        pages,
        out,
        service,
        "--no-generation",
        "--max-claims",
        "2",
        "--part-pages",
        "1",
        "--stages",
        "validity",
        "factuality",
        "--executor",
        "local",
    )
    cmd = [sys.executable, str(ROOT / "jobs" / "evaluate.py"), *argv]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 900
    committed = out / "scores" / "_committed"  # a part's marker: its three files are whole
    while time.monotonic() < deadline and proc.poll() is None and not list(committed.glob("*.json")):
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    scored_before = list(committed.glob("*.json"))
    assert len(scored_before) == 1, proc.stderr.read().decode()[-2000:]

    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads((out / "scores" / "_run.json").read_text())["counters"]
    assert record["already_scored"] == 1 and record["evaluated"] == 1 and record["failed"] == 0
    # counts reconcile: 3 input rows = 1 without text + 1 already scored + 1 evaluated
    assert (
        record["input_rows"]
        == record["no_text"]
        + record["already_scored"]
        + record["evaluated"]
        + record["over_limit"]
        + record["duplicate_rows"]
        + record["not_ok_or_not_selected"]
    )
    no_text = pq.read_table(out / "rejects" / "evaluate" / "no_text.parquet").column("source").to_pylist()
    assert [u.rsplit("/", 1)[-1] for u in no_text] == ["null_ld_mock.html"]

    scores, triples = read(out / "scores"), read(out / "triples")
    assert sorted(s["page_key"] for s in scores) == sorted({s["page_key"] for s in scores}) and len(scores) == 2
    keys = [(t["page_key"], t["source"], t["subject"], t["property"], t["value"], t["entity_type"]) for t in triples]
    assert len(keys) == len(set(keys))
    for s in scores:
        rows = [t for t in triples if t["page_key"] == s["page_key"]]
        assert s["status"] == "ok" and len(rows) == s["n_triples"] > 0
        assert s["n_valid"] == sum(t["valid"] for t in rows)
        # asked claims have a score; a row whose value is an unnamed node is never asked (it follows
        # the claims inside it), so it has a verdict at most, never a score
        judged = [t for t in rows if t["factual_score"] is not None]
        assert 1 <= len({(t["property"], t["value"], t["entity_type"]) for t in judged}) <= 2
        assert s["n_factual"] == sum(bool(t["kept"]) for t in rows)
        # literal claims over the cap are recorded as not judged, with the reason
        assert all(
            t["factual_error"].startswith("not judged")
            for t in rows
            if t["valid"] and t["factual"] is None and t["value_kind"] == "literal"
        )
        # ... and they are not counted as failed verdicts
        assert s["n_factual_errors"] == sum(
            bool(t["factual_error"]) and not t["factual_error"].startswith("not judged") for t in rows
        )
        assert s["n_factual_errors"] < sum(bool(t["factual_error"]) for t in rows)
        assert s["verdict_cached_prompt_tokens"] > 0  # the page prefix came from the engine's cache

    # The Ray Data path, from scratch over the same output: every answer comes from the cache.
    import sqlite3

    cache = out / "cache" / "llm.sqlite"
    n_cached = sqlite3.connect(cache).execute("SELECT count(*) FROM responses").fetchone()[0]
    from jobs.evaluate import EvaluateJob

    assert EvaluateJob([*argv[:-2], "--executor", "ray", "--overwrite"]).main() == 0
    assert sqlite3.connect(cache).execute("SELECT count(*) FROM responses").fetchone()[0] == n_cached
    again = read(out / "scores")
    strip = lambda rows: sorted((r["page_key"], r["n_triples"], r["n_valid"], r["n_factual"]) for r in rows)  # noqa: E731
    assert strip(again) == strip(scores)

    # The report over these scores: Table 7 adds up the per-page counts, Table 8 splits by stratum.
    from jobs.report import ReportJob

    shutil.copytree(pages, out / "pages")
    assert ReportJob(["--input", str(out / "scores"), "--output", str(out)]).main() == 0
    t7 = (out / "report" / "table7.csv").read_text().splitlines()
    assert t7[1].startswith(f"human,{sum(s['n_triples'] for s in scores)},{sum(s['n_valid'] for s in scores)},")
    t8 = (out / "report" / "table8.csv").read_text()
    assert "n_properties,high,human" in t8 and "n_instances,low,human" in t8
    assert "Table 7" in (out / "report" / "index.html").read_text()
    assert (out / "report" / "triples_per_stage.png").stat().st_size > 1000


def test_generated_markup_is_judged_and_scored_against_the_human_one(service, pages, tmp_path):
    from jobs.evaluate import EvaluateJob

    out = tmp_path / "gen"
    argv = evaluate_argv(
        pages,
        out,
        service,
        "--generators",
        MODEL_ID,
        "--max-claims",
        "1",
        "--max-tokens",
        "300",
        "--correct",
        "--stages",
        "validity",
        "factuality",
        "--executor",
        "local",
    )
    argv[argv.index("--limit") + 1] = "1"
    assert EvaluateJob(argv).main() == 0
    scores = {s["source"]: s for s in read(out / "scores")}
    assert set(scores) == {"human", MODEL_ID}
    model = scores[MODEL_ID]
    assert model["generation_chunks"] >= 1 and model["generation_prompt_tokens"] > 0
    if model["status"] == "ok":
        assert model["n_triples"] > 0 and 0 <= model["memr_raw_l"] <= 1 and 0 < model["memr_raw_h"] <= 1
        # on what the agents kept: a score when either side kept something, none for two empty markups
        kept_any = model["n_factual"] + scores["human"]["n_factual"] > 0
        assert (model["memr_h"] is not None) == kept_any
        # BLINKG value match ([scores] match_threshold): defined against a human markup that kept
        # something; its precision only when the model kept something too.
        if scores["human"]["n_factual"]:
            assert 0 <= model["match_recall"] <= 1
            assert (model["match_precision"] is None) == (model["n_factual"] == 0)
            if model["match_precision"] is not None:
                p, r = model["match_precision"], model["match_recall"]
                assert model["match_f1"] == (2 * p * r / (p + r) if p + r else 0.0)
        else:
            assert model["match_recall"] is None
        markups = {(m["source"], m["stage"]) for m in read(out / "markups")}
        assert {(MODEL_ID, "raw"), (MODEL_ID, "validity"), ("human", "factuality")} <= markups
        triples = [t for t in read(out / "triples") if t["source"] == MODEL_ID]
        assert model["n_corrected"] == sum(bool(t["corrected"]) for t in triples)
        assert all(t["factual"] and t["corrected_value"] for t in triples if t["corrected"])
    else:  # a failed generation is a row with its reason, never a lost page
        assert model["status"] == "generation_failed" and model["reason"]


def test_prompts_over_the_served_context_window_are_recorded_not_lost(service, pages, tmp_path):
    """A --context-window larger than the engine's (the service runs n_ctx 2048) makes every
    factuality prompt of a long page too long for the engine: each claim asked keeps its row with
    the engine's clear error, the page's scores row counts them as failed verdicts, nothing is
    kept that was not judged, and the run's counters still reconcile."""
    page = pq.read_table(pages).slice(0, 1).to_pylist()[0]
    # about 3,000 tokens of page before the page's own text: over the engine's window, not ours
    page["text"] = page["judge_text"] = "The anvil rests on the workbench. " * 400 + (page["text"] or "")
    folder = tmp_path / "pages"
    folder.mkdir()
    pq.write_table(
        pa.Table.from_pylist([page], schema=pq.read_schema(next(pages.glob("*.parquet")))), folder / "part-0.parquet"
    )
    out = tmp_path / "out"
    argv = [
        "--input",
        str(folder),
        "--output",
        str(out),
        "--base-url",
        service,
        "--limit",
        "1",
        "--context-window",
        "8192",
        "--timeout-s",
        "900",
        "--no-generation",
        "--max-claims",
        "2",
        "--stages",
        "validity",
        "factuality",
        "--executor",
        "local",
    ]
    done = subprocess.run(
        [sys.executable, str(ROOT / "jobs" / "evaluate.py"), *argv],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    [score] = read(out / "scores")
    triples = read(out / "triples")
    assert len(triples) == score["n_triples"] > 0
    asked = [t for t in triples if t["factual_error"] and not t["factual_error"].startswith("not judged")]
    assert asked, triples
    for t in asked:
        assert t["factual_error"].startswith("HTTP 400"), t["factual_error"]
        assert "context" in t["factual_error"] or "length" in t["factual_error"] or "token" in t["factual_error"]
        assert t["factual"] is None and not t["kept"]
    assert score["n_factual_errors"] == len(asked)
    counters = json.loads((out / "scores" / "_run.json").read_text())["counters"]
    assert counters["evaluated"] == 1 and counters["input_rows"] == 1
