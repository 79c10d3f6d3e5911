"""The JSON-LD reader on real markup, model-free: a reader of another checkout and a maintained processor
beside today's, and every difference counted by class.

    git archive <commit> | tar -x -C /tmp/baseline
    .venv/bin/python benchmarks/jsonld_differential.py --baseline /tmp/baseline [--examples 3]

Markups (each one JSON-LD document):

* the paper's evaluation set: every markup of its ``results.csv`` (``udfs.corpus.pset.results_rows``:
  198 human, 198 GPT-3.5 and 198 GPT-4 markups), read from the bundle in
  ``../shared/data/llm4schemaorg-pset`` at its last commit;
* the demo's pages: every ``<script type="application/ld+json">`` block of every HTML record of the
  demo's WARC files (``data/demo/*.warc.gz``, ``data/warc/*.warc.gz``), as the pages job reads them
  (``udfs.corpus.html.jsonld_blocks``);
* the extruct samples in ``../shared/data/html/extruct-samples``: every JSON-LD block of their HTML
  pages, and every item of their expected JSON-LD outputs (``testkit.markup_corpus.extruct_markups``).

Three readings of each markup:

* **today**: ``udfs.schemaorg.markup.parse_markup`` of this checkout;
* **baseline**: the same function of the checkout given by ``--baseline`` (run in a subprocess with
  that checkout first on ``PYTHONPATH``; nothing here edits ``sys.path``: today's ``udfs`` is the one
  ``make setup`` installs), e.g. the commit before the reader changed;
* **maintained**: rdflib's JSON-LD parser (``rdflib.plugins.parsers.jsonld``) with the bundled
  schema.org context (``with_bundled_contexts``: nothing is fetched), the markup's
  base IRI left unset; a markup without ``@context`` gets schema.org's, as the reader reads it.

Readings are compared as RDF triples: a reader's are every triple of its entities (relative IRIs
and IRIs with spaces included: a verdict sees them; schema.org names in ``http://schema.org/``),
rdflib's are its graph's, the schema.org namespace in that one spelling. Graphs are compared up to
blank-node renaming (``rdflib.compare``); two readers' also by the order of entities, values and
roots (what a verdict reads besides the triples). A markup whose readings differ is counted under
every class its differences fall in (``classify``): an IRI one side keeps and the other drops, a
literal's datatype or language, other triples; examples go to stderr. Prints the CPU time each
reader takes over all markups, then two Markdown tables: baseline against today, today against
the maintained processor.
"""

from __future__ import annotations

import argparse
import glob
import json
import logging
import os
import re
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import rdflib

ROOT = Path(__file__).resolve().parent.parent

SHARED = ROOT.parent / "shared" / "data"
PSET_BUNDLE = SHARED / "llm4schemaorg-pset"
EXTRUCT = SHARED / "html" / "extruct-samples"
DEMO_WARCS = ("data/demo/*.warc.gz", "data/warc/*.warc.gz")
XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
RDF_LANGSTRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"


# ---- the markups -----------------------------------------------------------------------------
def corpus() -> list[tuple[str, str, object]]:
    """(group, source, JSON data) of every markup; a block that is not JSON is left out (no reader
    sees it: the pages job refuses it before)."""
    from warcio.archiveiterator import ArchiveIterator

    from testkit.markup_corpus import extruct_markups
    from udfs.corpus.encoding import decode_html
    from udfs.corpus.html import jsonld_blocks
    from udfs.corpus.pset import open_pset, results_rows

    out: list[tuple[str, str, object]] = []
    src = open_pset(PSET_BUNDLE)
    for r in results_rows(src):
        text = src.read(r.markup).decode("utf-8")
        try:
            out.append(("paper", f"{r.source}:{r.document_id}_{r.classes}:{r.feature}{r.stratum}", json.loads(text)))
        except json.JSONDecodeError:
            continue
    for pattern in DEMO_WARCS:
        for path in sorted(glob.glob(str(ROOT / pattern))):
            with open(path, "rb") as fh:
                for rec in ArchiveIterator(fh):
                    ctype = rec.http_headers.get_header("Content-Type") if rec.http_headers else None
                    if rec.rec_type != "response" or not (ctype or "").lower().startswith("text/html"):
                        continue
                    url = rec.rec_headers.get_header("WARC-Target-URI")
                    for b in jsonld_blocks(decode_html(rec.content_stream().read(), ctype)):
                        if b.data is not None:
                            out.append(("demo", f"{Path(path).name}:{url}#{b.index}", b.data))
    for path in sorted(EXTRUCT.rglob("*.html")):
        for b in jsonld_blocks(path.read_bytes()):
            if b.data is not None:
                out.append(("extruct", f"{path.relative_to(EXTRUCT)}#{b.index}", b.data))
    for m in extruct_markups(EXTRUCT):
        if m.ok_json:
            out.append(("extruct", m.source, json.loads(m.text)))
    return out


