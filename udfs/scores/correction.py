"""Rejection rates corrected for the judge's errors: the Rogan-Gladen estimator with a bootstrap
confidence interval over pages and over the judge's measured sensitivity and specificity.

Convention. A verdict agent's "positive" class is the claim that passes: factual (factuality),
compliant (compliance). Its **sensitivity** is P(judge says pass | the claim is true) and its
**specificity** P(judge says reject | the claim is false), both measured on the calibration's test
split (``udfs.agents.calibration``: tp, fn, tn, fp at the calibrated threshold). A corpus's
**observed rejection rate** r is the share of judged claims the judge rejected. With π the true
share of false claims, r = π·spec + (1 - π)·(1 - sens), so

    π = (r + sens - 1) / (sens + spec - 1)

which is Rogan-Gladen's p = (obs + spec' - 1) / (sens' + spec' - 1) written for the rejected class
(its sens' is the judge's spec, its spec' the judge's sens). π is clipped to [0, 1]. The judge can
only produce rates in [1 - sens, spec]: an observed rate outside that range is clipped and flagged.
The denominator, Youden's J = sens + spec - 1, is how much the judge's answers depend on the truth:
near 0 the verdicts carry no information and no correction is possible (flagged).

Uncertainty (:func:`corrected_rate`): each bootstrap draw resamples the pages with replacement
(the observed rate of a draw is rejected / judged over the drawn pages) and draws sens and spec
from their Beta(1 + hits, 1 + misses) posteriors (a uniform prior on the test split's binomial
counts); the interval is the draws' percentile interval. Draws whose J is not above 0 are
counted apart (they cannot be corrected) and the interval is taken over the others. The draws
are seeded, so a report is reproducible.

Pure: numbers in, numbers out (numpy only).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from udfs.scores.confusion import Confusion

# The method's own constants (not settings of a run: changing them changes what "resolvable" means).
CI_LEVEL = 0.95
BOOTSTRAP_DRAWS = 2000
# J = sens + spec - 1 at or below this: the judge's verdicts barely depend on the truth.
MIN_YOUDEN = 0.1
# A corrected rate whose interval is wider than this says too little to be shown as a figure.
MAX_CI_WIDTH = 0.5
SEED = 0


def rogan_gladen(observed: float, sensitivity: float, specificity: float) -> float | None:
    """The true prevalence of the class the judge counts as positive, from the observed share of
    positive verdicts: (obs + spec - 1) / (sens + spec - 1), clipped to [0, 1]; None when
    sens + spec - 1 is not above 0."""
    j = sensitivity + specificity - 1
    if j <= 0:
        return None
    return float(min(1.0, max(0.0, (observed + specificity - 1) / j)))


def corrected_rejection(observed_rejection: float, sensitivity: float, specificity: float) -> float | None:
    """The true share of false claims from the observed rejection rate, with the judge's
    sensitivity and specificity on its pass class (module docstring): Rogan-Gladen for the
    rejected class, whose sensitivity is the judge's specificity and vice versa."""
    return rogan_gladen(observed_rejection, specificity, sensitivity)


@dataclass
class Corrected:
    """A corrected rejection rate: the observed one, the estimate (None when it cannot be had), the
    interval, the draws it came from, and the flags that say why it should not be read as a
    figure (empty: it can)."""

    observed: float | None
    corrected: float | None
    low: float | None = None
    high: float | None = None
    pages: int = 0
    claims: int = 0
    draws: int = 0
    draws_unresolved: int = 0
    flags: list[str] = field(default_factory=list)

    @property
    def resolved(self) -> bool:
        return self.corrected is not None and not self.flags


def corrected_rate(
    judged: Sequence[int],
    rejected: Sequence[int],
    judge: Confusion,
    *,
    draws: int = BOOTSTRAP_DRAWS,
    level: float = CI_LEVEL,
    min_youden: float = MIN_YOUDEN,
    max_ci_width: float = MAX_CI_WIDTH,
    seed: int = SEED,
) -> Corrected:
    """The rejection rate over pages (``judged[i]`` claims judged on page i, ``rejected[i]`` of them
    rejected) corrected for ``judge``'s errors, with a bootstrap interval over pages and the
    judge's Beta posteriors (module docstring). Flags: no claim judged; a test split without a
    positive or a negative; J = sens + spec - 1 at or below ``min_youden``; an observed rate
    outside [1 - sens, spec] (the estimate is clipped); an interval wider than ``max_ci_width``."""
    n = np.asarray(judged, dtype=float)
    k = np.asarray(rejected, dtype=float)
    if n.shape != k.shape:
        raise ValueError(f"{len(n)} pages judged but {len(k)} with rejections")
    if (k > n).any() or (k < 0).any():
        raise ValueError("a page cannot reject more claims than it judged, nor fewer than none")
    keep = n > 0
    n, k = n[keep], k[keep]
    out = Corrected(observed=None, corrected=None, pages=int(len(n)), claims=int(n.sum()))
    if not n.sum():
        out.flags.append("no claim judged")
        return out
    out.observed = float(k.sum() / n.sum())
    sens, spec = judge.sensitivity, judge.specificity
    if sens is None or spec is None:
        out.flags.append("the judge's test split lacks " + ("true claims" if sens is None else "false claims"))
        return out
    j = sens + spec - 1
    if j <= min_youden:
        out.flags.append(f"judge cannot resolve rates: sens + spec - 1 = {j:.2f}")
        if j <= 0:
            return out
    out.corrected = corrected_rejection(out.observed, sens, spec)
    if not (1 - sens <= out.observed <= spec):
        out.flags.append(f"observed rate outside what the judge produces ([{1 - sens:.2f}, {spec:.2f}]): clipped")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(n), size=(draws, len(n)))
    obs = k[idx].sum(axis=1) / n[idx].sum(axis=1)
    s = rng.beta(judge.tp + 1, judge.fn + 1, size=draws)
    c = rng.beta(judge.tn + 1, judge.fp + 1, size=draws)
    jd = s + c - 1
    ok = jd > 0
    est = np.clip((obs[ok] + s[ok] - 1) / jd[ok], 0.0, 1.0)
    out.draws, out.draws_unresolved = int(ok.sum()), int(draws - ok.sum())
    if len(est):
        a = (1 - level) / 2
        out.low, out.high = (float(x) for x in np.quantile(est, [a, 1 - a]))
        if out.high - out.low > max_ci_width:
            out.flags.append(f"interval wider than {max_ci_width:g}")
    else:
        out.flags.append("no bootstrap draw could be corrected")
    return out
