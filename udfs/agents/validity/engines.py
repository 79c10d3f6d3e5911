"""The two validity engines, which report the same :class:`~udfs.agents.validity.findings.Findings`.

``compiled`` (:class:`CompiledChecker`) evaluates the shape model
(:func:`udfs.schemaorg.shapes.build_model`) from in-memory indexes, for the pipeline; ``pyshacl``
(:class:`PyShaclChecker`) validates an RDF view of the markup against the generated shapes
(``shapes/schemaorg-<release>[.strict].shapes.ttl``), the reference.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Sequence
from urllib.parse import quote

from udfs.agents.validity.findings import Findings, literal_datatype, schema_member
from udfs.schemaorg.markup import Literal, Markup, Value
from udfs.schemaorg.namespace import SCHEMA_NS
from udfs.schemaorg.shapes import LITERAL_FAMILIES, SHP, RangeSpec, ShapeModel, build_model, default_path, to_turtle
from udfs.schemaorg.vocab import schema_local_name

_PATTERNS = {fam: re.compile(p) for fam, (_, p) in LITERAL_FAMILIES.items() if p}
ENGINES = ("compiled", "pyshacl")


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
        if self.strict and is_iri and schema_member(v.id) in self._members[p]:
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
                    local = schema_member(node_id)
                    term = rdflib.URIRef(
                        SCHEMA_NS + local if local else f"urn:llm4schema:m{i}:{quote(node_id, safe='')}"
                    )
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
                            lex = (
                                v.text
                                if not isinstance(v.value, (int, float)) or isinstance(v.value, bool)
                                else v.value
                            )
                            o = (
                                rdflib.Literal(lex, lang=lang)
                                if lang
                                else rdflib.Literal(lex, datatype=rdflib.URIRef(dt))
                            )
                        else:
                            o = node(v.id)
                        values[(s, pt, o)] = v.key()
                        g.add((s, pt, o))

        _conforms, report, _text = validate(
            g,
            shacl_graph=self.shapes,
            advanced=True,
            inference="none",
            meta_shacl=False,
            abort_on_first=False,
            allow_warnings=False,
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
