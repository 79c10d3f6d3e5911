"""The one place the pipeline's configuration is read: ``conf/pipeline.toml`` (or a ``--config`` file).

``load_config(path)`` reads the TOML once into a frozen :class:`Config`: one frozen dataclass per
section, each field typed. The TOML is the only home of a value: no field has a default, so a
section must give every key, and a key that is unknown, missing or of the wrong type is a
:class:`ConfigError` naming the file, the section and the key. Command lines turn that error into
one line on stderr and exit status 2 (:func:`exit_on_config_error`).

A job section (``[csets]``, ``[evaluate]``...) holds exactly the defaults of that job's setting
flags (``udfs.runtime.job.Job.parse_args`` checks both ways); ``[judge]`` holds the defaults of
the judge's flags, which every job that judges takes too (``Job.shared_sections``); ``[scores]``
and ``[validity]`` configure library objects that several commands build (the evaluation's key
scores and validity agent, ``python -m udfs.agents.validity``, the benchmark's embeddings).

Lists in the TOML become tuples, so a config object can be shared and hashed without being changed
under its readers.

The checking is shared with the model service's files (``udfs.llm.serving.config``): :func:`read_toml`,
:func:`parse_section` (one table into one dataclass; a field's ``metadata["choices"]`` limits its values)
and :func:`describe_section` (the keys of a section with their meanings, ``metadata["doc"]``, for the
configuration reference).
"""

from __future__ import annotations

import dataclasses
import tomllib
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from udfs.runtime.paths import DEFAULT_CONF


class ConfigError(ValueError):
    """A configuration file that cannot be used: missing, not TOML, or a section or key that is
    unknown, missing or of the wrong type. The message names the file, the section and the key."""


# ---- sections --------------------------------------------------------------------------------
# One dataclass per section; field names are the TOML keys. No defaults: see the module docstring.


@dataclass(frozen=True)
class CsetsConf:
    subject_scope: str
    sample_urls: int
    vocab: str
    input_root: tuple[str, ...]
    reject_raw_chars: int
    max_line_bytes: int
    strict_nquads: bool
    top: int


@dataclass(frozen=True)
class SampleConf:
    features: tuple[str, ...]
    strata: int
    per_stratum: int
    seed: int
    replacement_urls: int
    replacement_csets: int
    reject_raw_chars: int


@dataclass(frozen=True)
class WarcIndexConf:
    warc_base: str
    max_record_bytes: int
    reject_raw_chars: int


@dataclass(frozen=True)
class ExtractQuadsConf:
    max_record_bytes: int
    max_html_bytes: int
    max_markup_chars: int
    max_markup_nodes: int
    time_limit_s: float
    reject_raw_chars: int


@dataclass(frozen=True)
class PagesConf:
    warc_index: tuple[str, ...]
    warc_base: str
    replacements: int
    text_extractor: str
    judge_text_extractor: str
    microdata: bool
    generator_rules: str
    max_record_bytes: int
    max_html_bytes: int
    max_text_chars: int
    max_markup_chars: int
    max_markup_nodes: int
    max_html_depth: int
    time_limit_s: float
    partitions: int
    reject_raw_chars: int


@dataclass(frozen=True)
class ImportPsetConf:
    """jobs/import_pset.py: the paper's commit, which text, the bundle's clone cache, the rejects' bound,
    a stratified subset."""

    commit: str
    text: str = dataclasses.field(metadata={"choices": ("paper", "project")})
    cache: str
    reject_raw_chars: int
    per_stratum: int


@dataclass(frozen=True)
class ScoresConf:
    """Settings of the scores: BLINKG value matching (udfs/scores/matching.py) and the
    ScrapeGraphAI-100k key scores (udfs/scores/keys.py)."""

    match_threshold: float
    embedding_batch_size: int
    embedding_threads: int
    ignore_keys: tuple[str, ...]
    bleu_max_order: int


@dataclass(frozen=True)
class ValidityConf:
    """The validity agent (udfs/agents/validity/): engine, strict or lenient reading, release,
    mode (schemaorg or paper)."""

    engine: str
    strict: bool
    vocab: str
    mode: str


@dataclass(frozen=True)
class JudgeConf:
    """The verdict agents' judge, one for every job that judges (``jobs/evaluate.py``, and
    ``jobs/agents_bench.py`` which measures it): the strategy, the questions of each agent
    (``udfs.agents.questions``) and the factuality gate, each agent's threshold (a number, used as
    written, or :data:`CALIBRATED`: the calibration file's matching entry, else
    ``fallback_threshold``), the verdict models (empty: the service's first), the model that breaks
    their ties ("": none) and the calibration file ("": none). The jobs' flags of the same names
    override these; ``udfs.agents.judge.build_judge`` makes the run's judge of them."""

    strategy: str
    factuality_questions: tuple[str, ...]
    factuality_gate: float
    compliance_questions: tuple[str, ...]
    factuality_threshold: float | str
    compliance_threshold: float | str
    fallback_threshold: float
    verdict_models: tuple[str, ...]
    judge_model: str
    calibration: str


