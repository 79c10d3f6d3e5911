"""Differential fuzzing of the C-sets job (jobs/csets.py) against rdflib's N-Quads parser.

Each round cuts slices of a real WDC file (``../shared/data/wdc``, else the bundled ``data/wdc``),
mutates them by class (``CLASSES``), writes them into one folder and runs the job once over it, in
process (``CsetsJob(argv).main()``, as the tests do), with ``--ignore-corrupt-files`` and
``--strict-nquads`` (the reference reads W3C N-Quads, which has no fifth term). Every file's entry
of the run record's ``inputs.read`` (lines, quads, default-graph triples, rejected, skipped,
graphs) and its reject rows are then compared with an independent reading of the same bytes:

* framing: the file's bytes (gzip members decompressed one by one with zlib; a member that does
  not decompress to its end makes the file *damaged*) cut at LF, as the job's lines are; a CR
  before the LF is part of the line ending;
* each line: decoded as strict UTF-8 (a line that is not is a reject), then given to rdflib's
  N-Quads line parser (``NQuadsParser.parseline``, one blank-node context per file), which says
  quad (with its graph term; none: a triple of the default graph), skip (blank or comment) or
  reject. A CR inside a line ends a line for the W3C grammar (EOL is CR or LF): the pieces are
  parsed one by one, and the line is a quad only when exactly one piece is a quad and the others
  are blank.

Per file, a difference is *explained* when the job wrote a reject row naming the file and the
cause: a line the reference reads as a quad (or a blank) that the job rejects with a reason at
that line number, or a damaged file the job names with a damage row. Anything else is a
*discrepancy*: a line the reference rejects that the job took as a quad or a blank, a line count,
quad, default-graph, skipped or distinct-graph count that differs, a damaged file the job read
silently, or a file missing from the run record. The job is stricter than rdflib on purpose in
places (an IRI needs a scheme; a blank-node label holds W3C's characters only; a line ends at LF
only): those lines are rejects with a reason, so explained.

Per round, the labels class also checks the run as a whole: the job's ``pages`` and
``entities_before_cleaning`` counters equal the reference's distinct graphs (a blank graph label
scoped to its file) and subjects (a blank subject scoped to its page and file, an IRI one entity
everywhere) over the lines both accept.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import logging
import random
import re
import time
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from testkit.fuzz import Tally
from udfs.runtime.paths import PROJECT_ROOT

JOB = "csets"
CLASSES = {
    "bytes": "bit flips, a cut inside a line, invalid UTF-8 sequences inserted (plain and gzip files)",
    "framing": "gzip members cut, damaged or joined mid-line; CRLF; a lone CR for an LF; no final newline; "
    "zero padding after the last member",
    "names": "file names with ':', spaces, '%', '#', '?', non-ASCII, tabs, newlines, leading '-', 250 bytes",
    "labels": "blank graph and subject labels shared across the files of a round, renamed (dots, dashes, "
    "':', digits first)",
}
WDC_FILE = "wdc-2022-12-jsonld-part00044-first10k.nq"
# files of each class per round: one job start per round, so a round is cheap in files
FILES_PER_CLASS = 6
SLICE_LINES = (40, 400)


def source_file() -> Path:
    """The real file the mutations start from: ``../shared/data/wdc`` where present, else the bundled copy."""
    shared = PROJECT_ROOT.parent / "shared" / "data" / "wdc" / WDC_FILE
    return shared if shared.is_file() else PROJECT_ROOT / "data" / "wdc" / WDC_FILE


def reference_name() -> str:
    import rdflib

    return f"rdflib {rdflib.__version__} N-Quads line parser"


# ---- the reference reader ------------------------------------------------------------------------


@dataclass
class Reading:
    """The reference's reading of one file: per LF line its verdict ("quad", "skip", "reject") and,
    for a quad, its graph and subject (rdflib terms, n3 form); whether a gzip member is damaged."""

    verdicts: list[str] = field(default_factory=list)
    graphs: list[str | None] = field(default_factory=list)
    subjects: list[str | None] = field(default_factory=list)
    damaged: str | None = None


def _decompress(data: bytes) -> tuple[bytes, str | None]:
    """The bytes of every gzip member in turn, and why the reading stopped early (None: it did not).
    Zero padding after the last member ends the file, as the job reads it."""
    out, rest = [], data
    while rest:
        if not rest.strip(b"\0"):
            break
        d = zlib.decompressobj(wbits=31)
        try:
            member = d.decompress(rest)
        except zlib.error as e:
            # again a byte at a time: all that the member gave before the damage is kept
            d, kept = zlib.decompressobj(wbits=31), []
            for at in range(len(rest)):
                try:
                    kept.append(d.decompress(rest[at : at + 1]))
                except zlib.error:
                    break
            return b"".join(out + kept), f"zlib: {e}"
        out.append(member)
        if not d.eof:
            return b"".join(out), "member cut before its end"
        rest = d.unused_data
    return b"".join(out), None


class _Sink:
    """Stands in for rdflib's Dataset: keeps the one statement a line gives, with its graph."""

    def __init__(self):
        self.got: list[tuple] = []
        self.default_context = self

    def get_context(self, graph):
        return _Context(self, graph)

    def add(self, triple):
        self.got.append((None, triple))


