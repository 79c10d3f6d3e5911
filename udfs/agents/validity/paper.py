"""The paper mode: the paper's filter exactly (:func:`paper_removals`), to reproduce its Table 7.

Each type of a multi-typed entity closes it, an entity of an undefined type goes whole, a
non-string literal no datatype of the range accepts is flagged, and a flagged value removes every
equal leaf of the markup (a flagged blank node: its property, from every node).
:func:`paper_triples` and :func:`counted_keys` count triples the paper's way.
"""

from __future__ import annotations

from typing import Any, Sequence

from udfs.agents.validity.findings import (
    BLANK_PROPERTY,
    DATATYPE,
    MULTI_TYPE,
    RDF_LANGSTRING,
    UNDEFINED_PROPERTY,
    UNDEFINED_TYPE,
    VALUE_STRING,
    VALUE_TYPE,
    XSD,
    Removal,
    Verdict,
    literal_datatype,
    retired_terms,
)
from udfs.schemaorg.markup import Literal, Markup, Ref, Value
from udfs.schemaorg.shapes import LITERAL_FAMILIES, RangeSpec, ShapeModel

_STRING_TYPES = (XSD + "string", RDF_LANGSTRING)
# The paper's shape generator (markup/shacl.py in its repository) gives a property whose range
# names one of these types the numeric datatypes, so a JSON number passes there: ImageObject's
# width (Distance or QuantitativeValue) keeps a JSON integer that our literal families would flag.
_PAPER_NUMERIC_RANGES = frozenset({"Number", "Float", "Integer", "QuantitativeValue", "QualitativeValue"})
_PAPER_NUMERIC_TYPES = (XSD + "integer", XSD + "double", XSD + "float")


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


def paper_removals(markup: Markup, model: ShapeModel) -> tuple[dict[tuple, Removal], set[str]]:
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
    * untyped entities are targeted by no shape: their own values are never flagged;
    * schema.org's retired terms (the attic, :func:`~udfs.agents.validity.findings.retired_terms`) are
      defined: the paper's shapes came from a vocabulary that still held them (its logs never flag
      ``hasProductReturnPolicy`` on an Organization, its filter keeps them). This release has no
      domain or range for them, so a retired property is never flagged; a retired type's closed
      shape holds Thing's properties and the retired ones (``ProductReturnPolicy`` keeps
      ``productReturnDays``, loses ``refundType``, a property of the current MerchantReturnPolicy).
      An artefact of the paper's vocabulary, kept here to copy its filter.

    Removal, for each flagged (property, value): a blank-node value removes the property from every
    node, with all its values; any other value removes every leaf (literal or outside IRI) of the
    markup whose value string equals it, under any property, in any node. Then every node no longer
    reachable from a top-level entity goes with its values (a removed subtree). Returns the
    removals and the entities removed whole."""
    flags, strings, blank_props, dead = _paper_flags(markup, model)
    removed = _paper_spread(markup, flags, strings, blank_props, dead)
    return with_subtrees(markup, removed, dead), set(dead)


def _paper_flags(markup: Markup, model: ShapeModel):
    """The paper's flags (:func:`paper_removals`' first part): per flagged (subject, property,
    value key) its removal; the flagged leaves' value strings and the properties with a flagged
    blank-node value (each with the first removal that flagged it); the entities removed whole."""
    ents = markup.entities
    retired = retired_terms(model.release)
    flags: dict[tuple, Removal] = {}
    strings: dict[str, Removal] = {}
    blank_props: dict[str, Removal] = {}
    dead: dict[str, Removal] = {}  # entities removed whole
    for ent in ents.values():
        if not ent.types:
            continue
        known = [t for t in ent.types if t in model.entity_types]
        # Retired (attic) types are defined in the paper's vocabulary (see the docstring): not removed.
        bad = [t for t in ent.types if t not in model.entity_types and t not in retired]
        if bad:
            dead[ent.id] = (
                1,
                UNDEFINED_TYPE,
                f"{bad[0]} is not a schema.org type: the paper's filter removes the entity whole",
            )
        attic = [t for t in ent.types if t in retired and t not in model.entity_types]
        for p, values in ent.properties.items():
            if p in retired:
                continue  # defined in the paper's vocabulary, with a domain and range this release lacks
            missing = [t for t in known if p not in model.allowed[t]]
            if attic and p not in model.allowed["Thing"]:
                missing.append(attic[0])  # a retired type's shape: Thing's properties and the retired ones
            spec = model.ranges.get(p)
            for v in values:
                if missing:
                    others = [t for t in known if t not in missing]
                    if others:
                        other = others[0]
                        f = (
                            2,
                            MULTI_TYPE,
                            f"{p} is not a property of {missing[0]} (it is one of {other}: "
                            "the paper's closed shapes apply each type, no union)",
                        )
                    else:
                        f = (2, UNDEFINED_PROPERTY, f"{p} is not a property of {missing[0]}")
                elif known and spec is not None and spec.constrained:
                    cause = _paper_value_fault(spec, v, ents)
                    if cause is None:
                        continue
                    f = (
                        3,
                        cause,
                        f"{p} expects {', '.join(spec.ranges)}; got "
                        + (f"a JSON {type(v.value).__name__}" if isinstance(v, Literal) else _node_desc(markup, v)),
                    )
                else:
                    continue
                flags[(ent.id, p, v.key())] = f
                if isinstance(v, Ref) and v.id.startswith("_:"):
                    blank_props.setdefault(p, f)
                elif _leaf(markup, v):
                    strings.setdefault(
                        _text(v), (f[0], f[1], f"{_text(v)[:60]!r} is the flagged value of {p} ({f[2]})")
                    )
    return flags, strings, blank_props, dead


def _paper_spread(markup: Markup, flags, strings, blank_props, dead) -> dict[tuple, Removal]:
    """What the flags remove (:func:`paper_removals`' second part): the whole of an entity removed
    whole and every value pointing to it, every value of a property with a flagged blank-node
    value, every leaf whose value string was flagged anywhere; the flag itself where it has one."""
    removed: dict[tuple, Removal] = {}
    for ent in markup.entities.values():
        for p, values in ent.properties.items():
            for v in values:
                k = (ent.id, p, v.key())
                if ent.id in dead:
                    r = dead[ent.id]
                elif p in blank_props:
                    own = flags.get(k)
                    r = (
                        own
                        if own
                        else (
                            blank_props[p][0],
                            BLANK_PROPERTY,
                            f"{p} had a flagged blank-node value ({blank_props[p][2]}): removed from every node",
                        )
                    )
                elif isinstance(v, Ref) and v.id in dead:
                    r = dead[v.id]
                elif _leaf(markup, v) and _text(v) in strings:
                    own = flags.get(k)
                    r = own if own else (strings[_text(v)][0], VALUE_STRING, strings[_text(v)][2])
                else:
                    continue
                removed[k] = r
    return removed


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


def with_subtrees(markup: Markup, removed: dict[tuple, Removal], dead: dict[str, Removal]) -> dict[tuple, Removal]:
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
    why: dict[str, Removal] = dict(dead)
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
            out[key] = {
                "property": t.property,
                "value": _text(t.value),
                "entity_type": t.entity_type,
                "valid": v.valid,
                "rule": v.rule,
                "cause": v.cause,
                "reason": v.reason,
            }
        elif v.valid and not row["valid"]:
            row.update(valid=True, rule=None, cause=None, reason=v.reason)
    return list(out.values())