@dataclass(frozen=True)
class EvaluateConf:
    limit: int
    order: str
    generators: tuple[str, ...]
    stages: tuple[str, ...]
    context_window: int
    max_tokens: int
    max_claims: int
    repeats: int
    temperature: float
    early_exit: bool
    executor: str
    workers: int
    timeout_s: float
    max_in_flight: int
    part_pages: int
    part_rows: int


@dataclass(frozen=True)
class ReportConf:
    group_interval_width: float


@dataclass(frozen=True)
class AgentsBenchConf:
    seed: int
    distant_max: float
    intrinsic: str
    max_value_chars: int
    limit: int
    tasks: tuple[str, ...]
    held_out_after: int
    batch_size: int
    timeout_s: float
    concurrency: int
    fit_fraction: float


@dataclass(frozen=True)
class Config:
    """The whole file: one attribute per section, named as the section."""

    path: str
    csets: CsetsConf
    sample: SampleConf
    warc_index: WarcIndexConf
    extract_quads: ExtractQuadsConf
    pages: PagesConf
    import_pset: ImportPsetConf
    scores: ScoresConf
    validity: ValidityConf
    judge: JudgeConf
    evaluate: EvaluateConf
    report: ReportConf
    agents_bench: AgentsBenchConf

    def section(self, name: str) -> Any:
        """The section called ``name`` (a job's name), or a ConfigError naming the file."""
        if name not in SECTIONS:
            raise ConfigError(f"{self.path}: no [{name}] section is defined (sections: {', '.join(SECTIONS)})")
        return getattr(self, name)


# section name -> its dataclass, in the order of Config's fields
SECTIONS: dict[str, type] = {k: v for k, v in typing.get_type_hints(Config).items() if k != "path"}


# ---- reading ---------------------------------------------------------------------------------


# A threshold a configuration leaves to the calibration file (``[judge]``): the matching entry's,
# else the fallback the same section states.
CALIBRATED = "calibrated"
THRESHOLD = float | str  # a number, or CALIBRATED


def threshold_value(value: Any, where: str = "threshold") -> float | str:
    """A threshold setting as written in a file or on a command line: a number in [0, 1], or
    :data:`CALIBRATED`; anything else is a ConfigError naming ``where``."""
    if isinstance(value, str) and value.strip() == CALIBRATED:
        return CALIBRATED
    try:
        number = float(value) if not isinstance(value, bool) else None
    except (TypeError, ValueError):
        number = None
    if number is None or not 0.0 <= number <= 1.0:
        raise ConfigError(f'{where} must be a number in [0, 1] or "{CALIBRATED}", not {value!r}')
    return number


def _type_name(tp: Any) -> str:
    if tp == THRESHOLD:
        return f'a number or "{CALIBRATED}"'
    if typing.get_origin(tp) is tuple:
        return f"a list of {typing.get_args(tp)[0].__name__}"
    if typing.get_origin(tp) is dict:
        return f"a table of {typing.get_args(tp)[1].__name__}"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}[tp]


def _coerce(value: Any, tp: Any, where: str) -> Any:
    """``value`` as type ``tp`` (TOML's own types; an integer is a number, a list a tuple), or a
    ConfigError saying what was expected."""

    def bad() -> ConfigError:
        return ConfigError(f"{where} must be {_type_name(tp)}, not {type(value).__name__} {value!r}")

    if tp == THRESHOLD:
        return threshold_value(value, where)
    if typing.get_origin(tp) is tuple:
        item = typing.get_args(tp)[0]
        if not isinstance(value, list):
            raise bad()
        return tuple(_coerce(v, item, f"{where}[{i}]") for i, v in enumerate(value))
    if typing.get_origin(tp) is dict:  # a table of one type, keyed by strings (environment variables)
        item = typing.get_args(tp)[1]
        if not isinstance(value, dict):
            raise bad()
        return {k: _coerce(v, item, f"{where}.{k}") for k, v in value.items()}
    if tp is bool:
        if not isinstance(value, bool):
            raise bad()
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad()
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad()
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise bad()
        return value
    raise TypeError(f"unsupported config field type {tp!r}")  # a programming error in this module


