"""The validity agent: which property values of a markup break schema.org's rules.

One verdict per (subject, property, value, entity type) triple of a markup (see
:meth:`udfs.schemaorg.markup.Markup.triples`), with the rule it breaks and a reason:

1. the entity type is defined in schema.org (an untyped subject breaks it too);
2. the property is defined for the type or inherited from one of its ancestors;
3. the value matches the property's expected types (subtypes of a range type included).

Values are read *leniently* by default, as in the paper's runs (a literal is never rejected, an
untyped IRI is a link; only entity values of the wrong type and untyped blank entities are);
``strict=True`` reads them strictly (literals must match a datatype of the range, enumeration
members must be IRIs). ``shapes/README.md`` details both readings.

Two engines give the same findings: ``pyshacl`` validates an RDF view of the markup against the
generated shapes (``shapes/schemaorg-<release>[.strict].shapes.ttl``), the reference; ``compiled``
evaluates the same shape model (:func:`udfs.schemaorg.shapes.build_model`) from in-memory indexes, for
the pipeline. Both report *findings*; one shared function turns findings into verdicts and the
cleaned markup (a property value is kept when it is valid for at least one of its subject's types).

Command line: ``python -m udfs.agents.validity [--engine compiled|pyshacl] [--strict] FILE...`` prints
one JSON object per line per triple (``-`` reads standard input).
"""
from __future__ import annotations

import argparse
import functools
import json
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Sequence
from urllib.parse import quote

from udfs.schemaorg.namespace import SCHEMA_NS
from udfs.schemaorg.shapes import LITERAL_FAMILIES, SHP, RangeSpec, ShapeModel, build_model, default_path, to_turtle
from udfs.schemaorg.markup import Literal, Markup, MarkupError, Value, parse_markup, to_jsonld
from udfs.schemaorg.vocab import schema_local_name

XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_LANGSTRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
_LANG_TAG = re.compile(r"^[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*$")
_PATTERNS = {fam: re.compile(p) for fam, (_, p) in LITERAL_FAMILIES.items() if p}
ENGINES = ("compiled", "pyshacl")


@dataclass(slots=True)
class Verdict:
    subject: str
    property: str
    value: Any  # the literal's JSON value, or the referenced node's id
    value_kind: str  # "literal" | "entity" (a node described in the markup) | "iri" (an outside IRI)
    entity_type: str | None
    valid: bool
    rule: int | None  # 1 type, 2 property, 3 value; None when valid
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "subject": self.subject, "property": self.property, "value": self.value,
            "value_kind": self.value_kind, "entity_type": self.entity_type, "valid": self.valid,
            "rule": self.rule, "reason": self.reason,
        }


@dataclass
class Findings:
    """What an engine found wrong in one markup, in engine-neutral terms."""

    untyped: set[str] = field(default_factory=set)  # subjects without a type
    unknown_types: set[tuple[str, str]] = field(default_factory=set)  # (subject, type)
    not_allowed: set[tuple[str, str, str]] = field(default_factory=set)  # (subject, property, type)
    bad_values: set[tuple[str, str, tuple]] = field(default_factory=set)  # (subject, property, value key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Findings) and self.__dict__ == other.__dict__


@dataclass
class ValidityResult:
    markup: Markup
    verdicts: list[Verdict]
    cleaned: dict | None  # the markup without its invalid property values (None: nothing left)

    @property
    def n_invalid(self) -> int:
        return sum(not v.valid for v in self.verdicts)


# ---- shared reading of literals and nodes ----------------------------------------------------
def literal_datatype(lit: Literal) -> tuple[str, str | None]:
    """(RDF datatype IRI, language) of a markup literal, as both engines see it."""
    if lit.datatype:
        return lit.datatype, None
    if isinstance(lit.value, bool):
        return XSD + "boolean", None
    if isinstance(lit.value, int):
        return XSD + "integer", None
    if isinstance(lit.value, float):
        return XSD + "double", None
    if lit.language and _LANG_TAG.match(lit.language):
        return RDF_LANGSTRING, lit.language
    return XSD + "string", None


