"""The questions the verdict agents ask of a claim: one object per question kind, in one registry.

A factuality or compliance configuration names questions (``[judge]`` factuality_questions,
compliance_questions in conf/pipeline.toml); each name is a :class:`Question` of
:data:`FACTUALITY` or :data:`COMPLIANCE`, which says everything about it:

* its name, its agent, a one-line help (the jobs' ``--help`` is made of these, :func:`help_text`)
  and the prompt files it reads (``conf/prompts/<name>.txt``, besides an agent's system prompt);
* how its messages are built (:meth:`Question.messages`; the fixed instructions and the fenced
  page text first, the question last, so every question about one text shares a prompt prefix);
* how its answer is read and scored (:class:`Answer`: a yes/no verdict's first-token score, a value
  read off the text matched against the claim's, or that read softly by the first token's share);
* for factuality, which kind of evidence it gives (``fits``): whether the text states the value,
  or whether the value fits the claim's property (``udfs.agents.judge.combined_score``);
* what it contributes to the prompt fingerprint (:meth:`Question.probe`, :func:`prompt_fingerprint`):
  a calibration entry is taken only for the prompts it was fitted on.

``udfs.agents.verdicts`` asks the questions (:func:`check_questions` is what it accepts); the
requests and fingerprints are those the calibration file's entries and the request cache's keys
were made with, so a change to a question's messages is a change of those too.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from udfs.agents.evidence import best_answer_match, excerpt, soft_answer_match
from udfs.agents.prompts import fence, load_prompt, plain_definition, system_prompt, unfence
from udfs.schemaorg.vocab import load_vocabulary

AGENTS = ("factuality", "compliance")
SHARED_PREFIX = "shared_prefix"  # the layout of the questions: instructions and text first, the question last


@dataclass(frozen=True)
class Claim:
    """What a verdict is about: a property value of an entity of a type, as text for the prompt."""

    property: str
    value: str
    entity_type: str | None
    # A named node's type ("Organization" for a seller named "Music Resource Centre"); None for a
    # literal or an IRI. No shipped question shows it (experiments/typed_nodes).
    value_type: str | None = None
    # The other properties the markup gives the claim's subject (sorted, each once).
    siblings: tuple[str, ...] = ()
    # Which node the claim is about (``udfs.agents.verdicts.subject_of``): its name in quotes, or
    # the property and node that hold it; None where neither says more than the type. No question
    # shows it; the benchmark's ground truth keeps it.
    subject: str | None = None


Messages = list[dict[str, str]]
Scored = tuple[float | None, str | None, Any]  # (score, error, completion) of one claim
NOT_ASKED: Scored = (None, None, None)  # a question that does not apply to a claim


# ---- answers ----------------------------------------------------------------------------------
# The longest value ``extract`` reads off a text (the listing ``extract-soft-all`` asks: the values
# it lists): values are mostly a few words, and every token generated costs as much as a verdict's only one.
EXTRACT_TOKENS = 32
EXTRACT_ALL_TOKENS = 64
EXTRACT_TOP_LOGPROBS = 20


def first_candidates(logprobs: list[dict[str, Any]] | None) -> list[tuple[str, float]]:
    """The first answer token's top logprobs as (token, logprob) pairs; none without logprobs."""
    if not logprobs:
        return []
    first = logprobs[0]
    return [(str(c.get("token", "")), c.get("logprob")) for c in (first.get("top_logprobs") or [first])]


