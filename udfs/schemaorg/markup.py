"""JSON-LD markup as entities and (subject, property, value, entity type) triples.

The agents judge markup triple by triple, and the MeMR score counts property values, so every
later stage needs the same reading of a JSON-LD block: which entities it describes, their types,
and for each property whether a value is a literal or a reference to another node. This module
is that reading (no rdflib, no network: it runs for every markup of every page).

The reading is JSON-LD 1.1's: the markup is expanded (:mod:`udfs.schemaorg.jsonld`: contexts of
every kind, containers, ``@reverse``, ``@nest``, ``@included``, ``@json``, ``@base``...) and its
nodes become entities as JSON-LD's node map makes them; the W3C JSON-LD 1.1 toRdf tests check it
(tests/conformance/test_jsonld_tordf.py, docs/results/conformance.md). Where web markup needs it,
the reading differs from JSON-LD's, on purpose:

* schema.org defaults: a top-level object without ``@context`` is read with schema.org's context
  (the paper's data and the model output both omit it at times), and under an inline context a
  term it leaves undefined is still read in schema.org (``@vocab`` http://schema.org/), where
  JSON-LD would drop it. Every spelling of the schema.org context URL (udfs/schemaorg/namespace.py:
  http/https, ``www.`` and the hosted extensions such as ``health-lifesci.``, trailing slash,
  ``docs/jsonldcontext.json``) is the bundled official context, which also says which properties
  take IRIs (``url``, ``image``, ``sameAs``, ...); its ``"@type": "Date"`` coercions are left out,
  so a date stays a plain string. Any other remote context is never fetched: the markup is refused
  with a :class:`MarkupError` whose reason names the URL;
* without a base IRI (the default: markup is read apart from its page) a relative IRI is kept as
  written; :func:`rdf_triples`, the RDF view, leaves it out as JSON-LD's RDF conversion does;
* ``@list`` is read as plain values: the members themselves are the property's values (nested
  lists flattened, order not kept), not an ``rdf:first``/``rdf:rest`` collection;
* named graphs are merged into the one graph of the markup;
* JSON ``null`` as ``@id`` or among the ``@type`` values is no identifier or type, not an error; a
  top-level object that says nothing (``{"@context": ...}``) is an entity without types or values;
  a top-level array item or ``@graph`` item that is not an object refuses the markup.

A node object holding only ``@id`` is a *reference*: to an entity described elsewhere in the
markup (cycles included) or to an outside IRI. Anonymous nodes are named ``_:b0``, ``_:b1``... in
document order. Terms of the schema.org namespace are named by their local name (``Recipe``,
``name``) whatever the namespace spelling; terms of other vocabularies keep their full IRI. JSON
``null`` values make no triples.

Use :func:`parse_markup` to read, :meth:`Markup.triples` for the triple view, :func:`rdf_triples`
for the RDF one and :func:`to_jsonld` to write a markup back, optionally without some of its
property values; :func:`root_documents` gives each top-level node of a document as a document of
its own (the pages job keeps a page's human markup so), by the same reading of the top level as
:func:`parse_markup`.
"""

from __future__ import annotations

import functools
import json
import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, NamedTuple, Union

from udfs.schemaorg.jsonld import (
    MAX_CONTEXT_LAYERS,  # noqa: F401 - the bound callers and tests read here
    MAX_DEPTH,
    NOT_IRI,
    RDF_JSON,
    JsonLdError,
    Processor,
    canonical_json,
    initial_context,
    is_absolute_iri,
    is_well_formed_iri,
    schema_context,
    vocab_context,
)
from udfs.schemaorg.namespace import SCHEMA_CONTEXT_URL, SCHEMA_NS
from udfs.schemaorg.vocab import schema_local_name


class MarkupError(ValueError):
    """A markup that cannot be read; ``reason`` says why in one line (for reject rows); ``code`` is
    JSON-LD's error code where the specification names the error (``invalid @id value``,
    ``loading remote context failed``...), None otherwise."""

    def __init__(self, reason: str, code: str | None = None):
        super().__init__(reason)
        self.reason = reason
        self.code = code


