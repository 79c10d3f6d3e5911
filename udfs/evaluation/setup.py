"""An evaluate run's settings from its job's flags and sections (``jobs/evaluate.py``): the models
that generate and the one that answers the verdicts, the ``EvalConfig`` (what changes an answer)
and the ``RunOptions`` (how the run is carried out)."""

from __future__ import annotations

from typing import Any

from udfs.agents.judge import build_judge
from udfs.evaluation.evaluator import HUMAN, EvalConfig
from udfs.evaluation.run import RunOptions
from udfs.llm.client import first_model


def endpoint_models(args, given: frozenset, judge_section: Any, url: str, key: str) -> tuple[list[str], str | None]:
    """The models that generate markup and the service's default model (which answers the verdicts
    when ``[judge] verdict_models`` names none: its id keys the calibration entries). ``--markups``
    alone judges what it is given: models generate only when ``--generators`` is given. Raises
    ``LLMError`` when the endpoint does not answer."""
    generate = args.generation and (not args.markups or "generators" in given)
    models = [] if not generate else (args.generators or [first_model(url, timeout_s=30, api_key=key or None)])
    served = models[0] if generate and not args.generators else None
    if served is None and not judge_section.verdict_models and {"factuality", "compliance"} & set(args.stages):
        served = first_model(url, timeout_s=30, api_key=key or None)
    return models, served


def eval_config(job, models: list[str], stored: list[str], served: str | None) -> EvalConfig:
    """The EvalConfig of ``job``'s run: its flags (defaults: [evaluate], [judge]), the judge
    (``udfs.agents.judge.build_judge``: each threshold with where it came from), the validity agent
    of [validity] and the scores' settings of [scores]; ``models`` generate markup, ``stored`` are
    the sources of ``--markups`` (``human`` among them replaces the human markup, not a source),
    ``served`` the service's default model."""
    a, v = job.args, job.config.validity
    judge = build_judge(job.sections["judge"], config_file=job.config.path, given=job.given, served_model=served)
    return EvalConfig(
        stages=list(a.stages),
        judge=judge,
        context_window=a.context_window,
        max_tokens=a.max_tokens,
        max_claims=a.max_claims,
        early_exit=a.early_exit,
        validity_engine=v.engine,
        validity_strict=v.strict,
        validity_vocab=v.vocab,
        validity_mode=v.mode,
        scores=job.config.scores,
        models=list(models),
        sources=[HUMAN, *models, *(s for s in stored if s != HUMAN)],
        correction=a.correct,
        repeats=a.repeats,
        temperature=a.temperature,
    )


def run_options(args, url: str, key: str) -> RunOptions:
    """The RunOptions of the flags."""
    return RunOptions(
        limit=args.limit,
        order=args.order,
        executor=args.executor,
        workers=args.workers,
        part_pages=args.part_pages,
        part_rows=args.part_rows,
        base_url=url,
        api_key=key,
        timeout_s=args.timeout_s,
        max_in_flight=args.max_in_flight,
        cache=args.cache,
        overwrite=args.overwrite,
    )
