"""The W3C RDF 1.1 N-Quads syntax tests against the C-sets job's scanner (issue 59).

The suite (``../shared/data/conformance/w3c-rdf-tests/rdf/rdf11/rdf-n-quads/``, ``manifest.ttl``)
has positive syntax tests (a file that parses) and negative ones (a file with a syntax error).
Every file goes through ``jobs/csets.py`` itself, all of them in one run per setting (the default,
which reads WebDataCommons' fifth term, and ``--strict-nquads``), listed in one manifest:

* a positive test passes when none of its lines is a reject, the run record's counts for its file
  (quads with a graph term, triples of the default graph, skipped lines, distinct graphs) are
  rdflib's, and every line's terms, as the job's parser splits them
  (``EntityPageScan.terms``, the same ``Quad.parse``) and decoded here, are the quad rdflib's
  N-Quads parser reads from that line;
* a negative test passes when at least one of its lines is a reject row with a reason.

One test conflicts with the one documented extension: ``nq-syntax-bad-quint-01`` is a line with a
fifth term, which WDC writes (the extractor) and the default setting reads. There it is not
applicable (the test checks that the line is read and its fifth term counted); under
``strict_nquads = true`` it is a negative test like the others.

``-s`` prints the results table; the table of docs/results/conformance.md must hold the same
figures. Skipped where ``../shared`` is absent (a user's clone).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import rdflib
from conftest import ROOT

SUITE = ROOT.parent / "shared" / "data" / "conformance" / "w3c-rdf-tests" / "rdf" / "rdf11" / "rdf-n-quads"
MANIFEST = SUITE / "manifest.ttl"
DOCS = ROOT / "docs" / "results" / "conformance.md"
SECTION = "## W3C RDF 1.1 N-Quads syntax tests"

pytestmark = pytest.mark.skipif(
    not MANIFEST.is_file(), reason=f"the W3C N-Quads suite is not at {SUITE} (../shared is absent)"
)

# The settings the suite runs under: the job's flags.
SETTINGS = {"wdc": [], "strict": ["--strict-nquads"]}
# Negative tests that the default setting's documented extension makes valid, and why.
WDC_EXTENSION = {
    "nq-syntax-bad-quint-01": "a fifth term, where WebDataCommons writes the extractor (`<ex:html-microdata>`): "
    "the one documented extension, read by default and counted in `fifth_term`; `strict_nquads = true` rejects it",
}

MF = rdflib.Namespace("http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#")
RDFT = rdflib.Namespace("http://www.w3.org/ns/rdftest#")


@dataclass(frozen=True)
class W3cTest:
    name: str
    positive: bool
    file: Path


def load_manifest() -> list[W3cTest]:
    """The suite's tests in the manifest's order (its ``mf:entries`` list)."""
    from rdflib.collection import Collection

    g = rdflib.Graph().parse(MANIFEST, format="turtle", publicID=SUITE.as_uri() + "/manifest.ttl")
    root = next(g.subjects(rdflib.RDF.type, MF.Manifest))
    tests = []
    for entry in Collection(g, g.value(root, MF.entries)):
        kind = g.value(entry, rdflib.RDF.type)
        if kind not in (RDFT.TestNQuadsPositiveSyntax, RDFT.TestNQuadsNegativeSyntax):
            raise AssertionError(f"{entry}: a test of type {kind}, not an N-Quads syntax test")
        action = Path(str(g.value(entry, MF.action)).removeprefix("file://"))
        tests.append(W3cTest(str(g.value(entry, MF.name)), kind == RDFT.TestNQuadsPositiveSyntax, SUITE / action.name))
    return tests


TESTS = load_manifest() if MANIFEST.is_file() else []
POSITIVE = [t for t in TESTS if t.positive]
NEGATIVE = [t for t in TESTS if not t.positive]


# ---- the reference: rdflib's N-Quads parser, one line at a time ----------------------------------
class _Sink:
    """Stands in for rdflib's Dataset: keeps the statement a line gives, with its graph (None: the
    default graph)."""

    def __init__(self):
        self.got: list[tuple] = []
        self.default_context = self

    def get_context(self, graph):
        sink = self

        class _Graph:
            def add(self, triple):
                sink.got.append((*triple, graph))

        return _Graph()

    def add(self, triple):
        self.got.append((*triple, None))


def file_lines(path: Path) -> list[str]:
    """A file's lines as the job cuts them: at LF, a last line without one included."""
    lines = path.read_bytes().decode("utf-8").split("\n")
    return lines[:-1] if lines[-1] == "" else lines


