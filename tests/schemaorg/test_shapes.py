"""The generated SHACL shapes: reproducible, and encoding the three rules on the real vocabulary."""

from __future__ import annotations

import pytest
import rdflib

from shapes.generate import main
from udfs.schemaorg.namespace import SCHEMA_NS as SCHEMA
from udfs.schemaorg.shapes import SHP, build_model, default_path, to_turtle

SH = rdflib.Namespace("http://www.w3.org/ns/shacl#")
S = rdflib.Namespace(SCHEMA)
P = rdflib.Namespace(SHP)


@pytest.mark.parametrize("strict", [False, True])
def test_regenerating_gives_the_committed_file(tmp_path, strict):
    out = tmp_path / "shapes.ttl"
    args = ["--vocab", "30.0", "--output", str(out)] + (["--strict"] if strict else [])
    assert main(args) == 0
    committed = default_path("30.0", strict)
    assert committed.exists(), f"{committed} is not committed: run python -m shapes.generate"
    assert out.read_bytes() == committed.read_bytes()


@pytest.fixture(scope="module")
def graph():
    return rdflib.Graph().parse(default_path("30.0"), format="turtle")


def _ignored(g, shape) -> set[str]:
    lst = g.value(shape, SH.ignoredProperties)
    return {str(x) for x in rdflib.collection.Collection(g, lst)}


def test_one_closed_shape_per_entity_type(graph):
    model = build_model("30.0")
    shapes = set(graph.subjects(SH.targetClass, None))
    assert len(shapes) == len(model.entity_types) > 800
    for t in ("Recipe", "Thing", "LocalBusiness", "Duration"):
        shape = P[f"t-{t}"]
        assert (shape, SH.targetClass, S[t]) in graph
        assert (shape, SH.closed, rdflib.Literal(True)) in graph
    # Datatypes are values, never entity types.
    for dt in ("Text", "URL", "Integer", "DataType"):
        assert P[f"t-{dt}"] not in shapes


def test_properties_are_inherited_through_multiple_inheritance(graph):
    recipe = _ignored(graph, P["t-Recipe"])
    assert S["name"] in {rdflib.URIRef(x) for x in recipe}  # via Thing
    assert SCHEMA + "recipeIngredient" in recipe and SCHEMA + "step" in recipe  # own, and via HowTo
    assert SCHEMA + "cookoo" not in recipe
    assert str(rdflib.RDF.type) in recipe
    # LocalBusiness is both an Organization and a Place.
    lb = _ignored(graph, P["t-LocalBusiness"])
    assert {SCHEMA + "founder", SCHEMA + "geo", SCHEMA + "openingHours"} <= lb
    assert SCHEMA + "recipeIngredient" not in lb


def test_value_shapes_accept_range_types_and_their_subtypes(graph):
    model = build_model("30.0")
    spec = model.ranges["recipeInstructions"]
    assert spec.ranges == ("CreativeWork", "ItemList", "Text")
    assert {"HowToStep", "Dataset", "HowToSection"} <= spec.classes  # HowToStep is both a CreativeWork and an ItemList
    assert "Person" not in spec.classes
    # The shape walks the hierarchy the file itself carries.
    assert (S["HowToStep"], P["subTypeOf"], S["CreativeWork"]) in graph
    prop = graph.value(P["p-recipeInstructions"], SH.property)
    assert graph.value(prop, SH.path) == S["recipeInstructions"]
    alts = list(rdflib.collection.Collection(graph, graph.value(prop, SH["or"])))
    assert P["literal"] in alts and P["isa-CreativeWork"] in alts


def test_superseded_terms_are_kept_and_annotated(graph):
    assert (P["p-ingredients"], S["supersededBy"], S["recipeIngredient"]) in graph
    assert SCHEMA + "ingredients" in _ignored(graph, P["t-Recipe"])


def test_strict_reading_uses_datatypes_and_enumeration_members():
    model = build_model("30.0")
    avail = model.ranges["availability"]
    assert "InStock" in avail.members and avail.literal_families == ()
    pages = model.ranges["numberOfPages"]
    assert pages.literal_families == ("Integer",)
    assert model.ranges["url"].link and model.ranges["url"].literal_families == ("URL",)
    text = to_turtle(model, strict=True)
    assert "shp:lit-Date a sh:NodeShape" in text and "schema:InStock shp:memberOf schema:ItemAvailability ." in text
