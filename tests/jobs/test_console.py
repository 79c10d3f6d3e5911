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
# printed by the JVM itself at launch, before any configuration is read: conf/spark-env.sh moves it
# to the JVM's log (issue 66)
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
    lines = res.stderr.splitlines()
    assert res.returncode == 2, res.stderr[-3000:]
    assert lines == [lines[0]] and lines[0].startswith("csets.py: error: cannot read ") and "b.nq.gz" in lines[0], lines
    assert "--ignore-corrupt-files" in lines[0]
    jvm_log = (out / "logs" / "csets.jvm.log").read_text()
    assert "\tat " in jvm_log and "TaskSetManager" in jvm_log  # the trace and the scheduler's words
    assert JVM_LAUNCH in jvm_log
    assert "Traceback" in (out / "logs" / "csets.log").read_text()


def test_under_spark_submit_the_jvms_launch_notice_goes_to_its_log_too(tmp_path):
    """The JVM of `SPARK_CONF_DIR=conf spark-submit` starts before the job: conf/spark-env.sh keeps
    its incubator notice off the console (into $LLM4SCHEMA_JVM_LOG here), and the console holds the
    job's summary and nothing else."""
    import os

    log = tmp_path / "jvm.log"
    env = {**os.environ, "SPARK_CONF_DIR": str(ROOT / "conf"), "LLM4SCHEMA_JVM_LOG": str(log)}
    env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"
    res = subprocess.run(
        ["spark-submit", "jobs/csets.py", "--input", str(DATA / "wdc"), "--output", str(tmp_path / "out")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert JVM_LAUNCH in log.read_text()
    assert res.stderr == "" and res.stdout.startswith("lines 10,000 = quads 10,000"), (res.stdout + res.stderr)[:800]