@dataclass
class Reference:
    """rdflib's reading of a file: per line None (blank or comment) or the quad (s, p, o, g) it
    gives; and the file's blank-node labels to the BNodes rdflib made of them."""

    quads: list[tuple | None] = field(default_factory=list)
    bnodes: dict = field(default_factory=dict)


def read_reference(path: Path) -> Reference:
    from rdflib.plugins.parsers.nquads import NQuadsParser

    parser = NQuadsParser()
    parser.skolemize = False
    parser.sink = sink = _Sink()
    ref = Reference()
    for line in file_lines(path):
        sink.got.clear()
        parser.line = line.rstrip("\r")
        parser.parseline(ref.bnodes)  # one blank-node context per file: labels are scoped to it
        assert len(sink.got) <= 1
        ref.quads.append(sink.got[0] if sink.got else None)
    return ref


# ---- the job's terms, decoded here --------------------------------------------------------------
_UCHAR = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")
_ECHAR = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}
_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))")
_LITERAL = re.compile(r'^"(.*)"(?:@([A-Za-z]+(?:-[A-Za-z0-9]+)*)|\^\^<(.*)>)?$', re.S)


def _iri(text: str) -> str:
    return _UCHAR.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), text)


def _string(text: str) -> str:
    return _ESCAPE.sub(
        lambda m: chr(int(m.group(1) or m.group(2), 16)) if m.group(3) is None else _ECHAR[m.group(3)], text
    )


def decode(term: str, bnodes: dict):
    """A term as the job's parser delimits it, as an rdflib term; a blank node by the BNode rdflib
    made of the same label in that file (None: rdflib saw no such label)."""
    if term.startswith("<"):
        return rdflib.URIRef(_iri(term[1:-1]))
    if term.startswith("_:"):
        return bnodes.get(term[2:])
    m = _LITERAL.match(term)
    assert m, term
    datatype = rdflib.URIRef(_iri(m.group(3))) if m.group(3) is not None else None
    return rdflib.Literal(_string(m.group(1)), lang=m.group(2), datatype=datatype)


# ---- one job run per setting over the whole suite -----------------------------------------------
@dataclass
class Run:
    record: dict
    read: dict[str, dict]  # file name -> its inputs.read entry
    rejects: dict[str, list[dict]]  # file name -> its reject rows


@pytest.fixture(scope="module")
def runs(spark, tmp_path_factory) -> dict[str, Run]:
    from jobs.csets import CsetsJob

    root = tmp_path_factory.mktemp("nquads")
    files = sorted({t.file for t in TESTS})
    listing = root / "suite.txt"
    listing.write_text("".join(f"{f}\n" for f in files))
    out = {}
    for setting, flags in SETTINGS.items():
        dest = root / setting
        assert CsetsJob(["--input", str(listing), "--output", str(dest), "--no-clean", *flags]).main() == 0
        record = json.loads((dest / "csets" / "_run.json").read_text())
        rejects: dict[str, list[dict]] = {}
        for r in pq.read_table(dest / "rejects" / "csets").to_pylist():
            rejects.setdefault(Path(r["source"]).name, []).append(r)
        read = {Path(r["source"]).name: r for r in record["inputs"]["read"]}
        assert set(read) == {f.name for f in files}
        out[setting] = Run(record, read, rejects)
    return out


