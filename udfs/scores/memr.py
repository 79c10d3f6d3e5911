"""MeMR, the LLM4Schema.org comparison of two markups of one page, computed as the paper does.

For each side (human ``h``, LLM ``l``) count the objects of every predicate, ``rdf:type``
included: C_h[p], C_l[p]. The merged markup keeps, per predicate, the larger count:
C_m[p] = max(C_h[p], C_l[p]). The score of a side is its total over the merged total,
Σ C_side / Σ C_m, i.e. the generalised Jaccard of that side with the merged markup. Both sides
can score 1 (same counts) and neither is the complement of the other.

Counting is over RDF triples, so set semantics hold: a value repeated under one predicate of one
subject is one triple; a nested entity is one object of its predicate (a blank node, or its
``@id``) and its own triples count too; JSON ``null`` is no triple.

The markup reader is a small JSON-LD tree walker rather than a full JSON-LD processor: page
markup is untrusted, so no remote context is ever fetched. A markup without ``@context`` (and
one whose context is schema.org's URL) is read with the bundled schema.org context: ``@vocab``
schema.org, its prefixes (``schema:``, ``dcterms:``, ``og:`` …) and its aliases (``type``,
``id``). Inline context objects (``@vocab``, prefixes, term IRIs) are honoured; any other remote
context is not fetched and is reported in ``Markup.notes``.

Command line::

    python -m udfs.scores.memr HUMAN.jsonld MODEL.jsonld     # prints {"h": ..., "l": ...}
"""
from __future__ import annotations

import argparse
import functools
import itertools
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from udfs.runtime.paths import DATA_DIR
from udfs.schemaorg.vocab import DEFAULT_RELEASE, RDF_TYPE, schema_local_name

# The predicate name types are counted under (the paper counts rdf:type like any predicate).
TYPE_PREDICATE = "rdf:type"
SCHEMA_VOCAB = "http://schema.org/"
XSD = "http://www.w3.org/2001/XMLSchema#"

# Every spelling of schema.org's own context URL that pages use; anything else is a remote
# context we refuse to fetch.
_SCHEMA_CONTEXT_URL = re.compile(
    r"^https?://(?:www\.)?schema\.org/?(?:docs/jsonldcontext\.json(?:ld)?)?/?$", re.IGNORECASE
)


class MarkupError(ValueError):
    """A markup that is not JSON or not a JSON-LD shape (the caller turns it into a reject row)."""


@dataclass(frozen=True)
class Triple:
    """One RDF triple read from a markup. Names are schema.org local names where the IRI is in
    schema.org's namespace (any http/https/www variant), full IRIs otherwise; types are objects of
    ``rdf:type``. ``kind`` is ``iri``, ``bnode`` or ``literal``; ``datatype`` carries the literal's
    datatype or ``@lang`` so that 5, "5" and "5"@en stay three objects, as in RDF."""

    subject: str
    predicate: str
    object: str
    kind: str = "literal"
    datatype: str | None = None


@dataclass
class Markup:
    triples: list[Triple]
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class MemrScore:
    h: float | None
    l: float | None  # noqa: E741 - the paper's name for the LLM side
    human_total: int
    model_total: int
    merged_total: int
    human_counts: dict[str, int]
    model_counts: dict[str, int]
    merged_counts: dict[str, int]

    def as_dict(self) -> dict[str, float | None]:
        return {"h": self.h, "l": self.l}


# ---- context ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Context:
    vocab: str | None
    terms: Mapping[str, str]  # term or prefix -> IRI (or keyword, for aliases)


@functools.lru_cache(maxsize=4)
def schemaorg_context(release: str = DEFAULT_RELEASE) -> _Context:
    """The parts of the bundled official context that matter for reading markup: ``@vocab``, the
    prefixes and the keyword aliases. Its 3,000 ``schema:X`` term definitions expand exactly as
    ``@vocab`` does, so they are left out."""
    path = DATA_DIR / f"schemaorg-{release}" / "schemaorgcontext.jsonld"
    ctx = json.loads(path.read_text(encoding="utf-8"))["@context"]
    terms = {
        k: v
        for k, v in ctx.items()
        if isinstance(v, str) and not k.startswith("@") and (v.startswith("@") or v[-1:] in "/#")
    }
    return _Context(vocab=ctx.get("@vocab", SCHEMA_VOCAB), terms=terms)


