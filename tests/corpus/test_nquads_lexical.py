"""N-Quads as extractors write them (issue 65, part 2): a byte order mark, UCHAR surrogate pairs,
escapes that are no Unicode scalar value, CRLF, and a byte order mark inside a file (two files with
one each, concatenated: plain, and as two gzip members).

One file of these cases goes through both paths: the C-sets job (its JVM scanner) and a Python
reading by the project's one line reader (``udfs.runtime.lines``: its ``Lines``, ``decode`` and
``unescape_uchars``) with the grammar regex of tests/corpus/test_csets.py. Their C-sets (types,
properties, instances, pages), rejects (line, reason) and byte order marks must be equal, and equal
to what the cases call for.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.conftest import ROOT
from tests.corpus.test_csets import QUAD_RE
from udfs.runtime import lines as L

RDF_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
PERSON = "<http://schema.org/Person>"
NAME = "<http://schema.org/name>"
DESC = "<http://schema.org/description>"
SCHEMA = re.compile(r"^<https?://(?:www\.)?schema\.org/([^>]+)>$")
BOM = "\ufeff"
DOCS = ROOT / "docs" / "results" / "conformance.md"
SECTION = "## N-Quads as extractors write them"

# U+1F600 in a page IRI, written three ways: one page.
PAGE_PAIR = "<http://p.example/\\uD83D\\uDE00>"  # as Java-based extractors write it
PAGE_BIG_U = "<http://p.example/\\U0001F600>"
PAGE_RAW = "<http://p.example/\U0001f600>"

SURROGATE = "escape {} is not a Unicode scalar value (a surrogate, not half of a \\u pair)"
ABOVE = "escape {} is not a Unicode scalar value (above U+10FFFF)"

# (case, line, line end, the reject reason or None: read)
CASES = [
    ("byte order mark as the file's first bytes, CRLF", f"{BOM}_:b0 {RDF_TYPE} {PERSON} {PAGE_PAIR} .", "\r\n", None),
    ("surrogate pair `\\uD83D\\uDE00` in the page IRI, CRLF", f'_:b0 {NAME} "Ada" {PAGE_PAIR} .', "\r\n", None),
    ("`\\U0001F600` in the page IRI", f"_:b1 {RDF_TYPE} {PERSON} {PAGE_BIG_U} .", "\n", None),
    ("`\\U0001F600` in the page IRI", f'_:b1 {NAME} "Bea" {PAGE_BIG_U} .', "\n", None),
    ("raw U+1F600 in the page IRI", f"_:b2 {RDF_TYPE} {PERSON} {PAGE_RAW} .", "\n", None),
    ("surrogate pair in a literal", f'_:b2 {NAME} "Cy \\uD83D\\uDE00" {PAGE_RAW} .', "\n", None),
    ("escaped backslash, then the text `uD800`", f'_:b3 {DESC} "a\\\\uD800 is text" {PAGE_RAW} .', "\n", None),
    ("lone high surrogate `\\uD800`", f'_:b4 {NAME} "lone \\uD800" {PAGE_RAW} .', "\n", SURROGATE.format("\\uD800")),
    (
        "high surrogate, then no low one",
        f'_:b4 {NAME} "x" <http://p.example/\\uD83D\\u0041> .',
        "\n",
        SURROGATE.format("\\uD83D"),
    ),
    ("lone low surrogate", f'_:b4 {NAME} "low \\uDE00 alone" {PAGE_RAW} .', "\n", SURROGATE.format("\\uDE00")),
    ("surrogate as `\\U0000D800`", f'_:b4 {NAME} "\\U0000D800" {PAGE_RAW} .', "\n", SURROGATE.format("\\U0000D800")),
    ("above U+10FFFF", f'_:b4 {NAME} "\\U00110000" {PAGE_RAW} .', "\n", ABOVE.format("\\U00110000")),
    (
        "U+FEFF starting a later line (files concatenated)",
        f"{BOM}_:b5 {RDF_TYPE} {PERSON} <http://q.example/> .",
        "\n",
        L.REASON_BOM_INSIDE,
    ),
    ("after it", f'_:b5 {NAME} "Di" <http://q.example/> .', "\n", None),
]
# What the cases call for: one page for the three spellings of U+1F600, whose three people keep
# their type; b5 lost its type line (a reject that says why).
WANT_CSETS = {
    (("Person",), ("name",)): (3, 1),
    ((), ("description",)): (1, 1),
    ((), ("name",)): (1, 1),
}


def cases_bytes() -> bytes:
    return "".join(line + end for _, line, end, _ in CASES).encode("utf-8")


def _blank(raw: bytes) -> bool:
    s = raw.lstrip(b" \t\r")
    return not s or s.startswith(b"#")


def _local(term: str) -> str:
    m = SCHEMA.match(term)
    return m.group(1) if m else term


def python_path(path: Path) -> tuple[dict, list[tuple[int, str]], int]:
    """(C-sets {(types, properties): (instances, pages)}, rejects [(line, reason)], byte order
    marks) of an N-Quads file, read by ``udfs.runtime.lines`` in Python."""
    opener = gzip.open if path.suffix == ".gz" else open
    tokens: dict[tuple, set] = defaultdict(set)
    pages: dict[tuple, set] = defaultdict(set)
    rejects = []
    with opener(path, "rb") as fh:
        lines = L.Lines(fh)
        for n, raw in lines:
            if _blank(raw):
                continue
            try:
                text = L.decode(raw)
                m = QUAD_RE.match(text)
                assert m, f"line {n} outside the grammar: {text!r}"
                s, p, o, g, _ = (L.unescape_uchars(t) if t else t for t in m.groups())
            except L.LineError as exc:
                rejects.append((n, exc.reason))
                continue
            ent = (g, s) if s.startswith("_:") else (None, s)
            tokens[ent].add("isa:" + _local(o) if p == RDF_TYPE else _local(p))
            pages[ent].add(g)
    csets: dict[tuple, list] = {}
    for ent, toks in tokens.items():
        key = (
            tuple(sorted(t[4:] for t in toks if t.startswith("isa:"))),
            tuple(sorted(t for t in toks if not t.startswith("isa:"))),
        )
        c = csets.setdefault(key, [0, set()])
        c[0] += 1
        c[1] |= pages[ent]
    return {k: (n, len(p)) for k, (n, p) in csets.items()}, rejects, lines.byte_order_marks


def jvm_path(path: Path, out: Path) -> tuple[dict, list[tuple[int, str]], dict]:
    """The same by the C-sets job (its JVM scanner): C-sets, line rejects, the run record."""
    from jobs.csets import CsetsJob

    assert CsetsJob(["--input", str(path), "--output", str(out)]).main() == 0
    record = json.loads((out / "csets" / "_run.json").read_text())
    csets = {
        (tuple(r["types"]), tuple(r["properties"])): (r["n_instances"], r["n_pages"])
        for r in pq.read_table(out / "csets").to_pylist()
    }
    rejects = sorted(
        (r["position"], r["reason"]) for r in pq.read_table(out / "rejects" / "csets").to_pylist() if r["position"]
    )
    return csets, rejects, record


def table(py: tuple, jvm: tuple) -> str:
    """The results page's table: each case's line read or rejected (with the reason) by each path,
    then the C-sets and the byte order marks counted."""
    (py_csets, py_rejects, py_boms), (jvm_csets, jvm_rejects, jvm_boms) = py, jvm

    def verdict(rejects, n):
        why = dict(rejects).get(n)
        return "read" if why is None else f"reject: {why}"

    out = [
        "| line | case | Python (`udfs.runtime.lines`) | JVM scanner (`jobs/csets.py`) |",
        "|---:|---|---|---|",
    ]
    for n, (case, *_) in enumerate(CASES, 1):
        cells = (verdict(py_rejects, n), verdict(jvm_rejects, n))
        out.append(f"| {n} | {case} | " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    for key in sorted(WANT_CSETS):
        name = " ".join([*(f"isa:{t}" for t in key[0]), *key[1]])
        both = [f"{c[key][0]} instances, {c[key][1]} pages" if key in c else "none" for c in (py_csets, jvm_csets)]
        out.append(f"| - | C-set `{name}` | {both[0]} | {both[1]} |")
    out.append(f"| - | byte order marks counted | {py_boms} | {jvm_boms} |")
    return "\n".join(out)


def test_python_and_jvm_paths_agree_on_extractor_lines(spark, tmp_path, capsys):
    """Both paths read the cases' file alike, as the cases call for; the results page holds the
    table of this run (``-s`` prints it)."""
    path = tmp_path / "extractors.nq"
    path.write_bytes(cases_bytes())
    want_rejects = [(n, why) for n, (*_, why) in enumerate(CASES, 1) if why]

    py_csets, py_rejects, py_boms = python_path(path)
    jvm_csets, jvm_rejects, record = jvm_path(path, tmp_path / "out")

    assert (py_csets, py_rejects, py_boms) == (WANT_CSETS, want_rejects, 1)
    assert (jvm_csets, jvm_rejects) == (py_csets, py_rejects)
    c = record["counters"]
    assert (c["byte_order_marks"], c["lines_read"], c["lines_rejected"]) == (1, len(CASES), len(want_rejects))
    (read,) = record["inputs"]["read"]
    assert (read["byte_order_marks"], read["graphs"]) == (1, 2)  # the U+1F600 page once, and q.example
    assert "byte order marks skipped 1" in capsys.readouterr().out  # the job's summary says so
    got = table((py_csets, py_rejects, py_boms), (jvm_csets, jvm_rejects, c["byte_order_marks"]))
    with capsys.disabled():
        print("\n" + got)
    doc = DOCS.read_text(encoding="utf-8")
    assert got in doc[doc.index(SECTION) :].split("\n## ", 1)[0]


def test_two_gzip_members_with_a_byte_order_mark_each(spark, tmp_path):
    """``cat a.nq.gz b.nq.gz``, each written with a byte order mark: the first is skipped and
    counted, the second (line 1 of the second member) is a reject that says why, on both paths."""
    a = f'{BOM}_:b0 {RDF_TYPE} {PERSON} <http://a.example/> .\n_:b0 {NAME} "A" <http://a.example/> .\n'
    b = f'{BOM}_:b0 {RDF_TYPE} {PERSON} <http://b.example/> .\n_:b0 {NAME} "B" <http://b.example/> .\n'
    path = tmp_path / "cat.nq.gz"
    path.write_bytes(gzip.compress(a.encode(), mtime=0) + gzip.compress(b.encode(), mtime=0))

    py = python_path(path)
    jvm_csets, jvm_rejects, record = jvm_path(path, tmp_path / "out")

    assert py == ({(("Person",), ("name",)): (1, 1), ((), ("name",)): (1, 1)}, [(3, L.REASON_BOM_INSIDE)], 1)
    assert (jvm_csets, jvm_rejects, record["counters"]["byte_order_marks"]) == py


@pytest.mark.parametrize("end", ["\n", "\r\n"])
def test_a_file_without_a_byte_order_mark_counts_none(spark, tmp_path, capsys, end):
    """CRLF and LF files read alike, and a file without a byte order mark counts none."""
    path = tmp_path / "plain.nq"
    path.write_text(f'_:b0 {RDF_TYPE} {PERSON} {PAGE_BIG_U} .{end}_:b0 {NAME} "A" {PAGE_RAW} .{end}', newline="")
    py = python_path(path)
    jvm_csets, jvm_rejects, record = jvm_path(path, tmp_path / "out")
    assert py == ({(("Person",), ("name",)): (1, 1)}, [], 0)
    assert (jvm_csets, jvm_rejects, record["counters"]["byte_order_marks"]) == py
    assert "byte order marks" not in capsys.readouterr().out
