"""Validity over many entities is linear in them (issue 22: 50k entities, 200k triples took 51 s).

Each adversarial markup is validated at n and 4n entities, in both modes (schemaorg with the
compiled engine, the pipeline's; paper), strict and lenient, and the work, counted in executed
bytecodes with ids and values that compare in Python code (``tests/schemaorg/test_markup_bounds.py``'s
counter), must grow by at most 5x. Counted, never timed.
"""

from __future__ import annotations

import pytest

from tests.schemaorg.test_markup_bounds import S, operations
from udfs.agents.validity import agent
from udfs.runtime.config import load_config

VOCAB = load_config().validity.vocab


def _entity(i: int, **more) -> dict:
    return {"@type": "Product", "@id": S(f"http://x.example/{i}"), "name": S(f"p{i}"), **more}


SHAPES = {
    # many valid entities, each with a nested node
    "many_entities": lambda n: {
        "@context": "https://schema.org",
        "@graph": [_entity(i, offers={"@type": "Offer", "price": "1", "priceCurrency": "EUR"}) for i in range(n)],
    },
    # each entity refers to the next: the reachable part of the markup is the whole chain
    "reference_chain": lambda n: {
        "@context": "https://schema.org",
        "@graph": [_entity(i, isRelatedTo={"@id": S(f"http://x.example/{i + 1}")}) for i in range(n)],
    },
    # every entity with the same flagged value (the paper removes every equal leaf of the markup)
    "same_flagged_value": lambda n: {
        "@context": "https://schema.org",
        "@graph": [_entity(i, noSuchProperty=S("same"), gtin13=S("same")) for i in range(n)],
    },
    # every entity with several types, one of them undefined, and a property only one type allows
    "multi_typed": lambda n: {
        "@context": "https://schema.org",
        "@graph": [
            {
                "@type": ["Product", "Place", S(f"NoSuchType{i % 7}")],
                "@id": S(f"http://x.example/{i}"),
                "latitude": "1.0",
                "sku": S(f"s{i}"),
            }
            for i in range(n)
        ],
    },
}

N = 100


@pytest.mark.parametrize("mode,strict", [("schemaorg", False), ("schemaorg", True), ("paper", False)])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_validity_grows_linearly_in_the_entities(shape, mode, strict):
    make = SHAPES[shape]
    a = agent("compiled", strict, VOCAB, mode)
    a.validate(make(5))  # the shape model and caches, outside the count
    small, large = make(N), make(4 * N)
    ops_small = operations(lambda: a.validate(small))
    ops_large = operations(lambda: a.validate(large))
    assert ops_large <= 5 * ops_small, f"{shape}/{mode}/strict={strict}: {ops_small} -> {ops_large} for n -> 4n"
    result = a.validate(large)
    assert len(result.markup.entities) >= 4 * N  # the markup was read whole: the work was done