def _extend(ctx: _Context, local: Any, notes: list[str]) -> _Context:
    if local is None:
        # JSON-LD resets the context on null; for page markup that means "read as schema.org".
        return schemaorg_context()
    if isinstance(local, list):
        for item in local:
            ctx = _extend(ctx, item, notes)
        return ctx
    if isinstance(local, str):
        if _SCHEMA_CONTEXT_URL.match(local.strip()):
            return schemaorg_context()
        notes.append(f"remote context not fetched: {local[:200]}")
        return ctx
    if not isinstance(local, dict):
        notes.append(f"context ignored: not a string, list or object ({type(local).__name__})")
        return ctx
    vocab = ctx.vocab
    terms = dict(ctx.terms)
    if "@vocab" in local:
        v = local["@vocab"]
        vocab = _expand_iri(v, _Context(vocab, terms)) if isinstance(v, str) else None
        if vocab and _SCHEMA_CONTEXT_URL.match(vocab) and vocab[-1:] != "/":
            vocab += "/"  # "@vocab": "http://schema.org" is common and means the namespace
    for key, value in local.items():
        if key.startswith("@"):
            continue
        if value is None:
            terms.pop(key, None)
            terms[key] = ""  # explicitly undefined: the key is dropped, not read through @vocab
        elif isinstance(value, str):
            terms[key] = value
        elif isinstance(value, dict) and isinstance(value.get("@id"), str):
            terms[key] = value["@id"]
        elif isinstance(value, dict) and isinstance(value.get("@reverse"), str):
            notes.append(f"reverse term ignored: {key}")
            terms[key] = ""
    # Term values can themselves be compact IRIs ("name": "schema:name"); expand once the whole
    # object is read, since JSON-LD lets a term refer to a prefix defined later in the object.
    provisional = _Context(vocab, terms)
    expanded = {k: (v if v.startswith("@") or not v else _expand_iri(v, provisional, k)) for k, v in terms.items()}
    return _Context(vocab, expanded)


def _expand_iri(value: str, ctx: _Context, self_term: str | None = None) -> str:
    """Expand a compact IRI or absolute IRI (never through ``@vocab``)."""
    if ":" in value:
        prefix, _, suffix = value.partition(":")
        if prefix != self_term and not suffix.startswith("//"):
            base = ctx.terms.get(prefix)
            if base and not base.startswith("@"):
                return base + suffix
    return value


def _expand_term(key: str, ctx: _Context) -> str | None:
    """A property or type name -> IRI or keyword; None when the context leaves it undefined."""
    if key in ctx.terms:
        value = ctx.terms[key]
        return value or None
    if ":" in key:
        return _expand_iri(key, ctx)
    if ctx.vocab:
        return ctx.vocab + key
    return None


def _name(iri: str) -> str:
    if iri == RDF_TYPE:
        return TYPE_PREDICATE
    return schema_local_name(iri) or iri


# ---- the walker ------------------------------------------------------------------------------

