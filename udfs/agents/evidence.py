"""Cheap, model-free evidence that a page text states a claim's value, and its combination with
a verdict agent's score.

* ``evidence(text, value, property)``: whether the value occurs in the text as whole words after
  normalisation (Unicode NFKC, case, punctuation and spacing ignored: ``stated``), the share of
  the value's words that occur in the text (``overlap``), the best fuzzy match of the value
  against a stretch of the text (``fuzzy``, rapidfuzz's partial ratio in [0, 1]), and whether a
  word of the property's name occurs within ``window`` words before an occurrence of the value
  (``near``: "Translator: Robert Martin Adams" for ``translator``).
* ``excerpt(text, value)``: the stretches of the text around the places it states the value,
  for a question that shows the model only where the value is (what a small model reads best:
  "Phone: 555-0199" says whose number it is).
* ``answer_match(answer, value)``: the word F1 of a value the model read off the text (asked
  for the property's value without being shown the claim's) against the claim's value;
  ``best_answer_match``, the best of the values it listed, one per line.
* ``other_stated_value(answer, value, text)``: the answer read off the text where it is another
  value than the claim's, one the text states (what ``extract-other`` asks past);
  ``missed_stated_value``, an answer of none where the text states the claim's value (what
  ``extract-soft-all`` asks again).
* Combinations with the model's factuality score: ``floor`` (a stated value scores at least the
  floor: the text says it, the model's doubt is about where) and a logistic model over the score's
  logit and the evidence (``fit_logistic`` on labelled items, ``Logistic.predict``).

Pure: strings and numbers in, numbers out; nothing here calls a model or reads a file. What the
evidence cannot tell: a value stated on the page for another property (an intrinsic error) is
"stated" all the same; ``near`` is the only feature that looks at where.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Sequence

FEATURES = ("logit", "stated", "overlap", "fuzzy", "near")
_NON_WORD = re.compile(r"[^\w]+|_")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
# property name words too common to point at a value ("of", "has" in hasMap)
_STOP = {"has", "is", "of", "the", "in", "on", "at", "for", "by", "to", "a", "an", "and", "or"}


def words(text: str) -> list[str]:
    """The text as lower-case words: NFKC, case folded, punctuation and underscores as spaces."""
    return _NON_WORD.sub(" ", unicodedata.normalize("NFKC", text or "").casefold()).split()


def property_words(prop: str) -> list[str]:
    """The words of a property's name (``streetAddress`` -> street, address), stop words left out."""
    return [w for w in (x.casefold() for x in _CAMEL.sub(" ", prop or "").split()) if w not in _STOP]


def _find(seq: list[str], part: list[str]) -> list[int]:
    """Start positions of ``part`` as a contiguous run in ``seq``."""
    n = len(part)
    if not n:
        return []
    first = part[0]
    return [i for i, w in enumerate(seq) if w == first and seq[i : i + n] == part]


def _stem_match(a: str, b: str) -> bool:
    """Two words match when one is the other or they share their first five letters (translator /
    translation, review / reviews)."""
    return (
        a == b
        or (len(a) >= 5 and len(b) >= 5 and a[:5] == b[:5])
        or (min(len(a), len(b)) >= 4 and (a.startswith(b) or b.startswith(a)))
    )


@dataclass(frozen=True)
class Evidence:
    stated: bool
    overlap: float
    fuzzy: float
    near: bool


_NAMED = re.compile(r"^an? .+? named (['\"])(.*)\1$", re.S)


def surface(value: str) -> str:
    """What a text would show of a claim's value: a described entity ("a Person named 'Steve'", as
    the agents benchmark's first build and other brought ground truths word a node) by its name,
    anything else as it is."""
    m = _NAMED.match(value or "")
    return m.group(2) if m else (value or "")


def evidence(text: str, value: str, prop: str | None = None, *, window: int = 6) -> Evidence:
    """What the text shows of ``value`` (see the module docstring; a described entity by its name,
    ``surface``). A value without words (only punctuation) is not stated; an empty text states
    nothing."""
    from rapidfuzz import fuzz

    t, v = words(text), words(surface(value))
    if not t or not v:
        return Evidence(False, 0.0, 0.0, False)
    starts = _find(t, v)
    vocab = set(t)
    overlap = sum(w in vocab for w in v) / len(v)
    fuzzy = fuzz.partial_ratio(" ".join(v), " ".join(t)) / 100.0
    near = False
    pw = property_words(prop or "")
    if pw and starts:
        for s in starts:
            before = t[max(0, s - window) : s]
            if any(_stem_match(w, p) for w in before for p in pw):
                near = True
                break
    return Evidence(bool(starts), overlap, fuzzy, near)


