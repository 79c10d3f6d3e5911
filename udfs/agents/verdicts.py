"""The LLM agents of LLM4Schema.org: generation, factuality and compliance, with the FactCheck
verdict strategies and a multi-model majority vote. (Validity is ``udfs/agents/validity.py``.)

Every model call goes through ``udfs.llm.client.LLMClient``; prompts live in ``conf/prompts/``.
Untrusted text (page text, markup values) is fenced in the prompts and never obeyed; model output
is parsed strictly (JSON schema for markup, the first token's yes/no logprobs for verdicts).

* Generation: the paper's ingredients (target types; the properties usable on them, inherited
  ones included; one schema.org documentation example for the type; the page text), JSON-LD only,
  temperature 0, JSON-schema structured output. Long texts are chunked (``udfs.llm.chunking``) and the
  chunk outputs merged at the triple level: union, duplicates removed (``merge_markups``).
* Factuality: one yes/no per (property, value, entity type) against the text; a triple passes if
  any chunk says yes (OR). The messages put the fixed instructions and the page text first and the
  question last, so every question about one page shares a prompt prefix the engine's prefix cache
  serves; ``prompt_tokens`` vs ``cached_prompt_tokens`` in the accounting shows what that saves.
* Compliance: one yes/no per property value against the property's ``rdfs:comment``; a property
  without a definition is kept (``compliant`` True) and marked (``compliant_note``).
* Strategies (FactCheck): ``direct`` (the question alone), ``guided`` (zero-shot verification
  steps), ``fewshot`` (guided, plus solved examples built from the schema.org examples).
* Consensus: each voter (a model, or a model with a strategy) judges every item; the majority of
  the voters that answered decides, a tie goes to the judge; every vote is kept.
"""
from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from udfs.schemaorg.markup import Entity, Literal, Markup, MarkupError, Ref, parse_markup, to_jsonld
from udfs.runtime.paths import DATA_DIR, PROMPTS_DIR
from udfs.schemaorg.vocab import DEFAULT_RELEASE, load_vocabulary

EXAMPLES_FILE = DATA_DIR / f"schemaorg-{DEFAULT_RELEASE}" / "schemaorg-all-examples.txt"
STRATEGIES = ("direct", "guided", "fewshot")
DEFAULT_THRESHOLD = 0.5
PAGE_OPEN, PAGE_CLOSE = "<<<PAGE_TEXT", "PAGE_TEXT>>>"
VALUE_OPEN, VALUE_CLOSE = "<<<VALUE", "VALUE>>>"
_FENCES = re.compile(r"<<<\s*(PAGE_TEXT|VALUE)|(PAGE_TEXT|VALUE)\s*>>>", re.I)


def _unfence(text: str) -> str:
    """``text`` without fence markers, removed until none is left: one pass would let
    ``PAGE_TEXPAGE_TEXT>>>T>>>`` collapse into a closing marker."""
    prev = None
    while prev != text:
        prev, text = text, _FENCES.sub("", text)
    return text

# What the model must return: one JSON object with a type (the rest is checked by the agents).
GENERATION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"@context": {"type": "string"}, "@type": {"type": "string"}},
    "required": ["@type"],
    # explicit: some engines' schema-to-grammar converters close the object otherwise
    "additionalProperties": True,
}


@functools.lru_cache(maxsize=None)
def load_prompt(name: str, prompts_dir: str | None = None) -> str:
    return (Path(prompts_dir) if prompts_dir else PROMPTS_DIR).joinpath(f"{name}.txt").read_text().strip()


def fence(text: str, open_: str = PAGE_OPEN, close: str = PAGE_CLOSE) -> str:
    """Untrusted text between markers it cannot close itself (its own markers are removed)."""
    return f"{open_}\n{_unfence(text or '')}\n{close}"


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


# ---- generation --------------------------------------------------------------------------------
@dataclass
class Generation:
    markup: dict | list | None  # the merged JSON-LD (None: no chunk gave usable markup)
    chunks: list[dict[str, Any]] = field(default_factory=list)  # per chunk: tokens, error, accounting
    error: str | None = None

    @property
    def prompt_tokens(self) -> int:
        return sum(c.get("prompt_tokens", 0) for c in self.chunks)

    @property
    def completion_tokens(self) -> int:
        return sum(c.get("completion_tokens", 0) for c in self.chunks)

    @property
    def latency_s(self) -> float:
        return sum(c.get("latency_s", 0.0) for c in self.chunks)


