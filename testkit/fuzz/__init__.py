"""Differential fuzzing of the jobs: each job against a reader the project did not write.

One module per job (``JOBS``). A module mutates real files (``../shared/data`` where present, else
the project's bundled ``data/``) by class (bytes, framing, names, numbers, nesting, labels), runs
the real job (or the job's own reading step) over a batch of them, and compares every file's
counts with an independent reader's (rdflib, warcio, html5lib...). A difference is *explained*
when the job wrote a reject row naming the file and the cause; any other difference is a
*discrepancy*.

Contract of a job module::

    CLASSES: dict[str, str]                    # class name -> what it mutates, one line
    def fuzz(work: Path, *, seed: int, rounds: int | None = None,
             budget_s: float | None = None) -> list[Tally]

``fuzz`` runs rounds (each a batch of generated inputs of every class) until ``rounds`` or
``budget_s`` is reached, whichever comes first, and returns one ``Tally`` per class (every class,
even one with no input tried). The tests call it with a few rounds; ``benchmarks/fuzz.py`` (``make
fuzz``) with minutes.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from dataclasses import dataclass, field

# job -> module; the order is the table's
JOBS = {
    "csets": "testkit.fuzz.csets",
    "sample": "testkit.fuzz.sample",
    "warc_index": "testkit.fuzz.warc_index",
    "pages": "testkit.fuzz.pages",
}


@dataclass
class Tally:
    """One class of mutation of one job: how many inputs were tried, how many differed from the
    independent reader with a reject row naming file and cause (explained), how many differed
    otherwise (discrepancies), with the first few of those described."""

    job: str
    cls: str
    reference: str  # the independent reader, e.g. "rdflib 7.1 N-Quads parser"
    inputs: int = 0
    explained: int = 0
    discrepancies: int = 0
    examples: list[str] = field(default_factory=list)

    def add(self, *, explained: bool = False, discrepancy: str | None = None) -> None:
        """Count one input: a match, an explained difference, or a discrepancy (its description)."""
        self.inputs += 1
        if discrepancy is not None:
            self.discrepancies += 1
            if len(self.examples) < 3:
                self.examples.append(discrepancy)
        elif explained:
            self.explained += 1


def job_module(job: str):
    """The fuzz module of ``job`` (a key of ``JOBS``)."""
    if job not in JOBS:
        raise KeyError(f"no fuzz module for job {job!r}; known: {', '.join(JOBS)}")
    return importlib.import_module(JOBS[job])


def run_job(job: str, *args: str) -> int:
    """``jobs/<job>.py`` with ``args`` in its own process, as a user runs it (the library imports
    nothing from ``jobs/``); its exit status. Its output is kept out of the fuzz table, and shown
    on stderr when it fails."""
    from udfs.runtime.paths import PROJECT_ROOT

    path = os.pathsep.join(filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")]))
    argv = [sys.executable, str(PROJECT_ROOT / "jobs" / f"{job}.py"), *args]
    done = subprocess.run(
        argv, cwd=PROJECT_ROOT, env={**os.environ, "PYTHONPATH": path}, capture_output=True, text=True
    )
    if done.returncode:
        print(done.stderr[-2000:], file=sys.stderr)
    return done.returncode
