"""JSON-LD 1.1 expansion (W3C JSON-LD 1.1 Processing Algorithms and API, sections 4 and 5), for the
markup reader (:mod:`udfs.schemaorg.markup`).

:func:`expand_document` gives the expanded form of one top-level object of a markup: context
processing with every term-definition feature of JSON-LD 1.1 (protected and propagated contexts,
property- and type-scoped contexts, ``@container`` maps: ``@list``, ``@set``, ``@index`` (also
property-valued), ``@language``, ``@id``, ``@type``, ``@graph``; ``@reverse``, ``@nest``,
``@prefix``, ``@json``, ``@included``, ``@direction``, keyword aliases, ``@base`` and relative IRIs
resolved by RFC 3986), and the errors the algorithms name (:class:`JsonLdError`, whose ``code`` is
the specification's error code). Keys are read in document order (the algorithm's ``ordered`` flag
off), so the reader numbers blank nodes and lists properties as the markup writes them.

What differs from the specification, on purpose (web markup is untrusted and mostly schema.org):

* no document is ever fetched. A context URL that names schema.org's own context (every spelling,
  :func:`udfs.schemaorg.namespace.is_schema_context_url`) is the bundled context, processed once
  per process; any other remote context, ``@import`` included, is a :class:`JsonLdError` with code
  ``loading remote context failed`` whose reason names the URL;
* the bundled schema.org context is read without its ``"@type": "Date"`` coercions (46 terms such
  as ``datePublished``): a date stays a plain string, as schema.org's validator, search engines and
  the validity rules read it (``http://schema.org/Date`` is no RDF datatype: a literal typed with it
  would fit no range). Its ``"@type": "@id"`` coercions (``url``, ``image``, ``sameAs``...) apply;
* the initial context is the caller's (:func:`schema_context` for a markup without ``@context``,
  :func:`vocab_context` under an inline one), not JSON-LD's empty one: see ``udfs.schemaorg.markup``;
* without a base IRI (``base=None``: markup read apart from its page) a relative IRI is kept as
  written rather than resolved; JSON-LD's RDF conversion then drops it, the reader keeps it
  (``udfs.schemaorg.markup.rdf_triples`` drops it);
* JSON ``null`` as ``@id`` or among the ``@type`` values (markup writes it) is no identifier or
  type, not an ``invalid @id value`` or ``invalid type value``;
* ``@vocab`` spelled as a schema.org context URL (``"@vocab": "https://schema.org"``) is the
  schema.org namespace;
* the processing mode is ``json-ld-1.1`` only (``"@version": 1.1`` is accepted, no 1.0 mode).

A context applied over another is a layer holding only the terms it defines, over its ``parent``:
a markup whose every node carries a small ``@context`` under a large one costs the small one per
node, not the large one. At most ``MAX_CONTEXT_LAYERS`` layers, so a lookup is bounded.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any

from udfs.schemaorg.namespace import SCHEMA_NS, context_document, is_schema_context_url
from udfs.schemaorg.vocab import DEFAULT_RELEASE

# Deeper nesting is refused (real markup nests a handful of levels; Python's recursion does not
# go much past a few hundred).
MAX_DEPTH = 100
# Contexts applied one over another (nested ``@context``s, the entries of a context array, scoped
# contexts): each is a layer looked through for a term, so their number bounds the cost of one
# lookup. Real markup stacks two or three.
MAX_CONTEXT_LAYERS = 4 * MAX_DEPTH

KEYWORDS = frozenset(
    "@base @container @context @default @direction @embed @explicit @graph @id @import @included @index "
    "@json @language @list @nest @none @omitDefault @prefix @preserve @protected @requireAll @reverse "
    "@set @type @value @version @vocab @propagate".split()
)
_KEYWORD_FORM = re.compile(r"^@[a-zA-Z]+$")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
_GEN_DELIMS = frozenset(":/?#[]@")
_CONTAINERS = frozenset(("@graph", "@id", "@index", "@language", "@list", "@set", "@type"))
_TERM_KEYS = frozenset(
    ("@id", "@reverse", "@container", "@context", "@direction", "@index", "@language", "@nest", "@prefix")
    + ("@protected", "@type")
)
_VALUE_KEYS = frozenset(("@direction", "@index", "@language", "@type", "@value"))
_UNSET: Any = object()  # a term definition entry that is absent (None is JSON null)
# Lookups a context keeps (Context.get, Processor.key_iri): bounds the memory of the shared ones,
# which untrusted markup fills with keys of its choosing.
MAX_KEYS_KEPT = 1 << 14
RDF_JSON = "http://www.w3.org/1999/02/22-rdf-syntax-ns#JSON"


class JsonLdError(ValueError):
    """A JSON-LD error: ``code`` is the specification's error code, ``reason`` (one line) starts with
    it and says where; a context that would have to be fetched is ``loading remote context failed``
    and its reason is ``remote @context not fetched: <URL>`` (or ``@import of ...``), as reject rows
    have always said it."""

    def __init__(self, code: str, detail: str = ""):
        self.code = code
        if code == LOADING_FAILED:
            self.reason = detail
        else:
            self.reason = f"{code}: {detail}" if detail else code
        super().__init__(self.reason)


LOADING_FAILED = "loading remote context failed"


# ---- IRIs ------------------------------------------------------------------------------------
def is_absolute_iri(s: str) -> bool:
    return bool(_SCHEME.match(s))


# characters an IRI may not hold (RFC 3987)
NOT_IRI = re.compile(r'[\x00-\x20<>"{}|^`\\]')


def is_well_formed_iri(s: str) -> bool:
    """RFC 3987 in short: absolute, none of the characters an IRI may not hold, one fragment at most."""
    return bool(_SCHEME.match(s)) and not NOT_IRI.search(s) and s.count("#") < 2


def _split(iri: str) -> tuple[str | None, str | None, str, str | None, str | None]:
    """RFC 3986 appendix B: (scheme, authority, path, query, fragment)."""
    m = re.match(r"^(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$", iri, re.S)
    return m.group(1), m.group(2), m.group(3), m.group(4), m.group(5)  # type: ignore[union-attr]


def _remove_dot_segments(path: str) -> str:
    out: list[str] = []
    while path:
        if path.startswith("../"):
            path = path[3:]
        elif path.startswith("./"):
            path = path[2:]
        elif path.startswith("/./"):
            path = path[2:]
        elif path == "/.":
            path = "/"
        elif path.startswith("/../"):
            path = path[3:]
            if out:
                out.pop()
        elif path == "/..":
            path = "/"
            if out:
                out.pop()
        elif path in (".", ".."):
            path = ""
        else:
            i = path.find("/", 1)
            seg, path = (path, "") if i < 0 else (path[:i], path[i:])
            out.append(seg)
    return "".join(out)


def resolve_iri(base: str | None, ref: str) -> str:
    """``ref`` resolved against ``base`` (RFC 3986 section 5.2); kept as written without a base."""
    if base is None or _SCHEME.match(ref):
        return ref
    bs, ba, bp, bq, _ = _split(base)
    _, ra, rp, rq, rf = _split(ref)
    if ra is not None:
        a, p, q = ra, _remove_dot_segments(rp), rq
    elif rp == "":
        a, p, q = ba, bp, (rq if rq is not None else bq)
    else:
        if rp.startswith("/"):
            p = _remove_dot_segments(rp)
        else:
            merged = ("/" + rp) if (ba is not None and bp == "") else bp[: bp.rfind("/") + 1] + rp
            p = _remove_dot_segments(merged)
        a, q = ba, rq
    out = (bs + ":") if bs is not None else ""
    if a is not None:
        out += "//" + a
    out += p
    if q is not None:
        out += "?" + q
    if rf is not None:
        out += "#" + rf
    return out


# ---- contexts --------------------------------------------------------------------------------
class Term:
    """One term definition (JSON-LD 1.1, 4.1): ``iri`` None is a term decoupled from ``@vocab``."""

    __slots__ = (
        "iri",
        "reverse",
        "type",
        "language",
        "direction",
        "container",
        "context",
        "base",
        "protected",
        "prefix",
        "index",
        "nest",
    )

    def __init__(self, iri: str | None) -> None:
        self.iri = iri
        self.reverse = False
        self.type: str | None = None
        self.language: Any = _UNSET
        self.direction: Any = _UNSET
        self.container: frozenset = frozenset()
        self.context: Any = _UNSET
        self.base: str | None = None
        self.protected = False
        self.prefix = False
        self.index: str | None = None
        self.nest: str | None = None

    def same(self, other: "Term") -> bool:
        """Equal but for ``protected`` (a protected term may be defined again the same way)."""
        return all(getattr(self, k) == getattr(other, k) for k in self.__slots__ if k not in ("protected", "base"))


class Context:
    """An active context: a layer of term definitions over ``parent``, and the context's own base
    IRI, vocabulary mapping, default language and direction, and ``previous`` (the context a
    non-propagated type-scoped context reverts to)."""

    __slots__ = (
        "terms",
        "parent",
        "base",
        "vocab",
        "language",
        "direction",
        "previous",
        "protected",
        "_cache",
        "_keys",
        "original_base",
        "initial_vocab",
    )

    def __init__(self, parent: "Context | None", base: str | None, original_base: str | None = None) -> None:
        self.terms: dict[str, Term] = {}
        self.parent = parent
        self.base = base
        self.original_base = original_base
        self.initial_vocab: str | None = None
        self.vocab: str | None = None
        self.language: str | None = None
        self.direction: str | None = None
        self.previous: Context | None = None
        self.protected = False  # a protected term in this layer or one below
        self._cache: dict[str, Term | None] = {}
        self._keys: dict[str, str | None] = {}  # Processor.key_iri's answers: a context is not changed once read
        n, c = 0, parent
        while c is not None and n <= MAX_CONTEXT_LAYERS:
            n, c = n + 1, c.parent
        if n > MAX_CONTEXT_LAYERS:
            raise JsonLdError("context overflow", f"more than {MAX_CONTEXT_LAYERS} contexts applied one over another")

    def layer(self) -> "Context":
        """A new empty layer over this context, inheriting its settings."""
        c = Context(self, self.base, self.original_base)
        c.initial_vocab = self.initial_vocab
        c.vocab, c.language, c.direction, c.previous = self.vocab, self.language, self.direction, self.previous
        c.protected = self.protected
        return c

    def get(self, key: str) -> Term | None:
        """The definition of ``key`` in the nearest layer that defines it."""
        try:
            return self._cache[key]
        except KeyError:
            pass
        c: Context | None = self
        hit = None
        while c is not None:
            hit = c.terms.get(key)
            if hit is not None:
                break
            if c.terms is _NULLED:
                break
            c = c.parent
        if hit is _REMOVED:
            hit = None
        if len(self._cache) < MAX_KEYS_KEPT:  # shared contexts live as long as the process
            self._cache[key] = hit
        return hit

    def has_terms(self) -> bool:
        c: Context | None = self
        while c is not None:
            if c.terms:
                return True
            c = c.parent
        return False


_NULLED: dict = {}  # the terms of a layer that ends the lookup (a null context: nothing below counts)
_REMOVED = Term(None)  # a term removed from the active context by a layer (before it is defined again)


# The initial contexts are one object per base IRI, so that an inline context applied over one is
# found in the callers' cache (Processor.apply) by every markup that reads it: the pages path reads
# each root of a block apart, with the block's context.
@functools.lru_cache(maxsize=64)
def initial_context(base: str | None) -> Context:
    """JSON-LD's own initial context: no terms, no vocabulary mapping."""
    return Context(None, base, base)