def generation_messages(types: Sequence[str], page_text: str, *, vocab=None,
                        example: Example | None = None, prompts_dir: str | None = None) -> list[dict[str, str]]:
    vocab = vocab or load_vocabulary()
    props: set[str] = set()
    for t in types:
        props |= vocab.properties_of(t)
    ex = example if example is not None else example_for(types)
    user = load_prompt("generation_user", prompts_dir).format(
        types=", ".join(types),
        properties=", ".join(sorted(props)) or "(none known)",
        example_type=", ".join(ex.root_types) if ex else "-",
        example_text=ex.text if ex else "(no example for these types)",
        example_jsonld=json.dumps(ex.jsonld, ensure_ascii=False) if ex else "{}",
        page=fence(page_text),
    )
    return [{"role": "system", "content": load_prompt("generation_system", prompts_dir)},
            {"role": "user", "content": user}]


def _count_tokens(tokenizer, text: str) -> int:
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


async def generate(client, types: Sequence[str], page_text: str, *, tokenizer=None, context_window: int = 8192,
                   max_tokens: int = 1024, vocab=None, example: Example | None = None,
                   prompts_dir: str | None = None) -> Generation:
    """Markup of ``types`` for the page text: one request per chunk, outputs merged (union of
    triples). A chunk whose answer is not a JSON object with a type is recorded, not merged."""
    if not types:
        return Generation(None, error="no target type")
    empty = generation_messages(types, "", vocab=vocab, example=example, prompts_dir=prompts_dir)
    overhead = (sum(_count_tokens(tokenizer, m["content"]) for m in empty) + TEMPLATE_TOKENS) if tokenizer else 0
    try:
        chunks = page_chunks(page_text, tokenizer, context_window=context_window,
                             output_tokens=max_tokens, prompt_tokens=overhead)
    except ValueError as exc:  # the prompt alone fills the context
        return Generation(None, error=f"chunking: {exc}")
    completions = await client.chat_many([
        {"messages": generation_messages(types, c, vocab=vocab, example=example, prompts_dir=prompts_dir),
         "json_schema": GENERATION_SCHEMA, "max_tokens": max_tokens, "temperature": 0.0}
        for c in chunks])
    docs, records = [], []
    for i, (chunk, c) in enumerate(zip(chunks, completions)):
        rec = {"chunk": i, "chars": len(chunk), "error": c.error, "prompt_tokens": c.prompt_tokens,
               "cached_prompt_tokens": c.cached_prompt_tokens, "completion_tokens": c.completion_tokens,
               "latency_s": c.latency_s, "from_cache": c.from_cache, "finish_reason": c.finish_reason}
        if c.ok and c.finish_reason == "length":
            # A cut answer is not JSON; saying why beats a parse error about a missing brace.
            rec["error"] = f"output cut at max_tokens={max_tokens} (raise max_tokens)"
        elif c.ok:
            try:
                parse_markup(c.parsed)
                docs.append(c.parsed)
            except MarkupError as exc:
                rec["error"] = f"unreadable markup: {exc.reason}"
        records.append(rec)
    if not docs:
        errors = "; ".join(sorted({r["error"] for r in records if r["error"]}))
        return Generation(None, records, error=errors or "no chunk gave markup")
    return Generation(merge_markups(docs), records)


