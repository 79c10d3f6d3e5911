"""The shared base of every job in ``jobs/``.

A job file holds a tiny subclass (in the manner of cc-pyspark): it declares its flags and wires
library functions together. This module owns what all jobs share: the command line shape
(``--input``, ``--output``, ``--conf``), defaults from ``conf/pipeline.toml``, the run record
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
import shutil
import socket
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

from udfs.runtime.paths import CONF_DIR, DEFAULT_CONF

log = logging.getLogger("llm4schema")


def load_conf(path: str | Path | None = None) -> dict[str, Any]:
    path = Path(path) if path else DEFAULT_CONF
    with open(path, "rb") as fh:
        return tomllib.load(fh)


class OutputUrl(str):
    """An output root on a remote filesystem (``s3a://``, ``hdfs://``, ``file://``...): joined with
    ``/`` like a Path but never normalised (``Path("s3a://bucket/run")`` is ``s3a:/bucket/run``,
    which no filesystem reads). Spark writes the tables there; the run record goes through fsspec."""

    def __truediv__(self, part: str | Path) -> "OutputUrl":
        return OutputUrl(self.rstrip("/") + "/" + str(part).strip("/"))

    @property
    def name(self) -> str:
        return self.rstrip("/").rsplit("/", 1)[-1]

    def exists(self) -> bool:
        import fsspec

        fs, path = fsspec.core.url_to_fs(str(self))
        return fs.exists(path)


def output_location(spec: str) -> Path | OutputUrl:
    from udfs.runtime.inputs import is_remote

    return OutputUrl(spec) if is_remote(spec) else Path(spec)


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
                log.info("%s ...", step)

            def __exit__(self, *exc):
                record.data["timings_s"][step] = round(time.monotonic() - self.t, 3)
                log.info("%s done in %.1f s", step, record.data["timings_s"][step])

        return _Timer()

    def write(self, folder: str | Path) -> Path | OutputUrl:
        self.data["finished_at"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        self.data["wall_s"] = round(time.monotonic() - self._t0, 3)
        if isinstance(folder, OutputUrl):
            import fsspec

            # A one-shot object write: S3 has no rename, and a reader sees the old or the new file.
            with fsspec.open(str(folder / "_run.json"), "w") as fh:
                fh.write(json.dumps(self.data, indent=2, sort_keys=False, default=str) + "\n")
            return folder / "_run.json"
        path = Path(folder) / "_run.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.data, indent=2, sort_keys=False, default=str) + "\n")
        os.replace(tmp, path)
        return path


class Job:
    """Base of all jobs. Subclasses set ``name`` and ``table`` and implement ``add_arguments``
    and ``run``."""

    name: str = "job"
    table: str = "table"  # folder under --output this job owns
    description: str = ""
    input_help: str = "input files, directories, globs or manifests"

    def __init__(self, argv: list[str] | None = None):
        self.argv = list(sys.argv[1:] if argv is None else argv)
        self.args = self.parse_args(self.argv)
        self.record = RunRecord(self.name, self.argv)

    # ---- command line ------------------------------------------------------------------------
    def add_arguments(self, parser: argparse.ArgumentParser) -> None:  # pragma: no cover - hook
        """Job-specific flags; their defaults come from ``[<name>]`` in the conf file."""

    def add_engine_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Flags of the engine the job runs on (Spark, Ray); set by the engine's base class."""

    def parse_args(self, argv: list[str]) -> argparse.Namespace:
        pre = argparse.ArgumentParser(add_help=False)
        pre.add_argument("--conf", default=str(DEFAULT_CONF))
        known, _ = pre.parse_known_args(argv)
        conf = load_conf(known.conf)
        parser = argparse.ArgumentParser(
            prog=f"{self.name}.py",
            description=self.description,
            formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        )
        parser.add_argument("--input", nargs="+", required=True, help=self.input_help)
        parser.add_argument("--output", required=True, help="output root shared by the whole pipeline; "
                            f"this job writes {self.table}/ and rejects/{self.name}/ under it")
        parser.add_argument("--conf", default=str(DEFAULT_CONF), help="pipeline configuration (TOML); "
                            f"its [{self.name}] section gives this job's defaults")
        parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
        self.add_engine_arguments(parser)
        self.add_arguments(parser)
        section = conf.get(self.name, {})
        known_dests = {a.dest for a in parser._actions}
        unknown = set(section) - known_dests
        if unknown:
            parser.error(f"{known.conf}: [{self.name}] has unknown keys {sorted(unknown)}")
        parser.set_defaults(**section)
        args = parser.parse_args(argv)
        args.conf_data = conf
        return args

    # ---- layout --------------------------------------------------------------------------------
    @property
    def output_root(self) -> Path | OutputUrl:
        return output_location(self.args.output)

    @property
    def table_dir(self) -> Path:
        return self.output_root / self.table

    @property
    def rejects_dir(self) -> Path:
        return self.output_root / "rejects" / self.name

    def clear_outputs(self) -> None:
        """Rerunning replaces this job's outputs and nothing else under the shared root."""
        for d in (self.table_dir, self.rejects_dir):
            # a remote table is replaced by Spark's overwrite mode when the job writes it
            if isinstance(d, Path) and d.exists():
                shutil.rmtree(d)

    # ---- running -------------------------------------------------------------------------------
    def run(self) -> None:  # pragma: no cover - hook
        raise NotImplementedError

    def main(self) -> int:
        logging.basicConfig(
            level=getattr(logging, self.args.log_level),
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
            stream=sys.stderr,
        )
        self.record["config"] = {k: v for k, v in vars(self.args).items() if k != "conf_data"}
        self.run()
        path = self.record.write(self.table_dir)
        log.info("run record: %s", path)
        return 0


class SparkJob(Job):
    """A job with a Spark session: ``local[*]`` unless ``--master`` or spark-submit says otherwise."""

    def add_engine_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--master", default=None,
                            help="Spark master; default: what spark-submit set, else local[*]")
        parser.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                            help="extra Spark setting, repeatable (also read: conf/spark-defaults.conf)")

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


def _submitted_keys() -> set[str]:
    """The Spark settings spark-submit passed to this driver (none when not under spark-submit)."""
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return set()
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()
    return {k for k, _ in SparkConf().getAll()}


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
    submitted = _submitted_keys()
    for key, value in _spark_defaults().items():
        if key not in submitted:
            builder = builder.config(key, value)
    for kv in extra or []:
        key, sep, value = kv.partition("=")
        if not sep:
            raise SystemExit(f"--spark-conf {kv!r}: expected KEY=VALUE")
        builder = builder.config(key, value)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("SPARK_LOG_LEVEL", "WARN"))
    return spark
