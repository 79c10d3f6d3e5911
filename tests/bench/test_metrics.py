"""The benchmark's metrics on scikit-learn and numpy (udfs/agents_bench/metrics.py), checked against a
second computation of each: AUROC against the Mann-Whitney U statistic, the precision-recall
curve against the confusion matrix at each of its thresholds, quantiles against the order
statistics, and the hand-kept Cohen's kappa (the paper's tie rule) against scikit-learn's
``cohen_kappa_score`` where the two rules coincide (no tie, raters not constant)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import mannwhitneyu
from sklearn.metrics import cohen_kappa_score

from udfs.agents_bench import metrics as bm
from udfs.scores import confusion as cm

RNG = np.random.default_rng(20260)


def scored_items(n: int, levels: int):
    """Labels and scores with ties (scores on ``levels`` levels, like a model's yes-probability
    rounded in its answer) and a few unanswered (None) items."""
    labels = [bool(x) for x in RNG.integers(0, 2, n)]
    scores = [
        round(float(s), 1) if levels == 11 else float(s)
        for s in np.clip(RNG.normal(np.where(labels, 0.65, 0.4), 0.25), 0, 1)
    ]
    for i in RNG.choice(n, n // 10, replace=False):
        scores[i] = None
    return labels, scores


@pytest.mark.parametrize("levels", [11, 0])
def test_auroc_is_the_mann_whitney_probability(levels):
    labels, scores = scored_items(300, levels)
    pos = [s for y, s in zip(labels, scores) if y and s is not None]
    neg = [s for y, s in zip(labels, scores) if not y and s is not None]
    u = mannwhitneyu(pos, neg).statistic  # ties count half
    assert cm.auroc(labels, scores) == pytest.approx(u / (len(pos) * len(neg)))
    assert cm.auroc(labels, [float("nan") if s is None else s for s in scores]) == cm.auroc(labels, scores)
    assert cm.auroc([True, True], [0.2, 0.9]) is None and cm.auroc([False], [0.1]) is None


def test_the_precision_recall_curve_is_the_confusion_at_each_distinct_score():
    labels, scores = scored_items(200, 11)
    points = bm.precision_recall_points(labels, scores)
    distinct = sorted({s for s in scores if s is not None})
    assert [p["threshold"] for p in points] == distinct[: len(points)]
    for p in points:
        c = cm.at_threshold(labels, scores, p["threshold"])  # the agents' rule: score >= threshold
        assert (p["precision"], p["recall"]) == (pytest.approx(c.precision), pytest.approx(c.recall))
    assert bm.precision_recall_points([False, False], [0.3, 0.7]) == []


def test_quantiles_interpolate_between_order_statistics():
    values = sorted(float(v) for v in RNG.exponential(3.0, 41))
    for q in (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0):
        pos = (len(values) - 1) * q
        lo, hi = int(np.floor(pos)), int(np.ceil(pos))
        assert bm.quantile(values, q) == pytest.approx(values[lo] + (values[hi] - values[lo]) * (pos - lo))
    with pytest.raises(ValueError, match="no values"):
        bm.quantile([], 0.5)


def test_kappa_equals_sklearn_where_the_tie_rule_does_not_apply():
    compared = 0
    for n in (5, 18, 60, 200):
        memr = [str(c) for c in RNG.choice(bm.SIDES, n)]
        human = [m if RNG.random() < 0.7 else str(RNG.choice(bm.SIDES)) for m in memr]
        if len(set(memr)) < 2 or len(set(human)) < 2:
            continue
        pairs = bm.rating_pairs(zip(memr, human))
        assert len(pairs) == n  # no tie: one pair per page
        assert bm.cohen_kappa(pairs) == pytest.approx(cohen_kappa_score(memr, human))
        compared += 1
    assert compared >= 3
    # the paper's 18 pages without their tie: both rules agree; with it, ours expands the tie
    paper = [("human", "human")] * 9 + [("llm", "llm")] * 8
    assert bm.cohen_kappa(bm.rating_pairs(paper)) == pytest.approx(cohen_kappa_score(*zip(*paper)))
    assert round(bm.kappa_table(paper + [("llm", "tie")])["kappa"], 3) == 0.895


def test_the_benchmark_plot_draws_the_full_curve(tmp_path):
    from udfs.agents_bench.runner import plot_precision_recall

    labels, scores = scored_items(120, 11)
    sweep = [{"task": "intrinsic", **s} for s in bm.threshold_sweep(labels, scores)]
    c = cm.at_threshold(labels, scores, 0.5)
    metrics = [{"task": "intrinsic", "precision": c.precision, "recall": c.recall}]
    curve = bm.precision_recall_points(labels, scores)
    assert 5 < len(curve) <= len({s for s in scores if s is not None})  # a point per distinct score
    plot_precision_recall(sweep, metrics, tmp_path / "pr.png", {"intrinsic": curve})
    plot_precision_recall(sweep, metrics, tmp_path / "sweep_only.png")
    for name in ("pr.png", "sweep_only.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