# Plain (not frozen) slotted dataclasses: a markup makes thousands of these and frozen ones cost
# twice as much to build. Treat them as immutable all the same.
@dataclass(slots=True, unsafe_hash=True)
class Literal:
    """A literal value: a JSON string, number or boolean, or an ``@value`` object."""

    value: Union[str, int, float, bool]
    datatype: str | None = None  # expanded IRI of an explicit ``@type`` in an ``@value`` object
    language: str | None = None

    def key(self) -> tuple:
        # True == 1 in Python; the JSON type is part of the identity of a literal.
        return ("L", type(self.value).__name__, self.value, self.datatype, self.language)

    @property
    def text(self) -> str:
        if isinstance(self.value, bool):
            return "true" if self.value else "false"
        return str(self.value)


@dataclass(slots=True, unsafe_hash=True)
class Ref:
    """A reference to a node: an entity of the markup (blank ``_:bN`` or IRI) or an outside IRI."""

    id: str

    def key(self) -> tuple:
        return ("R", self.id)

    @property
    def text(self) -> str:
        return self.id


Value = Union[Literal, Ref]


@dataclass
class Entity:
    """One node described by the markup: its id, its types and its property values."""

    id: str
    types: list[str] = field(default_factory=list)
    properties: dict[str, list[Value]] = field(default_factory=dict)

    @property
    def is_blank(self) -> bool:
        return self.id.startswith("_:")

    _seen: set = field(default_factory=set, repr=False, compare=False)

    def add(self, prop: str, value: Value) -> None:
        k = (prop, value.key())
        if k not in self._seen:  # RDF graphs are sets: a repeated value is one triple
            self._seen.add(k)
            self.properties.setdefault(prop, []).append(value)


class Triple(NamedTuple):
    subject: str
    property: str
    value: Value
    entity_type: str | None  # None when the subject has no @type


@dataclass
class Markup:
    """A parsed markup: entities by id in document order, the top-level ones, and notes on what was
    ignored (JSON-LD keywords without triples)."""

    entities: dict[str, Entity]
    roots: list[str]
    notes: list[str] = field(default_factory=list)

    def triples(self) -> Iterator[Triple]:
        """One triple per (subject, property, value, entity type); an entity with several types
        yields each of its property values once per type, an untyped one with type None."""
        for ent in self.entities.values():
            types = ent.types or [None]
            for prop, values in ent.properties.items():
                for v in values:
                    for t in types:
                        yield Triple(ent.id, prop, v, t)

    def entity_of(self, value: Value) -> Entity | None:
        """The entity a value refers to, None for literals and outside IRIs."""
        return self.entities.get(value.id) if isinstance(value, Ref) else None

    def is_typed_node(self, value: Value) -> bool:
        ent = self.entity_of(value)
        return bool(ent and ent.types)


@functools.lru_cache(maxsize=1 << 16)
def term_name(iri: str) -> str:
    """Local name for a schema.org IRI, the IRI itself otherwise."""
    return schema_local_name(iri) or iri


# ---- parsing ---------------------------------------------------------------------------------
def parse_markup(
    markup: str | bytes | dict | list,
    *,
    allow_empty: bool = False,
    contexts: dict | None = None,
    base: str | None = None,
    schema_defaults: bool = True,
) -> Markup:
    """Read one JSON-LD markup (JSON text or already-parsed JSON) into a :class:`Markup`.

    Raises :class:`MarkupError` with a reason for text that is not JSON, for a top level that is
    not an object or array, for a remote non-schema.org ``@context``, and for what JSON-LD 1.1
    calls an error (the reason starts with the specification's error code, e.g. ``invalid @id
    value: ...``). A markup that describes no entity (``[]``, ``{"@graph": []}``) is refused too
    ("no entity in markup"), unless ``allow_empty``: a score that compares markups (MeMR) reads it
    as zero triples.

    ``base``: the IRI relative IRIs are resolved against (the page's URL); None keeps them as
    written. ``schema_defaults`` False reads with JSON-LD's own empty initial context instead of
    schema.org's defaults (module docstring): a term no context defines is then dropped. The
    pipeline always reads with the defaults; the conformance tests read both ways.

    ``contexts`` is a cache of applied ``@context`` objects that callers reading parts of one
    document share (a dict they keep, empty at first): the pages path reads each root entity of
    a block with the block's context, and a large inline context is then read once, not once per
    root. The work is linear in the size of the markup.
    """
    if isinstance(markup, (bytes, bytearray)):
        try:
            markup = markup.decode("utf-8")
        except UnicodeDecodeError as e:
            raise MarkupError(f"not UTF-8: {e}") from None
    if isinstance(markup, str):
        try:
            markup = json.loads(markup)
        except json.JSONDecodeError as e:
            raise MarkupError(f"not JSON: {e}") from None
        except RecursionError:
            raise MarkupError(f"nesting deeper than {MAX_DEPTH} levels") from None
    if not isinstance(markup, (dict, list)):
        raise MarkupError(f"top level must be a JSON object or array, got {type(markup).__name__}")
    try:
        return _Reader(contexts, base, schema_defaults).read(markup, allow_empty)
    except JsonLdError as e:
        raise MarkupError(e.reason, e.code) from None