# ---- a reader's triples ----------------------------------------------------------------------
def reader_triples(data: object) -> dict:
    """What ``parse_markup`` of the ``udfs`` on ``sys.path`` makes of ``data``: ``{"error": reason}``
    or ``{"triples": [[s, p, o], ...]}`` (``term``'s spelling), every triple of its entities, relative
    IRIs included (a verdict sees them)."""
    from udfs.schemaorg import markup as M
    from udfs.schemaorg.namespace import SCHEMA_NS

    try:
        m = M.parse_markup(data, allow_empty=True)
    except M.MarkupError as e:
        return {"error": e.reason}
    except RecursionError:
        return {"error": "RecursionError"}

    def iri(name: str) -> str:
        # a type or property: a schema.org local name, or an IRI of another vocabulary
        return name if name.startswith("_:") or _absolute(name) else SCHEMA_NS + name

    out = []
    # what a verdict also reads: entities in order, their types and property values in order, the roots
    order = [
        [e.id, e.types, [[p, [repr(v.key()) for v in vs]] for p, vs in e.properties.items()]]
        for e in m.entities.values()
    ]
    for ent in m.entities.values():
        for t in ent.types:
            out.append([ent.id, RDF_TYPE, iri(t)])
        for p, vs in ent.properties.items():
            for v in vs:
                o = _literal(v.value, v.datatype, v.language) if isinstance(v, M.Literal) else v.id
                out.append([ent.id, iri(p), o])
    return {"triples": out, "order": [order, m.roots]}


REPEATS = 5


def reading_seconds(data: list) -> float:
    """CPU seconds ``parse_markup`` of the ``udfs`` on ``sys.path`` takes over ``data`` (the fewest of
    ``REPEATS`` runs, after one to fill the caches of the schema.org context)."""
    import time

    from udfs.schemaorg import markup as M

    def once() -> float:
        t = time.process_time()
        for d in data:
            try:
                M.parse_markup(d, allow_empty=True)
            except (M.MarkupError, RecursionError):
                pass
        return time.process_time() - t

    once()
    return min(once() for _ in range(REPEATS))


def _literal(value, datatype, language) -> list:
    """[lexical form, datatype, language] as JSON-LD's toRdf writes a JSON value."""
    if isinstance(value, bool):
        lex, dt = ("true" if value else "false"), XSD + "boolean"
    elif isinstance(value, int):
        lex, dt = str(value), XSD + "integer"
    elif isinstance(value, float):
        if value.is_integer() and abs(value) < 1e21:
            lex, dt = str(int(value)), XSD + "integer"
        else:
            lex, dt = _double(value), XSD + "double"
    else:
        lex, dt = str(value), XSD + "string"
    if language:
        return [lex, RDF_LANGSTRING, language.lower()]
    return [lex, datatype or dt, None]


def _double(value: float) -> str:
    """The canonical xsd:double form JSON-LD gives a number (``1.1E0``)."""
    mantissa, _, exponent = ("%1.15E" % value).partition("E")
    mantissa = mantissa.rstrip("0")
    return f"{mantissa}0E{int(exponent)}" if mantissa.endswith(".") else f"{mantissa}E{int(exponent)}"


class RemoteContextError(ValueError):
    pass