def _schema_member(node_id: str) -> str | None:
    local = schema_local_name(node_id)
    return quote(local, safe="") if local else None


def value_kind(markup: Markup, v: Value) -> str:
    if isinstance(v, Literal):
        return "literal"
    return "entity" if v.id in markup.entities else "iri"


# ---- compiled engine -------------------------------------------------------------------------
class CompiledChecker:
    """The shape model as set lookups: no RDF, no graph, one pass over the markup."""

    def __init__(self, model: ShapeModel, strict: bool):
        self.model = model
        self.strict = strict
        self._types = model.entity_types
        self._allowed = model.allowed
        self._ranges = model.ranges
        self._members = {p: frozenset(s.members) for p, s in model.ranges.items()}

    def findings(self, markup: Markup) -> Findings:
        f = Findings()
        ents = markup.entities
        for ent in ents.values():
            if not ent.types:
                if ent.properties:
                    f.untyped.add(ent.id)
                continue
            known = []
            for t in ent.types:
                if t in self._types:
                    known.append(t)
                else:
                    f.unknown_types.add((ent.id, t))
            for p in ent.properties:
                for t in known:
                    if p not in self._allowed[t]:
                        f.not_allowed.add((ent.id, p, t))
        # Values are judged per property whatever the subject's types (the verdicts give rules 1
        # and 2 precedence), as the per-property shapes do.
        for ent in ents.values():
            for p, values in ent.properties.items():
                spec = self._ranges.get(p)
                if spec is None or not spec.constrained:
                    continue
                for v in values:
                    if not self._value_ok(p, spec, v, ents):
                        f.bad_values.add((ent.id, p, v.key()))
        return f

    def _value_ok(self, p: str, spec: RangeSpec, v: Value, ents) -> bool:
        if isinstance(v, Literal):
            if not self.strict:
                return True
            dt, _ = literal_datatype(v)
            for fam in spec.literal_families:
                dts, _pattern = LITERAL_FAMILIES[fam]
                if dt in dts and (fam not in _PATTERNS or _PATTERNS[fam].search(v.text)):
                    return True
            return False
        target = ents.get(v.id)
        types = target.types if target is not None else ()
        if any(t in spec.classes for t in types):
            return True
        is_iri = not v.id.startswith("_:")
        if not types and is_iri and (spec.link or not self.strict):
            return True
        if self.strict and is_iri and _schema_member(v.id) in self._members[p]:
            return True
        return False


# ---- pySHACL engine --------------------------------------------------------------------------
@functools.lru_cache(maxsize=4)
def _shapes_graph(release: str, strict: bool):
    import rdflib

    path = default_path(release, strict)
    g = rdflib.Graph()
    if path.exists():
        g.parse(path, format="turtle")
    else:  # a release without a committed file: the same text, generated in memory
        g.parse(data=to_turtle(build_model(release), strict=strict), format="turtle")
    return g


@functools.lru_cache(maxsize=4)
def _hierarchy_graph(release: str, strict: bool):
    """The shapes file's shp:subTypeOf / shp:memberOf triples, which the data graph must hold for
    the shp:isa-* and shp:member-* shapes to walk."""
    import rdflib

    shapes = _shapes_graph(release, strict)
    g = rdflib.Graph()
    for pred in ("subTypeOf", "memberOf"):
        for t in shapes.triples((None, rdflib.URIRef(SHP + pred), None)):
            g.add(t)
    return g