def merge_markups(docs: Sequence[Any]) -> dict | None:
    """Union of the triples of several markups of one page (one per chunk), duplicates removed.

    Chunk outputs describe the same page entity, so top-level entities with the same first type
    are one subject; other blank nodes are scoped to their chunk and then merged with any node of
    the same types and the same property values (a place described identically in two chunks is one
    place). IRIs are global, as in RDF."""
    entities: dict[str, Entity] = {}
    roots: list[str] = []
    for i, doc in enumerate(docs):
        m = parse_markup(doc)
        rename: dict[str, str] = {}
        for eid in m.entities:
            rename[eid] = f"_:c{i}_{eid[2:]}" if eid.startswith("_:") else eid
        for r in m.roots:
            ent = m.entities[r]
            if r.startswith("_:"):
                rename[r] = "_:root_" + (ent.types[0] if ent.types else "untyped")
        for eid, ent in m.entities.items():
            nid = rename[eid]
            tgt = entities.setdefault(nid, Entity(nid))
            for t in ent.types:
                if t not in tgt.types:
                    tgt.types.append(t)
            for p, vs in ent.properties.items():
                for v in vs:
                    tgt.add(p, Ref(rename.get(v.id, v.id)) if isinstance(v, Ref) else v)
        for r in m.roots:
            if rename[r] not in roots:
                roots.append(rename[r])
    _merge_identical_blank_nodes(entities, roots)
    return to_jsonld(Markup(entities, roots))


def _merge_identical_blank_nodes(entities: dict[str, Entity], roots: list[str]) -> None:
    while True:
        canon: dict[tuple, str] = {}
        alias: dict[str, str] = {}
        for eid, ent in entities.items():
            if not eid.startswith("_:c") or eid in roots:
                continue
            sig = (tuple(sorted(ent.types)),
                   tuple(sorted((p, repr(v.key())) for p, vs in ent.properties.items() for v in vs)))
            if sig in canon:
                alias[eid] = canon[sig]
            else:
                canon[sig] = eid
        if not alias:
            return
        for eid in alias:
            del entities[eid]
        for ent in entities.values():
            old = ent.properties
            ent.properties, ent._seen = {}, set()
            for p, vs in old.items():
                for v in vs:
                    ent.add(p, Ref(alias.get(v.id, v.id)) if isinstance(v, Ref) else v)


# ---- verdicts ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Claim:
    """What a verdict is about: a property value of an entity of a type, as text for the prompt."""

    property: str
    value: str
    entity_type: str | None


def describe_value(markup: Markup, v) -> str:
    """A value as the prompt shows it: a literal's text; a described entity by its type and name."""
    if isinstance(v, Literal):
        return v.text
    ent = markup.entities.get(v.id)
    if ent is None:
        return v.id
    label = next((x.text for p in ("name", "headline", "alternateName", "description")
                  for x in ent.properties.get(p, []) if isinstance(x, Literal)), None)
    kind = "/".join(ent.types) or "entity"
    return f"a {kind} named {label!r}" if label else (f"a {kind} ({ent.id})" if not ent.is_blank else f"a {kind}")


def claims_of(markup: Markup) -> list[Claim]:
    return [Claim(t.property, describe_value(markup, t.value), t.entity_type) for t in markup.triples()]


@dataclass
class Judged:
    """One agent's decision on one claim: the best score over chunks (OR), the votes if several
    voters judged, and the accounting of every request made for it."""

    score: float | None
    passed: bool | None  # None: no voter could answer (see error)
    error: str | None = None
    note: str | None = None
    votes: dict[str, float | None] = field(default_factory=dict)
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    requests: int = 0
    model: str | None = None


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
    (p1, v1), (p2, v2) = l1[0], l1[1]
    return "\n".join([
        head,
        f"Property: {p1}\nDefinition: {vocab.comments.get(p1, '')}\nValue: {v1}\nAnswer: yes",
        f"Property: {p1}\nDefinition: {vocab.comments.get(p1, '')}\nValue: {v2}\nAnswer: no",
    ])


def _system(agent: str, strategy: str, prompts_dir: str | None) -> str:
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}: one of {', '.join(STRATEGIES)}")
    parts = [load_prompt(f"{agent}_system", prompts_dir)]
    if strategy in ("guided", "fewshot"):
        parts.append(load_prompt("guided", prompts_dir))
    if strategy == "fewshot":
        parts.append(fewshot_block(agent))
    return "\n\n".join(p for p in parts if p)


def factuality_messages(chunk: str, claim: Claim, strategy: str = "direct",
                        prompts_dir: str | None = None) -> list[dict[str, str]]:
    """Instructions, then the fenced page text, then the question: everything before the question
    is the same for every claim about this chunk (the shared prefix)."""
    question = _factuality_question(claim, prompts_dir)
    return [{"role": "system", "content": _system("factuality", strategy, prompts_dir)},
            {"role": "user", "content": f"{fence(chunk)}\n\n{question}"}]


