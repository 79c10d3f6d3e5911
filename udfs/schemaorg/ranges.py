"""What a property's range decides of a value without a model: the compliance answer where the
range leaves nothing to the definition's words.

A property whose range holds datatypes and no Text (``startDate``: Date or DateTime;
``reviewCount``: Integer) takes a value of those datatypes and nothing else, so whether a value
fits is a reading of its lexical form, exact where a model's answer is a guess. A range with Text
(``ratingValue``: Number or Text), or none at all, leaves it to the definition: the model is asked.
The judge uses this before it asks ``complies-ranged`` or the compliance questions
(``udfs.agents.verdicts``); experiments/vocabulary_compliance measured the verdicts it keeps and
the requests it saves.

The lexical forms are those markup writes, looser than the strict SHACL reading's
(``udfs.schemaorg.shapes.LITERAL_FAMILIES``, which also checks the RDF datatype): JSON-LD numbers
often come as strings ("224"), dates at ISO 8601's reduced precision ("1998", as schema.org's own
examples write them), and a date where a date-time is asked.
"""

from __future__ import annotations

import re

from udfs.schemaorg.shapes import ABSOLUTE_URL, LITERAL_FAMILIES, build_model

_NUMBER = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"
_DAY = r"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$"
LEXICAL_FORMS: dict[str, re.Pattern] = {
    f: re.compile(p)
    for f, p in {
        **{f: p for f, (_, p) in LITERAL_FAMILIES.items() if p},
        "Integer": r"^[+-]?[0-9]+$",
        "Number": _NUMBER,
        "Float": _NUMBER,
        "Boolean": r"^(?i:true|false)$",
        "Date": r"^[0-9]{4}(-(0[1-9]|1[0-2]))?$|" + _DAY,
        # a date is a date-time at a day's precision ("uploadDate": "2020-01-01")
        "DateTime": f"(?:{LITERAL_FAMILIES['DateTime'][1]})|(?:{_DAY})",
        "URL": ABSOLUTE_URL,
    }.items()
}
LITERAL, IRI, NODE = "literal", "iri", "node"  # a value's kind: a literal, an outside IRI, a node of the markup


def range_fits(prop: str, text: str, kind: str, release: str | None = None) -> bool | None:
    """Whether a value of ``prop`` fits it, where the property's range alone decides; None where
    the model is to be asked. ``text``: a literal's lexical form or an IRI; ``kind``: ``LITERAL``,
    ``IRI`` or ``NODE``. Decided only for a property whose range holds datatypes and no Text:

    * a literal of one of the range's datatypes' lexical forms fits, and an IRI fits where URL is
      in the range;
    * any other literal does not fit, unless the range also takes URL (a relative reference is a
      URL to resolve) or an entity type (a literal may name the entity): the model is asked;
    * a node of the markup is left to the model (validity checks its type against the range)."""
    if kind not in (LITERAL, IRI, NODE):
        raise ValueError(f"value kind {kind!r}: one of {LITERAL}, {IRI}, {NODE}")
    spec = build_model(release).ranges.get(prop)
    if spec is None or not spec.literal_families or "Text" in spec.literal_families or kind == NODE:
        return None
    if kind == IRI:
        return True if spec.link else None
    value = text.strip()
    if any(LEXICAL_FORMS[f].search(value) for f in spec.literal_families):
        return True
    return None if spec.link or spec.isa else False
