"""The agents benchmark's steps' arguments from its job's flags and sections
(``jobs/agents_bench.py``): the verdict configuration it measures and what ``run`` and
``calibrate`` take (``udfs.agents_bench.commands``)."""

from __future__ import annotations

import logging

from udfs.agents.judge import build_judge
from udfs.agents_bench.runner import VerdictConfig
from udfs.llm.client import first_model
from udfs.llm.endpoint import api_key
from udfs.llm.serving.config import client_base_url
from udfs.runtime.io import Folder, local_state_dir

log = logging.getLogger("llm4schema.agents_bench")


def verdict_config(job, models: list[str] | None = None) -> VerdictConfig:
    """The verdict configuration of ``job``'s flags; ``models`` replaces --verdict-models. ``run``
    judges with the judge the evaluation builds (the benchmark measures the judge that runs);
    ``calibrate`` with no calibration entry taken (it fits the thresholds on the raw scores)."""
    voters = models or job.args.verdict_models or ["default"]
    judge = build_judge(
        job.sections["judge"],
        config_file=job.config.path,
        given=job.given,
        served_model=voters[0],
        apply_calibration=job.args.command == "run",
    )
    return VerdictConfig(list(voters), judge)


def run_arguments(job, table_dir: Folder) -> dict:
    """The arguments of ``udfs.agents_bench.commands.run`` (and ``calibrate``) from ``job``'s flags,
    asking the service for its model when no --verdict-models names one (``LLMError`` when it does
    not answer)."""
    a, key = job.args, api_key(job.args) or None
    url = client_base_url(a.base_url)
    cfg = verdict_config(job, a.verdict_models or [first_model(url, timeout_s=30, api_key=key)])
    if len(cfg.models) > 1 and not a.judge_model:
        log.warning("several models and no --judge-model: ties stay undecided (no verdict)")
    # SQLite needs a real disk: under a remote root the cache is a local folder (local_state_dir)
    cache = a.cache or str(local_state_dir(job.output_root, "cache") / "llm.sqlite")
    return dict(
        ground_truth=Folder(a.input[0]),
        out=table_dir,
        cfg=cfg,
        base_url=url,
        cache_path=cache,
        tasks=a.tasks,
        limit=a.limit,
        seed=a.seed,
        batch_size=a.batch_size,
        timeout_s=a.timeout_s,
        concurrency=a.concurrency,
        overwrite=a.overwrite,
        timer=job.record.time,
        api_key=key,
    )


def run_step(job):
    """``job``'s subcommand (build, run, calibrate, kappa) as ``udfs.agents_bench.commands`` runs it;
    its report (counters, facts, text). A flag the step does not take, or an endpoint that does
    not answer, is a UserError."""
    from udfs.agents_bench import commands
    from udfs.llm.client import LLMError
    from udfs.runtime.errors import UserError

    a = job.args
    if a.command == "build":
        return commands.build(
            a.input,
            job.table_dir,
            job.rejects_dir,
            seed=a.seed,
            distant_max=a.distant_max,
            intrinsic=a.intrinsic,
            max_value_chars=a.max_value_chars,
            require_stated=not a.keep_unstated,
            scores=job.config.scores,
            timer=job.record.time,
        )
    if a.command == "kappa":
        return commands.kappa(a.input, job.table_dir, job.rejects_dir)
    if a.command == "calibrate":
        for wrong, why in (
            (not a.calibration, 'calibrate writes its entries to --calibration: give a file ("" names none)'),
            (a.held_out_after, "--held-out-after is run's: calibrate fits and measures on its own --limit items"),
            (a.correct, "--correct is run's: calibrate fits the thresholds, it measures no correction"),
        ):
            if wrong:
                raise UserError(why)
    try:
        kw = run_arguments(job, None)
    except LLMError as exc:
        raise UserError(str(exc)) from None
    job.verdicts = kw.pop("cfg")
    ground_truth, _ = kw.pop("ground_truth"), kw.pop("out")
    if a.command == "run":
        return commands.run(
            ground_truth,
            job.table_dir,
            job.verdicts,
            held_out_after=a.held_out_after,
            correct=a.correct,
            scores=job.config.scores,
            **kw,
        )
    return commands.calibrate(
        ground_truth,
        job.table_dir,
        job.verdicts,
        calibration_file=a.calibration,
        install=a.install,
        fit_fraction=a.fit_fraction,
        **kw,
    )
