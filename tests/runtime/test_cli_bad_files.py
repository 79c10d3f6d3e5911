"""Commands that keep going (issue 22): one bad file among several is one error line
(``<prog>: error: FILE: reason``), the other files are still read, the exit status is non-zero at
the end, and no input makes a traceback. The bad files are what an adversary hands over: not JSON,
not UTF-8, missing, a folder, a remote @context, a lone surrogate escaped in a string or a key.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BOOK = {"@context": "https://schema.org", "@type": "Book", "name": "The Fenced Book", "numberOfPages": 12}

BAD = {  # file name -> what its error line says
    "not_json.jsonld": "not JSON: Expecting value",
    "not_utf8.jsonld": "'utf-8' codec can't decode byte 0xff",
    "missing.jsonld": "No such file or directory",
    "folder.jsonld": "Is a directory",
    "remote.jsonld": "remote @context not fetched: https://evil.example/ctx",
}


def _files(tmp_path: Path) -> dict[str, Path]:
    f = {name: tmp_path / name for name in ("good.jsonld", "surrogate.jsonld", *BAD)}
    f["good.jsonld"].write_text(json.dumps(BOOK))
    # JSON may escape a lone surrogate; UTF-8 cannot encode it: written back as the escape
    f["surrogate.jsonld"].write_text('{"@type": "Book", "na\\udc00me": "x\\ud800"}')
    f["not_json.jsonld"].write_text("<html>not json</html>")
    f["not_utf8.jsonld"].write_bytes(b'\xff\xfe{"@type": "Book"}')
    f["folder.jsonld"].mkdir()
    f["remote.jsonld"].write_text('{"@context": "https://evil.example/ctx", "@type": "Thing"}')
    return f


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *argv], cwd=ROOT, capture_output=True, text=True, timeout=300)


def _check_errors(res: subprocess.CompletedProcess, prog: str, files: dict[str, Path]) -> None:
    assert "Traceback" not in res.stderr, res.stderr
    errors = [line for line in res.stderr.splitlines() if ": error: " in line]
    assert len(errors) == len(BAD), res.stderr
    for line, (name, reason) in zip(errors, BAD.items()):
        assert line.startswith(f"{prog}: error: {files[name]}: ") and reason in line, line


def test_validity_reports_each_bad_file_and_reads_the_others(tmp_path):
    files = _files(tmp_path)
    order = ["good.jsonld", *BAD, "surrogate.jsonld", "good.jsonld"]  # good files before, between and after
    res = _run("udfs.agents.validity", *(str(files[n]) for n in order))
    assert res.returncode == 1
    _check_errors(res, "python -m udfs.agents.validity", files)
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    by_file = {}
    for r in rows:
        by_file.setdefault(r["file"], []).append(r)
    # both readings of the good file, each with its two triples (name, numberOfPages)
    assert [r["property"] for r in by_file[str(files["good.jsonld"])]] == ["name", "numberOfPages"] * 2
    # the bad ones: one error row each, in the order given
    assert [r["file"] for r in rows if "error" in r] == [str(files[n]) for n in BAD]
    # the surrogate survives the round trip as the same escape
    surrogate = by_file[str(files["surrogate.jsonld"])]
    assert [(r["property"], r["value"], r["valid"]) for r in surrogate] == [("na\udc00me", "x\ud800", False)]


def test_memr_counts_report_each_bad_file_and_read_the_others(tmp_path):
    files = _files(tmp_path)
    order = ["good.jsonld", *BAD, "surrogate.jsonld"]
    res = _run("udfs.scores.memr", "--counts", *(str(files[n]) for n in order))
    assert res.returncode == 2
    _check_errors(res, "python -m udfs.scores.memr", files)
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert [r["file"] for r in rows] == [str(files["good.jsonld"]), str(files["surrogate.jsonld"])]
    assert rows[0]["counts"] == {"name": 1, "numberOfPages": 1, "rdf:type": 1}
    assert rows[1]["counts"] == {"na\udc00me": 1, "rdf:type": 1}


@pytest.mark.parametrize(
    "content, reason",
    [
        (b"garbage <<< .\n", "not an N-Triples line"),
        (b'\xff\xfe<http://a> <http://b> "c" .\n', "is not UTF-8"),
        (b"", "defines no type"),
    ],
)
def test_shapes_generate_on_a_bad_vocabulary_is_one_line(tmp_path, content, reason):
    vocab = tmp_path / "vocab.nt"
    vocab.write_bytes(content)
    res = _run("shapes.generate", "--vocab", str(vocab), "--output", str(tmp_path / "out.ttl"))
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    errors = [line for line in res.stderr.splitlines() if ": error: " in line]
    assert len(errors) == 1 and errors[0].startswith("python -m shapes.generate: error: ") and reason in errors[0]
    assert not (tmp_path / "out.ttl").exists()
