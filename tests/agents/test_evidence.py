"""udfs/agents/evidence.py on constructed texts and labels with known answers: whether a text
states a value, near which words, the floor rule, and the logistic fit."""

from __future__ import annotations

import math
import random

import pytest

from udfs.agents import evidence as E

TEXT = "Rouge et le noir\nAuthor: Stendhal\nTranslator: Robert Martin Adams\nPrice: 2024 EUR, 4.5/5 stars"


def test_stated_ignores_case_spacing_and_punctuation_but_wants_whole_words():
    assert E.evidence(TEXT, "robert   MARTIN adams").stated
    assert E.evidence(TEXT, "4.5").stated and E.evidence(TEXT, "4,5").stated  # punctuation as spaces
    assert not E.evidence(TEXT, "202").stated and not E.evidence(TEXT, "Rob").stated  # "2024", "Robert"
    assert E.evidence(TEXT, "4").stated  # "4.5" reads as the words "4" and "5"
    assert not E.evidence(TEXT, "Martin Robert").stated
    assert not E.evidence("", "Stendhal").stated and not E.evidence(TEXT, "...").stated


def test_overlap_and_fuzzy():
    ev = E.evidence(TEXT, "Robert M. Adams")
    assert not ev.stated and ev.overlap == pytest.approx(2 / 3)
    assert 0.5 < ev.fuzzy < 1.0
    assert E.evidence(TEXT, "Stendhal").fuzzy == 1.0
    far = E.evidence(TEXT, "zzzz qqqq")
    assert far.overlap == 0.0 and far.fuzzy < 0.5


def test_near_looks_for_the_property_name_before_the_value():
    assert E.evidence(TEXT, "Robert Martin Adams", "translator").near
    assert E.evidence(TEXT, "Stendhal", "author").near
    # stated, but under another label: the intrinsic error the evidence can see
    assert not E.evidence(TEXT, "Stendhal", "translator").near
    assert E.evidence("Translation by Robert Martin Adams", "Robert Martin Adams", "translator").near
    assert E.property_words("hasMap") == ["map"] and E.property_words("streetAddress") == ["street", "address"]


def test_described_entities_are_matched_by_name():
    assert E.surface("a Person named 'Robert Martin Adams'") == "Robert Martin Adams"
    assert E.surface('a Person named "O\'Brien"') == "O'Brien"
    assert E.surface("a PostalAddress") == "a PostalAddress"
    assert E.evidence(TEXT, "a Person named 'Robert Martin Adams'", "translator").stated


def test_floor_raises_only_stated_values():
    stated, not_stated = E.evidence(TEXT, "Stendhal"), E.evidence(TEXT, "Balzac")
    assert E.floor(0.2, stated, 0.5) == 0.5 and E.floor(0.8, stated, 0.5) == 0.8
    assert E.floor(0.2, not_stated, 0.5) == 0.2


def test_features_order_and_logit_clipping():
    f = E.features(0.5, E.evidence(TEXT, "Stendhal", "author"))
    assert f == [0.0, 1.0, 1.0, 1.0, 1.0] and len(f) == len(E.FEATURES)
    assert math.isfinite(E.logit(0.0)) and math.isfinite(E.logit(1.0)) and E.logit(0.9) == pytest.approx(math.log(9))


def test_logistic_recovers_known_weights():
    rng = random.Random(7)
    true_w, true_b = (2.0, -1.5), 0.5
    x = [[rng.gauss(0, 1), rng.gauss(0, 1)] for _ in range(4000)]
    y = [rng.random() < 1 / (1 + math.exp(-(true_b + true_w[0] * a + true_w[1] * b))) for a, b in x]
    m = E.fit_logistic(x, y, l2=0.01, names=("a", "b"))
    assert m.weights[0] == pytest.approx(2.0, abs=0.2) and m.weights[1] == pytest.approx(-1.5, abs=0.2)
    assert m.bias == pytest.approx(0.5, abs=0.15)
    assert m.predict([0.0, 0.0]) == pytest.approx(1 / (1 + math.exp(-m.bias)))


def test_logistic_on_separable_data_stays_finite_and_separates():
    x = [[0.0], [0.0], [1.0], [1.0]]
    y = [False, False, True, True]
    m = E.fit_logistic(x, y, l2=1.0, names=("stated",))
    assert all(math.isfinite(w) for w in m.weights) and m.predict([1.0]) > 0.5 > m.predict([0.0])
    with pytest.raises(ValueError, match="both classes"):
        E.fit_logistic([[0.0], [1.0]], [True, True])
    with pytest.raises(ValueError):
        E.fit_logistic([[0.0]], [True, False])


def test_answer_match_is_the_word_f1_of_the_value_read_off_the_text():
    assert E.answer_match("Robert Martin Adams", "Robert Martin Adams") == 1.0
    assert E.answer_match("  robert martin ADAMS.", "Robert Martin Adams") == 1.0
    # 2 of 2 answer words in a 3-word value: P 1, R 2/3
    assert abs(E.answer_match("Robert Adams", "Robert Martin Adams") - 0.8) < 1e-9
    assert E.answer_match("4 servings", "250 calories") == 0.0
    for none in ("none", "None.", "", None, "N/A"):
        assert E.answer_match(none, "Brooklyn") == 0.0
    assert E.answer_match("Steve", "a Person named 'Steve'") == 1.0
    # a possessive is part of its word: two names that share only an "'s" do not match
    assert E.answer_match("Mom's World Famous Banana Bread", "Lupo's Heartbreak Hotel") == 0.0
    assert E.answer_match("Lupo’s Heartbreak Hotel", "Lupo's Heartbreak Hotel") == 1.0


