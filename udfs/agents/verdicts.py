"""Claims and votes: what the verdict agents are asked about, and how several voters decide.

The judge itself (its questions, their order, the gate, early exit, thresholds, correction) is
``udfs.agents.judge``; generation ``udfs.agents.generation``; prompts, fences and examples
``udfs.agents.prompts``; validity ``udfs.agents.validity``.

* Claims: one per triple of a markup, its value as a page would state it (``claims_of``): a literal,
  a node by its name, an IRI or enumeration member in words; a triple whose value is an unnamed
  node is not asked and follows the claims inside that node (``nested_claims``).
* ``Judged``: one agent's decision on one claim, with the accounting of its requests.
* Consensus: each voter (a model, or a model with a strategy) judges every item; the majority of
  the voters that answered decides, a tie goes to the judge; every vote is kept.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from typing import Callable, Sequence

from udfs.agents.prompts import STRATEGIES
from udfs.agents.questions import Claim
from udfs.schemaorg.markup import Literal, Markup, Ref
from udfs.schemaorg.vocab import schema_local_name

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
    # rest were asked (the judge's early exit, ``udfs.agents.judge``)
    early: bool = False
    # answered by the request cache or by the same request already in flight: no engine work, so
    # none of the tokens and time above (the engine served ``requests - cache_hits``)
    cache_hits: int = 0
    model: str | None = None


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
    list (``udfs.agents.judge.Judge.voter``). Every vote is kept
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
