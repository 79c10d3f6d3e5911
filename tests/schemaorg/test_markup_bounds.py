"""Reading a markup is linear in its size (issue 22: a 4.5 MB block of 250k roots ran past 600 s).

Each adversarial shape is read at n and 4n, and the work, counted in executed bytecodes (with
every id and type a str whose comparisons run Python code, so a membership scan over a list is
counted too), must grow by at most 5x; the quadratic reading grew 11x to 16x on these shapes.
"""

from __future__ import annotations

import gc
import sys

import pytest

from udfs.corpus import html as P
from udfs.schemaorg.markup import (
    MAX_CONTEXT_LAYERS,
    MarkupError,
    count_json_values,
    parse_markup,
    root_documents,
    to_jsonld,
)


class S(str):
    """A str whose == runs Python code: a scan of a list of these is counted as work."""

    __slots__ = ()

    def __eq__(self, other):
        return str.__eq__(self, other)

    def __ne__(self, other):
        return str.__ne__(self, other)

    __hash__ = str.__hash__


def operations(fn, repeats: int = 3) -> int:
    """Bytecodes executed by ``fn()`` (sys.settrace with opcode events), calls included.

    The fewest over ``repeats`` runs, with the collector off: a finalizer or a signal handler
    that happens to run in this thread during one run (earlier tests leave Ray and Spark
    objects behind) adds its own bytecodes to that run only, and must not count as ``fn``'s.
    """

    def once() -> int:
        n = 0

        def local(frame, event, arg):
            nonlocal n
            n += 1
            return local

        def tracer(frame, event, arg):
            nonlocal n
            frame.f_trace_opcodes = True
            n += 1
            return local

        sys.settrace(tracer)
        try:
            fn()
        finally:
            sys.settrace(None)
        return n

    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        return min(once() for _ in range(repeats))
    finally:
        if enabled:
            gc.enable()


SHAPES = {
    # many roots in @graph, each an IRI (the reported page)
    "graph_roots": lambda n: {
        "@context": "https://schema.org",
        "@graph": [{"@type": "Thing", "@id": S(f"http://x.example/{i}"), "name": "a"} for i in range(n)],
    },
    # a top-level array of roots
    "array_roots": lambda n: [{"@type": "Thing", "@id": S(f"http://x.example/{i}"), "name": "a"} for i in range(n)],
    # each root refers to the next: following references from every root reaches the whole chain
    "reference_chain": lambda n: {
        "@graph": [
            {"@type": "Thing", "@id": S(f"http://x.example/{i}"), "knows": {"@id": S(f"http://x.example/{i + 1}")}}
            for i in range(n)
        ]
    },
    # every root of its own type (types seen so far)
    "distinct_types": lambda n: {"@graph": [{"@type": S(f"http://t.example/{i}"), "name": "a"} for i in range(n)]},
    # one entity, many types
    "many_types": lambda n: {"@type": [S(f"http://t.example/{i}") for i in range(n)]},
    # one IRI described by many nodes, each with another type
    "same_id": lambda n: [{"@id": S("http://x.example/1"), "@type": S(f"http://t.example/{i}")} for i in range(n)],
    # a large inline context shared by many roots (read once per root by the pages path)
    "inline_context": lambda n: {
        "@context": {f"t{i}": f"http://v.example/{i}" for i in range(n)},
        "@graph": [{"@type": "Thing", "name": "a"} for _ in range(n)],
    },
    # a small context on every node under a large one (applied by copying the large one)
    "nested_contexts": lambda n: {
        "@context": {f"t{i}": f"http://v.example/{i}" for i in range(n)},
        "@graph": [{"@context": {"q": "http://q.example/"}, "@type": "Thing", "name": "a"} for _ in range(n)],
    },
}

READERS = {
    "parse_markup": lambda d: parse_markup(d),
    "to_jsonld": lambda d: to_jsonld(parse_markup(d)),
    "select_markup": lambda d: P.select_markup([P.JsonLdBlock(0, "", d)], ["NoSuchType"]),
}

N = 300