def with_bundled_contexts(node: Any) -> Any:
    """A copy of a JSON-LD tree whose schema.org context references are the bundled context.

    Any other remote reference (a URL context, ``@import``) raises RemoteContextError: rdflib
    would otherwise fetch it, and page content never makes us fetch anything.
    """
    from udfs.schemaorg.namespace import context_document, is_schema_context_url
    from udfs.schemaorg.vocab import DEFAULT_RELEASE

    def ctx_value(ctx: Any) -> Any:
        if isinstance(ctx, str):
            if is_schema_context_url(ctx):
                return context_document(DEFAULT_RELEASE)
            raise RemoteContextError(f"remote @context not fetched: {ctx[:200]}")
        if isinstance(ctx, list):
            return [ctx_value(c) for c in ctx]
        if isinstance(ctx, dict):
            if "@import" in ctx:
                raise RemoteContextError(f"@import of a remote context not fetched: {str(ctx['@import'])[:200]}")
            return {k: copy_tree(v) for k, v in ctx.items()}
        return ctx

    def copy_tree(n: Any) -> Any:
        if isinstance(n, dict):
            return {k: (ctx_value(v) if k == "@context" else copy_tree(v)) for k, v in n.items()}
        if isinstance(n, list):
            return [copy_tree(x) for x in n]
        return n

    return copy_tree(node)


_NOT_A_NODE = ("@value", "@list", "@set", "@id", "id", "@graph")


def label_blank_nodes(tree: Any) -> Any:
    """Every node object without an identifier given the blank-node id ``_:b<n>``, document order
    (rdflib's own blank-node ids are random; the reader's are these)."""
    counter = iter(range(1 << 62))

    def visit(n: Any) -> Any:
        if isinstance(n, dict):
            out = {k: (v if k == "@context" else visit(v)) for k, v in n.items()}
            if not any(k in n for k in _NOT_A_NODE):
                out["@id"] = f"_:b{next(counter)}"
            return out
        if isinstance(n, list):
            return [visit(x) for x in n]
        return n

    return visit(tree)


def maintained_triples(data: object) -> dict:
    """rdflib's JSON-LD parser on ``data`` (bundled schema.org context; no @context: schema.org's)."""
    import rdflib
    from rdflib.plugins.parsers.jsonld import to_rdf

    from udfs.schemaorg.namespace import SCHEMA_CONTEXT_URL, SCHEMA_NS, SCHEMA_NS_RE

    items = data if isinstance(data, list) else [data]
    items = [{"@context": SCHEMA_CONTEXT_URL, **i} if isinstance(i, dict) and "@context" not in i else i for i in items]
    try:
        g = rdflib.Graph()
        to_rdf(label_blank_nodes(with_bundled_contexts(items)), g)
    except RemoteContextError as e:
        return {"error": str(e)}
    except Exception as e:  # noqa: BLE001 - any refusal of the processor is a class of its own
        return {"error": f"{type(e).__name__}: {str(e)[:100]}"}

    respelled = False

    def term(t):
        nonlocal respelled
        if isinstance(t, rdflib.BNode):
            return "_:" + str(t)
        if isinstance(t, rdflib.Literal):
            dt = str(t.datatype) if t.datatype else (RDF_LANGSTRING if t.language else XSD + "string")
            return [str(t), dt, t.language.lower() if t.language else None]
        m = SCHEMA_NS_RE.match(str(t))
        if m and m.group(0) != SCHEMA_NS:
            respelled = True  # the reader names every spelling of the namespace as one
            return SCHEMA_NS + str(t)[m.end() :]
        return str(t)

    out = {"triples": [[term(x) for x in spo] for spo in g]}
    if respelled:
        out["respelled"] = True
    return out


# ---- comparison ------------------------------------------------------------------------------
def graph(triples: list) -> "rdflib.Graph":
    import rdflib

    def term(t):
        if isinstance(t, list):
            lex, dt, lang = t
            return rdflib.Literal(lex, lang=lang) if lang else rdflib.Literal(lex, datatype=rdflib.URIRef(dt))
        # rdflib cannot write (nor compare) an IRI with characters N-Triples forbids: encoded
        return rdflib.BNode(t[2:]) if t.startswith("_:") else rdflib.URIRef(_IRI_UNSAFE.sub(_encode, t))

    g = rdflib.Graph()
    for spo in triples:
        g.add(tuple(term(t) for t in spo))
    return g


_IRI_UNSAFE = re.compile(r'[\x00-\x20<>"{}|^`\\]')


def _encode(c: "re.Match") -> str:
    return "%%%02X" % ord(c.group())


