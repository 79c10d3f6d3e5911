"""How far a verdict agent can be trusted: the metrics of the agents benchmark.

* precision / recall / F1 of the "true" class (the paper's Tables 2 and 4), F1 of the "false" class
  as well (FactCheck), balanced accuracy ((TPR + TNR) / 2), AUROC of the scores (scikit-learn's
  ``roc_auc_score``: ties count half);
* a threshold sweep (each threshold: a claim passes when its score >= threshold, the agents' rule)
  and the full precision-recall curve over every distinct score (scikit-learn's
  ``precision_recall_curve``, the same >= rule);
* the mean latency after dropping IQR outliers (FactCheck: values outside
  [Q1 - 1.5 IQR, Q3 + 1.5 IQR], quartiles by numpy's linear interpolation);
* consensus alignment CA_M: the share of items on which model M's vote agrees with the decision
  of the consensus (items M did not answer are left out of its share);
* Cohen's kappa between MeMR's choice and human votes, with the LLM4Schema.org Table 9 rule: a tie
  (human or MeMR) counts for both sides, i.e. a page becomes one rating pair per side of the tie.
  Kept by hand because of that rule and its pe = 1 case; on pairs without ties it equals
  scikit-learn's ``cohen_kappa_score`` (tests/bench/test_metrics.py checks it).

A claim without a verdict (the model gave no yes/no) is neither a hit nor a miss: it is counted
apart (``unanswered``) so a reader sees it, and left out of the confusion matrix.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

SIDES = ("human", "llm")
TIE = "tie"


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

    @staticmethod
    def _f1(tp: int, fp: int, fn: int) -> float:
        return 2 * tp / (2 * tp + fp + fn) if tp else 0.0

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def f1(self) -> float:
        """F1 of the true class (= f1_true)."""
        return self._f1(self.tp, self.fp, self.fn)

    @property
    def f1_true(self) -> float:
        return self.f1

    @property
    def f1_false(self) -> float:
        """F1 with "false" as the positive class: hits are true negatives."""
        return self._f1(self.tn, self.fn, self.fp)

    @property
    def specificity(self) -> float:
        return self.tn / (self.tn + self.fp) if self.tn + self.fp else 0.0

    @property
    def balanced_accuracy(self) -> float:
        return (self.recall + self.specificity) / 2

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
            balanced_accuracy=self.balanced_accuracy,
            accuracy=self.accuracy,
        )
        return d


def confusion(labels: Sequence[bool], predictions: Sequence[bool | None]) -> Confusion:
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
    return confusion(labels, [None if s is None or _nan(s) else s >= threshold for s in scores])


def _nan(x) -> bool:
    return isinstance(x, float) and math.isnan(x)


def threshold_sweep(
    labels: Sequence[bool], scores: Sequence[float | None], thresholds: Iterable[float] | None = None
) -> list[dict[str, Any]]:
    """One row per threshold: the confusion counts and every metric at that threshold."""
    if thresholds is None:
        thresholds = [round(i / 20, 2) for i in range(1, 20)]
    return [{"threshold": t, **at_threshold(labels, scores, t).as_dict()} for t in thresholds]


def _scored(labels: Sequence[bool], scores: Sequence[float | None]) -> tuple[np.ndarray, np.ndarray]:
    """(labels, scores) of the items with a score (None and NaN: unanswered, left out)."""
    pairs = [(bool(y), float(s)) for y, s in zip(labels, scores) if s is not None and not _nan(s)]
    return np.array([y for y, _ in pairs], dtype=bool), np.array([s for _, s in pairs], dtype=float)


def auroc(labels: Sequence[bool], scores: Sequence[float | None]) -> float | None:
    """Probability that a random positive scores above a random negative (ties count half); None
    when one class is missing."""
    from sklearn.metrics import roc_auc_score

    y, s = _scored(labels, scores)
    if y.all() or not y.any():
        return None
    return float(roc_auc_score(y, s))


def precision_recall_points(labels: Sequence[bool], scores: Sequence[float | None]) -> list[dict[str, float]]:
    """The precision-recall curve: one point per distinct score used as the threshold (a claim
    passes at score >= threshold), in increasing threshold order; empty without a positive."""
    from sklearn.metrics import precision_recall_curve

    y, s = _scored(labels, scores)
    if not y.any():
        return []
    precision, recall, thresholds = precision_recall_curve(y, s)
    # sklearn appends the (precision 1, recall 0) end point, which has no threshold
    return [
        {"threshold": float(t), "precision": float(p), "recall": float(r)}
        for t, p, r in zip(thresholds, precision[:-1], recall[:-1])
    ]


def quantile(values: Sequence[float], q: float) -> float:
    """The q-quantile by linear interpolation between order statistics (numpy's default)."""
    if len(values) == 0:
        raise ValueError("quantile of no values")
    return float(np.quantile(np.asarray(values, dtype=float), q))


@dataclass(frozen=True)
class IQRMean:
    mean: float | None
    kept: int
    dropped: int
    low: float | None
    high: float | None


def iqr_mean(values: Iterable[float | None]) -> IQRMean:
    """Mean of the values inside [Q1 - 1.5 IQR, Q3 + 1.5 IQR] (None and NaN are not values)."""
    vs = sorted(v for v in values if v is not None and not _nan(v))
    if not vs:
        return IQRMean(None, 0, 0, None, None)
    q1, q3 = (float(q) for q in np.quantile(np.asarray(vs, dtype=float), [0.25, 0.75]))
    low, high = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
    kept = [v for v in vs if low <= v <= high]
    return IQRMean(sum(kept) / len(kept), len(kept), len(vs) - len(kept), low, high)


def consensus_alignment(
    votes: Sequence[Mapping[str, float | None]], decisions: Sequence[bool | None], threshold: float
) -> dict[str, dict[str, Any]]:
    """CA_M per voter: agreements with the consensus decision / items both answered."""
    agree: Counter = Counter()
    answered: Counter = Counter()
    for vs, d in zip(votes, decisions):
        if d is None:
            continue
        for model, score in (vs or {}).items():
            if score is None or _nan(score):
                continue
            answered[model] += 1
            agree[model] += (score >= threshold) == d
    return {m: {"alignment": agree[m] / answered[m], "items": answered[m]} for m in sorted(answered)}


# ---- agreement ---------------------------------------------------------------------------------
def sides(choice: str) -> tuple[str, ...]:
    """The sides a choice counts for: a tie counts for both."""
    c = (choice or "").strip().lower()
    if c == TIE:
        return SIDES
    if c in SIDES:
        return (c,)
    raise ValueError(f"unknown choice {choice!r}: one of {', '.join(SIDES + (TIE,))}")


def memr_choice(memr_h: float, memr_l: float) -> str:
    """MeMR's choice between the two markups: the side with the higher score, a tie when equal."""
    if memr_h > memr_l:
        return "human"
    if memr_l > memr_h:
        return "llm"
    return TIE


def rating_pairs(rows: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """(MeMR choice, human vote) per page -> rating pairs, a tie expanded to one pair per side."""
    return [(a, b) for memr, human in rows for a in sides(memr) for b in sides(human)]


def cohen_kappa(pairs: Sequence[tuple[str, str]]) -> float | None:
    """Cohen's kappa of two raters over the same items: (po - pe) / (1 - pe); None for no pairs,
    1.0 when both raters use one same category throughout (pe = 1, full agreement)."""
    if not pairs:
        return None
    n = len(pairs)
    po = sum(a == b for a, b in pairs) / n
    ca = Counter(a for a, _ in pairs)
    cb = Counter(b for _, b in pairs)
    pe = sum(ca[k] * cb[k] for k in set(ca) | set(cb)) / (n * n)
    if pe == 1:
        return 1.0 if po == 1 else 0.0
    return (po - pe) / (1 - pe)


def kappa_table(rows: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """Kappa with the tie rule, and the 2x2 table it was computed on."""
    rows = list(rows)
    pairs = rating_pairs(rows)
    table = Counter(pairs)
    return {
        "pages": len(rows),
        "pairs": len(pairs),
        "ties_memr": sum(m.strip().lower() == TIE for m, _ in rows),
        "ties_human": sum(h.strip().lower() == TIE for _, h in rows),
        "agree": sum(a == b for a, b in pairs),
        **{f"memr_{a}_human_{b}": table[(a, b)] for a in SIDES for b in SIDES},
        "kappa": cohen_kappa(pairs),
    }