@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize("shape", list(SHAPES))
def test_reading_grows_linearly(shape, reader):
    make, read = SHAPES[shape], READERS[reader]
    read(make(5))  # caches of the schema.org context and term names, outside the count
    small, large = make(N), make(4 * N)
    ops_small = operations(lambda: read(small))
    ops_large = operations(lambda: read(large))
    assert ops_large <= 5 * ops_small, f"{shape}/{reader}: {ops_small} -> {ops_large} operations for n -> 4n"


def test_layered_contexts_read_as_merged_ones():
    """A context over another hides the outer definition of a term it redefines, a null term makes
    no triple, and schema.org's id/type aliases still hold under an inline layer."""
    doc = {
        "@context": ["https://schema.org", {"ex": "http://ex.example/", "rating": "ex:rating"}],
        "type": "Book",
        "id": "http://b.example/1",
        "rating": 5,
        "name": "B",
        "author": {
            "@context": {"rating": "http://other.example/rating", "name": None},
            "type": "Person",
            "name": "hidden",
            "rating": 3,
            "ex:age": 40,
        },
    }
    m = parse_markup(doc)
    book = m.entities["http://b.example/1"]
    assert book.types == ["Book"]
    assert [v.value for v in book.properties["http://ex.example/rating"]] == [5]
    author = m.entity_of(book.properties["author"][0])
    assert author.types == ["Person"]
    assert set(author.properties) == {"http://other.example/rating", "http://ex.example/age"}
    assert "term 'name' dropped: null in the context" in m.notes


def test_contexts_stacked_past_the_limit_are_refused():
    doc = {"@context": [{f"t{i}": f"http://v.example/{i}"} for i in range(MAX_CONTEXT_LAYERS + 5)], "@type": "Thing"}
    with pytest.raises(MarkupError, match="contexts applied one over another"):
        parse_markup(doc)


def test_counting_json_values_stops_at_the_limit():
    doc = {"@graph": [{"@type": "Thing", "name": [1, 2, {"a": None}]}] * 3}
    assert (
        count_json_values(doc, 1000) == 1 + 1 + 3 * 7
    )  # doc, @graph, and per node: itself, type, list, 1, 2, {a}, null
    huge = [[i, [i]] for i in range(200_000)]
    assert count_json_values(huge, 10) == 11
    # the count of a huge markup costs what the limit allows, not what the markup holds
    part = huge[:1000]
    assert operations(lambda: count_json_values(huge, 100)) == operations(lambda: count_json_values(part, 100))


ROOT_SHAPES = [
    {"@context": "https://schema.org", "@type": "Book", "name": "b"},
    [{"@type": "Book", "name": "b"}, None, {"@context": "https://schema.org", "@type": "Person", "name": "p"}],
    {
        "@context": "https://schema.org",
        "@graph": [{"@type": "Book", "name": "b"}, None, {"@type": "Person", "name": "p"}],
    },
    {"@context": "https://schema.org", "@type": "WebSite", "name": "w", "@graph": [{"@type": "Person", "name": "p"}]},
    {"@context": "https://schema.org", "@id": "http://x.example/", "@graph": {"@type": "Event", "name": "e"}},
    {"@context": "https://schema.org", "@type": "Event", "name": "e", "@graph": None},
]


@pytest.mark.parametrize("doc", ROOT_SHAPES)
def test_root_documents_are_the_roots_the_reader_reads(doc):
    """Each root document read alone describes the root the whole document's reading has at its
    place, with the same types and values."""
    whole = parse_markup(doc)
    alone = [parse_markup(d) for d in root_documents(doc)]
    assert len(alone) == len(whole.roots)
    for rid, m in zip(whole.roots, alone):
        ent, one = whole.entities[rid], m.entities[m.roots[0]]
        assert (ent.types, {p: [v.key() for v in vs] for p, vs in ent.properties.items()}) == (
            one.types,
            {p: [v.key() for v in vs] for p, vs in one.properties.items()},
        )


def test_root_documents_refuse_what_the_reader_refuses():
    for doc in ([{"@type": "Book"}, 5], {"@graph": [{"@type": "Book"}, "x"]}):
        with pytest.raises(MarkupError, match="must be an object") as seen:
            list(root_documents(doc))
        with pytest.raises(MarkupError) as read:
            parse_markup(doc)
        assert seen.value.reason == read.value.reason
