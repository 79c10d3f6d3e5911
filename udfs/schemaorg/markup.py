"""JSON-LD markup as entities and (subject, property, value, entity type) triples.

The agents judge markup triple by triple, and the MeMR score counts property values, so every
later stage needs the same reading of a JSON-LD block: which entities it describes, their types,
and for each property whether a value is a literal or a reference to another node. This module
is that reading, kept small and dependency-free (no rdflib, no network) because it runs for every
markup of every page.

What is understood (the parts of JSON-LD that web markup uses):

* a top-level object, an array of objects, ``@graph`` (with or without a top-level node);
* nesting, arrays, ``@list`` / ``@set`` (read as plain multiple values), ``@reverse``, ``@nest``;
* ``@id`` on nodes; a node object holding only ``@id`` is a *reference*: to an entity described
  elsewhere in the markup (cycles included) or to an outside IRI;
* several ``@type`` values per entity;
* ``@context``: absent means schema.org (the paper's data and the model output both omit it at
  times); every spelling of the schema.org context URL (udfs/schemaorg/namespace.py: http/https,
  ``www.`` and the hosted extensions such as ``health-lifesci.``, trailing slash,
  ``docs/jsonldcontext.json``) is resolved with the bundled official context, which also says
  which properties take IRIs (``url``, ``image``, ``sameAs``, ...); inline objects with
  ``@vocab``, prefixes and term definitions are applied (terms they leave undefined are read in
  schema.org; a term defined as ``null`` makes no triple, as in JSON-LD). Any other remote context
  is never fetched: the markup is refused with a :class:`MarkupError` whose reason names the URL.

Terms of the schema.org namespace are named by their local name (``Recipe``, ``name``) whatever
the namespace spelling; terms of other vocabularies keep their full IRI. JSON ``null`` values make
no triples.

Use :func:`parse_markup` to read, :meth:`Markup.triples` for the triple view and :func:`to_jsonld`
to write a markup back, optionally without some of its property values; :func:`root_documents`
gives each top-level node of a document as a document of its own (the pages job keeps a page's
human markup so), by the same reading of the top level as :func:`parse_markup`.
"""

from __future__ import annotations

import functools
import json
import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, NamedTuple, Union

from udfs.schemaorg.namespace import SCHEMA_CONTEXT_URL, SCHEMA_NS, context_document, is_schema_context_url
from udfs.schemaorg.vocab import DEFAULT_RELEASE, schema_local_name

_ABSOLUTE_IRI = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
# Keywords that carry no triple and may be ignored without losing anything.
_IGNORED_KEYWORDS = {
    "@context",
    "@index",
    "@language",
    "@direction",
    "@version",
    "@base",
    "@protected",
    "@propagate",
    "@import",
}
# IRI characters that end a prefix's IRI (RFC 3987 gen-delims): only such a term is a prefix.
_GEN_DELIMS = frozenset(":/?#[]@")


# Deeper nesting is refused (real markup nests a handful of levels; Python's recursion does not
# go much past a few hundred).
MAX_DEPTH = 100
# Contexts applied one over another (nested ``@context``s, the entries of a context array): each
# is a layer looked through for a term, so their number bounds the cost of one lookup. Real markup
# stacks two or three.
MAX_CONTEXT_LAYERS = 4 * MAX_DEPTH


