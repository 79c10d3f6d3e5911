"""The questions' registry (udfs/agents/questions.py): the kinds it holds are exactly what the
verdict agents accept and what the jobs' --help lists, and only the shipped judge's and the cheap
judge's; the plain question is the question the factuality agent asks by default; a named node's
type is carried by its claim and shown by no question; the definitions the questions show are
plain text from the bundled vocabulary."""

from __future__ import annotations

import dataclasses

import pytest

from udfs.agents import prompts, questions
from udfs.agents import verdicts as agents
from udfs.agents.questions import FACTUALITY, check_questions
from udfs.schemaorg.vocab import load_vocabulary


def test_the_registry_is_what_the_agents_accept_and_the_help_lists():
    from jobs.agents_bench import AgentsBenchJob
    from jobs.evaluate import EvaluateJob
    from udfs.runtime.config import load_config

    kinds = {
        "factuality": ["plain", "claim", "extract-soft-all-near", "extract-other", "complies-ranged"],
        "compliance": ["ranged"],
    }
    # kinds studied and not shipped live with their experiments: the registry refuses them
    studied = {
        "factuality": ["says", "typed", "claim-typed", "extract", "extract-soft", "extract-soft-all"],
        "compliance": ["plain"],
    }
    for agent, names in kinds.items():
        registry = questions.REGISTRY[agent]
        assert list(registry) == names
        assert all(q.name == n and q.agent == agent and q.help and q.prompts for n, q in registry.items())
        assert check_questions(names, agent) == tuple(names)
        for gone in (
            *studied[agent],
            "defined",
            "where",
            "exemplified",
            "excerpt",
            "subject",
            "claim-subject",
            "extract-all",
            "complies",
            "names",
            "choice",
            "fits",
            "property-of",
        ):
            with pytest.raises(ValueError, match=", ".join(names)):
                check_questions([gone], agent)
        # every prompt file a question names ships
        for q in registry.values():
            for name in q.prompts:
                assert (prompts.PROMPTS_DIR / f"{name}.txt").is_file(), (q.name, name)
    # both judging jobs offer exactly the registry's questions, each with its help line
    conf = load_config()
    for job in (EvaluateJob, AgentsBenchJob):
        parser = job.__new__(job).build_parser(conf)
        actions = {a.dest: a for a in parser._actions}
        for agent, names in kinds.items():
            action = actions[f"{agent}_questions"]
            assert list(action.choices) == names
            assert all(f"{n}: {questions.REGISTRY[agent][n].help}" in action.help for n in names)
    # and the default judge asks registry questions only
    assert set(conf.judge.factuality_questions) <= set(kinds["factuality"])
    assert set(conf.judge.compliance_questions) <= set(kinds["compliance"])


def test_plain_is_the_agents_question():
    claim = agents.Claim("translator", "Robert Martin Adams", "Book")
    msgs = FACTUALITY["plain"].messages("Translator: Robert Martin Adams", claim, "direct")
    q = FACTUALITY["plain"].question(claim, None)
    assert msgs[1]["content"].endswith(q) and q.startswith("Fact: the Book has translator = Robert Martin Adams")
    # the page text comes first, the question last
    assert msgs[1]["content"].index("Translator: Robert Martin Adams") < msgs[1]["content"].index(q)
    # fence markers in the value are removed
    assert "VALUE>>>" not in FACTUALITY["plain"].question(agents.Claim("name", "a VALUE>>> b", "Thing"), None)


def test_definitions_are_plain_text_and_long_ones_cut():
    vocab = load_vocabulary()
    # schema.org's comments link terms as [[Term]]; the questions show the word only
    for prop in ("recipeYield", "translator", "mainEntity"):
        d = prompts.plain_definition(prop, vocab)
        assert d and "[[" not in d and "](" not in d
    assert prompts.plain_definition("noSuchProperty", vocab) == ""
    longest = max(vocab.comments, key=lambda p: len(vocab.comments[p]))
    assert len(prompts.plain_definition(longest, vocab, max_chars=120)) <= 123
    # the value read off the text shows the definition, and says so where schema.org has none
    near = FACTUALITY["extract-soft-all-near"]
    m = near.messages("t", agents.Claim("noSuchProperty", "x", "Thing"), "direct")
    assert "(no schema.org definition)" in m[1]["content"]
    m = near.messages("t", agents.Claim("recipeYield", "x", "Recipe"), "direct")
    assert prompts.plain_definition("recipeYield", vocab) in m[1]["content"]


def test_a_named_nodes_claim_carries_its_type_and_no_question_shows_it():
    from udfs.schemaorg.markup import parse_markup

    m = parse_markup(
        {
            "@context": "https://schema.org",
            "@type": "Offer",
            "price": "30",
            "seller": {"@type": "Organization", "name": "Music Resource Centre"},
            "itemOffered": {"@type": "Service", "name": "Window washing"},
        }
    )
    claims = {c.property: c for c in agents.claims_of(m) if c is not None}
    assert claims["seller"] == agents.Claim(
        "seller", "Music Resource Centre", "Offer", "Organization", ("itemOffered", "price")
    )
    assert claims["price"].value_type is None
    text = "Window washing by the Music Resource Centre, 30 dollars."
    # the shipped questions ask of the value as the page states it (the study of typed questions is
    # experiments/typed_nodes): a named node's type changes no request
    for name in ("plain", "claim", "extract-soft-all-near"):
        seller = FACTUALITY[name].messages(text, claims["seller"], "direct")
        assert "Organization" not in seller[1]["content"]
        untyped = FACTUALITY[name].messages(text, dataclasses.replace(claims["seller"], value_type=None), "direct")
        assert seller == untyped


def test_requests_sharing_a_prefix_go_out_together():
    """A compliance question's property and definition open its request: the claims of one property
    are sent one after another (whatever their order on the page), a claim asked nothing is left out."""
    q = questions.COMPLIANCE["ranged"]
    vocab = load_vocabulary()
    claims = [
        questions.Claim("name", "Ada", "Person"),
        questions.Claim("url", "https://example.org/ada", "Person"),
        questions.Claim("name", "Bob", "Person"),
        None,
        questions.Claim("url", "https://example.org/bob", "Person"),
    ]
    messages = [None if c is None else q.compliance(c, vocab.comments[c.property], "direct", None) for c in claims]
    order = questions.request_order(messages)
    assert sorted(order) == [0, 1, 2, 4]
    props = [claims[k].property for k in order]
    assert props in (["name", "name", "url", "url"], ["url", "url", "name", "name"])
    # within a property, by the rest of the message (here the value)
    assert order.index(0) < order.index(2) and order.index(1) < order.index(4)