def _factuality_question(claim: Claim, prompts_dir: str | None) -> str:
    return load_prompt("factuality_question", prompts_dir).format(
        entity_type=claim.entity_type or "entity", property=claim.property, value=_unfence(claim.value))


def paper_factuality_messages(chunk: str, claim: Claim, strategy: str = "direct",
                              prompts_dir: str | None = None) -> list[dict[str, str]]:
    """The same question in the paper's layout (the triple before the text): nothing after the
    instructions is shared between claims; kept for the prompt-token comparison."""
    question = _factuality_question(claim, prompts_dir)
    return [{"role": "system", "content": _system("factuality", strategy, prompts_dir)},
            {"role": "user", "content": f"{question}\n\n{fence(chunk)}"}]


def compliance_messages(claim: Claim, definition: str, strategy: str = "direct",
                        prompts_dir: str | None = None) -> list[dict[str, str]]:
    question = load_prompt("compliance_question", prompts_dir).format(
        property=claim.property, definition=definition, entity_type=claim.entity_type or "entity",
        value=_unfence(claim.value))
    return [{"role": "system", "content": _system("compliance", strategy, prompts_dir)},
            {"role": "user", "content": question}]


def _account(j: Judged, v) -> None:
    c = v.completion
    j.requests += 1
    j.prompt_tokens += c.prompt_tokens
    j.cached_prompt_tokens += c.cached_prompt_tokens
    j.completion_tokens += c.completion_tokens
    j.latency_s += c.latency_s
    j.model = j.model or c.model


async def judge_factuality(client, chunks: Sequence[str], claims: Sequence[Claim], *, strategy: str = "direct",
                           threshold: float = DEFAULT_THRESHOLD, layout: str = "shared_prefix",
                           prompts_dir: str | None = None) -> list[Judged]:
    """One verdict per claim; chunks in order, and a claim some chunk already supports is not asked
    again (OR over chunks). Claims of one chunk go out together so the engine serves the shared
    prefix from its cache."""
    build = factuality_messages if layout == "shared_prefix" else paper_factuality_messages
    out = [Judged(None, None) for _ in claims]
    errors: list[list[str]] = [[] for _ in claims]
    for chunk in chunks or [""]:
        pending = [i for i, j in enumerate(out) if not j.passed]
        if not pending:
            break
        verdicts = await client.verdict_many(
            [{"messages": build(chunk, claims[i], strategy, prompts_dir)} for i in pending])
        for i, v in zip(pending, verdicts):
            j = out[i]
            _account(j, v)
            if v.score is None:
                errors[i].append(v.error or "no verdict")
                continue
            j.score = v.score if j.score is None else max(j.score, v.score)
            j.passed = j.score >= threshold
    for j, errs in zip(out, errors):
        if j.score is None:
            j.error = "; ".join(sorted(set(errs))) or "no verdict"
    return out


async def judge_compliance(client, claims: Sequence[Claim], *, vocab=None, strategy: str = "direct",
                           threshold: float = DEFAULT_THRESHOLD, prompts_dir: str | None = None) -> list[Judged]:
    """One verdict per claim against the property's definition; no definition: kept and marked."""
    vocab = vocab or load_vocabulary()
    out = [Judged(None, None) for _ in claims]
    asked = []
    for i, c in enumerate(claims):
        definition = vocab.comments.get(c.property)
        if not definition:
            out[i].passed = True
            out[i].note = f"no schema.org definition for {c.property}: kept unjudged"
        else:
            asked.append((i, compliance_messages(c, definition, strategy, prompts_dir)))
    verdicts = await client.verdict_many([{"messages": m} for _, m in asked]) if asked else []
    for (i, _), v in zip(asked, verdicts):
        j = out[i]
        _account(j, v)
        if v.score is None:
            j.error = v.error or "no verdict"
        else:
            j.score = v.score
            j.passed = v.score >= threshold
    return out


# ---- consensus ---------------------------------------------------------------------------------
TIE_NOTE = "tie broken by the judge"
Voter = Callable[[Sequence[Claim]], "asyncio.Future[list[Judged]]"]


