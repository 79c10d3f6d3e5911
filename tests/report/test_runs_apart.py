"""The report keeps runs apart (udfs/report/runs.py): each scores folder is read with its run
record, and the settings hash its rows carry must be the record's. Scores of two settings hashes
are refused (exit 2, one line naming each hash with its rows, factuality threshold and run folder)
unless ``--compare-settings``, which reports each hash on its own and never pools them. A folder
without its record, or with a record that is not its rows' run, is named, not guessed. The run table
names the endpoint the run called (its secrets redacted) and the models it served there."""

from __future__ import annotations

import csv
import html
import json
import re
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from udfs.evaluation.evaluator import SCORES_SCHEMA, TRIPLES_SCHEMA, to_table
from udfs.runtime.judge_record import AgentRecord, AppliedThreshold, JudgeRecord, Origin

HASH_A, HASH_B = "a" * 12 + "1" * 52, "b" * 12 + "2" * 52
GENERATOR, JUDGE = "gen-model", "judge-model"
SECRET_URL = "https://alice:s3cret-pw@llm.example.com:8443/v1?api_key=sk-abc123xyz&region=eu"


def judge_block(threshold: float) -> dict:
    def agent(value):
        return AgentRecord(
            ("plain",), ("plain",), "plain", "f" * 16, 0.0, AppliedThreshold(value, Origin("command_line", flag="--t"))
        )

    judge = JudgeRecord("direct", (JUDGE,), None, None, {"factuality": agent(threshold), "compliance": agent(0.5)})
    return judge.to_dict()


def run_folder(root: Path, digest: str, threshold: float, pages: int, base_url: str = "http://127.0.0.1:8000/v1"):
    """An evaluate run's output root: scores/ (``pages`` pages of human and GENERATOR, every row
    carrying ``digest``) with its record, and triples/ of the same hash."""
    scores, triples = [], []
    for i in range(pages):
        for source in ("human", GENERATOR):
            key = f"{digest[:4]}-p{i}"
            scores.append(
                {"page_key": key, "page_url": f"http://ex.org/{key}", "source": source, "status": "ok"}
                | {"n_triples": 4, "n_valid": 4, "n_factual": 3 if threshold < 0.5 else 1, "n_compliant": 1}
                | {"settings_hash": digest}
            )
            triples.append(
                {"page_key": key, "page_url": f"http://ex.org/{key}", "source": source, "property": "name"}
                | {"value": "A", "valid": True, "factual": threshold < 0.5, "factual_score": 0.4}
                | {"model": JUDGE, "settings_hash": digest}
            )
    for name, rows, schema in (("scores", scores, SCORES_SCHEMA), ("triples", triples, TRIPLES_SCHEMA)):
        (root / name).mkdir(parents=True)
        pq.write_table(to_table(rows, schema), root / name / "part-0.parquet")
    record = {
        "job": "evaluate",
        "started_at": "2026-12-07T10:00:00+00:00",
        "finished_at": "2026-12-07T10:05:00+00:00",
        "counters": {},
        "evaluation": {
            "base_url": base_url,
            "stages": ["validity", "factuality", "compliance"],
            "models": [GENERATOR],
            "judge": judge_block(threshold),
            "settings_hash": digest,
        },
    }
    (root / "scores" / "_run.json").write_text(json.dumps(record))
    return root / "scores"


def report(*argv: str) -> int:
    """The report job's exit status."""
    from jobs.report import ReportJob

    return ReportJob(list(argv)).main()


def refused(capsys, *argv: str) -> str:
    """The one line the report ends on with exit status 2."""
    from jobs.report import ReportJob

    with pytest.raises(SystemExit) as stop:
        ReportJob(list(argv)).main()
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2, err
    assert err[-1].startswith("report.py: error: ")
    return err[-1]


def section(page: str, start: str, end: str) -> str:
    return page[page.index(f'<h2 id="{start}">') : page.index(f'<h2 id="{end}">')]


@pytest.fixture
def two_runs(tmp_path) -> tuple[Path, Path, Path]:
    """Two runs of other settings (factuality threshold 0.3 over 3 pages, 0.7 over 2) and the
    output root of their report."""
    return run_folder(tmp_path / "a", HASH_A, 0.3, 3), run_folder(tmp_path / "b", HASH_B, 0.7, 2), tmp_path / "out"


def test_scores_of_two_settings_hashes_are_refused_naming_each(two_runs, capsys):
    a, b, out = two_runs
    line = refused(capsys, "--input", str(a), str(b), "--output", str(out))
    assert "the scores hold 2 settings hashes" in line
    assert f"{HASH_A[:12]} (6 rows, factuality threshold 0.3, run folder {a})" in line
    assert f"{HASH_B[:12]} (4 rows, factuality threshold 0.7, run folder {b})" in line
    assert "--compare-settings" in line
    assert not (out / "report" / "index.html").exists()