def _top_level_items(doc: dict | list) -> Iterator[tuple[dict, Iterator[dict]]]:
    """The top-level structure of a JSON-LD document as :func:`parse_markup` reads it: each
    top-level object (the document, or each item of a top-level array; JSON ``null`` items
    skipped) with its top-level node objects, produced as they are read: the items of its
    ``@graph`` (``null`` skipped), then the object itself without ``@graph`` when it says more
    than ``@id`` and ``@context`` (a node in its own right); an object without ``@graph`` is the
    one node. The nodes inherit the object's ``@context``. Raises :class:`MarkupError` on an item
    that is not an object, when it is reached."""
    for item in doc if isinstance(doc, list) else [doc]:
        if item is None:
            continue
        if not isinstance(item, dict):
            raise MarkupError(f"top-level array item must be an object, got {type(item).__name__}")
        yield item, _item_nodes(item)


def _item_nodes(item: dict) -> Iterator[dict]:
    graph = item.get("@graph")
    if graph is None:
        yield item
        return
    for g in graph if isinstance(graph, list) else [graph]:
        if g is None:
            continue
        if not isinstance(g, dict):
            raise MarkupError(f"@graph item must be an object, got {type(g).__name__}")
        yield g
    if {k for k in item if k not in ("@context", "@graph")} - {"@id"}:
        yield {k: v for k, v in item.items() if k != "@graph"}


def root_documents(doc: dict | list) -> Iterator[dict]:
    """Each top-level node object of a JSON-LD document (:func:`_top_level_items`) as a document of
    its own, as a page's human markup is kept: the node with the ``@context`` of its top-level
    object added, unless the node has one of its own (which it then keeps alone). Raises
    :class:`MarkupError` where :func:`parse_markup` refuses the document's structure."""
    for item, nodes in _top_level_items(doc):
        ctx = item.get("@context")
        for node in nodes:
            yield node if ("@context" in node or ctx is None) else {"@context": ctx, **node}


