"""What a property's range decides of a value (``udfs.schemaorg.ranges.range_fits``), on the
values of schema.org's own examples, against Python's own readers of the datatypes."""

from __future__ import annotations

import datetime as dt
import urllib.parse

import pytest

from udfs.agents import prompts
from udfs.agents import verdicts as agents
from udfs.schemaorg.markup import Literal, MarkupError, parse_markup
from udfs.schemaorg.ranges import IRI, LITERAL, NODE, range_fits
from udfs.schemaorg.shapes import build_model


def _reads(family: str, text: str) -> bool:
    """Whether Python's standard library reads ``text`` as a value of a schema.org datatype."""
    for parse in {
        "Integer": [int],
        "Number": [float],
        "Float": [float],
        "Boolean": [lambda t: {"true": 1, "false": 0}[t.lower()]],
        "Date": [
            dt.date.fromisoformat,
            lambda t: dt.datetime.strptime(t, "%Y-%m"),
            lambda t: dt.datetime.strptime(t, "%Y"),
        ],
        "DateTime": [dt.datetime.fromisoformat],
        "Time": [lambda t: dt.time.fromisoformat(t if ":" in t else "no colon")],  # schema.org's form: hh:mm[:ss]
        "URL": [lambda t: urllib.parse.urlsplit(t).scheme or int("no scheme")],
    }[family]:
        try:
            parse(text)
            return text.lower() not in ("nan", "inf", "-inf", "infinity")
        except (ValueError, KeyError):
            continue
    return False


def example_literals() -> list[tuple[str, str]]:
    """Every (property, literal text) of the schema.org examples' markups whose property's range
    holds datatypes and no Text."""
    ranges = build_model().ranges
    out = set()
    for ex in prompts.load_examples():
        try:
            markup = parse_markup(ex.jsonld)
        except MarkupError:  # an example the parser rejects holds no claim to judge
            continue
        for t in markup.triples():
            spec = ranges.get(t.property)
            if isinstance(t.value, Literal) and spec and spec.literal_families and "Text" not in spec.literal_families:
                out.add((t.property, t.value.text.strip()))
    return sorted(out)


def test_a_literal_fits_a_datatype_range_where_python_reads_it_as_one_of_the_datatypes():
    """The literals of schema.org's examples on the datatype-only properties, each judged against
    every such property (its own and swapped, as the bench swaps values): it fits where one of the
    range's datatypes reads it; where none does, it does not fit, unless the range also takes a URL
    or an entity (then the model decides: None). No value of the examples is rejected for its own
    property."""
    ranges = build_model().ranges
    values = example_literals()
    assert len(values) > 200
    assert all(range_fits(prop, text, LITERAL) is True for prop, text in values)
    seen = {True: 0, False: 0, None: 0}
    for prop in sorted({p for p, _ in values}):
        spec = ranges[prop]
        for text in sorted({t for _, t in values}):
            fits = range_fits(prop, text, LITERAL)
            seen[fits] += 1
            if any(_reads(f, text) for f in spec.literal_families):
                assert fits is True, (prop, text)
            else:
                assert fits is (None if spec.link or spec.isa else False), (prop, text)
    assert min(seen.values()) > 1000, seen


def test_the_range_leaves_text_properties_nodes_and_unknown_properties_to_the_model():
    assert range_fits("ratingValue", "4", LITERAL) is None  # Number or Text
    assert range_fits("name", "12", LITERAL) is None
    assert range_fits("author", "John Doe", LITERAL) is None  # Person or Organization: a name
    assert range_fits("startDate", "_:b1", NODE) is None
    assert range_fits("notAProperty", "2020-01-01", LITERAL) is None
    assert range_fits("url", "http://example.org/", IRI) is True
    assert range_fits("url", "/events/1.html", LITERAL) is None  # a relative reference, to resolve
    assert range_fits("image", "cover.jpg", LITERAL) is None  # URL or ImageObject
    assert range_fits("startDate", "http://example.org/", IRI) is None
    with pytest.raises(ValueError, match="value kind"):
        range_fits("startDate", "2020", "entity")


def test_claims_carry_what_their_range_decides():
    """``claims_of`` reads a literal's own text (the claim may word it otherwise) and an IRI as an
    IRI: a markup of every kind."""
    markup = parse_markup(
        {
            "@context": "https://schema.org",
            "@type": "Event",
            "name": "Elysian Fields",
            "startDate": "2017-06-10T19:30",
            "endDate": "Brooklyn",
            "url": {"@id": "http://example.org/e"},
            "location": {"@type": "Place", "name": "The Owl"},
            "maximumAttendeeCapacity": "120",
        }
    )
    fits = {c.property: c.fits for c in agents.claims_of(markup) if c is not None}
    assert fits == {
        "name": None,
        "startDate": True,
        "endDate": False,
        "url": True,
        "location": None,
        "maximumAttendeeCapacity": True,
    }
