"""jobs/import_pset.py over the paper's folder in ../shared (skipped without it): row counts
against results.csv, the schemas, the paper's text byte for byte, rejects of a missing and a
corrupted file, and jobs/evaluate.py's validity stage over the written pages."""

from __future__ import annotations

import collections
import json
import os
import shlex
import shutil
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from udfs.corpus.pset import PSET, SOURCES, results_rows
from udfs.runtime.paths import PROJECT_ROOT

# the oldest original commit: 180 pages, 30 per stratum, no results.csv yet
OLDEST = "0ca2301c0f4166010aee05db792a54df34885596"


def run_job(*args, check=True):
    from tests.conftest import PSET_DATA

    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    argv = [sys.executable, str(PROJECT_ROOT / "jobs" / "import_pset.py"), *args]
    if "--input" not in args:
        argv += ["--input", str(PSET_DATA / "pset-history.bundle")]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    if check:
        assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def imported(pset, tmp_path_factory):
    out = tmp_path_factory.mktemp("pset-import")
    run_job("--output", str(out))
    return out


def counters(out):
    return json.loads((out / "pages" / "_run.json").read_text())["counters"]


def test_counts_match_results_csv_and_reconcile(pset, imported):
    from udfs.corpus.pset_tables import PSET_PAGES_SCHEMA, STORED_MARKUPS_SCHEMA

    pages = pq.read_table(imported / "pages")
    stored = pq.read_table(imported / "stored_markups")
    assert pages.schema.equals(PSET_PAGES_SCHEMA, check_metadata=False)
    assert stored.schema.equals(STORED_MARKUPS_SCHEMA, check_metadata=False)
    rows = results_rows(pset)
    scored = {(r.feature, r.stratum, r.document_id) for r in rows}
    got = {
        (p["feature"], p["stratum_index"], p["page_id"])
        for p in pages.select(["feature", "stratum_index", "page_id"]).to_pylist()
    }
    assert got == scored and len(got) == 182  # every page results.csv scores, once per feature and stratum
    per = collections.Counter(zip(pages["feature"].to_pylist(), pages["stratum"].to_pylist()))
    assert per == {
        ("count_sum", "low"): 30, ("count_sum", "medium"): 30, ("count_sum", "high"): 30,
        ("pset_length", "low"): 31, ("pset_length", "medium"): 31, ("pset_length", "high"): 30,
    }  # fmt: skip
    # one markup per page and source: results.csv scores 13 pages once per order of their types
    per_page = collections.Counter((r.feature, r.stratum, r.document_id, r.source) for r in rows)
    several = {k for k, n in per_page.items() if n > 1}
    assert len(several) == 39 and len({k[:3] for k in several}) == 13
    assert collections.Counter(stored["source"].to_pylist()) == dict.fromkeys(SOURCES, 182)
    keys = list(zip(stored["page_id"].to_pylist(), stored["source"].to_pylist()))
    assert len(keys) == len(set(keys))
    human_path = dict(zip(pages["page_id"].to_pylist(), pages["human_markup_path"].to_pylist()))
    for m in stored.to_pylist():
        if (m["feature"], m["stratum_index"], m["page_id"], m["source"]) in several:
            # the order of the page's human markup, for every source
            assert m["path"].endswith("_" + human_path[m["page_id"]].rsplit("/", 1)[1].split("_", 1)[1])
    c = counters(imported)
    assert c["reconciles"] and c["pages_listed"] == 183 and c["pages_rejected"] == 1
    assert c["pages_listed"] == c["pages_written"] + c["pages_rejected"]
    for s in SOURCES:
        assert c[f"markups_listed_{s}"] == 198 == c[f"markups_written_{s}"] + c[f"markups_rejected_{s}"]
        assert c[f"markups_other_order_{s}"] == 16 == c[f"markups_rejected_{s}"]
    # the one page of the folders results.csv does not score has no human markup file: a reject naming it
    rej = pq.read_table(imported / "rejects" / "import_pset").to_pylist()
    missing = [r for r in rej if r["reason"].startswith("human markup missing")]
    assert len(missing) == 1 and "90eb7b1e9ad967ed00d80f2edfe09c12" in missing[0]["source"]
    orders = [r for r in rej if "once per order of its types" in r["reason"]]
    assert len(rej) == 1 + len(orders) and len(orders) == 48