class _Reader:
    """Entities from the expanded form (``udfs.schemaorg.jsonld``): the node map of JSON-LD 1.1
    (section 7.2) with every graph merged into one and lists read as plain values, nodes met in
    document order (pre-order), anonymous ones named ``_:b0``, ``_:b1``... (skipping any label the
    markup writes itself)."""

    def __init__(self, contexts: dict | None, base: str | None, schema_defaults: bool) -> None:
        self.entities: dict[str, Entity] = {}
        self.roots: list[str] = []
        self._blank = 0
        self._base = base
        self._schema_defaults = schema_defaults
        # sets beside the lists, so that membership is not a scan (a list scan per root or per
        # type made the reading quadratic in the number of roots or types)
        self._root_ids: set[str] = set()
        self._typed: set[tuple[str, str]] = set()
        self._proc = Processor(contexts)

    def read(self, doc: dict | list, allow_empty: bool = False) -> Markup:
        expanded: list[tuple[dict, Any]] = []
        for item, nodes in _top_level_items(doc):
            for _ in nodes:  # the structure checks of _item_nodes, before anything is read
                pass
            if not self._schema_defaults:
                initial = initial_context(self._base)
            elif "@context" in item:
                # JSON-LD starts an inline context from nothing (no schema.org term coercions); terms
                # it leaves undefined are still read in schema.org, as a markup without @context is.
                initial = vocab_context(self._base)
            else:
                initial = schema_context(self._base)
            expanded.append((item, self._proc.expand(initial, None, item, self._base)))
        for item, ex in expanded:
            if ex is None and "@graph" not in item and item.get("@id") is None:
                # a top-level object that says nothing ({"@context": ...}, {"@type": null}): JSON-LD
                # drops it, the reader keeps it as an entity without types or values, as it always has
                self._root(self._node({}))
                continue
            if isinstance(ex, dict) and set(ex) == {"@graph"}:
                ex = ex["@graph"]
            for el in ex if isinstance(ex, list) else ([] if ex is None else [ex]):
                graph = el.get("@graph") if "@graph" in item else None
                if graph is not None:
                    # the top-level object's graph first, then the object itself (as root_documents)
                    if self._graph_named_no_iri(el):
                        graph = []
                    for g in graph:
                        self._root(self._node(g))
                    el = {k: v for k, v in el.items() if k != "@graph"}
                self._root(self._node(el))
        if not self.entities and not allow_empty:
            raise MarkupError("no entity in markup")
        return Markup(self.entities, self.roots, self._proc.notes)

    def _root(self, node_id: str) -> None:
        if node_id in self.entities and node_id not in self._root_ids:
            self._root_ids.add(node_id)
            self.roots.append(node_id)

    def _new_blank(self) -> str:
        while True:
            self._blank += 1
            label = f"_:b{self._blank - 1}"
            if label not in self._proc.blank_ids:
                return label

    def _node(self, el: dict) -> str:
        """The id of the node ``el`` (expanded), its entity made or merged: a node object that says
        nothing but its ``@id`` is a reference and makes no entity; one without ``@id`` is a blank
        entity even when it says nothing (``{}``)."""
        node_id = el.get("@id")
        if node_id is None:
            node_id = self._new_blank()
        ent = self.entities.get(node_id)
        if ent is None and ("@id" not in el or any(k not in _NOT_DESCRIPTIVE for k in el)):
            ent = self.entities[node_id] = Entity(node_id)
        for key, val in el.items():
            if key in _NOT_DESCRIPTIVE:
                if key in ("@graph", "@included") and not (key == "@graph" and self._graph_named_no_iri(el)):
                    for g in val:  # a named graph's nodes and included nodes: one merged graph
                        self._node(g)
                continue
            if key == "@type":
                for t in val:
                    name = term_name(t)
                    if (node_id, name) not in self._typed:
                        self._typed.add((node_id, name))
                        ent.types.append(name)  # type: ignore[union-attr]
            elif key == "@reverse":
                for rprop, items in val.items():
                    prop = term_name(rprop)
                    for item in items:
                        src_id = self._node(item)
                        src = self.entities.get(src_id)
                        if src is None:
                            src = self.entities[src_id] = Entity(src_id)
                        src.add(prop, Ref(node_id))
            else:
                prop = term_name(key)
                for item in val:
                    for v in self._values(item):
                        ent.add(prop, v)  # type: ignore[union-attr]
        return node_id

    def _graph_named_no_iri(self, el: dict) -> bool:
        """JSON-LD's RDF conversion drops a graph whose name is no IRI, with its triples."""
        name = el.get("@id")
        if name is None or not NOT_IRI.search(name):
            return False
        self._proc.notes.append(f"graph {name[:80]!r} dropped: its name is no IRI")
        return True

    def _values(self, item: dict) -> list[Value]:
        if "@value" in item:
            t = item.get("@type")
            if t == "@json":
                return [Literal(canonical_json(item["@value"]), RDF_JSON)]
            return [Literal(item["@value"], t, item.get("@language"))]
        if "@list" in item:
            out: list[Value] = []
            for x in item["@list"]:
                out.extend(self._values(x))
            return out
        return [Ref(self._node(item))]


# keys of an expanded node object that describe nothing of it
_NOT_DESCRIPTIVE = frozenset(("@id", "@index", "@graph", "@included"))


# ---- RDF -------------------------------------------------------------------------------------
class RdfLiteral(NamedTuple):
    lexical: str
    datatype: str
    language: str | None


RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
RDF_LANGSTRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
XSD = "http://www.w3.org/2001/XMLSchema#"
_LANGUAGE_TAG = re.compile(r"^[a-zA-Z]{1,8}(-[a-zA-Z0-9]{1,8})*$")


