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

Two modes (``[validity] mode``, ``--validity-mode``):

* ``schemaorg`` (default), schema.org's rules as above: an entity of several types has the union
  of their properties; only the offending triple goes (a node value takes its subtree with it); a
  property whose range includes ``URL`` takes any IRI, also one the markup describes as a typed
  node;
* ``paper``, the paper's filter exactly (:func:`paper_removals`): each type of a multi-typed
  entity closes it, an entity of an undefined type goes whole, a non-string literal no datatype of
  the range accepts is flagged, and a flagged value removes every equal leaf of the markup (a
  flagged blank node: its property, from every node). :func:`paper_triples` counts the paper's way.

Retired terms (schema.org's "attic": ``hasProductReturnPolicy``, ``ProductReturnPolicy``, ...) are
named by the release's context but absent from its vocabulary, so they have no domain or range to
check: both modes reject them like undefined terms, with their own cause (``retired term``) and a
reason that says so (:func:`retired_terms`).

Command line: ``python -m udfs.agents.validity [--engine compiled|pyshacl] [--strict]
[--validity-mode schemaorg|paper] [--compare-modes] FILE...`` prints one JSON object per line per
triple (``-`` reads standard input); ``--compare-modes`` prints the triples the modes disagree on
and a summary line with both shares.
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
from udfs.schemaorg.markup import Literal, Markup, MarkupError, Ref, Value, parse_markup, to_jsonld
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
    cause: str | None = None  # why it goes (UNDEFINED_TYPE, MULTI_TYPE, ...: below); None when valid

    def as_dict(self) -> dict[str, Any]:
        return {
            "subject": self.subject, "property": self.property, "value": self.value,
            "value_kind": self.value_kind, "entity_type": self.entity_type, "valid": self.valid,
            "rule": self.rule, "reason": self.reason, "cause": self.cause,
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
        is_iri = not v.id.startswith("_:")
        if spec.link and is_iri:
            return True  # URL in the range: an IRI is a URL, also one the markup types as a node
        target = ents.get(v.id)
        types = target.types if target is not None else ()
        if any(t in spec.classes for t in types):
            return True
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
def _values(markup: Markup):
    """Every (subject, entity, its types or [None], property, value, value kind, value as shown) in
    the order of ``markup.triples()``, which both modes' verdicts follow."""
    ents = markup.entities
    for s, ent in ents.items():
        types = ent.types or [None]
        for p, values in ent.properties.items():
            for v in values:
                if isinstance(v, Literal):
                    yield s, ent, types, p, v, "literal", v.value
                else:
                    yield s, ent, types, p, v, ("entity" if v.id in ents else "iri"), v.id


def _superseded_note(superseded: dict[str, str], t: str | None, p: str) -> str:
    return "; ".join(f"{x} is superseded by {superseded[x]}" for x in (t, p) if x in superseded)


def verdicts(markup: Markup, findings: Findings, model: ShapeModel, strict: bool = False) -> list[Verdict]:
    """One verdict per triple of ``markup.triples()``, in that order (the schemaorg reading). A
    property one type of a multi-typed entity lacks is valid when another of its types defines it
    (schema.org's union of the types' properties)."""
    out = []
    append = out.append
    superseded = model.superseded_by
    retired = retired_terms(model.release)
    for s, ent, types, p, v, vk, shown in _values(markup):
        bad_value = (s, p, v.key()) in findings.bad_values
        for t in types:
            rule: int | None = None
            cause: str | None = None
            if t is None:
                if s in findings.untyped:
                    rule, reason, cause = 1, "entity has no @type", UNTYPED
                else:
                    reason = ""
            elif (s, t) in findings.unknown_types:
                if t in retired:
                    rule, reason, cause = 1, f"{t} is retired from schema.org (the attic)", RETIRED
                else:
                    rule, reason, cause = 1, f"{t} is not a schema.org type", UNDEFINED_TYPE
            elif (s, p, t) in findings.not_allowed and not _definers(findings, ent, p):
                if p in retired:
                    rule, reason, cause = 2, f"{p} is retired from schema.org (the attic), not a property of {t}", RETIRED
                else:
                    rule, reason, cause = 2, f"{p} is not a property of {t}", UNDEFINED_PROPERTY
            elif bad_value:
                rule, reason = 3, _value_reason(markup, p, v, vk, model, strict)
                cause = DATATYPE if vk == "literal" else VALUE_TYPE
            else:
                reason = ""
                if (s, p, t) in findings.not_allowed:
                    reason = (f"{p} is not a property of {t} but of {_definers(findings, ent, p)[0]}: an "
                              "entity of several types has the union of their properties")
                sup = _superseded_note(superseded, t, p)
                if sup:
                    reason = f"{reason}; {sup}" if reason else sup
            append(Verdict(s, p, shown, vk, t, rule is None, rule, reason, cause))
    return out


def _definers(f: Findings, ent, p: str) -> list[str]:
    """The defined types of ``ent`` that define ``p`` (the union rule's evidence)."""
    return [u for u in ent.types if (ent.id, u) not in f.unknown_types and (ent.id, p, u) not in f.not_allowed]


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


# ---- the two modes ---------------------------------------------------------------------------
# schemaorg: schema.org's rules (the default); paper: the paper's filter, to reproduce its Table 7.
MODES = ("schemaorg", "paper")
# Why a triple goes, named once: verdicts (``Verdict.cause``), the paper's counting and
# ``--compare-modes`` speak these.
UNDEFINED_TYPE = "undefined type"
UNTYPED = "untyped entity"
UNDEFINED_PROPERTY = "undefined property"
RETIRED = "retired term"
MULTI_TYPE = "multi-type rule"
VALUE_TYPE = "value type"
DATATYPE = "datatype"
VALUE_STRING = "value-string removal"
BLANK_PROPERTY = "blank-node property removal"
_STRING_TYPES = (XSD + "string", RDF_LANGSTRING)
# The paper's shape generator (markup/shacl.py in its repository) gives a property whose range
# names one of these types the numeric datatypes, so a JSON number passes there: ImageObject's
# width (Distance or QuantitativeValue) keeps a JSON integer that our literal families would flag.
_PAPER_NUMERIC_RANGES = frozenset({"Number", "Float", "Integer", "QuantitativeValue", "QualitativeValue"})
_PAPER_NUMERIC_TYPES = (XSD + "integer", XSD + "double", XSD + "float")
_Removal = tuple  # (rule, cause, reason) of one removed (subject, property, value key)


@functools.lru_cache(maxsize=4)
def retired_terms(release: str) -> frozenset[str]:
    """Terms schema.org has retired (its "attic": ``hasProductReturnPolicy``, ``ProductReturnPolicy``,
    ...): named by the release's JSON-LD context, so old markup still expands, but absent from the
    release's vocabulary (``schemaorg-current-https.nt``), so they have no domain, range or place
    in the hierarchy to check against. Empty when the release bundles no context."""
    from udfs.schemaorg.namespace import context_document
    from udfs.schemaorg.vocab import load_vocabulary

    try:
        ctx = context_document(release)
    except OSError:
        return frozenset()
    v = load_vocabulary(release)
    return frozenset(k for k, d in ctx.items() if isinstance(d, dict) and d.get("@id") == f"schema:{k}"
                     and k not in v.classes and k not in v.properties and k not in v.instance_of)


def _leaf(markup: Markup, v: Value) -> bool:
    """A leaf as the paper counts: a literal or an outside IRI (a JSON string in the markup), not a
    link to a node the markup describes."""
    return isinstance(v, Literal) or v.id not in markup.entities


def _text(v: Value) -> str:
    return v.text if isinstance(v, Literal) else v.id


def counted_keys(markup: Markup) -> set[tuple[str, str, str]]:
    """The triples of ``markup`` taken as it is, as the paper counts them: one (property, value
    string, entity type or "") per leaf, links between nodes not counted. Over a markup the paper's
    filter wrote, the triples it kept; the keys of :func:`paper_triples`' rows."""
    return {(t.property, _text(t.value), t.entity_type or "") for t in markup.triples() if _leaf(markup, t.value)}


def paper_removals(markup: Markup, model: ShapeModel) -> tuple[dict[tuple, _Removal], set[str]]:
    """Every (subject, property, value key) of ``markup`` that the paper's filter removes, with the
    rule, the cause and a reason. Flags (pySHACL over closed shapes with inherited properties, the
    inference adding nothing a shape looks at):

    * an entity with an undefined type (any of its types) is removed whole;
    * a property that one of a typed entity's defined types does not define is flagged on every
      value (several types: each type's closed shape applies, no union);
    * a literal that is not a string is flagged where no datatype of the property's range accepts
      it (every range accepts ``xsd:string``: strings always pass; a range naming Number, Float,
      Integer, QuantitativeValue or QualitativeValue accepts any JSON number); an entity value of
      no range type (subtypes accepted) and an untyped blank node are flagged; an untyped IRI is a
      link;
    * untyped entities are targeted by no shape: their own values are never flagged.

    Removal, for each flagged (property, value): a blank-node value removes the property from every
    node, with all its values; any other value removes every leaf (literal or outside IRI) of the
    markup whose value string equals it, under any property, in any node. Then every node no longer
    reachable from a top-level entity goes with its values (a removed subtree). Returns the
    removals and the entities removed whole."""
    ents = markup.entities
    retired = retired_terms(model.release)
    flags: dict[tuple, _Removal] = {}
    strings: dict[str, _Removal] = {}
    blank_props: dict[str, _Removal] = {}
    dead: dict[str, _Removal] = {}  # entities removed whole
    for ent in ents.values():
        if not ent.types:
            continue
        known = [t for t in ent.types if t in model.entity_types]
        bad = [t for t in ent.types if t not in model.entity_types]
        if bad:
            why = "retired from schema.org (the attic)" if bad[0] in retired else "not a schema.org type"
            dead[ent.id] = (1, RETIRED if bad[0] in retired else UNDEFINED_TYPE,
                            f"{bad[0]} is {why}: the paper's filter removes the entity whole")
        for p, values in ent.properties.items():
            missing = [t for t in known if p not in model.allowed[t]]
            spec = model.ranges.get(p)
            for v in values:
                if missing:
                    if len(missing) < len(known):
                        other = next(t for t in known if t not in missing)
                        f = (2, MULTI_TYPE, f"{p} is not a property of {missing[0]} (it is one of {other}: "
                                            "the paper's closed shapes apply each type, no union)")
                    elif p in retired:
                        f = (2, RETIRED, f"{p} is retired from schema.org (the attic), not a property of {missing[0]}")
                    else:
                        f = (2, UNDEFINED_PROPERTY, f"{p} is not a property of {missing[0]}")
                elif known and spec is not None and spec.constrained:
                    cause = _paper_value_fault(spec, v, ents)
                    if cause is None:
                        continue
                    f = (3, cause, f"{p} expects {', '.join(spec.ranges)}; got "
                                   + (f"a JSON {type(v.value).__name__}" if isinstance(v, Literal) else _node_desc(markup, v)))
                else:
                    continue
                flags[(ent.id, p, v.key())] = f
                if isinstance(v, Ref) and v.id.startswith("_:"):
                    blank_props.setdefault(p, f)
                elif _leaf(markup, v):
                    strings.setdefault(_text(v), (f[0], f[1], f"{_text(v)[:60]!r} is the flagged value of {p} ({f[2]})"))
    removed: dict[tuple, _Removal] = {}
    for ent in ents.values():
        for p, values in ent.properties.items():
            for v in values:
                k = (ent.id, p, v.key())
                if ent.id in dead:
                    r = dead[ent.id]
                elif p in blank_props:
                    own = flags.get(k)
                    r = own if own else (blank_props[p][0], BLANK_PROPERTY,
                                         f"{p} had a flagged blank-node value ({blank_props[p][2]}): removed from every node")
                elif isinstance(v, Ref) and v.id in dead:
                    r = dead[v.id]
                elif _leaf(markup, v) and _text(v) in strings:
                    own = flags.get(k)
                    r = own if own else (strings[_text(v)][0], VALUE_STRING, strings[_text(v)][2])
                else:
                    continue
                removed[k] = r
    return _with_subtrees(markup, removed, dead), set(dead)


def _paper_value_fault(spec: RangeSpec, v: Value, ents) -> str | None:
    if isinstance(v, Literal):
        dt, _ = literal_datatype(v)
        if dt in _STRING_TYPES or (dt in _PAPER_NUMERIC_TYPES and _PAPER_NUMERIC_RANGES.intersection(spec.ranges)):
            return None
        return None if any(dt in LITERAL_FAMILIES[f][0] for f in spec.literal_families) else DATATYPE
    target = ents.get(v.id)
    types = target.types if target is not None else ()
    if any(t in spec.classes for t in types) or (not types and not v.id.startswith("_:")):
        return None
    return VALUE_TYPE


def _node_desc(markup: Markup, v: Ref) -> str:
    ent = markup.entities.get(v.id)
    if ent is not None and ent.types:
        return "an entity of type " + ", ".join(ent.types)
    return "an entity without @type" if v.id.startswith("_:") else f"IRI {v.id[:80]!r}"


def _with_subtrees(markup: Markup, removed: dict[tuple, _Removal], dead: dict[str, _Removal]) -> dict[tuple, _Removal]:
    """``removed`` plus every value of the nodes that the removal cut off from the top-level
    entities (what :func:`udfs.schemaorg.markup.to_jsonld` leaves out), each with the removal of the
    link that cut it off. Nodes that no top-level entity reached before (``@reverse`` sources)
    count as top-level."""
    ents = markup.entities

    def reach(cut: bool) -> set[str]:
        seen: set[str] = set()
        todo = [r for r in markup.roots if not (cut and r in dead)]
        if cut:
            todo += [e for e in ents if e not in before]
        while todo:
            e = todo.pop()
            if e in seen or e not in ents or (cut and e in dead):
                continue
            seen.add(e)
            for p, vs in ents[e].properties.items():
                for v in vs:
                    if isinstance(v, Ref) and v.id in ents and not (cut and (e, p, v.key()) in removed):
                        todo.append(v.id)
        return seen

    before = reach(False)  # read by reach(True): nodes never reached count as top-level
    after = reach(True)
    lost = [e for e in ents if e not in after]
    if not lost:
        return removed
    incoming: dict[str, list[tuple]] = {}
    for s, ent in ents.items():
        for p, vs in ent.properties.items():
            for v in vs:
                if isinstance(v, Ref) and v.id in ents:
                    incoming.setdefault(v.id, []).append((s, p, v.key()))
    why: dict[str, _Removal] = dict(dead)
    pending = [e for e in lost if e not in why]
    while pending:  # causes along chains of cut-off nodes, one hop per pass
        for e in pending:
            for link in incoming.get(e, ()):
                if link in removed or link[0] in why:
                    why[e] = removed.get(link) or why[link[0]]
                    break
        still = [e for e in pending if e not in why]
        if len(still) == len(pending):  # a pass that found no cause: the rest have none
            break
        pending = still
    out = dict(removed)
    for e in lost:
        r = why.get(e, (2, UNDEFINED_PROPERTY, "cut off from the top-level entities"))
        for p, vs in ents[e].properties.items():
            for v in vs:
                out.setdefault((e, p, v.key()), (r[0], r[1], f"removed with its parent node: {r[2]}"))
    return out


def schemaorg_removals(markup: Markup, f: Findings, model: ShapeModel) -> dict[tuple, _Removal]:
    """What the default (schemaorg) reading removes from ``markup``: each value no type of its
    subject accepts (the union of a multi-typed entity's properties), and the subtrees this cuts
    off, as :func:`to_jsonld` writes the cleaned markup."""
    ents = markup.entities
    retired = retired_terms(model.release)
    removed: dict[tuple, _Removal] = {}
    for s, ent in ents.items():
        for p, values in ent.properties.items():
            for v in values:
                k = (s, p, v.key())
                if not ent.types:
                    if s in f.untyped:
                        removed[k] = (1, UNTYPED, "entity has no @type")
                elif k in f.bad_values:
                    removed[k] = (3, DATATYPE if isinstance(v, Literal) else VALUE_TYPE,
                                  f"{p}: value of an unexpected type")
                elif not any((s, t) not in f.unknown_types and (s, p, t) not in f.not_allowed for t in ent.types):
                    known = [t for t in ent.types if (s, t) not in f.unknown_types]
                    if not known:
                        t = ent.types[0]
                        removed[k] = (1, RETIRED if t in retired else UNDEFINED_TYPE, f"{t} is not a schema.org type")
                    else:
                        removed[k] = (2, RETIRED if p in retired else UNDEFINED_PROPERTY,
                                      f"{p} is not a property of {'/'.join(known)}")
    return _with_subtrees(markup, removed, {})


def removal_verdicts(markup: Markup, removed: dict[tuple, _Removal], model: ShapeModel) -> list[Verdict]:
    """One verdict per triple of ``markup.triples()``: invalid exactly when ``removed`` holds it."""
    out = []
    superseded = model.superseded_by
    for s, ent, types, p, v, vk, shown in _values(markup):
        r = removed.get((s, p, v.key()))
        for t in types:
            if r is not None:
                out.append(Verdict(s, p, shown, vk, t, False, r[0], r[2], r[1]))
            else:
                out.append(Verdict(s, p, shown, vk, t, True, None, _superseded_note(superseded, t, p)))
    return out


def paper_triples(markup: Markup, verdicts: Sequence[Verdict]) -> list[dict[str, Any]]:
    """The triples as the paper counts them, one dict each: a leaf (property, value string) with
    its entity type (links between nodes, ``@type`` and ``@id`` not counted), identical
    (property, value, type) strings once; ``valid`` when at least one occurrence is valid (the
    filtered markup still holds that string), otherwise the rule, cause and reason of the first."""
    out: dict[tuple, dict[str, Any]] = {}
    for t, v in zip(markup.triples(), verdicts):
        if not _leaf(markup, t.value):
            continue
        key = (t.property, _text(t.value), t.entity_type or "")
        row = out.get(key)
        if row is None:
            out[key] = {"property": t.property, "value": _text(t.value), "entity_type": t.entity_type,
                        "valid": v.valid, "rule": v.rule, "cause": v.cause, "reason": v.reason}
        elif v.valid and not row["valid"]:
            row.update(valid=True, rule=None, cause=None, reason=v.reason)
    return list(out.values())


@dataclass
class ModeComparison:
    """Both readings of a set of markups, counted the paper's way (summed over markups)."""

    markups: int = 0
    triples: int = 0
    kept: dict[str, int] = field(default_factory=lambda: {m: 0 for m in MODES})
    # (mode that removes the triple, cause) -> triples on which the modes disagree
    disagreements: dict[tuple[str, str], int] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)  # each disagreeing triple

    def share(self, mode: str) -> float | None:
        return self.kept[mode] / self.triples if self.triples else None

    def add(self, markup: Markup, findings: Findings, model: ShapeModel, name: str = "") -> None:
        """Count one markup; ``findings`` are the schemaorg reading's (any engine, any strictness)."""
        paper_removed, _dead = paper_removals(markup, model)
        rows = {m: {(r["property"], r["value"], r["entity_type"] or ""): r
                    for r in paper_triples(markup, removal_verdicts(markup, rem, model))}
                for m, rem in (("paper", paper_removed), ("schemaorg", schemaorg_removals(markup, findings, model)))}
        self.markups += 1
        self.triples += len(rows["paper"])
        for mode in MODES:
            self.kept[mode] += sum(r["valid"] for r in rows[mode].values())
        for key, p in rows["paper"].items():
            s = rows["schemaorg"][key]
            if p["valid"] == s["valid"]:
                continue
            loser = "paper" if not p["valid"] else "schemaorg"
            cause = rows[loser][key]["cause"]
            self.disagreements[(loser, cause)] = self.disagreements.get((loser, cause), 0) + 1
            self.rows.append({"file": name, "property": key[0], "value": key[1], "entity_type": p["entity_type"],
                              "removed_by": loser, "cause": cause, "reason": rows[loser][key]["reason"]})

    def summary(self) -> dict[str, Any]:
        return {"markups": self.markups, "triples": self.triples,
                **{f"kept_{m}": self.kept[m] for m in MODES},
                **{f"share_{m}": round(self.share(m), 4) if self.triples else None for m in MODES},
                "disagreements": {f"removed by {m}: {c}": n for (m, c), n in sorted(self.disagreements.items())}}


# ---- entry points ----------------------------------------------------------------------------
class ValidityAgent:
    """Validate markups in one mode (``schemaorg`` or ``paper``) with one engine, strict or lenient,
    against the shapes of one schema.org release (``vocab``). Their values are conf/pipeline.toml's
    ``[validity]`` (``udfs.runtime.config.load_config().validity``); this module holds no default of
    its own. The paper mode is the paper's filter (:func:`paper_removals`) computed from the shape
    model: ``engine`` and ``strict`` only shape the schemaorg reading."""

    def __init__(self, engine: str, strict: bool, vocab: str | None, mode: str):
        if engine not in ENGINES:
            raise ValueError(f"unknown engine {engine!r}: one of {', '.join(ENGINES)}")
        if mode not in MODES:
            raise ValueError(f"unknown validity mode {mode!r}: one of {', '.join(MODES)}")
        self.model = build_model(vocab)
        self.strict = strict
        self.engine = engine
        self.mode = mode
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
        if self.mode == "paper":
            for m in parsed:
                removed, dead = paper_removals(m, self.model)
                out.append(ValidityResult(m, removal_verdicts(m, removed, self.model), to_jsonld(
                    m, keep=lambda s, p, v, removed=removed: (s, p, v.key()) not in removed,
                    keep_type=lambda s, t, dead=dead: s not in dead)))
            return out
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
def agent(engine: str, strict: bool, vocab: str | None, mode: str) -> ValidityAgent:
    return ValidityAgent(engine, strict, vocab, mode)


def validate(markup: str | bytes | dict | list | Markup, engine: str, strict: bool,
             vocab: str | None, mode: str) -> ValidityResult:
    """Verdicts and cleaned markup of one JSON-LD markup (text or parsed JSON). Fetches nothing."""
    return agent(engine, strict, vocab, mode).validate(markup)


def main(argv: list[str] | None = None) -> int:
    from udfs.runtime.cli import HelpFormatter, check_config_value, fail
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
    ap.add_argument("--validity-mode", choices=MODES, default=conf.mode,
                    help="schemaorg: schema.org's rules, one line per (subject, property, value, entity "
                    "type); paper: the paper's filter, one line per triple as the paper counts them "
                    "(the share of valid lines is its Table 7 share)")
    ap.add_argument("--compare-modes", action=argparse.BooleanOptionalAction, default=False,
                    help="read the files in both modes, counted the paper's way: one line per triple the "
                    "modes disagree on (which mode removes it, and why), then one summary line with "
                    "both shares and the disagreements by cause")
    ap.add_argument("--cleaned", action=argparse.BooleanOptionalAction, default=False,
                    help="print one line per file with the markup without its invalid property values instead")
    args = ap.parse_args(argv)
    if args.compare_modes and args.cleaned:
        fail(prog, "--compare-modes and --cleaned exclude each other")
    va = ValidityAgent(args.engine, args.strict, args.vocab, args.validity_mode)
    comparison = ModeComparison() if args.compare_modes else None
    from udfs.runtime.cli import error, json_lines_out

    json_lines_out()  # a lone surrogate escaped in a file is written back, not a traceback
    status = 0
    for name in args.files:
        try:
            text = sys.stdin.read() if name == "-" else open(name, encoding="utf-8").read()
            if comparison is not None:
                m = parse_markup(text)
                seen = len(comparison.rows)
                comparison.add(m, va.findings_many([m])[0], va.model, name)
                for row in comparison.rows[seen:]:
                    print(json.dumps(row, ensure_ascii=False))
                continue
            res = va.validate(text)
        except (OSError, ValueError, RecursionError) as e:  # MarkupError and UnicodeDecodeError included
            # one bad file is a line on each stream (the JSON row keeps stdout one record per
            # file) and the others are still read; the exit status says one failed
            reason = e.reason if isinstance(e, MarkupError) else f"{type(e).__name__}: {e}"
            error(prog, f"{name}: {reason}")
            print(json.dumps({"file": name, "error": reason}, ensure_ascii=False))
            status = 1
            continue
        if args.cleaned:
            print(json.dumps({"file": name, "markup": res.cleaned}, ensure_ascii=False))
        elif va.mode == "paper":
            for row in paper_triples(res.markup, res.verdicts):
                print(json.dumps({"file": name, **row}, ensure_ascii=False))
        else:
            for v in res.verdicts:
                print(json.dumps({"file": name, **v.as_dict()}, ensure_ascii=False))
    if comparison is not None:
        print(json.dumps({"summary": comparison.summary()}, ensure_ascii=False))
    return status


if __name__ == "__main__":
    sys.exit(main())