class _Walker:
    def __init__(self) -> None:
        self.triples: list[Triple] = []
        self.notes: list[str] = []
        self._bnodes = itertools.count(1)

    def new_bnode(self) -> str:
        return f"_:n{next(self._bnodes)}"

    def document(self, doc: Any, ctx: _Context) -> None:
        if isinstance(doc, list):
            for item in doc:
                self.document(item, ctx)
            return
        if not isinstance(doc, dict):
            raise MarkupError(f"a JSON-LD document is an object or an array of objects, not {type(doc).__name__}")
        # A top-level object holding only @context and @graph is a container, not a node.
        if "@graph" in doc and not (set(doc) - {"@context", "@graph"}):
            if "@context" in doc:
                ctx = _extend(ctx, doc["@context"], self.notes)
            self.document(doc["@graph"], ctx)
            return
        self.node(doc, ctx)

    def node(self, obj: dict, ctx: _Context) -> str:
        if "@context" in obj:
            ctx = _extend(ctx, obj["@context"], self.notes)
        keys = {k: _expand_term(k, ctx) if not k.startswith("@") else k for k in obj}
        subject = None
        for key, kw in keys.items():
            if kw == "@id" and isinstance(obj[key], str) and obj[key]:
                subject = self._subject_id(obj[key], ctx)
        if subject is None:
            subject = self.new_bnode()
        for key, value in obj.items():
            kw = keys[key]
            if kw is None:
                self.notes.append(f"term dropped (undefined in context): {key}")
                continue
            if kw == "@type":
                for t in _as_list(value):
                    if isinstance(t, str) and t:
                        iri = _expand_term(t, ctx) or t
                        self.triples.append(Triple(subject, TYPE_PREDICATE, _name(iri), "iri"))
                    elif t is not None:
                        self.notes.append(f"type ignored: not a string ({json.dumps(t)[:100]})")
                continue
            if kw == "@graph":
                self.document(value, ctx)
                continue
            if kw == "@reverse":
                self._reverse(subject, value, ctx)
                continue
            if kw.startswith("@"):
                continue
            predicate = TYPE_PREDICATE if kw == RDF_TYPE else _name(kw)
            for obj_value in _flatten(value):
                self._object(subject, predicate, obj_value, ctx)
        return subject

    def _subject_id(self, raw: str, ctx: _Context) -> str:
        if raw.startswith("_:"):
            return "_:u-" + raw[2:]  # the page's own labels, kept apart from generated ones
        return _name(_expand_iri(raw, ctx))

    def _object(self, subject: str, predicate: str, value: Any, ctx: _Context) -> None:
        if value is None:
            return
        if isinstance(value, dict):
            if "@value" in value:
                literal = value["@value"]
                if literal is None:
                    return
                lexical, datatype = _literal(literal)
                if isinstance(value.get("@language"), str):
                    datatype = "@" + value["@language"].lower()
                elif isinstance(value.get("@type"), str):
                    datatype = _expand_term(value["@type"], ctx) or value["@type"]
                self.triples.append(Triple(subject, predicate, lexical, "literal", datatype))
                return
            if "@list" in value or "@set" in value:
                # Items of a list are counted as objects of the predicate (the RDF list
                # scaffolding, rdf:first/rdf:rest, is no content of the markup).
                for item in _flatten(value.get("@list", value.get("@set"))):
                    self._object(subject, predicate, item, ctx)
                return
            target = self.node(value, ctx)
            self.triples.append(Triple(subject, predicate, target, "bnode" if target.startswith("_:") else "iri"))
            return
        lexical, datatype = _literal(value)
        self.triples.append(Triple(subject, predicate, lexical, "literal", datatype))

    def _reverse(self, subject: str, value: Any, ctx: _Context) -> None:
        if not isinstance(value, dict):
            self.notes.append("@reverse ignored: not an object")
            return
        for key, items in value.items():
            iri = _expand_term(key, ctx)
            if iri is None or iri.startswith("@"):
                continue
            for item in _flatten(items):
                if isinstance(item, dict):
                    source = self.node(item, ctx)
                    self.triples.append(Triple(source, _name(iri), subject, "bnode" if subject.startswith("_:") else "iri"))


def _as_list(value: Any) -> list:
    return value if isinstance(value, list) else [value]


def _flatten(value: Any) -> Iterable[Any]:
    if isinstance(value, list):
        for item in value:
            yield from _flatten(item)
    else:
        yield value


def _literal(value: Any) -> tuple[str, str | None]:
    # Datatypes as JSON-LD's toRdf gives them, so 5, 5.0, true and "5" are distinct objects.
    if isinstance(value, bool):
        return ("true" if value else "false"), XSD + "boolean"
    if isinstance(value, int):
        return str(value), XSD + "integer"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e21:
            return str(int(value)), XSD + "integer"
        return repr(value), XSD + "double"
    if isinstance(value, str):
        return value, None
    return json.dumps(value, sort_keys=True), XSD + "string"


# ---- public API ------------------------------------------------------------------------------

def parse_markup(markup: str | bytes | dict | list) -> Any:
    if isinstance(markup, (dict, list)):
        return markup
    try:
        return json.loads(markup)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise MarkupError(f"markup is not valid JSON: {exc}") from exc