class MarkupError(ValueError):
    """A markup that cannot be read; ``reason`` says why in one line (for reject rows)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


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


# ---- context ---------------------------------------------------------------------------------
class _Context:
    """An active context: the vocabulary IRI and term -> (IRI, value coerced to @id).

    A context applied over another is a layer holding only the terms it defines, over its
    ``parent``, never a copy of the parent's terms: a markup whose every node carries a small
    ``@context`` under a large one costs the small one per node, not the large one (copying was
    quadratic in the markup's size). At most ``MAX_CONTEXT_LAYERS`` layers, so a lookup is bounded.
    """

    __slots__ = ("vocab", "table", "parent", "_names", "_aliases")

    def __init__(self, vocab: str | None, table: dict[str, tuple[str, bool]], parent: "_Context | None" = None):
        self.vocab = vocab
        self.table = table
        self.parent = parent
        n, c = 0, parent
        while c is not None and n <= MAX_CONTEXT_LAYERS:
            n, c = n + 1, c.parent
        if n > MAX_CONTEXT_LAYERS:
            raise MarkupError(f"more than {MAX_CONTEXT_LAYERS} contexts applied one over another")
        # key -> (term name, coerced to @id): the schema.org context is shared by every markup,
        # so its keys are resolved once per process.
        self._names: dict[str, tuple[str, bool]] = {}
        self._aliases: dict[str, str | None] = {}

    def get(self, key: str) -> tuple[str, bool] | None:
        """The definition of ``key`` in the nearest layer that defines it (("", False): null)."""
        c: _Context | None = self
        while c is not None:
            hit = c.table.get(key)
            if hit is not None:
                return hit
            c = c.parent
        return None

    def has_terms(self) -> bool:
        c: _Context | None = self
        while c is not None:
            if c.table:
                return True
            c = c.parent
        return False

    def alias(self, key: str) -> str | None:
        """The keyword ``key`` stands for (schema.org's own context says "id": "@id" and
        "type": "@type"), None when it is not a keyword alias."""
        try:
            return self._aliases[key]
        except KeyError:
            d = self.get(key)
            hit = self._aliases[key] = d[0] if d is not None and d[0] in ("@id", "@type") else None
            return hit

    def term(self, key: str) -> tuple[str, bool]:
        hit = self._names.get(key)
        if hit is None:
            d = self.get(key)
            hit = self._names[key] = (term_name(_expand(self, key, vocab=True)), d[1] if d is not None else False)
        return hit


@functools.lru_cache(maxsize=1)
def _schema_context() -> _Context:
    raw = context_document(DEFAULT_RELEASE)
    prefixes = {k: v for k, v in raw.items() if isinstance(v, str) and not k.startswith("@")}
    table: dict[str, tuple[str, bool]] = {}
    for k, v in raw.items():
        if k.startswith("@"):
            continue
        if isinstance(v, str):
            table[k] = (v, False)
        else:
            iri = v.get("@id", k)
            pre, _, local = iri.partition(":")
            if pre in prefixes and not local.startswith("//"):
                iri = prefixes[pre] + local
            table[k] = (iri, v.get("@type") == "@id")
    return _Context(raw.get("@vocab", SCHEMA_NS), table)


_BARE = _Context(SCHEMA_NS, {})


def _apply_context(active: _Context, ctx: Any) -> _Context:
    if ctx is None:
        return active
    if isinstance(ctx, list):
        for c in ctx:
            active = _apply_context(active, c)
        return active
    if isinstance(ctx, str):
        if is_schema_context_url(ctx):
            sc = _schema_context()
            if active is not sc and active.has_terms():
                return _Context(sc.vocab, sc.table, parent=active)  # schema.org's terms over the active ones
            return sc
        raise MarkupError(f"remote @context not fetched: {ctx[:200]}")
    if not isinstance(ctx, dict):
        raise MarkupError(f"@context must be a string, object or array, got {type(ctx).__name__}")
    if "@import" in ctx:
        raise MarkupError(f"@import of a remote context not fetched: {str(ctx['@import'])[:200]}")
    table: dict[str, tuple[str, bool]] = {}
    vocab = active.vocab
    if "@vocab" in ctx:
        vocab = ctx["@vocab"] if isinstance(ctx["@vocab"], str) else None
        if vocab and is_schema_context_url(vocab):
            vocab = SCHEMA_NS
    # the new layer, filled as its terms are read: a definition may use the terms before it
    tmp = _Context(vocab, table, parent=active)
    for term, d in ctx.items():
        if term.startswith("@"):
            continue
        if d is None:
            # JSON-LD: a term defined as null is decoupled from @vocab; its keys make no triple.
            table[term] = ("", False)
        elif isinstance(d, str):
            table[term] = (d if d.startswith("@") else _expand(tmp, d, vocab=True), False)
        elif isinstance(d, dict):
            if "@context" in d:
                # a scoped context: a URL would have to be fetched, and an inline one is not applied
                raise MarkupError(f"scoped @context of term {term!r} not supported (never fetched)")
            iri = d.get("@id", term)
            if not isinstance(iri, str):
                raise MarkupError(f"term definition of {term!r} has a non-string @id")
            table[term] = (_expand(tmp, iri, vocab=True), d.get("@type") == "@id")
        else:
            raise MarkupError(f"term definition of {term!r} is a {type(d).__name__}")
    return tmp


def _unalias(obj: dict, ctx: _Context) -> dict:
    """``{"type": "Book", "id": ...}`` -> ``{"@type": "Book", "@id": ...}`` (types merged)."""
    out: dict = {}
    for k, v in obj.items():
        kw = ctx.alias(k) or k
        if kw == "@type" and "@type" in out:
            have = out["@type"] if isinstance(out["@type"], list) else [out["@type"]]
            out["@type"] = have + (v if isinstance(v, list) else [v])
        else:
            out[kw] = v
    return out


def _expand(ctx: _Context, s: str, vocab: bool) -> str:
    """Expand a term, compact IRI or IRI. ``vocab`` = relative to @vocab (properties, types)."""
    if vocab:
        hit = ctx.get(s)
        if hit is not None:
            return hit[0]
    if ":" in s:
        pre, _, local = s.partition(":")
        if pre == "_":
            return s
        if not local.startswith("//"):
            hit = ctx.get(pre)
            # JSON-LD 1.1: a term is a prefix only when its IRI ends in a gen-delim character, so
            # "data:image/png;base64,..." stays a data: URI although schema.org's context defines
            # the term "data" (http://schema.org/data), and "schema:name" still expands.
            if hit is not None and hit[0] and hit[0][-1] in _GEN_DELIMS:
                return hit[0] + local
        return s
    if vocab and ctx.vocab:
        return ctx.vocab + s
    return s


@functools.lru_cache(maxsize=1 << 16)
def term_name(iri: str) -> str:
    """Local name for a schema.org IRI, the IRI itself otherwise."""
    return schema_local_name(iri) or iri


# ---- parsing ---------------------------------------------------------------------------------
def parse_markup(
    markup: str | bytes | dict | list, *, allow_empty: bool = False, contexts: dict | None = None
) -> Markup:
    """Read one JSON-LD markup (JSON text or already-parsed JSON) into a :class:`Markup`.

    Raises :class:`MarkupError` with a reason for text that is not JSON, for a top level that is
    not an object or array, for a remote non-schema.org ``@context``, and for malformed nodes.
    A markup that describes no entity (``[]``, ``{"@graph": []}``) is refused too ("no entity in
    markup"), unless ``allow_empty``: a score that compares markups (MeMR) reads it as zero triples.

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
    return _Reader(contexts).read(markup, allow_empty)


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
    def __init__(self, contexts: dict | None = None) -> None:
        self.entities: dict[str, Entity] = {}
        self.roots: list[str] = []
        self.notes: list[str] = []
        self._blank = 0
        self._depth_limit = MAX_DEPTH
        # sets beside the lists, so that membership is not a scan (a list scan per root or per
        # type made the reading quadratic in the number of roots or types)
        self._root_ids: set[str] = set()
        self._typed: set[tuple[str, str]] = set()
        self._contexts = contexts if contexts is not None else {}

    def _apply(self, active: _Context, ctx: Any) -> _Context:
        """``_apply_context`` once per (active context, context object): the object and the active
        context are kept with the result, so their ids stay theirs while the cache lives."""
        if not isinstance(ctx, (dict, list)):
            return _apply_context(active, ctx)
        key = (id(active), id(ctx))
        hit = self._contexts.get(key)
        if hit is not None and hit[0] is ctx and hit[1] is active:
            return hit[2]
        out = _apply_context(active, ctx)
        self._contexts[key] = (ctx, active, out)
        return out

    def read(self, doc: dict | list, allow_empty: bool = False) -> Markup:
        base = _schema_context()
        for item, nodes in _top_level_items(doc):
            # JSON-LD starts an inline context from nothing (no schema.org term coercions); terms
            # it leaves undefined are still read in schema.org, as a markup without @context is.
            ctx = self._apply(base if item.get("@context") is None else _BARE, item.get("@context"))
            for node in nodes:
                self._root(self._node(node, ctx, 0).id)
        if not self.entities and not allow_empty:
            raise MarkupError("no entity in markup")
        return Markup(self.entities, self.roots, self.notes)

    def _root(self, node_id: str) -> None:
        if node_id in self.entities and node_id not in self._root_ids:
            self._root_ids.add(node_id)
            self.roots.append(node_id)

    def _new_blank(self) -> str:
        self._blank += 1
        return f"_:b{self._blank - 1}"

    def _node(self, obj: dict, ctx: _Context, depth: int) -> Ref:
        if depth > self._depth_limit:
            raise MarkupError(f"nesting deeper than {self._depth_limit} levels")
        if "@context" in obj:
            ctx = self._apply(ctx, obj["@context"])
        if any(ctx.alias(k) for k in obj):
            obj = _unalias(obj, ctx)
        raw_id = obj.get("@id")
        if raw_id is not None and not isinstance(raw_id, str):
            raise MarkupError(f"@id must be a string, got {type(raw_id).__name__}")
        node_id = _expand(ctx, raw_id, vocab=False) if raw_id else None
        descriptive = [k for k in obj if k not in ("@id", "@context") and k not in _IGNORED_KEYWORDS]
        if node_id is not None and not descriptive:
            return Ref(node_id)  # a pure reference: resolved against entities at any depth later
        if node_id is None:
            node_id = self._new_blank()
        ent = self.entities.get(node_id)
        if ent is None:
            ent = self.entities[node_id] = Entity(node_id)
        for key, val in obj.items():
            if key in ("@id", "@context"):
                continue
            if key == "@type":
                for t in val if isinstance(val, list) else [val]:
                    if t is None:
                        continue
                    if not isinstance(t, str):
                        raise MarkupError(f"@type values must be strings, got {type(t).__name__}")
                    name = ctx.term(t)[0]
                    if not name:
                        self.notes.append(f"type {t!r} dropped: null in the context")
                        continue
                    if (node_id, name) not in self._typed:
                        self._typed.add((node_id, name))
                        ent.types.append(name)
                continue
            if key == "@reverse":
                if not isinstance(val, dict):
                    raise MarkupError("@reverse must be an object")
                for rkey, rval in val.items():
                    prop = term_name(_expand(ctx, rkey, vocab=True))
                    if not prop:
                        self.notes.append(f"term {rkey!r} dropped: null in the context")
                        continue
                    for v in self._values(rval, ctx, False, depth):
                        if isinstance(v, Literal):
                            raise MarkupError(f"@reverse {rkey!r} has a literal value")
                        src = self.entities.get(v.id)
                        if src is None:
                            src = self.entities[v.id] = Entity(v.id)
                        src.add(prop, Ref(node_id))
                continue
            if key == "@nest":
                for nested in val if isinstance(val, list) else [val]:
                    if not isinstance(nested, dict):
                        raise MarkupError("@nest must hold objects")
                    self._node({**nested, "@id": node_id}, ctx, depth + 1)
                continue
            if key.startswith("@"):
                if key not in _IGNORED_KEYWORDS:
                    self.notes.append(f"ignored keyword {key} on {node_id}")
                continue
            prop, coerce = ctx.term(key)
            if not prop:
                self.notes.append(f"term {key!r} dropped: null in the context")
                continue
            for v in self._values(val, ctx, coerce, depth):
                ent.add(prop, v)
        return Ref(node_id)

    def _values(self, val: Any, ctx: _Context, coerce_id: bool, depth: int) -> list[Value]:
        out: list[Value] = []
        self._collect(val, ctx, coerce_id, depth, out)
        return out

    def _collect(self, val: Any, ctx: _Context, coerce_id: bool, depth: int, out: list[Value]) -> None:
        if val is None:
            return
        if isinstance(val, str):
            out.append(Ref(_expand(ctx, val, vocab=False)) if coerce_id else Literal(val))
        elif isinstance(val, (bool, int, float)):
            out.append(Literal(val))
        elif isinstance(val, list):
            for v in val:
                self._collect(v, ctx, coerce_id, depth, out)
        elif isinstance(val, dict):
            if "@value" in val:
                lit = val["@value"]
                if lit is None:
                    return
                if not isinstance(lit, (str, int, float, bool)):
                    raise MarkupError(f"@value must be a string, number or boolean, got {type(lit).__name__}")
                dt = val.get("@type")
                if dt is not None and not isinstance(dt, str):
                    raise MarkupError("@type of an @value object must be a string")
                lang = val.get("@language")
                out.append(
                    Literal(lit, _expand(ctx, dt, vocab=True) if dt else None, lang if isinstance(lang, str) else None)
                )
                return
            for container in ("@list", "@set"):
                if container in val:
                    self._collect(val[container], ctx, coerce_id, depth, out)
                    return
            out.append(self._node(val, ctx, depth + 1))
        else:
            raise MarkupError(f"unsupported JSON value {type(val).__name__}")


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
