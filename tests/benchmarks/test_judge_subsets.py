"""benchmarks/judge_subsets.py on constructed answers with a known best mean: the choice reads
the fit split only, and a question that does not apply leaves the mean of the others."""
from __future__ import annotations

import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import judge_subsets as S  # noqa: E402


def test_a_question_that_does_not_apply_leaves_the_mean_of_the_others():
    answers = {"direct": {"i": {"score": 0.8}}, "excerpt": {"i": {"score": None, "not_asked": True}},
               "says": {"i": {"score": None}}}
    assert S.mean_score(answers, ("direct", "excerpt"), "i") == 0.8
    assert S.mean_score(answers, ("direct", "says"), "i") is None  # applies, but unanswered
    assert S.mean_score(answers, ("excerpt",), "i") is None and S.mean_score(answers, ("direct",), "j") is None


def _corpus(seed=5, n=240):
    """direct separates both kinds of false claim, says is noise, complies (no text) catches only
    intrinsic ones; every item's example is its own group, so fit and test are halves."""
    rnd = random.Random(seed)
    items, answers = {}, {"direct": {}, "says": {}, "complies": {}}
    for k in range(n):
        kind = ("positive", "intrinsic", "positive", "extrinsic")[k % 4]
        label = kind == "positive"
        i = f"i{k}"
        items[i] = {"item_id": i, "label": label, "kind": kind, "text_example_id": f"ex{k}"}
        answers["direct"][i] = {"score": (0.75 if label else 0.3) + rnd.uniform(-0.2, 0.2)}
        answers["says"][i] = {"score": rnd.uniform(0, 1)}
        answers["complies"][i] = {"score": 0.2 if kind == "intrinsic" else 0.7 + rnd.uniform(-0.1, 0.1)}
    return items, answers


def test_the_ranking_uses_the_fit_split_and_puts_the_informative_mean_first():
    items, answers = _corpus()
    split = {i: ("fit" if int(i[1:]) % 8 < 4 else "test") for i in items}
    ranked = S.rank(items, split, answers, ("direct", "says", "complies"))
    # complies alone reads no text: it is never a mean of its own
    assert all(set(qs) & set(S.TEXT_QUESTIONS) for qs, _ in ranked) and len(ranked) == 6
    best, f = ranked[0]
    assert "direct" in best and "says" not in best
    assert f["fit", "intrinsic"][0] >= ranked[-1][1]["fit", "intrinsic"][0]
    # scrambling the test split's answers changes no choice: the ranking reads the fit split only
    scrambled = {q: {i: ({"score": random.Random(i).uniform(0, 1)} if split[i] == "test" else r)
                     for i, r in a.items()} for q, a in answers.items()}
    assert [qs for qs, _ in S.rank(items, split, scrambled, ("direct", "says", "complies"))] == \
        [qs for qs, _ in ranked]