@functools.lru_cache(maxsize=64)
def vocab_context(base: str | None) -> Context:
    """JSON-LD's initial context with schema.org's ``@vocab``: terms an inline context leaves
    undefined are read in schema.org."""
    c = Context(None, base, base)
    c.vocab = c.initial_vocab = SCHEMA_NS
    return c


@functools.lru_cache(maxsize=1)
def _schema_raw() -> dict:
    """The bundled schema.org context, its ``"@type": "Date"`` coercions left out (module docstring)."""
    raw = dict(context_document(DEFAULT_RELEASE))
    for k, v in raw.items():
        if isinstance(v, dict) and v.get("@type") == "Date":
            raw[k] = {kk: vv for kk, vv in v.items() if kk != "@type"}
    return raw


@functools.lru_cache(maxsize=1)
def _schema_terms() -> Context:
    """The bundled schema.org context processed once (no base IRI: it has no relative IRIs)."""
    return Processor().process(initial_context(None), _schema_raw(), None, remote=True)


@functools.lru_cache(maxsize=64)
def schema_context(base: str | None) -> Context:
    """The schema.org context as the initial context of a markup without ``@context``."""
    sc = _schema_terms()
    c = Context(sc, base, base)
    c.vocab = sc.vocab
    c.initial_vocab = SCHEMA_NS
    return c


