"""One page through the LLM4Schema.org pipeline: markup per source (the human one, one generated
per model, and the stored ones a run was given: ``page["stored_markups"]``, source -> JSON-LD text,
``udfs.evaluation.stored``), then validity -> factuality -> compliance, each stage judging what the previous kept;
then counts, rejection rates, MeMR and key scores. Plain Python over plain data: ``jobs/evaluate.py``
runs it over ``pages/`` with Ray Data and writes the rows this module returns.

Per page the result is three lists of rows (the ``markups/``, ``triples/`` and ``scores/``
contracts; schemas below). Nothing is dropped: a source whose markup cannot be had (generation
failed, unreadable markup) is a ``scores`` row with ``status`` and ``reason``; a claim the model
could not judge keeps its row with the error, counts in ``n_*_errors`` and is not kept (a triple
passes a stage only on a verdict).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from udfs.agents import calibration, generation, prompts
from udfs.agents import verdicts as agents
from udfs.agents.judge import Judge
from udfs.runtime.config import ScoresConf
from udfs.runtime.contracts import TableContract
from udfs.schemaorg.markup import Entity, Literal, Markup, MarkupError, claim_text, parse_markup, to_jsonld
from udfs.scores import matching
from udfs.scores.keys import key_scores
from udfs.scores.memr import memr

STAGES = ("validity", "factuality", "compliance")
HUMAN = "human"

VOTES = pa.map_(pa.string(), pa.float64())
TRIPLES_SCHEMA = pa.schema(
    [
        ("page_key", pa.string()),
        ("page_url", pa.string()),
        ("source", pa.string()),
        ("subject", pa.string()),
        ("property", pa.string()),
        ("value", pa.string()),
        # the triple as a person reads it (udfs.schemaorg.markup.claim_text); display only, the ids key it
        ("claim", pa.string()),
        ("value_kind", pa.string()),
        ("entity_type", pa.string()),
        ("valid", pa.bool_()),
        ("valid_reason", pa.string()),
        ("validity_rule", pa.int32()),
        ("factual_score", pa.float64()),
        ("factual", pa.bool_()),
        ("factual_error", pa.string()),
        # the verdict was decided before every question was asked ([evaluate] early_exit):
        # factual_score combines the questions answered, and factual_p is null
        ("factual_early", pa.bool_()),
        # the score as a probability of the claim being true, by the calibration's map (null: no map,
        # or a score decided early)
        ("factual_p", pa.float64()),
        # votes: each voter's score (model id, or model/strategy) when several models judge; a
        # "judge:<model>" key is present exactly when a tie went to the judge.
        ("factual_votes", VOTES),
        ("corrected_value", pa.string()),
        ("corrected", pa.bool_()),
        ("compliant_score", pa.float64()),
        ("compliant_p", pa.float64()),
        ("compliant", pa.bool_()),
        ("compliant_note", pa.string()),
        ("compliant_error", pa.string()),
        ("compliant_votes", VOTES),
        ("kept", pa.bool_()),
        ("model", pa.string()),
        ("latency_s", pa.float64()),
        ("prompt_tokens", pa.int64()),
        ("cached_prompt_tokens", pa.int64()),
        ("completion_tokens", pa.int64()),
        # who wrote the page's human markup (pages/'s generator; null: none said, or a stored one)
        ("human_generator", pa.string()),
        # the run's settings (udfs.evaluation.parts.settings_hash): rows of two settings never mix
        ("settings_hash", pa.string()),
    ]
)
MARKUPS_SCHEMA = pa.schema(
    [
        ("page_key", pa.string()),
        ("page_url", pa.string()),
        ("source", pa.string()),
        ("stage", pa.string()),
        ("markup", pa.string()),
        ("n_triples", pa.int64()),
        ("settings_hash", pa.string()),
    ]
)
SCORES_SCHEMA = pa.schema(
    [
        ("page_key", pa.string()),
        ("page_url", pa.string()),
        ("source", pa.string()),
        ("status", pa.string()),
        ("reason", pa.string()),
        ("root_types", pa.list_(pa.string())),
        ("n_triples", pa.int64()),
        ("n_valid", pa.int64()),
        ("n_factual", pa.int64()),
        ("n_compliant", pa.int64()),
        # The same four counted the paper's way (udfs.agents.validity.paper_triples): distinct leaf
        # (property, value, entity type) strings, links between nodes not counted, one alive after a
        # stage when any of its rows is. Filled in the paper validity mode, null otherwise; n_* above
        # always count the rows of triples/.
        ("n_triples_paper", pa.int64()),
        ("n_valid_paper", pa.int64()),
        ("n_factual_paper", pa.int64()),
        ("n_compliant_paper", pa.int64()),
        ("n_corrected", pa.int64()),
        ("n_factual_errors", pa.int64()),
        ("n_compliance_errors", pa.int64()),
        ("n_undefined_properties", pa.int64()),
        ("rejection_validity", pa.float64()),
        ("rejection_factuality", pa.float64()),
        ("rejection_compliance", pa.float64()),
        ("rejection_rate", pa.float64()),
        ("memr_h", pa.float64()),
        ("memr_l", pa.float64()),
        ("memr_raw_h", pa.float64()),
        ("memr_raw_l", pa.float64()),
        ("key_precision", pa.float64()),
        ("key_recall", pa.float64()),
        ("key_f1", pa.float64()),
        ("value_score", pa.float64()),
        ("match_precision", pa.float64()),
        ("match_recall", pa.float64()),
        ("match_f1", pa.float64()),
        ("generation_chunks", pa.int64()),
        ("generation_prompt_tokens", pa.int64()),
        ("generation_completion_tokens", pa.int64()),
        ("generation_latency_s", pa.float64()),
        ("verdict_requests", pa.int64()),
        ("verdict_cache_hits", pa.int64()),
        ("verdict_prompt_tokens", pa.int64()),
        ("verdict_cached_prompt_tokens", pa.int64()),
        ("verdict_latency_s", pa.float64()),
        ("factuality_chunks", pa.int64()),
        ("wall_s", pa.float64()),
        ("human_generator", pa.string()),  # as in triples/
        # the page's WARC record is cut (pages/ truncated, judged under [pages] judge_truncated):
        # its text ends where the record does; null for a page without the column
        ("truncated", pa.bool_()),
        ("settings_hash", pa.string()),
    ]
)
# The scores/ table's contract (udfs.runtime.contracts), from SCORES_SCHEMA: a row names its page,
# source and status; the counts and rates are typed where present (jobs/report.py also requires
# the four counts of Table 7). Key: (page_key, source), one evaluation of a page by a source.
SCORES = TableContract.of_schema(
    "scores",
    SCORES_SCHEMA,
    required=("page_key", "page_url", "source", "status"),
    key=("page_key", "source"),
    writer="llm4schema-evaluate",
)


def repeat_source(source: str, repeat: int, repeats: int) -> str:
    """A source's name in the tables: the source itself in a run of one repeat, ``source#repeat``
    in a run of several (``--repeats``), so that no repeat overwrites another."""
    return source if repeats == 1 else f"{source}#{repeat}"


def source_repeat(name: str) -> tuple[str, int | None]:
    """(source, repeat) of a name in the tables: ``("m", 2)`` for ``m#2``, ``(name, None)`` for a
    source of a run without repeats."""
    base, sep, n = name.rpartition("#")
    return (base, int(n)) if sep and base and n.isdigit() else (name, None)


def page_key(page_url: str, human_markup: str | None) -> str:
    """One evaluation unit: a page with its human markup (the same page sampled in several strata
    is evaluated once; the report joins it back to each stratum)."""
    return hashlib.sha256(f"{page_url}\0{human_markup or ''}".encode()).hexdigest()[:20]


@dataclass
class EvalConfig:
    """How pages are evaluated. The settings are conf/pipeline.toml's ([evaluate] and [judge]
    through the job's flags, [validity], [scores]; ``jobs/evaluate.py`` fills them): none has a
    default here. The fields with defaults are choices of one run, not settings of the file."""

    stages: list[str]
    # the verdict agents' judge (udfs.agents.judge.build_judge: its thresholds and where each came from)
    judge: Judge
    context_window: int
    max_tokens: int
    max_claims: int  # 0: judge every distinct claim of a markup
    # stop asking a claim's factuality questions once its verdict is decided (the same verdicts;
    # the score then combines the questions answered: udfs.agents.judge)
    early_exit: bool
    validity_engine: str
    validity_strict: bool
    validity_vocab: str
    validity_mode: str  # "schemaorg" or "paper" (udfs.agents.validity.MODES)
    scores: ScoresConf  # the key scores' ignore_keys and bleu_max_order
    models: list[str] = field(default_factory=list)  # generating models (sources besides human)
    # human, the models, then the stored sources (any other name: their markups come with the page)
    sources: list[str] = field(default_factory=lambda: [HUMAN])
    correction: bool = False  # GraphCorrect: correct non-factual claims from the text, re-verify
    # each page evaluated this many times (sources named source#r); generation samples at
    # ``temperature`` (0: greedy) with the repeat as its seed, the judge stays greedy and asks afresh
    repeats: int = 1
    temperature: float = 0.0

    def __post_init__(self) -> None:
        bad = set(self.stages) - set(STAGES)
        if bad:
            raise ValueError(f"unknown stages {sorted(bad)}: any of {', '.join(STAGES)}")
        if self.repeats < 1:
            raise ValueError(f"repeats {self.repeats}: at least 1")
        if any("#" in s for s in self.sources):
            raise ValueError(f"sources {self.sources}: '#' is kept for the repeats' names (source#r)")


NOT_JUDGED = "not judged: over"


class _Memo:
    """A tokenizer whose recent answers are kept (the last ``size`` texts): many pages in flight
    ask it for the same prompt overheads, and a page's text is tokenized once in a thread for
    both factuality chunks and generation. Thread-safe."""

    def __init__(self, tokenizer, size: int = 128):
        self._tok, self._size = tokenizer, size
        self.name = getattr(tokenizer, "name", "memo")
        self._seen: OrderedDict[str, list[bytes]] = OrderedDict()
        self._lock = threading.Lock()

    def token_bytes(self, text: str) -> list[bytes]:
        with self._lock:
            if text in self._seen:
                self._seen.move_to_end(text)
                return self._seen[text]
        out = self._tok.token_bytes(text)
        with self._lock:
            self._seen[text] = out
            while len(self._seen) > self._size:
                self._seen.popitem(last=False)
        return out

    def count(self, text: str) -> int:
        return len(self.token_bytes(text))

    def close(self) -> None:
        self._tok.close()


def _failed(error: str | None) -> bool:
    return bool(error) and not error.startswith(NOT_JUDGED)


def _ratio(removed: int, total: int) -> float | None:
    return removed / total if total else None


class PageEvaluator:
    """Holds the clients (one per model id on the service) and evaluates pages one at a time."""

    def __init__(
        self,
        base_url: str,
        cfg: EvalConfig,
        *,
        cache_path: str | None = None,
        client_kwargs: dict[str, Any] | None = None,
        use_served_tokenizer: bool = True,
    ):
        from udfs.llm.client import LLMClient

        self.cfg = cfg
        self.base_url = base_url
        kw = dict(client_kwargs or {})
        self._clients: dict[tuple[str | None, int], Any] = {}
        # a repeat after the first asks past the request cache of the others (its own scope)
        self._make = lambda model, repeat: LLMClient(
            base_url, model, cache_path=cache_path, cache_scope="" if repeat == 1 else f"repeat {repeat}", **kw
        )
        self.tokenizer = None
        if use_served_tokenizer:
            from udfs.llm.chunking import ServedTokenizer

            self.tokenizer = _Memo(ServedTokenizer(base_url, api_key=kw.get("api_key")))

    def client(self, model: str | None, repeat: int = 1):
        """The client of a model id (None: the service's default) for one repeat of the evaluation."""
        if (model, repeat) not in self._clients:
            self._clients[(model, repeat)] = self._make(model, repeat)
        return self._clients[(model, repeat)]

    def close(self) -> None:
        for c in self._clients.values():
            c.close()
        if self.tokenizer is not None:
            self.tokenizer.close()

    def evaluate(self, page: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
        # One private event loop per evaluator (the client's), reused page after page.
        return self.client(None).run(self.aevaluate(page))

    # ---- verdicts (one model, or a vote) ------------------------------------------------------
    async def _judge(self, agent: str, claims: list, chunks: list[str], repeat: int) -> list[agents.Judged]:
        return await self.cfg.judge.verdicts(
            agent, lambda model: self.client(model, repeat), claims, chunks=chunks, early_exit=self.cfg.early_exit
        )

    def _factuality_chunks(self, text: str) -> list[str]:
        if self.tokenizer is None:
            return [text]
        probe = self.cfg.judge.probe_messages()
        overhead = sum(len(self.tokenizer.token_bytes(m["content"])) for m in probe) + prompts.TEMPLATE_TOKENS
        return prompts.page_chunks(
            text, self.tokenizer, context_window=self.cfg.context_window, output_tokens=8, prompt_tokens=overhead
        )

    # ---- one page --------------------------------------------------------------------------------
    async def aevaluate(self, page: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
        text = page.get("text") or ""
        types = [t for t in (page.get("root_types") or []) if t]
        out: dict[str, list[dict[str, Any]]] = {"markups": [], "triples": [], "scores": []}
        # pages/ keeps the judge's text apart (judge_text); a table without it is judged on text
        fact_text = page.get("judge_text") or text
        # The served tokenizer is a blocking HTTP call: in a thread, so the other pages of the
        # worker's event loop go on meanwhile; generation's own calls find the page text memoized.
        fact_chunks = (
            await asyncio.to_thread(self._factuality_chunks, fact_text) if "factuality" in self.cfg.stages else []
        )
        for repeat in range(1, self.cfg.repeats + 1):
            await self._repeat(page, repeat, text, types, fact_chunks, out)
        return out

    async def _repeat(
        self,
        page: dict[str, Any],
        repeat: int,
        text: str,
        types: list[str],
        fact_chunks: list[str],
        out: dict[str, list[dict[str, Any]]],
    ) -> None:
        """One evaluation of the page by every source (``repeat`` of ``cfg.repeats``; with several,
        each source's rows are named ``source#repeat``, its judge asks afresh past the request
        cache of the other repeats and a sampling generation draws with the repeat as seed), the
        models compared with the human markup of the same repeat."""
        key, url = page["page_key"], page["page_url"]
        # every row of the page says who wrote its human markup, so any source groups by it; a
        # stored human markup replaces the page's, whose generator then says nothing of it
        human_generator = None if HUMAN in (page.get("stored_markups") or {}) else page.get("generator")
        kept_rows: dict[str, list[dict]] = {}
        raw_markups: dict[str, Markup] = {}
        final_markup: dict[str, Any] = {}
        scores: dict[str, dict[str, Any]] = {}
        for source in self.cfg.sources:
            t0 = time.monotonic()
            name = repeat_source(source, repeat, self.cfg.repeats)
            score: dict[str, Any] = {
                "page_key": key,
                "page_url": url,
                "source": name,
                "status": "ok",
                "reason": None,
                "root_types": types,
                "human_generator": human_generator,
                "truncated": page.get("truncated"),
            }
            scores[source] = score
            out["scores"].append(score)
            doc = await self._source_markup(source, page, text, types, score, repeat)
            if doc is None:
                score["status"] = score["status"] if score["status"] != "ok" else "no_markup"
                score["wall_s"] = time.monotonic() - t0
                continue
            try:
                markup = parse_markup(doc)
            except MarkupError as exc:
                score.update(status="markup_error", reason=exc.reason, wall_s=time.monotonic() - t0)
                continue
            rows = await self._stages(key, url, name, markup, fact_chunks, score, repeat)
            for r in rows:
                r["human_generator"] = human_generator
            raw_markups[source] = markup
            kept_rows[source] = [r for r in rows if r["kept"]]
            out["triples"].extend(rows)
            out["markups"].extend(self._staged_markups(key, url, name, markup, rows))
            final_markup[source] = out["markups"][-1]["markup"]
            score["wall_s"] = time.monotonic() - t0
        self._compare(scores, kept_rows, raw_markups, final_markup)

    async def _source_markup(
        self, source: str, page: dict[str, Any], text: str, types: list[str], score: dict[str, Any], repeat: int
    ) -> Any:
        """A source's markup of the page as JSON (None, with ``score``'s reason and status said,
        where it has none): the page's human markup (or a stored human markup, which replaces it),
        a stored source's (``udfs.evaluation.stored``: judged, never generated), or a model's,
        generated from the page text (its tokens and time in ``score``)."""
        stored: dict[str, str] = page.get("stored_markups") or {}
        if source == HUMAN or source not in self.cfg.models:
            given = (
                (stored[HUMAN] if HUMAN in stored else page.get("human_markup"))
                if source == HUMAN
                else stored.get(source)
            )
            what = "human markup" if source == HUMAN else "stored markup"
            try:
                doc = json.loads(given or "null")
            except json.JSONDecodeError as exc:
                score["reason"] = f"{what} is not JSON: {exc}"
                return None
            if doc is None:
                score["reason"] = (
                    "page has no human markup" if source == HUMAN else "no stored markup of this source for this page"
                )
            return doc
        if self.tokenizer is not None:  # memoized now, so generate's own call does not block
            await asyncio.to_thread(self.tokenizer.token_bytes, text)
        gen = await generation.generate(
            self.client(source, repeat),
            types,
            text,
            tokenizer=self.tokenizer,
            context_window=self.cfg.context_window,
            max_tokens=self.cfg.max_tokens,
            temperature=self.cfg.temperature,
            seed=repeat,
        )
        score.update(
            generation_chunks=len(gen.chunks),
            generation_prompt_tokens=gen.prompt_tokens,
            generation_completion_tokens=gen.completion_tokens,
            generation_latency_s=gen.latency_s,
        )
        if gen.markup is None:
            score["reason"] = f"generation failed: {gen.error}"
            score["status"] = "generation_failed"
        return gen.markup

    def _staged_markups(self, key: str, url: str, source: str, markup: Markup, rows: list[dict]) -> list[dict]:
        """The ``markups/`` rows of one source: the raw markup, then what each stage kept."""
        out = [_markup_row(key, url, source, "raw", to_jsonld(markup), len(rows))]
        corrected, fixes = _with_corrections(markup, rows)
        for stage in ("validity", "factuality", "compliance"):
            if stage in self.cfg.stages:
                # from factuality on, a corrected literal is curated with its re-verified value
                staged, fx = (markup, {}) if stage == "validity" else (corrected, fixes)
                alive = {
                    (r["subject"], r["property"], fx.get(_triple_id(r), r["value"])) for r in rows if _alive(r, stage)
                }
                doc_s = to_jsonld(staged, keep=lambda s, p, v: (s, p, _value_text(v)) in alive)
                out.append(_markup_row(key, url, source, stage, doc_s, sum(_alive(r, stage) for r in rows)))
        return out

    def _compare(
        self,
        scores: dict[str, dict[str, Any]],
        kept_rows: dict[str, list[dict]],
        raw_markups: dict[str, Markup],
        final_markup: dict[str, Any],
    ) -> None:
        """Model vs human in each model source's scores row (``scores``: source -> its row, of one
        repeat): MeMR on what the agents kept (their triples rows) and on the raw markups (as read,
        so memr_raw_* are what `python -m udfs.scores.memr HUMAN MODEL` prints for them), the key
        scores and BLINKG."""
        for src, score in scores.items():
            if src == HUMAN or src not in kept_rows or HUMAN not in kept_rows:
                continue
            m = memr(kept_rows[HUMAN], kept_rows[src])
            raw = memr(raw_markups[HUMAN], raw_markups[src])
            score.update(memr_h=m.h, memr_l=m.l, memr_raw_h=raw.h, memr_raw_l=raw.l)
            # Key scores need a reference: a human markup the agents left empty has no keys to find.
            if final_markup.get(HUMAN) and kept_rows[HUMAN]:
                ks = key_scores(
                    final_markup[HUMAN],
                    final_markup[src] or "null",
                    ignore_keys=self.cfg.scores.ignore_keys,
                    max_order=self.cfg.scores.bleu_max_order,
                )
                score.update(
                    key_precision=ks.key_precision,
                    key_recall=ks.key_recall,
                    key_f1=ks.key_f1,
                    value_score=ks.value_score,
                )
                # BLINKG: the model's kept (property, value) pairs matched one-to-one to the human's
                # under the same property, at the [scores] similarity threshold. Precision is
                # undefined (null) when the agents kept nothing of the model's markup.
                bm = matching.match_property_values(
                    [(r["property"], r["value"]) for r in kept_rows[src]],
                    [(r["property"], r["value"]) for r in kept_rows[HUMAN]],
                    **matching.settings(self.cfg.scores),
                )
                score.update(
                    match_precision=bm.precision if bm.n_predicted else None,
                    match_recall=bm.recall,
                    match_f1=bm.f1 if bm.n_predicted else None,
                )

    async def _correct(
        self, rows: list[dict[str, Any]], fact_chunks: list[str], acc: dict[str, Any], repeat: int
    ) -> None:
        """GraphCorrect on the claims judged non-factual: a corrected claim (the text's value,
        re-verified) passes factuality with ``corrected`` set and goes on to compliance with its
        new value; ``value`` keeps what the source wrote, the curated markups (factuality on) carry
        the corrected literal."""
        # a node's row is not a claim: it follows the claims inside the node (follow_nodes)
        flagged = [r for r in rows if r.get("factual") is False and r["_claim"] is not None]
        distinct = list(dict.fromkeys(r["_claim"] for r in flagged))
        if not distinct:
            return
        judge = self.cfg.judge
        model, strategy = agents.voter_model_and_strategy((judge.verdict_models or [None])[0], judge.strategy)
        fixes = dict(
            zip(
                distinct,
                await judge.correct(
                    self.client(model, repeat), fact_chunks, distinct, early_exit=self.cfg.early_exit, strategy=strategy
                ),
            )
        )
        for f in fixes.values():
            if f.verdict is not None:
                acc["verdict_requests"] += f.verdict.requests
                acc["verdict_cache_hits"] += f.verdict.cache_hits
                acc["verdict_prompt_tokens"] += f.verdict.prompt_tokens
                acc["verdict_cached_prompt_tokens"] += f.verdict.cached_prompt_tokens
        for r in flagged:
            f = fixes[r["_claim"]]
            r["corrected_value"], r["corrected"] = f.proposed, f.corrected
            if f.corrected:
                r["factual"], r["factual_score"], r["factual_early"] = True, f.verdict.score, f.verdict.early
                maps = self.cfg.judge.maps.get("factuality")
                r["factual_p"] = None if f.verdict.early else calibration.apply_map(maps, f.verdict.score)
                r["_claim"] = dataclasses.replace(r["_claim"], value=f.proposed, value_type=None)

    async def _stages(
        self, key: str, url: str, source: str, markup, fact_chunks: list[str], score: dict[str, Any], repeat: int
    ) -> list[dict[str, Any]]:
        from udfs.agents import validity

        checker = validity.agent(
            self.cfg.validity_engine, self.cfg.validity_strict, self.cfg.validity_vocab, self.cfg.validity_mode
        )
        verdicts = checker.validate(markup).verdicts
        claims = agents.claims_of(markup)
        inside = agents.nested_claims(markup, claims)
        rows = []
        for v, t, c in zip(verdicts, markup.triples(), claims):
            rows.append(
                {
                    "page_key": key,
                    "page_url": url,
                    "source": source,
                    "subject": v.subject,
                    "property": v.property,
                    "value": _value_text(t.value),
                    "claim": claim_text(markup, t),
                    "value_kind": v.value_kind,
                    "entity_type": v.entity_type,
                    "valid": v.valid if "validity" in self.cfg.stages else None,
                    "valid_reason": v.reason or None,
                    "validity_rule": v.rule,
                    "_claim": c,
                    "model": None,
                    "latency_s": 0.0,
                    "prompt_tokens": 0,
                    "cached_prompt_tokens": 0,
                    "completion_tokens": 0,
                }
            )
        acc = {
            "verdict_requests": 0,
            "verdict_cache_hits": 0,
            "verdict_prompt_tokens": 0,
            "verdict_cached_prompt_tokens": 0,
            "verdict_latency_s": 0.0,
        }
        for stage, col in (("factuality", "factual"), ("compliance", "compliant")):
            if stage not in self.cfg.stages:
                continue
            await self._verdict_stage(stage, col, rows, fact_chunks, acc, repeat)
            if stage == "factuality" and self.cfg.correction:
                await self._correct(rows, fact_chunks, acc, repeat)
            follow_nodes(rows, inside, stage, _previous(stage, self.cfg.stages))
        last = [s for s in STAGES if s in self.cfg.stages]
        for r in rows:
            r.pop("_claim")
            r["kept"] = _alive(r, last[-1]) if last else True
        score.update(**self._stage_counts(rows), factuality_chunks=len(fact_chunks), **acc)
        return rows

    async def _verdict_stage(
        self,
        stage: str,
        col: str,
        rows: list[dict[str, Any]],
        fact_chunks: list[str],
        acc: dict[str, Any],
        repeat: int,
    ) -> None:
        """One verdict agent over the rows alive after the stage before it: each distinct claim
        judged once (up to ``max_claims``; the rest marked not judged), its verdict, score,
        probability, votes and error on every row that makes it, a request's cost booked on the
        first row it answers and summed in ``acc``."""
        todo = [r for r in rows if _alive(r, _previous(stage, self.cfg.stages))]
        distinct = list(dict.fromkeys(r["_claim"] for r in todo if r["_claim"] is not None))
        over = distinct[self.cfg.max_claims :] if self.cfg.max_claims else []
        asked = distinct[: self.cfg.max_claims] if self.cfg.max_claims else distinct
        judged = dict(
            zip(
                asked,
                await self._judge(stage, asked, fact_chunks if stage == "factuality" else [], repeat),
            )
        )
        for j in judged.values():
            acc["verdict_requests"] += j.requests
            acc["verdict_cache_hits"] += j.cache_hits
            acc["verdict_prompt_tokens"] += j.prompt_tokens
            acc["verdict_cached_prompt_tokens"] += j.cached_prompt_tokens
            acc["verdict_latency_s"] += j.latency_s
        seen: set = set()
        for r in todo:
            c = r["_claim"]
            if c is None:
                continue
            if c in over:
                r[col], r[f"{col}_error"] = None, f"{NOT_JUDGED} max_claims={self.cfg.max_claims}"
                continue
            j = judged[c]
            r[f"{col}_score"], r[col] = j.score, j.passed
            # a map is fitted on full scores, so a score decided early has no probability
            r[f"{col}_p"] = None if j.early else calibration.apply_map(self.cfg.judge.maps.get(stage), j.score)
            if stage == "factuality":
                r["factual_early"] = j.early
            r[f"{col}_error"] = j.error
            r[f"{col}_votes"] = dict(j.votes) or None
            if stage == "compliance":
                # the tie mark is in the votes (the judge's key); the note says what the voters noted
                r["compliant_note"] = (
                    "; ".join(x for x in (j.note or "").split("; ") if x and x != agents.TIE_NOTE) or None
                )
            if c not in seen:  # a request's cost is booked once, on the first row it answers
                seen.add(c)
                r["model"] = r["model"] or j.model
                r["latency_s"] += j.latency_s
                r["prompt_tokens"] += j.prompt_tokens
                r["cached_prompt_tokens"] += j.cached_prompt_tokens
                r["completion_tokens"] += j.completion_tokens

    def _stage_counts(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        """A source's counts after each stage and its rejection rates (scores' columns)."""
        n = len(rows)
        n_valid = sum(_alive(r, "validity") for r in rows) if "validity" in self.cfg.stages else n
        n_fact = sum(_alive(r, "factuality") for r in rows) if "factuality" in self.cfg.stages else n_valid
        n_comp = sum(_alive(r, "compliance") for r in rows) if "compliance" in self.cfg.stages else n_fact
        return dict(
            n_triples=n,
            n_valid=n_valid,
            n_corrected=sum(bool(r.get("corrected")) for r in rows),
            n_factual=n_fact,
            n_compliant=n_comp,
            # errors are failed verdicts; claims left unjudged on purpose (max_claims) are not
            n_factual_errors=sum(_failed(r.get("factual_error")) for r in rows),
            n_compliance_errors=sum(_failed(r.get("compliant_error")) for r in rows),
            n_undefined_properties=sum(bool(r.get("compliant_note")) for r in rows),
            rejection_validity=_ratio(n - n_valid, n),
            rejection_factuality=_ratio(n_valid - n_fact, n_valid),
            rejection_compliance=_ratio(n_fact - n_comp, n_fact),
            rejection_rate=_ratio(n - n_comp, n),
            **(_paper_counts(rows, self.cfg.stages) if self.cfg.validity_mode == "paper" else {}),
        )


def _paper_counts(rows: list[dict[str, Any]], stages: list[str]) -> dict[str, int]:
    """The n_*_paper columns: the rows grouped as the paper counts triples (leaf values only, one
    group per (property, value, entity type)); a group is alive after a stage when one of its rows
    is, as :func:`udfs.agents.validity.paper_triples` keeps a string the filtered markup still holds.
    A stage not run keeps what the stage before it kept."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        if r["value_kind"] != "entity":
            groups.setdefault((r["property"], r["value"], r["entity_type"] or ""), []).append(r)
    out = {"n_triples_paper": len(groups)}
    for stage, col in zip(STAGES, ("n_valid_paper", "n_factual_paper", "n_compliant_paper")):
        ran = [s for s in STAGES[: STAGES.index(stage) + 1] if s in stages]
        out[col] = sum(any(_alive(r, ran[-1] if ran else None) for r in g) for g in groups.values())
    return out


def follow_nodes(rows: list[dict[str, Any]], inside: dict[int, list[int]], stage: str, previous: str | None) -> None:
    """Decide ``stage`` for the rows whose value is an unnamed node (``inside``: row index -> the
    rows of the claims inside that node, ``udfs.agents.verdicts.nested_claims``): such a row
    passes while any claim inside passes the stage, and fails when none does. A row that did not
    reach the stage (``previous``), or a node with no claim inside, is left as it is (not judged,
    so it stays)."""
    col = _COL[stage]
    for i, deps in inside.items():
        r = rows[i]
        if not deps or not _alive(r, previous):
            continue
        r[col] = any(_alive(rows[j], stage) for j in deps)


def _previous(stage: str, stages: list[str]) -> str | None:
    before = [s for s in STAGES[: STAGES.index(stage)] if s in stages]
    return before[-1] if before else None


_COL = {"validity": "valid", "factuality": "factual", "compliance": "compliant"}


def _alive(row: dict[str, Any], stage: str | None) -> bool:
    """Did the row pass ``stage`` and every stage before it?"""
    if stage is None:
        return True
    for s in STAGES[: STAGES.index(stage) + 1]:
        if row.get(_COL[s]) is False or (
            s != "validity" and _COL[s] in row and row[_COL[s]] is None and f"{_COL[s]}_error" in row
        ):
            return False
    return True


def _with_corrections(markup: Markup, rows: list[dict[str, Any]]) -> tuple[Markup, dict[tuple, str]]:
    """The markup with each corrected literal replaced by its re-verified value, and the
    replacements made ((subject, property, old value) -> new value). A corrected reference to a
    described entity is not replaced (its node would be lost); its row still says corrected."""
    wanted = {_triple_id(r): r["corrected_value"] for r in rows if r.get("corrected")}
    if not wanted:
        return markup, {}
    applied: dict[tuple, str] = {}
    entities: dict[str, Entity] = {}
    for eid, ent in markup.entities.items():
        new = entities[eid] = Entity(eid, list(ent.types))
        for p, vs in ent.properties.items():
            for v in vs:
                fix = wanted.get((eid, p, _value_text(v))) if isinstance(v, Literal) else None
                if fix is not None:
                    applied[(eid, p, _value_text(v))] = fix
                    v = Literal(fix, language=v.language)
                new.add(p, v)
    return Markup(entities, list(markup.roots), list(markup.notes)), applied


def _value_text(v) -> str:
    return v.text if isinstance(v, Literal) else v.id


def _triple_id(r: dict[str, Any]) -> tuple:
    return (r["subject"], r["property"], r["value"])


def _markup_row(key: str, url: str, source: str, stage: str, doc: Any, n: int) -> dict[str, Any]:
    return {
        "page_key": key,
        "page_url": url,
        "source": source,
        "stage": stage,
        "markup": json.dumps(doc, ensure_ascii=False) if doc is not None else None,
        "n_triples": n,
    }


def to_table(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    return pa.Table.from_pylist([{f.name: r.get(f.name) for f in schema} for r in rows], schema=schema)