def test_best_answer_match_scores_the_best_listed_value():
    # a chart lists several groups: the claim's is one of them, not the first
    assert E.best_answer_match("Bob Dylan\nJune Carter Cash\nJimi Hendrix", "June Carter Cash") == 1.0
    assert E.best_answer_match("1. Bob Dylan\n2. June Carter Cash", "June Carter Cash") == 1.0
    assert E.best_answer_match("- Bob Dylan\n- Jimi Hendrix", "June Carter Cash") == 0.0
    # a value split over two lines is matched as the whole answer
    assert E.best_answer_match("Los\nAngeles", "Los Angeles") == 1.0
    for none in ("none", "", None):
        assert E.best_answer_match(none, "Brooklyn") == 0.0


def test_first_token_share_weighs_the_claims_value_against_the_likeliest_answer():
    from math import log

    # asked for a MusicGroup's name on a chart page, the model answers another group first
    chart = [("Bob", log(0.5)), ("June", log(0.25)), ("none", log(0.1)), ("Jun", log(0.05)), ('"', log(0.05))]
    assert E.first_token_share(chart, "June Carter Cash") == pytest.approx(0.6)  # (0.25 + 0.05) / 0.5
    assert E.first_token_share(chart, "Bob Dylan") == 1.0
    assert E.first_token_share(chart, "Jimi Hendrix") == 0.0
    # case, a leading space and the value's own leading marks are ignored; a quote begins any answer
    assert E.first_token_share([(" los", log(0.4)), ("San", log(0.5))], "Los Angeles") == pytest.approx(0.8)
    assert E.first_token_share([("1", log(0.3)), ("$", log(0.6)), ("none", log(0.1))], "$19.99") == pytest.approx(1.0)
    assert E.first_token_share([], "Brooklyn") == 0.0 and E.first_token_share(chart, "") == 0.0


def test_soft_answer_match_gives_the_share_only_to_a_value_the_text_states():
    from math import log

    chart = [("Bob", log(0.5)), ("June", log(0.25))]
    text = "Top groups this week: Bob Dylan, June Carter Cash, Jimi Hendrix."
    assert E.soft_answer_match("Bob Dylan", chart, "June Carter Cash", text) == pytest.approx(0.5)
    assert E.soft_answer_match("June Carter Cash", chart, "June Carter Cash", text) == 1.0
    # the model's weight on a value the text does not give is its guess, not a reading
    assert E.soft_answer_match("Bob Dylan", chart, "June Carter", "Top groups: Bob Dylan.") == 0.0
    assert (
        E.soft_answer_match("none", [("none", log(0.6)), ("English", log(0.3))], "English", "A language course.") == 0.0
    )
    assert E.soft_answer_match("none", [("none", log(0.9))], "Brooklyn", "Brooklyn, NY") == 0.0


def test_other_stated_value_is_another_value_the_text_states_and_nothing_else():
    text = 'Guided tours in German and English. Call "Ticket Office" on 555-0199.'
    assert E.other_stated_value("German", "English", text) == "German"
    # one line, the quotes around it dropped; the text's own spacing and case do not matter
    assert E.other_stated_value(' "Ticket \n office" ', "English", text) == "Ticket office"
    # the claim's value itself, or part of it, is no other value
    assert E.other_stated_value("English", "English", text) is None
    assert E.other_stated_value("German tours", "German and English", text) is None
    # an answer that says there is none, an empty one, or one the text does not state
    for answer in ("none", "None.", "Not given", "", None, "French"):
        assert E.other_stated_value(answer, "English", text) is None


def test_missed_stated_value_is_an_answer_of_none_where_the_text_states_the_value():
    text = "Opening hours\nMonday: 9:00 AM - 5:00 PM\nFriday: 9:00 AM - 5:00 PM"
    for answer in ("none", " None. ", "Not given", "N/A", "", None):
        assert E.answered_none(answer)
        assert E.missed_stated_value(answer, "friday", text)
    # an answer, right or wrong, is no miss; nor is none where the text does not state the value
    assert not E.answered_none("None of the above, Monday")
    assert not E.missed_stated_value("Monday", "friday", text)
    assert not E.missed_stated_value("Friday", "friday", text)
    assert not E.missed_stated_value("none", "Sunday", text)


def test_excerpt_cuts_the_text_around_each_statement_of_the_value():
    text = (
        " ".join(f"w{i}" for i in range(40))
        + "\nTranslator: Robert Martin Adams\n"
        + " ".join(f"v{i}" for i in range(40))
    )
    got = E.excerpt(text, "robert martin ADAMS", window=3)
    # three tokens either side, cut from the text itself (its line break kept), marked as cut
    assert got == "... w38 w39\nTranslator: Robert Martin Adams\nv0 v1 v2 ..."
    # a described entity is found by its name; a value the text does not state has no excerpt
    assert E.excerpt(text, "a Person named 'Robert Martin Adams'", window=3) == got
    assert E.excerpt(text, "Martin Robert") is None and E.excerpt("", "x") is None and E.excerpt(text, "...") is None
    # overlapping stretches merge; a short text comes whole, without cut marks
    assert E.excerpt("a b c a b c", "a", window=1) == "a b c a b ..."
    assert E.excerpt("Yield: 1 loaf", "1 loaf") == "Yield: 1 loaf"
    # at most `most` occurrences, far apart ones joined by " ... "
    far = " ".join(["x"] + [f"f{i}" for i in range(30)] + ["x"] + [f"g{i}" for i in range(30)] + ["x"])
    assert E.excerpt(far, "x", window=1, most=2) == "x f0 ... f29 x g0 ..."