class PyShaclChecker:
    """The reference: the markup as an RDF graph, validated by pySHACL against the shapes file.

    ``findings_many`` merges several markups into one data graph (each markup's nodes renamed
    apart) because pySHACL's cost is dominated by a per-call walk over all ~2,400 shapes; the
    per-markup renaming keeps every result attributable to one markup and one triple.
    """

    def __init__(self, model: ShapeModel, strict: bool):
        self.model = model
        self.strict = strict
        self.shapes = _shapes_graph(model.release, strict)
        self.hierarchy = _hierarchy_graph(model.release, strict)

    def findings(self, markup: Markup) -> Findings:
        return self.findings_many([markup])[0]

    def findings_many(self, markups: Sequence[Markup]) -> list[Findings]:
        # A markup that describes a schema.org IRI (the one node id not renamed apart) is validated
        # alone, so two markups can never describe the same node.
        shared, alone = [], []
        for i, m in enumerate(markups):
            (alone if any(schema_local_name(e) for e in m.entities) else shared).append(i)
        out: list[Findings | None] = [None] * len(markups)
        groups = ([shared] if shared else []) + [[i] for i in alone]
        for group in groups:
            for i, f in zip(group, self._run([markups[i] for i in group])):
                out[i] = f
        return out  # type: ignore[return-value]

    def _run(self, markups: Sequence[Markup]) -> list[Findings]:
        import rdflib
        from pyshacl import validate

        RDF_TYPE = rdflib.RDF.type
        g = rdflib.Graph()
        # pySHACL's ont_graph mixing copies RDFS/OWL axioms only, so the hierarchy goes in directly.
        for t in self.hierarchy:
            g.add(t)
        nodes: dict[Any, tuple[int, str]] = {}  # data-graph node -> (markup, entity id)
        preds: dict[Any, str] = {}
        types: dict[Any, str] = {}
        values: dict[tuple, tuple] = {}  # (s, p, o) terms -> value key

        for i, m in enumerate(markups):
            def node(node_id: str, i=i):
                if node_id.startswith("_:"):
                    term = rdflib.BNode(f"m{i}b{quote(node_id[2:], safe='')}")
                else:
                    local = _schema_member(node_id)
                    term = rdflib.URIRef(SCHEMA_NS + local if local else f"urn:llm4schema:m{i}:{quote(node_id, safe='')}")
                nodes[term] = (i, node_id)
                return term

            for ent in m.entities.values():
                s = node(ent.id)
                for t in ent.types:
                    tt = _term_iri(rdflib, t)
                    types[tt] = t
                    g.add((s, RDF_TYPE, tt))
                for p, vs in ent.properties.items():
                    pt = _term_iri(rdflib, p)
                    preds[pt] = p
                    for v in vs:
                        if isinstance(v, Literal):
                            dt, lang = literal_datatype(v)
                            lex = v.text if not isinstance(v.value, (int, float)) or isinstance(v.value, bool) else v.value
                            o = rdflib.Literal(lex, lang=lang) if lang else rdflib.Literal(lex, datatype=rdflib.URIRef(dt))
                        else:
                            o = node(v.id)
                        values[(s, pt, o)] = v.key()
                        g.add((s, pt, o))

        _conforms, report, _text = validate(
            g, shacl_graph=self.shapes, advanced=True, inference="none", meta_shacl=False,
            abort_on_first=False, allow_warnings=False,
        )
        found = [Findings() for _ in markups]
        unknown: set[str] = set()  # a type is unknown whoever uses it: reported once per type
        KNOWN_TYPE = rdflib.URIRef(SHP + "known-type")
        SH = rdflib.Namespace("http://www.w3.org/ns/shacl#")
        for r in report.subjects(RDF_TYPE, SH.ValidationResult):
            comp = report.value(r, SH.sourceConstraintComponent)
            focus = report.value(r, SH.focusNode)
            path = report.value(r, SH.resultPath)
            val = report.value(r, SH.value)
            shape = report.value(r, SH.sourceShape)
            if comp == SH.InConstraintComponent and shape == KNOWN_TYPE:
                unknown.add(types[val])
                continue
            i, sid = nodes[focus]
            f = found[i]
            if comp == SH.MinCountConstraintComponent and path == RDF_TYPE:
                f.untyped.add(sid)
            elif comp == SH.ClosedConstraintComponent:
                f.not_allowed.add((sid, preds[path], str(shape).removeprefix(SHP + "t-")))
            elif comp == SH.OrConstraintComponent:
                f.bad_values.add((sid, preds[path], values[(focus, path, val)]))
            else:
                raise RuntimeError(f"unexpected pySHACL result {comp} on {focus} {path} {val}")
        for i, m in enumerate(markups):
            for ent in m.entities.values():
                found[i].unknown_types.update((ent.id, t) for t in ent.types if t in unknown)
        return found


