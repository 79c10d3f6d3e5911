"""A job file is flags and wiring (issue 64): at most 120 lines, no table schema (the room that
writes a table declares it), and no closing of its own (the base class reconciles the counters,
writes the run record and prints the summary: ``udfs.runtime.closing``)."""

import re
from pathlib import Path

import pytest

JOBS = sorted(p for p in (Path(__file__).resolve().parents[2] / "jobs").glob("*.py") if p.name != "__init__.py")


@pytest.mark.parametrize("job", JOBS, ids=lambda p: p.name)
def test_a_job_file_is_flags_and_wiring(job):
    text = job.read_text()
    assert len(text.splitlines()) <= 120, f"{job.name}: {len(text.splitlines())} lines"
    assert not re.search(r"StructType\(|pa\.schema\(|TableContract\(", text), f"{job.name} declares a table schema"
    # the base class closes every run: no counters reconciled, record written or summary printed here
    for own_closing in (r"\"reconciles\"", r"record\.write\(", r"job_summary", r"counters do not reconcile"):
        assert not re.search(own_closing, text), f"{job.name} closes its run itself ({own_closing})"
