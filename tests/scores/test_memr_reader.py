"""MeMR reads markup with the pipeline's one JSON-LD reader: ``python -m udfs.scores.memr`` and the
evaluation's path (``parse_markup`` + ``memr``) give the same triple counts and the same scores on
every bundled real markup, accept and refuse the same contexts, and the command line reports a bad
file in one line and goes on with the others."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections import Counter
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from conftest import ROOT

from testkit.markup_corpus import real_markups
from udfs.corpus.wdc_quads import jsonld_to_quads
from udfs.schemaorg.markup import MarkupError, parse_markup
from udfs.scores.memr import TYPE_PREDICATE, main, memr, object_counts

# The bundled examples that name a context other than schema.org's (W3C verifiable credentials).
REMOTE = {"examples:#eg-0485#0", "examples:#eg-0486#0", "examples:#eg-0488#0"}


def cli(argv: list[str]) -> tuple[int, list[str], list[str]]:
    """The command line in this process: (exit status, stdout lines, stderr lines)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue().splitlines(), err.getvalue().splitlines()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> list[tuple[str, str, str]]:
    """(source, JSON text, file) for every JSON block of the schema.org examples and extruct samples."""
    folder = tmp_path_factory.mktemp("markups")
    items = []
    for i, m in enumerate(real_markups()):
        if m.ok_json:
            path = folder / f"{i:04d}.jsonld"
            path.write_text(m.text, encoding="utf-8")
            items.append((m.source, m.text, str(path)))
    assert len(items) > 450
    return items


def test_cli_counts_equal_the_pipeline_reading_on_every_real_markup(corpus):
    rc, out, err = cli(["--counts", *(path for _, _, path in corpus)])
    lines = {d["file"]: d for d in map(json.loads, out)}
    refused = set()
    for source, text, path in corpus:
        try:
            expected = object_counts(parse_markup(text))  # what the evaluation counts
        except MarkupError as exc:
            refused.add(source)
            assert path not in lines and f"python -m udfs.scores.memr: error: {path}: {exc.reason}" in err, source
            continue
        got = lines[path]
        assert got["triples"] == sum(expected.values()) > 0, source
        assert Counter(got["counts"]) == expected, source
    assert refused == REMOTE
    assert len(err) == len(REMOTE) and all("remote @context not fetched" in e for e in err)
    assert rc == 2  # some files were refused
    assert len(lines) == len(corpus) - len(REMOTE)


def test_cli_scores_equal_the_pipeline_scores_on_real_markup_pairs(corpus):
    """Each readable markup against the next one: the command line's h and l and totals are the
    evaluation's memr of the two parsed markups (memr_raw_*)."""
    readable = [(s, t, p) for s, t, p in corpus if s not in REMOTE]
    pairs = list(zip(readable, readable[1:]))
    assert len(pairs) > 450
    differing = 0
    for (sh, th, ph), (sl, tl, pl) in pairs:
        rc, out, err = cli([ph, pl, "--details"])
        assert rc == 0 and len(out) == 1, (sh, sl, err)
        got = json.loads(out[0])
        want = memr(parse_markup(th), parse_markup(tl))
        assert (got["h"], got["l"]) == (want.h, want.l), (sh, sl)
        assert (got["human_total"], got["model_total"], got["merged_total"]) == (
            want.human_total,
            want.model_total,
            want.merged_total,
        ), (sh, sl)
        differing += got["h"] != got["l"]
    assert differing > len(pairs) / 2  # real pairs, not copies


def test_health_lifesci_context_is_schema_org_for_the_cli_and_the_pipeline(tmp_path):
    """eg-0229 (a HealthInsurancePlan) names the hosted extension's URL as its context: read with
    the bundled schema.org context by MeMR, by the pipeline's reader and by the quads extraction."""
    [text] = [m.text for m in real_markups() if m.source == "examples:#eg-0229#0"]
    assert json.loads(text)["@context"] == "http://health-lifesci.schema.org/"
    markup = parse_markup(text)
    root = markup.entities[markup.roots[0]]
    assert root.types == ["HealthInsurancePlan"] and "healthPlanId" in root.properties
    path = tmp_path / "eg-0229.jsonld"
    path.write_text(text, encoding="utf-8")
    rc, out, err = cli(["--counts", str(path)])
    assert rc == 0 and err == []
    got = json.loads(out[0])
    assert Counter(got["counts"]) == object_counts(markup) and got["counts"]["healthPlanId"] == 1
    assert got["counts"][TYPE_PREDICATE] >= 3 and "notes" not in got
    quads = jsonld_to_quads(json.loads(text), "https://example.org/plan")
    assert any("<http://schema.org/healthPlanId>" in q for q in quads)


def test_a_bad_file_is_one_error_line_and_the_others_are_still_counted(tmp_path):
    [good] = [m.text for m in real_markups() if m.source == "examples:#eg-0013#0"]
    files = {
        "good1.jsonld": good,
        "truncated.jsonld": good[: len(good) // 2],
        "remote.jsonld": json.dumps({"@context": "https://example.org/ctx.jsonld", "@type": "Recipe"}),
        "string.jsonld": '"Recipe"',
        "latin1.jsonld": None,  # not UTF-8
        "good2.jsonld": good,
    }
    for name, text in files.items():
        if text is None:
            (tmp_path / name).write_bytes('{"name": "Crème brûlée"}'.encode("latin-1"))
        else:
            (tmp_path / name).write_text(text, encoding="utf-8")
    paths = [str(tmp_path / n) for n in files] + [str(tmp_path / "missing.jsonld")]
    run = subprocess.run(
        [sys.executable, "-m", "udfs.scores.memr", "--counts", *paths], cwd=ROOT, capture_output=True, text=True
    )
    assert run.returncode == 2
    assert "Traceback" not in run.stderr
    err = run.stderr.splitlines()
    bad = ["truncated", "remote", "string", "latin1", "missing"]
    assert len(err) == len(bad)
    for name, line in zip(bad, err):
        assert line.startswith(f"python -m udfs.scores.memr: error: {tmp_path / name}.jsonld: "), line
    assert "not JSON" in err[0] and "not fetched: https://example.org/ctx.jsonld" in err[1]
    assert "top level must be a JSON object or array" in err[2]
    assert "cannot read" in err[3] and "cannot read" in err[4]
    out = [json.loads(line) for line in run.stdout.splitlines()]
    assert [Path(d["file"]).name for d in out] == ["good1.jsonld", "good2.jsonld"]
    assert out[0]["triples"] == out[1]["triples"] == sum(object_counts(parse_markup(good)).values())
    # The two-markup form: both files are read and reported before the command gives up.
    rc, stdout, stderr = cli([paths[1], paths[2]])
    assert rc == 2 and stdout == [] and len(stderr) == 2
    rc, stdout, stderr = cli([paths[0], paths[5]])
    assert rc == 0 and json.loads(stdout[0]) == {"h": 1.0, "l": 1.0}