class Processor:
    """The context processing, IRI expansion and expansion algorithms over one document.

    ``cache``: applied contexts by (active context, context object), shared by callers that read
    parts of one document (``udfs.schemaorg.markup.parse_markup``'s ``contexts``). ``blank_ids``
    collects the blank node identifiers the document writes, so that the reader names anonymous
    nodes apart from them."""

    def __init__(self, cache: dict | None = None) -> None:
        self.cache = cache if cache is not None else {}
        self.blank_ids: set[str] = set()
        self.notes: list[str] = []

    # -- context processing (4.1.2) --
    def apply(self, active: Context, local: Any, base: str | None, **kw: Any) -> Context:
        """``process`` once per (active context, context object, flags) while ``cache`` lives."""
        if not isinstance(local, (dict, list)):
            return self.process(active, local, base, **kw)
        key = (id(active), id(local), base, tuple(sorted(kw.items())))
        hit = self.cache.get(key)
        if hit is not None and hit[0] is local and hit[1] is active:
            return hit[2]
        out = self.process(active, local, base, **kw)
        self.cache[key] = (local, active, out)
        return out

    def process(
        self,
        active: Context,
        local: Any,
        base: str | None,
        *,
        remote: bool = False,
        override_protected: bool = False,
        propagate: bool = True,
        validate_scoped: bool = True,
    ) -> Context:
        if isinstance(local, dict) and "@propagate" in local:
            propagate = local["@propagate"]
            if not isinstance(propagate, bool):
                raise JsonLdError("invalid @propagate value", repr(propagate)[:80])
        result = active.layer()
        if not propagate and result.previous is None:
            result.previous = active
        for ctx in local if isinstance(local, list) else [local]:
            if ctx is None:
                if not override_protected and result.protected:
                    raise JsonLdError("invalid context nullification", "a null context over protected terms")
                prev = result
                result = Context(result, active.original_base, active.original_base)
                result.terms = _NULLED
                result.initial_vocab = active.initial_vocab
                result = result.layer()
                result.vocab, result.language, result.direction, result.previous = (
                    active.initial_vocab,
                    None,
                    None,
                    None,
                )
                result.protected = False
                if not propagate:
                    result.previous = prev
                continue
            if isinstance(ctx, str):
                result = self._remote(result, ctx, base)
                continue
            if not isinstance(ctx, dict):
                raise JsonLdError(
                    "invalid local context", f"@context must be a string, object or array, got {type(ctx).__name__}"
                )
            result = self._local(result, ctx, base, remote, override_protected, validate_scoped)
        return result

    def _remote(self, result: Context, url: str, base: str | None) -> Context:
        if not is_schema_context_url(url):
            raise JsonLdError(LOADING_FAILED, f"remote @context not fetched: {resolve_iri(base, url)[:200]}")
        sc = _schema_terms()
        if result.protected:
            # schema.org's terms must not redefine a protected one: processed term by term
            return self.process(result, _schema_raw(), None, remote=True)
        out = Context(result, result.base, result.original_base)
        out.terms = sc.terms
        out.vocab, out.language, out.direction, out.previous = (
            sc.vocab,
            result.language,
            result.direction,
            result.previous,
        )
        out.protected = result.protected
        return out

    def _local(
        self,
        result: Context,
        ctx: dict,
        base: str | None,
        remote: bool,
        override_protected: bool,
        validate_scoped: bool,
    ) -> Context:
        result = result.layer() if result.terms else result
        if "@version" in ctx and ctx["@version"] != 1.1:
            raise JsonLdError("invalid @version value", repr(ctx["@version"])[:80])
        if "@import" in ctx:
            imp = ctx["@import"]
            if not isinstance(imp, str):
                raise JsonLdError("invalid @import value", repr(imp)[:80])
            raise JsonLdError(LOADING_FAILED, f"@import of a remote context not fetched: {imp[:200]}")
        if "@base" in ctx and not remote:
            v = ctx["@base"]
            if v is None:
                result.base = None
            elif not isinstance(v, str):
                raise JsonLdError("invalid base IRI", repr(v)[:80])
            elif is_absolute_iri(v) or result.base is None:
                # a relative @base without a base to resolve it against stays relative (as relative IRIs do)
                result.base = v if is_absolute_iri(v) or result.base is None else resolve_iri(result.base, v)
            else:
                result.base = resolve_iri(result.base, v)
        if "@vocab" in ctx:
            v = ctx["@vocab"]
            if v is None:
                result.vocab = None
            elif not isinstance(v, str):
                raise JsonLdError("invalid vocab mapping", repr(v)[:80])
            elif is_schema_context_url(v):
                result.vocab = SCHEMA_NS
            else:
                iri = self.expand_iri(result, v, vocab=True, relative=True)
                if iri is None or not (is_absolute_iri(iri) or iri.startswith("_:") or result.base is None):
                    raise JsonLdError("invalid vocab mapping", repr(v)[:80])
                result.vocab = iri
        if "@language" in ctx:
            v = ctx["@language"]
            if v is not None and not isinstance(v, str):
                raise JsonLdError("invalid default language", repr(v)[:80])
            result.language = v.lower() if isinstance(v, str) else None
        if "@direction" in ctx:
            v = ctx["@direction"]
            if v is not None and v not in ("ltr", "rtl"):
                raise JsonLdError("invalid base direction", repr(v)[:80])
            result.direction = v
        if "@propagate" in ctx and not isinstance(ctx["@propagate"], bool):
            raise JsonLdError("invalid @propagate value", repr(ctx["@propagate"])[:80])
        protected = ctx.get("@protected", False)
        if not isinstance(protected, bool):
            raise JsonLdError("invalid @protected value", repr(protected)[:80])
        defined: dict[str, bool] = {}
        for term in ctx:
            if term in (
                "@base",
                "@direction",
                "@import",
                "@language",
                "@propagate",
                "@protected",
                "@version",
                "@vocab",
            ):
                continue
            self._define(result, ctx, term, defined, base, protected, override_protected, remote, validate_scoped)
        return result

    # -- create term definition (4.2.2) --
    def _define(
        self,
        active: Context,
        local: dict,
        term: str,
        defined: dict[str, bool],
        base: str | None,
        protected: bool,
        override_protected: bool,
        remote: bool,
        validate_scoped: bool,
    ) -> None:
        if term in defined:
            if defined[term]:
                return
            raise JsonLdError("cyclic IRI mapping", term[:80])
        if term == "":
            raise JsonLdError("invalid term definition", "the empty term")
        defined[term] = False
        value = local[term]
        if term == "@type":
            if not isinstance(value, dict) or not value or set(value) - {"@container", "@protected"}:
                raise JsonLdError("keyword redefinition", "@type")
            if "@container" in value and value["@container"] != "@set":
                raise JsonLdError("keyword redefinition", "@type")
        elif term in KEYWORDS:
            raise JsonLdError("keyword redefinition", term)
        elif _KEYWORD_FORM.match(term):
            self.notes.append(f"term {term!r} ignored: it has the form of a keyword")
            defined[term] = True
            return
        previous = active.get(term)
        active.terms[term] = _REMOVED
        active._cache.pop(term, None)
        simple = False
        if value is None:
            value = {"@id": None}
        elif isinstance(value, str):
            value, simple = {"@id": value}, True
        elif not isinstance(value, dict):
            raise JsonLdError("invalid term definition", f"{term!r} is a {type(value).__name__}")
        d = Term(None)
        if "@protected" in value:
            if not isinstance(value["@protected"], bool):
                raise JsonLdError("invalid @protected value", term[:80])
            d.protected = value["@protected"]
        else:
            d.protected = protected
        if "@type" in value:
            t = value["@type"]
            if not isinstance(t, str):
                raise JsonLdError("invalid type mapping", f"{term!r}: {t!r}"[:120])
            t = self.expand_iri(active, t, vocab=True, local=local, defined=defined)
            if t not in ("@id", "@json", "@none", "@vocab") and not (t and is_absolute_iri(t)):
                raise JsonLdError("invalid type mapping", f"{term!r}: {t!r}"[:120])
            d.type = t
        if "@reverse" in value:
            if self._reverse_definition(active, local, term, d, value, defined):
                self._finish(active, term, d, value, previous, override_protected, defined)
            return
        if "@id" in value and value["@id"] != term:
            if not self._id_definition(active, local, term, d, value["@id"], defined, simple):
                return
        elif ":" in term[1:]:
            prefix, _, suffix = term.partition(":")
            if prefix in local:
                self._define(
                    active, local, prefix, defined, base, protected, override_protected, remote, validate_scoped
                )
            pd = active.get(prefix)
            if pd is not None and pd.iri is not None and not suffix.startswith("//"):
                d.iri = pd.iri + suffix
            else:
                d.iri = term
        elif "/" in term:
            iri = self.expand_iri(active, term, vocab=True)
            if iri is None or not is_absolute_iri(iri):
                raise JsonLdError("invalid IRI mapping", term[:80])
            d.iri = iri
        elif term == "@type":
            d.iri = "@type"
        elif active.vocab is None:
            raise JsonLdError("invalid IRI mapping", f"{term!r} has no IRI and there is no @vocab"[:120])
        else:
            d.iri = active.vocab + term
        self._definition_options(active, term, d, value, base)
        extra = set(value) - _TERM_KEYS
        if extra:
            raise JsonLdError("invalid term definition", f"{term!r} has {sorted(extra)[0]}"[:120])
        self._finish(active, term, d, value, previous, override_protected, defined)

    def _reverse_definition(self, active, local, term: str, d, value: dict, defined: dict) -> bool:
        """Step 14 of Create Term Definition: a reverse property's IRI and container; False where
        the term is ignored (its @reverse has the form of a keyword)."""
        if "@id" in value or "@nest" in value:
            raise JsonLdError("invalid reverse property", term[:80])
        r = value["@reverse"]
        if not isinstance(r, str):
            raise JsonLdError("invalid IRI mapping", f"@reverse of {term!r}"[:120])
        if _KEYWORD_FORM.match(r):
            self.notes.append(f"term {term!r} ignored: its @reverse has the form of a keyword")
            defined[term] = True
            return False
        iri = self.expand_iri(active, r, vocab=True, local=local, defined=defined)
        if iri is None or ":" not in iri:
            raise JsonLdError("invalid IRI mapping", f"@reverse of {term!r}"[:120])
        d.iri, d.reverse = iri, True
        if "@container" in value:
            c = value["@container"]
            if c not in ("@set", "@index", None):
                raise JsonLdError("invalid reverse property", f"container of {term!r}"[:120])
            d.container = frozenset([c]) if c else frozenset()
        return True

    def _id_definition(self, active, local, term: str, d, i, defined: dict, simple: bool) -> bool:
        """Step 16 of Create Term Definition: the IRI an explicit @id gives the term (None: no
        IRI), a compact IRI or IRI term checked against it, and the prefix flag of a simple term;
        False where the term is ignored (its @id has the form of a keyword)."""
        if i is None:
            d.iri = None
            return True
        if not isinstance(i, str):
            raise JsonLdError("invalid IRI mapping", f"@id of {term!r}"[:120])
        if i not in KEYWORDS and _KEYWORD_FORM.match(i):
            self.notes.append(f"term {term!r} ignored: its @id has the form of a keyword")
            defined[term] = True
            return False
        iri = self.expand_iri(active, i, vocab=True, local=local, defined=defined)
        if iri is None or (iri not in KEYWORDS and ":" not in iri):
            raise JsonLdError("invalid IRI mapping", f"@id of {term!r}: {i!r}"[:120])
        if iri == "@context":
            raise JsonLdError("invalid keyword alias", term[:80])
        d.iri = iri
        if ":" in term[1:-1] or "/" in term:
            defined[term] = True
            if self.expand_iri(active, term, vocab=True, local=local, defined=defined) != iri:
                raise JsonLdError("invalid IRI mapping", f"{term!r} is an IRI other than its @id"[:120])
        if ":" not in term and "/" not in term and simple and (iri[-1] in _GEN_DELIMS or iri.startswith("_:")):
            d.prefix = True
        return True

    def _definition_options(self, active, term: str, d, value: dict, base) -> None:
        """Steps 19-27 of Create Term Definition: the definition's container, index, scoped
        context, language, direction, nest and prefix, each checked as the specification says."""
        if "@container" in value:
            c = value["@container"]
            cs = c if isinstance(c, list) else [c]
            if not all(isinstance(x, str) and x in _CONTAINERS for x in cs) or not _valid_container(cs):
                raise JsonLdError("invalid container mapping", f"{term!r}: {c!r}"[:120])
            d.container = frozenset(cs)
            if "@type" in d.container:
                if d.type is None:
                    d.type = "@id"
                elif d.type not in ("@id", "@vocab"):
                    raise JsonLdError("invalid type mapping", f"{term!r}: a @type container needs @id or @vocab")
        if "@index" in value:
            ix = value["@index"]
            if "@index" not in d.container or not isinstance(ix, str) or ix.startswith("@"):
                raise JsonLdError("invalid term definition", f"@index of {term!r}"[:120])
            d.index = ix
        if "@context" in value:
            sc = value["@context"]
            try:
                self.process(active, sc, base, override_protected=True, validate_scoped=False)
            except JsonLdError as e:
                if e.code == LOADING_FAILED:
                    raise
                raise JsonLdError("invalid scoped context", f"{term!r}: {e.reason}"[:200]) from None
            d.context, d.base = sc, base
        if "@language" in value and "@type" not in value:
            lang = value["@language"]
            if lang is not None and not isinstance(lang, str):
                raise JsonLdError("invalid language mapping", term[:80])
            d.language = lang.lower() if isinstance(lang, str) else None
        if "@direction" in value and "@type" not in value:
            dr = value["@direction"]
            if dr not in (None, "ltr", "rtl"):
                raise JsonLdError("invalid base direction", term[:80])
            d.direction = dr
        if "@nest" in value:
            n = value["@nest"]
            if not isinstance(n, str) or (n != "@nest" and n.startswith("@")):
                raise JsonLdError("invalid @nest value", term[:80])
            d.nest = n
        if "@prefix" in value:
            if ":" in term or "/" in term:
                raise JsonLdError("invalid term definition", f"@prefix on {term!r}"[:120])
            if not isinstance(value["@prefix"], bool):
                raise JsonLdError("invalid @prefix value", term[:80])
            d.prefix = value["@prefix"]
            if d.prefix and d.iri in KEYWORDS:
                raise JsonLdError("invalid term definition", f"{term!r} is a keyword alias and a prefix"[:120])

    def _finish(
        self,
        active: Context,
        term: str,
        d: Term,
        value: dict,
        previous: Term | None,
        override_protected: bool,
        defined: dict[str, bool],
    ) -> None:
        if not override_protected and previous is not None and previous.protected:
            if not d.same(previous):
                raise JsonLdError("protected term redefinition", term[:80])
            d = previous
        active.terms[term] = d
        active._cache.pop(term, None)
        if d.protected:
            active.protected = True
        defined[term] = True

    # -- IRI expansion (5.2.2) --
    def expand_iri(
        self,
        active: Context,
        value: str,
        *,
        vocab: bool = False,
        relative: bool = False,
        local: dict | None = None,
        defined: dict[str, bool] | None = None,
    ) -> str | None:
        if value in KEYWORDS:
            return value
        if value.startswith("@") and _KEYWORD_FORM.match(value):
            return None
        if local is not None and value in local and defined is not None and defined.get(value) is not True:
            self._define(
                active, local, value, defined, active.base, local.get("@protected") is True, False, False, True
            )
        d = active.get(value)
        if d is not None and d.iri in KEYWORDS:
            return d.iri
        if vocab and d is not None:
            return d.iri
        i = value.find(":", 1)
        if i > 0:
            prefix, suffix = value[:i], value[i + 1 :]
            if prefix == "_":
                self.blank_ids.add(value)
                return value
            if suffix.startswith("//"):
                return value
            if local is not None and prefix in local and defined is not None and defined.get(prefix) is not True:
                self._define(
                    active, local, prefix, defined, active.base, local.get("@protected") is True, False, False, True
                )
            pd = active.get(prefix)
            if pd is not None and pd.iri is not None and pd.prefix:
                return pd.iri + suffix
            if is_absolute_iri(value):
                return value
        if vocab and active.vocab is not None:
            return active.vocab + value
        if relative:
            return resolve_iri(active.base, value)
        return value

    def key_iri(self, active: Context, key: str) -> str | None:
        """``expand_iri(active, key, vocab=True)`` of a key of a node object, kept on the context (the
        schema.org context's keys are expanded once per process, not once per markup)."""
        hit = active._keys.get(key, _UNSET)
        if hit is _UNSET:
            hit = self.expand_iri(active, key, vocab=True)
            if len(active._keys) < MAX_KEYS_KEPT and not key.startswith("_:"):
                active._keys[key] = hit
        return hit

    # -- expansion (5.1.2) --
    def expand(
        self,
        active: Context,
        prop: str | None,
        element: Any,
        base: str | None,
        from_map: bool = False,
        depth: int = 0,
    ) -> Any:
        if element is None:
            return None
        if depth > MAX_DEPTH:
            raise JsonLdError("nesting too deep", f"nesting deeper than {MAX_DEPTH} levels")
        pdef = active.get(prop) if prop is not None and not prop.startswith("@") else None
        scoped = pdef.context if pdef is not None else _UNSET
        if isinstance(element, list):
            out: list = []
            is_list = pdef is not None and "@list" in pdef.container
            for item in element:
                e = self.expand(active, prop, item, base, from_map, depth)
                if is_list and isinstance(e, list):
                    e = {"@list": e}
                if isinstance(e, list):
                    out.extend(e)
                elif e is not None:
                    out.append(e)
            return out
        if not isinstance(element, dict):
            if prop is None or prop == "@graph":
                return None  # a free-floating value
            if not isinstance(element, (str, int, float, bool)):
                raise JsonLdError("invalid value", f"unsupported JSON value {type(element).__name__}")
            if scoped is not _UNSET:
                active = self.apply(active, scoped, pdef.base)  # type: ignore[union-attr]
            return self.expand_value(active, prop, element)
        if active.previous is not None and not from_map:
            keep = False
            for k in element:
                x = self.expand_iri(active, k, vocab=True)
                if x == "@value" or (x == "@id" and len(element) == 1):
                    keep = True
                    break
            if not keep:
                active = active.previous
        if scoped is not _UNSET:
            active = self.apply(active, scoped, pdef.base, override_protected=True)  # type: ignore[union-attr]
        if "@context" in element:
            active = self.apply(active, element["@context"], base)
        type_scoped = active
        input_type = None
        type_keys = [k for k in element if k == "@type" or self.key_iri(active, k) == "@type"]
        for k in sorted(type_keys):
            v = element[k]
            terms = sorted(t for t in (v if isinstance(v, list) else [v]) if isinstance(t, str))
            for t in terms:
                td = type_scoped.get(t)
                if td is not None and td.context is not _UNSET:
                    active = self.apply(active, td.context, td.base, propagate=False)
        if type_keys:
            v = element[sorted(type_keys)[0]]
            last = v[-1] if isinstance(v, list) and v else v
            if isinstance(last, str):
                input_type = self.expand_iri(active, last, vocab=True)
        result: dict = {}
        nests: list[str] = []
        self._expand_object(result, nests, active, type_scoped, prop, element, input_type, base, depth)
        return self._finish_node(result, prop)

    def _finish_node(self, result: dict, prop: str | None) -> Any:
        if "@id" in result and result["@id"] is None:
            self.notes.append("a node whose @id has the form of a keyword dropped")
            return None
        if "@value" in result:
            if set(result) - _VALUE_KEYS or ("@type" in result and ("@language" in result or "@direction" in result)):
                raise JsonLdError("invalid value object", ", ".join(sorted(result))[:120])
            t = result.get("@type")
            if t == "@json":
                return result
            v = result["@value"]
            if v is None:
                return None
            if not isinstance(v, str) and "@language" in result:
                raise JsonLdError("invalid language-tagged value", repr(v)[:80])
            if t is not None and not (isinstance(t, str) and is_well_formed_iri(t) and not t.startswith("_:")):
                raise JsonLdError("invalid typed value", repr(t)[:80])
        elif "@type" in result and not isinstance(result["@type"], list):
            result["@type"] = [result["@type"]]
        elif "@set" in result or "@list" in result:
            if len(result) > 2 or (len(result) == 2 and "@index" not in result):
                raise JsonLdError("invalid set or list object", ", ".join(sorted(result))[:120])
            if "@set" in result:
                return result["@set"]
        if len(result) == 1 and "@language" in result:
            return None
        if prop is None or prop == "@graph":
            if not result or "@value" in result or "@list" in result:
                return None
            if len(result) == 1 and "@id" in result:
                return None
        return result

    def _expand_object(
        self,
        result: dict,
        nests: list[str],
        active: Context,
        type_scoped: Context,
        prop: str | None,
        element: dict,
        input_type: str | None,
        base: str | None,
        depth: int,
    ) -> None:
        for key, value in element.items():
            if key == "@context":
                continue
            xp = self.key_iri(active, key)
            if xp is None or (":" not in xp and xp not in KEYWORDS):
                td = active.get(key)
                self.notes.append(
                    f"term {key!r} dropped: null in the context"
                    if td is not None
                    else f"term {key!r} dropped: not defined in the context"
                )
                continue
            if xp in KEYWORDS:
                self._keyword(result, nests, active, type_scoped, prop, key, xp, value, input_type, base, depth)
                continue
            td = active.get(key)
            container = td.container if td is not None else frozenset()
            if td is not None and td.type == "@json":
                ev: Any = {"@value": value, "@type": "@json"}
            elif "@language" in container and isinstance(value, dict):
                ev = self._language_map(active, td, value)
            elif container & {"@index", "@type", "@id"} and isinstance(value, dict):
                ev = self._index_map(active, td, key, value, base, depth)  # type: ignore[arg-type]
            else:
                ev = self.expand(active, key, value, base, depth=depth + 1)
            if ev is None:
                continue
            if "@list" in container and not (isinstance(ev, dict) and "@list" in ev):
                ev = {"@list": ev if isinstance(ev, list) else [ev]}
            if "@graph" in container and "@id" not in container and "@index" not in container:
                ev = [{"@graph": x if isinstance(x, list) else [x]} for x in (ev if isinstance(ev, list) else [ev])]
            if td is not None and td.reverse:
                rmap = result.setdefault("@reverse", {})
                for item in ev if isinstance(ev, list) else [ev]:
                    if isinstance(item, dict) and ("@value" in item or "@list" in item):
                        raise JsonLdError("invalid reverse property value", key[:80])
                    rmap.setdefault(xp, []).append(item)
            else:
                result.setdefault(xp, []).extend(ev if isinstance(ev, list) else [ev])
        for nk in nests:
            nd = active.get(nk)
            nactive = active
            if nd is not None and nd.context is not _UNSET:
                nactive = self.apply(active, nd.context, nd.base, override_protected=True)
            for nv in element[nk] if isinstance(element[nk], list) else [element[nk]]:
                if not isinstance(nv, dict) or any(self.expand_iri(nactive, k, vocab=True) == "@value" for k in nv):
                    raise JsonLdError("invalid @nest value", nk[:80])
                inner: list[str] = []
                self._expand_object(result, inner, nactive, type_scoped, prop, nv, input_type, base, depth + 1)

    def _keyword(
        self,
        result: dict,
        nests: list[str],
        active: Context,
        type_scoped: Context,
        prop: str | None,
        key: str,
        xp: str,
        value: Any,
        input_type: str | None,
        base: str | None,
        depth: int,
    ) -> None:
        if prop == "@reverse":
            raise JsonLdError("invalid reverse property map", key[:80])
        if xp in result and xp not in ("@included", "@type"):
            raise JsonLdError("colliding keywords", xp)
        if xp == "@id":
            if value is None:
                return  # JSON null as @id: no identifier (markup writes it), not an error
            if not isinstance(value, str):
                raise JsonLdError("invalid @id value", f"@id must be a string, got {type(value).__name__}")
            # None: a keyword-like @id ("@ignoreMe"), whose node is dropped (_finish_node)
            ev: Any = self.expand_iri(active, value, relative=True)
        elif xp == "@type":
            # JSON null among the types is no type (markup writes "@type": null), not an error
            vals = [t for t in (value if isinstance(value, list) else [value]) if t is not None]
            if not vals and "@type" not in result:
                return
            if not all(isinstance(t, str) for t in vals):
                raise JsonLdError("invalid type value", f"@type values must be strings, got {value!r}"[:120])
            ev = [self.expand_iri(type_scoped, t, vocab=True, relative=True) for t in vals]
            ev = [t for t in ev if t is not None]
            if len(ev) < len(vals):
                self.notes.append(f"type {value!r} dropped: null in the context"[:160])
            if not isinstance(value, list):
                ev = ev[0] if ev else None
                if ev is None:
                    return
            if "@type" in result:
                have = result["@type"] if isinstance(result["@type"], list) else [result["@type"]]
                ev = have + (ev if isinstance(ev, list) else [ev])
        elif xp == "@graph":
            ev = self.expand(active, "@graph", value, base, depth=depth + 1)
            ev = ev if isinstance(ev, list) else ([] if ev is None else [ev])
        elif xp == "@included":
            ev = self._included(result, active, prop, key, value, base, depth)
        elif xp == "@value":
            if input_type == "@json":
                ev = value
            elif value is not None and not isinstance(value, (str, int, float, bool)):
                raise JsonLdError(
                    "invalid value object value",
                    f"@value must be a string, number or boolean, got {type(value).__name__}",
                )
            else:
                ev = value
            result["@value"] = ev
            return
        elif xp == "@language":
            if not isinstance(value, str):
                raise JsonLdError("invalid language-tagged string", repr(value)[:80])
            ev = value.lower()
        elif xp == "@direction":
            if value not in ("ltr", "rtl"):
                raise JsonLdError("invalid base direction", repr(value)[:80])
            ev = value
        elif xp == "@index":
            if not isinstance(value, str):
                raise JsonLdError("invalid @index value", repr(value)[:80])
            ev = value
        elif xp == "@list":
            if prop is None or prop == "@graph":
                return
            ev = self.expand(active, prop, value, base, depth=depth + 1)
            ev = ev if isinstance(ev, list) else ([] if ev is None else [ev])
        elif xp == "@set":
            ev = self.expand(active, prop, value, base, depth=depth + 1)
        elif xp == "@reverse":
            self._reverse_map(result, active, value, base, depth)
            return
        elif xp == "@nest":
            if key not in nests:
                nests.append(key)
            return
        else:
            # framing keywords and the like: no triple
            self.notes.append(f"ignored keyword {key}")
            return
        result[xp] = ev

    def _included(self, result: dict, active: Context, prop, key: str, value: Any, base, depth: int) -> list:
        """Expansion's step 13.4.6: the @included node objects expanded (each a node object, none
        a value, list or set object), after those the result already holds."""
        for n in value if isinstance(value, list) else [value]:
            if not isinstance(n, dict) or any(
                self.expand_iri(active, k, vocab=True) in ("@value", "@list", "@set") for k in n
            ):
                raise JsonLdError("invalid @included value", repr(n)[:80])
        ev = self.expand(active, prop, value, base, depth=depth + 1)
        ev = ev if isinstance(ev, list) else ([] if ev is None else [ev])
        for n in ev:
            if not isinstance(n, dict) or "@value" in n or "@list" in n or "@set" in n:
                raise JsonLdError("invalid @included value", key[:80])
        return result["@included"] + ev if "@included" in result else ev

    def _reverse_map(self, result: dict, active: Context, value: Any, base: str | None, depth: int) -> None:
        """Expansion's step 13.4.13: an @reverse object expanded; a property reversed twice is a
        forward one again, the others go to the result's @reverse map (no value or list object)."""
        if not isinstance(value, dict):
            raise JsonLdError("invalid @reverse value", "@reverse must be an object")
        ev = self.expand(active, "@reverse", value, base, depth=depth + 1) or {}
        for p, items in ev.get("@reverse", {}).items():
            result.setdefault(p, []).extend(items)
        rest = {p: v for p, v in ev.items() if p != "@reverse"}
        if rest:
            rmap = result.setdefault("@reverse", {})
            for p, items in rest.items():
                for item in items:
                    if isinstance(item, dict) and ("@value" in item or "@list" in item):
                        raise JsonLdError("invalid reverse property value", p[:80])
                    rmap.setdefault(p, []).append(item)

    def _language_map(self, active: Context, td: Term, value: dict) -> list:
        out = []
        direction = td.direction if td.direction is not _UNSET else active.direction
        for lang, lv in value.items():
            for item in lv if isinstance(lv, list) else [lv]:
                if item is None:
                    continue
                if not isinstance(item, str):
                    raise JsonLdError("invalid language map value", repr(item)[:80])
                v: dict = {"@value": item}
                if self.expand_iri(active, lang, vocab=True) != "@none":
                    v["@language"] = lang.lower()
                if direction is not None:
                    v["@direction"] = direction
                out.append(v)
        return out

    def _index_map(self, active: Context, td: Term, key: str, value: dict, base: str | None, depth: int) -> list:
        out = []
        container = td.container
        index_key = td.index or "@index"
        for index, iv in value.items():
            map_ctx = active
            if "@type" in container:
                outer = active.previous or active
                itd = outer.get(index)
                if itd is not None and itd.context is not _UNSET:
                    map_ctx = self.apply(outer, itd.context, itd.base)
            xi = self.expand_iri(active, index, vocab=True)
            items = self.expand(
                map_ctx, key, iv if isinstance(iv, list) else [iv], base, from_map=True, depth=depth + 1
            )
            for item in items:
                if "@graph" in container and not (isinstance(item, dict) and "@graph" in item):
                    item = {"@graph": item if isinstance(item, list) else [item]}
                if "@index" in container and index_key != "@index" and xi != "@none":
                    rx = self.expand_value(active, index_key, index)
                    xk = self.expand_iri(active, index_key, vocab=True)
                    if "@value" in item:
                        raise JsonLdError("invalid value object", f"a property-valued index on a value ({key!r})"[:120])
                    item[xk] = [rx] + item.get(xk, [])
                elif "@index" in container and "@index" not in item and xi != "@none":
                    item["@index"] = index
                elif "@id" in container and "@id" not in item and xi != "@none":
                    item["@id"] = self.expand_iri(active, index, relative=True)
                elif "@type" in container and xi != "@none":
                    item["@type"] = [xi] + item.get("@type", [])
                out.append(item)
        return out

    # -- value expansion (5.3.2) --
    def expand_value(self, active: Context, prop: str, value: Any) -> dict:
        td = active.get(prop)
        t = td.type if td is not None else None
        if t == "@id" and isinstance(value, str):
            return {"@id": self.expand_iri(active, value, relative=True)}
        if t == "@vocab" and isinstance(value, str):
            return {"@id": self.expand_iri(active, value, vocab=True, relative=True)}
        out: dict = {"@value": value}
        if t is not None and t not in ("@id", "@vocab", "@none"):
            out["@type"] = t
        elif isinstance(value, str):
            lang = td.language if td is not None and td.language is not _UNSET else active.language
            direction = td.direction if td is not None and td.direction is not _UNSET else active.direction
            if lang is not None:
                out["@language"] = lang
            if direction is not None:
                out["@direction"] = direction
        return out


