"""Reference-based scores of a model's JSON against a reference JSON, the ScrapeGraphAI-100k way.

Here the reference is the curated human markup and the prediction the model's markup of the same
page. The scores:

- ``valid_json``: the prediction parses as JSON (when it doesn't, every other score is 0 and the
  reference keys are all missing);
- key precision / recall / F1 over flattened keys: dot paths, ``[*]`` for the items of an array
  (``offers[*].price``), so keys compare regardless of array positions; the primary metric is F1;
- ``missing_keys`` (in the reference only) and ``extra_keys`` (in the prediction only);
- a type-aware value score averaged over the shared keys: exact match for booleans and numbers,
  set equality for keys under an array, sentence BLEU for strings;
- BLEU of the serialised JSON (keys sorted, so key order does not count).

A key whose value is JSON ``null`` is not a key (as in MeMR, null states nothing). The keys left
out (conf/pipeline.toml ``[scores] ignore_keys``: ``@context``, boilerplate both sides carry that
would inflate F1) and the BLEU order (``[scores] bleu_max_order``) are the caller's: this module
holds no default for them.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

ARRAY = "[*]"
_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)


# ---- BLEU ------------------------------------------------------------------------------------


def tokenize(text: str) -> list[str]:
    """Words and single punctuation marks, the 13a-like split BLEU is usually computed on."""
    return _TOKEN.findall(text)


def _ngrams(tokens: list[str], n: int) -> Counter:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def sentence_bleu(hypothesis: str | list[str], reference: str | list[str], max_order: int) -> float:
    """Sentence BLEU (Papineni et al.) of one hypothesis against one reference.

    Uniform weights over orders 1..N with N = min(``max_order``, the hypothesis' length in
    tokens), so a one-word value can score 1; add-one smoothing of the orders above 1 (Lin & Och
    2004), so one missing 4-gram in a short value does not zero the score. Both empty: 1.0;
    exactly one empty: 0.0.

    This is sacrebleu's ``BLEU(max_ngram_order=N, smooth_method="add-k", smooth_value=1,
    tokenize="none")`` on the tokens of :func:`tokenize` joined by spaces (sacrebleu's own
    add-k keeps the order at ``max_order`` however short the hypothesis, so N is set per value);
    tests/scores/test_bleu_reference.py checks it on real WDC values. sacrebleu is not a runtime
    dependency: the function is 20 lines and the evaluation calls it per value.
    """
    hyp = tokenize(hypothesis) if isinstance(hypothesis, str) else list(hypothesis)
    ref = tokenize(reference) if isinstance(reference, str) else list(reference)
    if not hyp or not ref:
        return 1.0 if not hyp and not ref else 0.0
    order = min(max_order, len(hyp))
    log_precision = 0.0
    for n in range(1, order + 1):
        h, r = _ngrams(hyp, n), _ngrams(ref, n)
        matches = sum(min(c, r[g]) for g, c in h.items())
        total = max(len(hyp) - n + 1, 0)
        if n == 1:
            if matches == 0:
                return 0.0
            p = matches / total
        else:
            p = (matches + 1) / (total + 1)
        log_precision += math.log(p) / order
    brevity = 1.0 if len(hyp) > len(ref) else math.exp(1 - len(ref) / len(hyp))
    return brevity * math.exp(log_precision)


# ---- flattening ------------------------------------------------------------------------------


def flatten(doc: Any, ignore_keys: Iterable[str]) -> dict[str, list[Any]]:
    """Leaf dot paths -> the leaf values found there (several under an array).

    ``{"a": {"b": 1}, "c": [{"d": "x"}, {"d": "y"}], "e": ["p", "q"]}`` ->
    ``{"a.b": [1], "c[*].d": ["x", "y"], "e[*]": ["p", "q"]}``. An empty object or array is a
    leaf of its own (the key was given, with no content); ``null`` is no leaf. A document that is
    a bare scalar or an empty object has the one key ``$``."""
    ignore = set(ignore_keys)
    out: dict[str, list[Any]] = {}

    def walk(value: Any, path: str) -> None:
        if value is None:
            return
        if isinstance(value, dict):
            items = [(k, v) for k, v in value.items() if k not in ignore and v is not None]
            if not items:
                out.setdefault(path, []).append({})
                return
            for k, v in items:
                walk(v, f"{path}.{k}" if path else k)
        elif isinstance(value, list):
            items = [v for v in value if v is not None]
            if not items:
                out.setdefault(path + ARRAY, []).append([])
                return
            for v in items:
                walk(v, path + ARRAY)
        else:
            out.setdefault(path, []).append(value)

    walk(doc, "")
    if "" in out:  # a bare scalar, or an empty top-level object: the document root itself
        out["$"] = out.pop("")
    return out


# ---- value scores ----------------------------------------------------------------------------


def _canonical(value: Any) -> str:
    # One spelling per value for set comparison: 1 and 1.0 are one number, True is not 1.
    if isinstance(value, bool):
        return "b:" + str(value)
    if isinstance(value, (int, float)):
        return "n:" + repr(float(value))
    return "j:" + json.dumps(value, sort_keys=True, ensure_ascii=False)


def value_score(reference: list[Any], prediction: list[Any], array: bool, max_order: int) -> float:
    """Score of the values at one shared key, by type (ScrapeGraphAI-100k): under an array, set
    equality; a boolean or a number, exact match; a string, sentence BLEU; mismatched types, 0."""
    if array or len(reference) != 1 or len(prediction) != 1:
        return float({_canonical(v) for v in reference} == {_canonical(v) for v in prediction})
    ref, pred = reference[0], prediction[0]
    if isinstance(ref, bool) or isinstance(pred, bool):
        return float(isinstance(ref, bool) and isinstance(pred, bool) and ref == pred)
    if isinstance(ref, (int, float)) or isinstance(pred, (int, float)):
        both = isinstance(ref, (int, float)) and isinstance(pred, (int, float))
        return float(both and ref == pred)
    if isinstance(ref, str) and isinstance(pred, str):
        return sentence_bleu(pred, ref, max_order)
    return float(_canonical(ref) == _canonical(pred))


# ---- the record ------------------------------------------------------------------------------


@dataclass
class KeyScores:
    valid_json: bool
    key_precision: float
    key_recall: float
    key_f1: float
    n_reference_keys: int
    n_predicted_keys: int
    n_shared_keys: int
    missing_keys: list[str] = field(default_factory=list)
    extra_keys: list[str] = field(default_factory=list)
    value_score: float | None = None  # None: no shared key to score
    value_scores: dict[str, float] = field(default_factory=dict)
    json_bleu: float = 0.0
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _load(doc: Any) -> tuple[Any, str | None]:
    if isinstance(doc, (str, bytes, bytearray)):
        try:
            return json.loads(doc), None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return None, f"not valid JSON: {exc}"
    return doc, None


def _serialise(doc: Any, ignore_keys: Iterable[str]) -> str:
    ignore = set(ignore_keys)

    def strip(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if k not in ignore}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v

    return json.dumps(strip(doc), sort_keys=True, ensure_ascii=False)


def key_scores(
    reference: Any,
    prediction: Any,
    *,
    ignore_keys: Iterable[str],
    max_order: int,
) -> KeyScores:
    """Scores of ``prediction`` against ``reference``; each is JSON text or already parsed.

    The reference must be valid JSON (it is the curated human markup): a ValueError otherwise.
    An invalid prediction is a score (``valid_json`` False), not an error."""
    ignore_keys = tuple(ignore_keys)
    ref, ref_error = _load(reference)
    if ref_error:
        raise ValueError(f"reference {ref_error}")
    ref_keys = flatten(ref, ignore_keys)
    pred, pred_error = _load(prediction)
    if pred_error:
        return KeyScores(
            valid_json=False,
            key_precision=0.0,
            key_recall=0.0,
            key_f1=0.0,
            n_reference_keys=len(ref_keys),
            n_predicted_keys=0,
            n_shared_keys=0,
            missing_keys=sorted(ref_keys),
            extra_keys=[],
            value_score=None,
            json_bleu=0.0,
            error=pred_error,
        )
    pred_keys = flatten(pred, ignore_keys)
    shared = sorted(set(ref_keys) & set(pred_keys))
    precision = len(shared) / len(pred_keys) if pred_keys else 0.0
    recall = len(shared) / len(ref_keys) if ref_keys else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    per_key = {k: value_score(ref_keys[k], pred_keys[k], ARRAY in k, max_order) for k in shared}
    return KeyScores(
        valid_json=True,
        key_precision=precision,
        key_recall=recall,
        key_f1=f1,
        n_reference_keys=len(ref_keys),
        n_predicted_keys=len(pred_keys),
        n_shared_keys=len(shared),
        missing_keys=sorted(set(ref_keys) - set(pred_keys)),
        extra_keys=sorted(set(pred_keys) - set(ref_keys)),
        value_score=sum(per_key.values()) / len(per_key) if per_key else None,
        value_scores=per_key,
        json_bleu=sentence_bleu(_serialise(pred, ignore_keys), _serialise(ref, ignore_keys), max_order),
    )
