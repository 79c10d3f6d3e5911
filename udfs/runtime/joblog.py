"""Each job's log file: everything a run logs, with every traceback, Spark's and the JVM's among
them, while the console keeps to the run's summary and one-line errors.

The file is ``<output>/logs/<job>.log`` for a local output root, else
``$LLM4SCHEMA_STATE_DIR/<root as a file name>/logs/<job>.log`` (``udfs.runtime.io.local_state_dir``),
appended to by every run. Until the run's checks have passed nothing is written under the output
root: records wait in memory and go to the file once ``start`` is called, so a refused run leaves
no file behind. The JVM of a session the job starts itself writes its log to ``<job>.jvm.log``
beside it (``-Dllm4schema.log``, read by conf/log4j2.properties); under spark-submit, whose JVM
starts before the job knows its output root, that file is ``$TMPDIR/llm4schema-spark.log``.
"""

from __future__ import annotations

import contextlib
import logging
import logging.handlers
import os
import re
import sys
import threading
from pathlib import Path

from udfs.runtime.io import local_state_dir

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Loggers whose records are the run's own; any other logger is a library's.
PROJECT_LOGGERS = ("llm4schema", "udfs", "jobs", "shapes", "__main__", "root")


# A line native code logs in glog's format ("[2026-12-08 01:24:19,325 E 8320 8320] core_worker.cc:2465:
# ..."): Ray's C++ core worker writes its notices so, straight to the process's stderr.
NATIVE_LINE = re.compile(rb"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [IWEF] \d+ \d+\] ")


@contextlib.contextmanager
def native_lines_to_log(logger: str = "ray.core"):
    """While open, the lines that native code writes to this process's stderr in glog's format go
    to the job's log file (``logger``, at WARNING: ``ConsoleFilter`` keeps them off the console);
    every other byte written to stderr, Python's own included, passes through unchanged. Ray's
    core worker prints, for instance, one line per Ray Data actor saying that its constructor
    arguments are in the object store: true of every Ray Data actor, and nothing a user can act on.
    Only processes started while it is open inherit the pipe: open it after ``ray.init``."""
    log = logging.getLogger(logger)
    sys.stderr.flush()
    saved = os.dup(2)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)

    def forward() -> None:
        held = b""  # a partial line that may be a native one
        while chunk := os.read(read_end, 1 << 16):
            lines = (held + chunk).split(b"\n")
            held = lines.pop()
            for line in lines:
                if NATIVE_LINE.match(line):
                    log.warning("%s", line.decode("utf-8", "replace"))
                else:
                    os.write(saved, line + b"\n")
            if held and not held.startswith(b"["):
                os.write(saved, held)
                held = b""
        if held:
            os.write(saved, held)

    thread = threading.Thread(target=forward, name="native-stderr", daemon=True)
    thread.start()
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)  # closes the pipe's last write end: the thread reads to its end
        thread.join(timeout=10)
        os.close(read_end)
        os.close(saved)


def adopt_library_logger(name: str) -> None:
    """Let library ``name``'s records reach the job's logging (its log file, and the console
    through ``ConsoleFilter``) instead of the stderr handler the library installs for itself (Ray
    does, at import, and stops their propagation)."""
    lib = logging.getLogger(name)
    for handler in list(lib.handlers):
        lib.removeHandler(handler)
    lib.propagate = True


class ConsoleFilter(logging.Filter):
    """What reaches the console: the project's own records, and a library's errors. A library's
    warnings and notices (rdflib's parser warnings, Ray's and pydantic's deprecation and actor
    notices, Python ``warnings`` raised inside a library, captured as ``py.warnings``) are
    about its plumbing, which the user cannot act on: they go to the job's log file only. A Python
    warning raised by the project's own code stays on the console."""

    def __init__(self, project_dir: str):
        super().__init__()
        self.project_dir = project_dir

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR:
            return True
        name = record.name
        if name == "py.warnings":
            where = str(record.args[0] if record.args else record.msg)
            return where.startswith(self.project_dir) and "site-packages" not in where.split(":", 1)[0]
        return any(name == p or name.startswith(p + ".") for p in PROJECT_LOGGERS)


class JobLog:
    """The log file of one run: records are held from construction and written once ``start``
    names the file (``path``); ``path`` is None until then."""

    def __init__(self, level: int):
        self.path: Path | None = None
        self._held = logging.handlers.MemoryHandler(capacity=10**6, flushLevel=logging.CRITICAL + 1)
        self._held.setLevel(level)
        self._held.setFormatter(logging.Formatter(FORMAT))
        logging.getLogger().addHandler(self._held)
        self._handler: logging.Handler = self._held

    @staticmethod
    def location(output: str, job: str) -> Path:
        return local_state_dir(output, "logs") / f"{job}.log"

    def start(self, output: str, job: str) -> Path:
        """Open ``<logs>/<job>.log`` (appending) and write the held records to it."""
        path = self.location(output, job)
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(path, encoding="utf-8")
        handler.setLevel(self._held.level)
        handler.setFormatter(logging.Formatter(FORMAT))
        self._held.setTarget(handler)
        self._held.flush()
        root = logging.getLogger()
        root.removeHandler(self._held)
        root.addHandler(handler)
        self._handler, self.path = handler, path
        return path

    def record_error(self, exc: BaseException) -> None:
        """``exc`` with its traceback in the log file only (the console has its one line)."""
        if self.path is None:
            return
        record = logging.LogRecord(
            "llm4schema", logging.ERROR, "", 0, "the run ended on", (), (type(exc), exc, exc.__traceback__)
        )
        self._handler.handle(record)

    def close(self) -> None:
        logging.getLogger().removeHandler(self._handler)
        self._handler.close()