def test_compare_settings_reports_each_hash_on_its_own_never_pooled(two_runs):
    a, b, out = two_runs
    assert report("--input", str(a), str(b), "--output", str(out), "--compare-settings") == 0
    page = (out / "report" / "index.html").read_text()
    la, lb = HASH_A[:12], HASH_B[:12]
    # the run table: one column per settings hash, each with its own threshold and run folder
    run = section(page, "run", "funnel")
    assert f"<tr><th>settings hash</th><th>{la}</th><th>{lb}</th></tr>" in run
    threshold = re.search(r"<tr><th>factuality threshold</th><td>(.*?)</td><td>(.*?)</td></tr>", run)
    assert threshold.group(1).startswith("0.3 from") and threshold.group(2).startswith("0.7 from")
    assert f"<td>{a} (6 rows)</td><td>{b} (4 rows)</td>" in run
    # Table 7: one labelled table per hash, the human row over its own pages (3 and 2), none over 5
    t7 = section(page, "table7", "graph-correct")
    assert t7.index(f"settings {la}") < t7.index(f"settings {lb}") and t7.count("<table>") == 2
    humans = re.findall(r'<tr><td class="">human</td><td class="n">(\d+)</td>', t7)
    assert humans == ["3", "2"]
    # every section that reads the scores shows each hash under its label
    for start, end in (
        ("funnel", "table7"),
        ("graph-correct", "corrected"),
        ("corrected", "by-generator"),
        ("by-generator", "by-type"),
        ("by-type", "table8"),
        ("table8", "fig10"),
        ("rejections", "scores"),
        ("scores", "bench"),
    ):
        part = section(page, start, end)
        assert f"settings {la}" in part and f"settings {lb}" in part, start
    with open(out / "report" / "table7.csv", newline="") as fh:
        rows = [(r["settings"], r["source"], r["pages"]) for r in csv.DictReader(fh)]
    assert rows == [(la, "human", "3"), (la, GENERATOR, "3"), (lb, "human", "2"), (lb, GENERATOR, "2")]
    assert (out / "report" / f"triples_per_stage-{la}.png").is_file()


def test_a_scores_folder_without_its_record_is_named(two_runs, capsys):
    """Two --input folders, one without _run.json: before, the page said "settings hash unknown"."""
    a, b, out = two_runs
    (b / "_run.json").unlink()
    line = refused(capsys, "--input", str(a), str(b), "--output", str(out), "--compare-settings")
    assert f"{b} holds scores but no _run.json" in line and "does not guess" in line
    assert not (out / "report" / "index.html").exists()


def test_a_record_that_is_not_its_rows_run_is_named(two_runs, capsys):
    """Another run's part copied into a run folder: its rows carry another hash than the record."""
    a, b, out = two_runs
    shutil.copy(b / "part-0.parquet", a / "part-1.parquet")
    line = refused(capsys, "--input", str(a), "--output", str(out))
    assert f"{a / '_run.json'} names settings hash {HASH_A[:12]}" in line
    assert f"of the 10 rows of {a} 4 carry {HASH_B[:12]}" in line
    # rows older than the hash column under a record that names one
    (a / "part-1.parquet").unlink()
    part = pq.read_table(a / "part-0.parquet")
    pq.write_table(part.drop(["settings_hash"]), a / "part-0.parquet")
    line = refused(capsys, "--input", str(a), "--output", str(out))
    assert f"of the 6 rows of {a} 6 carry no hash" in line


def run_rows(out: Path) -> dict[str, str]:
    page = (out / "report" / "index.html").read_text()
    run = section(page, "run", "funnel")
    return {html.unescape(k): html.unescape(v) for k, v in re.findall(r"<tr><th>(.*?)</th><td>(.*?)</td></tr>", run)}


def test_the_run_table_names_the_endpoint_called_with_its_secrets_redacted_and_the_models_it_served(tmp_path):
    scores = run_folder(tmp_path / "run", HASH_A, 0.3, 2, base_url=SECRET_URL)
    out = tmp_path / "out"
    assert report("--input", str(scores), "--output", str(out)) == 0
    rows = run_rows(out)
    assert rows["endpoint"] == "https://<redacted>@llm.example.com:8443/v1?api_key=<redacted>&region=eu"
    assert rows["models it served"] == f"{GENERATOR}, {JUDGE}"
    # not conf/serving.toml's embedded model: the run did not call that service
    assert (
        rows["model file"]
        == "the endpoint's own: https://<redacted>@llm.example.com:8443/v1?api_key=<redacted>&region=eu is not the service of conf/serving.toml"
    )
    for name in (out / "report").iterdir():
        if name.suffix in (".html", ".csv", ".json"):
            text = name.read_text()
            assert "s3cret-pw" not in text and "sk-abc123xyz" not in text and "alice" not in text, name


def test_a_run_against_the_configured_service_names_its_model_file(tmp_path):
    from udfs.llm.serving.config import base_url, load_serving_conf

    conf = load_serving_conf()
    scores = run_folder(tmp_path / "run", HASH_A, 0.3, 1, base_url=base_url(conf))
    rec = json.loads((scores / "_run.json").read_text())
    rec["evaluation"]["models"] = [conf.embedded.models[0].model_id]
    (scores / "_run.json").write_text(json.dumps(rec))
    out = tmp_path / "out"
    assert report("--input", str(scores), "--output", str(out)) == 0
    rows = run_rows(out)
    assert rows["endpoint"] == base_url(conf)
    assert conf.embedded.models[0].model in rows["model file"]
