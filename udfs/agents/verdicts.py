"""The verdict agents of LLM4Schema.org: factuality and compliance of a markup's claims, the
FactCheck strategies, a multi-model majority vote and correction. (Generation is
``udfs/agents/generation.py``; prompts, fences and examples ``udfs/agents/prompts.py``; validity
``udfs/agents/validity/``.)

Every model call goes through ``udfs.llm.client.LLMClient``; a verdict is the first token's yes/no
logprobs, never free text. Claim values are untrusted and fenced in the prompts.

* Claims: one per triple of a markup, its value as a page would state it (``claims_of``): a literal,
  a node by its name, an IRI or enumeration member in words; a triple whose value is an unnamed
  node is not asked and follows the claims inside that node (``nested_claims``).
* Factuality: one yes/no per (property, value, entity type) against the text; a triple passes if
  any chunk says yes (OR). The messages put the fixed instructions and the page text first and the
  question last, so every question about one page shares a prompt prefix the engine's prefix cache
  serves; ``prompt_tokens`` vs ``cached_prompt_tokens`` in the accounting shows what that saves.
  ``questions`` asks several (the registry ``udfs.agents.questions.FACTUALITY``: rewordings of
  the question, the property's value read off the text and matched against the claim's, softly or
  not, and the compliance question about the claim) and combines the scores of those that apply
  to the claim (``combined_score``): the mean of the questions about the text, and where
  questions about the property (``fits``) are asked too, the geometric mean of that mean and theirs.
* Compliance: one yes/no per property value against the property's ``rdfs:comment``; a property
  without a definition is kept (``compliant`` True) and marked (``compliant_note``). ``questions``
  (``udfs.agents.questions.COMPLIANCE``) averages several, as factuality does.
* Strategies (FactCheck, ``udfs.agents.prompts.STRATEGIES``): ``direct``, ``guided``, ``fewshot``.
* Consensus: each voter (a model, or a model with a strategy) judges every item; the majority of
  the voters that answered decides, a tie goes to the judge; every vote is kept.
* Correction (GraphEval's GraphCorrect): a flagged claim's value asked from the text, then
  re-verified by the factuality agent.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from udfs.agents.evidence import missed_stated_value, other_stated_value
from udfs.agents.prompts import STRATEGIES, fence, load_prompt, unfence
from udfs.agents.questions import (
    AGAIN,
    COMPLIANCE,
    FACTUALITY,
    NOT_ASKED,
    PAPER,
    PLAIN,
    SHARED_PREFIX,
    Again,
    Claim,
    check_questions,
    compliance_messages,
)

# Named here for the callers that read the registry's message builders and keys through this module
# (``X as X``: an explicit re-export, not an unused import).
from udfs.agents.questions import extract_messages as extract_messages
from udfs.agents.questions import prompt_fingerprint as prompt_fingerprint
from udfs.agents.questions import questions_key as questions_key
from udfs.schemaorg.markup import Literal, Markup, Ref
from udfs.schemaorg.vocab import load_vocabulary, schema_local_name

# No default strategy or threshold here: they are settings of conf/pipeline.toml ([judge]), passed
# in by whoever asks for verdicts. Claim, the message builders, check_questions, questions_key and
# prompt_fingerprint are udfs.agents.questions' (the registry), named here for the callers.


# ---- verdicts ----------------------------------------------------------------------------------
NAME_PROPERTIES = ("name", "headline", "alternateName", "title")  # what names a node, in this order
_CAMEL_WORDS = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_TERM = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def readable_iri(iri: str) -> str:
    """An IRI as a page would say it: a schema.org term (an enumeration member such as
    ``https://schema.org/InStock``) in lower-case words ("in stock"), any other IRI as it is."""
    local = schema_local_name(iri.strip())
    if not local or not _TERM.match(local):
        return iri
    return _CAMEL_WORDS.sub(" ", local).replace("_", " ").lower()


def node_name(markup: Markup, entity_id: str) -> str | None:
    """The first non-empty name-like literal of a node of the markup (``NAME_PROPERTIES``), or None."""
    ent = markup.entities.get(entity_id)
    if ent is None:
        return None
    for p in NAME_PROPERTIES:
        for x in ent.properties.get(p, ()):
            if isinstance(x, Literal) and x.text.strip():
                return x.text
    return None


def claim_value(markup: Markup, v) -> str | None:
    """What a claim says a property's value is: a literal's text (a schema.org term written as a
    string, ``"https://schema.org/InStock"``, in words); a node of the markup by its name; an
    outside IRI readably (:func:`readable_iri`). None for a node without a name: a blank-node
    label or a node's IRI is not something a page states, so such a triple is not asked (its
    fate follows the claims inside the node, :func:`claims_of`)."""
    if isinstance(v, Literal):
        return readable_iri(v.text) if isinstance(v.value, str) else v.text
    if v.id in markup.entities:
        return node_name(markup, v.id)
    return readable_iri(v.id)


def claim_value_type(markup: Markup, v) -> str | None:
    """The type a claim's value has as a node of the markup (its first type), or None: a literal,
    an outside IRI, a node without a type."""
    ent = markup.entities.get(v.id) if not isinstance(v, Literal) else None
    return ent.types[0] if ent is not None and ent.types else None


def claims_of(markup: Markup) -> list[Claim | None]:
    """One claim per triple of ``markup.triples()`` (same order): the property, :func:`claim_value`
    and the subject's type. A triple whose value is an unnamed node has None: it is not judged,
    and passes a stage while any claim inside that node does (:func:`nested_claims`)."""
    out: list[Claim | None] = []
    properties, held = properties_by_subject(markup), holders(markup)
    for t in markup.triples():
        value = claim_value(markup, t.value)
        out.append(
            None
            if value is None
            else Claim(
                t.property,
                value,
                t.entity_type,
                claim_value_type(markup, t.value),
                siblings_of(properties, t.subject, t.property),
                subject_of(markup, held, t.subject, t.property),
            )
        )
    return out


def holders(markup: Markup) -> dict[str, tuple[str, str]]:
    """Node id -> (the node, the property) of the first triple whose value it is: what
    :func:`subject_of` says of a node without a name."""
    out: dict[str, tuple[str, str]] = {}
    for t in markup.triples():
        if isinstance(t.value, Ref) and t.value.id in markup.entities and t.value.id != t.subject:
            out.setdefault(t.value.id, (t.subject, t.property))
    return out


def subject_of(markup: Markup, held: dict[str, tuple[str, str]], subject: str, prop: str) -> str | None:
    """A claim's ``subject``: the subject's name in quotes ('"Freedom Savings Account"') unless the
    claim is about a name; else the property and node that hold it ('the byArtist of the
    MusicRecording "It Ain't Me, Babe"'); None for a top-level node without a name. Names are the
    markup's, untrusted: the question unfences them."""
    name = node_name(markup, subject)
    if name and prop not in NAME_PROPERTIES:
        return f'"{name}"'
    if subject not in held:
        return None
    node, via = held[subject]
    holder = markup.entities[node]
    said = f"the {via} of the {holder.types[0] if holder.types else 'entity'}"
    holder_name = node_name(markup, node)
    return f'{said} "{holder_name}"' if holder_name else said


def properties_by_subject(markup: Markup) -> dict[str, set[str]]:
    """Every property the markup gives each subject (node id): what :func:`siblings_of` reads."""
    out: dict[str, set[str]] = {}
    for t in markup.triples():
        out.setdefault(t.subject, set()).add(t.property)
    return out


def siblings_of(properties: dict[str, set[str]], subject: str, prop: str) -> tuple[str, ...]:
    """A claim's ``siblings``: the subject's other properties, sorted."""
    return tuple(sorted(properties.get(subject, set()) - {prop}))


def nested_claims(markup: Markup, claims: Sequence[Claim | None] | None = None) -> dict[int, list[int]]:
    """For each triple without a claim (an unnamed node as value; index into ``markup.triples()``),
    the indices of the triples with a claim whose subject is that node or a node inside it
    (followed through any depth, each node once). Empty list: nothing inside is judged."""
    triples = list(markup.triples())
    claims = claims_of(markup) if claims is None else claims
    by_subject: dict[str, list[int]] = {}
    for i, t in enumerate(triples):
        by_subject.setdefault(t.subject, []).append(i)
    out: dict[int, list[int]] = {}
    for i, (t, c) in enumerate(zip(triples, claims)):
        if c is not None or not isinstance(t.value, Ref):
            continue
        seen, stack, inside = {t.value.id}, [t.value.id], []
        while stack:
            for j in by_subject.get(stack.pop(), ()):
                v = triples[j].value
                if claims[j] is not None:
                    inside.append(j)
                elif isinstance(v, Ref) and v.id in markup.entities and v.id not in seen:
                    seen.add(v.id)
                    stack.append(v.id)
        out[i] = sorted(inside)
    return out


@dataclass
class Judged:
    """One agent's decision on one claim: the best score over chunks (OR), the votes if several
    voters judged, and the accounting of every request made for it."""

    score: float | None
    passed: bool | None  # None: no voter could answer (see error)
    error: str | None = None
    note: str | None = None
    votes: dict[str, float | None] = field(default_factory=dict)
    # the engine's work for it: tokens and time of the requests the engine served
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    requests: int = 0  # answers it used, those of ``cache_hits`` among them
    # factuality: ``score`` combines fewer questions than apply, the verdict decided before the
    # rest were asked (``judge_factuality``'s early_exit)
    early: bool = False
    # answered by the request cache or by the same request already in flight: no engine work, so
    # none of the tokens and time above (the engine served ``requests - cache_hits``)
    cache_hits: int = 0
    model: str | None = None


def factuality_messages(
    chunk: str,
    claim: Claim,
    strategy: str,
    prompts_dir: str | None = None,
    question: str = "plain",
    other_than: str | None = None,
) -> list[dict[str, str]] | None:
    """The request of a factuality question of the registry (``udfs.agents.questions.FACTUALITY``)
    about ``claim`` against ``chunk``: instructions, then the fenced page text, then the question,
    so everything before the question is the same for every claim about this chunk (the shared
    prefix). None where the question does not apply (``extract-other`` without ``other_than``,
    ``complies-ranged`` for a property schema.org does not define)."""
    return FACTUALITY[question].messages(chunk, claim, strategy, prompts_dir, other_than)


def paper_factuality_messages(
    chunk: str,
    claim: Claim,
    strategy: str,
    prompts_dir: str | None = None,
    question: str = "plain",
    other_than: str | None = None,
) -> list[dict[str, str]] | None:
    """The same question in the paper's layout (a worded question before the text): nothing after
    the instructions is shared between claims; kept for the prompt-token comparison."""
    return FACTUALITY[question].messages(chunk, claim, strategy, prompts_dir, other_than, layout=PAPER)


def _account(j: Judged, c) -> None:
    j.requests += 1
    j.model = j.model or c.model
    if c.from_cache:  # the usage a cached answer carries is that of the request that first got it
        j.cache_hits += 1
        return
    j.prompt_tokens += c.prompt_tokens
    j.cached_prompt_tokens += c.cached_prompt_tokens
    j.completion_tokens += c.completion_tokens
    j.latency_s += c.latency_s


async def _past_none(
    client,
    chunk: str,
    claims: Sequence[Claim],
    read: list[tuple[float | None, str | None, Any]],
    again: Sequence[Again],
    prompts_dir: str | None,
) -> tuple[list, list]:
    """``extract-soft-all``'s (or ``extract-soft-all-near``'s) (score, error, completion) per claim
    from ``extract-soft``'s (``read``): where the answer is none although the ``chunk`` states the
    claim's value (``udfs.agents.evidence.missed_stated_value``), the largest of its score and those
    of the requests asked ``again`` (``udfs.agents.questions.AGAIN``: the listing, scored by its best
    line; ``extract-soft`` over the excerpt), the completion still extract-soft's (its answer is
    what ``extract-other`` asks past); and the completions asked again per claim (empty where not
    asked), for the accounting. A request asked again without an answer leaves the claim unscored
    with its error."""
    missed = {
        k
        for k, (score, _, c) in enumerate(read)
        if score is not None and missed_stated_value(c.text, claims[k].value, chunk)
    }
    scored = list(read)
    completions: list[list[Any]] = [[] for _ in claims]
    for request in again:
        got = await request.answer.scores(
            client,
            [request.messages(chunk, c, prompts_dir) if k in missed else None for k, c in enumerate(claims)],
            claims,
            chunk,
        )  # the chunk states the value, so a first token's share counts
        for k in missed:
            score, error, c = got[k]
            if c is None:  # not asked (no excerpt)
                continue
            completions[k].append(c)
            if scored[k][0] is not None:
                scored[k] = (None, error, read[k][2]) if score is None else (max(scored[k][0], score), None, read[k][2])
    return scored, completions


GATED = (0.0, None, None)  # a question not asked below the gate: it scores 0 (judge_factuality)


def _answered(asked: dict[str, list], k: int) -> dict[str, Any]:
    """The (score, error, completion) of each question asked of the ``k``-th pending claim."""
    return {q: got[k] for q, got in asked.items() if got[k] is not NOT_ASKED}


def decided(answered: dict[str, Any], rest: Sequence[Any], threshold: float) -> bool:
    """Whether a claim's verdict about a chunk is settled by the ``answered`` questions
    (question -> (score, error, completion)) whatever those of ``rest`` (the registry's questions
    not yet asked) would answer: an unanswered question leaves the chunk unscored anyway;
    else the :func:`combined_score` is at or above ``threshold`` with every question of ``rest``
    applying and scoring 0, or below it with each scoring 1. Both bounds are exact: the mean of the
    text questions' scores is lowest with the most zeros added and highest with the most ones, and
    the score rises with that mean. While a question about the property (``fits``) is left, only a
    fail is settled: it may score 0, and at most it lifts the text questions' mean m to sqrt(m)."""
    if any(score is None for score, _, _ in answered.values()):
        return True
    stated = [s for q, (s, _, _) in answered.items() if not FACTUALITY[q].fits]
    fits = [s for q, (s, _, _) in answered.items() if FACTUALITY[q].fits]
    stated_left = sum(1 for q in rest if not q.fits)
    n = len(stated) + stated_left
    if any(q.fits for q in rest):
        return n > 0 and math.sqrt((sum(stated) + stated_left) / n) < threshold
    if n == 0:
        return True
    low, high = sum(stated) / n, (sum(stated) + stated_left) / n
    if fits:
        f = sum(fits) / len(fits)
        low, high = math.sqrt(low * f), math.sqrt(high * f)
    return low >= threshold or high < threshold


def combined_score(scores: dict[str, float]) -> float:
    """One claim's factuality score from the scores of the questions that apply to it (question ->
    score, at least one): the mean of the questions about the text, and where questions about the
    property (``fits`` in the registry) apply too, sqrt(mean(stated) * mean(fits)): a claim holds
    when the text states the value and the value fits the property, so each kind bounds the score.
    With one kind only, the mean of its scores."""
    stated = [s for q, s in scores.items() if not FACTUALITY[q].fits]
    fits = [s for q, s in scores.items() if FACTUALITY[q].fits]
    if stated and fits:
        return math.sqrt(sum(stated) / len(stated) * sum(fits) / len(fits))
    kind = stated or fits
    return sum(kind) / len(kind)


async def judge_factuality(
    client,
    chunks: Sequence[str],
    claims: Sequence[Claim],
    *,
    strategy: str,
    threshold: float,
    layout: str = SHARED_PREFIX,
    early_exit: bool,
    gate: float,
    prompts_dir: str | None = None,
    questions: Sequence[str] = PLAIN,
) -> list[Judged]:
    """One verdict per claim; chunks in order, and a claim some chunk already supports is not asked
    again (OR over chunks). Claims of one chunk go out together, question by question, so the
    engine serves each question's shared prefix from its cache. With several ``questions`` a
    chunk's score is the :func:`combined_score` of those that apply to the claim (``complies-ranged``
    does not to a property schema.org leaves undefined, ``extract-other`` only where a question
    that reads the value off (``extract-soft`` and its variants) answered another value the chunk
    states; the variants ask their ``again`` requests only where that answer is none of a value the
    chunk states); a question without an answer leaves the chunk unscored.

    The first question about the text goes first, then the questions about the property (``fits``),
    then the other questions about the text. With ``early_exit`` a claim is asked no more questions
    about a chunk once its verdict there is decided whatever the rest would answer
    (:func:`decided`): every verdict is the one asking every question gives, and the score is the
    :func:`combined_score` of the questions answered (``Judged.early`` marks it); a claim the gate
    leaves no chance is not asked about the property. Without it, every question that applies is
    asked (what fitting a calibration needs).

    ``gate`` (0: none) is part of the judge, not a shortcut: the first question about the text gates
    the others about the text, which are asked only where it scores at least ``gate``; below it they
    score 0 (``extract-other``, which applies only past an answer read off, does not apply)."""
    given = [FACTUALITY[q] for q in check_questions(questions)]
    stated = sorted((q for q in given if not q.fits), key=lambda q: q.asks_past)
    qs = stated[:1] + [q for q in given if q.fits] + stated[1:]
    gating = stated[0] if stated and gate > 0 else None
    out = [Judged(None, None) for _ in claims]
    errors: list[list[str]] = [[] for _ in claims]
    for chunk in chunks or [""]:
        pending = [i for i, j in enumerate(out) if not j.passed]
        if not pending:
            break
        asked: dict[str, list] = {}
        live = set(range(len(pending)))  # the claims (positions in pending) still asked
        early: set[int] = set()  # those decided before the last question
        gated: set[int] = set()  # those below the gate: the text questions after it score 0

        def left(k: int, n: int) -> tuple[dict[str, Any], list]:
            """The answers of the ``k``-th claim and the questions it may still be asked, from the ``n``-th."""
            got, rest = _answered(asked, k), qs[n:]
            if k in gated:
                got |= {q.name: GATED for q in rest if not q.fits and not q.asks_past}
                rest = [q for q in rest if q.fits]
            return got, rest

        for n, q in enumerate(qs):
            if early_exit:
                done = {k for k in live if decided(*left(k, n), threshold)}
                early |= done
                live -= done
            if not live:
                break
            asks = live if q.fits else live - gated
            if q.asks_past:
                read = next((asked[a.name] for a in FACTUALITY.values() if a.reads_value and a.name in asked), None)
                if read is None:  # none of them among the questions: extract-soft's request, for the answer alone
                    soft = FACTUALITY["extract-soft"]
                    read = await soft.answer.scores(
                        client,
                        [
                            soft.messages(chunk, claims[i], strategy, prompts_dir, layout=layout) if k in asks else None
                            for k, i in enumerate(pending)
                        ],
                        [claims[i] for i in pending],
                        chunk,
                    )
                    for k, i in enumerate(pending):
                        if read[k][2] is not None:
                            _account(out[i], read[k][2])
                past = [
                    other_stated_value(c.text, claims[i].value, chunk) if c is not None and c.ok else None
                    for (_, _, c), i in zip(read, pending)
                ]
                messages = [
                    q.messages(chunk, claims[i], strategy, prompts_dir, p, layout=layout) if k in asks else None
                    for k, (i, p) in enumerate(zip(pending, past))
                ]
            else:
                messages = [
                    q.messages(chunk, claims[i], strategy, prompts_dir, layout=layout) if k in asks else None
                    for k, i in enumerate(pending)
                ]
            asked[q.name] = await q.answer.scores(client, messages, [claims[i] for i in pending], chunk)
            if q.again:
                asked[q.name], completions = await _past_none(
                    client, chunk, [claims[i] for i in pending], asked[q.name], [AGAIN[a] for a in q.again], prompts_dir
                )
                for k, i in enumerate(pending):
                    for c in completions[k]:
                        _account(out[i], c)
            if q is gating:
                gated = {k for k in live if asked[q.name][k][0] is not None and asked[q.name][k][0] < gate}
        for q in qs[qs.index(gating) + 1 :] if gated else ():
            if not q.asks_past and not q.fits:
                got = asked.setdefault(q.name, [NOT_ASKED] * len(pending))
                for k in gated:
                    got[k] = GATED
        for k, i in enumerate(pending):
            j = out[i]
            got = _answered(asked, k)
            for _, _, c in got.values():
                if c is not None:  # a score the gate gave
                    _account(j, c)
            if not got or any(score is None for score, _, _ in got.values()):
                errors[i] += [err or "no verdict" for score, err, _ in got.values() if score is None] or [
                    "no question applies"
                ]
                continue
            score = combined_score({q: score for q, (score, _, _) in got.items()})
            if j.score is None or score > j.score:
                j.score, j.early = score, k in early
            j.passed = j.score >= threshold
    for j, errs in zip(out, errors):
        if j.score is None:
            j.error = "; ".join(sorted(set(errs))) or "no verdict"
    return out


async def judge_compliance(
    client,
    claims: Sequence[Claim],
    *,
    vocab=None,
    strategy: str,
    threshold: float,
    prompts_dir: str | None = None,
    questions: Sequence[str] = PLAIN,
) -> list[Judged]:
    """One verdict per claim against the property's definition, the mean of ``questions``' scores
    (``udfs.agents.questions.COMPLIANCE``); no definition: kept and marked, nothing asked. A
    question without an answer leaves the claim unscored, with the error."""
    vocab = vocab or load_vocabulary()
    qs = [COMPLIANCE[q] for q in check_questions(questions, "compliance")]
    out = [Judged(None, None) for _ in claims]
    asked: list[tuple[int, str]] = []
    for i, c in enumerate(claims):
        definition = vocab.comments.get(c.property)
        if not definition:
            out[i].passed = True
            out[i].note = f"no schema.org definition for {c.property}: kept unjudged"
        else:
            asked.append((i, definition))
    if not asked:
        return out
    answers = [
        await q.answer.scores(
            client,
            [compliance_messages(claims[i], d, strategy, prompts_dir, q.name) for i, d in asked],
            [claims[i] for i, _ in asked],
        )
        for q in qs
    ]
    for k, (i, _) in enumerate(asked):
        j = out[i]
        got = [a[k] for a in answers]
        for _, _, c in got:
            _account(j, c)
        if any(score is None for score, _, _ in got):
            j.error = "; ".join(sorted({err or "no verdict" for score, err, _ in got if score is None}))
            continue
        j.score = sum(score for score, _, _ in got) / len(got)
        j.passed = j.score >= threshold
    return out


# ---- consensus ---------------------------------------------------------------------------------
TIE_NOTE = "tie broken by the judge"
ACCOUNTING = ("prompt_tokens", "cached_prompt_tokens", "completion_tokens", "latency_s", "requests", "cache_hits")
Voter = Callable[[Sequence[Claim]], "asyncio.Future[list[Judged]]"]


def voter_model_and_strategy(name: str | None, default: str) -> tuple[str | None, str]:
    """A voter is a model id, or "model/strategy" with a strategy of ``STRATEGIES`` after the
    last slash (model ids may contain slashes themselves)."""
    if name and "/" in name:
        model, _, strategy = name.rpartition("/")
        if strategy in STRATEGIES:
            return model, strategy
    return name, default


def verdict_voter(
    agent: str,
    client,
    *,
    chunks: Sequence[str] = (),
    strategy: str,
    threshold: float,
    early_exit: bool,
    gate: float,
    prompts_dir: str | None = None,
    vocab=None,
    questions: Sequence[str] = PLAIN,
) -> Voter:
    """The verdict function of one voter: ``judge_factuality`` (against ``chunks``, its
    ``early_exit`` and ``gate``) or ``judge_compliance``, asking the agent's ``questions``, with its client,
    strategy and threshold bound (``vocab``: where compliance reads the definitions, default
    schema.org's)."""
    if agent == "factuality":
        return lambda claims: judge_factuality(
            client,
            list(chunks),
            claims,
            strategy=strategy,
            threshold=threshold,
            early_exit=early_exit,
            gate=gate,
            prompts_dir=prompts_dir,
            questions=questions,
        )
    return lambda claims: judge_compliance(
        client,
        claims,
        vocab=vocab,
        strategy=strategy,
        threshold=threshold,
        prompts_dir=prompts_dir,
        questions=questions,
    )


async def vote(
    voter: Callable[[str | None], Voter],
    names: Sequence[str | None],
    claims: Sequence[Claim],
    *,
    judge: str | None = None,
) -> list[Judged]:
    """One voter answers alone; several vote (``consensus``) with ``judge`` breaking ties.
    ``voter`` makes the verdict function of a voter name (model id or model/strategy)."""
    if len(names) == 1:
        return await voter(names[0])(claims)
    return await consensus(
        {n: voter(n) for n in names}, claims, judge=voter(judge) if judge else None, judge_name=f"judge:{judge}"
    )


async def consensus(
    voters: dict[str, Callable], claims: Sequence[Claim], *, judge: Callable | None = None, judge_name: str = "judge"
) -> list[Judged]:
    """Majority of the voters that answered; a tie (or no answer at all) goes to the judge.

    ``voters`` maps a name (a model id, or model/strategy) to an async function claims -> Judged
    list (``judge_factuality`` / ``judge_compliance`` with its client bound). Every vote is kept
    in ``Judged.votes``; the score is the share of yes votes (the judge's score on a tie)."""
    names = list(voters)
    results = await asyncio.gather(*(voters[n](claims) for n in names))
    out: list[Judged] = []
    tie_idx = []
    for k in range(len(claims)):
        j = Judged(None, None)
        yes = no = 0
        notes = set()
        for n, res in zip(names, results):
            r = res[k]
            j.votes[n] = r.score
            for f in ACCOUNTING:
                setattr(j, f, getattr(j, f) + getattr(r, f))
            if r.note:
                notes.add(r.note)
            if r.passed is True:
                yes += 1
            elif r.passed is False:
                no += 1
        j.note = "; ".join(sorted(notes)) or None
        if yes != no:
            j.passed, j.score = yes > no, yes / (yes + no)
        else:
            tie_idx.append(k)
        out.append(j)
    if tie_idx:
        if judge is None:
            for k in tie_idx:
                out[k].error = "tie and no judge" if out[k].votes else "no voter"
        else:
            judged = await judge([claims[k] for k in tie_idx])
            for k, r in zip(tie_idx, judged):
                j = out[k]
                j.votes[judge_name] = r.score
                j.passed, j.score, j.error, j.early = r.passed, r.score, r.error, r.early
                j.note = "; ".join(x for x in (j.note, r.note, TIE_NOTE) if x)
                for f in ACCOUNTING:
                    setattr(j, f, getattr(j, f) + getattr(r, f))
    return out


def markup_id(doc: Any) -> str:
    return hashlib.sha256(json.dumps(doc, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


# ---- correction (GraphEval's GraphCorrect) -----------------------------------------------------
CORRECTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"value": {"type": ["string", "null"]}},
    "required": ["value"],
    "additionalProperties": False,
}


@dataclass
class Correction:
    """A flagged claim, the value the model proposed from the text, and the re-verification:
    ``corrected`` only when the new value differs and the factuality agent accepts it."""

    claim: Claim
    proposed: str | None
    verdict: Judged | None
    corrected: bool
    error: str | None = None


def correction_messages(chunk: str, claim: Claim, prompts_dir: str | None = None) -> list[dict[str, str]]:
    """Same prefix order as factuality (instructions, page text, then the claim)."""
    question = load_prompt("correction_question", prompts_dir).format(
        entity_type=claim.entity_type or "entity", property=claim.property, value=unfence(claim.value)
    )
    return [
        {"role": "system", "content": load_prompt("correction_system", prompts_dir)},
        {"role": "user", "content": f"{fence(chunk)}\n\n{question}"},
    ]


async def correct(
    client,
    chunks: Sequence[str],
    claims: Sequence[Claim],
    *,
    strategy: str,
    threshold: float,
    early_exit: bool,
    gate: float,
    max_tokens: int = 128,
    prompts_dir: str | None = None,
    questions: Sequence[str] = PLAIN,
) -> list[Correction]:
    """Ask for the value of each non-factual claim from the text (first chunk that states one),
    then re-verify the corrected claim with the factuality agent (the same ``questions``, so the
    same threshold applies, and its ``early_exit`` and ``gate``); only the flagged claim changes."""
    out: list[Correction | None] = [None] * len(claims)
    proposed: dict[int, str] = {}
    errors: dict[int, str] = {}
    for chunk in chunks or [""]:
        pending = [i for i in range(len(claims)) if i not in proposed]
        if not pending:
            break
        answers = await client.chat_many(
            [
                {
                    "messages": correction_messages(chunk, claims[i], prompts_dir),
                    "json_schema": CORRECTION_SCHEMA,
                    "max_tokens": max_tokens,
                    "temperature": 0.0,
                }
                for i in pending
            ]
        )
        for i, c in zip(pending, answers):
            if not c.ok:
                errors[i] = c.error
            elif c.parsed.get("value") not in (None, "") and str(c.parsed["value"]).strip():
                proposed[i] = str(c.parsed["value"]).strip()
    # a value read off the text is a literal; the subject's other properties stay what they were
    fixed = [dataclasses.replace(claims[i], value=v, value_type=None) for i, v in proposed.items()]
    verdicts = dict(
        zip(
            proposed,
            await judge_factuality(
                client,
                chunks,
                fixed,
                strategy=strategy,
                threshold=threshold,
                early_exit=early_exit,
                gate=gate,
                prompts_dir=prompts_dir,
                questions=questions,
            ),
        )
    )
    for i, claim in enumerate(claims):
        if i in proposed:
            j = verdicts[i]
            changed = proposed[i] != claim.value
            out[i] = Correction(claim, proposed[i], j, bool(changed and j.passed), j.error)
        else:
            out[i] = Correction(claim, None, None, False, errors.get(i) or "the text states no value")
    return out  # type: ignore[return-value]
