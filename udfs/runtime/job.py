"""The shared base of every job in ``jobs/``.

A job file holds a tiny subclass (in the manner of cc-pyspark): it declares its flags and wires
library functions together. This module owns what all jobs share: the command line shape
(``--input``, ``--output``, ``--config``), defaults from ``conf/pipeline.toml`` (read and checked by
``udfs.runtime.config``: a flag without ``default=`` is a setting whose default is the job's section's
key of the same name; ``self.config`` holds every section), the run record
(``<table>/_run.json``: inputs, config, counters, times), the rejects location
(``rejects/<job>/``) and, for Spark jobs, the session.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import platform
import socket
import sys
import time
import typing
from pathlib import Path
from typing import Any

from udfs.runtime import io as _io
from udfs.runtime.cli import ArgumentParser, HelpFormatter, check_config_value, fail
from udfs.runtime.config import Config, ConfigError, as_defaults, exit_on_config_error, load_config
from udfs.runtime.inputs import InputError, InputReport, resolve_inputs
from udfs.runtime.io import Folder
from udfs.runtime.paths import CONF_DIR, DEFAULT_CONF

log = logging.getLogger("llm4schema")


class _FromConf:
    """The default of a flag declared without ``default=``: a setting, whose default is the key of
    the same name in the job's section of the conf file (see ``Job.build_parser``)."""

    def __repr__(self) -> str:
        return "<from the conf file>"


FROM_CONF = _FromConf()


# Output roots are Folders (udfs/runtime/io.py): a local path or a URL, one IO layer for both.
output_location = _io.output_location


# Flags whose values are secrets (a hosted endpoint's key): a run record keeps that they were
# given, never what they were.
SECRET_FLAGS = ("--api-key",)
REDACTED = "<redacted>"


def redact_argv(argv: list[str]) -> list[str]:
    """``argv`` with the value of every flag of SECRET_FLAGS (``--flag v`` or ``--flag=v``) replaced."""
    out, hide = [], False
    for a in argv:
        flag, eq, _ = a.partition("=")
        if hide:
            out.append(REDACTED)
            hide = False
        elif flag in SECRET_FLAGS and eq:
            out.append(f"{flag}={REDACTED}")
        else:
            out.append(a)
            hide = a in SECRET_FLAGS
    return out


