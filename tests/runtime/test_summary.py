"""udfs/runtime/summary.py: the end-of-run block of every job and the demo's closing summary."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys

import pyarrow as pa
import pytest

from udfs.evaluation.evaluator import SCORES_SCHEMA
from udfs.runtime.io import Folder
from udfs.runtime.summary import attention, demo_summary, headline, job_summary

# The per-page funnel of a demo run (make demo, 2 pages, Qwen2.5-Coder-1.5B on CPU).
DEMO_SCORES = [
    ("http://extruct-samples.example/schema.org/CreativeWork.001.html", "human", 31, 31, 0, 0),
    ("http://extruct-samples.example/schema.org/CreativeWork.001.html", "qwen2.5-coder-1.5b", 5, 3, 1, 0),
    ("http://extruct-samples.example/songkick/elysianfields_1.html", "human", 18, 18, 5, 4),
    ("http://extruct-samples.example/songkick/elysianfields_1.html", "qwen2.5-coder-1.5b", 7, 7, 1, 1),
]
# The counters the evaluate job recorded on that run.
EVALUATE_COUNTERS = {
    "input_rows": 82,
    "not_ok_or_not_selected": 0,
    "no_text": 22,
    "duplicate_rows": 51,
    "over_limit": 7,
    "already_scored": 0,
    "evaluated": 2,
    "failed": 0,
}


def _scores_table():
    rows = [
        {
            "page_key": url[-20:],
            "page_url": url,
            "source": src,
            "status": "ok",
            "n_triples": n,
            "n_valid": v,
            "n_factual": f,
            "n_compliant": c,
        }
        for url, src, n, v, f, c in DEMO_SCORES
    ]
    return pa.Table.from_pylist([{f.name: r.get(f.name) for f in SCORES_SCHEMA} for r in rows], schema=SCORES_SCHEMA)


@pytest.fixture
def demo_root(tmp_path):
    root = Folder(tmp_path / "out")
    (root / "scores").write_parquet("part-a.parquet", _scores_table().slice(0, 2))
    (root / "scores").write_parquet("part-b.parquet", _scores_table().slice(2, 2))
    (root / "scores").write_text(
        "_run.json",
        json.dumps(
            {
                "job": "evaluate",
                "counters": EVALUATE_COUNTERS,
                "wall_s": 99.1,
                "started_at": "2026-11-30T21:36:28+00:00",
                "finished_at": "2026-11-30T21:38:07+00:00",
            }
        ),
    )
    (root / "csets").write_text(
        "_run.json",
        json.dumps(
            {
                "job": "csets",
                "counters": {"lines_rejected": 0, "rejects_written": 2, "files_damaged": 0},
                "started_at": "2026-11-30T21:34:47+00:00",
                "finished_at": "2026-11-30T21:35:01+00:00",
            }
        ),
    )
    (root / "report").write_text("index.html", "<html></html>")
    return root


def test_attention_keeps_nonzero_trouble_counters_only():
    assert attention(EVALUATE_COUNTERS) == {"no_text": 22}
    counters = {
        "lines_rejected": 3,
        "rejects_written": 3,
        "reconciles": True,
        "files_damaged": 0,
        "rejected_by_reason": {"bad iri": 3},
        "claims_not_judged": 5,
        "selected_fetch_error": 2,
    }
    # rejects_written is bookkeeping; booleans and dicts are not counters to add up
    assert attention(counters) == {"lines_rejected": 3, "claims_not_judged": 5, "selected_fetch_error": 2}


def test_attention_names_the_duplicate_keys_of_an_input():
    """A key given twice (issue 59) is trouble; the rows of one page in several strata are not."""
    counters = {
        "duplicate_rows": 4,
        "ambiguous_page_id_rows": 2,
        "conflicting_text_rows": 0,
        "duplicate_cset_ids": 1,
        "ground_truth_duplicate_rows": 3,
        "duplicate_vote_rows": 2,
    }
    assert attention(counters) == {
        "ambiguous_page_id_rows": 2,
        "duplicate_cset_ids": 1,
        "ground_truth_duplicate_rows": 3,
        "duplicate_vote_rows": 2,
    }


def test_job_summary_names_tables_rows_locations_and_next_step(demo_root):
    record = {"wall_s": 99.1, "counters": EVALUATE_COUNTERS}
    text = job_summary(
        "evaluate",
        [("scores", demo_root / "scores"), ("triples", demo_root / "triples")],
        record,
        "llm4schema-report --input OUT/scores --output OUT",
    )
    lines = text.splitlines()
    assert lines[0] == "evaluate: done in 99.1 s"
    assert lines[1].split()[:3] == ["scores/", "4", "rows"] and lines[1].endswith(str(demo_root / "scores"))
    assert not any("triples/" in ln for ln in lines)  # not written: not listed
    assert "  to look at: no_text 22" in lines
    assert lines[-1] == "  next: llm4schema-report --input OUT/scores --output OUT"


def test_headline_says_which_agent_cut_most():
    assert headline("human", {"n_triples": 49, "n_valid": 49, "n_factual": 5, "n_compliant": 4}) == (
        "  human: 49 triples -> 49 valid -> 5 factual -> 4 compliant  (factuality rejected 44 of 49 human triples)"
    )
    assert headline("m", {"n_triples": 0, "n_valid": 0, "n_factual": 0, "n_compliant": 0}) == (
        "  m: 0 triples -> 0 valid -> 0 factual -> 0 compliant"
    )


def test_demo_summary_over_an_output_root(demo_root):
    text = demo_summary(demo_root)
    assert f"report:  file://{demo_root.local_path / 'report' / 'index.html'}" in text
    assert "triples kept after each agent (2 pages):" in text
    assert (
        "  human: 49 triples -> 49 valid -> 5 factual -> 4 compliant  (factuality rejected 44 of 49 human triples)"
        in text
    )
    assert "  qwen2.5-coder-1.5b: 12 triples -> 10 valid -> 2 factual -> 1 compliant" in text
    assert "to look at: evaluate.no_text 22" in text
    assert text.splitlines()[-1] == "total time: 3.3 min (first job's start to last job's end)"


def test_summary_command(demo_root, tmp_path):
    ok = subprocess.run(
        [sys.executable, "-m", "udfs.runtime.summary", str(demo_root)], capture_output=True, text=True, timeout=60
    )
    assert ok.returncode == 0 and "factuality rejected 44 of 49 human triples" in ok.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "udfs.runtime.summary", str(tmp_path / "nowhere")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip() == f"summary: error: {tmp_path / 'nowhere'}: no such output root"


def test_job_summary_of_the_report_links_it_once_and_skips_empty_rejects(demo_root):
    report = demo_root / "report"
    record = {"wall_s": 1.5, "counters": {"table7_rows": 2}, "report": str(report / "index.html")}
    text = job_summary("report", [("report", report), ("rejects/report", demo_root / "rejects" / "report")], record, "")
    assert text.splitlines() == ["report: done in 1.5 s", f"  report: file://{report.local_path / 'index.html'}"]


def _write_judge(root, judge):
    rec = json.loads((root / "scores").read_text("_run.json"))
    rec["evaluation"] = {"judge": judge.to_record()}
    (root / "scores").write_text("_run.json", json.dumps(rec))


def test_the_summary_says_which_thresholds_decided_and_the_shipped_calibration_fits_the_default(demo_root):
    """The shipped conf/calibration.json is taken by the default judge ([judge]: its entries were
    fitted on today's prompts: a prompt edit without a new calibration fails here), and the summary
    says its thresholds, read from the judge's block; a verdict model it does not hold gets the
    fallback, a number in the configuration is "configured", and a threshold given on the command
    line is said so."""
    from udfs.agents import calibration as cal
    from udfs.agents.judge import build_judge
    from udfs.runtime.config import load_config

    conf = load_config()
    settings = conf.judge
    model = next(e["model"] for e in cal.read("conf/calibration.json")["entries"])
    judge = build_judge(settings, config_file=conf.path, served_model=model)
    assert all(r.entry is not None for r in judge.record.agents.values()), judge.to_record()
    _write_judge(demo_root, judge)
    line = next(x for x in demo_summary(demo_root).splitlines() if x.startswith("verdict thresholds:"))
    for agent in ("factuality", "compliance"):
        assert f"{agent} {judge.threshold(agent):.3g} (calibrated)" in line
    assert line.endswith("calibration file conf/calibration.json")

    other = build_judge(
        dataclasses.replace(settings, compliance_threshold=0.4), config_file=conf.path, served_model="another-model"
    )
    _write_judge(demo_root, other)
    assert "verdict thresholds: factuality 0.5 (fallback), compliance 0.4 (configured)" in demo_summary(demo_root)
    given = build_judge(
        dataclasses.replace(settings, factuality_threshold=0.5),
        config_file=conf.path,
        given={"factuality_threshold"},
        served_model=model,
    )
    _write_judge(demo_root, given)
    assert "verdict thresholds: factuality 0.5 (command line), compliance 0.318 (calibrated)" in demo_summary(demo_root)


@pytest.mark.parametrize("page", ["README.md", "docs/getting-started.md"])
def test_the_front_doors_sample_demo_summary_is_what_the_summary_prints(page, demo_root):
    """The sample "== demo summary ==" block of the README and of Getting started: each funnel
    line is what ``headline`` prints for its own counts, and the thresholds line is what the
    summary prints for the shipped judge of the embedded model (its calibration entries): a change
    of the shipped calibration or of the summary's wording fails here until the page follows."""
    from udfs.agents.judge import build_judge
    from udfs.llm.serving.config import load_serving_conf
    from udfs.runtime.config import load_config
    from udfs.runtime.paths import PROJECT_ROOT

    text = (PROJECT_ROOT / page).read_text(encoding="utf-8")
    block = text.split("== demo summary ==\n", 1)[1].split("```", 1)[0].splitlines()
    funnel = [line for line in block if " triples -> " in line]
    assert len(funnel) == 2, block  # human and the embedded model
    for line in funnel:
        source, chain = line.strip().split(": ", 1)
        counts = [int(n.replace(",", "")) for n in re.findall(r"([\d,]+) (?:triples|valid|factual|compliant)", chain)]
        assert line == headline(source, dict(zip(("n_triples", "n_valid", "n_factual", "n_compliant"), counts)))
    model = load_serving_conf().embedded.models[0].model_id
    assert funnel[1].strip().startswith(model + ":")
    conf = load_config()
    _write_judge(demo_root, build_judge(conf.judge, config_file=conf.path, served_model=model))
    said = next(line for line in demo_summary(demo_root).splitlines() if line.startswith("verdict thresholds:"))
    assert said in block
