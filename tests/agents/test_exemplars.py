"""Values of a property from schema.org's examples (udfs/agents/exemplars.py), on the bundled
30.0 examples: never the claim's own value, never one from the text being judged."""
from __future__ import annotations

from udfs.agents import prompts
from udfs.agents.exemplars import exemplars, shown
from udfs.schemaorg.markup import Literal, MarkupError, parse_markup


def _values_in(ex, prop):
    try:
        triples = parse_markup(ex.jsonld).triples()
    except MarkupError:  # an example whose markup cannot be read gives no exemplar either
        return set()
    return {x.text for t in triples if t.property == prop for x in [t.value] if isinstance(x, Literal)}


def test_exemplars_are_real_values_of_the_property_in_a_fixed_order():
    got = exemplars("isbn", k=3)
    assert len(got) == 3 and len(set(got)) == 3
    every = set().union(*(_values_in(ex, "isbn") for ex in prompts.load_examples()))
    assert set(got) <= every
    assert exemplars("isbn", k=3) == got  # deterministic
    assert exemplars("isbn", k=5)[:3] == got  # a larger k extends, never reorders
    assert exemplars("noSuchProperty") == [] and shown("noSuchProperty") == "(none)"


def test_the_claims_value_and_the_judged_texts_values_are_left_out():
    first = exemplars("isbn", k=1)[0]
    assert first not in exemplars("isbn", value=f"  {first.upper()} ", k=3)  # spacing and case ignored
    ex = next(e for e in prompts.load_examples() if _values_in(e, "isbn"))
    own = _values_in(ex, "isbn")
    # judged against an example's text, none of that example's values is shown (nor any example with that text)
    with_text = exemplars("isbn", text=ex.text, k=50)
    assert with_text and not own & set(with_text)
    assert own & set(exemplars("isbn", k=50))  # they are exemplars for any other text


def test_long_values_are_cut_and_the_prompt_shows_them_quoted():
    assert all(len(v) <= 63 for p in ("description", "text", "reviewBody") for v in exemplars(p, k=10))
    from udfs.agents import verdicts

    claim = verdicts.Claim("isbn", "Universal Pictures", "Book")
    q = verdicts.factuality_messages("Some text.", claim, "direct", question="exemplified")[1]["content"]
    assert f"Values of isbn in schema.org's examples: {shown('isbn', value='Universal Pictures')}" in q
    assert "Fact: the Book has isbn = Universal Pictures" in q
    # judged against an example's own text, that example's values are not among them
    ex = next(e for e in prompts.load_examples() if _values_in(e, "isbn"))
    q = verdicts.factuality_messages(ex.text, claim, "direct", question="exemplified")[1]["content"]
    assert not any(v in q.rsplit("\n\n", 1)[1] for v in _values_in(ex, "isbn"))
