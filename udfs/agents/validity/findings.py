"""What the validity checks find and the verdicts made of it, shared by both engines and both modes.

An engine (:mod:`udfs.agents.validity.engines`) reports :class:`Findings`; :func:`verdicts` turns
them into one :class:`Verdict` per triple (the schemaorg reading) and :func:`cleaned` into the
markup without its invalid values. The paper's filter (:mod:`udfs.agents.validity.paper`) reports
removals instead; :func:`removal_verdicts` turns them into the same verdicts. The causes a triple
goes for are named here once.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from udfs.schemaorg.markup import Literal, Markup, Value, to_jsonld
from udfs.schemaorg.shapes import ShapeModel
from udfs.schemaorg.vocab import schema_local_name

XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_LANGSTRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
_LANG_TAG = re.compile(r"^[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*$")

# The two modes: schemaorg, schema.org's rules (the default); paper, the paper's filter, to reproduce its Table 7.
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
Removal = tuple  # (rule, cause, reason) of one removed (subject, property, value key)


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
            "subject": self.subject,
            "property": self.property,
            "value": self.value,
            "value_kind": self.value_kind,
            "entity_type": self.entity_type,
            "valid": self.valid,
            "rule": self.rule,
            "reason": self.reason,
            "cause": self.cause,
        }


@dataclass
class Findings:
    """What an engine found wrong in one markup, in engine-neutral terms."""

    untyped: set[str] = field(default_factory=set)  # subjects without a type
    unknown_types: set[tuple[str, str]] = field(default_factory=set)  # (subject, type)
    not_allowed: set[tuple[str, str, str]] = field(default_factory=set)  # (subject, property, type)
    bad_values: set[tuple[str, str, tuple]] = field(default_factory=set)  # (subject, property, value key)
    # schema.org's Action annotations (``query-input``): (subject, property, value key) -> why it is
    # read as one (valid) or why it is not a PropertyValueSpecification (invalid); the schemaorg
    # reading only (:func:`action_annotations`)
    annotations: dict[tuple[str, str, tuple], tuple[bool, str]] = field(default_factory=dict)

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


def schema_member(node_id: str) -> str | None:
    local = schema_local_name(node_id)
    return quote(local, safe="") if local else None


def value_kind(markup: Markup, v: Value) -> str:
    if isinstance(v, Literal):
        return "literal"
    return "entity" if v.id in markup.entities else "iri"


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
            elif (s, p, v.key()) in findings.annotations:
                ok, reason = findings.annotations[(s, p, v.key())]
                if not ok:
                    rule, cause = 3, DATATYPE if vk == "literal" else VALUE_TYPE
            elif (s, p, t) in findings.not_allowed and not _definers(findings, ent, p):
                if p in retired:
                    rule, reason, cause = (
                        2,
                        f"{p} is retired from schema.org (the attic), not a property of {t}",
                        RETIRED,
                    )
                else:
                    rule, reason, cause = 2, f"{p} is not a property of {t}", UNDEFINED_PROPERTY
            elif bad_value:
                rule, reason = 3, _value_reason(markup, p, v, vk, model, strict)
                cause = DATATYPE if vk == "literal" else VALUE_TYPE
            else:
                reason = ""
                if (s, p, t) in findings.not_allowed:
                    reason = (
                        f"{p} is not a property of {t} but of {_definers(findings, ent, p)[0]}: an "
                        "entity of several types has the union of their properties"
                    )
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
    return frozenset(
        k
        for k, d in ctx.items()
        if isinstance(d, dict)
        and d.get("@id") == f"schema:{k}"
        and k not in v.classes
        and k not in v.properties
        and k not in v.instance_of
    )


# ---- schema.org's Action annotations ---------------------------------------------------------------
# https://schema.org/docs/actions.html: "<property>-input" / "<property>-output" on an Action
# annotate the action's property <property> with a PropertyValueSpecification, or with its text
# shorthand ("required name=search_term_string"), whose words are the HTML form attributes below.
ANNOTATION = re.compile(r"^(?P<property>[A-Za-z][A-Za-z0-9]*)-(?P<direction>input|output)$")
SHORTHAND_FLAGS = frozenset({"required", "readonly", "multiple"})
SHORTHAND_KEYS = frozenset({"name", "maxlength", "minlength", "pattern", "min", "max", "step", "value"})
PROPERTY_VALUE_SPECIFICATION = "PropertyValueSpecification"


def shorthand_problem(text: str) -> str | None:
    """Why ``text`` is not the text shorthand of a PropertyValueSpecification (None: it is): words
    separated by spaces, each a flag (``required``) or ``key=value`` with a form attribute's name."""
    words = text.split()
    if not words:
        return "an empty shorthand"
    for w in words:
        key, eq, value = w.partition("=")
        if eq and key.lower() in SHORTHAND_KEYS and value:
            continue
        if not eq and w.lower() in SHORTHAND_FLAGS:
            continue
        return f"{w[:40]!r} is not a word of the PropertyValueSpecification shorthand"
    return None


