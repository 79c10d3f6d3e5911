"""One home for the figures of a yes/no judge against labels: the confusion counts and the rates
read off them, and AUROC. The agents benchmark, the calibration's test split and the corrected
rejection rates all take them from here, so a figure has one definition wherever it is shown.

The positive class is the judge's "pass" (a true claim passed is a true positive). A rate whose
denominator is empty is undefined and is ``None`` (sensitivity, specificity, balanced accuracy),
never 0.0: a test split without a false claim says nothing of how the judge treats false claims.
Precision, recall and F1 follow scikit-learn's ``zero_division=0`` (0.0 on an empty denominator),
the convention of the tables they are compared with (the paper's Tables 2 and 4).

A claim without a verdict or score (the model gave no yes/no; NaN) is neither a hit nor a miss: it
is counted apart (``unanswered``) and left out of the counts.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np


def f1_of(tp: float, fp: float, fn: float) -> float:
    """F1 from counts (weighted counts allowed); 0.0 without a true positive."""
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


@dataclass(frozen=True)
class Confusion:
    tp: int = 0
    fp: int = 0
    tn: int = 0
    fn: int = 0
    unanswered: int = 0

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.tn + self.fn

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def f1(self) -> float:
        """F1 of the true class (= f1_true)."""
        return f1_of(self.tp, self.fp, self.fn)

    @property
    def f1_true(self) -> float:
        return self.f1

    @property
    def f1_false(self) -> float:
        """F1 with "false" as the positive class: hits are true negatives."""
        return f1_of(self.tn, self.fn, self.fp)

    @property
    def sensitivity(self) -> float | None:
        """P(pass | true claim); None without a true claim."""
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def specificity(self) -> float | None:
        """P(reject | false claim); None without a false claim."""
        return self.tn / (self.tn + self.fp) if self.tn + self.fp else None

    @property
    def balanced_accuracy(self) -> float | None:
        """(sensitivity + specificity) / 2; None when either is undefined."""
        sens, spec = self.sensitivity, self.specificity
        return None if sens is None or spec is None else (sens + spec) / 2

    @property
    def accuracy(self) -> float:
        return (self.tp + self.tn) / self.n if self.n else 0.0

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(
            n=self.n,
            precision=self.precision,
            recall=self.recall,
            f1=self.f1,
            f1_true=self.f1_true,
            f1_false=self.f1_false,
            sensitivity=self.sensitivity,
            specificity=self.specificity,
            balanced_accuracy=self.balanced_accuracy,
            accuracy=self.accuracy,
        )
        return d


def is_nan(x) -> bool:
    return isinstance(x, float) and math.isnan(x)


def confusion(labels: Sequence[bool], predictions: Sequence[bool | None]) -> Confusion:
    """The counts of ``predictions`` against ``labels``; a None prediction is unanswered."""
    if len(labels) != len(predictions):
        raise ValueError(f"{len(labels)} labels but {len(predictions)} predictions")
    c = Counter()
    for y, p in zip(labels, predictions):
        if p is None:
            c["unanswered"] += 1
        elif y:
            c["tp" if p else "fn"] += 1
        else:
            c["fp" if p else "tn"] += 1
    return Confusion(**c)


def at_threshold(labels: Sequence[bool], scores: Sequence[float | None], threshold: float) -> Confusion:
    """The counts when a claim passes at score >= threshold (the agents' rule); no score (None,
    NaN) is unanswered."""
    return confusion(labels, [None if s is None or is_nan(s) else s >= threshold for s in scores])


def scored(labels: Sequence[bool], scores: Sequence[float | None]) -> tuple[np.ndarray, np.ndarray]:
    """(labels, scores) of the items with a score (None and NaN left out), as arrays."""
    pairs = [(bool(y), float(s)) for y, s in zip(labels, scores) if s is not None and not is_nan(s)]
    return np.array([y for y, _ in pairs], dtype=bool), np.array([s for _, s in pairs], dtype=float)


def auroc(labels: Sequence[bool], scores: Sequence[float | None]) -> float | None:
    """Probability that a random positive scores above a random negative (ties count half:
    scikit-learn's ``roc_auc_score``), over the items with a score; None when one class is missing."""
    from sklearn.metrics import roc_auc_score

    y, s = scored(labels, scores)
    if y.all() or not y.any():
        return None
    return float(roc_auc_score(y, s))
