"""The factuality question's variants (udfs/agents/prompts.py): the plain one is the question the
factuality agent asks today; the defined one adds the property's schema.org definition, as plain
text, from the bundled vocabulary."""
from __future__ import annotations

import math

import pytest

from udfs.agents import prompts
from udfs.agents import verdicts as agents
from udfs.schemaorg.vocab import load_vocabulary


def test_plain_is_the_agents_question():
    claim = agents.Claim("translator", "Robert Martin Adams", "Book")
    msgs = agents.factuality_messages("Translator: Robert Martin Adams", claim, "direct")
    q = prompts.factuality_question("Book", "translator", "Robert Martin Adams")
    assert msgs[1]["content"].endswith(q)


def test_defined_gives_the_definition_in_plain_text():
    vocab = load_vocabulary()
    q = prompts.factuality_question("Recipe", "recipeYield", "270 calories", "defined")
    assert "recipeYield = 270 calories" in q and "The quantity produced by the recipe" in q
    # schema.org's comments link terms as [[Term]]; the question shows the word only
    for prop in ("recipeYield", "translator", "mainEntity"):
        d = prompts.plain_definition(prop, vocab)
        assert d and "[[" not in d and "](" not in d
    assert prompts.plain_definition("noSuchProperty", vocab) == ""
    assert "(no schema.org definition)" in prompts.factuality_question("Thing", "noSuchProperty", "x", "defined")
    # fence markers in the value are removed, as in the plain question
    assert "VALUE>>>" not in prompts.factuality_question("Thing", "name", "a VALUE>>> b", "defined")


def test_long_definitions_are_cut_and_unknown_variants_named():
    vocab = load_vocabulary()
    longest = max(vocab.comments, key=lambda p: len(vocab.comments[p]))
    assert len(prompts.plain_definition(longest, vocab, max_chars=120)) <= 123
    with pytest.raises(ValueError, match="plain, defined"):
        prompts.factuality_question("Thing", "name", "x", "nope")


def test_typed_questions_name_a_nodes_type_and_are_the_plain_ones_for_a_literal():
    from udfs.schemaorg.markup import parse_markup

    m = parse_markup({"@context": "https://schema.org", "@type": "Offer", "price": "30",
                      "seller": {"@type": "Organization", "name": "Music Resource Centre"},
                      "itemOffered": {"@type": "Service", "name": "Window washing"}})
    claims = {c.property: c for c in agents.claims_of(m) if c is not None}
    assert claims["seller"] == agents.Claim("seller", "Music Resource Centre", "Offer", "Organization",
                                            ("itemOffered", "price"))
    assert claims["price"].value_type is None
    text = "Window washing by the Music Resource Centre, 30 dollars."
    typed = agents.factuality_messages(text, claims["seller"], "direct", None, "typed")[1]["content"]
    assert typed.endswith("seller = Music Resource Centre (an Organization)\n"
                          "Is this fact supported by the page text? Answer yes or no.")
    assert "Window washing (a Service) is the itemOffered of this Offer." in \
        agents.factuality_messages(text, claims["itemOffered"], "direct", None, "claim-typed")[1]["content"]
    # a literal: the very requests of plain and claim, so their answers are shared through the cache
    for typed_q, plain_q in (("typed", "plain"), ("claim-typed", "claim")):
        assert agents.factuality_messages(text, claims["price"], "direct", None, typed_q) == \
            agents.factuality_messages(text, claims["price"], "direct", None, plain_q)
        # the untyped questions never show the type
        assert "Organization" not in agents.factuality_messages(text, claims["seller"], "direct", None, plain_q)[1]["content"]


def test_choice_offers_the_subjects_properties_and_scores_the_claimed_ones_share():
    from udfs.schemaorg.markup import parse_markup

    m = parse_markup({"@context": "https://schema.org", "@type": "Recipe", "name": "Mom's World Famous Banana Bread",
                      "cookTime": "PT1H", "prepTime": "PT15M", "recipeYield": "1 loaf",
                      "author": {"@type": "Person", "name": "John Smith"}})
    claims = {c.property: c for c in agents.claims_of(m) if c is not None}
    # siblings are the subject's other properties: the author's name has none (nothing to choose from)
    assert claims["cookTime"].siblings == ("author", "name", "prepTime", "recipeYield")
    assert agents.choice_messages("text", next(c for c in agents.claims_of(m) if c and c.entity_type == "Person")) is None
    text = "Mom's World Famous Banana Bread, by John Smith. Prep time: 15 minutes. Cook time: 1 hour. Makes 1 loaf."
    swapped = agents.Claim("recipeYield", "15 minutes", "Recipe", None, claims["recipeYield"].siblings)
    q = agents.choice_messages(text, swapped)[1]["content"]
    # options sorted by name, whichever is claimed: the claimed one is not marked
    assert q.endswith("A. author\nB. cookTime\nC. name\nD. prepTime\nE. recipeYield\n"
                      "F. none of them (the text does not give this value)\nAnswer with the letter only.")
    assert agents.choice_messages(text, claims["prepTime"])[1]["content"].split("VALUE>>>")[1] == \
        q.split("VALUE>>>")[1]
    # the score: the claimed option's share of the option letters' probability (spellings summed)
    lp = [{"token": "D", "logprob": -0.1, "top_logprobs": [
        {"token": "D", "logprob": math.log(0.6)}, {"token": " D", "logprob": math.log(0.1)},
        {"token": "E", "logprob": math.log(0.2)}, {"token": "F", "logprob": math.log(0.05)},
        {"token": "yes", "logprob": math.log(0.05)}]}]
    assert agents.choice_score(lp, swapped) == pytest.approx(0.2 / 0.95)
    assert agents.choice_score(lp, claims["prepTime"]) == pytest.approx(0.7 / 0.95)
    assert agents.choice_score([{"token": "no", "logprob": 0.0, "top_logprobs": []}], swapped) is None
    # a subject with many properties keeps a fixed pick of them, the same whichever is claimed
    many = tuple(f"p{i:02d}" for i in range(20))
    opts = [agents.choice_options(agents.Claim(p, "v", "Thing", None, tuple(x for x in many if x != p)))
            for p in ("p03", "p17")]
    assert all(len(o) == agents.CHOICE_MAX_OPTIONS for o in opts)
    assert set(opts[0]) - {"p03"} <= set(many) and "p03" in opts[0] and "p17" in opts[1]
    # the fingerprint tells choice from the other questions
    fps = {agents.prompt_fingerprint("factuality", "direct", None, qs) for qs in (("plain",), ("choice",),
                                                                                   ("plain", "choice"))}
    assert len(fps) == 3