def _is_a(model: ShapeModel, t: str, ancestor: str) -> bool:
    """Whether entity type ``t`` is ``ancestor`` or one of its subtypes."""
    seen, todo = set(), [t]
    while todo:
        u = todo.pop()
        if u == ancestor:
            return True
        if u not in seen:
            seen.add(u)
            todo.extend(model.supertypes.get(u, ()))
    return False


def action_annotations(markup: Markup, f: Findings, model: ShapeModel) -> Findings:
    """``f`` with schema.org's Action annotations read as such (the schemaorg reading): a value of
    ``<property>-input`` or ``<property>-output`` that an engine found undefined on an entity one
    of whose types is an Action defining ``<property>`` is valid when it is a
    PropertyValueSpecification (an entity of that type, or its text shorthand), and invalid, with
    the reason, otherwise. Other findings are left as they are."""
    ents = markup.entities
    for s, ent, types, p, v, vk, _shown in _values(markup):
        m = ANNOTATION.match(p)
        if m is None or not any((s, p, t) in f.not_allowed for t in types):
            continue
        base = m["property"]
        actions = [t for t in types if t and _is_a(model, t, "Action") and base in model.allowed.get(t, ())]
        if not actions:
            continue
        if vk == "literal":
            why = shorthand_problem(v.text) if isinstance(v.value, str) else "not text"
        elif vk == "entity" and PROPERTY_VALUE_SPECIFICATION in (ents[v.id].types or []):
            why = None
        else:
            why = "not a PropertyValueSpecification"
        if why is None:
            f.annotations[(s, p, v.key())] = (
                True,
                f"schema.org Action annotation of {base} on {actions[0]} (a PropertyValueSpecification)",
            )
        else:
            f.annotations[(s, p, v.key())] = (
                False,
                f"{p}, an Action annotation of {base}, expects a PropertyValueSpecification or its text "
                f"shorthand; got {why}",
            )
    return f


def removal_verdicts(markup: Markup, removed: dict[tuple, Removal], model: ShapeModel) -> list[Verdict]:
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


def cleaned(markup: Markup, f: Findings) -> dict | None:
    """The markup as the schemaorg reading cleans it: keep a property value when at least one of
    its subject's types accepts it, and drop the types schema.org does not define (an entity left
    with nothing goes)."""
    ents = markup.entities

    def keep(s: str, p: str, v: Value) -> bool:
        ent = ents[s]
        if (s, p, v.key()) in f.annotations:
            return f.annotations[(s, p, v.key())][0]
        if not ent.types:
            return s not in f.untyped
        if (s, p, v.key()) in f.bad_values:
            return False
        return any((s, t) not in f.unknown_types and (s, p, t) not in f.not_allowed for t in ent.types)

    return to_jsonld(markup, keep=keep, keep_type=lambda s, t: (s, t) not in f.unknown_types)