@pytest.fixture(scope="module")
def parsed_terms(spark) -> dict[str, list[list[str] | None]]:
    """Every positive file's lines split by the job's parser (one py4j call for the suite)."""
    from udfs.corpus import scanner as jvm

    lines = {t.file.name: file_lines(t.file) for t in POSITIVE}
    joined = "\n".join(line for ls in lines.values() for line in ls)
    got = iter(jvm.attach(spark).terms(joined).split("\n")[:-1])
    return {name: [next(got).split("\x01") for _ in ls] for name, ls in lines.items()}


# ---- verdicts ------------------------------------------------------------------------------------
def positive_failure(test: W3cTest, run: Run, terms: list) -> str | None:
    """Why a positive test fails in a run (None: it passes)."""
    name = test.file.name
    line_rejects = [r for r in run.rejects.get(name, []) if r["position"] is not None]
    if line_rejects:
        return "; ".join(f"line {r['position']} rejected: {r['reason']}" for r in line_rejects)
    ref = read_reference(test.file)
    quads = [q for q in ref.quads if q is not None]
    graphs = {q[3] for q in quads if q[3] is not None}
    want = {
        "quads": sum(q[3] is not None for q in quads),
        "default_graph": sum(q[3] is None for q in quads),
        "skipped": ref.quads.count(None),
        "rejected": 0,
        "graphs": len(graphs),
    }
    got = {k: run.read[name].get(k) for k in want}
    if got != want:
        return f"run record {got}, rdflib {want}"
    for n, (quad, split) in enumerate(zip(ref.quads, terms, strict=True), 1):
        if quad is None:
            if split != [""]:
                return f"line {n}: rdflib reads no statement, the parser {split}"
            continue
        if split == [""]:
            return f"line {n}: the parser takes no quad, rdflib {quad}"
        s, p, o, g, fifth = split
        mine = tuple(decode(t, ref.bnodes) if t else None for t in (s, p, o, g))
        if mine != quad or fifth:
            return f"line {n}: the parser's terms {split}, rdflib {quad}"
    return None


def negative_failure(test: W3cTest, run: Run) -> str | None:
    """Why a negative test fails in a run (None: it passes): no line of it is a reject with a reason."""
    rows = [r for r in run.rejects.get(test.file.name, []) if r["position"] is not None and r["reason"]]
    return None if rows else f"no line rejected (run record {run.read[test.file.name]})"


def extension_failure(test: W3cTest, run: Run) -> str | None:
    """The default setting's reading of a test its extension makes valid: read, one quad, its fifth
    term counted (None: as documented)."""
    entry = run.read[test.file.name]
    if (entry["quads"], entry["rejected"]) != (1, 0):
        return f"not read as one quad: {entry}"
    if run.record["counters"]["fifth_term"] != {"<http://example/n>": 1}:
        return f"fifth_term {run.record['counters']['fifth_term']}"
    return None


# ---- the tests, one per W3C test and setting -----------------------------------------------------
def _ids(tests):
    return [pytest.param(s, t, id=f"{s}-{t.name}") for s in SETTINGS for t in tests]


@pytest.mark.parametrize(("setting", "test"), _ids(POSITIVE))
def test_positive_syntax(runs, parsed_terms, setting, test):
    assert positive_failure(test, runs[setting], parsed_terms[test.file.name]) is None


@pytest.mark.parametrize(("setting", "test"), _ids(NEGATIVE))
def test_negative_syntax(runs, setting, test):
    if setting == "wdc" and test.name in WDC_EXTENSION:
        assert extension_failure(test, runs[setting]) is None
    else:
        assert negative_failure(test, runs[setting]) is None


def test_the_manifest_is_the_suite_the_page_describes():
    """53 positive and 34 negative tests, each with its own file there."""
    assert (len(POSITIVE), len(NEGATIVE)) == (53, 34)
    assert all(t.file.is_file() for t in TESTS)
    assert len({t.file for t in TESTS}) == len(TESTS)


