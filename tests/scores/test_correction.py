"""Rejection rates corrected for the judge: simulated corpora with a known share of false claims,
judged by a simulated judge of known sensitivity and specificity, must come back within the
interval; a judge whose verdicts do not depend on the truth is flagged."""

import numpy as np
import pytest

from udfs.scores.confusion import Confusion
from udfs.scores.correction import corrected_rate, corrected_rejection, rogan_gladen


def simulate(rng, pages, claims_per_page, false_share, sens, spec):
    """(judged, rejected) per page: each claim false with probability ``false_share``; a true claim
    passes with probability ``sens``, a false one is rejected with probability ``spec``."""
    judged, rejected = [], []
    for _ in range(pages):
        n = int(rng.integers(1, 2 * claims_per_page))
        false = rng.random(n) < false_share
        u = rng.random(n)
        rej = np.where(false, u < spec, u >= sens)
        judged.append(n)
        rejected.append(int(rej.sum()))
    return judged, rejected


def test_rogan_gladen_by_hand():
    # obs 0.5, sens 0.9, spec 0.8: (0.5 + 0.8 - 1) / 0.7
    assert rogan_gladen(0.5, 0.9, 0.8) == pytest.approx(0.3 / 0.7)
    assert rogan_gladen(0.05, 0.9, 0.8) == 0.0 and rogan_gladen(0.99, 0.9, 0.8) == 1.0  # clipped
    assert rogan_gladen(0.5, 0.5, 0.5) is None
    # the rejected class: its sensitivity is the judge's specificity; a perfect judge changes nothing
    assert corrected_rejection(0.37, 1.0, 1.0) == pytest.approx(0.37)
    # pi = 0.3, sens 0.8, spec 0.9: r = 0.3 * 0.9 + 0.7 * 0.2 = 0.41
    assert corrected_rejection(0.41, 0.8, 0.9) == pytest.approx(0.3)


@pytest.mark.parametrize("false_share,sens,spec", [(0.3, 0.8, 0.9), (0.1, 0.65, 0.85), (0.6, 0.9, 0.7)])
def test_the_estimate_recovers_a_known_share_within_its_interval(false_share, sens, spec):
    rng = np.random.default_rng(11)
    judged, rejected = simulate(rng, 400, 10, false_share, sens, spec)
    # the judge's accuracy as a test split of 300 true and 300 false claims would measure it
    tp = int(rng.binomial(300, sens))
    tn = int(rng.binomial(300, spec))
    judge = Confusion(tp=tp, fn=300 - tp, tn=tn, fp=300 - tn)
    c = corrected_rate(judged, rejected, judge)
    naive = sum(rejected) / sum(judged)
    assert c.low <= false_share <= c.high
    assert abs(c.corrected - false_share) < abs(naive - false_share)
    assert c.resolved and c.pages == 400 and c.claims == sum(judged) and c.draws == 2000


def test_a_judge_that_does_not_depend_on_the_truth_is_flagged():
    judged, rejected = [10, 10, 10], [5, 4, 6]
    c = corrected_rate(judged, rejected, Confusion(tp=50, fn=50, tn=50, fp=50))  # sens + spec = 1
    assert c.corrected is None and not c.resolved
    assert any("cannot resolve" in f for f in c.flags)
    assert c.observed == pytest.approx(0.5)


def test_rates_outside_the_judges_range_and_wide_intervals_are_flagged():
    judge = Confusion(tp=90, fn=10, tn=80, fp=20)  # sens 0.9, spec 0.8: rates in [0.1, 0.8]
    c = corrected_rate([20] * 50, [1] * 50, judge)  # observed 0.05
    assert c.corrected == 0.0 and any("outside" in f for f in c.flags)
    few = corrected_rate([2, 3], [1, 2], Confusion(tp=3, fn=2, tn=3, fp=2))
    assert any("wider" in f or "cannot resolve" in f for f in few.flags) and not few.resolved


def test_no_claims_and_bad_counts():
    assert corrected_rate([0, 0], [0, 0], Confusion(tp=9, fn=1, tn=9, fp=1)).flags == ["no claim judged"]
    lacking = corrected_rate([5], [1], Confusion(tp=9, fn=1, tn=0, fp=0))
    assert lacking.corrected is None and "false claims" in lacking.flags[0]
    with pytest.raises(ValueError):
        corrected_rate([1], [2], Confusion(tp=9, fn=1, tn=9, fp=1))