class RunRecord:
    """Counters and facts about one run, written as ``_run.json`` next to the table it describes.

    Parquet readers (Spark, DuckDB, pyarrow) skip files starting with ``_``, so the record can
    live inside the table folder.
    """

    def __init__(self, job: str, argv: list[str]):
        self.data: dict[str, Any] = {
            "job": job,
            "argv": argv,
            "started_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "host": socket.gethostname(),
            "python": platform.python_version(),
            "counters": {},
            "timings_s": {},
        }
        self._t0 = time.monotonic()

    def __setitem__(self, key: str, value: Any) -> None:
        self.data[key] = value

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def count(self, name: str, value: int | float) -> None:
        self.data["counters"][name] = value

    def time(self, step: str):
        record = self

        class _Timer:
            def __enter__(self):
                self.t = time.monotonic()
                # Steps and their times are in the run record (timings_s) and the end-of-run
                # summary says the total; on the console only when debugging (a long step shows
                # a udfs.runtime.progress display instead).
                log.debug("%s ...", step)

            def __exit__(self, *exc):
                record.data["timings_s"][step] = round(time.monotonic() - self.t, 3)
                log.debug("%s done in %.1f s", step, record.data["timings_s"][step])

        return _Timer()

    def write(self, folder: str | Path | Folder) -> Folder:
        """Write ``_run.json`` into ``folder`` (local or remote), atomically; returns its location."""
        self.data["finished_at"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        self.data["wall_s"] = round(time.monotonic() - self._t0, 3)
        text = json.dumps(self.data, indent=2, sort_keys=False, default=str) + "\n"
        return Folder.of(folder).write_text("_run.json", text)


def setting_actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """dest -> action of the parser's setting flags: the optional flags declared without
    ``default=`` (argparse gave them ``FROM_CONF``), whose defaults the conf file holds."""
    return {a.dest: a for a in parser._actions if a.option_strings and not a.required and a.default is FROM_CONF}


class Job:
    """Base of all jobs. Subclasses set ``name`` and ``table`` and implement ``add_arguments``
    and ``run``."""

    name: str = "job"
    table: str = "table"  # folder under --output this job owns
    description: str = ""
    input_help: str = "input files, directories, globs or manifests"
    # The tables under --output this job writes, for its end-of-run summary (default: ``table``).
    outputs: tuple[str, ...] = ()
    # The command to run next, shown when the job ends; ``{output}`` is --output.
    next_step: str = ""
    # Sections besides ``[<name>]`` whose keys are settings of this job too (its flags' defaults),
    # each key in one section only: settings several jobs share, such as ``[judge]``.
    shared_sections: tuple[str, ...] = ()

    def __init__(self, argv: list[str] | None = None):
        self.argv = list(sys.argv[1:] if argv is None else argv)
        self.args = self.parse_args(self.argv)
        self.record = RunRecord(self.name, redact_argv(self.argv))

    # ---- command line ------------------------------------------------------------------------
    def add_arguments(self, parser: argparse.ArgumentParser) -> None:  # pragma: no cover - hook
        """Job-specific flags; their defaults come from ``[<name>]`` in the conf file."""

    def add_engine_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Flags of the engine the job runs on (Spark, Ray); set by the engine's base class."""

    def parse_args(self, argv: list[str]) -> argparse.Namespace:
        """Flags of ``argv`` over the defaults of ``[<name>]`` in ``--config``; the typed
        configuration (every section) is kept as ``self.config``. A configuration error (or a
        ``--config KEY=VALUE`` meant for Spark) is one line on stderr and exit status 2, like any
        other usage error."""
        pre = ArgumentParser(add_help=False, allow_abbrev=False)
        pre.add_argument("--config", default=str(DEFAULT_CONF))
        known, _ = pre.parse_known_args(argv)
        if any(a == "--conf" or a.startswith("--conf=") for a in argv):
            fail(
                f"{self.name}.py",
                "--conf is not an option of the jobs: the pipeline's TOML file is "
                "--config FILE, a Spark setting is --spark-conf KEY=VALUE",
            )
        check_config_value(f"{self.name}.py", known.config)
        try:
            self.config = load_config(known.config)
            parser = self.build_parser(self.config)
        except ConfigError as exc:
            exit_on_config_error(f"{self.name}.py", exc)
        args = parser.parse_args(argv)
        # which settings the command line gave: argparse leaves a value already in the namespace
        # unless the flag is given, so a marker there that survives says "from the conf file"
        unset = object()
        given = parser.parse_args(argv, argparse.Namespace(**{d: unset for d in parser.setting_dests}))
        self.given = frozenset(d for d in parser.setting_dests if getattr(given, d) is not unset)
        self._setting_sections = parser.setting_sections
        return args

    def build_parser(self, config: Config) -> argparse.ArgumentParser:
        """The job's command line. A flag declared without ``default=`` is a setting: its default
        is the key of the same name (the flag's dest) in ``[<name>]`` or in one of
        ``shared_sections``, and those sections together hold exactly those keys, each key in one
        section: a setting flag without a key, a key without a flag, or a key in two of them is
        a ConfigError (a flag that is not a setting, e.g. a path of one run or a switch, states its
        default in code). ``--help`` shows the conf's values."""
        parser = ArgumentParser(
            prog=f"{self.name}.py",
            description=self.description,
            formatter_class=HelpFormatter,
            argument_default=FROM_CONF,
            allow_abbrev=False,
        )
        parser.add_argument("--input", nargs="+", required=True, help=self.input_help)
        parser.add_argument(
            "--output",
            required=True,
            help="output root shared by the whole pipeline; "
            f"this job writes {self.table}/ and rejects/{self.name}/ under it",
        )
        parser.add_argument(
            "--config",
            default=str(DEFAULT_CONF),
            help="pipeline configuration (TOML); "
            f"its [{self.name}] section gives this job's defaults (Spark settings: --spark-conf)",
        )
        parser.add_argument(
            "--log-level",
            default="INFO",
            choices=["DEBUG", "INFO", "WARNING", "ERROR"],
            help="log messages of this level and above go to stderr",
        )
        self.add_engine_arguments(parser)
        self.add_arguments(parser)
        settings = setting_actions(parser)
        for action in parser._actions:
            if action.default is FROM_CONF and action.dest not in settings:
                action.default = None  # required flags and positionals: always given
        values = as_defaults(config.section(self.name))
        sections = dict.fromkeys(values, self.name)
        for shared in self.shared_sections:
            for key, value in as_defaults(config.section(shared)).items():
                if key in sections:
                    raise ConfigError(
                        f"{config.path}: [{shared}] {key} is also a key of [{sections[key]}]: "
                        f"{self.name}.py takes a setting from one section only"
                    )
                values[key], sections[key] = value, shared
        where = f"{config.path}: {' and '.join(f'[{s}]' for s in (self.name, *self.shared_sections))}"
        missing = [a for d, a in settings.items() if d not in values]
        if missing:
            raise ConfigError(
                f"{where} is missing key{'s' if len(missing) > 1 else ''} "
                + ", ".join(f"{a.dest} (the default of {a.option_strings[-1]})" for a in missing)
            )
        extra = sorted(set(values) - set(settings))
        if extra:
            raise ConfigError(
                f"{where} has key{'s' if len(extra) > 1 else ''} {', '.join(extra)} "
                f"that no flag of {self.name}.py takes"
            )
        for dest, value in values.items():
            choices = settings[dest].choices
            for item in value if isinstance(value, list) else [value]:
                if choices is not None and item not in choices:
                    raise ConfigError(
                        f"{config.path}: [{sections[dest]}] {dest} = {value!r}: {item!r} is not one of "
                        f"{', '.join(map(repr, choices))}"
                    )
        parser.set_defaults(**values)
        parser.setting_dests = tuple(settings)  # for checks: the keys [<name>] must hold
        parser.setting_sections = sections  # dest -> the section its default came from
        return parser

    # ---- layout --------------------------------------------------------------------------------
    @property
    def output_root(self) -> Folder:
        """``--output`` as a Folder: ``str()`` of it (and of every folder below) is what Spark
        writes to, its methods write everything else (run records, plots, Python-side Parquet)."""
        return output_location(self.args.output)

    @property
    def table_dir(self) -> Folder:
        return self.output_root / self.table

    @property
    def rejects_dir(self) -> Folder:
        return self.output_root / "rejects" / self.name

    def resolve_inputs(self, specs, *, flag: str = "--input", **kwargs) -> list[str]:
        """``udfs.runtime.inputs.resolve_inputs`` (same arguments) with its account kept for the
        run record: ``record["inputs"]["considered"]`` gets every file found (as found: a file in a
        symlinked folder under the link's name) and ``record["inputs"]["skipped"]`` every path
        passed over with the reason and the ``flag`` it came from, over all of the job's calls."""
        report = InputReport()
        files = resolve_inputs(specs, report=report, **kwargs)
        self.keep_inputs(report, flag)
        return files

    def keep_inputs(self, report: InputReport, flag: str = "--input") -> None:
        """Add ``report`` (an ``InputReport`` a resolution filled) to ``record["inputs"]``."""
        inputs = self.record.data.setdefault("inputs", {})
        inputs.setdefault("considered", []).extend(report.as_dict()["considered"])
        inputs.setdefault("skipped", []).extend({**s, "flag": flag} for s in report.skipped)

    def keep_reads(self, files, counts: dict[str, dict[str, Any]], unit: str, total: int, key: str = "read") -> bool:
        """What each input gave, for the run record: ``record["inputs"][key]`` is one entry per
        file, ``{"source": file, unit: n, ...}`` (the other items of ``counts[file]`` after it),
        for every file of ``files`` (the files the job was to read: one that gave nothing is
        there with 0) and every other file ``counts`` names; ``record["inputs"][key + "_unit"]``
        says what ``unit`` counts. Returns whether the per-file ``unit`` counts add up to
        ``total`` (the job's own count of them), for the job's ``reconciles`` counter."""
        entries: dict[str, dict[str, Any]] = {}
        for f in [*files, *counts]:
            entries.setdefault(f, {"source": f, unit: 0, **counts.get(f, {})})
        inputs = self.record.data.setdefault("inputs", {})
        inputs[key] = list(entries.values())
        inputs[f"{key}_unit"] = unit
        return sum(int(e[unit] or 0) for e in entries.values()) == total

    def clear_outputs(self) -> None:
        """Rerunning replaces this job's outputs and nothing else under the shared root, local
        or remote."""
        for d in (self.table_dir, self.rejects_dir):
            d.rm()

    # ---- running -------------------------------------------------------------------------------
    def run(self) -> None:  # pragma: no cover - hook
        raise NotImplementedError

    def fail(self, message: str, code: int = 2) -> typing.NoReturn:
        """Stop the job on bad input (a missing table, a service that does not answer): one line
        ``<job>.py: error: <message>`` on stderr and exit status ``code``, no traceback."""
        fail(f"{self.name}.py", message, code)

    def main(self) -> int:
        logging.basicConfig(
            level=getattr(logging, self.args.log_level),
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
            stream=sys.stderr,
        )
        # Libraries' INFO lines (py4j's connection closing, every HTTP request to the model service)
        # are about their plumbing, not the run; their warnings still show.
        if self.args.log_level != "DEBUG":
            for noisy in ("py4j", "httpx"):
                logging.getLogger(noisy).setLevel(logging.WARNING)
        secret = {f.lstrip("-").replace("-", "_") for f in SECRET_FLAGS}
        # the judge's settings are the judge's block, each applied value once with its origin
        # (udfs.agents.judge): not repeated here as configured
        judged = {d for d, section in self._setting_sections.items() if section == "judge"}
        self.record["config"] = {
            k: (REDACTED if k in secret and v else v) for k, v in vars(self.args).items() if k not in judged
        }
        try:
            self.run()
        except (InputError, ConfigError) as exc:  # bad input: one line, no traceback
            self.fail(str(exc))
        path = self.record.write(self.table_dir)
        log.debug("run record: %s", path)  # the summary names the table folder that holds it
        self.print_summary()
        return 0

    def print_summary(self) -> None:
        """The end-of-run block on stderr (``udfs.runtime.summary.job_summary``): tables written
        with row counts and locations, total time, counters that need attention, next command."""
        from udfs.runtime.summary import job_summary

        tables = [(t, self.output_root / t) for t in (self.outputs or (self.table,))]
        tables.append((f"rejects/{self.name}", self.rejects_dir))
        step = self.next_step.format(output=self.args.output) if self.next_step else ""
        print(job_summary(self.name, tables, self.record.data, step), file=sys.stderr, flush=True)

    @classmethod
    def cli(cls) -> int:
        """The console-script entry point (``[project.scripts]`` in pyproject.toml): the job on
        ``sys.argv``, from any working directory; its exit status."""
        return cls().main()


class SparkJob(Job):
    """A job with a Spark session: ``local[*]`` unless ``--master`` or spark-submit says otherwise."""

    def add_engine_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--master", default=None, help="Spark master; default: what spark-submit set, else local[*]"
        )
        parser.add_argument(
            "--spark-conf",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="extra Spark setting, repeatable (also read: conf/spark-defaults.conf)",
        )

    @classmethod
    def cli(cls) -> int:
        """As ``Job.cli``; the JVM it starts reads the project's conf/ (log4j2.properties,
        spark-defaults.conf) as under ``SPARK_CONF_DIR=conf spark-submit``, unless the caller set
        SPARK_CONF_DIR itself."""
        os.environ.setdefault("SPARK_CONF_DIR", str(CONF_DIR))
        return super().cli()

    _spark = None

    @property
    def spark(self):
        if self._spark is None:
            self._spark = build_spark(self.name, self.args.master, self.args.spark_conf)
            self.record["spark"] = {
                "version": self._spark.version,
                "master": self._spark.sparkContext.master,
                "default_parallelism": self._spark.sparkContext.defaultParallelism,
            }
        return self._spark