def test_paper_text_and_markups_byte_for_byte(pset, imported):
    pages = pq.read_table(imported / "pages").to_pylist()
    for p in pages[::30]:
        base = f"{PSET}/{p['feature']}/stratum_{p['stratum_index']}/corpus/{p['page_id']}"
        assert p["text"].encode("utf-8") == pset.read(base + ".txt") == p["paper_text"].encode("utf-8")
        assert p["judge_text"] == p["text"] and p["text_extractor"] == "paper"
        assert p["html"] == pset.read(base + ".html") and p["html_bytes"] == len(p["html"])
        assert p["human_markup"].encode("utf-8") == pset.read(p["human_markup_path"])
        assert p["status"] == "ok" and p["selected"] and p["root_types"]
    known = [p for p in pages if p["url_source"] == "sample"]
    assert len(known) == 175 and all(p["page_url"].startswith("http") for p in known)
    assert all(p["page_url"] == f"pset:{p['page_id']}" for p in pages if p["url_source"] == "none")
    stored = pq.read_table(imported / "stored_markups").to_pylist()
    for m in stored[::50]:
        assert m["markup"].encode("utf-8") == pset.read(m["path"])


def test_the_oldest_commit_lists_markup_files(pset, tmp_path):
    run_job("--output", str(tmp_path), "--commit", OLDEST)
    c = counters(tmp_path)
    assert c["reconciles"] and c["pages_listed"] == 180 and c["markups_listed_GPT-3.5"] == 0
    pages = pq.read_table(tmp_path / "pages")
    assert set(pages["paper_commit"].to_pylist()) == {OLDEST}


def test_per_stratum_draws_a_stratified_subset_of_single_markup_pages(pset, tmp_path):
    run_job("--output", str(tmp_path), "--per-stratum", "2")
    pages = pq.read_table(tmp_path / "pages").to_pylist()
    markups = pq.read_table(tmp_path / "stored_markups").to_pylist()
    cells = collections.Counter((p["feature"], p["stratum"]) for p in pages)
    assert cells == {(f, s): 2 for f in ("count_sum", "pset_length") for s in ("low", "medium", "high")}
    per_page = collections.Counter((m["page_id"], m["source"]) for m in markups)
    assert set(per_page.values()) == {1} and len(per_page) == 3 * len(pages)
    c = json.loads((tmp_path / "pages" / "_run.json").read_text())["counters"]
    assert c["reconciles"] and c["pages_listed"] == 183 and c["pages_not_selected"] == 183 - 12
    assert c["markups_listed_human"] == 198 and c["markups_not_selected_human"] == 198 - 12
    # the draw is a function of the page ids alone: the same subset again, a larger one contains it
    again = tmp_path / "again"
    run_job("--output", str(again), "--per-stratum", "3")
    assert {p["page_id"] for p in pages} < {p["page_id"] for p in pq.read_table(again / "pages").to_pylist()}


def test_a_missing_and_a_corrupted_file_are_rejects(pset, tmp_path):
    checkout = tmp_path / "repo"
    shutil.copytree(pset.root / PSET, checkout / PSET, ignore=shutil.ignore_patterns("*_filtered.jsonld", "*.report"))
    rows = [r for r in results_rows(pset) if r.feature == "count_sum" and r.stratum == 0]
    gone = f"{PSET}/count_sum/stratum_0/corpus/{rows[0].document_id}.html"
    (checkout / gone).unlink()
    once = collections.Counter((r.document_id, r.source) for r in rows)
    bad = next(
        r
        for r in rows
        if r.source == "GPT-4" and r.document_id != rows[0].document_id and once[(r.document_id, r.source)] == 1
    )
    (checkout / bad.markup).write_bytes(b"\xff{ not json")
    out = tmp_path / "out"
    run_job("--input", str(checkout), "--output", str(out))
    c = counters(out)
    assert c["reconciles"] and c["pages_rejected"] == 2
    assert c["markups_rejected_GPT-4"] == c["markups_other_order_GPT-4"] + 1
    rej = {r["source"]: r for r in pq.read_table(out / "rejects" / "import_pset").to_pylist()}
    assert rej[gone]["reason"].startswith("HTML missing")
    assert rej[bad.markup]["reason"].startswith("GPT-4 markup unreadable") and rej[bad.markup]["raw"]