@dataclass(frozen=True)
class Answer:
    """How a question's answer is read: ``verdict`` (yes/no, the first token's score, one token),
    ``generated`` (a value in words, at most ``max_tokens``, scored by ``score(answer, claim)``)
    or ``soft`` (``extract``'s answer with its first token's top logprobs, scored by
    ``udfs.agents.evidence.soft_answer_match`` against the text it was asked of)."""

    how: str
    max_tokens: int = 1
    score: Callable[[str | None, Claim], float] | None = None

    async def scores(
        self, client, messages: Sequence[Messages | None], claims: Sequence[Claim], text: str = ""
    ) -> list[Scored]:
        """(score, error, completion) per claim; ``NOT_ASKED`` where ``messages`` has None. The
        requests go out in the order of their messages' text, so requests that share a prefix (the
        page text; a compliance question's property and definition) reach the engine one after
        another and its prefix cache serves the shared part."""
        asked = request_order(messages)
        out: list[Scored] = [NOT_ASKED] * len(messages)
        if self.how == "verdict":
            verdicts = await client.verdict_many([{"messages": messages[k]} for k in asked])
            for k, v in zip(asked, verdicts):
                out[k] = (v.score, v.error, v.completion)
            return out
        soft = self.how == "soft"
        done = await client.chat_many(
            [
                {
                    "messages": messages[k],
                    "max_tokens": self.max_tokens,
                    **({"logprobs": True, "top_logprobs": EXTRACT_TOP_LOGPROBS} if soft else {}),
                }
                for k in asked
            ]
        )
        for k, c in zip(asked, done):
            if not c.ok:
                out[k] = (None, c.error, c)
            elif soft:
                out[k] = (soft_answer_match(c.text, first_candidates(c.logprobs), claims[k].value, text), c.error, c)
            else:
                out[k] = (self.score(c.text, claims[k]), c.error, c)
        return out


def request_order(messages: Sequence[Messages | None]) -> list[int]:
    """The indices of the requests to send (those not None), in the order of their messages'
    text: requests that share a prefix are next to each other."""
    return sorted(
        (k for k, m in enumerate(messages) if m is not None), key=lambda k: [m["content"] for m in messages[k]]
    )


VERDICT = Answer("verdict")
LISTED = Answer("generated", EXTRACT_ALL_TOKENS, lambda answer, claim: best_answer_match(answer, claim.value))
SOFT = Answer("soft", EXTRACT_TOKENS)


# ---- messages ---------------------------------------------------------------------------------
def extract_messages(
    chunk: str, claim: Claim, prompts_dir: str | None = None, every: bool = False, other_than: str | None = None
) -> Messages:
    """Instructions, the fenced page text, then the property asked for (``every``: all its values,
    one per line; ``other_than``: a value besides that one, read off the text before, fence markers
    removed): its name, its schema.org definition and the entity type, never the claim's value, so
    the answer cannot echo it. The same prefix for every claim about the chunk (a prefix of its
    own: the instructions differ from the yes/no questions')."""
    name = (
        "extract_all_question" if every else "extract_other_question" if other_than is not None else "extract_question"
    )
    q = load_prompt(name, prompts_dir).format(
        property=claim.property,
        entity_type=claim.entity_type or "entity",
        definition=plain_definition(claim.property) or "(no schema.org definition)",
        other_than=None if other_than is None else unfence(other_than),
    )
    system = "extract_all_system" if every else "extract_system"
    return [
        {"role": "system", "content": load_prompt(system, prompts_dir)},
        {"role": "user", "content": f"{fence(chunk)}\n\n{q}"},
    ]


def compliance_messages(
    claim: Claim, definition: str, strategy: str, prompts_dir: str | None = None, question: str = "ranged"
) -> Messages:
    """A compliance question of :data:`COMPLIANCE` about a claim against a property's definition;
    no page text."""
    return COMPLIANCE[question].compliance(claim, definition, strategy, prompts_dir)