def read_markup(markup: str | bytes | dict | list) -> Markup:
    """JSON-LD markup (text or parsed) -> its triples, duplicates included, and reading notes."""
    walker = _Walker()
    walker.document(parse_markup(markup), schemaorg_context())
    return Markup(walker.triples, walker.notes)


def object_counts(triples: Iterable[Triple | tuple | Mapping[str, Any]]) -> Counter:
    """Objects per predicate, each distinct (subject, predicate, object) counted once.

    Takes ``Triple``s, tuples ``(subject, predicate, object[, entity_type])``, or rows with
    ``subject``, ``property``, ``value`` and optionally ``entity_type`` (the ``triples/`` table),
    so a curated markup, i.e. the triples the agents kept, is counted like a raw one. Rows carry
    the subject's type beside each property value rather than as rows of their own, so the
    distinct (subject, entity_type) pairs are counted as ``rdf:type`` objects (an entity with no
    property row left has no type row either)."""
    seen: set[tuple] = set()
    counts: Counter = Counter()

    def add(key: tuple) -> None:
        if key[2] is not None and key not in seen:
            seen.add(key)
            counts[key[1]] += 1

    for t in triples:
        if isinstance(t, Triple):
            add((t.subject, t.predicate, (t.object, t.kind, t.datatype)))
            continue
        if isinstance(t, Mapping):
            subject, predicate, obj, etype = t["subject"], t["property"], t["value"], t.get("entity_type")
        else:
            subject, predicate, obj = t[0], t[1], t[2]
            etype = t[3] if len(t) > 3 else None
        add((subject, predicate, obj))
        if etype is not None:
            add((subject, TYPE_PREDICATE, etype))
    return counts


def memr_from_counts(human: Mapping[str, int], model: Mapping[str, int]) -> MemrScore:
    merged = {p: max(human.get(p, 0), model.get(p, 0)) for p in set(human) | set(model)}
    h_total, l_total, m_total = sum(human.values()), sum(model.values()), sum(merged.values())
    # Both markups empty: neither is more comprehensive, and 0/0 is no score.
    h = h_total / m_total if m_total else None
    l = l_total / m_total if m_total else None  # noqa: E741
    return MemrScore(h, l, h_total, l_total, m_total, dict(human), dict(model), merged)


def memr(human: Iterable, model: Iterable) -> MemrScore:
    """MeMR of two triple collections (see ``object_counts`` for the accepted shapes)."""
    return memr_from_counts(object_counts(human), object_counts(model))


def memr_markups(human: str | bytes | dict | list, model: str | bytes | dict | list) -> MemrScore:
    """MeMR of two JSON-LD markups (text or parsed)."""
    return memr(read_markup(human).triples, read_markup(model).triples)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m udfs.scores.memr",
        description="MeMR of a human and a model JSON-LD markup of one page (LLM4Schema.org). "
        'Prints {"h": ..., "l": ...}; null for both when both markups have no triple.',
    )
    parser.add_argument("human", help="human markup, a JSON-LD file ('-' for stdin)")
    parser.add_argument("model", help="model markup, a JSON-LD file ('-' for stdin)")
    parser.add_argument("--details", action="store_true", help="also print totals and per-predicate counts")
    args = parser.parse_args(argv)
    if args.human == "-" and args.model == "-":
        parser.error("only one of the two markups can come from stdin")
    texts = []
    for path in (args.human, args.model):
        try:
            texts.append(sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            print(f"memr: cannot read {path}: {exc}", file=sys.stderr)
            return 2
    markups = []
    for path, text in zip((args.human, args.model), texts):
        try:
            markups.append(read_markup(text))
        except MarkupError as exc:
            print(f"memr: {path}: {exc}", file=sys.stderr)
            return 2
    human, model = markups
    for side, markup in (("human", human), ("model", model)):
        for note in markup.notes:
            print(f"memr: {side}: {note}", file=sys.stderr)
    score = memr(human.triples, model.triples)
    out: dict[str, Any] = score.as_dict()
    if args.details:
        out.update(
            human_total=score.human_total, model_total=score.model_total, merged_total=score.merged_total,
            human_counts=dict(sorted(score.human_counts.items())),
            model_counts=dict(sorted(score.model_counts.items())),
            merged_counts=dict(sorted(score.merged_counts.items())),
        )
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
