"""The generation agent of LLM4Schema.org: schema.org markup of target types for a page's text.

The paper's ingredients (target types; the properties usable on them, inherited ones included; one
schema.org documentation example for the type; the page text, fenced), JSON-LD only, temperature 0,
JSON-schema structured output (``GENERATION_SCHEMA``). Long texts are chunked
(``udfs.agents.prompts.page_chunks``), one request per chunk, and the chunk outputs merged at the
triple level: union, duplicates removed (``merge_markups``). A chunk whose answer is cut, or is not
a readable JSON object with a type, is recorded with its error and not merged. Prompts live in
``conf/prompts/generation_*.txt`` (``udfs/agents/prompts.py``); every model call goes through
``udfs.llm.client.LLMClient``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Sequence

from udfs.agents.prompts import TEMPLATE_TOKENS, Example, count_tokens, example_for, fence, load_prompt, page_chunks
from udfs.schemaorg.markup import Entity, Markup, MarkupError, Ref, parse_markup, to_jsonld
from udfs.schemaorg.vocab import load_vocabulary

# What the model must return: one JSON object with a type (the rest is checked by the agents).
GENERATION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"@context": {"type": "string"}, "@type": {"type": "string"}},
    "required": ["@type"],
    # explicit: some engines' schema-to-grammar converters close the object otherwise
    "additionalProperties": True,
}


# ---- generation ------------------------------------------------------------------------------
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


def generation_messages(
    types: Sequence[str], page_text: str, *, vocab=None, example: Example | None = None, prompts_dir: str | None = None
) -> list[dict[str, str]]:
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
    return [
        {"role": "system", "content": load_prompt("generation_system", prompts_dir)},
        {"role": "user", "content": user},
    ]


async def generate(
    client,
    types: Sequence[str],
    page_text: str,
    *,
    tokenizer=None,
    context_window: int,
    max_tokens: int,
    vocab=None,
    example: Example | None = None,
    prompts_dir: str | None = None,
    temperature: float = 0.0,
    seed: int | None = None,
) -> Generation:
    """Markup of ``types`` for the page text: one request per chunk, outputs merged (union of
    triples). A chunk whose answer is not a JSON object with a type is recorded, not merged.
    ``temperature`` 0 is greedy (one markup per page and model); above it the model samples, with
    ``seed`` sent where given (a repeat of the evaluation draws its own markup, the same one each
    time it is asked)."""
    if not types:
        return Generation(None, error="no target type")
    empty = generation_messages(types, "", vocab=vocab, example=example, prompts_dir=prompts_dir)
    overhead = (sum(count_tokens(tokenizer, m["content"]) for m in empty) + TEMPLATE_TOKENS) if tokenizer else 0
    try:
        chunks = page_chunks(
            page_text, tokenizer, context_window=context_window, output_tokens=max_tokens, prompt_tokens=overhead
        )
    except ValueError as exc:  # the prompt alone fills the context
        return Generation(None, error=f"chunking: {exc}")
    completions = await client.chat_many(
        [
            {
                "messages": generation_messages(types, c, vocab=vocab, example=example, prompts_dir=prompts_dir),
                "json_schema": GENERATION_SCHEMA,
                "max_tokens": max_tokens,
                "temperature": temperature,
                **({"extra": {"seed": seed}} if temperature > 0 and seed is not None else {}),
            }
            for c in chunks
        ]
    )
    docs, records = [], []
    for i, (chunk, c) in enumerate(zip(chunks, completions)):
        rec = {
            "chunk": i,
            "chars": len(chunk),
            "error": c.error,
            "prompt_tokens": c.prompt_tokens,
            "cached_prompt_tokens": c.cached_prompt_tokens,
            "completion_tokens": c.completion_tokens,
            "latency_s": c.latency_s,
            "from_cache": c.from_cache,
            "finish_reason": c.finish_reason,
        }
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
            sig = (
                tuple(sorted(ent.types)),
                tuple(sorted((p, repr(v.key())) for p, vs in ent.properties.items() for v in vs)),
            )
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
