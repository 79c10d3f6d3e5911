"""SHACL shapes for a whole schema.org release, and the model both validity engines share.

``to_turtle(build_model(release))`` is the shapes file of a release; ``python -m shapes.generate``
(``shapes/generate.py``) writes it to ``shapes/schemaorg-<release>[.strict].shapes.ttl``. The file
is a pure function of the release: regenerating gives the same bytes.

The shapes encode the paper's three rules (see shapes/README.md for the full reading and the
comparison with schema.org's and pySHACL's own shapes):

1. type: ``shp:known-type`` rejects every ``rdf:type`` outside the release's entity types, and
   ``shp:typed-subject`` every subject without a type;
2. property: one *closed* NodeShape per entity type (``shp:t-Recipe``), targeting its direct
   instances, whose properties are its own and every ancestor's (multiple inheritance followed);
   ``rdf:type`` is ignored;
3. value: one PropertyShape per property (``shp:p-recipeInstructions``) whose ``sh:or`` lists what a
   value may be: an instance (by ``rdf:type``) of a range type or of any of its subtypes
   (``shp:isa-CreativeWork``), and, in the default *lenient* reading, any literal or untyped IRI;
   in the *strict* reading only literals of a datatype of the range (lexical patterns for URL,
   Date, DateTime, Time), IRIs where URL is in the range, and enumeration members (as IRIs) of
   the range's enumerations. In both, where URL is in the range any IRI is accepted, also one the
   markup describes as a typed node (``shp:iri``: the IRI is the URL).

Data graphs are expected with schema.org terms in ``http://schema.org/`` (the official context's
namespace); :mod:`udfs.agents.validity` builds them that way from :mod:`udfs.schemaorg.markup`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from udfs.runtime.paths import PROJECT_ROOT
from udfs.schemaorg.namespace import SCHEMA_NS
from udfs.schemaorg.vocab import Vocabulary, load_vocabulary

# The generated shapes ship in the project's shapes/ folder (the generator command lives there too).
SHAPES_DIR = PROJECT_ROOT / "shapes"
SHP = "urn:llm4schema:shapes:"
XSD = "http://www.w3.org/2001/XMLSchema#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"

# Literal families a strict reading accepts, keyed by the schema.org datatype they stand for.
# Each is (RDF datatypes of the literal, lexical pattern or None); the same table drives the
# Turtle and the compiled checker so both read a literal alike.
ABSOLUTE_URL = r"^[A-Za-z][A-Za-z0-9+.\-]*:"
LITERAL_FAMILIES: dict[str, tuple[tuple[str, ...], str | None]] = {
    "Text": ((XSD + "string", RDF + "langString"), None),
    "URL": ((XSD + "string",), ABSOLUTE_URL),
    "Number": ((XSD + "integer", XSD + "double"), None),
    "Integer": ((XSD + "integer",), None),
    "Float": ((XSD + "integer", XSD + "double"), None),
    "Boolean": ((XSD + "boolean",), None),
    "Date": ((XSD + "string",), r"^-?[0-9]{4,}-[0-9]{2}-[0-9]{2}$"),
    "DateTime": (
        (XSD + "string",),
        r"^-?[0-9]{4,}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?(Z|[+-][0-9]{2}:?[0-9]{2})?$",
    ),
    "Time": ((XSD + "string",), r"^[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?(Z|[+-][0-9]{2}:?[0-9]{2})?$"),
}
# Datatype roots whose descendants are literal-only (never entity types).
LITERAL_ROOTS = ("Text", "Number", "Boolean", "Date", "DateTime", "Time")


@dataclass(frozen=True)
class RangeSpec:
    """What a value of one property may be."""

    ranges: tuple[str, ...]  # rangeIncludes, sorted
    isa: tuple[str, ...]  # range entity types, sorted (their subtypes are accepted too)
    classes: frozenset[str]  # every entity type accepted for an entity value
    literal_families: tuple[str, ...]  # strict: keys of LITERAL_FAMILIES accepted
    link: bool  # URL in the range: any IRI is accepted, typed node or not (strict: the only IRIs)
    members: tuple[str, ...]  # strict: enumeration members accepted as IRIs, sorted
    constrained: bool  # False when the property declares no range at all


@dataclass(frozen=True)
class ShapeModel:
    release: str
    entity_types: frozenset[str]
    allowed: dict[str, frozenset[str]]  # entity type -> its properties, inherited ones included
    ranges: dict[str, RangeSpec]  # property -> value constraint
    superseded_by: dict[str, str]
    supertypes: dict[str, frozenset[str]]  # entity type -> its direct supertypes among entity types
    member_of: dict[str, frozenset[str]]  # enumeration member -> its enumerations


def literal_family(v: Vocabulary, datatype: str) -> str:
    """The LITERAL_FAMILIES key of a schema.org datatype (``PronounceableText`` -> ``Text``)."""
    anc = v.ancestors(datatype)
    for fam in ("URL", "Integer", "Float", "Number", "Boolean", "DateTime", "Date", "Time"):
        if fam in anc:
            return fam
    # Text and its subtypes, and DataTypes outside the literal roots (Quantity, Duration, ...),
    # which are written as strings ("PT30M").
    return "Text"


@functools.lru_cache(maxsize=8)
def build_model(vocab: str | None = None) -> ShapeModel:
    v = load_vocabulary(vocab)
    literal_only: set[str] = set()
    for root in LITERAL_ROOTS:
        if root in v.classes:
            literal_only |= v.descendants(root)
    entity_types = frozenset(c for c in v.classes if c not in literal_only and c != "DataType")
    allowed = {c: frozenset(v.properties_of(c) & v.properties) for c in entity_types}
    ranges: dict[str, RangeSpec] = {}
    for p in v.properties:
        rs = v.ranges.get(p, set())
        isa = sorted(r for r in rs if r in entity_types)
        classes = frozenset().union(*(v.descendants(r) & entity_types for r in isa)) if isa else frozenset()
        fams = {literal_family(v, r) for r in rs if r in v.datatypes}
        members: set[str] = set()
        for r in isa:
            for d in v.descendants(r):
                members |= v.enumeration_members.get(d, set())
        ranges[p] = RangeSpec(
            ranges=tuple(sorted(rs)),
            isa=tuple(isa),
            classes=classes,
            literal_families=tuple(f for f in LITERAL_FAMILIES if f in fams),
            link="URL" in fams,
            members=tuple(sorted(members)),
            constrained=bool(rs),
        )
    supertypes = {c: frozenset(v.superclasses.get(c, set()) & entity_types) for c in entity_types}
    member_of: dict[str, set[str]] = {}
    for enum, ms in v.enumeration_members.items():
        for m in ms:
            member_of.setdefault(m, set()).add(enum)
    return ShapeModel(
        v.release,
        entity_types,
        allowed,
        ranges,
        dict(v.superseded_by),
        supertypes,
        {m: frozenset(es) for m, es in member_of.items()},
    )


# ---- Turtle ----------------------------------------------------------------------------------
def _lit(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _list(items: list[str], indent: str) -> str:
    if not items:
        return "()"
    return "(\n" + "".join(f"{indent}    {i}\n" for i in items) + f"{indent})"


def to_turtle(model: ShapeModel, strict: bool = False) -> str:
    """The shapes as Turtle, deterministic (sorted everywhere, no blank-node labels)."""
    types = sorted(model.entity_types)
    properties, used_isa, used_members = _property_shapes(model, strict)
    parts = (
        _turtle_header(model, strict),
        _type_shapes(model, types),
        properties,
        _value_shapes(strict, used_isa, used_members),
        _hierarchy(model, types, strict),
    )
    return "".join(line for part in parts for line in part)


def _turtle_header(model: ShapeModel, strict: bool) -> list[str]:
    reading = "strict" if strict else "lenient"
    return [
        f"# SHACL shapes for schema.org {model.release} ({reading} reading of values).\n",
        "# Generated by `python -m shapes.generate` (shapes/generate.py); do not edit by hand.\n",
        "# Rules, readings and the comparison with other schema.org shapes: shapes/README.md.\n\n",
        f"@prefix rdf: <{RDF}> .\n@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n",
        f"@prefix schema: <{SCHEMA_NS}> .\n@prefix sh: <http://www.w3.org/ns/shacl#> .\n",
        f"@prefix shp: <{SHP}> .\n@prefix xsd: <{XSD}> .\n\n",
    ]


def _type_shapes(model: ShapeModel, types: list[str]) -> list[str]:
    """Rules 1 and 2: every type is one of the release and every subject has one; one closed shape
    per entity type."""
    out: list[str] = []
    w = out.append
    w("# Rule 1: every rdf:type is an entity type of the release (focus: the type IRIs themselves,\n")
    w("# so the list is read once per validation, not once per entity).\n")
    w("shp:known-type a sh:NodeShape ;\n    sh:targetObjectsOf rdf:type ;\n")
    w("    sh:in " + _list([f"schema:{t}" for t in types], "    ") + " .\n\n")
    w("# Rule 1: every subject has a type (SPARQL target: SHACL core has no 'all subjects' target).\n")
    w("shp:typed-subject a sh:NodeShape ;\n    sh:target [\n        a sh:SPARQLTarget ;\n")
    w(
        '        sh:select "SELECT DISTINCT ?this WHERE { ?this ?p ?o . FILTER (?p NOT IN (<urn:llm4schema:shapes:subTypeOf>, <urn:llm4schema:shapes:memberOf>)) }" ;\n    ] ;\n'
    )
    w("    sh:property [\n        sh:path rdf:type ;\n        sh:minCount 1 ;\n    ] .\n\n")

    w("# Rule 2: one closed shape per entity type, targeting its direct instances; its own and its\n")
    w("# ancestors' properties are the only ones allowed (listed as ignored properties: the values\n")
    w("# are checked once per property below, not once per type).\n")
    for t in types:
        props = sorted(model.allowed[t])
        w(f"shp:t-{t} a sh:NodeShape ;\n    sh:targetClass schema:{t} ;\n")
        if t in model.superseded_by:
            w(f"    schema:supersededBy schema:{model.superseded_by[t]} ;\n")
        w(
            "    sh:closed true ;\n    sh:ignoredProperties "
            + _list(["rdf:type", "shp:subTypeOf", "shp:memberOf"] + [f"schema:{p}" for p in props], "    ")
            + " .\n\n"
        )
    return out


def _property_shapes(model: ShapeModel, strict: bool) -> tuple[list[str], set[str], set[str]]:
    """Rule 3: one shape per property, what a value may be; and the types whose isa- and member-
    shapes those name (the value shapes to write)."""
    out: list[str] = []
    w = out.append
    w("# Rule 3: one shape per property, targeting the subjects that use it: what a value may be.\n")
    used_isa: set[str] = set()
    used_members: set[str] = set()
    with_members = _types_with_members(model)
    for p in sorted(model.ranges):
        spec = model.ranges[p]
        if not spec.constrained:
            w(f"# {p}: no rangeIncludes, any value.\n\n")
            continue
        w(f"shp:p-{p} a sh:NodeShape ;\n    sh:targetSubjectsOf schema:{p} ;\n")
        if p in model.superseded_by:
            w(f"    schema:supersededBy schema:{model.superseded_by[p]} ;\n")
        alts: list[str] = []
        if strict:
            alts += [f"shp:lit-{f}" for f in spec.literal_families]
            if spec.link:
                alts.append("shp:iri")
            if spec.members:
                alts += [f"shp:member-{c}" for c in spec.isa if c in with_members]
                used_members.update(c for c in spec.isa if c in with_members)
        else:
            alts += ["shp:literal", "shp:iri" if spec.link else "shp:link"]
        alts += [f"shp:isa-{c}" for c in spec.isa]
        used_isa.update(spec.isa)
        w(
            f"    sh:property [\n        sh:path schema:{p} ;\n        sh:or "
            + _list(alts, "        ")
            + " ;\n    ] .\n\n"
        )
    return out, used_isa, used_members


def _value_shapes(strict: bool, used_isa: set[str], used_members: set[str]) -> list[str]:
    """The value kinds the property shapes name: literal, link, IRI, the literal families
    (``strict``), and the isa- and member- shapes of ``used_isa`` and ``used_members``."""
    out: list[str] = []
    w = out.append
    w("# Value kinds.\n")
    w("shp:literal a sh:NodeShape ;\n    sh:nodeKind sh:Literal .\n\n")
    w("shp:link a sh:NodeShape ;\n    sh:nodeKind sh:IRI ;\n")
    w("    sh:property [\n        sh:path rdf:type ;\n        sh:maxCount 0 ;\n    ] .\n\n")
    w("# Where URL is in the range any IRI is a URL, also one the markup describes as a typed node\n")
    w('# ("url": X beside "mainEntityOfPage": {"@type": "WebPage", "@id": X}).\n')
    w("shp:iri a sh:NodeShape ;\n    sh:nodeKind sh:IRI .\n\n")
    if strict:
        for fam, (dts, pattern) in LITERAL_FAMILIES.items():
            w(f"shp:lit-{fam} a sh:NodeShape ;\n    sh:nodeKind sh:Literal ;\n")
            if len(dts) == 1:
                w(f"    sh:datatype {_curie(dts[0])}")
            else:
                w("    sh:or ( " + " ".join(f"[ sh:datatype {_curie(d)} ]" for d in dts) + " )")
            if pattern:
                w(f" ;\n    sh:pattern {_lit(pattern)}")
            w(" .\n\n")
    for c in sorted(used_isa):
        w(f"shp:isa-{c} a sh:NodeShape ;\n    sh:property [\n")
        w("        sh:path ( rdf:type [ sh:zeroOrMorePath shp:subTypeOf ] ) ;\n")
        w(f"        sh:hasValue schema:{c} ;\n    ] .\n\n")
    for c in sorted(used_members):
        w(f"shp:member-{c} a sh:NodeShape ;\n    sh:nodeKind sh:IRI ;\n    sh:property [\n")
        w("        sh:path ( shp:memberOf [ sh:zeroOrMorePath shp:subTypeOf ] ) ;\n")
        w(f"        sh:hasValue schema:{c} ;\n    ] .\n\n")
    return out


def _hierarchy(model: ShapeModel, types: list[str], strict: bool) -> list[str]:
    """The type hierarchy (and, ``strict``, the enumerations' members) as triples the shapes walk."""
    out: list[str] = []
    w = out.append
    w("# The type hierarchy the isa- shapes walk. Validate with these triples in the data graph\n")
    w("# (pySHACL: ont_graph=); rdfs:subClassOf is not used because it would make every closed\n")
    w("# type shape target the instances of all its subtypes.\n")
    for c in types:
        for sup in sorted(model.supertypes.get(c, ())):
            w(f"schema:{c} shp:subTypeOf schema:{sup} .\n")
    if strict:
        w("\n# Enumeration members and their enumerations, walked by the member- shapes.\n")
        for m in sorted(model.member_of):
            for e in sorted(model.member_of[m]):
                w(f"schema:{m} shp:memberOf schema:{e} .\n")
    return out


def _types_with_members(model: ShapeModel) -> set[str]:
    """Entity types that are, or are above, an enumeration with members."""
    out: set[str] = set()
    todo = [e for es in model.member_of.values() for e in es]
    while todo:
        c = todo.pop()
        if c not in out:
            out.add(c)
            todo.extend(model.supertypes.get(c, ()))
    return out


def _curie(iri: str) -> str:
    for pre, ns in (("xsd", XSD), ("rdf", RDF)):
        if iri.startswith(ns):
            return f"{pre}:{iri[len(ns) :]}"
    return f"<{iri}>"


def default_path(release: str, strict: bool = False) -> Path:
    return SHAPES_DIR / f"schemaorg-{release}{'.strict' if strict else ''}.shapes.ttl"
