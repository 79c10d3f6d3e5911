"""The prompts of the LLM agents (``udfs/agents/generation.py``, ``udfs/agents/verdicts.py``): what
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
        sections = dict(re.findall(r"^(PRE-MARKUP|MICRODATA|RDFA|JSON):\s*\n(.*?)(?=^(?:PRE-MARKUP|MICRODATA|RDFA|JSON):|\Z)",
                                   rest, flags=re.M | re.S))
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
        lits = [(p, v) for p, v in doc.items() if not p.startswith("@") and isinstance(v, str)
                and 3 < len(v) < 60 and v in e.text]
        if len(lits) >= 2 and isinstance(doc.get("@type"), str):
            picks.append((e, doc["@type"], lits))
        if len(picks) == 2:
            break
    if len(picks) < 2:
        return ""
    (e1, t1, l1), (e2, t2, l2) = picks
    head = load_prompt("fewshot_header")
    if agent == "factuality":
        return "\n".join([
            head,
            f"Text: {e1.text}\nFact: the {t1} has {l1[0][0]} = {l1[0][1]}\nAnswer: yes",
            f"Text: {e1.text}\nFact: the {t1} has {l1[1][0]} = {l2[0][1]}\nAnswer: no",
        ])
    vocab = load_vocabulary()
    (p1, v1), (_, v2) = l1[0], l1[1]
    return "\n".join([
        head,
        f"Property: {p1}\nDefinition: {vocab.comments.get(p1, '')}\nValue: {v1}\nAnswer: yes",
        f"Property: {p1}\nDefinition: {vocab.comments.get(p1, '')}\nValue: {v2}\nAnswer: no",
    ])


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


# ---- factuality questions -------------------------------------------------------------------
# The factuality question's variants (prompt files): the plain question, and one that also gives
# the property's schema.org definition (a swapped value is easier to catch when the model knows
# what the property means), and two rewordings of the plain question whose scores
# experiments/judge_configs averaged with the plain one (self-consistency over phrasings).
FACTUALITY_QUESTIONS = {"plain": "factuality_question", "defined": "factuality_question_defined",
                        "says": "factuality_question_says", "claim": "factuality_question_claim",
                        "where": "factuality_question_where", "exemplified": "factuality_question_exemplified",
                        "excerpt": "factuality_question_excerpt", "typed": "factuality_question_typed",
                        "claim-typed": "factuality_question_claim_typed", "subject": "factuality_question_subject",
                        "claim-subject": "factuality_question_claim_subject"}
# ``typed`` and ``claim-typed`` are ``plain`` and ``claim`` with a named node's type after its name
# ("Music Resource Centre (an Organization)"): a bare name reads as any string the page holds. For
# a literal they are the very requests of ``plain`` and ``claim``.
# ``subject`` is ``plain`` with the claim's subject said: by its name ('the DepositAccount "Freedom
# Savings Account"'), or where it has none (or the claim is about its name) by the node that holds
# it ('the MusicGroup (the byArtist of the MusicRecording "It Ain't Me, Babe")'): "the MusicGroup"
# alone reads as any of the page's groups. With no subject to say, the very request of ``plain``;
# ``claim-subject`` is ``claim`` so.
# ``excerpt`` shows the model only the stretches of the text around the value
# (``udfs.agents.evidence.excerpt``) and does not apply where the text does not state the value.
EXCERPT = "excerpt"
# A factuality score can also come from the model reading the property's value off the text without
# being shown the claim's (``udfs.agents.verdicts.extract_messages``), or from the compliance
# question about the claim (does the value fit the property's definition; no page text): a value
# moved from another property is rarely the kind of value this one takes. What a configuration may ask.
EXTRACT = "extract"
# ``extract`` asks for *the* value; where the text has several entities of the type or several
# values of the property the model reads off another one. ``extract-all`` asks for every value
# of the property the text gives, one per line, and scores the best line.
EXTRACT_ALL = "extract-all"
# ``extract``'s very question, its answer scored softly: where the model reads off another value
# (or none), the share of its first answer token that went to the claim's value
# (``udfs.agents.evidence.soft_answer_match``), so a value the model weighs second still counts.
EXTRACT_SOFT = "extract-soft"
# Where ``extract-soft``'s answer is another value the text states (a list's first member, or the
# value of a neighbouring property), ``extract``'s question again, "other than" that answer, scored
# as ``extract-soft``: a list's further members come next, a value the text gives as another property
# rarely does. Not asked of other claims; asks ``extract-soft``'s request first where that is not
# asked too (``udfs.agents.verdicts.judge_factuality``).
EXTRACT_OTHER = "extract-other"
# ``extract-soft``, and where its answer is none although the text states the claim's value (the
# model missed a value it was to read off: most often one of a list, such as a day among the week's),
# ``extract-all``'s best line where that is larger: the listing finds the members the single answer
# passes over. A text that does not state the value is not asked again, so a guess gains nothing.
EXTRACT_SOFT_ALL = "extract-soft-all"
# ``extract-soft-all``, and where it asks again, ``extract-soft``'s question also asked of the
# stretches of the text around the value (``udfs.agents.evidence.excerpt``, as ``excerpt`` shows
# them), the largest of the three scores kept: in a long text the model passes over a value that it
# reads off a few lines around it.
EXTRACT_SOFT_NEAR = "extract-soft-all-near"
COMPLIES = "complies"
# The same with the property's expected types (the compliance question ``ranged``): a value moved
# from a distant property is often of another type than this one takes (a date, a phone number).
COMPLIES_RANGED = "complies-ranged"
# Or from the model naming the property the text gives the claim's value as (the claim's property
# not shown), matched against the claim's (``udfs.agents.evidence.property_match``): a value moved
# from another property is named as that one.
NAMES = "names"
# Or from the model choosing, among the properties the markup gives the claim's subject (lettered
# options, and "none of them"), the one the text gives the claim's value as: ``names`` with the
# answer held to the markup's own properties, so the model weighs the claimed property against the
# others rather than against every property it knows (``udfs.agents.verdicts.choice_messages``).
CHOICE = "choice"
FACTUALITY_ASKS = (*FACTUALITY_QUESTIONS, EXTRACT, EXTRACT_ALL, EXTRACT_SOFT, EXTRACT_OTHER, EXTRACT_SOFT_ALL,
                   EXTRACT_SOFT_NEAR,
                   COMPLIES, COMPLIES_RANGED, NAMES, CHOICE)
# The questions above ask one of two things: does the text state the value (the rewordings,
# ``extract`` and its variants, ``excerpt``), or does the value fit the claim's property
# (``FITS_ASKS``: the compliance questions, and the two that weigh the claimed property against
# others). A claim holds when both do, so where a configuration asks both kinds a claim's
# score is the geometric mean of the two kinds' means (``udfs.agents.verdicts.combined_score``),
# not the mean of all: a value the text states cannot make up for one that is not this property's,
# and the reverse (README "Stated and fitting").
FITS_ASKS = (COMPLIES, COMPLIES_RANGED, NAMES, CHOICE)


def questions_key(questions: Sequence[str], agent: str = "factuality") -> str:
    """How an agent's set of questions is named where its scores are kept (calibration layouts,
    ``udfs.scores.calibration.layout_key``; benchmark result folders): the questions joined by "+"
    ("plain" for none), and where factuality questions of both kinds are asked the text ones, "^"
    (and), then the property ones: ``plain+claim+extract^complies-ranged``. Scores of another
    combination are another scale, so they never share a name."""
    qs = list(questions) or ["plain"]
    stated = [q for q in qs if q not in FITS_ASKS]
    fits = [q for q in qs if q in FITS_ASKS]
    if agent == "factuality" and stated and fits:
        return "+".join(stated) + "^" + "+".join(fits)
    return "+".join(qs)
# The compliance question's variants: the plain question, and one that asks whether the value is a
# sensible value of the property rather than of another; and a compliance score can come from the
# model naming the property of the entity type the value belongs to (neither the claim's property
# nor its definition shown), matched against the claim's (``udfs.agents.evidence.property_match``).
COMPLIANCE_QUESTIONS = {"plain": "compliance_question", "fits": "compliance_question_fits",
                        "exemplified": "compliance_question_exemplified", "ranged": "compliance_question_ranged"}
PROPERTY_OF = "property-of"
COMPLIANCE_ASKS = (*COMPLIANCE_QUESTIONS, PROPERTY_OF)
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


def typed_suffix(value_type: str | None) -> str:
    """What follows a named node's name in a typed question, ' (an Organization)'; '' without a type."""
    if not value_type:
        return ""
    return f" ({'an' if value_type[:1].lower() in 'aeiou' else 'a'} {value_type})"


