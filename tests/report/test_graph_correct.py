"""The report's GraphCorrect section (udfs/report/sections/graph_correct.py): per source the triples
corrected (the scores' n_corrected) beside Table 7's after-factuality count that holds them, five
corrected triples as examples, and the line under Table 7 that says Table 7 counts them; on a
constructed scores/triples table whose counts are known."""

from __future__ import annotations

import csv
import html
import json
import re
from pathlib import Path

import pyarrow.parquet as pq

from udfs.evaluation.evaluator import SCORES_SCHEMA, TRIPLES_SCHEMA, to_table

MODEL = "qwen2.5-coder-1.5b"
# (source, page, n_factual, n_corrected) of the scores
SCORES = [("human", "a", 3, 1), ("human", "b", 2, 1), (MODEL, "a", 4, 3), (MODEL, "b", 2, 2)]
# (source, page, property, value, corrected_value, kept) of the corrected triples
CORRECTED = [
    ("human", "b", "telephone", "555-0000", "555-0202", True),
    ("human", "a", "name", "Rose Inn", "Rose Garden Inn", False),
    (MODEL, "b", "streetAddress", "Elm St", "12 Elm Street", True),
    (MODEL, "a", "telephone", "555", "555-0101", True),
    (MODEL, "a", "name", "Cafe", "Blue Bottle Cafe", False),
    (MODEL, "a", "addressLocality", "Shelbyville", "Springfield", True),
    (MODEL, "b", "name", "Deli", "Harbor Deli", False),
]


def url(page: str) -> str:
    return f"http://example.org/{page}"


def root(tmp_path: Path, correction: bool) -> Path:
    out = tmp_path / "out"
    scores = [
        {
            "page_key": p,
            "page_url": url(p),
            "source": s,
            "status": "ok",
            "n_triples": 6,
            "n_valid": 5,
            "n_factual": f,
            "n_compliant": f - 1,
            "n_corrected": c,
        }
        for s, p, f, c in SCORES
    ]
    triples = [
        {
            "page_key": p,
            "page_url": url(p),
            "source": s,
            "entity_type": "LocalBusiness",
            "property": prop,
            "value": v,
            "valid": True,
            "factual": True,
            "corrected": True,
            "corrected_value": cv,
            "kept": kept,
        }
        for s, p, prop, v, cv, kept in CORRECTED
    ]
    # a triple judged non-factual whose correction did not pass: not corrected, not an example
    triples.append({**triples[0], "property": "email", "factual": False, "corrected": False, "corrected_value": "x"})
    for name, rows, schema in (("scores", scores, SCORES_SCHEMA), ("triples", triples, TRIPLES_SCHEMA)):
        (out / name).mkdir(parents=True)
        pq.write_table(to_table(rows, schema), out / name / "part-0.parquet")
    record = {"job": "evaluate", "evaluation": {"models": [MODEL], "correction": correction}, "counters": {}}
    (out / "scores" / "_run.json").write_text(json.dumps(record))
    return out


def report(out: Path) -> str:
    from jobs.report import ReportJob

    assert ReportJob(["--input", str(out / "scores"), "--output", str(out)]).main() == 0
    return (out / "report" / "index.html").read_text()


def tables(section: str) -> list[list[list[str]]]:
    """Each table of ``section`` as rows of cell texts (header row first)."""
    return [
        [
            [html.unescape(c) for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", table, re.S)
        ]
        for table in re.findall(r"<table>(.*?)</table>", section, re.S)
    ]


def test_the_section_counts_the_corrected_triples_per_source_and_shows_five(tmp_path):
    out = root(tmp_path, correction=True)
    page = report(out)
    section = page[page.index('<h2 id="graph-correct">') : page.index('<h2 id="corrected">')]
    counts, examples = tables(section)
    assert counts[1:] == [["human", "2", "2", "5", "1"], [MODEL, "2", "5", "6", "3"]]
    # in turn from each source (human first), each source's by page and claim; five of seven
    assert [row[:2] + row[3:] for row in examples[1:]] == [
        ["human", url("a"), "Rose Inn", "Rose Garden Inn"],
        [MODEL, url("a"), "Shelbyville", "Springfield"],
        ["human", url("b"), "555-0000", "555-0202"],
        [MODEL, url("a"), "Cafe", "Blue Bottle Cafe"],
        [MODEL, url("a"), "555", "555-0101"],
    ]
    line = html.unescape(page[page.index('id="table7-corrected">') :].split("</p>")[0])
    assert "Table 7 counts corrected triples" in line
    assert f"Corrected triples per source: human 2, {MODEL} 5." in line
    with open(out / "report" / "graph_correct.csv", newline="") as fh:
        assert list(csv.DictReader(fh))[1] == {
            "source": MODEL,
            "pages": "2",
            "corrected": "5",
            "after_factuality": "6",
            "corrected_kept": "3",
        }
    with open(out / "report" / "graph_correct_examples.csv", newline="") as fh:
        assert len(list(csv.DictReader(fh))) == 5


def test_a_run_without_correct_says_so(tmp_path):
    page = report(root(tmp_path, correction=False))
    section = page[page.index('<h2 id="graph-correct">') : page.index('<h2 id="corrected">')]
    assert "This run did not correct" in section and "<table>" not in section
    assert "no triple of Table 7 is a corrected one" in page