class _Context:
    def __init__(self, sink: _Sink, graph):
        self.sink, self.graph = sink, graph

    def add(self, triple):
        self.sink.got.append((self.graph, triple))


def _key(term) -> str | None:
    """A term as a string: ``<iri>`` or ``_:id`` (the file's blank-node context's id); None: the
    default graph."""
    from rdflib import BNode

    if term is None:
        return None
    return f"_:{term}" if isinstance(term, BNode) else f"<{term}>"


def read_reference(data: bytes, gz: bool) -> Reading:
    """The reference's reading of a file's bytes (see the module's docstring)."""
    from rdflib.exceptions import ParserError
    from rdflib.plugins.parsers.nquads import NQuadsParser

    r = Reading()
    if gz:
        data, r.damaged = _decompress(data)
    lines = data.split(b"\n")
    if lines and (lines[-1] == b"" or r.damaged):
        lines.pop()  # the file ends with LF: no line after it; or the rest of a line cut by damage
    parser = NQuadsParser()
    parser.skolemize = False
    sink = _Sink()
    parser.sink = sink
    bnodes: dict = {}  # one blank-node context per file: labels are scoped to their document
    for raw in lines:
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            r.verdicts.append("reject")
            r.graphs.append(None)
            r.subjects.append(None)
            continue
        pieces, quads, bad = text.split("\r"), [], False
        for piece in pieces:
            sink.got.clear()
            parser.line = piece
            try:
                parser.parseline(bnodes)
            except (ParserError, ValueError, UnicodeError):
                bad = True
                continue
            quads.extend(sink.got)
        if bad or len(quads) > 1:
            verdict = "reject"
        else:
            verdict = "quad" if quads else "skip"
        r.verdicts.append(verdict)
        g, triple = quads[0] if verdict == "quad" else (None, None)
        r.graphs.append(_key(g) if verdict == "quad" else None)
        r.subjects.append(_key(triple[0]) if verdict == "quad" else None)
    return r


# ---- mutations -----------------------------------------------------------------------------------


@dataclass
class Case:
    cls: str
    name: str  # relative to the round's folder
    data: bytes


def _slice(lines: list[bytes], rnd: random.Random) -> list[bytes]:
    n = rnd.randint(*SLICE_LINES)
    start = rnd.randrange(0, max(1, len(lines) - n))
    return lines[start : start + n]


