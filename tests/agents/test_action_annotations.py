"""schema.org's Action annotations (issue 66): ``<property>-input`` / ``<property>-output`` on an
Action annotate the action's property with a PropertyValueSpecification or its text shorthand
(https://schema.org/docs/actions.html). The default schemaorg mode reads them so; paper mode keeps
the paper's reading (Table 7 stays exact: tests/agents/test_table7.py)."""

from __future__ import annotations

import pytest

from udfs.agents.validity import ValidityAgent
from udfs.agents.validity.findings import shorthand_problem
from udfs.schemaorg.markup import parse_markup

YOAST = {
    "@context": "https://schema.org",
    "@graph": [
        {
            "@type": "WebSite",
            "@id": "https://example.org/#website",
            "url": "https://example.org/",
            "potentialAction": [
                {
                    "@type": "SearchAction",
                    "target": {"@type": "EntryPoint", "urlTemplate": "https://example.org/?s={search_term_string}"},
                    "query-input": "required name=search_term_string",
                }
            ],
        }
    ],
}


def verdicts_of(markup, mode="schemaorg", engine="compiled"):
    return [v for v in ValidityAgent(engine, False, None, mode).validate(markup).verdicts if "-" in v.property]


@pytest.mark.parametrize("engine", ["compiled", "pyshacl"])
def test_yoasts_search_action_is_valid_in_schemaorg_mode_and_not_in_paper_mode(engine):
    (v,) = verdicts_of(YOAST, engine=engine)
    assert v.valid and "Action annotation of query" in v.reason
    (p,) = verdicts_of(YOAST, "paper")
    assert not p.valid and p.reason == "query-input is not a property of SearchAction"


def test_a_property_value_specification_node_is_an_annotation_and_other_values_are_not():
    pvs = {
        "@context": "https://schema.org",
        "@type": "SearchAction",
        "query-output": {"@type": "PropertyValueSpecification", "valueName": "q"},
    }
    (v,) = verdicts_of(pvs)
    assert v.valid
    words = {"@context": "https://schema.org", "@type": "SearchAction", "query-input": "please type here"}
    (bad,) = verdicts_of(words)
    assert not bad.valid and bad.rule == 3 and "'please' is not a word" in bad.reason
    thing = {"@context": "https://schema.org", "@type": "SearchAction", "query-input": {"@type": "Thing", "name": "q"}}
    assert [v.valid for v in verdicts_of(thing)] == [False]


def test_the_reading_needs_an_action_that_has_the_property():
    not_a_property = {"@context": "https://schema.org", "@type": "SearchAction", "colour-input": "required name=q"}
    (v,) = verdicts_of(not_a_property)
    assert not v.valid and v.reason == "colour-input is not a property of SearchAction"
    not_an_action = {"@context": "https://schema.org", "@type": "Person", "name-input": "required name=q"}
    (w,) = verdicts_of(not_an_action)
    assert not w.valid and w.reason == "name-input is not a property of Person"


def test_the_cleaned_markup_keeps_an_annotation_and_drops_a_bad_one():
    doc = {"@context": "https://schema.org", "@type": "SearchAction", "query-input": ["required name=q", "what?"]}
    cleaned = ValidityAgent("compiled", False, None, "schemaorg").validate(doc).cleaned
    kept = parse_markup(cleaned).entities
    (ent,) = kept.values()
    assert [v.value for v in ent.properties["query-input"]] == ["required name=q"]


def test_shorthand_words():
    assert shorthand_problem("required maxlength=100 name=q") is None
    assert shorthand_problem("") == "an empty shorthand"
    assert shorthand_problem("name=") is not None and shorthand_problem("colour=red") is not None


def test_every_query_input_of_the_papers_markups_reads_as_an_annotation(pset):
    from udfs.corpus.pset import results_rows

    agent = ValidityAgent("compiled", False, None, "schemaorg")
    found = []
    for r in results_rows(pset):
        text = pset.read(r.markup).decode("utf-8")
        if "-input" in text or "-output" in text:
            found += [
                (r.source, v.valid) for v in agent.validate(text).verdicts if v.property.endswith(("-input", "-output"))
            ]
    # docs/validity.md: 20 such triples over the paper's markups (9 GPT-3.5, 4 GPT-4, 7 human)
    assert len(found) == 20 and all(ok for _, ok in found)