@dataclass(frozen=True)
class Question:
    """One question kind (module docstring). Subclasses say how its messages are built."""

    name: str
    agent: str
    help: str
    prompts: tuple[str, ...]
    answer: Answer = VERDICT
    fits: bool = False  # factuality: about the value fitting the property, not the text stating it
    # factuality: the requests (AGAIN) asked too where its answer is none of a value the text states
    again: tuple[str, ...] = ()

    def messages(
        self,
        chunk: str,
        claim: Claim,
        strategy: str,
        prompts_dir: str | None = None,
        other_than: str | None = None,
    ) -> Messages | None:
        """The request about ``claim`` against ``chunk`` (None: the question does not apply)."""
        raise NotImplementedError

    def probe(self, claim: Claim, strategy: str, prompts_dir: str | None) -> Any:
        """What the question sends for the fixed probe claim, for :func:`prompt_fingerprint`."""
        return self.messages("text", claim, strategy, prompts_dir)

    # factuality: the questions the judge asks in a second round (``udfs.agents.judge``)
    reads_value = False  # its completion is extract-soft's answer, which ``asks_past`` questions ask past
    asks_past = False  # asked after the others, past the value a ``reads_value`` question read off


@dataclass(frozen=True)
class Worded(Question):
    """A yes/no factuality question worded by its prompt file (``prompts[0]``): the claim's entity
    type, property and value (fence markers removed), after the fenced text."""

    def question(self, claim: Claim, prompts_dir: str | None) -> str:
        fields = {
            "entity_type": claim.entity_type or "entity",
            "property": claim.property,
            "value": unfence(claim.value),
        }
        return load_prompt(self.prompts[0], prompts_dir).format(**fields)

    def messages(self, chunk, claim, strategy, prompts_dir=None, other_than=None):
        system = {"role": "system", "content": system_prompt("factuality", strategy, prompts_dir)}
        return [system, {"role": "user", "content": f"{fence(chunk)}\n\n{self.question(claim, prompts_dir)}"}]


@dataclass(frozen=True)
class Extract(Question):
    """The property's value read off the text (:func:`extract_messages`), the claim's value not shown."""

    def messages(self, chunk, claim, strategy, prompts_dir=None, other_than=None):
        return extract_messages(chunk, claim, prompts_dir)


@dataclass(frozen=True)
class ExtractOther(Question):
    """``extract`` asked past another value the text states (``other_than``); None without one."""

    asks_past = True

    def messages(self, chunk, claim, strategy, prompts_dir=None, other_than=None):
        return None if other_than is None else extract_messages(chunk, claim, prompts_dir, other_than=other_than)

    def probe(self, claim, strategy, prompts_dir):
        return self.messages("text", claim, strategy, prompts_dir, "answer")


@dataclass(frozen=True)
class ExtractSoft(Extract):
    """``extract``'s request read softly; where its answer is none of a value the text states
    (``udfs.agents.evidence.missed_stated_value``), the requests of ``again`` are asked too, the
    largest score kept (``udfs.agents.judge``)."""

    reads_value = True

    def probe(self, claim, strategy, prompts_dir):
        mine = self.messages("text", claim, strategy, prompts_dir)
        return [mine, *(AGAIN[a].probe(claim, prompts_dir) for a in self.again)] if self.again else mine


@dataclass(frozen=True)
class Again:
    """A request ``extract-soft-all-near`` asks again where its first answer is none of a value the
    text states: its answer, its messages about a chunk (None: not asked) and what
    it contributes to the prompt fingerprint."""

    answer: Answer
    messages: Callable[[str, Claim, str | None], Messages | None]  # (chunk, claim, prompts_dir)
    probe: Callable[[Claim, str | None], Messages]  # (probe claim, prompts_dir)


def _near(chunk: str, claim: Claim, prompts_dir: str | None) -> Messages | None:
    """extract-soft's request over the stretches of ``chunk`` around the claim's value
    (``udfs.agents.evidence.excerpt``); None where the chunk does not state it."""
    near = excerpt(chunk, claim.value)
    return None if near is None else extract_messages(near, claim, prompts_dir)


AGAIN = {
    # every value of the property the text gives, one per line, scored by the best line
    "listing": Again(
        LISTED,
        lambda chunk, claim, pd: extract_messages(chunk, claim, pd, every=True),
        lambda claim, pd: extract_messages("text", claim, pd, every=True),
    ),
    # extract-soft over the text around the value (the probe: a text that is the value)
    "near": Again(SOFT, _near, lambda claim, pd: extract_messages("value", claim, pd)),
}


