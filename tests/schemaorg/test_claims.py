"""The readable ``claim`` of a triple (``udfs.schemaorg.markup.claim_text``, the ``triples/``
column beside the ids), on a real markup: the schema.org Book example of data/html."""

from __future__ import annotations

import json

from udfs.runtime.paths import DATA_DIR
from udfs.schemaorg.markup import CLAIM_VALUE_CHARS, claim_text, label, parse_markup

BOOK = DATA_DIR / "html" / "extruct-samples" / "schema.org" / "CreativeWork.001.jsonld"


def claims() -> dict[tuple[str, str], list[str]]:
    markup = parse_markup(json.loads(BOOK.read_text()))
    out: dict[tuple[str, str], list[str]] = {}
    for t in markup.triples():
        out.setdefault((t.entity_type, t.property), []).append(claim_text(markup, t))
    return out


def test_a_claim_names_its_subject_by_type_and_name_and_quotes_a_literal():
    c = claims()
    assert c[("Book", "isbn")] == ['Book "The Catcher in the Rye" / isbn: "0316769487"']
    # a node without a name is its type
    assert c[("Offer", "price")] == ['Offer / price: "6.99"']


def test_a_node_value_is_named_by_its_label_and_an_outside_iri_is_itself():
    c = claims()
    assert c[("WebPage", "mainEntity")] == ['WebPage / mainEntity: Book "The Catcher in the Rye"']
    assert sorted(c[("Book", "review")]) == [
        'Book "The Catcher in the Rye" / review: Review "A good read."',
        'Book "The Catcher in the Rye" / review: Review "A masterpiece of literature"',
    ]
    # image is an @id property in the context: a relative IRI outside the markup, shown as is
    assert c[("Book", "image")] == ['Book "The Catcher in the Rye" / image: catcher-in-the-rye-book-cover.jpg']


def test_a_long_literal_is_cut_and_whitespace_folded():
    (body,) = [x for x in claims()[("Review", "reviewBody")] if "masterpiece" in x]
    value = body.split(": ", 1)[1]
    assert len(value) == CLAIM_VALUE_CHARS + 2 and value.endswith('…"')  # two quotes around the cut text
    assert value.startswith('"I really enjoyed this book. It captures')


def test_label_of_an_unknown_node_is_its_id():
    markup = parse_markup(json.loads(BOOK.read_text()))
    assert label(markup, "http://example.org/elsewhere") == "http://example.org/elsewhere"
