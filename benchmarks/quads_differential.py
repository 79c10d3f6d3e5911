"""``extract_quads``'s quads of another checkout beside today's, on real pages, every difference
counted by class, and whether it changes C-sets.

    git archive <commit> | tar -x -C /tmp/base
    .venv/bin/python benchmarks/quads_differential.py --baseline /tmp/base [--examples 3]

Pages: every HTML response (status 200) of the demo's WARC files, as ``extract_quads`` reads them:
``data/demo/extruct-samples.warc.gz`` (every page of the extruct samples, unchanged, under an
``http://extruct-samples.example/`` URL) and the bundled Common Crawl and warcio files in
``data/warc/``. Each page is decoded and its JSON-LD blocks extracted by today's code
(``udfs.corpus.encoding.decode_html``, ``udfs.corpus.html.jsonld_blocks``); a block that is no
JSON or empty reaches no converter and is left out.

Each block goes through ``udfs.corpus.quads._check_and_convert`` (the bounds of
``[extract_quads]``, then the conversion) of both checkouts: today's in this process, the
baseline's in a subprocess run with that checkout alone first on ``PYTHONPATH`` (nothing here
edits ``sys.path``). Quads are compared as triples (the graph term is the page in both) up to
blank-node renaming (``rdflib.compare``). A block whose quads differ counts in every class its
differences fall in (``classify``): a literal's datatype, an IRI resolved otherwise, triples of a
predicate only one side has, a refusal on one side only. C-sets are compared per page: for each
subject of the page's quads, its set of types and its set of properties (``rdf:type`` objects and
the other predicates), as ``jobs/csets.py`` counts them; the column "C-sets changed" counts the
pages with the class whose C-sets differ. Examples go to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WARCS = {"demo": ("data/demo/*.warc.gz",), "bundled": ("data/warc/*.warc.gz",)}
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
_LINE = re.compile(r"^(\S+) (\S+) (.+) (<[^>]*>)   \.$")
_LITERAL = re.compile(r'^"((?:[^"\\]|\\.)*)"(?:@(\S+)|\^\^<([^>]*)>)?$')


# ---- the pages -------------------------------------------------------------------------------
def pages() -> list[tuple[str, str, list[tuple[int, object]]]]:
    """(group, page URL, [(block index, JSON data)]) of every HTML page with a block to convert."""
    from warcio.archiveiterator import ArchiveIterator

    from udfs.corpus.encoding import decode_html
    from udfs.corpus.html import jsonld_blocks
    from udfs.corpus.warc import HTML_MIME_TYPES, WarcRecord

    out = []
    for group, patterns in WARCS.items():
        for pattern in patterns:
            for path in sorted(ROOT.glob(pattern)):
                with open(path, "rb") as fh:
                    for rec in ArchiveIterator(fh):
                        http = rec.http_headers
                        ctype = http.get_header("Content-Type") if http is not None else None
                        info = WarcRecord(rec.rec_type, None, None, ctype, b"")
                        if rec.rec_type != "response" or http is None or http.get_statuscode() != "200":
                            continue
                        if info.mime_type not in HTML_MIME_TYPES:
                            continue
                        url = rec.rec_headers.get_header("WARC-Target-URI")
                        blocks = jsonld_blocks(decode_html(rec.content_stream().read(), ctype))
                        todo = [(b.index, b.data) for b in blocks if b.error is None and b.data is not None]
                        if todo:
                            out.append((group, url, todo))
    return out


# ---- one checkout's quads --------------------------------------------------------------------
def convert(items: list, limits: dict) -> list[dict]:
    """``_check_and_convert`` of the ``udfs`` this process imports, for each [url, index, data]:
    ``{"quads": [...]}``, ``{"over": reason}`` or ``{"error": "Type: message"}`` (a reject row)."""
    from udfs.corpus.quads import _check_and_convert

    out = []
    for url, index, data in items:
        try:
            reason, lines = _check_and_convert(data, url, index, limits["max_nodes"], limits["max_chars"])
        except Exception as exc:  # noqa: BLE001 - a refusal is the reject row extract_quads writes
            out.append({"error": f"{type(exc).__name__}: {str(exc)[:120]}"})
            continue
        out.append({"over": reason} if reason is not None else {"quads": lines})
    return out


# ---- comparison ------------------------------------------------------------------------------
def parse(line: str) -> tuple[str, str, tuple]:
    """(subject, predicate, object) of one of our quad lines; an object is ("iri", text),
    ("blank", label) or ("literal", lexical, datatype or None, language or None)."""
    m = _LINE.match(line)
    if m is None:
        raise ValueError(f"not a quad line: {line[:200]}")
    s, p, o = m.group(1), m.group(2)[1:-1], m.group(3)
    if o.startswith("<"):
        obj: tuple = ("iri", o[1:-1])
    elif o.startswith("_:"):
        obj = ("blank", o)
    else:
        lm = _LITERAL.match(o)
        if lm is None:
            raise ValueError(f"not a literal: {o[:200]}")
        obj = ("literal", lm.group(1), lm.group(3), lm.group(2))
    return s, p, obj


def _short(iri: str | None) -> str:
    if iri is None:
        return "xsd:string"
    for ns, pre in (
        ("http://www.w3.org/2001/XMLSchema#", "xsd:"),
        ("http://schema.org/", "schema:"),
        ("http://www.w3.org/1999/02/22-rdf-syntax-ns#", "rdf:"),
    ):
        if iri.startswith(ns):
            return pre + iri[len(ns) :]
    return iri


def _blankless(t: tuple) -> tuple:
    s, p, o = t
    return ("_:" if s.startswith("_:") else s, p, ("blank",) if o[0] == "blank" else o)


def _isomorphic(a: list[tuple], b: list[tuple]) -> bool:
    import rdflib
    from rdflib.compare import isomorphic

    def graph(ts):
        g = rdflib.Graph()
        for s, p, o in ts:
            sub = rdflib.BNode(s[2:]) if s.startswith("_:") else rdflib.URIRef(s[1:-1])
            if o[0] == "iri":
                obj = rdflib.URIRef(o[1])
            elif o[0] == "blank":
                obj = rdflib.BNode(o[1][2:])
            else:
                obj = rdflib.Literal(o[1], lang=o[3], datatype=rdflib.URIRef(o[2]) if o[2] else None)
            g.add((sub, rdflib.URIRef(p), obj))
        return g

    return isomorphic(graph(a), graph(b))


_NUMBERS = {"http://www.w3.org/2001/XMLSchema#" + t for t in ("integer", "double", "decimal", "float")}


def _same_number(a: tuple, b: tuple) -> bool:
    """Two numeric literals of one value in other lexical forms (``40.66`` and ``4.066E1``)."""
    if a[2] not in _NUMBERS or a[1] == b[1]:
        return False
    try:
        return float(a[1]) == float(b[1])
    except ValueError:
        return False


def classify(a: dict, b: dict) -> dict[str, str]:
    """The classes of the differences between the baseline's (``a``) and today's (``b``) result
    for one block (class -> an example detail), empty when the quads are the same graph."""
    if "quads" not in a or "quads" not in b:
        why = lambda r: r.get("error") or r.get("over") or ""  # noqa: E731
        if "quads" not in a and "quads" not in b:
            return {} if why(a) == why(b) else {"refused by both, reason reworded": f"{why(a)} / {why(b)}"}
        if "quads" in b:
            return {f"refused before, converted now: {why(a)[:60]}": ""}
        return {f"converted before, refused now: {why(b)[:60]}": ""}
    if a["quads"] == b["quads"]:
        return {}
    ta, tb = [parse(x) for x in a["quads"]], [parse(x) for x in b["quads"]]
    if set(ta) == set(tb) or (Counter(map(_blankless, ta)) == Counter(map(_blankless, tb)) and _isomorphic(ta, tb)):
        return {"same triples; order or blank-node labels differ": ""}
    only_a = Counter(map(_blankless, ta)) - Counter(map(_blankless, tb))
    only_b = Counter(map(_blankless, tb)) - Counter(map(_blankless, ta))
    classes: dict[str, str] = {}
    # a value written otherwise: same subject and predicate on both sides
    by_sp_b: dict[tuple, list] = {}
    for s, p, o in only_b.elements():
        by_sp_b.setdefault((s, p), []).append(o)
    left_a = []
    for s, p, o in only_a.elements():
        cands = by_sp_b.get((s, p), [])
        match = None
        for ob in cands:
            if o[0] == "literal" and ob[0] == "literal" and o[2] == ob[2] and _same_number(o, ob):
                match = (ob, f"number written otherwise: {_short(o[2])}", f"{_short(p)} {o[1]} -> {ob[1]}")
            elif o[0] == "literal" and ob[0] == "literal" and o[1] == ob[1]:
                k = (
                    f"literal language: {o[3]} -> {ob[3]}"
                    if o[3] != ob[3]
                    else f"literal datatype: {_short(o[2])} -> {_short(ob[2])}"
                )
                match = (ob, k, f"{_short(p)} {o[1][:40]!r}")
            elif o[0] == "iri" and ob[0] == "iri":
                match = (ob, "IRI value written otherwise", f"{_short(p)} <{o[1][:60]}> -> <{ob[1][:60]}>")
            elif o[0] != ob[0] and {o[0], ob[0]} <= {"iri", "literal"}:
                match = (ob, f"value kind: {o[0]} -> {ob[0]}", f"{_short(p)} {o[1][:40]!r} -> {ob[1][:40]!r}")
            if match:
                break
        if match:
            cands.remove(match[0])
            classes.setdefault(match[1], match[2])
        else:
            left_a.append((s, p, o))
    left_b = [(s, p, o) for (s, p), os_ in by_sp_b.items() for o in os_]
    for side, left in (("before", left_a), ("now", left_b)):
        for s, p, o in left:
            classes.setdefault(f"triples only {side}: {_short(p)}", f"{s[:60]} {_short(p)} {str(o[1:])[:80]}")
    if not classes:
        classes["same triples without blank-node labels, linked otherwise"] = ""
    return classes


def csets(results: list[dict]) -> Counter:
    """The C-sets of one page's quads: per subject, (types, properties), counted."""
    types: dict[str, set] = {}
    props: dict[str, set] = {}
    for r in results:
        for line in r.get("quads", []):
            s, p, o = parse(line)
            types.setdefault(s, set())
            props.setdefault(s, set())
            if p == RDF_TYPE:
                types[s].add(o[1])
            else:
                props[s].add(p)
    return Counter((frozenset(types[s]), frozenset(props[s])) for s in types)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", type=Path, required=True, help="a checkout whose extract_quads is compared")
    ap.add_argument("--examples", type=int, default=3, help="example blocks printed (stderr) per class")
    ap.add_argument("--dump", type=Path, help=argparse.SUPPRESS)  # the subprocess: convert --dump's blocks
    args = ap.parse_args()
    if args.dump is not None:
        job = json.loads(args.dump.read_text(encoding="utf-8"))
        args.dump.write_text(json.dumps(convert(job["items"], job["limits"])), encoding="utf-8")
        return 0
    from udfs.runtime.config import load_config

    conf = load_config().extract_quads
    limits = {"max_nodes": conf.max_markup_nodes, "max_chars": conf.max_markup_chars}
    found = pages()
    items = [[url, index, data] for _, url, blocks in found for index, data in blocks]
    with tempfile.TemporaryDirectory() as tmp:
        dump = Path(tmp) / "blocks.json"
        dump.write_text(json.dumps({"items": items, "limits": limits}), encoding="utf-8")
        subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--baseline", ".", "--dump", str(dump)],
            check=True,
            env={**os.environ, "PYTHONPATH": str(args.baseline.resolve())},
            cwd=str(args.baseline),
        )
        before = json.loads(dump.read_text(encoding="utf-8"))
    now = convert(items, limits)

    groups = list(WARCS)
    rows: dict[str, dict[str, Counter]] = {}
    shown: Counter = Counter()

    def count(k: str, group: str, col: str) -> None:
        rows.setdefault(k, {g: Counter() for g in groups})[group][col] += 1

    i = 0
    for group, url, blocks in found:
        a_page, b_page = before[i : i + len(blocks)], now[i : i + len(blocks)]
        i += len(blocks)
        count("pages", group, "n")
        page_classes: set[str] = set()
        for (index, _), a, b in zip(blocks, a_page, b_page):
            count("blocks", group, "n")
            ks = classify(a, b)
            count("same quads" if not ks else "different quads", group, "n")
            for k, detail in ks.items():
                count(k, group, "n")
                page_classes.add(k)
                if shown[k] < args.examples:
                    shown[k] += 1
                    print(f"  example, {k}: {url}#{index} ({detail})", file=sys.stderr)
        if csets(a_page) != csets(b_page):
            count("pages whose C-sets changed", group, "n")
            for k in page_classes:
                count(k, group, "csets")
        for k, results in (("quads before", a_page), ("quads now", b_page)):
            rows.setdefault(k, {g: Counter() for g in groups})[group]["n"] += sum(
                len(r.get("quads", [])) for r in results
            )

    print(f"{len(found)} pages, {len(items)} blocks")
    print("\n| class | " + " | ".join(f"{g}: blocks | {g}: C-sets changed (pages)" for g in groups) + " |")
    print("|---|" + "---:|---:|" * len(groups))
    first = [
        "pages",
        "blocks",
        "quads before",
        "quads now",
        "same quads",
        "different quads",
        "pages whose C-sets changed",
    ]
    for k in first + sorted(set(rows) - set(first)):
        cells = []
        for g in groups:
            c = rows.get(k, {}).get(g, Counter())
            cells += [str(c["n"]), str(c["csets"]) if k not in first else ""]
        print(f"| {k} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