@dataclass(frozen=True)
class Complies(Question):
    """A compliance question asked as a factuality question: does the value fit the property's
    schema.org definition (no page text); None for a property schema.org does not define."""

    compliance_question: str = "ranged"

    def messages(self, chunk, claim, strategy, prompts_dir=None, other_than=None):
        definition = load_vocabulary().comments.get(claim.property)
        return (
            compliance_messages(claim, definition, strategy, prompts_dir, self.compliance_question)
            if definition
            else None
        )

    def probe(self, claim, strategy, prompts_dir):
        return compliance_messages(claim, "definition", strategy, prompts_dir, self.compliance_question)


@dataclass(frozen=True)
class Compliance(Question):
    """A yes/no compliance question worded by its prompt file: the property, its definition, the
    entity type and the value (fenced); ``ranged`` adds the property's expected types
    (schema.org's rangeIncludes)."""

    ranged: bool = False

    def compliance(self, claim: Claim, definition: str, strategy: str, prompts_dir: str | None) -> Messages:
        fields = {
            "property": claim.property,
            "definition": definition,
            "entity_type": claim.entity_type or "entity",
            "value": unfence(claim.value),
        }
        if self.ranged:
            fields["ranges"] = " or ".join(sorted(load_vocabulary().ranges.get(claim.property, ()))) or "(not given)"
        return [
            {"role": "system", "content": system_prompt("compliance", strategy, prompts_dir)},
            {"role": "user", "content": load_prompt(self.prompts[0], prompts_dir).format(**fields)},
        ]

    def probe(self, claim, strategy, prompts_dir):
        return self.compliance(claim, "definition", strategy, prompts_dir)


# ---- the registry -----------------------------------------------------------------------------
_F = "factuality"
# The shipped judge's questions (conf/pipeline.toml [judge]) and the cheap judge's (plain alone);
# the question kinds studied and not shipped live with their experiments (experiments/README.md).
FACTUALITY: dict[str, Question] = {
    q.name: q
    for q in (
        Worded("plain", _F, "does the text support the fact 'the T has p = v'", ("factuality_question",)),
        Worded(
            "claim",
            _F,
            "is the claim 'v is the p of this T' true according to the text",
            ("factuality_question_claim",),
        ),
        ExtractSoft(
            "extract-soft-all-near",
            _F,
            "the property's value read off the text (the claim's not shown), matched against the claim's, "
            "where the answer is another value the share its first token gave the claim's; where it answers "
            "none of a value the text states, every value of the property listed and the request over the "
            "text around the value asked too, the largest score kept",
            ("extract_system", "extract_question", "extract_all_system", "extract_all_question"),
            SOFT,
            again=("listing", "near"),
        ),
        ExtractOther(
            "extract-other",
            _F,
            "where extract-soft-all-near's answer is another value the text states, the value asked again "
            "past it, scored so (not asked of other claims; needs extract-soft-all-near)",
            ("extract_system", "extract_other_question"),
            SOFT,
        ),
        Complies(
            "complies-ranged",
            _F,
            "the compliance question ranged about the claim (no text): does the value fit the property",
            ("compliance_system", "compliance_question_ranged"),
            fits=True,
            compliance_question="ranged",
        ),
    )
}
COMPLIANCE: dict[str, Question] = {
    q.name: q
    for q in (
        Compliance(
            "ranged",
            "compliance",
            "does the value comply with the property's schema.org definition and expected types (rangeIncludes)",
            ("compliance_question_ranged",),
            ranged=True,
        ),
    )
}
REGISTRY = {"factuality": FACTUALITY, "compliance": COMPLIANCE}
PLAIN = ("plain",)


