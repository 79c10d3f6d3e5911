"""The run table: when the evaluation ran, the endpoint it called (its URL, secrets redacted) and
the models that endpoint served, the stored markups, strategy, thresholds and where they came from,
validity, calibration, the settings hash, the scores' run folders and the versions. With
``--compare-settings``: one column per settings hash (:func:`combine`)."""

from __future__ import annotations

import datetime as dt
import platform
from importlib import metadata
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from udfs.evaluation.evaluator import HUMAN, source_repeat
from udfs.report.sections import Part
from udfs.runtime.cli import redact_url
from udfs.runtime.config import ConfigError
from udfs.runtime.judge_record import read_judge

if TYPE_CHECKING:
    from udfs.report.inputs import Run

BLOCK = "run_table"
PER_RUN = True


def run_sources(
    record: dict[str, Any] | None, score_sources: Iterable[str], triples: list[dict[str, Any]]
) -> tuple[list[str], list[str]]:
    """(models, stored): the models of the run (the generators its record names and the models
    that gave the triples' verdicts) and the sources of stored markups (``--markups``: markups made
    elsewhere and judged by this run, not models of it): every source of the scores that is neither
    ``human`` nor a generator, a repeat's (``source#r``) by its source's name. A record without its
    generators (older runs) cannot tell a stored source from a model: such sources count as models."""
    ev = (record or {}).get("evaluation") or {}
    verdicts = {m for r in triples if (m := r.get("model"))}
    others = {name for s in score_sources if (name := source_repeat(s)[0]) != HUMAN}
    if "models" in ev:
        generators = set(ev["models"] or ())
        return sorted(generators | verdicts), sorted(others - generators)
    return sorted(others | verdicts), []


def served_models(record: dict[str, Any]) -> list[str]:
    """The models the run asked its endpoint for, as its record names them: the generators, and the
    verdict models ([judge] verdict_models, else the endpoint's default model)."""
    ev = record.get("evaluation") or {}
    judge = read_judge(record)
    verdicts = (judge.verdict_models or (judge.served_model,)) if judge else ()
    return sorted({*(ev.get("models") or ()), *(m for m in verdicts if m)})


def _conf_service(endpoint: str) -> str | None:
    """conf/serving.toml's service URL when ``endpoint`` is it (or its Serve app's handle), else None."""
    from udfs.llm.serving.config import base_url, load_serving_conf

    try:
        conf = load_serving_conf()
    except ConfigError:
        return None
    ours = base_url(conf)
    return ours if endpoint.rstrip("/") in (ours, f"serve://{conf.serving.app_name}/v1") else None


def _model_file(model_ids: list[str], endpoint: str | None) -> str:
    """The model file behind the served model ids, from conf/serving.toml's embedded models, where
    the run called that service (the run record names the models, not the file they were loaded
    from); a run against another endpoint is not said to have run conf/serving.toml's model."""
    if not model_ids:
        return "none: no model generated or judged"
    if endpoint is not None and _conf_service(endpoint) is None:
        return f"the endpoint's own: {redact_url(endpoint)} is not the service of conf/serving.toml"
    from udfs.llm.serving.config import load_serving_conf

    try:
        conf = load_serving_conf()
    except ConfigError as exc:
        return f"not read: conf/serving.toml ({exc})"
    for m in conf.embedded.models if conf.embedded else ():
        if m.model_id in model_ids:
            return m.model if m.model.endswith(".gguf") else f"{m.model}.gguf (embedded llama.cpp, conf/serving.toml)"
    return f"not an embedded model of conf/serving.toml ({', '.join(model_ids)}): see the service's configuration"


def _endpoint_rows(record: dict[str, Any], endpoint: str | None) -> list[tuple[str, str]]:
    if endpoint is None:
        return [("endpoint", "not recorded: scores/_run.json predates the endpoint in its record")]
    served = served_models(record)
    return [
        ("endpoint", redact_url(endpoint)),
        ("models it served", ", ".join(served) or "none: no model generated or judged"),
    ]


