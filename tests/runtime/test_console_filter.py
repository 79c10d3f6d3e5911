"""What a job's console shows (issue 66): its own lines and a library's errors; a library's
warnings and notices (rdflib's parser warnings, Python warnings raised inside a library, Ray's
token notice and its C++ core worker's actor notices) go to the job's log file only."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap

from udfs.runtime.joblog import ConsoleFilter, native_lines_to_log
from udfs.runtime.paths import PROJECT_ROOT

NOISY_JOB = textwrap.dedent(
    """
    import logging, sys, warnings
    from udfs.runtime.job import Job

    class Noisy(Job):
        name = table = "report"

        def run(self):
            logging.getLogger("rdflib.term").warning("http://x y does not look like a valid URI")
            logging.getLogger("ray._private.authentication").warning("Token authentication is enabled")
            warnings.warn_explicit("a library's notice", UserWarning, "/venv/lib/site-packages/lib/x.py", 3)
            logging.getLogger("pyshacl").error("a library's error")
            logging.getLogger("llm4schema.noisy").warning("the run's own warning")
            return None

    sys.exit(Noisy(sys.argv[1:]).main())
    """
)


def test_a_jobs_console_keeps_its_own_lines_and_library_errors(tmp_path):
    script = tmp_path / "noisy.py"
    script.write_text(NOISY_JOB)
    (tmp_path / "scores").mkdir()
    out = tmp_path / "out"
    res = subprocess.run(
        [sys.executable, str(script), "--input", str(tmp_path / "scores"), "--output", str(out)],
        cwd=PROJECT_ROOT,
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    console = res.stdout + res.stderr
    assert "the run's own warning" in console and "a library's error" in console, console
    for quiet in ("does not look like a valid URI", "Token authentication", "a library's notice"):
        assert quiet not in console, console
    log = (out / "logs" / "report.log").read_text()
    for line in ("does not look like a valid URI", "Token authentication", "a library's notice", "own warning"):
        assert line in log


def test_the_filter_reads_a_python_warning_by_where_it_was_raised():
    f = ConsoleFilter(str(PROJECT_ROOT))

    def warning(path: str) -> logging.LogRecord:
        return logging.LogRecord("py.warnings", logging.WARNING, "", 0, "%s", (f"{path}:3: UserWarning: x\n",), None)

    assert f.filter(warning(f"{PROJECT_ROOT}/udfs/corpus/html.py"))
    assert not f.filter(warning(f"{PROJECT_ROOT}/.venv/lib/python3.11/site-packages/rdflib/term.py"))
    assert not f.filter(logging.LogRecord("rdflib", logging.WARNING, "", 0, "x", (), None))
    assert f.filter(logging.LogRecord("rdflib", logging.ERROR, "", 0, "x", (), None))
    assert f.filter(logging.LogRecord("udfs.corpus.fetch", logging.INFO, "", 0, "x", (), None))


def test_native_glog_lines_go_to_the_log_and_everything_else_passes(capfd, caplog):
    native = b"[2026-12-08 01:24:19,325 E 8320 8320] core_worker.cc:2465: Actor with class name: 'X' has constructor\n"
    with caplog.at_level(logging.WARNING, logger="ray.core"), native_lines_to_log():
        os.write(2, b"evaluate: 1/2 pages\n")
        os.write(2, native)
        os.write(2, b"[not a native line] stays\n")
        os.write(2, b"a partial line")
    err = capfd.readouterr().err
    assert err == "evaluate: 1/2 pages\n[not a native line] stays\na partial line"
    assert [r.getMessage() for r in caplog.records] == [native.decode().rstrip("\n")]