def parse_section(cls: type, name: str, table: Any, path: str, *, label: str | None = None) -> Any:
    """``table`` (one TOML table) as the frozen dataclass ``cls``: every field a key of the same name,
    of the field's type; a field with a default may be left out. A field whose metadata has
    ``choices`` takes one of them only. ``label`` names the table in errors (default ``[name]``).
    Any fault is a ConfigError naming ``path``, the table and the key."""
    label = label or f"[{name}]"
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: {label} must be a table of settings, not {type(table).__name__}")
    hints = typing.get_type_hints(cls)
    unknown = sorted(set(table) - set(hints))
    if unknown:
        raise ConfigError(
            f"{path}: {label} has unknown key{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(unknown)} (known: {', '.join(hints) or 'none'})"
        )
    fields = {f.name: f for f in dataclasses.fields(cls)}
    missing = [k for k in hints if k not in table and _required(fields[k])]
    if missing:
        raise ConfigError(f"{path}: {label} is missing key{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    values = {k: _coerce(table[k], tp, f"{path}: {label} {k}") for k, tp in hints.items() if k in table}
    for k, v in values.items():
        choices = fields[k].metadata.get("choices")
        if choices and v not in choices:
            raise ConfigError(f"{path}: {label} {k} must be one of {', '.join(map(repr, choices))}, not {v!r}")
    return cls(**values)


def _required(f: dataclasses.Field) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


class ConfigKey(typing.NamedTuple):
    """One key of a configuration file, for its reference documentation: the section (``embedded``,
    ``embedded.models``...), the key, its TOML type, whether a file must give it, its default
    (None when required), the allowed values (empty: any of the type) and a one-line meaning."""

    section: str
    key: str
    type: str
    required: bool
    default: Any
    choices: tuple[Any, ...]
    doc: str


def describe_section(cls: type, section: str) -> list[ConfigKey]:
    """The keys of the dataclass ``cls`` read as ``[section]``, in declaration order; the meaning is
    each field's ``metadata["doc"]`` (empty when it has none)."""
    hints = typing.get_type_hints(cls)
    rows = []
    for f in dataclasses.fields(cls):
        required = _required(f)
        default = None if required else (f.default if f.default is not dataclasses.MISSING else f.default_factory())
        rows.append(
            ConfigKey(
                section,
                f.name,
                _type_name(hints[f.name]).split(" ", 1)[1],
                required,
                default,
                tuple(f.metadata.get("choices", ())),
                f.metadata.get("doc", ""),
            )
        )
    return rows


def parse_config(data: dict[str, Any], path: str = "<config>") -> Config:
    """A :class:`Config` from already parsed TOML (``path`` only names it in errors)."""
    unknown = sorted(set(data) - set(SECTIONS))
    if unknown:
        raise ConfigError(
            f"{path}: unknown section{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(f'[{u}]' for u in unknown)} (sections: {', '.join(SECTIONS)})"
        )
    missing = [s for s in SECTIONS if s not in data]
    if missing:
        raise ConfigError(
            f"{path}: missing section{'s' if len(missing) > 1 else ''} {', '.join(f'[{m}]' for m in missing)}"
        )
    return Config(path=path, **{name: parse_section(cls, name, data[name], path) for name, cls in SECTIONS.items()})


def read_toml(path: Path) -> dict[str, Any]:
    """The parsed TOML of ``path``, or a ConfigError naming it (missing, a directory, not TOML)."""
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such configuration file") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, not a configuration file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def load_config(path: str | Path | None = None) -> Config:
    """Read ``path`` (default: conf/pipeline.toml) into a typed, frozen :class:`Config`."""
    path = Path(path) if path else DEFAULT_CONF
    return parse_config(read_toml(path), str(path))


def judge_of(values: Any) -> JudgeConf:
    """A :class:`JudgeConf` from any object with its fields as attributes (a job's parsed flags,
    lists as argparse gives them), lists made tuples."""
    return JudgeConf(
        **{
            f.name: tuple(v) if isinstance(v := getattr(values, f.name), list) else v
            for f in dataclasses.fields(JudgeConf)
        }
    )


def as_defaults(section: Any) -> dict[str, Any]:
    """A section's values as command-line defaults (tuples as lists, as argparse gives them)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(section).items()}


def exit_on_config_error(prog: str, exc: ConfigError) -> typing.NoReturn:
    """What a command line does with a ConfigError: one line on stderr, exit status 2 (argparse's
    status for a usage error), through :func:`udfs.runtime.cli.fail`."""
    from udfs.runtime.cli import fail

    fail(prog, str(exc))
