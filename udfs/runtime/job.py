"""The shared base of every job in ``jobs/``.

A job file holds a tiny subclass (in the manner of cc-pyspark): it declares its flags and wires
library functions together. This module owns what all jobs share: the command line shape
(``--input``, ``--output``, ``--config``), the settings' flags (derived from their declarations in
``udfs.runtime.config``, defaults from ``--config``; all checked before ``main``: ``self.settings``
is the job's checked section, ``self.config`` the whole file), the run record
(``<table>/_run.json``: inputs, config, counters, times), the rejects location
(``rejects/<job>/``) and, for Spark jobs, the session.
"""

from __future__ import annotations

import argparse
import dataclasses
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
from udfs.runtime.cli import ArgumentParser, HelpFormatter, check_config_value, fail, redact_urls
from udfs.runtime.config import (
    SECTIONS,
    Config,
    ConfigError,
    as_defaults,
    declaration,
    exit_on_config_error,
    flag_value,
    load_config,
)
from udfs.runtime.errors import Refused, UserError, debugging
from udfs.runtime.inputs import InputReport, resolve_inputs
from udfs.runtime.io import Folder
from udfs.runtime.paths import CONF_DIR, DEFAULT_CONF, PROJECT_ROOT

log = logging.getLogger("llm4schema")


class _FromConf:
    """The default argparse gives a flag a job declares without ``default=``: a flag of a job's own
    (``add_arguments``) must state its default, a setting is declared in ``udfs.runtime.config``
    (``Job.build_parser`` refuses the flag, naming both)."""

    def __repr__(self) -> str:
        return "<no default>"


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
        text = json.dumps(redact_urls(self.data), indent=2, sort_keys=False, default=str) + "\n"
        return Folder.of(folder).write_text("_run.json", text)


def setting_actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """dest -> action of the parser's setting flags: those ``Job.build_parser`` derived from the
    declarations of the job's sections (``udfs.runtime.config.setting``)."""
    return {a.dest: a for a in parser._actions if getattr(a, "section", None)}