def _gzip_members(body: bytes, rnd: random.Random, k: int) -> list[bytes]:
    """``body`` as ``k`` gzip members cut at random bytes (mid-line, mid-character)."""
    cuts = sorted(rnd.sample(range(1, len(body)), min(k - 1, len(body) - 1))) if len(body) > 1 else []
    parts = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)])]
    return [gzip.compress(p, mtime=0) for p in parts]


_BAD_UTF8 = [b"\xff", b"\xe9", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82"]


def _bytes_case(lines: list[bytes], rnd: random.Random, i: int) -> Case:
    body = bytearray(b"".join(_slice(lines, rnd)))
    how = rnd.choice(["flip", "flip", "cut", "utf8"])
    if how == "flip":
        for _ in range(rnd.randint(1, 8)):
            at = rnd.randrange(len(body))
            body[at] ^= 1 << rnd.randrange(8)
    elif how == "cut":
        body = body[: rnd.randrange(1, len(body))]
    else:
        for _ in range(rnd.randint(1, 4)):
            at = rnd.randrange(len(body))
            body[at:at] = rnd.choice(_BAD_UTF8)
    if rnd.random() < 0.3:
        return Case("bytes", f"bytes-{i}-{how}.nq.gz", gzip.compress(bytes(body), mtime=0))
    return Case("bytes", f"bytes-{i}-{how}.nq", bytes(body))


def _framing_case(lines: list[bytes], rnd: random.Random, i: int) -> Case:
    body = b"".join(_slice(lines, rnd))
    how = rnd.choice(["members", "member-cut", "member-damaged", "crlf", "lone-cr", "no-final-lf", "padding"])
    if how == "members":
        return Case("framing", f"framing-{i}-{how}.nq.gz", b"".join(_gzip_members(body, rnd, rnd.randint(2, 5))))
    if how == "member-cut":
        members = _gzip_members(body, rnd, rnd.randint(1, 4))
        k = rnd.randrange(len(members))
        members[k] = members[k][: rnd.randrange(1, len(members[k]))]
        return Case("framing", f"framing-{i}-{how}.nq.gz", b"".join(members[: k + 1]))
    if how == "member-damaged":
        members = [bytearray(m) for m in _gzip_members(body, rnd, rnd.randint(2, 4))]
        k = rnd.randrange(len(members))
        at = rnd.randrange(len(members[k]))
        members[k][at] ^= 1 << rnd.randrange(8)
        return Case("framing", f"framing-{i}-{how}.nq.gz", b"".join(bytes(m) for m in members))
    if how == "crlf":
        return Case("framing", f"framing-{i}-{how}.nq", body.replace(b"\n", b"\r\n"))
    if how == "lone-cr":
        ends = [j for j, c in enumerate(body) if c == 0x0A]
        b = bytearray(body)
        for j in rnd.sample(ends, min(len(ends), rnd.randint(1, 3))):
            b[j] = 0x0D
        return Case("framing", f"framing-{i}-{how}.nq", bytes(b))
    if how == "no-final-lf":
        return Case("framing", f"framing-{i}-{how}.nq", body.rstrip(b"\n"))
    return Case("framing", f"framing-{i}-{how}.nq.gz", gzip.compress(body, mtime=0) + b"\0" * rnd.randint(1, 600))


_NAME_CHARS = [":", " ", "%", "%20", "%2e", "#", "?", "é", "日本", "\t", "\n", "'", '"', "\\", "&", "*", "[a]", "{b}"]


def _names_case(lines: list[bytes], rnd: random.Random, i: int) -> Case:
    body = b"".join(_slice(lines, rnd))
    stem = "".join(rnd.choice(_NAME_CHARS) + rnd.choice("abc") for _ in range(rnd.randint(1, 4)))
    stem = rnd.choice(["", "-", "a:"]) + stem
    if rnd.random() < 0.1:
        stem = (stem + "x" * 250)[:200]  # a name near the 255-byte limit of a file system
    gz = rnd.random() < 0.4
    return Case("names", f"n{i}{stem}.nq" + (".gz" if gz else ""), gzip.compress(body, mtime=0) if gz else body)


_RDF_TYPE = b"<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
# subject, the rest, graph term, final dot of a WDC line
_QUAD_PARTS = re.compile(rb"^(\S+)( .* )(\S+)([ \t]+\.[ \t]*)$")
_LABELS = ["g1", "b0", "b.x", "b-x", "0b", "_b", "a:b", "b.", "x.y.z", "g-1"]


def _labels_case(lines: list[bytes], rnd: random.Random, i: int) -> Case:
    """The slice with its graph terms replaced by blank labels shared by every file of the round
    (``_:g1``...) and some blank subjects renamed to labels shared too."""
    out = []
    graph_map: dict[bytes, bytes] = {}
    subj_map: dict[bytes, bytes] = {}
    for line in _slice(lines, rnd):
        m = _QUAD_PARTS.match(line.rstrip(b"\n"))
        if m is None:
            out.append(line)
            continue
        s, middle, g, end = m.groups()
        if g not in graph_map:
            graph_map[g] = b"_:" + rnd.choice([b"g1", b"g2", b"b0"]) if rnd.random() < 0.8 else g
        if s.startswith(b"_:") and s not in subj_map:
            subj_map[s] = b"_:" + rnd.choice(_LABELS).encode() if rnd.random() < 0.5 else s
        out.append(subj_map.get(s, s) + middle + graph_map[g] + end + b"\n")
    body = b"".join(out)
    gz = rnd.random() < 0.3
    return Case("labels", f"labels-{i}.nq" + (".gz" if gz else ""), gzip.compress(body, mtime=0) if gz else body)


_MAKERS = {"bytes": _bytes_case, "framing": _framing_case, "names": _names_case, "labels": _labels_case}


# ---- comparison ----------------------------------------------------------------------------------


def _compare(case: Case, ref: Reading, read: dict | None, rejects: list[dict]) -> tuple[bool, str | None]:
    """(explained, discrepancy) of one file: see the module's docstring."""
    name = repr(case.name)
    damage = [r for r in rejects if r["position"] is None]
    if read is None:
        return False, f"{name}: not in the run record's inputs.read"
    verdicts = ref.verdicts
    if ref.damaged or damage:
        if not (ref.damaged and damage):
            if ref.damaged:
                return False, f"{name}: damaged ({ref.damaged}) but no reject row names it"
            return False, f"{name}: reject row {damage[0]['reason']!r} but the reference reads the file whole"
        # Both stop at the damage, each after what its decompressor gave: the lines both read are compared.
        n = min(read["lines"], len(verdicts))
        verdicts = verdicts[:n]
        rejected = {r["position"]: r["reason"] for r in rejects if r["position"] is not None}
        for i, v in enumerate(verdicts, 1):
            if v == "reject" and i not in rejected:
                return False, f"{name} line {i} (before the damage): the reference rejects it, the job took it"
        return True, None
    if read["lines"] != len(verdicts):
        return False, f"{name}: {read['lines']} lines, the reference {len(verdicts)}"
    rejected = {r["position"]: r["reason"] for r in rejects}
    explained = False
    quads = triples = skipped = 0
    graphs = set()
    for n, v in enumerate(ref.verdicts, 1):
        if n in rejected:
            explained = explained or v != "reject"
            continue
        if v == "reject":
            return False, f"{name} line {n}: the reference rejects it, the job took it"
        if v == "quad" and ref.graphs[n - 1] is None:
            triples += 1  # the default graph: no page, counted apart by the job
        elif v == "quad":
            quads += 1
            graphs.add(ref.graphs[n - 1])
        else:
            skipped += 1
    got = (read["quads"], read["default_graph"], read["rejected"], read["skipped"], read["graphs"])
    want = (quads, triples, len(rejected), skipped, len(graphs))
    if got != want:
        return False, f"{name}: (quads, default_graph, rejected, skipped, graphs) {got}, the reference {want}"
    return explained, None


def _run_totals(
    cases: list[Case], refs: list[Reading], reads: dict[str, dict], rejects: dict[str, list[dict]], root: Path
) -> tuple[int, int]:
    """The reference's pages and entities over the lines both readers take as quads."""
    pages, entities = set(), set()
    for i, (case, ref) in enumerate(zip(cases, refs)):
        src = str((root / case.name).resolve())
        bad = {r["position"] for r in rejects.get(src, [])}
        # a damaged file: the job keeps the lines it read before the damage
        upto = reads[src]["lines"] if ref.damaged and src in reads else len(ref.verdicts)
        for n, v in enumerate(ref.verdicts[:upto], 1):
            if v != "quad" or n in bad or ref.graphs[n - 1] is None:  # the default graph: no page, no entity
                continue
            g, s = ref.graphs[n - 1], ref.subjects[n - 1]
            page = (i, g) if g.startswith("_:") else (None, g)
            pages.add(page)
            entities.add((i, page, s) if s.startswith("_:") else s)
    return len(pages), len(entities)


def _run_job(root: Path, out: Path) -> tuple[dict, dict[str, list[dict]]]:
    import pyarrow.parquet as pq

    from testkit.fuzz import run_job

    rc = run_job(
        "csets",
        "--input",
        str(root),
        "--output",
        str(out),
        "--ignore-corrupt-files",
        "--strict-nquads",
        "--log-level",
        "ERROR",
    )
    if rc != 0:
        raise RuntimeError(f"the csets job exited {rc} on {root}")
    record = json.loads((out / "csets" / "_run.json").read_text())
    rejects: dict[str, list[dict]] = defaultdict(list)
    for r in pq.read_table(out / "rejects" / "csets").to_pylist():
        rejects[r["source"]].append(r)
    return record, rejects


def fuzz(work: Path, *, seed: int, rounds: int | None = None, budget_s: float | None = None) -> list[Tally]:
    """Rounds of ``FILES_PER_CLASS`` mutated files per class, one job run each (see the module's
    docstring), until ``rounds`` or ``budget_s``; one Tally per class."""
    # rdflib warns about every IRI with "{search_term_string}" (WDC has thousands)
    logging.getLogger("rdflib").setLevel(logging.ERROR)
    ref_name = reference_name()
    tallies = {c: Tally(JOB, c, ref_name) for c in CLASSES}
    lines = source_file().read_bytes().splitlines(keepends=True)
    rnd = random.Random(seed)
    start = time.monotonic()
    k = 0
    while (rounds is None or k < rounds) and (budget_s is None or time.monotonic() - start < budget_s):
        root = work / f"round-{k}" / "in"
        root.mkdir(parents=True)
        cases = [_MAKERS[c](lines, rnd, i) for c in CLASSES for i in range(FILES_PER_CLASS)]
        for case in cases:
            (root / case.name).write_bytes(case.data)
        refs = [read_reference(c.data, c.name.endswith(".gz")) for c in cases]
        # the job prints its summary: kept off the fuzz table
        with contextlib.redirect_stdout(io.StringIO()):
            record, rejects = _run_job(root, work / f"round-{k}" / "out")
        reads = {r["source"]: r for r in record["inputs"]["read"]}
        for case, ref in zip(cases, refs):
            src = str((root / case.name).resolve())
            explained, discrepancy = _compare(case, ref, reads.get(src), rejects.get(src, []))
            tallies[case.cls].add(explained=explained, discrepancy=discrepancy)
        pages, entities = _run_totals(cases, refs, reads, rejects, root)
        c = record["counters"]
        if (c["pages"], c["entities_before_cleaning"]) != (pages, entities):
            tallies["labels"].add(
                discrepancy=f"round {k}: (pages, entities) {(c['pages'], c['entities_before_cleaning'])}, "
                f"the reference {(pages, entities)}"
            )
        else:
            tallies["labels"].add()
        k += 1
    return list(tallies.values())