def _term_iri(rdflib, name: str):
    if ":" in name:
        return rdflib.URIRef(quote(name, safe=":/?#[]@!$&'()*+,;=%-._~"))
    return rdflib.URIRef(SCHEMA_NS + quote(name, safe=""))


# ---- verdicts --------------------------------------------------------------------------------
def verdicts(markup: Markup, findings: Findings, model: ShapeModel, strict: bool = False) -> list[Verdict]:
    """One verdict per triple of ``markup.triples()``, in that order."""
    out = []
    append = out.append
    superseded = model.superseded_by
    ents = markup.entities
    for s, ent in ents.items():
        types = ent.types or [None]
        for p, values in ent.properties.items():
            for v in values:
                if isinstance(v, Literal):
                    vk, shown = "literal", v.value
                else:
                    vk, shown = ("entity" if v.id in ents else "iri"), v.id
                bad_value = (s, p, v.key()) in findings.bad_values
                for t in types:
                    rule: int | None = None
                    if t is None:
                        if s in findings.untyped:
                            rule, reason = 1, "entity has no @type"
                        else:
                            reason = ""
                    elif (s, t) in findings.unknown_types:
                        rule, reason = 1, f"{t} is not a schema.org type"
                    elif (s, p, t) in findings.not_allowed:
                        rule, reason = 2, f"{p} is not a property of {t}"
                    elif bad_value:
                        rule, reason = 3, _value_reason(markup, p, v, vk, model, strict)
                    elif t in superseded or p in superseded:
                        reason = "; ".join(f"{x} is superseded by {superseded[x]}" for x in (t, p) if x in superseded)
                    else:
                        reason = ""
                    append(Verdict(s, p, shown, vk, t, rule is None, rule, reason))
    return out


def _value_reason(markup: Markup, p: str, v: Value, vk: str, model: ShapeModel, strict: bool) -> str:
    expects = ", ".join(model.ranges[p].ranges)
    if vk == "literal":
        got = f"literal {v.text[:60]!r}"
    else:
        ent = markup.entities.get(v.id)
        if ent is not None and ent.types:
            got = "an entity of type " + ", ".join(ent.types)
        elif v.id.startswith("_:"):
            got = "an entity without @type"
        else:
            got = f"IRI {v.id[:80]!r}" + (" (not a member of the expected enumerations)" if strict else "")
    return f"{p} expects {expects}; got {got}"


# ---- entry points ----------------------------------------------------------------------------
class ValidityAgent:
    """Validate markups with one engine, strict or lenient, against the shapes of one schema.org
    release (``vocab``). Their values are conf/pipeline.toml's ``[validity]``
    (``udfs.runtime.config.load_config().validity``); this module holds no default of its own."""

    def __init__(self, engine: str, strict: bool, vocab: str | None):
        if engine not in ENGINES:
            raise ValueError(f"unknown engine {engine!r}: one of {', '.join(ENGINES)}")
        self.model = build_model(vocab)
        self.strict = strict
        self.engine = engine
        self.checker = CompiledChecker(self.model, strict) if engine == "compiled" else PyShaclChecker(self.model, strict)

    def findings_many(self, markups: Sequence[Markup]) -> list[Findings]:
        if isinstance(self.checker, PyShaclChecker):
            return self.checker.findings_many(markups)
        return [self.checker.findings(m) for m in markups]

    def validate(self, markup: str | bytes | dict | list | Markup) -> ValidityResult:
        return self.validate_many([markup])[0]

    def validate_many(self, markups: Sequence[str | bytes | dict | list | Markup]) -> list[ValidityResult]:
        """Raises MarkupError for the first markup that cannot be read."""
        parsed = [m if isinstance(m, Markup) else parse_markup(m) for m in markups]
        out = []
        for m, f in zip(parsed, self.findings_many(parsed)):
            vs = verdicts(m, f, self.model, self.strict)
            out.append(ValidityResult(m, vs, _cleaned(m, f)))
        return out