_TOKEN = re.compile(r"\S+")


def excerpt(text: str, value: str, *, window: int = 12, most: int = 3) -> str | None:
    """The stretches of ``text`` around the places it states ``value`` (whole words after
    normalisation, as ``evidence``'s ``stated``; a described entity by its name): ``window``
    whitespace-separated tokens either side of each of the first ``most`` occurrences, overlapping
    stretches merged, cut from the text itself (its line breaks kept) and joined by " ... ".
    None where the text does not state the value: a question about the excerpt does not apply."""
    v = words(surface(value))
    if not v or not text:
        return None
    tokens = [m.span() for m in _TOKEN.finditer(text)]
    flat: list[tuple[str, int]] = [(w, k) for k, (a, b) in enumerate(tokens) for w in words(text[a:b])]
    starts = _find([w for w, _ in flat], v)[:most]
    if not starts:
        return None
    spans: list[list[int]] = []
    for s in starts:
        lo, hi = max(0, flat[s][1] - window), min(len(tokens) - 1, flat[s + len(v) - 1][1] + window)
        if spans and lo <= spans[-1][1] + 1:
            spans[-1][1] = max(spans[-1][1], hi)
        else:
            spans.append([lo, hi])
    parts = [text[tokens[lo][0] : tokens[hi][1]] for lo, hi in spans]
    head = "... " if spans[0][0] > 0 else ""
    tail = " ..." if spans[-1][1] < len(tokens) - 1 else ""
    return head + " ... ".join(parts) + tail


def logit(p: float, eps: float = 1e-4) -> float:
    p = min(1 - eps, max(eps, float(p)))
    return math.log(p / (1 - p))


def features(score: float, ev: Evidence) -> list[float]:
    """The model's score as a logit and the evidence, in ``FEATURES`` order."""
    return [logit(score), float(ev.stated), ev.overlap, ev.fuzzy, float(ev.near)]


def floor(score: float, ev: Evidence, at: float) -> float:
    """A stated value scores at least ``at``; anything else keeps the model's score."""
    return max(score, at) if ev.stated else score


@dataclass(frozen=True)
class Logistic:
    """P(true) = sigmoid(bias + weights . features); ``names`` say which feature each weight is for."""

    weights: tuple[float, ...]
    bias: float
    names: tuple[str, ...] = FEATURES

    def predict(self, x: Sequence[float]) -> float:
        z = self.bias + sum(w * xi for w, xi in zip(self.weights, x))
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


def fit_logistic(
    x: Sequence[Sequence[float]],
    y: Sequence[bool],
    *,
    l2: float = 1.0,
    iters: int = 50,
    names: Sequence[str] = FEATURES,
) -> Logistic:
    """L2-regularised logistic regression by Newton's method (the bias is not penalised), so
    separable data (evidence that splits the fit items exactly) gives finite weights. Raises
    ValueError without both classes."""
    import numpy as np

    X = np.asarray(x, dtype=float)
    Y = np.asarray(y, dtype=float)
    if X.ndim != 2 or len(X) != len(Y) or not len(Y):
        raise ValueError(f"{len(Y)} labels for a feature matrix of shape {X.shape}")
    if Y.all() or not Y.any():
        raise ValueError("fitting needs items of both classes")
    A = np.hstack([np.ones((len(X), 1)), X])
    w = np.zeros(A.shape[1])
    reg = np.full(A.shape[1], float(l2))
    reg[0] = 0.0
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-np.clip(A @ w, -60, 60)))
        grad = A.T @ (p - Y) + reg * w
        hess = (A * (p * (1 - p))[:, None]).T @ A + np.diag(reg) + 1e-9 * np.eye(A.shape[1])
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return Logistic(tuple(float(v) for v in w[1:]), float(w[0]), tuple(names))