def rdf_iri(name: str) -> str:
    """The IRI of a type or property name of a :class:`Markup` (a schema.org local name is in
    ``SCHEMA_NS``; an absolute IRI or a blank node label is itself)."""
    return name if name.startswith("_:") or is_absolute_iri(name) else SCHEMA_NS + name


def rdf_literal(lit: Literal) -> RdfLiteral:
    """A literal as JSON-LD's RDF conversion writes it (Deserialize JSON-LD to RDF, 8.6): booleans
    and numbers in their canonical lexical forms (``1.1E0`` for a double), a language-tagged
    string as ``rdf:langString``."""
    v, dt = lit.value, lit.datatype
    if isinstance(v, bool):
        return RdfLiteral("true" if v else "false", dt or XSD + "boolean", None)
    if isinstance(v, (int, float)):
        if isinstance(v, float) and (not v.is_integer() or abs(v) >= 1e21) or dt == XSD + "double":
            mantissa, _, exponent = ("%1.15E" % v).partition("E")
            mantissa = mantissa.rstrip("0")
            mantissa = mantissa + "0" if mantissa.endswith(".") else mantissa
            return RdfLiteral(f"{mantissa}E{int(exponent)}", dt or XSD + "double", None)
        return RdfLiteral(str(int(v)), dt or XSD + "integer", None)
    if lit.language is not None and dt is None:
        return RdfLiteral(str(v), RDF_LANGSTRING, lit.language.lower())
    return RdfLiteral(str(v), dt or XSD + "string", None)


def rdf_triples(markup: Markup) -> Iterator[tuple[str, str, str | RdfLiteral]]:
    """The markup's triples in RDF (subject, predicate, object): IRIs, blank nodes as ``_:label``,
    literals as :class:`RdfLiteral`, as JSON-LD's RDF conversion gives them. What RDF cannot hold is
    left out, as that conversion leaves it out: a relative IRI (markup read without a base), a term
    that is no IRI, a blank-node predicate, a language tag that is not well formed. The entities
    keep all of these (a verdict judges them)."""

    def node(iri: str) -> str | None:
        return iri if iri.startswith("_:") or is_well_formed_iri(iri) else None

    def name(n: str) -> str | None:
        return node(rdf_iri(n))

    for ent in markup.entities.values():
        s = node(ent.id)
        if s is None:
            continue
        for t in ent.types:
            o = name(t)
            if o is not None:
                yield s, RDF_TYPE, o
        for p, values in ent.properties.items():
            pi = name(p)
            if pi is None or pi.startswith("_:"):
                continue
            for v in values:
                if isinstance(v, Ref):
                    o = node(v.id)
                    if o is not None:
                        yield s, pi, o
                    continue
                if v.datatype is not None and v.datatype != RDF_JSON and node(v.datatype) is None:
                    continue
                if v.language is not None and v.datatype is None and not _LANGUAGE_TAG.match(v.language):
                    continue
                yield s, pi, rdf_literal(v)


def count_json_values(data: Any, limit: int) -> int:
    """How many JSON values (objects, arrays, strings, numbers, booleans, nulls; not keys) ``data``
    holds, counting no further than ``limit + 1``: checking a markup against a node limit costs at
    most the limit, however large the markup."""
    n = 0
    stack = [iter((data,))]
    while stack:
        for v in stack[-1]:
            n += 1
            if n > limit:
                return n
            if isinstance(v, dict):
                stack.append(iter(v.values()))
                break
            if isinstance(v, list):
                stack.append(iter(v))
                break
        else:
            stack.pop()
    return n


