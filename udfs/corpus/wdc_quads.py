"""One JSON-LD block as WebDataCommons-style N-Quads lines: what ``extract_quads``
(``udfs/corpus/quads.py``) writes for each block of a page.

The triples are the RDF view of the reader every later stage uses (``udfs.schemaorg.markup``:
:func:`~udfs.schemaorg.markup.parse_markup` with the page URL as base, then
:func:`~udfs.schemaorg.markup.rdf_triples`), so the C-sets of a crawl and the verdicts on its pages
see the same triples: a date is the plain string the markup wrote, a ``@list`` is its members,
a term an inline context leaves undefined is read in schema.org, a relative IRI is resolved against
the page, and what RDF cannot hold (an IRI with a space, a malformed language tag) is left out, as
that view leaves it out. Nothing is fetched: a remote context other than schema.org's refuses the
block (:class:`~udfs.schemaorg.markup.MarkupError`, its reason naming the URL).

The lines are written as WDC writes them: ``<s> <p> o <page-url>   .``, the page URL the graph
term, ``http://schema.org/`` IRIs whatever the markup's spelling, blank nodes labelled per page
and block.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from udfs.schemaorg.markup import RdfLiteral, parse_markup, rdf_triples
from udfs.schemaorg.namespace import SCHEMA_NS, SCHEMA_NS_RE

XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
RDF_LANGSTRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
# N-Quads forbids these in an IRI: percent-encoded rather than the triple lost
_IRI_UNSAFE = re.compile(r'[\x00-\x20<>"{}|^`\\]')
# the reader's own labels (b0, b1...) are kept; a label the markup wrote may hold characters no
# N-Quads label may, so it is numbered instead
_READER_LABEL = re.compile(r"^_:b[0-9]+$")
# N-Quads STRING_LITERAL_QUOTE: these four are escaped, every other character is itself
_ECHAR = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r"})


def iri_term(value: str) -> str:
    """``<value>`` as WDC writes an IRI: every spelling of the schema.org namespace as
    ``http://schema.org/``, the characters N-Quads forbids in an IRI percent-encoded."""
    m = SCHEMA_NS_RE.match(value)
    if m:
        value = SCHEMA_NS + value[m.end() :]
    return "<" + _IRI_UNSAFE.sub(_percent, value) + ">"


def _percent(c: re.Match) -> str:
    return "%%%02X" % ord(c.group())


def literal_term(lit: RdfLiteral) -> str:
    """A literal in N-Quads: ``"lexical"``, ``"lexical"@lang`` or ``"lexical"^^<datatype>``
    (``xsd:string`` left implicit)."""
    text = '"' + lit.lexical.translate(_ECHAR) + '"'
    if lit.datatype == RDF_LANGSTRING and lit.language:
        return f"{text}@{lit.language}"
    if lit.datatype == XSD_STRING:
        return text
    return f"{text}^^{iri_term(lit.datatype)}"


def jsonld_to_quads(data: Any, page_url: str, block_index: int = 0, bnode_prefix: str | None = None) -> list[str]:
    """N-Quads lines of one JSON-LD block (already parsed JSON) of the page at ``page_url``, one
    per distinct triple, in the reader's order (entities in document order).

    The block is read with the page URL as base (its unsafe characters percent-encoded, as the
    graph term writes them). Blank-node labels are derived from the page URL, the block's
    position in the page and the reader's label (``_:n<page hash>x<block>b<n>``; a label the
    markup wrote itself becomes ``r<n>``, numbered in order of appearance): blocks of one page
    never share a blank node, and a rerun writes the same lines.

    Raises ValueError for a block that is no JSON object or array, and
    :class:`~udfs.schemaorg.markup.MarkupError` for one the reader refuses (a remote context, a
    JSON-LD error); a block that describes nothing gives no lines.
    """
    if not isinstance(data, (dict, list)):
        raise ValueError(f"JSON-LD block is a {type(data).__name__}, not an object or array")
    markup = parse_markup(data, allow_empty=True, base=_IRI_UNSAFE.sub(_percent, page_url))
    graph = iri_term(page_url)
    prefix = bnode_prefix or ("n" + hashlib.sha1(page_url.encode("utf-8")).hexdigest()[:16])
    labels: dict[str, str] = {}

    def node(t: str) -> str:
        if not t.startswith("_:"):
            return iri_term(t)
        label = labels.get(t)
        if label is None:
            local = t[2:] if _READER_LABEL.match(t) else f"r{len(labels)}"
            label = labels[t] = f"_:{prefix}x{block_index}{local}"
        return label

    lines: dict[str, None] = {}  # an RDF graph is a set: 1 and 1.0 are one "1"^^xsd:integer
    for s, p, o in rdf_triples(markup):
        obj = literal_term(o) if isinstance(o, RdfLiteral) else node(o)
        lines[f"{node(s)} {iri_term(p)} {obj} {graph}   ."] = None
    return list(lines)
