"""How far a verdict agent can be trusted: the metrics of the agents benchmark.

* the confusion counts and rates of ``udfs.scores.confusion`` (one definition of precision, recall,
  F1 of either class, sensitivity, specificity, balanced accuracy and AUROC for the whole project);
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

from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from udfs.scores.confusion import at_threshold, is_nan, scored

SIDES = ("human", "llm")
TIE = "tie"


def threshold_sweep(
    labels: Sequence[bool], scores: Sequence[float | None], thresholds: Iterable[float] | None = None
) -> list[dict[str, Any]]:
    """One row per threshold: the confusion counts and every metric at that threshold."""
    if thresholds is None:
        thresholds = [round(i / 20, 2) for i in range(1, 20)]
    return [{"threshold": t, **at_threshold(labels, scores, t).as_dict()} for t in thresholds]


def precision_recall_points(labels: Sequence[bool], scores: Sequence[float | None]) -> list[dict[str, float]]:
    """The precision-recall curve: one point per distinct score used as the threshold (a claim
    passes at score >= threshold), in increasing threshold order; empty without a positive."""
    from sklearn.metrics import precision_recall_curve

    y, s = scored(labels, scores)
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
    vs = sorted(v for v in values if v is not None and not is_nan(v))
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
            if score is None or is_nan(score):
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
