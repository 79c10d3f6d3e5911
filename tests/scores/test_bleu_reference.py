"""The key scores' sentence BLEU (udfs/scores/keys.py) against sacrebleu, the reference
implementation, on real values: the schema:name and schema:description literals of the bundled
WDC quads, each against the next one of the same property (related but different text) and
against its own first half (a value cut short: the brevity penalty)."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

from udfs.scores.keys import sentence_bleu, tokenize

sacrebleu = pytest.importorskip("sacrebleu")  # the dev extra
from sacrebleu.metrics import BLEU  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
WDC = ROOT / "data" / "wdc" / "wdc-2022-12-jsonld-part00044-first10k.nq"
LITERAL = re.compile(r'^\S+ <http://schema\.org/(name|description)> ("(?:[^"\\]|\\.)*")')


def wdc_values() -> dict[str, list[str]]:
    values: dict[str, list[str]] = {"name": [], "description": []}
    seen = set()
    for line in WDC.read_text(encoding="utf-8").splitlines():
        m = LITERAL.match(line)
        if not m:
            continue
        text = json.loads(m.group(2))  # N-Triples string escapes are JSON's
        if text.strip() and text not in seen:
            seen.add(text)
            values[m.group(1)].append(text)
    return values


def value_pairs() -> list[tuple[str, str]]:
    pairs = []
    for vs in wdc_values().values():
        pairs += list(zip(vs, vs[1:]))
        pairs += [(v[: len(v) // 2], v) for v in vs]
    return pairs


def reference_bleu(hypothesis: str, reference: str, max_order: int, cache: dict) -> float:
    hyp, ref = " ".join(tokenize(hypothesis)), " ".join(tokenize(reference))
    order = min(max_order, len(hyp.split()))
    if order not in cache:
        cache[order] = BLEU(
            max_ngram_order=order, smooth_method="add-k", smooth_value=1, tokenize="none", effective_order=True
        )
    return cache[order].sentence_score(hyp, [ref]).score / 100


def test_sentence_bleu_is_sacrebleus_on_real_values():
    logging.getLogger("sacrebleu").setLevel(logging.ERROR)
    pairs = [(h, r) for h, r in value_pairs() if tokenize(h) and tokenize(r)]
    assert len(pairs) > 1500  # 756 names and 187 descriptions in the bundled slice
    cache: dict = {}
    scores = []
    for h, r in pairs:
        ours = sentence_bleu(h, r, max_order=4)
        assert ours == pytest.approx(reference_bleu(h, r, 4, cache), abs=1e-9), (h, r)
        scores.append(ours)
    # the pairs span the range: exact, partial and no overlap all occur
    assert min(scores) == 0.0 and 0 < sorted(scores)[len(scores) // 2] < 1
    # a lower order (conf [scores] bleu_max_order) is the same definition
    for h, r in pairs[:200]:
        assert sentence_bleu(h, r, max_order=2) == pytest.approx(reference_bleu(h, r, 2, {}), abs=1e-9)


def test_the_word_split_is_close_to_sacrebleus_international_tokenizer():
    """Tokenization is ours (words and single punctuation marks); sacrebleu's "intl" tokenizer
    splits the same way on most real values (it keeps some symbols and digit groups together)."""
    from sacrebleu.tokenizers.tokenizer_intl import TokenizerV14International

    intl = TokenizerV14International()
    values = [v for vs in wdc_values().values() for v in vs]
    same = sum(intl(v).split() == tokenize(v) for v in values)
    assert same / len(values) > 0.9
