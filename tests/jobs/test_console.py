"""What a user sees when a Spark job fails on its input (issue 64): one line naming the file and
what to do, exit status 2; the JVM's traces and the scheduler's words about the failed task are in
the job's log files (``<output>/logs/csets.jvm.log``, ``csets.log``), never on the console."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import DATA

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
# printed by the JVM itself at launch, before any configuration is read (issue 66 moves it)
JVM_LAUNCH = "WARNING: Using incubator modules"


def test_a_failed_spark_task_is_one_line_on_the_console_and_its_trace_is_in_the_log(tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    shutil.copy(DATA / "demo" / "quads" / "part-00000.nq.gz", inputs / "a.nq.gz")
    (inputs / "b.nq.gz").write_text("not gzip\n")
    out = tmp_path / "out"
    res = subprocess.run(
        [sys.executable, "jobs/csets.py", "--input", str(inputs), "--output", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [ln for ln in res.stderr.splitlines() if not ln.startswith(JVM_LAUNCH)]
    assert res.returncode == 2, res.stderr[-3000:]
    assert lines == [lines[0]] and lines[0].startswith("csets.py: error: cannot read ") and "b.nq.gz" in lines[0], lines
    assert "--ignore-corrupt-files" in lines[0]
    jvm_log = (out / "logs" / "csets.jvm.log").read_text()
    assert "\tat " in jvm_log and "TaskSetManager" in jvm_log  # the trace and the scheduler's words
    assert "Traceback" in (out / "logs" / "csets.log").read_text()