def _cleaned(markup: Markup, f: Findings) -> dict | None:
    """Keep a property value when at least one of its subject's types accepts it, and drop the
    types schema.org does not define (an entity left with nothing goes)."""
    ents = markup.entities

    def keep(s: str, p: str, v: Value) -> bool:
        ent = ents[s]
        if not ent.types:
            return s not in f.untyped
        if (s, p, v.key()) in f.bad_values:
            return False
        return any((s, t) not in f.unknown_types and (s, p, t) not in f.not_allowed for t in ent.types)

    return to_jsonld(markup, keep=keep, keep_type=lambda s, t: (s, t) not in f.unknown_types)


@functools.lru_cache(maxsize=8)
def agent(engine: str, strict: bool, vocab: str | None) -> ValidityAgent:
    return ValidityAgent(engine, strict, vocab)


def validate(markup: str | bytes | dict | list | Markup, engine: str, strict: bool,
             vocab: str | None) -> ValidityResult:
    """Verdicts and cleaned markup of one JSON-LD markup (text or parsed JSON). Fetches nothing."""
    return agent(engine, strict, vocab).validate(markup)


def main(argv: list[str] | None = None) -> int:
    from udfs.runtime.cli import HelpFormatter, check_config_value
    from udfs.runtime.config import ConfigError, exit_on_config_error, load_config
    from udfs.runtime.paths import DEFAULT_CONF

    prog = "python -m udfs.agents.validity"
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    pre.add_argument("--config", default=str(DEFAULT_CONF))
    known, _ = pre.parse_known_args(argv)
    check_config_value(prog, known.config)
    try:
        conf = load_config(known.config).validity
    except ConfigError as exc:
        exit_on_config_error(prog, exc)
    ap = argparse.ArgumentParser(
        prog=prog, formatter_class=HelpFormatter, allow_abbrev=False,
        description="Validity verdicts of JSON-LD markups: one JSON object per line per "
        "(subject, property, value, entity type) triple. A markup without @context is read as "
        "schema.org; remote contexts are never fetched.",
    )
    ap.add_argument("files", nargs="+", metavar="FILE", help="JSON-LD files ('-' = standard input)")
    ap.add_argument("--config", default=str(DEFAULT_CONF),
                    help="pipeline configuration (TOML) whose [validity] gives the defaults")
    ap.add_argument("--engine", choices=ENGINES, default=conf.engine,
                    help="compiled (fast, the pipeline's) or pyshacl (the reference)")
    ap.add_argument("--strict", action=argparse.BooleanOptionalAction, default=conf.strict,
                    help="strict reading of literal values (false: lenient, the paper's)")
    ap.add_argument("--vocab", default=conf.vocab, help="schema.org release")
    ap.add_argument("--cleaned", action=argparse.BooleanOptionalAction, default=False,
                    help="print one line per file with the markup without its invalid property values instead")
    args = ap.parse_args(argv)
    va = ValidityAgent(args.engine, args.strict, args.vocab)
    status = 0
    for name in args.files:
        try:
            text = sys.stdin.read() if name == "-" else open(name, encoding="utf-8").read()
            res = va.validate(text)
        except (OSError, UnicodeDecodeError, MarkupError) as e:
            reason = e.reason if isinstance(e, MarkupError) else f"{type(e).__name__}: {e}"
            print(json.dumps({"file": name, "error": reason}, ensure_ascii=False))
            status = 1
            continue
        if args.cleaned:
            print(json.dumps({"file": name, "markup": res.cleaned}, ensure_ascii=False))
            continue
        for v in res.verdicts:
            print(json.dumps({"file": name, **v.as_dict()}, ensure_ascii=False))
    return status


if __name__ == "__main__":
    sys.exit(main())