def test_text_project_extracts_the_html(pset, tmp_path):
    out = tmp_path / "out"
    run_job("--output", str(out), "--text", "project")
    pages = pq.read_table(out / "pages", columns=["text", "text_extractor", "paper_text", "status"]).to_pylist()
    assert {p["text_extractor"] for p in pages} == {"trafilatura"}
    assert sum(p["status"] == "ok" and bool(p["text"]) for p in pages) > 170
    assert sum(p["text"] != p["paper_text"] for p in pages) > 170


def test_evaluate_reads_the_pages_for_validity(imported, tmp_path):
    out = tmp_path / "eval"
    shutil.copytree(imported / "pages", out / "pages")
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    done = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "jobs" / "evaluate.py"), "--input", str(out / "pages"), "--output",
         str(out), "--no-generation", "--stages", "validity", "--executor", "local", "--limit", "2",
         "--base-url", "http://127.0.0.1:9/v1"],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    scores = pq.read_table(out / "scores")
    assert scores.num_rows == 2
    c = json.loads((out / "scores" / "_run.json").read_text())["counters"]
    assert c["input_rows"] == 182 and c["evaluated"] == 2 and c["no_text"] == 0


def test_report_sets_a_validity_run_beside_the_paper(pset, tmp_path):
    """A subset's three sources judged for validity only, then the report with --paper: its funnel
    gives the paper's own counts for exactly the run's documents (results.csv), the run's counts
    beside them, and the section says nothing was matched for the agents that did not run."""
    from tests.conftest import PSET_DATA

    imported = run_job("--output", str(tmp_path), "--per-stratum", "1")
    # the next step the import prints judges the imported markups: run as printed, validity only
    step = shlex.split(imported.stderr.strip().splitlines()[-1].removeprefix("  next: "))
    assert step[0] == "llm4schema-evaluate" and step[step.index("--markups") + 1] == str(tmp_path / "stored_markups")
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    done = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "jobs" / "evaluate.py"), *step[1:], "--stages", "validity",
         "--executor", "local", "--limit", "0", "--base-url", "http://127.0.0.1:9/v1"],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert set(pq.read_table(tmp_path / "scores", columns=["source"])["source"].to_pylist()) == set(SOURCES)
    done = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "jobs" / "report.py"), "--input", str(tmp_path / "scores"),
         "--output", str(tmp_path), "--paper", str(PSET_DATA / "pset-history.bundle")],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    import pandas as pd

    funnel = pd.read_csv(tmp_path / "report" / "paper_funnel.csv")
    markups = pq.read_table(tmp_path / "stored_markups").to_pylist()
    for source in SOURCES:
        theirs = funnel[(funnel.source == source) & (funnel.counted_by == "the paper, same documents")]
        assert int(theirs.triples_in.iloc[0]) == sum(m["paper_triples_in"] for m in markups if m["source"] == source)
        assert int(theirs.after_validity.iloc[0]) == sum(
            m["paper_triples_kept"] for m in markups if m["source"] == source
        )
        ours = funnel[(funnel.source == source) & (funnel.counted_by == "this run")]
        assert int(ours.triples_in.iloc[0]) > 0 and int(ours.after_validity.iloc[0]) <= int(ours.triples_in.iloc[0])
    agreement = pd.read_csv(tmp_path / "report" / "paper_agreement.csv")
    assert (agreement.matched == 0).all() and (agreement.paper_claims > 0).any()
    page = (tmp_path / "report" / "index.html").read_text()
    assert 'id="paper-pages"' in page
    # the paper's GPT-3.5 and GPT-4 markups were judged, not generated: sources, not models of the run
    assert "<th>models (generation and verdicts)</th><td>none recorded</td>" in page
    assert "<th>stored markups (sources, not models)</th><td>GPT-3.5, GPT-4 (--markups " in page
