"""The prompts of the LLM agents (``udfs/agents/generation.py``, ``udfs/agents/judge.py``): what
every agent's messages are built from.

* Prompt files: the fixed instructions live in ``conf/prompts/<name>.txt`` (``load_prompt``).
* Fencing: untrusted text (page text, markup values) goes between markers it cannot close itself;
  its own markers are removed first (``fence``, ``unfence``), and the instructions say fenced text
  is data, never orders.
* schema.org documentation examples (``load_examples``, ``example_for``): the generation prompt's
  example and the solved examples of the ``fewshot`` strategy.
* Strategies (FactCheck): ``direct`` (the question alone), ``guided`` (zero-shot verification
  steps), ``fewshot`` (guided, plus solved examples built from the schema.org examples);
  ``system_prompt`` builds a verdict agent's system message for one of them.
* What a question shows of a claim: a property's definition as plain text (``plain_definition``);
  the questions are ``udfs.agents.questions``' registry.
* Page text to prompt size: ``page_chunks`` cuts the text with the paper's formula
  (``udfs.llm.chunking``) so the instructions, one chunk and the answer fit the context window.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from udfs.runtime.paths import DATA_DIR, PROMPTS_DIR
from udfs.schemaorg.vocab import DEFAULT_RELEASE, load_vocabulary

EXAMPLES_FILE = DATA_DIR / f"schemaorg-{DEFAULT_RELEASE}" / "schemaorg-all-examples.txt"
STRATEGIES = ("direct", "guided", "fewshot")

PAGE_OPEN, PAGE_CLOSE = "<<<PAGE_TEXT", "PAGE_TEXT>>>"
VALUE_OPEN, VALUE_CLOSE = "<<<VALUE", "VALUE>>>"
_FENCES = re.compile(r"<<<\s*(PAGE_TEXT|VALUE)|(PAGE_TEXT|VALUE)\s*>>>", re.I)


def unfence(text: str) -> str:
    """``text`` without fence markers, removed until none is left: one pass would let
    ``PAGE_TEXPAGE_TEXT>>>T>>>`` collapse into a closing marker."""
    prev = None
    while prev != text:
        prev, text = text, _FENCES.sub("", text)
    return text


@functools.lru_cache(maxsize=None)
def load_prompt(name: str, prompts_dir: str | None = None) -> str:
    return (Path(prompts_dir) if prompts_dir else PROMPTS_DIR).joinpath(f"{name}.txt").read_text().strip()


@functools.lru_cache(maxsize=1024)
def fence(text: str, open_: str = PAGE_OPEN, close: str = PAGE_CLOSE) -> str:
    """Untrusted text between markers it cannot close itself (its own markers are removed).
    Memoised: every claim about a chunk fences the same chunk."""
    return f"{open_}\n{unfence(text or '')}\n{close}"


# ---- schema.org documentation examples ---------------------------------------------------------
@dataclass(frozen=True)
class Example:
    id: str
    terms: tuple[str, ...]  # the types and properties the example documents (its TYPES line)
    text: str  # the example's pre-markup, as plain text
    jsonld: Any  # its JSON-LD, parsed

    @property
    def root_types(self) -> list[str]:
        doc = self.jsonld[0] if isinstance(self.jsonld, list) and self.jsonld else self.jsonld
        t = doc.get("@type") if isinstance(doc, dict) else None
        return [t] if isinstance(t, str) else list(t or [])


_TAG = re.compile(r"<[^>]+>")
_SCRIPT = re.compile(r"<script[^>]*>(.*?)</script>", re.S | re.I)


def _plain(html: str) -> str:
    lines = [re.sub(r"\s+", " ", _TAG.sub(" ", ln)).strip() for ln in html.splitlines()]
    return "\n".join(ln for ln in lines if ln)


@functools.lru_cache(maxsize=2)
def load_examples(path: str | None = None) -> tuple[Example, ...]:
    """The schema.org examples that have both a text and a readable JSON-LD markup."""
    raw = Path(path or EXAMPLES_FILE).read_text(encoding="utf-8")
    out = []
    for block in re.split(r"^TYPES:", raw, flags=re.M)[1:]:
        head, _, rest = block.partition("\n")
        m = re.match(r"\s*(#\S+)\s*(.*)", head)
        if not m:
            continue
        sections = dict(
            re.findall(
                r"^(PRE-MARKUP|MICRODATA|RDFA|JSON):\s*\n(.*?)(?=^(?:PRE-MARKUP|MICRODATA|RDFA|JSON):|\Z)",
                rest,
                flags=re.M | re.S,
            )
        )
        js = sections.get("JSON", "")
        script = _SCRIPT.search(js)
        try:
            doc = json.loads(script.group(1) if script else js)
        except (json.JSONDecodeError, TypeError):
            continue
        text = _plain(sections.get("PRE-MARKUP", ""))
        if not text or not doc:
            continue
        out.append(Example(m.group(1), tuple(t.strip() for t in m.group(2).split(",") if t.strip()), text, doc))
    return tuple(out)


def example_for(types: Sequence[str], examples: Sequence[Example] | None = None) -> Example | None:
    """One documentation example for the types: the shortest whose root has one of them, else the
    shortest that documents one of them (deterministic: ties go to the lower example id)."""
    examples = load_examples() if examples is None else examples
    want = set(types)
    for pick in (lambda e: want & set(e.root_types), lambda e: want & set(e.terms)):
        found = [e for e in examples if pick(e)]
        if found:
            return min(found, key=lambda e: (len(e.text) + len(json.dumps(e.jsonld)), e.id))
    return None


# ---- few-shot blocks and system prompts -------------------------------------------------------
@functools.lru_cache(maxsize=4)
def fewshot_block(agent: str) -> str:
    """Solved examples built from the schema.org documentation examples (deterministic picks):
    factuality: a value the example's text states (yes) and one from another example (no);
    compliance: a value of the property (yes) and a value of a different textual property (no)."""
    exs = [e for e in load_examples() if isinstance(e.jsonld, dict) and len(e.text) < 400]
    picks = []
    for e in exs:
        doc = e.jsonld
        lits = [
            (p, v)
            for p, v in doc.items()
            if not p.startswith("@") and isinstance(v, str) and 3 < len(v) < 60 and v in e.text
        ]
        if len(lits) >= 2 and isinstance(doc.get("@type"), str):
            picks.append((e, doc["@type"], lits))
        if len(picks) == 2:
            break
    if len(picks) < 2:
        return ""
    (e1, t1, l1), (e2, t2, l2) = picks
    head = load_prompt("fewshot_header")
    if agent == "factuality":
        return "\n".join(
            [
                head,
                f"Text: {e1.text}\nFact: the {t1} has {l1[0][0]} = {l1[0][1]}\nAnswer: yes",
                f"Text: {e1.text}\nFact: the {t1} has {l1[1][0]} = {l2[0][1]}\nAnswer: no",
            ]
        )
    vocab = load_vocabulary()
    (p1, v1), (_, v2) = l1[0], l1[1]
    return "\n".join(
        [
            head,
            f"Property: {p1}\nDefinition: {vocab.comments.get(p1, '')}\nValue: {v1}\nAnswer: yes",
            f"Property: {p1}\nDefinition: {vocab.comments.get(p1, '')}\nValue: {v2}\nAnswer: no",
        ]
    )


def system_prompt(agent: str, strategy: str, prompts_dir: str | None) -> str:
    """The system message of a verdict agent (``factuality``, ``compliance``) for a strategy of
    ``STRATEGIES``; an unknown strategy is a ValueError naming the known ones."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}: one of {', '.join(STRATEGIES)}")
    parts = [load_prompt(f"{agent}_system", prompts_dir)]
    if strategy in ("guided", "fewshot"):
        parts.append(load_prompt("guided", prompts_dir))
    if strategy == "fewshot":
        parts.append(fewshot_block(agent))
    return "\n\n".join(p for p in parts if p)