def subject_suffix(subject: str | None) -> str:
    """What follows the entity type in the ``subject`` question: ' "Freedom Savings Account"' or
    ' (the byArtist of the MusicRecording "It Ain't Me, Babe")' (``Claim.subject``, without fence
    markers); '' without one."""
    if not subject:
        return ""
    subject = unfence(subject)
    return f" {subject}" if subject.startswith('"') else f" ({subject})"


def factuality_question(entity_type: str | None, prop: str, value: str, variant: str = "plain",
                        prompts_dir: str | None = None, vocab=None, exemplars: str = "(none)",
                        value_type: str | None = None, subject: str | None = None) -> str:
    """The factuality question of a variant of ``FACTUALITY_QUESTIONS`` about one claim (the
    value without fence markers); an unknown variant is a ValueError naming the known ones.
    ``exemplified`` shows ``exemplars``, values of the property from schema.org's examples as
    ``udfs.agents.exemplars.shown`` gives them (``udfs.agents.verdicts.factuality_messages``)."""
    if variant not in FACTUALITY_QUESTIONS:
        raise ValueError(f"unknown factuality question {variant!r}: one of {', '.join(FACTUALITY_QUESTIONS)}")
    fields = {"entity_type": entity_type or "entity", "property": prop, "value": unfence(value),
              "typed": typed_suffix(value_type), "subject": subject_suffix(subject)}
    if variant == "defined":
        fields["definition"] = plain_definition(prop, vocab) or "(no schema.org definition)"
    if variant == "exemplified":
        fields["exemplars"] = exemplars
    return load_prompt(FACTUALITY_QUESTIONS[variant], prompts_dir).format(**fields)