NO_ANSWER = {"none", "n a", "na", "unknown", "not given", "not mentioned", "not stated"}
# apostrophes join a word ("Mom's" is one word, not "mom" and an "s" every possessive shares)
_APOSTROPHE = re.compile(r"['\u2019]")


def answer_match(answer: str | None, value: str) -> float:
    """How well a value the model read off the text (``answer``) matches a claim's value: the F1
    of their words (``words`` with apostrophes dropped, each counted once; the QA-style token F1),
    0 for no answer or an answer that says there is none. A described entity is compared by its
    name (``surface``)."""
    if answered_none(answer):
        return 0.0
    a = words(_APOSTROPHE.sub("", answer or ""))
    got, want = set(a), set(words(_APOSTROPHE.sub("", surface(value))))
    common = len(got & want)
    if not common:
        return 0.0
    p, r = common / len(got), common / len(want)
    return 2 * p * r / (p + r)


def answered_none(answer: str | None) -> bool:
    """Whether a value the model was to read off the text is none: no words, or words that say
    there is none ("none", "not given")."""
    a = words(_APOSTROPHE.sub("", answer or ""))
    return not a or " ".join(a) in NO_ANSWER


def other_stated_value(answer: str | None, value: str, text: str) -> str | None:
    """The value the model read off the text (``answer``, on one line, quotes around it dropped)
    where it is another value than the claim's (no word in common: ``answer_match`` 0; not "none")
    and one the text states (``evidence``'s ``stated``); None otherwise."""
    a = " ".join((answer or "").split()).strip('"').strip()
    if answered_none(a) or answer_match(a, value) > 0:
        return None
    return a if evidence(text, a).stated else None


def missed_stated_value(answer: str | None, value: str, text: str) -> bool:
    """Whether the model answered none (``answered_none``) where the text states the claim's value
    (``evidence``'s ``stated``): a value it passed over, which ``extract-soft-all`` asks again."""
    return answered_none(answer) and evidence(text, value).stated


_LIST_MARK = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+")


def best_answer_match(answer: str | None, value: str) -> float:
    """How well the best of the values a model listed (one per line, list marks such as "- " or
    "2. " ignored) matches a claim's value: the largest ``answer_match`` of a line, 0 for no
    answer. The whole answer is matched too, so a value the model split over two lines counts."""
    lines = [_LIST_MARK.sub("", line) for line in (answer or "").splitlines()]
    return max([answer_match(line, value) for line in lines if line.strip()] + [answer_match(answer, value)])


_LEADING = re.compile(r"^[\W_]+")


def _token_text(token: str) -> str:
    return unicodedata.normalize("NFKC", token or "").casefold().strip()


def first_token_share(candidates: Sequence[tuple[str, float]], value: str) -> float:
    """How much of the model's first answer token, asked for the property's value, goes to the
    claim's value: the probability of the candidate tokens (``(token, logprob)``, the first
    token's top logprobs) that begin the value (its ``surface``, case and Unicode forms ignored),
    over the probability of the likeliest candidate. 1 where the value's start is the model's
    first choice; between 0 and 1 where it weighs another value (or "none") more. Candidates with
    no letter or digit (a quote, a space) begin any answer and are left out, as is what the value
    holds before its first letter or digit (the "$" of "$19.99")."""
    want = _LEADING.sub("", _token_text(surface(value)))
    probs = [
        (t, math.exp(lp))
        for t, lp in ((_token_text(t), lp) for t, lp in candidates)
        if lp is not None and lp != -math.inf and any(ch.isalnum() for ch in t)
    ]
    if not want or not probs:
        return 0.0
    hit = sum(p for t, p in probs if want.startswith(t))
    return min(1.0, hit / max(p for _, p in probs))


def soft_answer_match(answer: str | None, candidates: Sequence[tuple[str, float]], value: str, text: str) -> float:
    """``answer_match`` of the model's answer, or where the answer is another value (or none) and
    the text states the claim's value (``evidence``'s ``stated``), the share of the answer's first
    token that went to the claim's value (``first_token_share``), the larger: a model that reads
    off one of several values of a property still weighs the others. A value the text does not
    state gets no share: there the model's weight on it is its guess of what such a property
    holds ("English" as a language's name), not something it read."""
    matched = answer_match(answer, value)
    if matched == 1.0 or not evidence(text, value).stated:
        return matched
    return max(matched, first_token_share(candidates, value))