# ---- what the questions show --------------------------------------------------------------
# The questions themselves are udfs.agents.questions' registry; these are the pieces they format.
_DOC_LINK = re.compile(r"\[\[([^\]]+)\]\]|\[([^\]]+)\]\([^)]*\)|<[^>]+>")


def plain_definition(prop: str, vocab=None, max_chars: int = 300) -> str:
    """A property's ``rdfs:comment`` as plain text (documentation links reduced to their words,
    spacing collapsed), cut at the first sentence end after ``max_chars`` / 2 or at ``max_chars``;
    "" when schema.org does not define the property."""
    vocab = vocab or load_vocabulary()
    text = _DOC_LINK.sub(lambda m: m.group(1) or m.group(2) or " ", vocab.comments.get(prop, "") or "")
    text = " ".join(text.split())
    if len(text) <= max_chars:
        return text
    cut = text.find(". ", max_chars // 2, max_chars)
    return text[: cut + 1] if cut >= 0 else text[:max_chars].rstrip() + "..."


# ---- page text to prompt size ---------------------------------------------------------------
def count_tokens(tokenizer, text: str) -> int:
    return tokenizer.count(text) if hasattr(tokenizer, "count") else len(tokenizer.token_bytes(text))


def page_chunks(text: str, tokenizer, *, context_window: int, output_tokens: int, prompt_tokens: int) -> list[str]:
    """The page text cut with the paper's formula; no tokenizer means one chunk (the whole text)."""
    from udfs.llm.chunking import chunk_text

    if tokenizer is None or not text:
        return [text or ""]
    return [
        c.text
        for c in chunk_text(
            text, tokenizer, context_window=context_window, output_tokens=output_tokens, prompt_tokens=prompt_tokens
        )
    ] or [""]


# The chat template adds a few tokens per message around what we count.
TEMPLATE_TOKENS = 32