def _group(parser: argparse.ArgumentParser, title: str | None):
    """The parser's argument group titled ``title`` (made when missing); the parser's own for None."""
    if title is None:
        return parser
    for group in parser._action_groups:
        if group.title == title:
            return group
    return parser.add_argument_group(title)


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
    # Counters that must add up, closed by the base class (udfs.runtime.closing): (total, parts).
    balances: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # Sections besides ``[<name>]`` whose keys are settings of this job too (its flags' defaults),
    # each key in one section only: settings several jobs share, such as ``[judge]``.
    shared_sections: tuple[str, ...] = ()
    # The tables the job reads, checked at start (udfs.runtime.contracts): a flag's dest -> the
    # TableContract its files must meet, or a function of the parsed arguments giving it (or None).
    input_contracts: dict[str, typing.Any] = {}

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
        """Flags of ``argv`` over the settings of ``--config`` (every key it leaves out: the declared
        default), all checked before any work. Kept: the typed configuration file (every section) as
        ``self.config``; this run's checked sections (the file's, each flag given replacing its key)
        as ``self.sections`` (``[<name>]`` and the ``shared_sections``; the job's own also as
        ``self.settings``), to be handed on as they are; the settings the command line gave, as
        ``self.given``. A bad file or flag value (a string for a number, NaN, a number outside its
        declared range, an unknown key, or a ``--config KEY=VALUE`` meant for Spark) is one line on
        stderr and exit status 2, like any other usage error."""
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
        except ConfigError as exc:
            exit_on_config_error(f"{self.name}.py", exc)
        parser = self.build_parser(self.config)
        args = parser.parse_args(argv)
        # which settings the command line gave: argparse leaves a value already in the namespace
        # unless the flag is given, so a marker there that survives says "from the conf file"
        unset = object()
        given = parser.parse_args(argv, argparse.Namespace(**{d: unset for d in parser.setting_dests}))
        self.given = frozenset(d for d in parser.setting_dests if getattr(given, d) is not unset)
        self._setting_sections = parser.setting_sections
        try:
            self.sections = self._checked_sections(args, setting_actions(parser))
        except ConfigError as exc:
            exit_on_config_error(f"{self.name}.py", exc)
        self.settings = self.sections.get(self.name)
        return args

    def _section_names(self) -> tuple[str, ...]:
        """The sections whose settings are this job's flags: its own (a job may have none) and
        ``shared_sections``."""
        own = (self.name,) if self.name in SECTIONS else ()
        return (*own, *self.shared_sections)

    def _checked_sections(self, args: argparse.Namespace, actions: dict[str, argparse.Action]) -> dict[str, Any]:
        """Section name -> the file's section with every given flag's value, typed and checked as the
        file's are (``udfs.runtime.config.flag_value``), in its place; ``args`` gets the typed
        values too (lists as lists)."""
        sections = {}
        for name in self._section_names():
            section = self.config.section(name)
            changes = {
                d: flag_value(type(section), d, getattr(args, d), actions[d].option_strings[0])
                for d in sorted(self.given)
                if self._setting_sections[d] == name
            }
            sections[name] = dataclasses.replace(section, **changes) if changes else section
            for d, value in changes.items():
                setattr(args, d, list(value) if isinstance(value, tuple) else value)
        return sections

    def build_parser(self, config: Config) -> argparse.ArgumentParser:
        """The job's command line: the shared flags, the engine's, one flag per setting of
        ``[<name>]`` and of each of ``shared_sections``, derived from its declaration (name, type,
        choices, help; its default is ``config``'s value, which ``--help`` shows), then the job's
        own flags (``add_arguments``: what is not a setting, such as a path of one run or a
        switch, each stating its default). A setting's flag is ``--`` and its key with dashes; a
        shared section's flags are shown in a group of their own, a section's ``flag_groups`` puts
        its flags in named groups."""
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
            help="pipeline configuration (TOML; keys it leaves out take their declared defaults); "
            f"its [{self.name}] section gives this job's defaults (Spark settings: --spark-conf)",
        )
        parser.add_argument(
            "--log-level",
            default="INFO",
            choices=["DEBUG", "INFO", "WARNING", "ERROR"],
            help="log messages of this level and above go to stderr",
        )
        parser.add_argument(
            "--debug",
            action=argparse.BooleanOptionalAction,
            default=False,
            help="an error a user can act on also shows its traceback (as LLM4SCHEMA_DEBUG=1 does)",
        )
        self.add_engine_arguments(parser)
        sections = {}
        for name in self._section_names():
            for dest in self._add_setting_flags(parser, name, config.section(name)):
                if dest in sections:  # a programming error: one home per setting
                    raise TypeError(f"{dest} is a setting of both [{sections[dest]}] and [{name}]")
                sections[dest] = name
        self.add_arguments(parser)
        for action in parser._actions:
            if action.default is FROM_CONF:
                if action.option_strings and not action.required:  # a programming error in a job file
                    raise TypeError(
                        f"{self.name}.py {action.option_strings[0]} has no default: declare a setting in "
                        f"udfs/runtime/config.py's [{self.name}], or give the flag default="
                    )
                action.default = None  # required flags and positionals: always given
        parser.setting_dests = tuple(sections)  # the settings this job's command line takes
        parser.setting_sections = sections  # dest -> the section it is declared in
        return parser

    @staticmethod
    def argument_group(parser: argparse.ArgumentParser, title: str):
        """The argument group ``title`` of ``parser``: the one a section's ``flag_groups`` made for its
        settings, so that a job's own flags join them; made when missing."""
        return _group(parser, title)

    def _add_setting_flags(self, parser: argparse.ArgumentParser, name: str, section: Any) -> list[str]:
        """One flag per setting declared in ``section`` (``[name]``), its default the section's value;
        the flags of a shared section in a group of their own."""
        hints = typing.get_type_hints(type(section))
        groups = {k: title for title, keys in getattr(section, "flag_groups", {}).items() for k in keys}
        shared = None if name == self.name else f"{name} (defaults: [{name}])"
        for title in dict.fromkeys(groups.values()):  # shown in the order the section lists them
            _group(parser, title)
        dests = []
        for f in dataclasses.fields(section):
            s = declaration(f)
            where = f" ({s.range_text()})" if s.range_text() else ""
            kw: dict[str, Any] = {
                "dest": f.name,
                "help": s.help_text() + where,
                "default": as_defaults(section)[f.name],
            }
            tp = hints[f.name]
            if tp is bool:
                kw["action"] = argparse.BooleanOptionalAction
            elif typing.get_origin(tp) is tuple:
                kw["nargs"] = s.nargs or "+"
            if s.options() is not None:
                kw["choices"] = list(s.options())
            if s.metavar:
                kw["metavar"] = s.metavar
            title = groups.get(f.name, shared)
            action = _group(parser, title).add_argument("--" + f.name.replace("_", "-"), **kw)
            action.section = name
            dests.append(f.name)
        return dests

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
        self.writing = True
        for d in (self.table_dir, self.rejects_dir):
            d.rm()

    # ---- running -------------------------------------------------------------------------------
    def run(self) -> None:  # pragma: no cover - hook
        raise NotImplementedError

    def fail(self, message: str) -> typing.NoReturn:
        """Stop the job on something the user can act on (a bad input, a service that does not
        answer): a UserError, which ``main`` ends on with one line ``<job>.py: error: <message>`` on
        stderr and exit status 2, no traceback."""
        raise UserError(message)

    def preflight(self) -> None:
        """Every boundary checked before any work, so a bad run is refused before it spends (no
        Spark session, model request or output write comes before this): the input tables against
        the contracts their writers declare, and the output root leased and writable. A fault is a
        UserError (one line, exit status 2)."""
        from udfs.runtime.contracts import check_inputs, check_paths

        check_paths(self.args, {"input", *self.input_contracts})

        check_inputs(self.args, self.input_contracts)
        from udfs.runtime.lease import take_output_lease

        self.lease = take_output_lease(self)

    def release(self) -> None:
        """Give back what ``preflight`` took (the output lease); runs whatever way the run ended."""
        lease, self.lease = getattr(self, "lease", None), None
        if lease is not None:
            lease.release()

    def main(self) -> int:
        """Run the job and close it: checks before any work (``preflight``), ``run``, then the
        closing every job shares (``udfs.runtime.closing``). Its exit status: 0; 2 with one line on
        stderr for an error the user can act on (``udfs.runtime.errors.UserError``: bad settings,
        inputs, a held lease, an unwritable output, a missing service, a run in which nothing
        succeeded); 1 for a bug, with its traceback and where the log file is."""
        self._start_logging()
        try:
            self.preflight()
            try:
                self.log_path = self.job_log.start(self.args.output, self.name)
                outcome = self.run()
                if outcome is not None:
                    self.close(outcome)
                else:
                    self.record["status"] = "ok"
                    self.record.write(self.table_dir)
                    self.print_summary()
            except BaseException as exc:
                self._record_failure(exc)
                raise
            finally:
                self.release()
        except UserError as exc:  # the user can act on it: one line, no traceback unless debugging
            self.job_log.record_error(exc)
            if debugging(self.argv):
                log.error("traceback of the error below", exc_info=True)
            fail(f"{self.name}.py", str(exc))
        except Exception as exc:  # noqa: BLE001 - a bug: exit 1 with the traceback, the JVM's in the log only
            self.job_log.record_error(exc)
            self._report_bug(exc)
            return 1
        finally:
            self.job_log.close()
        return 0

    def _start_logging(self) -> None:
        """The console gets ``--log-level`` and above; the job's log file gets INFO and above (all
        of it under ``--log-level DEBUG``) from the start of the run (``udfs.runtime.joblog``)."""
        from udfs.runtime.joblog import FORMAT, ConsoleFilter, JobLog

        console = getattr(logging, self.args.log_level)
        logging.basicConfig(level=min(console, logging.INFO), format=FORMAT, stream=sys.stderr)
        console_handlers = list(logging.getLogger().handlers)
        for handler in console_handlers:
            handler.setLevel(console)
        self.job_log = JobLog(min(console, logging.INFO))
        self.log_path = None
        # Libraries' INFO lines (py4j's connection closing, every HTTP request to the model service)
        # are about their plumbing, not the run; their warnings go to the log file only
        # (ConsoleFilter), Python warnings among them; --log-level DEBUG shows everything.
        logging.captureWarnings(True)
        if self.args.log_level != "DEBUG":
            for noisy in ("py4j", "httpx"):
                logging.getLogger(noisy).setLevel(logging.WARNING)
            # the handlers that write to the terminal (not a test runner's capture, not a file)
            consoles = [
                h
                for h in console_handlers
                if isinstance(h, logging.StreamHandler) and getattr(h, "stream", None) in (sys.stderr, sys.stdout)
            ]
            for handler in consoles:
                if not any(isinstance(f, ConsoleFilter) for f in handler.filters):
                    handler.addFilter(ConsoleFilter(str(PROJECT_ROOT)))
        secret = {f.lstrip("-").replace("-", "_") for f in SECRET_FLAGS}
        # the judge's settings are the judge's block, each applied value once with its origin
        # (udfs.agents.judge): not repeated here as configured
        judged = {d for d, section in self._setting_sections.items() if section == "judge"}
        self.record["config"] = {
            k: (REDACTED if k in secret and v else v) for k, v in vars(self.args).items() if k not in judged
        }

    # Set once this run has changed its outputs (``clear_outputs``, or a job's own first write):
    # a run that stops before that leaves the outputs, and their record, as they were.
    writing = False

    def _record_failure(self, exc: BaseException) -> None:
        """A run that stopped after it began changing its outputs leaves a run record saying so
        (the next run resumes or replaces it); where even that cannot be written, the log file has
        the error. One that stopped before leaves the earlier record as it was."""
        if self.record.data.get("status", "").startswith("failed") or isinstance(exc, Refused) or not self.writing:
            return  # close() already wrote why; a refused run leaves the earlier record as it was
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        self.record["status"] = f"failed: {first}"
        try:
            self.record.write(self.table_dir)
        except Exception:
            log.debug("the run record could not be written", exc_info=True)

    def _report_bug(self, exc: Exception) -> None:
        """A bug's report on stderr: the Python traceback with each exception's message cut to its
        first line (a Spark error's message holds the JVM's whole trace, which goes to the log file
        only), then where the log is."""
        import traceback

        lines = []
        for line in traceback.format_exception(exc):
            if not line.startswith("  ") and "\n" in line.rstrip("\n"):
                line = line.split("\n", 1)[0] + " [...; the whole message is in the log file]\n"
            lines.append(line)
        sys.stderr.write("".join(lines))
        where = self.log_path or "the log file was not started: the error happened before the run's checks passed"
        print(f"{self.name}.py: internal error (a bug; please report it): the log is {where}", file=sys.stderr)

    def close(self, outcome) -> None:
        """Close a run from its Outcome (``udfs.runtime.closing``): counters reconciled against
        ``balances``, the run record written, the job's lines, the summary with the ``next:`` hint,
        and the last line when most units failed; then what the run must end on (a bug where the
        counters do not reconcile, a user error where nothing succeeded)."""
        from udfs.runtime.closing import close, ending, verdict_line

        failed = close(outcome, self.balances, self.record)
        self.record.write(self.table_dir)
        if outcome.lines:
            print("\n".join(outcome.lines), flush=True)
        if not failed and not (outcome.given and outcome.done == 0):
            self.print_summary()
            last = verdict_line(outcome)
            if last:
                print(f"{self.name}: {last}", file=sys.stderr, flush=True)
        ending(outcome, failed)

    def print_summary(self) -> None:
        """The end-of-run block on stderr (``udfs.runtime.summary.job_summary``): tables written
        with row counts and locations, total time, counters that need attention, next command."""
        from udfs.runtime.summary import job_summary

        tables = [(t, self.output_root / t) for t in (self.outputs or (self.table,))]
        tables.append((f"rejects/{self.name}", self.rejects_dir))
        print(job_summary(self.name, tables, self.record.data, self.next_command()), file=sys.stderr, flush=True)

    def next_command(self) -> str:
        """The ``next:`` hint: ``next_step`` with ``{output}`` and this run's flags filled in
        (``{warc_base}``...), each value quoted for a shell, and ``--config`` carried when this run
        was given one, so that it runs as printed. A job whose next step depends on what the output
        root holds overrides this."""
        import shlex

        if not self.next_step:
            return ""
        values = {k: shlex.quote(str(v)) for k, v in vars(self.args).items() if isinstance(v, (str, int, float))}
        command = self.next_step.format(**{**values, "output": shlex.quote(str(self.args.output))})
        if Path(self.args.config).resolve() != DEFAULT_CONF.resolve():
            command += f" --config {shlex.quote(self.args.config)}"
        return command

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

    _spark = None

    @property
    def spark(self):
        if self._spark is None:
            jvm_log = self.log_path.with_suffix(".jvm.log") if self.log_path else None
            self._spark = build_spark(self.name, self.args.master, self.args.spark_conf, jvm_log=jvm_log)
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


def build_spark(app: str, master: str | None = None, extra: list[str] | None = None, jvm_log: Path | None = None):
    """One way to get a session: reuse the active one (tests, spark-submit) or build one. A JVM
    this starts logs in full to ``jvm_log`` (conf/log4j2.properties; the console gets one line a
    message)."""
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
        java_opts = f"{java_opts} -Dlog4j2.configurationFile={CONF_DIR / 'log4j2.properties'}"
        if jvm_log is not None:
            java_opts += f" -Dllm4schema.log={jvm_log}"
            # conf/spark-env.sh puts the JVM's start-up notice in the same file
            os.environ["LLM4SCHEMA_JVM_LOG"] = str(jvm_log)
        defaults["spark.driver.extraJavaOptions"] = java_opts.strip()
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
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        # the JVM this process starts reads the project's conf/ (log4j2.properties,
        # spark-defaults.conf, spark-env.sh) as under `SPARK_CONF_DIR=conf spark-submit`, unless
        # the caller named a folder of its own
        os.environ.setdefault("SPARK_CONF_DIR", str(CONF_DIR))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("SPARK_LOG_LEVEL", "WARN"))
    return spark