# ---- writing back ----------------------------------------------------------------------------
def to_jsonld(
    markup: Markup,
    keep: Callable[[str, str, Value], bool] | None = None,
    keep_type: Callable[[str, str], bool] | None = None,
) -> dict | list | None:
    """The markup as JSON-LD (schema.org context, local names), keeping only the (subject,
    property, value) triples for which ``keep`` is true and the (subject, type) pairs for which
    ``keep_type`` is true (all when None).

    Entities are nested under their first kept reference from a root; one referenced twice (or on
    a cycle) is written once and referred to by ``@id`` elsewhere. Entities no longer reachable
    from a top-level entity (their only link was removed) are left out with it. Returns one object,
    an ``@graph`` object when several top-level entities remain, or None when nothing remains.
    """
    ents = markup.entities
    kept: dict[str, dict[str, list[Value]]] = {}
    for eid, ent in ents.items():
        kept[eid] = {p: [v for v in vs if keep is None or keep(eid, p, v)] for p, vs in ent.properties.items()}
        kept[eid] = {p: vs for p, vs in kept[eid].items() if vs}
    # How many times each entity is referenced among kept values: those referenced more than once,
    # and blank roots that are referenced, need an @id to be written once.
    refcount: dict[str, int] = {}
    for eid, props in kept.items():
        for vs in props.values():
            for v in vs:
                if isinstance(v, Ref) and v.id in ents:
                    refcount[v.id] = refcount.get(v.id, 0) + 1
    written: set[str] = set()
    deferred: deque[str] = deque()  # nodes past MAX_DEPTH (long reference chains): written at the top
    root_ids = set(markup.roots)

    def node(eid: str, depth: int = 0, force_id: bool = False) -> dict:
        written.add(eid)
        ent = ents[eid]
        out: dict[str, Any] = {}
        if force_id or not ent.is_blank or refcount.get(eid, 0) > 1 or eid in root_ids and refcount.get(eid, 0):
            out["@id"] = eid
        types = [t for t in ent.types if keep_type is None or keep_type(eid, t)]
        if types:
            out["@type"] = types[0] if len(types) == 1 else types
        for p, vs in kept[eid].items():
            vals = [value(v, depth + 1) for v in vs]
            out[p] = vals[0] if len(vals) == 1 else vals
        return out

    def value(v: Value, depth: int) -> Any:
        if isinstance(v, Literal):
            if v.datatype is None and v.language is None:
                return v.value
            d: dict[str, Any] = {"@value": v.value}
            if v.datatype:
                d["@type"] = term_name(v.datatype)
            if v.language:
                d["@language"] = v.language
            return d
        if v.id in ents and v.id not in written and v.id not in root_ids:
            if depth >= MAX_DEPTH:
                written.add(v.id)
                deferred.append(v.id)
            else:
                return node(v.id, depth)
        return {"@id": v.id}

    roots = []
    for r in markup.roots:
        if r in written:
            continue
        n = node(r)
        if len(n) > (1 if "@id" in n else 0):
            roots.append(n)
    while deferred:
        roots.append(node(deferred.popleft(), force_id=True))
    if not roots:
        return None
    if len(roots) == 1:
        return {"@context": SCHEMA_CONTEXT_URL, **roots[0]}
    return {"@context": SCHEMA_CONTEXT_URL, "@graph": roots}


# ---- claims as a person reads them -----------------------------------------------------------

LABEL_PROPERTIES = ("name", "headline", "alternateName", "title")  # a node's label, in this order
CLAIM_VALUE_CHARS = 120  # a longer literal is cut (with "…") in the readable claim


def label(markup: Markup, entity_id: str) -> str:
    """How a person names a node: its type(s) and, when it has one, its first name-like literal
    (``Book "The Catcher in the Rye"``); a node without a type is ``Thing``, a node that is not
    in the markup (an outside IRI) is the IRI itself."""
    ent = markup.entities.get(entity_id)
    if ent is None:
        return entity_id
    kind = "/".join(ent.types) or "Thing"
    for prop in LABEL_PROPERTIES:
        for v in ent.properties.get(prop, ()):
            if isinstance(v, Literal) and str(v.text).strip():
                return f"{kind} {_quoted(v.text)}"
    return kind


def claim_text(markup: Markup, triple: Triple) -> str:
    """One triple as a readable claim: ``<subject label> / <property>: <value>``, where a literal is
    quoted (cut to ``CLAIM_VALUE_CHARS``) and a node value is named by its ``label``
    (``Book "The Catcher in the Rye" / author: Person "J. D. Salinger"``). Display only: the ids
    beside it in ``triples/`` stay the key."""
    v = triple.value
    value = _quoted(v.text) if isinstance(v, Literal) else label(markup, v.id)
    return f"{label(markup, triple.subject)} / {triple.property}: {value}"


def _quoted(text: str) -> str:
    text = " ".join(str(text).split())
    if len(text) > CLAIM_VALUE_CHARS:
        text = text[: CLAIM_VALUE_CHARS - 1] + "…"
    return f'"{text}"'
