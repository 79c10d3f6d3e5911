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

import logging
import logging.handlers
from pathlib import Path

from udfs.runtime.io import local_state_dir

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


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