def classify(a: dict, b: dict) -> dict[str, str]:
    """The classes of the differences between two readings of one markup (class -> a detail for
    the examples), empty when they are the same graph up to blank-node renaming."""
    if "error" in a or "error" in b:
        if "error" in a and "error" in b:
            return {} if a["error"] == b["error"] else {"refused by both, other reason": a["error"][:80]}
        side = "first" if "error" in a else "second"
        return {f"refused by the {side} only: {(a.get('error') or b.get('error'))[:70]}": ""}
    ga, gb = graph(a["triples"]), graph(b["triples"])
    if set(ga) == set(gb):
        if "order" in a and "order" in b and a["order"] != b["order"]:
            return {"same triples, entities, values or roots in another order": ""}
        return {}
    classes: dict[str, str] = {}
    if b.get("respelled"):
        classes["schema.org namespace spelled https or www.: one namespace to the reader"] = ""
    # a triple with an IRI that is relative (markup read without base) or holds a space or another
    # character IRIs may not: kept by the reader, dropped by JSON-LD's RDF conversion
    bad = []
    for g, triples in ((ga, a["triples"]), (gb, b["triples"])):
        bad.append([spo for spo in triples if any(isinstance(x, str) and not _node_ok(x) for x in spo)])
        for t in graph(bad[-1]):
            g.remove(t)
    keys = [Counter((p, json.dumps(o)) for _, p, o in ts) for ts in bad]
    for side, extra in (("first", keys[0] - keys[1]), ("second", keys[1] - keys[0])):
        if extra:
            iris = [x for p, o in extra for x in (p, json.loads(o)) if isinstance(x, str) and not _node_ok(x)]
            kinds = sorted({"relative" if not _absolute(x) else "space or other character" for x in iris})
            preds = ", ".join(sorted({_short(p) for p, _ in extra}))[:200]
            classes[f"IRI not well formed ({' or '.join(kinds)}), kept by the {side} only"] = preds
    if _same(ga, gb):
        return classes
    # a literal of one reading is the other's with another datatype or language
    lits: dict[tuple, list[Counter]] = {}
    for i, g in enumerate((ga, gb)):
        for _, p, o in g:
            if isinstance(o, rdflib.Literal):
                lits.setdefault((p, _lexical(o)), [Counter(), Counter()])[i][(o.datatype, o.language)] += 1
    for (p, _), (ca, cb) in lits.items():
        xs, ys = sorted((ca - cb).elements(), key=str), sorted((cb - ca).elements(), key=str)
        for (dx, lx), (dy, ly) in zip(xs, ys):
            k = (
                f"literal language: {lx or 'none'} -> {ly or 'none'}"
                if lx != ly
                else f"literal datatype: {_short(dx)} -> {_short(dy)}"
            )
            classes.setdefault(k, _short(p))
    plain_a, plain_b = _plain_literals(ga), _plain_literals(gb)
    same = _same(plain_a, plain_b)
    if same:
        return classes
    # what else differs, by predicate and object (blank nodes and literals as their kind)
    shapes = [Counter((p, _kind_of(o)) for _, p, o in g) for g in (plain_a, plain_b)]
    for side, extra in (("first", shapes[0] - shapes[1]), ("second", shapes[1] - shapes[0])):
        if extra:
            classes[f"other triples, {side} only"] = ", ".join(sorted({f"{_short(p)} {k}" for p, k in extra}))[:200]
    if not any(k.startswith("other") for k in classes):
        if same is None:
            classes[f"same triples per predicate; isomorphism not decided in {ISOMORPHISM_SECONDS} s"] = ""
        else:
            classes["other: same triples per predicate, linked otherwise"] = ""
    return classes


def _same(ga, gb) -> bool | None:
    """Are two graphs the same up to blank-node renaming? None: not decided in time."""
    from rdflib.compare import isomorphic

    if set(ga) == set(gb):
        return True
    try:
        with time_limit(ISOMORPHISM_SECONDS):
            return isomorphic(ga, gb)
    except TimeoutError:
        return None


def _plain_literals(g):
    out = rdflib.Graph()
    for s, p, o in g:
        out.add((s, p, rdflib.Literal(_lexical(o)) if isinstance(o, rdflib.Literal) else o))
    return out


_NUMBERS = {XSD + t for t in ("integer", "double", "decimal", "float")}


def _lexical(o) -> str:
    """A literal's lexical form, a number's as its value (7123 and 7123.0E0 are one number)."""
    if str(o.datatype) in _NUMBERS:
        try:
            return repr(float(str(o)))
        except ValueError:
            pass
    return str(o)


def _kind_of(o) -> str:
    if isinstance(o, rdflib.BNode):
        return "(blank node)"
    if isinstance(o, rdflib.Literal):
        return "(literal)"
    return _short(o)


