"""MeMR, the LLM4Schema.org comparison of two markups of one page, computed as the paper does.

For each side (human ``h``, LLM ``l``) count the objects of every predicate, ``rdf:type``
included: C_h[p], C_l[p]. The merged markup keeps, per predicate, the larger count:
C_m[p] = max(C_h[p], C_l[p]). The score of a side is its total over the merged total,
Σ C_side / Σ C_m, i.e. the generalised Jaccard of that side with the merged markup. Both sides
can score 1 (same counts) and neither is the complement of the other.

Markup is read by the project's one JSON-LD reader, :func:`udfs.schemaorg.markup.parse_markup`
(the reader the pipeline's agents and evaluation use; its docstring says which JSON-LD it
understands, and remote contexts other than schema.org's are refused, never fetched). Counting is
over the RDF triples of what it reads, so set semantics hold: a value repeated under one predicate
of one subject is one triple; every type of every entity is one ``rdf:type`` object, whether or
not the entity has properties; a nested entity is one object of its predicate (a blank node, or
its ``@id``) and its own triples count too; JSON ``null`` is no triple; literals are told apart as
JSON-LD's toRdf does (``5``, ``"5"`` and ``"5"@en`` are three objects, ``8`` and ``8.0`` one).

Command line::

    python -m udfs.scores.memr HUMAN.jsonld MODEL.jsonld     # prints {"h": ..., "l": ...}
    python -m udfs.scores.memr --counts FILE...              # one JSON line of counts per file

A file that cannot be read is one line on stderr (``memr: FILE: reason``); the other files are
still read, and the exit status is 2 when any failed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from udfs.schemaorg.markup import Markup, MarkupError, Ref, Value, parse_markup
from udfs.schemaorg.vocab import RDF_TYPE

__all__ = [
    "TYPE_PREDICATE",
    "MarkupError",
    "MemrScore",
    "markup_triples",
    "object_counts",
    "memr_from_counts",
    "memr",
    "memr_markups",
    "main",
]

# The predicate name types are counted under (the paper counts rdf:type like any predicate).
TYPE_PREDICATE = "rdf:type"
XSD = "http://www.w3.org/2001/XMLSchema#"


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


# ---- the triples of a markup -----------------------------------------------------------------


def _rdf_literal(value: Any) -> tuple[str, str | None]:
    # Lexical form and datatype as JSON-LD's toRdf gives them, so 5, 5.0, true and "5" are told
    # apart as RDF tells them apart (5 and 5.0 are the same xsd:integer).
    if isinstance(value, bool):
        return ("true" if value else "false"), XSD + "boolean"
    if isinstance(value, int):
        return str(value), XSD + "integer"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e21:
            return str(int(value)), XSD + "integer"
        return repr(value), XSD + "double"
    return str(value), None


def _object_key(value: Value) -> tuple:
    if isinstance(value, Ref):
        return ("node", value.id)
    lexical, datatype = _rdf_literal(value.value)
    if value.language is not None:
        datatype = "@" + value.language.lower()
    elif value.datatype is not None:
        datatype = value.datatype
    return ("literal", lexical, datatype)


def markup_triples(markup: Markup) -> Iterator[tuple[str, str, tuple]]:
    """The RDF triples of a parsed markup as MeMR counts them: ``(subject, predicate, object)``,
    predicates by schema.org local name (``rdf:type`` for types), objects as comparable keys
    (``("node", id)``, ``("literal", lexical form, datatype or "@lang")``)."""
    for ent in markup.entities.values():
        for t in ent.types:
            yield ent.id, TYPE_PREDICATE, ("node", t)
        for prop, values in ent.properties.items():
            predicate = TYPE_PREDICATE if prop == RDF_TYPE else prop
            for v in values:
                yield ent.id, predicate, _object_key(v)


def object_counts(triples: Markup | Iterable[tuple | Mapping[str, Any]]) -> Counter:
    """Objects per predicate, each distinct (subject, predicate, object) counted once.

    Takes a parsed :class:`~udfs.schemaorg.markup.Markup` (its RDF triples, see
    :func:`markup_triples`), tuples ``(subject, predicate, object[, entity_type])``, or rows with
    ``subject``, ``property``, ``value`` and optionally ``entity_type`` (the ``triples/`` table),
    so a curated markup, i.e. the triples the agents kept, is counted like a raw one. Rows carry
    the subject's type beside each property value rather than as rows of their own, so the
    distinct (subject, entity_type) pairs are counted as ``rdf:type`` objects (an entity with no
    property row left has no type row either), and a row's value is its text (the literal's
    datatype is not in the row)."""
    seen: set[tuple] = set()
    counts: Counter = Counter()

    def add(key: tuple) -> None:
        if key[2] is not None and key not in seen:
            seen.add(key)
            counts[key[1]] += 1

    if isinstance(triples, Markup):
        for key in markup_triples(triples):
            add(key)
        return counts
    for t in triples:
        if isinstance(t, Mapping):
            subject, predicate, obj, etype = t["subject"], t["property"], t["value"], t.get("entity_type")
        else:
            subject, predicate, obj = t[0], t[1], t[2]
            etype = t[3] if len(t) > 3 else None
        add((subject, predicate, obj))
        if etype is not None:
            add((subject, TYPE_PREDICATE, etype))
    return counts


# ---- the score -------------------------------------------------------------------------------


def memr_from_counts(human: Mapping[str, int], model: Mapping[str, int]) -> MemrScore:
    merged = {p: max(human.get(p, 0), model.get(p, 0)) for p in set(human) | set(model)}
    h_total, l_total, m_total = sum(human.values()), sum(model.values()), sum(merged.values())
    # Both markups empty: neither is more comprehensive, and 0/0 is no score.
    h = h_total / m_total if m_total else None
    l = l_total / m_total if m_total else None  # noqa: E741
    return MemrScore(h, l, h_total, l_total, m_total, dict(human), dict(model), merged)


def memr(human: Markup | Iterable, model: Markup | Iterable) -> MemrScore:
    """MeMR of two parsed markups or triple collections (see ``object_counts`` for the shapes)."""
    return memr_from_counts(object_counts(human), object_counts(model))


def memr_markups(human: str | bytes | dict | list, model: str | bytes | dict | list) -> MemrScore:
    """MeMR of two JSON-LD markups (text or parsed JSON). A markup that describes nothing (``[]``)
    has no triple; one the reader refuses raises :class:`MarkupError`."""
    return memr(parse_markup(human, allow_empty=True), parse_markup(model, allow_empty=True))


# ---- command line ----------------------------------------------------------------------------


def _read_file(path: str) -> Markup:
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise MarkupError(f"cannot read: {exc}") from None
    return parse_markup(text, allow_empty=True)


def _read_all(paths: list[str]) -> tuple[list[Markup | None], bool]:
    """Every file read, each failure one line on stderr; (markups, None where a file failed)."""
    markups: list[Markup | None] = []
    for path in paths:
        try:
            markups.append(_read_file(path))
        except MarkupError as exc:
            print(f"{PROG}: error: {path}: {exc.reason}", file=sys.stderr)
            markups.append(None)
    return markups, all(m is not None for m in markups)


PROG = "python -m udfs.scores.memr"


def main(argv: list[str] | None = None) -> int:
    from udfs.runtime.cli import ArgumentParser, HelpFormatter, json_lines_out

    parser = ArgumentParser(
        prog=PROG,
        formatter_class=HelpFormatter,
        allow_abbrev=False,
        description="MeMR of a human and a model JSON-LD markup of one page (LLM4Schema.org). "
        'Prints {"h": ..., "l": ...}; null for both when both markups have no triple. '
        "With --counts, the triple count and objects per predicate of each file instead.",
    )
    parser.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="HUMAN MODEL (JSON-LD files, '-' for stdin), or with --counts any number of files",
    )
    parser.add_argument(
        "--counts",
        action=argparse.BooleanOptionalAction,
        default=False,
        help='print {"file", "triples", "counts"} for each file, one JSON line each',
    )
    parser.add_argument(
        "--details",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="also print totals and per-predicate counts",
    )
    args = parser.parse_args(argv)
    if args.files.count("-") > 1:
        parser.error("only one markup can come from stdin")
    if not args.counts and len(args.files) != 2:
        parser.error("give two markups, HUMAN and MODEL (or --counts FILE...)")
    json_lines_out()  # a predicate or value with a lone surrogate is written back escaped, not a traceback
    markups, ok = _read_all(args.files)
    if args.counts:
        for path, markup in zip(args.files, markups):
            if markup is None:
                continue
            counts = object_counts(markup)
            line: dict[str, Any] = {
                "file": path,
                "triples": sum(counts.values()),
                "counts": dict(sorted(counts.items())),
            }
            if markup.notes:
                line["notes"] = markup.notes
            print(json.dumps(line, ensure_ascii=False))
        return 0 if ok else 2
    if not ok:
        return 2
    human, model = markups
    for side, markup in (("human", human), ("model", model)):
        for note in markup.notes:
            print(f"memr: {side}: {note}", file=sys.stderr)
    score = memr(human, model)
    out: dict[str, Any] = score.as_dict()
    if args.details:
        out.update(
            human_total=score.human_total,
            model_total=score.model_total,
            merged_total=score.merged_total,
            human_counts=dict(sorted(score.human_counts.items())),
            model_counts=dict(sorted(score.model_counts.items())),
            merged_counts=dict(sorted(score.merged_counts.items())),
        )
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