def _stored_note(record: dict[str, Any], stored: Sequence[str]) -> str:
    """The stored sources and the ``--markups`` table they came from (the run record's)."""
    table = (record.get("markups") or {}).get("table")
    return ", ".join(stored) + (f" (--markups {table})" if table else "")


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def calibration_note(record: dict[str, Any] | None) -> str:
    """Which calibration the evaluation applied (the file, the entry taken per agent, or why none
    was), from its run record's judge block (``udfs.runtime.judge_record``)."""
    judge = read_judge(record)
    if judge is None:
        return "not recorded (the run predates the judge's block): unknown"
    parts = []
    for agent, r in judge.agents.items():
        if r.entry is not None:
            parts.append(f"{agent}: entry {r.entry['id']}")
        else:
            why = next((p.why for p in r.threshold.passed_over if p.kind == "calibration"), "not taken")
            parts.append(f"{agent}: none ({why})")
    return f"{judge.calibration_file or 'no calibration file'}: " + "; ".join(parts)


def _judge_rows(judge) -> list[tuple[str, str]]:
    """Strategy, each verdict agent's threshold and where it came from, the factuality questions."""
    rows = [("strategy", judge.strategy if judge else "unknown")]
    for a in ("factuality", "compliance"):
        rows.append(
            (
                f"{a} threshold",
                f"{judge.agents[a].threshold.value:g} from {judge.agents[a].threshold.origin.describe()}"
                if judge and a in judge.agents
                else "unknown: not recorded",
            )
        )
    fact = judge.agents.get("factuality") if judge else None
    order = f"{' → '.join(fact.order)} (in this order; gate {fact.gate:g})" if fact else "unknown"
    return [*rows, ("factuality questions", order)]


def _validity(ev: dict[str, Any]) -> str:
    mode = ev.get("validity_mode") or "schemaorg"
    if mode == "paper":
        return f"{mode} mode (the paper's filter)"
    literals = "strict" if ev.get("validity_strict") else "lenient"
    return f"{mode} mode, {ev.get('validity_engine', 'unknown')} engine, {literals} literals"


def run_metadata(run: Run, model_ids: list[str], stored: Sequence[str] = ()) -> list[tuple[str, str]]:
    """Date, endpoint and the models it served, models (``run_sources``: the sources of stored
    markups in a row of their own), strategy, thresholds and where they came from, the settings
    hash and the run folders of the scores, versions."""
    rec = run.record
    ev = {**rec.get("config", {}), **rec.get("evaluation", {})}
    endpoint = (rec.get("evaluation") or {}).get("base_url")
    records = [r.record for r in run.settings.folders]
    started = min(r.get("started_at", "unknown") for r in records)
    finished = max(r.get("finished_at", "unknown") for r in records)
    return [
        ("evaluated", f"{started} to {finished}"),
        ("report built", dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")),
        *_endpoint_rows(rec, endpoint),
        ("models (generation and verdicts)", ", ".join(model_ids) or "none recorded"),
        *([("stored markups (sources, not models)", _stored_note(rec, stored))] if stored else []),
        ("model file", _model_file(model_ids, endpoint)),
        ("stages", ", ".join(ev.get("stages") or []) or "unknown"),
        *_judge_rows(read_judge(rec)),
        ("pages limit", f"{ev.get('limit', 'unknown')}, order {ev.get('order', 'unknown')}"),
        ("validity", _validity(ev)),
        ("calibration", calibration_note(rec)),
        ("settings hash", run.settings.hash),
        ("scores", "; ".join(f"{r.folder} ({r.rows:,} rows)" for r in run.settings.folders)),
        (
            "versions",
            ", ".join(f"{d} {_version(d)}" for d in ("pyspark", "ray", "duckdb"))
            + f", python {platform.python_version()} (report) / {rec.get('python', 'unknown')} (evaluation)",
        ),
    ]


def data(run: Run) -> Part:
    model_ids, stored = run_sources(run.record, run.score_rows["source"], run.triples)
    return Part({"labels": [], "rows": [(name, [value]) for name, value in run_metadata(run, model_ids, stored)]})


def combine(parts: list[Part]) -> Part:
    """One table of the settings compared: a column per settings hash, a row per field any of them
    has (a field one of them lacks: "—")."""
    names = list(dict.fromkeys(name for p in parts for name, _ in p.ctx["rows"]))
    values = [dict((name, v[0]) for name, v in p.ctx["rows"]) for p in parts]
    rows = [(name, [v.get(name, "—") for v in values]) for name in names]
    return Part({"labels": [p.label for p in parts], "rows": rows})
