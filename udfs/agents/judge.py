"""The judge: the verdict agents as one object, from configuration to run record.

:func:`build_judge` makes it, once per run, from ``[judge]`` (``udfs.runtime.config.JudgeConf``,
the flags over it) and the calibration entry that matches it; ``jobs/evaluate.py``,
``jobs/agents_bench.py`` and the experiments all build theirs with it. A :class:`Judge` owns:

* the questions of each agent (``udfs.agents.questions``: the registry) and the order they are
  asked in (:meth:`Judge.order`): the first question about the text, then those about the
  property (``fits``), then the other questions about the text;
* the gate: the first text question gates the other text questions, asked only of a claim it
  scores at least ``gate``; below it they score 0 (:data:`GATED`);
* early exit: a claim is asked no more questions about a chunk once its verdict there is decided
  whatever the rest would answer (:func:`decided`): the verdict is the one asking every question
  gives, the score that of the questions answered (``Judged.early``);
* the follow-up requests: ``extract-soft-all-near``'s requests asked again where its answer is
  none of a value the text states, and ``extract-other`` asked past the value it read off;
* the score of a claim about a chunk (:func:`combined_score`) and the OR over chunks: chunks in
  order, a claim some chunk supports is not asked again, its score the best over the chunks;
* the accounting of every request (tokens, time, cache hits) on the claim it was asked for;
* each agent's threshold, one value with a typed origin (``udfs.runtime.judge_record``), in
  this order of precedence: the command line, a number written in the configuration file, the
  calibration entry (where the configuration says ``"calibrated"``), the configured fallback;
* the run record's judge block (:meth:`Judge.record`) and the identity that keys a run's
  results (:meth:`Judge.identity`): the questions, their prompts' fingerprints, the thresholds
  and the entries taken, not the whole calibration file.

Every model call goes through ``udfs.llm.client.LLMClient``; claims and votes are
``udfs.agents.verdicts``'.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from udfs.agents import calibration as cal
from udfs.agents.evidence import missed_stated_value, other_stated_value
from udfs.agents.prompts import STRATEGIES, fence, load_prompt, unfence
from udfs.agents.questions import (
    AGAIN,
    AGENTS,
    COMPLIANCE,
    FACTUALITY,
    NOT_ASKED,
    SHARED_PREFIX,
    Claim,
    Question,
    check_questions,
    compliance_messages,
    prompt_fingerprint,
    questions_key,
)
from udfs.agents.verdicts import Judged, Voter, vote, voter_model_and_strategy
from udfs.runtime.config import CALIBRATED, JudgeConf
from udfs.runtime.judge_record import (
    CALIBRATION,
    COMMAND_LINE,
    CONFIG_FILE,
    FALLBACK,
    AgentRecord,
    AppliedThreshold,
    JudgeRecord,
    Origin,
    PassedOver,
)
from udfs.runtime.paths import project_file, shown_path
from udfs.schemaorg.vocab import load_vocabulary

GATED = (0.0, None, None)  # a text question not asked below the gate: it scores 0


# ---- building it ---------------------------------------------------------------------------------
def build_judge(
    conf: JudgeConf,
    *,
    config_file: str,
    given: Sequence[str] = (),
    served_model: str | None = None,
    apply_calibration: bool = True,
    prompts_dir: str | None = None,
) -> Judge:
    """The judge of ``conf``: its questions checked against the registry, each threshold resolved
    (module docstring) and the calibration entries it takes. ``config_file``: the file ``conf``
    was read from (a threshold written there as a number is that file's); ``given``: the settings
    (``JudgeConf`` field names) the command line gave; ``served_model``: the model that answers
    where ``conf.verdict_models`` names none (None: not known, so no entry can match);
    ``apply_calibration`` False (a calibration fits thresholds, it does not apply one): no entry is
    taken, said so in the record. The calibration file ``conf.calibration`` names is read through
    ``udfs.agents.calibration.load_calibration``: one that breaks its schema, or a path that is not
    a file, is a ConfigError naming it, never the fallback (a job's preflight checks it sooner with
    ``check_calibration``)."""
    if conf.strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {conf.strategy!r}: one of {', '.join(STRATEGIES)}")
    questions = {
        "factuality": check_questions(conf.factuality_questions, "factuality"),
        "compliance": check_questions(conf.compliance_questions, "compliance"),
    }
    gates = {"factuality": conf.factuality_gate, "compliance": 0.0}
    keys = {a: questions_key(questions[a], a, gates[a]) for a in AGENTS}
    prints = {a: prompt_fingerprint(a, conf.strategy, prompts_dir, questions[a]) for a in AGENTS}
    models = list(conf.verdict_models) or [served_model]
    path = project_file(conf.calibration) if conf.calibration else ""
    found = cal.match(
        path if apply_calibration else "",
        models,
        conf.strategy,
        {a: cal.layout_key(keys[a]) for a in AGENTS},
        prints,
        judge=conf.judge_model or None,
    )
    agents = {}
    for a in AGENTS:
        threshold, entry = _threshold(conf, a, config_file, set(given), found, apply_calibration)
        order = tuple(q.name for q in question_order(questions[a])) if a == "factuality" else questions[a]
        agents[a] = AgentRecord(
            questions[a], order, keys[a], prints[a], gates[a], threshold, entry and cal.summary(entry)
        )
    record = JudgeRecord(
        strategy=conf.strategy,
        verdict_models=tuple(conf.verdict_models),
        judge_model=conf.judge_model or None,
        calibration_file=shown_path(path) if path else None,
        agents=agents,
        served_model=None if conf.verdict_models else served_model,
    )
    taken = {a: found.entries[a] for a in AGENTS if agents[a].entry is not None}
    return Judge(
        record=dataclasses.replace(record, identity=_identity(record, taken)),
        maps={a: e["knots"] for a, e in taken.items() if (e.get("knots") or {}).get("x")},
        prompts_dir=prompts_dir,
    )


def _threshold(
    conf: JudgeConf, agent: str, config_file: str, given: set[str], found: cal.Match, applying: bool
) -> tuple[AppliedThreshold, dict[str, Any] | None]:
    """An agent's threshold and the calibration entry taken for it (None where none is): the first
    source in order of precedence that gives a number, and why each source above it did not."""
    setting = f"{agent}_threshold"
    value = getattr(conf, setting)
    entry = found.entries.get(agent)
    where = f"[judge] {setting}"
    over: list[PassedOver] = []
    if setting in given and value != CALIBRATED:
        origin = Origin(COMMAND_LINE, flag="--" + setting.replace("_", "-"))
        over.append(PassedOver(CONFIG_FILE, f"{shown_path(config_file)} {where}: the command line wins"))
    else:
        over.append(PassedOver(COMMAND_LINE, "given as calibrated" if setting in given else "not given"))
        if setting not in given and value != CALIBRATED:
            origin = Origin(CONFIG_FILE, file=shown_path(config_file), setting=where)
        else:
            if setting not in given:
                over.append(PassedOver(CONFIG_FILE, f'{shown_path(config_file)} {where} = "{CALIBRATED}"'))
            if entry is not None:
                return AppliedThreshold(float(entry["threshold"]), _entry_origin(found, entry), tuple(over)), entry
            why = found.why.get(agent) if applying else "not applied: calibrate fits thresholds on the raw scores"
            over.append(PassedOver(CALIBRATION, why or "no entry"))
            value = conf.fallback_threshold
            origin = Origin(FALLBACK, file=shown_path(config_file), setting="[judge] fallback_threshold")
    if entry is not None:  # a written value wins: the entry's map and test counts describe another threshold
        over.append(PassedOver(CALIBRATION, f"entry {cal.entry_id(entry)} matched; a written threshold wins"))
    return AppliedThreshold(float(value), origin, tuple(over)), None


def _entry_origin(found: cal.Match, entry: dict[str, Any]) -> Origin:
    fit = entry.get("fit") or {}
    return Origin(
        CALIBRATION,
        file=shown_path(found.path),
        entry=cal.entry_id(entry),
        fit={
            "n": fit.get("n"),
            "groups": fit.get("groups"),
            "ground_truth_sha256": entry.get("ground_truth_sha256"),
            "prompts_sha256": entry.get("prompts_sha256"),
            "created_at": entry.get("created_at"),
        },
    )


def _identity(record: JudgeRecord, taken: dict[str, dict[str, Any]]) -> str:
    """sha256 of what changes the judge's answers or its output columns: strategy, models, per
    agent the questions, the gate, the prompts' fingerprint and the threshold, and the content of
    each entry taken (its map fills the ``*_p`` columns). Not where a value came from, not the
    rest of the calibration file."""
    what = {
        "strategy": record.strategy,
        "verdict_models": list(record.verdict_models),
        "served_model": record.served_model,
        "judge_model": record.judge_model,
        "agents": {
            a: {
                "questions": list(r.questions),
                "gate": r.gate,
                "prompts": r.prompts_sha256,
                "threshold": r.threshold.value,
            }
            for a, r in record.agents.items()
        },
        "entries": {a: json.dumps(e, sort_keys=True) for a, e in sorted(taken.items())},
    }
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()


# ---- the judge -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Judge:
    """The verdict agents of one run (module docstring). Made by :func:`build_judge`; its settings
    are its ``record`` (``udfs.runtime.judge_record.JudgeRecord``), what the run record keeps."""

    record: JudgeRecord
    maps: dict[str, dict[str, list[float]]] = field(default_factory=dict)  # agent -> the entry's map
    prompts_dir: str | None = None

    # ---- settings ------------------------------------------------------------------------------
    @property
    def strategy(self) -> str:
        return self.record.strategy

    @property
    def verdict_models(self) -> list[str]:
        return list(self.record.verdict_models)

    @property
    def judge_model(self) -> str | None:
        return self.record.judge_model

    def threshold(self, agent: str) -> float:
        return self.record.threshold(agent)

    def questions(self, agent: str) -> list[str]:
        """The questions ``agent`` asks of every claim, as configured."""
        return list(self.record.agents[agent].questions)

    def gate(self, agent: str = "factuality") -> float:
        return self.record.agents[agent].gate

    def key(self, agent: str) -> str:
        """The name of the agent's questions in calibration files and result folders."""
        return self.record.agents[agent].key

    def identity(self) -> str:
        return self.record.identity

    def to_record(self) -> dict[str, Any]:
        """The run record's judge block (``udfs.runtime.judge_record``: each applied value once)."""
        return self.record.to_dict()

    def order(self) -> list[Question]:
        """The factuality questions in the order they are asked (:func:`question_order`)."""
        return [FACTUALITY[q] for q in self.record.agents["factuality"].order]

    def gating(self) -> Question | None:
        """The question that gates the others (None: no gate)."""
        stated = [q for q in self.order() if not q.fits]
        return stated[0] if stated and self.gate() > 0 else None

    def below_gate(self, score: float | None) -> bool:
        return score is not None and score < self.gate()

    @staticmethod
    def gate_zeroes(q: Question) -> bool:
        """Whether a question after the gating one scores 0 (``GATED``, not asked) for a claim
        below the gate: a question about the text that does not ask past a value read off (that
        one does not apply there)."""
        return not q.fits and not q.asks_past

    def with_threshold(self, agent: str, value: float) -> Judge:
        """This judge at another threshold for ``agent`` (a study sweeping thresholds), the origin
        said to be the caller's; no entry is taken for that agent."""
        rec = self.record.agents[agent]
        applied = AppliedThreshold(float(value), Origin(COMMAND_LINE, flag=f"{agent} threshold of the caller"))
        agents = {**self.record.agents, agent: dataclasses.replace(rec, threshold=applied, entry=None)}
        record = dataclasses.replace(self.record, agents=agents)
        taken = {a: r.entry for a, r in agents.items() if r.entry is not None}
        maps = {a: m for a, m in self.maps.items() if a != agent}
        return dataclasses.replace(
            self, record=dataclasses.replace(record, identity=_identity(record, taken)), maps=maps
        )

    def probe_messages(self) -> list[dict[str, str]]:
        """The plain factuality question's request about an empty text and a 40-character value:
        what the page chunks leave room for (``udfs.evaluation.evaluator``)."""
        return FACTUALITY["plain"].messages("", Claim("p", "v" * 40, "Thing"), self.strategy, self.prompts_dir)

    # ---- verdicts ------------------------------------------------------------------------------
    def voter(
        self,
        agent: str,
        client,
        *,
        chunks: Sequence[str] = (),
        early_exit: bool,
        vocab=None,
        strategy: str | None = None,
    ) -> Voter:
        """The verdict function of one voter (a client, and a strategy where the voter names one):
        :meth:`factuality` against ``chunks`` or :meth:`compliance` (``vocab``: where compliance
        reads the definitions, default schema.org's)."""
        strategy = strategy or self.strategy
        if agent == "factuality":
            return lambda claims: self.factuality(
                client, list(chunks), claims, early_exit=early_exit, strategy=strategy
            )
        return lambda claims: self.compliance(client, claims, vocab=vocab, strategy=strategy)

    async def verdicts(
        self,
        agent: str,
        client_of,
        claims: Sequence[Claim],
        *,
        chunks: Sequence[str] = (),
        early_exit: bool,
        vocab=None,
        voters: Sequence[str | None] | None = None,
    ) -> list[Judged]:
        """One verdict per claim by the judge's verdict models (``voters``: the names of the models
        that answer where the judge's own list is left to the service, e.g. the served model's id;
        ``client_of(model)``: the client of a model id, None for the service's default): one answers
        alone, several vote with the judge model breaking ties (``udfs.agents.verdicts.vote``)."""

        def voter(name: str | None) -> Voter:
            model, strategy = voter_model_and_strategy(name, self.strategy)
            return self.voter(
                agent, client_of(model), chunks=chunks, early_exit=early_exit, vocab=vocab, strategy=strategy
            )

        return await vote(voter, list(voters or self.verdict_models or [None]), claims, judge=self.judge_model)

    async def factuality(
        self, client, chunks: Sequence[str], claims: Sequence[Claim], *, early_exit: bool, strategy: str | None = None
    ) -> list[Judged]:
        """One verdict per claim, the OR over ``chunks``: chunks in order, a claim some chunk
        already supports is not asked again, its score the best of its chunks'. A claim that no
        chunk could score (a question without an answer, or none applies) has ``error``."""
        strategy = strategy or self.strategy
        threshold = self.threshold("factuality")
        out = [Judged(None, None) for _ in claims]
        errors: list[list[str]] = [[] for _ in claims]
        for chunk in chunks or [""]:
            pending = [i for i, j in enumerate(out) if not j.passed]
            if not pending:
                break
            asked = _Chunk(self, client, chunk, [claims[i] for i in pending], strategy, early_exit)
            await asked.ask()
            for k, i in enumerate(pending):
                j = out[i]
                got = asked.answered(k)
                for _, _, c in got.values():
                    if c is not None:  # a score the gate gave has no request
                        account(j, c)
                for c in asked.follow_ups[k]:
                    account(j, c)
                if not got or any(score is None for score, _, _ in got.values()):
                    errors[i] += [err or "no verdict" for score, err, _ in got.values() if score is None] or [
                        "no question applies"
                    ]
                    continue
                score = combined_score({q: score for q, (score, _, _) in got.items()})
                if j.score is None or score > j.score:
                    j.score, j.early = score, k in asked.early
                j.passed = j.score >= threshold
        for j, errs in zip(out, errors):
            if j.score is None:
                j.error = "; ".join(sorted(set(errs))) or "no verdict"
        return out

    async def compliance(
        self, client, claims: Sequence[Claim], *, vocab=None, strategy: str | None = None
    ) -> list[Judged]:
        """One verdict per claim against the property's definition, the mean of the compliance
        questions' scores; no definition: kept and marked, nothing asked. A question without an
        answer leaves the claim unscored, with the error."""
        strategy = strategy or self.strategy
        vocab = vocab or load_vocabulary()
        qs = [COMPLIANCE[q] for q in self.questions("compliance")]
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
                [compliance_messages(claims[i], d, strategy, self.prompts_dir, q.name) for i, d in asked],
                [claims[i] for i, _ in asked],
            )
            for q in qs
        ]
        for k, (i, _) in enumerate(asked):
            j = out[i]
            got = [a[k] for a in answers]
            for _, _, c in got:
                account(j, c)
            if any(score is None for score, _, _ in got):
                j.error = "; ".join(sorted({err or "no verdict" for score, err, _ in got if score is None}))
                continue
            j.score = sum(score for score, _, _ in got) / len(got)
            j.passed = j.score >= self.threshold("compliance")
        return out

    async def correct(
        self,
        client,
        chunks: Sequence[str],
        claims: Sequence[Claim],
        *,
        early_exit: bool,
        strategy: str | None = None,
        max_tokens: int = 128,
    ) -> list[Correction]:
        """GraphEval's GraphCorrect: the value of each claim asked from the text (the first chunk that
        states one), then the corrected claim judged again by :meth:`factuality` (the same questions,
        threshold, gate and early exit); only the flagged claim changes."""
        proposed: dict[int, str] = {}
        errors: dict[int, str] = {}
        for chunk in chunks or [""]:
            pending = [i for i in range(len(claims)) if i not in proposed]
            if not pending:
                break
            answers = await client.chat_many(
                [
                    {
                        "messages": correction_messages(chunk, claims[i], self.prompts_dir),
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
            zip(proposed, await self.factuality(client, chunks, fixed, early_exit=early_exit, strategy=strategy))
        )
        out = []
        for i, claim in enumerate(claims):
            if i in proposed:
                j = verdicts[i]
                out.append(Correction(claim, proposed[i], j, bool(proposed[i] != claim.value and j.passed), j.error))
            else:
                out.append(Correction(claim, None, None, False, errors.get(i) or "the text states no value"))
        return out


# ---- one chunk's questions -----------------------------------------------------------------------
class _Chunk:
    """The factuality questions about one chunk for the claims still pending, in the judge's
    order: per question, which claims are asked (the gate, early exit), their requests (the second
    round asks past the value read off), the follow-up requests, and the answers kept per question
    (question -> (score, error, completion) per claim; ``NOT_ASKED`` where it was not)."""

    def __init__(self, judge: Judge, client, chunk: str, claims: list[Claim], strategy: str, early_exit: bool):
        self.judge, self.client, self.chunk, self.claims = judge, client, chunk, claims
        self.strategy, self.early_exit = strategy, early_exit
        self.qs = judge.order()
        self.gating = judge.gating()
        self.asked: dict[str, list] = {}
        self.live = set(range(len(claims)))  # the claims still asked
        self.early: set[int] = set()  # those decided before the last question
        self.gated: set[int] = set()  # those below the gate: the text questions after it score 0
        self.follow_ups: list[list[Any]] = [[] for _ in claims]  # completions asked again, per claim

    def answered(self, k: int) -> dict[str, Any]:
        """The (score, error, completion) of each question asked of the ``k``-th claim."""
        return {q: got[k] for q, got in self.asked.items() if got[k] is not NOT_ASKED}

    def left(self, k: int, n: int) -> tuple[dict[str, Any], list[Question]]:
        """The answers of the ``k``-th claim and the questions it may still be asked, from the ``n``-th."""
        got, rest = self.answered(k), self.qs[n:]
        if k in self.gated:
            got |= {q.name: GATED for q in rest if self.judge.gate_zeroes(q)}
            rest = [q for q in rest if q.fits]
        return got, rest

    async def ask(self) -> None:
        threshold = self.judge.threshold("factuality")
        for n, q in enumerate(self.qs):
            if self.early_exit:
                done = {k for k in self.live if decided(*self.left(k, n), threshold)}
                self.early |= done
                self.live -= done
            if not self.live:
                break
            asks = self.live if q.fits else self.live - self.gated
            past = self._read_values() if q.asks_past else [None] * len(self.claims)
            messages = [
                q.messages(self.chunk, c, self.strategy, self.judge.prompts_dir, p) if k in asks else None
                for k, (c, p) in enumerate(zip(self.claims, past))
            ]
            self.asked[q.name] = await q.answer.scores(self.client, messages, self.claims, self.chunk)
            if q.again:
                await self._again(q)
            if q is self.gating:
                got = self.asked[q.name]
                self.gated = {k for k in self.live if self.judge.below_gate(got[k][0])}
        if self.gated:  # the text questions the gate left unasked score 0
            for q in self.qs[self.qs.index(self.gating) + 1 :]:
                if self.judge.gate_zeroes(q):
                    got = self.asked.setdefault(q.name, [NOT_ASKED] * len(self.claims))
                    for k in self.gated:
                        got[k] = GATED

    def _read_values(self) -> list[str | None]:
        """Per claim, the other value the chunk states that the value-reading question answered
        (``udfs.agents.evidence.other_stated_value``), which ``asks_past`` questions ask past."""
        read = next(self.asked[q.name] for q in self.qs if q.reads_value)
        return [
            other_stated_value(c.text, claim.value, self.chunk) if c is not None and c.ok else None
            for (_, _, c), claim in zip(read, self.claims)
        ]

    async def _again(self, q: Question) -> None:
        """``q``'s follow-up requests (``udfs.agents.questions.AGAIN``) where its answer is none of
        a value the chunk states (``udfs.agents.evidence.missed_stated_value``): the claim's score
        is the largest of its own and theirs (the chunk states the value, so a first token's share
        counts); the completion kept is ``q``'s (it is what ``extract-other`` asks past). A request
        asked again without an answer leaves the claim unscored with its error."""
        read = self.asked[q.name]
        missed = {
            k
            for k, (score, _, c) in enumerate(read)
            if score is not None and missed_stated_value(c.text, self.claims[k].value, self.chunk)
        }
        scored = list(read)
        for request in (AGAIN[a] for a in q.again):
            got = await request.answer.scores(
                self.client,
                [
                    request.messages(self.chunk, c, self.judge.prompts_dir) if k in missed else None
                    for k, c in enumerate(self.claims)
                ],
                self.claims,
                self.chunk,
            )
            for k in missed:
                score, error, c = got[k]
                if c is None:  # not asked (no excerpt)
                    continue
                self.follow_ups[k].append(c)
                if scored[k][0] is not None:
                    scored[k] = (
                        (None, error, read[k][2]) if score is None else (max(scored[k][0], score), None, read[k][2])
                    )
        self.asked[q.name] = scored


# ---- the rules -----------------------------------------------------------------------------------
def question_order(questions: Sequence[str]) -> list[Question]:
    """Factuality questions in the order they are asked: the first question about the text (it
    gates the others), the questions about the property (a claim the gate leaves no chance is not
    asked them), then the other text questions, those that ask past a value read off last."""
    given = [FACTUALITY[q] for q in questions]
    stated = sorted((q for q in given if not q.fits), key=lambda q: q.asks_past)
    return stated[:1] + [q for q in given if q.fits] + stated[1:]


def account(j: Judged, c) -> None:
    """Count one completion's request on the verdict it was asked for."""
    j.requests += 1
    j.model = j.model or c.model
    if c.from_cache:  # the usage a cached answer carries is that of the request that first got it
        j.cache_hits += 1
        return
    j.prompt_tokens += c.prompt_tokens
    j.cached_prompt_tokens += c.cached_prompt_tokens
    j.completion_tokens += c.completion_tokens
    j.latency_s += c.latency_s


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


__all__ = [
    "GATED",
    "SHARED_PREFIX",
    "Correction",
    "Judge",
    "build_judge",
    "combined_score",
    "correction_messages",
    "decided",
]