def _valid_container(cs: list[str]) -> bool:
    s = set(cs)
    if len(s) != len(cs):
        return False
    if len(s) == 1:
        return True
    if "@list" in s:
        return False
    if "@graph" in s:
        return s - {"@graph", "@id", "@index", "@set"} == set()
    if "@set" in s:
        return len(s) == 2 and bool(s & {"@index", "@id", "@type", "@language"})
    return False


def canonical_json(value: Any) -> str:
    """RFC 8785 (JCS) canonical JSON text of a JSON value, for ``@json`` literals."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return canonical_number(value)
    if isinstance(value, str):
        return _json_string(value)
    if isinstance(value, list):
        return "[" + ",".join(canonical_json(v) for v in value) + "]"
    items = sorted(value.items(), key=lambda kv: kv[0].encode("utf-16-be"))
    return "{" + ",".join(_json_string(k) + ":" + canonical_json(v) for k, v in items) + "}"


def _json_string(s: str) -> str:
    import json

    return json.dumps(s, ensure_ascii=False)


def canonical_number(value: float) -> str:
    """ECMAScript's Number-to-String (JCS numbers)."""
    if math.isnan(value) or math.isinf(value):
        raise JsonLdError("invalid JSON literal", "NaN and infinities are not JSON")
    if value == 0:
        return "0"
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    r = repr(value)
    if "e" not in r:
        return r
    mantissa, _, exp = r.partition("e")
    e = int(exp)
    digits = mantissa.replace(".", "").lstrip("-")
    sign = "-" if value < 0 else ""
    if -7 < e < 0 or 0 < e < 21:
        return repr(float(value)) if e > 0 else sign + "0." + "0" * (-e - 1) + digits.rstrip("0")
    m = digits[0] + ("." + digits[1:].rstrip("0") if digits[1:].rstrip("0") else "")
    return f"{sign}{m}e{'+' if e > 0 else '-'}{abs(e)}"