def check_questions(questions: Sequence[str], agent: str = "factuality") -> tuple[str, ...]:
    """The questions of a configuration for ``agent``, checked against the registry: empty means
    the plain factuality question (compliance names its own); an unknown one, a repeat, or a
    question that asks past a value read off (``extract-other``) without a question that reads it
    is a ValueError naming the known ones."""
    known = REGISTRY[agent]
    qs = tuple(questions) or (PLAIN if agent == "factuality" else ())
    bad = [q for q in qs if q not in known]
    if bad or not qs or len(set(qs)) != len(qs):
        raise ValueError(f"{agent} questions {list(qs)}: each once, any of {', '.join(known)}")
    past = [q for q in qs if known[q].asks_past]
    if past and not any(known[q].reads_value for q in qs):
        readers = ", ".join(q.name for q in known.values() if q.reads_value)
        raise ValueError(f"{agent} questions {list(qs)}: {', '.join(past)} asks past the value {readers} reads off")
    return qs


def questions_key(questions: Sequence[str], agent: str = "factuality", gate: float = 0.0) -> str:
    """How an agent's set of questions is named where its scores are kept (calibration layouts,
    ``udfs.agents.calibration.layout_key``; benchmark result folders): the questions joined by "+"
    ("plain" for none), and where factuality questions of both kinds are asked the text ones, "^"
    (and), then the property ones: ``plain+claim+extract^complies-ranged``; a factuality ``gate``
    after "@" where there is a text question for it to gate (``plain+claim^complies-ranged@0.2``). Scores of another combination are another
    scale, so they never share a name."""
    qs = list(questions) or ["plain"]
    stated = [q for q in qs if not FACTUALITY[q].fits] if agent == "factuality" else qs
    fits = [q for q in qs if FACTUALITY[q].fits] if agent == "factuality" else []
    key = "+".join(stated) + "^" + "+".join(fits) if stated and fits else "+".join(qs)
    # the gate acts only where a text question follows the first
    return f"{key}@{gate:g}" if agent == "factuality" and gate > 0 and len(stated) > 1 else key


def help_text(agent: str) -> str:
    """The ``--help`` of an agent's questions flag: each question and its one line."""
    return "; ".join(f"{q.name}: {q.help}" for q in REGISTRY[agent].values())


def prompt_fingerprint(agent: str, strategy: str, prompts_dir: str | None, questions: Sequence[str]) -> str:
    """A short sha256 of the messages an agent sends for a fixed probe claim with ``strategy``
    and each of the agent's ``questions`` (:meth:`Question.probe`): it changes whenever the
    instructions, the questions or their layout change, so a threshold calibrated on other prompts
    is not taken for these (``udfs.agents.calibration.match``)."""
    qs = check_questions(questions, agent)
    # the probe is a typed node of a named subject: a question that shows either changes the fingerprint
    claim = Claim("property", "value", "Thing", "Thing", ("name",), '"subject"')
    known = REGISTRY[agent]
    if qs == PLAIN:  # one plain question keeps the fingerprint it always had: its messages, not a list
        msgs = known["plain"].probe(claim, strategy, prompts_dir)
    else:
        msgs = [known[q].probe(claim, strategy, prompts_dir) for q in qs]
    return hashlib.sha256(json.dumps(msgs, sort_keys=True).encode()).hexdigest()[:16]


# ---- the judge's flags ------------------------------------------------------------------------
def questions_help(kind: str) -> str:
    """The help of the ``--factuality-questions`` or ``--compliance-questions`` flag (``kind``), from
    this registry: how the agent combines the questions' scores, and each question with its line.
    The setting itself, its default and choices are declared in ``udfs.runtime.config.JudgeConf``."""
    if kind == "factuality":
        return (
            "factuality questions asked of every claim, the text questions' scores averaged, and "
            "where questions about the property ("
            + ", ".join(q.name for q in FACTUALITY.values() if q.fits)
            + ") are asked too, the geometric mean of that mean and theirs: "
            + help_text("factuality")
        )
    return "compliance questions asked of every claim, their scores averaged: " + help_text("compliance")