def _spark_defaults() -> dict[str, str]:
    out: dict[str, str] = {}
    path = CONF_DIR / "spark-defaults.conf"
    if path.exists():
        for line in path.read_text().splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                key, _, value = line.partition(" ")
                out[key.strip()] = value.strip()
    return out


def _submitted() -> dict[str, str]:
    """The Spark settings spark-submit passed to this driver (none when not under spark-submit)."""
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return {}
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()
    return dict(SparkConf().getAll())


def build_spark(app: str, master: str | None = None, extra: list[str] | None = None):
    """One way to get a session: reuse the active one (tests, spark-submit) or build one."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    builder = SparkSession.builder.appName(f"llm4schema-{app}")
    # Under spark-submit the JVM is already up (PYSPARK_GATEWAY_PORT) and holds the master it was
    # given; plain `python jobs/x.py` gets local mode.
    if master:
        builder = builder.master(master)
    elif "PYSPARK_GATEWAY_PORT" not in os.environ:
        builder = builder.master("local[*]")
    # conf/spark-defaults.conf is for local runs: under spark-submit, what the submit set
    # (cluster/spark/cluster-defaults.conf, --conf) wins.
    submitted = _submitted()
    defaults = _spark_defaults()
    # spark-submit reads conf/log4j2.properties through SPARK_CONF_DIR; a session this process
    # starts is pointed at it here (WARN and above), unless the JVM options already name one.
    java_opts = defaults.get("spark.driver.extraJavaOptions", "")
    if (
        "PYSPARK_GATEWAY_PORT" not in os.environ
        and "log4j2.configurationFile" not in java_opts
        and (CONF_DIR / "log4j2.properties").exists()
    ):
        defaults["spark.driver.extraJavaOptions"] = (
            f"{java_opts} -Dlog4j2.configurationFile={CONF_DIR / 'log4j2.properties'}"
        ).strip()
    for key, value in defaults.items():
        if key not in submitted:
            builder = builder.config(key, value)
    # The stage progress bar is for a terminal (conf/spark-defaults.conf keeps it off for logs): on
    # when stderr is one, unless someone set it otherwise than that file (--conf, a cluster's conf).
    bar = "spark.ui.showConsoleProgress"
    if sys.stderr.isatty() and submitted.get(bar, defaults.get(bar)) == defaults.get(bar):
        builder = builder.config(bar, "true")
    for kv in extra or []:
        key, sep, value = kv.partition("=")
        if not sep:
            fail(f"{app}.py", f"--spark-conf {kv!r}: expected KEY=VALUE")
        builder = builder.config(key, value)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("SPARK_LOG_LEVEL", "WARN"))
    return spark