# rdflib's canonicalisation is exponential on graphs of many alike blank nodes; past this, the
# graphs are compared with their blank-node labels as given (both readers label in document order)
ISOMORPHISM_SECONDS = 120


@contextmanager
def time_limit(seconds: int):
    def expire(signum, frame):
        raise TimeoutError

    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _short(dt) -> str:
    if dt is None:
        return "none"
    s = str(dt)
    for ns, pre in (
        ("http://www.w3.org/2001/XMLSchema#", "xsd:"),
        ("http://schema.org/", "schema:"),
        ("http://www.w3.org/1999/02/22-rdf-syntax-ns#", "rdf:"),
    ):
        if s.startswith(ns):
            return pre + s[len(ns) :]
    return s


def _node_ok(x: str) -> bool:
    from udfs.schemaorg.jsonld import is_well_formed_iri

    return x.startswith("_:") or is_well_formed_iri(x)


def _absolute(iri: str) -> bool:
    return bool(re.match(r"^[A-Za-z][A-Za-z0-9+.\-]*:", iri))


def compare(name_a: str, ra: list[dict], name_b: str, rb: list[dict], markups, examples: int) -> None:
    per_group: dict[str, Counter] = {}
    shown: Counter = Counter()
    for (group, source, _), a, b in zip(markups, ra, rb):
        c = per_group.setdefault(group, Counter())
        c["markups"] += 1
        ks = classify(a, b)
        c["same" if not ks else "different"] += 1
        c["of which identical (blank-node labels, order of entities, values and roots)"] += a == b
        for k, detail in ks.items():
            c[k] += 1
            if shown[k] < examples:
                shown[k] += 1
                print(f"  example, {k}: {source} ({detail})", file=sys.stderr)
    first = [
        "markups",
        "same",
        "of which identical (blank-node labels, order of entities, values and roots)",
        "different",
    ]
    classes = sorted({k for c in per_group.values() for k in c} - set(first))
    print(f"\n{name_a} against {name_b}\n")
    print("| class | " + " | ".join(per_group) + " |")
    print("|---|" + "---:|" * len(per_group))
    for k in first + classes:
        print(f"| {k} | " + " | ".join(str(c.get(k, 0)) for c in per_group.values()) + " |")


def main() -> int:
    logging.disable(logging.WARNING)  # rdflib warns on every IRI with a space or a brace
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", type=Path, required=True, help="a checkout whose reader is compared with today's")
    ap.add_argument("--examples", type=int, default=3, help="example markups printed (stderr) per class")
    ap.add_argument("--dump", type=Path, help=argparse.SUPPRESS)  # the subprocess: read --dump's markups
    args = ap.parse_args()
    if args.dump is not None:
        data = json.loads(args.dump.read_text(encoding="utf-8"))
        cpu = reading_seconds(data)
        args.dump.write_text(json.dumps({"cpu": cpu, "readings": [reader_triples(d) for d in data]}), encoding="utf-8")
        return 0
    if not PSET_BUNDLE.is_dir() or not EXTRUCT.is_dir():
        print(f"jsonld_differential.py: error: the shared data is not at {SHARED}", file=sys.stderr)
        return 1
    markups = corpus()
    with tempfile.TemporaryDirectory() as tmp:
        dump = Path(tmp) / "markups.json"
        dump.write_text(json.dumps([d for _, _, d in markups]), encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(args.baseline.resolve())}
        subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--baseline", ".", "--dump", str(dump)],
            check=True,
            env=env,
            cwd=str(args.baseline),
        )
        done = json.loads(dump.read_text(encoding="utf-8"))
    baseline, baseline_cpu = done["readings"], done["cpu"]
    today_cpu = reading_seconds([d for _, _, d in markups])
    today = [reader_triples(d) for _, _, d in markups]
    maintained = [maintained_triples(d) for _, _, d in markups]
    print(f"{len(markups)} markups: " + ", ".join(f"{k} {n}" for k, n in Counter(g for g, _, _ in markups).items()))
    print(
        f"\nreading every markup (parse_markup, CPU seconds, fewest of {REPEATS} runs, each reader in its own "
        f"process): baseline {baseline_cpu:.3f}, today {today_cpu:.3f}, ratio {today_cpu / baseline_cpu:.2f}"
    )
    compare("baseline", baseline, "today", today, markups, args.examples)
    compare("today", today, "rdflib", maintained, markups, args.examples)
    return 0


if __name__ == "__main__":
    sys.exit(main())
