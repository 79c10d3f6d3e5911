"""The numpy all-MiniLM-L6-v2 of udfs/scores/matching.py against sentence-transformers.

minilm_reference.json and minilm_reference.npy were computed once with sentence-transformers on
torch (the versions are in the JSON's "produced_by"), before the project dropped torch: the
cosines of 56 real text pairs (BLINKG value pairs of the bundled schema.org examples: the scores
tests' own, benchmarks/bench_scores.py's seeded random pairs, the pairs whose cosine is nearest the
0.8 threshold; the property name + definition texts of the agents benchmark's ground-truth build,
its intrinsic negatives and the pairs nearest distant_max; the longest example text, 502 word
pieces, against its start), the match verdict of each, the embeddings of six texts, and the
sha256 of the model files sentence-transformers loaded.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from udfs.runtime.config import load_config
from udfs.scores import matching

HERE = Path(__file__).resolve().parent
REFERENCE = json.loads((HERE / "minilm_reference.json").read_text(encoding="utf-8"))
EMBEDDINGS = np.load(HERE / "minilm_reference.npy")
SCORES = load_config().scores
MATCH = matching.settings(SCORES)
TOLERANCE = 1e-5


def embed(texts, batch_size=SCORES.embedding_batch_size):
    return matching.embed(texts, batch_size=batch_size, threads=SCORES.embedding_threads)


def test_model_files_are_the_ones_sentence_transformers_loaded():
    root = matching.model_dir()
    got = {name: hashlib.sha256((root / name).read_bytes()).hexdigest() for name in REFERENCE["model_sha256"]}
    assert got == REFERENCE["model_sha256"]


def test_embeddings_equal_sentence_transformers():
    got = embed(REFERENCE["embedded"])
    assert got.shape == EMBEDDINGS.shape == (6, matching.MiniLM.DIM) and got.dtype == np.float32
    assert float(np.abs(got - EMBEDDINGS).max()) < TOLERANCE
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)


def test_cosines_and_match_verdicts_equal_sentence_transformers():
    pairs = [(p["a"], p["b"]) for p in REFERENCE["pairs"]]
    texts = sorted({t for pair in pairs for t in pair})
    vectors = dict(zip(texts, embed(texts)))
    cosines = np.array([float(vectors[a] @ vectors[b]) for a, b in pairs])
    expected = np.array([p["cosine"] for p in REFERENCE["pairs"]])
    assert float(np.abs(cosines - expected).max()) < TOLERANCE
    assert REFERENCE["threshold"] == SCORES.match_threshold
    got = matching.match_pairs(pairs, **MATCH)
    assert [m.matched for m in got] == [p["matched"] for p in REFERENCE["pairs"]]
    # the pairs nearest the threshold sit on both sides of it
    near = [p["matched"] for p in REFERENCE["pairs"] if abs(p["cosine"] - SCORES.match_threshold) < 1e-3]
    assert True in near and False in near


def test_texts_past_256_word_pieces_are_cut_as_sentence_transformers_cuts_them():
    long_text = REFERENCE["embedded"][3]
    from tokenizers import Tokenizer

    whole = Tokenizer.from_file(str(matching.model_dir() / "tokenizer.json"))
    whole.no_truncation()
    assert len(whole.encode(long_text).ids) > matching.MiniLM.MAX_SEQ_LENGTH
    cut, longer, start = embed([long_text, long_text + " And one more sentence at the end.", long_text[:300]])
    assert float(np.abs(cut - longer).max()) < 1e-6  # what follows the 256th word piece is not read
    assert float(cut @ start) < 0.99


def test_batching_and_padding_do_not_change_embeddings():
    texts = [p["a"] for p in REFERENCE["pairs"]] + ["", "x"]
    one_by_one = embed(texts, batch_size=1)
    for batch_size in (3, 64):
        assert float(np.abs(embed(texts, batch_size=batch_size) - one_by_one).max()) < 1e-6


def test_a_model_other_than_all_minilm_l6_v2_is_refused(tmp_path):
    root = matching.model_dir()
    for name in ("config.json", "sentence_bert_config.json", "1_Pooling/config.json"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        shutil.copy(root / name, tmp_path / name)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "hidden_act": "gelu_new"}))
    with pytest.raises(ValueError, match="not the all-MiniLM-L6-v2"):
        matching.MiniLM(tmp_path)


def test_model_files_that_are_not_the_pinned_ones_are_refused(monkeypatch):
    """The files come from a third-party package: a file whose sha256 is not the pinned one stops
    the load with an error naming it, before any embedding."""
    monkeypatch.setitem(matching.MODEL_SHA256, "tokenizer.json", "0" * 64)
    with pytest.raises(matching.ModelFilesError, match="tokenizer.json: sha256"):
        matching.model_dir()
