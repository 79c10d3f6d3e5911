"""The report's run table names the models of the run (the generators and the verdicts' models) as
models, and the sources of stored markups (``--markups``: made elsewhere, judged here) as sources:
a run that judged the paper's GPT-4 markups did not run GPT-4 (udfs/report/sections/run_table.py run_sources).
And its input's key, (page_key, source), is one row: scores with a key twice are refused."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from udfs.evaluation.evaluator import SCORES_SCHEMA, TRIPLES_SCHEMA, to_table

URL = "http://example.org/a"
GENERATOR, JUDGE = "qwen2.5-coder-1.5b", "judge-model"
STORED = ("GPT-4", "paper-2024")
MODELS_ROW, STORED_ROW = "models (generation and verdicts)", "stored markups (sources, not models)"


def root(tmp_path: Path, evaluation: dict | None, markups_table: str | None = None) -> Path:
    """An output root with scores/ and triples/ of one page: human, one generated and two stored
    sources, every triple judged by JUDGE; scores/_run.json with ``evaluation`` when given."""
    out = tmp_path / "out"
    sources = ["human", GENERATOR, *STORED]
    scores = [
        {"page_key": "k1", "page_url": URL, "source": s, "status": "ok", "n_triples": 1, "n_valid": 1} for s in sources
    ]
    triples = [
        {
            "page_key": "k1",
            "page_url": URL,
            "source": s,
            "property": "name",
            "value": "A",
            "valid": True,
            "model": JUDGE,
        }
        for s in sources
    ]
    for name, rows, schema in (("scores", scores, SCORES_SCHEMA), ("triples", triples, TRIPLES_SCHEMA)):
        (out / name).mkdir(parents=True)
        pq.write_table(to_table(rows, schema), out / name / "part-0.parquet")
    if evaluation is not None:
        record = {"job": "evaluate", "evaluation": evaluation, "counters": {}}
        if markups_table:
            record["markups"] = {"table": markups_table}
        (out / "scores" / "_run.json").write_text(json.dumps(record))
    return out


def run_rows(out: Path) -> dict[str, str]:
    from jobs.report import ReportJob

    assert ReportJob(["--input", str(out / "scores"), "--output", str(out)]).main() == 0
    page = (out / "report" / "index.html").read_text()
    run = page[page.index('<h2 id="run">') : page.index('<h2 id="funnel">')]
    return {html.unescape(k): html.unescape(v) for k, v in re.findall(r"<tr><th>(.*?)</th><td>(.*?)</td></tr>", run)}


def test_stored_sources_are_listed_as_sources_not_models(tmp_path):
    out = root(tmp_path, {"models": [GENERATOR], "sources": ["human", GENERATOR, *STORED]}, "/data/stored_markups")
    rows = run_rows(out)
    assert rows[MODELS_ROW] == f"{JUDGE}, {GENERATOR}"
    assert rows[STORED_ROW] == "GPT-4, paper-2024 (--markups /data/stored_markups)"


def test_a_run_of_stored_markups_only_names_no_model(tmp_path):
    """Validity only over stored markups: no generator, no verdict model, no model file."""
    out = root(tmp_path, {"models": [], "sources": ["human", *STORED]})
    pq.write_table(
        to_table(
            [{"page_key": "k1", "page_url": URL, "source": s, "property": "name", "valid": True} for s in STORED],
            TRIPLES_SCHEMA,
        ),
        out / "triples" / "part-0.parquet",
    )
    rows = run_rows(out)
    assert rows[MODELS_ROW] == "none recorded"
    assert rows["model file"] == "none: no model generated or judged"
    # the record names no generator: a source named like a model is a stored one here
    assert rows[STORED_ROW] == ", ".join(sorted([GENERATOR, *STORED]))


def test_a_record_without_generators_cannot_tell_and_counts_every_source_as_a_model(tmp_path):
    rows = run_rows(root(tmp_path, {"stages": ["validity"]}))
    assert rows[MODELS_ROW] == ", ".join(sorted([GENERATOR, JUDGE, *STORED]))
    assert STORED_ROW not in rows


def test_a_runs_repeats_are_its_sources_by_name(tmp_path):
    """--repeats names a source's repeats source#r: the generator's repeats are the generator."""
    out = root(tmp_path, {"models": [GENERATOR], "sources": ["human", GENERATOR]})
    scores = [
        {"page_key": "k1", "page_url": URL, "source": f"{s}#{r}", "status": "ok"}
        | {"n_triples": 2, "n_valid": 2, "n_factual": 1, "n_compliant": 1}
        for s in ("human", GENERATOR)
        for r in (1, 2)
    ]
    pq.write_table(to_table(scores, SCORES_SCHEMA), out / "scores" / "part-0.parquet")
    rows = run_rows(out)
    assert rows[MODELS_ROW] == f"{JUDGE}, {GENERATOR}" and STORED_ROW not in rows


def test_scores_with_a_key_in_two_rows_are_refused_naming_it(tmp_path, capsys):
    """Two runs' scores given together (here one part copied): every page would count twice in every
    table. The report refuses, naming the key and the files; before, it counted them twice."""
    from jobs.report import ReportJob

    out = root(tmp_path, {"models": [GENERATOR], "sources": ["human", GENERATOR, *STORED]})
    part = pq.read_table(out / "scores" / "part-0.parquet")
    pq.write_table(part.filter(pc.equal(part["source"], GENERATOR)), out / "scores" / "part-1.parquet")
    with pytest.raises(SystemExit) as stop:
        ReportJob(["--input", str(out / "scores"), "--output", str(out)]).main()
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert stop.value.code == 2 and err.startswith("report.py: error: 1 (page_key, source) keys of the scores")
    assert f"page_key k1, source {GENERATOR}: 2 rows in " in err
    assert "part-0.parquet" in err and "part-1.parquet" in err
    assert not (out / "report" / "index.html").exists()