# ---- the results table --------------------------------------------------------------------------
ROWS = (
    ("positive syntax", "default (WDC's fifth term read)", "wdc", True),
    ("negative syntax", "default (WDC's fifth term read)", "wdc", False),
    ("positive syntax", "`strict_nquads = true`", "strict", True),
    ("negative syntax", "`strict_nquads = true`", "strict", False),
)


def results(runs, parsed_terms) -> list[tuple[str, str, int, int, int, int, str]]:
    """(tests, setting, total, passed, failed, not applicable, notes) per row. The notes name the
    failed tests, each not-applicable group with its reason, the reasons the negative tests' lines
    were rejected with, and the files the job names as giving no line."""
    out = []
    for what, setting_text, setting, positive in ROWS:
        run, tests = runs[setting], POSITIVE if positive else NEGATIVE
        passed, failed, na = [], [], []
        for t in tests:
            if not positive and setting == "wdc" and t.name in WDC_EXTENSION:
                (na if extension_failure(t, run) is None else failed).append(t.name)
                continue
            why = positive_failure(t, run, parsed_terms[t.file.name]) if positive else negative_failure(t, run)
            (passed if why is None else failed).append(t.name)
        notes = [f"failed: {', '.join(failed)}"] if failed else []
        notes += [f"not applicable: `{n}`, {WDC_EXTENSION[n]}" for n in na]
        rows = [r for t in tests for r in run.rejects.get(t.file.name, [])]
        reasons: dict[str, int] = {}
        for r in rows:
            if r["position"] is not None:
                reasons[r["reason"]] = reasons.get(r["reason"], 0) + 1
        if reasons:
            by_count = sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))
            notes.append("lines rejected: " + ", ".join(f"{n} {reason}" for reason, n in by_count))
        notes += [
            f"`{Path(r['source']).stem}` passes (no line rejected) and is named in rejects/ as {r['reason']!r}"
            for r in rows
            if r["position"] is None
        ]
        out.append((what, setting_text, len(tests), len(passed), len(failed), len(na), "; ".join(notes)))
    return out


def table(rows) -> str:
    head = "| tests | setting | total | passed | failed | not applicable | failures, not-applicable groups |"
    lines = [head, "|---|---|---:|---:|---:|---:|---|"]
    for what, setting, total, passed, failed, na, notes in rows:
        lines.append(f"| {what} | {setting} | {total} | {passed} | {failed} | {na} | {notes or '-'} |")
    return "\n".join(lines)


def documented_rows() -> tuple[list[tuple], tuple | None]:
    """The page's N-Quads section: (tests, setting, total, passed, failed, not applicable) per row of
    its results table, and (quads, default-graph triples, skipped, rejected) of its lines table."""
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index(SECTION) :].split("\n## ", 1)[0]
    rows, lines = [], None
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 6 and cells[0].endswith("syntax") and cells[2].isdigit():
            rows.append((cells[0], cells[1], *map(int, cells[2:6])))
        elif len(cells) >= 5 and cells[0].endswith(" files") and all(c.isdigit() for c in cells[1:5]):
            lines = tuple(map(int, cells[1:5]))
    return rows, lines


def test_results_table_is_the_documented_one(runs, parsed_terms):
    """The tables of the results page (docs/results/conformance.md) hold this run's figures."""
    rows = results(runs, parsed_terms)
    print("\n" + table(rows))
    lines = tuple(
        sum(runs["wdc"].read[t.file.name][k] for t in POSITIVE)
        for k in ("quads", "default_graph", "skipped", "rejected")
    )
    print(
        "\n| lines of the positive tests (default setting) | quads (with a graph term) | default-graph triples "
        "| comment and blank lines skipped | rejected |"
    )
    print(f"| {len(POSITIVE)} files | " + " | ".join(map(str, lines)) + " |")
    documented, documented_lines = documented_rows()
    assert documented == [r[:6] for r in rows]
    assert documented_lines == lines