def extract_question(entity_type: str | None, prop: str, prompts_dir: str | None = None, vocab=None,
                     every: bool = False, other_than: str | None = None) -> str:
    """The question that asks for a property's value in the text (``every``: all its values, one
    per line; ``other_than``: a value besides that one, ``extract-other``): its name, its schema.org
    definition and the entity type, never the claim's value."""
    name = ("extract_all_question" if every else
            "extract_other_question" if other_than is not None else "extract_question")
    return load_prompt(name, prompts_dir).format(
        property=prop, entity_type=entity_type or "entity",
        definition=plain_definition(prop, vocab) or "(no schema.org definition)", other_than=other_than)


def names_question(entity_type: str | None, value: str, prompts_dir: str | None = None) -> str:
    """The question that asks which property of the entity the text gives a value as: the value
    (fenced) and the entity type, never the claim's property."""
    return load_prompt("names_question", prompts_dir).format(value=unfence(value), entity_type=entity_type or "entity")


def choice_question(entity_type: str | None, value: str, options: Sequence[str], none_option: str,
                    prompts_dir: str | None = None) -> str:
    """The ``choice`` question: the value (fenced), then the lettered options (``options`` are
    property names, ``none_option`` the last one's words), never which of them is claimed."""
    lines = [f"{label}. {name}" for label, name in zip(CHOICE_LABELS, [*options, none_option])]
    return load_prompt("choice_question", prompts_dir).format(
        value=unfence(value), entity_type=entity_type or "entity", options="\n".join(lines))


# the option letters of ``choice`` (one token each)
CHOICE_LABELS = "ABCDEFGHIJKLMNOP"


# ---- page text to prompt size ---------------------------------------------------------------
def count_tokens(tokenizer, text: str) -> int:
    return tokenizer.count(text) if hasattr(tokenizer, "count") else len(tokenizer.token_bytes(text))


def page_chunks(text: str, tokenizer, *, context_window: int, output_tokens: int, prompt_tokens: int) -> list[str]:
    """The page text cut with the paper's formula; no tokenizer means one chunk (the whole text)."""
    from udfs.llm.chunking import chunk_text

    if tokenizer is None or not text:
        return [text or ""]
    return [c.text for c in chunk_text(text, tokenizer, context_window=context_window,
                                       output_tokens=output_tokens, prompt_tokens=prompt_tokens)] or [""]


# The chat template adds a few tokens per message around what we count.
TEMPLATE_TOKENS = 32