def voter_model_and_strategy(name: str | None, default: str) -> tuple[str | None, str]:
    """A voter is a model id, or "model/strategy" with a strategy of ``STRATEGIES`` after the
    last slash (model ids may contain slashes themselves)."""
    if name and "/" in name:
        model, _, strategy = name.rpartition("/")
        if strategy in STRATEGIES:
            return model, strategy
    return name, default


def verdict_voter(agent: str, client, *, chunks: Sequence[str] = (), strategy: str = "direct",
                  threshold: float = DEFAULT_THRESHOLD, prompts_dir: str | None = None) -> Voter:
    """The verdict function of one voter: ``judge_factuality`` (against ``chunks``) or
    ``judge_compliance`` with its client, strategy and threshold bound."""
    if agent == "factuality":
        return lambda claims: judge_factuality(client, list(chunks), claims, strategy=strategy,
                                               threshold=threshold, prompts_dir=prompts_dir)
    return lambda claims: judge_compliance(client, claims, strategy=strategy, threshold=threshold,
                                           prompts_dir=prompts_dir)


async def vote(voter: Callable[[str | None], Voter], names: Sequence[str | None], claims: Sequence[Claim], *,
               judge: str | None = None) -> list[Judged]:
    """One voter answers alone; several vote (``consensus``) with ``judge`` breaking ties.
    ``voter`` makes the verdict function of a voter name (model id or model/strategy)."""
    if len(names) == 1:
        return await voter(names[0])(claims)
    return await consensus({n: voter(n) for n in names}, claims, judge=voter(judge) if judge else None,
                           judge_name=f"judge:{judge}")


async def consensus(voters: dict[str, Callable], claims: Sequence[Claim], *, judge: Callable | None = None,
                    judge_name: str = "judge") -> list[Judged]:
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
            for f in ("prompt_tokens", "cached_prompt_tokens", "completion_tokens", "latency_s", "requests"):
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
                j.passed, j.score, j.error = r.passed, r.score, r.error
                j.note = "; ".join(x for x in (j.note, r.note, TIE_NOTE) if x)
                for f in ("prompt_tokens", "cached_prompt_tokens", "completion_tokens", "latency_s", "requests"):
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
        entity_type=claim.entity_type or "entity", property=claim.property, value=_unfence(claim.value))
    return [{"role": "system", "content": load_prompt("correction_system", prompts_dir)},
            {"role": "user", "content": f"{fence(chunk)}\n\n{question}"}]


async def correct(client, chunks: Sequence[str], claims: Sequence[Claim], *, strategy: str = "direct",
                  threshold: float = DEFAULT_THRESHOLD, max_tokens: int = 128,
                  prompts_dir: str | None = None) -> list[Correction]:
    """Ask for the value of each non-factual claim from the text (first chunk that states one),
    then re-verify the corrected claim with the factuality agent; only the flagged claim changes."""
    out: list[Correction | None] = [None] * len(claims)
    proposed: dict[int, str] = {}
    errors: dict[int, str] = {}
    for chunk in chunks or [""]:
        pending = [i for i in range(len(claims)) if i not in proposed]
        if not pending:
            break
        answers = await client.chat_many([
            {"messages": correction_messages(chunk, claims[i], prompts_dir), "json_schema": CORRECTION_SCHEMA,
             "max_tokens": max_tokens, "temperature": 0.0} for i in pending])
        for i, c in zip(pending, answers):
            if not c.ok:
                errors[i] = c.error
            elif c.parsed.get("value") not in (None, "") and str(c.parsed["value"]).strip():
                proposed[i] = str(c.parsed["value"]).strip()
    fixed = [Claim(claims[i].property, v, claims[i].entity_type) for i, v in proposed.items()]
    verdicts = dict(zip(proposed, await judge_factuality(client, chunks, fixed, strategy=strategy,
                                                         threshold=threshold, prompts_dir=prompts_dir)))
    for i, claim in enumerate(claims):
        if i in proposed:
            j = verdicts[i]
            changed = proposed[i] != claim.value
            out[i] = Correction(claim, proposed[i], j, bool(changed and j.passed), j.error)
        else:
            out[i] = Correction(claim, None, None, False, errors.get(i) or "the text states no value")
    return out  # type: ignore[return-value]
