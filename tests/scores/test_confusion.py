"""One definition of each judge metric (issue 65): the confusion rates and AUROC live in
``udfs.scores.confusion`` and nowhere else, and an undefined rate is None wherever it is shown."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from sklearn.metrics import roc_auc_score

from udfs.agents.calibration import measure
from udfs.agents_bench.metrics import threshold_sweep
from udfs.scores.confusion import Confusion, at_threshold, auroc

ROOT = Path(__file__).resolve().parents[2]
METRICS = {"auroc", "specificity", "sensitivity", "balanced_accuracy", "precision", "recall", "f1", "f1_of"}


def definitions(root: Path) -> dict[str, list[str]]:
    """Where each metric name is defined as a function or property, over udfs/."""
    out: dict[str, list[str]] = {}
    for path in sorted((root / "udfs").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in METRICS:
                out.setdefault(node.name, []).append(str(path.relative_to(root)))
    return out


def test_each_metric_is_defined_once_in_udfs():
    found = definitions(ROOT)
    twice = {name: where for name, where in found.items() if where != ["udfs/scores/confusion.py"]}
    assert not twice, f"metrics defined outside udfs/scores/confusion.py: {twice}"


def test_the_check_finds_a_second_copy(tmp_path):
    (tmp_path / "udfs" / "a").mkdir(parents=True)
    (tmp_path / "udfs" / "a" / "m.py").write_text("def auroc(y, s):\n    return 0.5\n")
    assert definitions(tmp_path) == {"auroc": ["udfs/a/m.py"]}


def test_a_split_without_false_claims_has_no_specificity_on_every_path():
    labels, scores = [True, True, True], [0.9, 0.2, 0.7]
    assert at_threshold(labels, scores, 0.5).specificity is None
    assert at_threshold(labels, scores, 0.5).balanced_accuracy is None
    m = measure(labels, scores, 0.5)
    assert (m["specificity"], m["balanced_accuracy"], m["sensitivity"]) == (None, None, pytest.approx(2 / 3))
    row = threshold_sweep(labels, scores, [0.5])[0]
    assert (row["specificity"], row["balanced_accuracy"]) == (None, None)
    assert Confusion(tp=0, fn=0, tn=3, fp=1).sensitivity is None


def test_calibration_figures_are_the_confusion_figures_on_a_real_shaped_split():
    labels = [True, False, True, True, False, False, True, False, None is None]
    scores = [0.91, 0.35, 0.62, None, 0.62, 0.08, float("nan"), 0.77, 0.5]
    m = measure(labels, scores, 0.6)
    c = at_threshold(labels, scores, 0.6)
    assert (m["tp"], m["fp"], m["tn"], m["fn"], m["unanswered"]) == (c.tp, c.fp, c.tn, c.fn, 2)
    assert m["specificity"] == pytest.approx(2 / 4) and m["balanced_accuracy"] == c.balanced_accuracy
    kept = [(y, s) for y, s in zip(labels, scores) if s is not None and s == s]
    assert m["auroc"] == pytest.approx(roc_auc_score([y for y, _ in kept], [s for _, s in kept]))
    assert auroc([True, False], [0.5, 0.5]) == 0.5 and auroc([True], [0.3]) is None
